"""GEGLU with the tanh approximation of GELU, forward and backward, as kernel
libraries (Liger-Kernel) write it: one row per program, f32 arithmetic
whatever the storage type, and tanh from libdevice
(``tl.extra.cuda.libdevice``, the path Triton 3.x kernels use)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _geglu_tanh_forward_kernel(a, b, c, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a += program_id * stride
    b += program_id * stride
    c += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0)

    # gelu(a) = 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3)))
    sqrt_2_over_pi = 0.7978845608028654
    a_cubed = a_row * a_row * a_row
    tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed)
    tanh_result = tl.extra.cuda.libdevice.tanh(tanh_arg)
    geglu_a = 0.5 * a_row * (1 + tanh_result)
    c_row = geglu_a * b_row
    tl.store(c + col_offsets, c_row.to(c.dtype.element_ty), mask=mask)


@triton.jit
def _geglu_tanh_backward_kernel(dc, a, b, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)

    dc += program_id * stride
    a += program_id * stride
    b += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    dc_row = tl.load(dc + col_offsets, mask=mask, other=0).to(tl.float32)
    a_row = tl.load(a + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0).to(tl.float32)

    # recomputation to save memory
    sqrt_2_over_pi = 0.7978845608028654
    a_cubed = a_row * a_row * a_row
    tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed)
    tanh_result = tl.extra.cuda.libdevice.tanh(tanh_arg)
    geglu_a = 0.5 * a_row * (1 + tanh_result)

    db_row = dc_row * geglu_a

    # gradient w.r.t. a: 0.5 * (1 + tanh) + 0.5 * a * (1 - tanh^2) * sqrt(2 / pi) * (1 + 3 * 0.044715 * a^2)
    term1 = 0.5 * (1 + tanh_result)
    tanh_sq = tanh_result * tanh_result
    term2 = 0.5 * a_row * (1 - tanh_sq) * (sqrt_2_over_pi * (1 + 3 * 0.044715 * a_row * a_row))
    da_row = dc_row * b_row * (term1 + term2)

    # results overwrite the inputs, as the library does
    tl.store(a + col_offsets, da_row.to(a.dtype.element_ty), mask=mask)
    tl.store(b + col_offsets, db_row.to(b.dtype.element_ty), mask=mask)


def geglu_forward(a, b):
    n_rows, n_cols = a.shape
    c = np.empty_like(a)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    _geglu_tanh_forward_kernel[(n_rows,)](a, b, c, c.shape[-1], n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return c


def geglu_backward(a, b, dc):
    """Gradients of c = gelu_tanh(a) * b: (da, db), written over copies of a and b."""
    a, b = a.copy(), b.copy()
    n_rows, n_cols = dc.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    _geglu_tanh_backward_kernel[(n_rows,)](dc, a, b, dc.shape[-1], n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                           num_warps=4)
    return a, b
