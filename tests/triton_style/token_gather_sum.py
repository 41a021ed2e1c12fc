"""A mixture of experts' output gathered back per token, as Liger-Kernel's
fused MoE writes it: each token sums its K expert rows, found through a
reverse index, weighted by its routing weights (or not: the backward's dx).
The H tiles unrolled with ``tl.static_range``, the K tiles in ``tl.range``,
the indices widened to 64 bits, and a 1-D accumulator fed by ``tl.sum``
over the gathered rows, which stays in the sum's layout."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _token_gather_sum_kernel(y_ptr, w_ptr, rev_ptr, out_ptr, stride_y, stride_out,
                             H: tl.constexpr, K: tl.constexpr,
                             BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, UNWEIGHTED: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    for h_tile in tl.static_range(triton.cdiv(H, BLOCK_H)):
        h = (h_tile * BLOCK_H + tl.arange(0, BLOCK_H)).to(tl.uint32)
        h_mask = h < H
        acc = tl.zeros([BLOCK_H], dtype=tl.float32)
        for k_tile in tl.range(triton.cdiv(K, BLOCK_K)):
            k = (k_tile * BLOCK_K + tl.arange(0, BLOCK_K)).to(tl.uint32)
            k_mask = k < K
            flat = t * K + k
            rows = tl.load(rev_ptr + flat, mask=k_mask, other=0).to(tl.int64)
            y = tl.load(y_ptr + rows[:, None] * stride_y + h[None, :],
                        mask=k_mask[:, None] & h_mask[None, :], other=0.0).to(tl.float32)
            if UNWEIGHTED:
                acc += tl.sum(y, axis=0)
            else:
                w = tl.load(w_ptr + flat, mask=k_mask, other=0.0).to(tl.float32)
                acc += tl.sum(y * w[:, None], axis=0)
        tl.store(out_ptr + t * stride_out + h, acc.to(out_ptr.dtype.element_ty), mask=h_mask)


def token_gather_sum(y, w, rev, tokens, k, block_h, block_k, num_warps=4):
    """out[t] = sum_j w[t * k + j] * y[rev[t * k + j]] (unweighted where w is None)."""
    out = np.empty((tokens, y.shape[1]), dtype=y.dtype)
    _token_gather_sum_kernel[(tokens,)](
        y, w if w is not None else y, rev, out, y.strides[0] // y.itemsize, out.strides[0] // out.itemsize,
        H=y.shape[1], K=k, BLOCK_H=block_h, BLOCK_K=block_k, UNWEIGHTED=w is None, num_warps=num_warps)
    return out
