"""RMS norm forward, as kernel libraries (Liger-Kernel, Unsloth) write it:
one row per program, f32 arithmetic whatever the storage type, the output
cast to the output pointer's element type."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _rms_norm_forward_kernel(
    Y_ptr, Y_row_stride,
    X_ptr, X_row_stride,
    W_ptr,
    RSTD_ptr,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    Y_ptr += row_idx * Y_row_stride
    X_ptr += row_idx * X_row_stride
    RSTD_ptr += row_idx

    X_row = tl.load(X_ptr + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)

    X_row = X_row.to(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = tl.math.rsqrt(mean_square + eps)

    # We can save time by caching rms with minimal memory overhead
    # because rms is much smaller compared to X_row, as rms is for each row.
    tl.store(RSTD_ptr, rstd)

    Y_row = X_row * rstd
    Y_row = Y_row.to(X_row_dtype)
    Y_row = Y_row * W_row

    tl.store(Y_ptr + col_offsets, Y_row.to(Y_ptr.dtype.element_ty), mask=mask)


def rms_norm_forward(X, W, eps):
    n_rows, n_cols = X.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4 if BLOCK_SIZE < 2048 else 8
    Y = np.empty((n_rows, n_cols), dtype=X.dtype)
    RSTD = np.empty(n_rows, dtype=np.float32)
    _rms_norm_forward_kernel[(n_rows,)](
        Y, Y.strides[0] // Y.itemsize,
        X, X.strides[0] // X.itemsize,
        W,
        RSTD,
        n_cols,
        eps,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return Y, RSTD
