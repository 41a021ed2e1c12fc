"""Attention forward in another common spelling than tutorial 06: K loaded
as it is stored, [BLOCK_N, HEAD_DIM], and transposed with ``tl.trans`` for
Q @ K^T; the key offsets recomputed from the loop index each iteration with
a mask on the sequence length; the loop in a ``@jit`` helper; causal or not
(the causal split as the loop's runtime upper bound and a mask)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, n_ctx, hi, qk_scale, offs_m,
            CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        mask_n = offs_n < n_ctx
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = mask_n[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(keep, qk, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attention_fwd(Q, K, V, Out, stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn,
                  stride_oh, stride_om, n_ctx, sm_scale,
                  CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + head * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=offs_m[:, None] < n_ctx, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = tl.minimum((start_m + 1) * BLOCK_M, n_ctx) if CAUSAL else n_ctx
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, K + head * stride_kh, V + head * stride_vh, stride_kn, stride_vn,
                            n_ctx, hi, qk_scale, offs_m, CAUSAL, BLOCK_N, HEAD_DIM)
    acc = acc / l_i[:, None]
    tl.store(Out + head * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < n_ctx)


def attention(q, k, v, causal, sm_scale, BLOCK_M=32, BLOCK_N=16, num_warps=4):
    """softmax(q @ k^T * sm_scale) @ v for [Z, H, N, D] arrays (heads flattened)."""
    z, h, n, d = q.shape
    q3, k3, v3 = (np.ascontiguousarray(t.reshape(z * h, n, d)) for t in (q, k, v))
    o = np.empty_like(q3)

    def strides(t):
        return [s // t.itemsize for s in t.strides[:2]]

    grid = (triton.cdiv(n, BLOCK_M), z * h)
    attention_fwd[grid](q3, k3, v3, o, *strides(q3), *strides(k3), *strides(v3), *strides(o), n, sm_scale,
                        CAUSAL=causal, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_DIM=d, num_warps=num_warps)
    return o.reshape(z, h, n, d)
