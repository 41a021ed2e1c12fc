"""Rotary position embedding with complex frequencies, as Liger-Kernel's
llama4 RoPE writes it: the (cos, sin) pairs loaded as one [BLOCK, 2] tile
and taken apart with ``tl.split``, the rotated pairs stored through strided
addresses, the half head dimension masked where it is no power of two."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def _rope_pairs_kernel(x_ptr, freqs_ptr, x_row_stride, x_head_stride, freqs_row_stride,
                       head_dim_half: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    head = tl.program_id(1)
    x_base = x_ptr + row * x_row_stride + head * x_head_stride
    for start in tl.static_range(0, head_dim_half, BLOCK):
        d = start + tl.arange(0, BLOCK)
        mask = d < head_dim_half
        pairs = d[:, None] * 2 + tl.arange(0, 2)[None, :]
        freqs = tl.load(freqs_ptr + row * freqs_row_stride + pairs, mask=mask[:, None], other=0.0)
        cos, sin = tl.split(freqs)
        real = tl.load(x_base + d * 2, mask=mask, other=0.0)
        imag = tl.load(x_base + d * 2 + 1, mask=mask, other=0.0)
        tl.store(x_base + d * 2, tl.math.fma(real, cos, -(imag * sin)), mask=mask)
        tl.store(x_base + d * 2 + 1, tl.math.fma(real, sin, imag * cos), mask=mask)


def rope_pairs(x, freqs, block):
    """x: [rows, heads, 2 * half] rotated in place; freqs: [rows, half, 2] (cos, sin)."""
    rows, heads, head_dim = x.shape
    _rope_pairs_kernel[(rows, heads)](
        x, freqs, x.strides[0] // x.itemsize, x.strides[1] // x.itemsize, freqs.strides[0] // freqs.itemsize,
        head_dim_half=head_dim // 2, BLOCK=block, num_warps=4)
    return x
