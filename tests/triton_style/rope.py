"""Rotary position embedding (GPT-J's interleaved pairs), as kernel
libraries write it with ``tl.reshape`` / ``tl.split`` / ``tl.join``: each
program rotates one head of one token."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr,
                 x_token_stride, x_head_stride, cos_token_stride,
                 HEAD_DIM: tl.constexpr):
    token = tl.program_id(0)
    head = tl.program_id(1)
    x_ptr += token * x_token_stride + head * x_head_stride
    out_ptr += token * x_token_stride + head * x_head_stride
    half = tl.arange(0, HEAD_DIM // 2)
    cos = tl.load(cos_ptr + token * cos_token_stride + half)
    sin = tl.load(sin_ptr + token * cos_token_stride + half)
    x = tl.load(x_ptr + tl.arange(0, HEAD_DIM)).to(tl.float32)
    # pairs (x[2i], x[2i + 1]) are rotated by the angle of position i
    x1, x2 = tl.split(tl.reshape(x, (HEAD_DIM // 2, 2)))
    o1 = x1 * cos - x2 * sin
    o2 = x1 * sin + x2 * cos
    out = tl.reshape(tl.join(o1, o2), (HEAD_DIM, ))
    tl.store(out_ptr + tl.arange(0, HEAD_DIM), out.to(out_ptr.dtype.element_ty))


def rope(x, cos, sin):
    n_tokens, n_heads, head_dim = x.shape
    out = np.empty_like(x)
    _rope_kernel[(n_tokens, n_heads)](
        x, cos, sin, out,
        x.strides[0] // x.itemsize, x.strides[1] // x.itemsize, cos.strides[0] // cos.itemsize,
        HEAD_DIM=head_dim,
    )
    return out
