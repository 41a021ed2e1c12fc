"""Attention forward in the block-pointer spelling of Triton 2.x's tutorial
06: Q, K^T, V and O as ``tl.make_block_ptr`` tiles of each head's matrix (K
read through a transposed view, ``order=(0, 1)``), advanced with
``tl.advance``; Q scaled in registers before the loop, so that Q @ K^T
multiplies a register operand; K and V both loaded at the top of the loop;
the causal mask applied to the scores' initial value, and the causal loop
bounded at run time by the diagonal. The sequence length is a multiple of
the blocks (no boundary checks, as in the tutorial)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def attn_fwd_block_ptr(Q, K, V, Out, sm_scale, stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn,
                       stride_oh, stride_om, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
                       BLOCK_N: tl.constexpr, IS_CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    q_tile = tl.make_block_ptr(base=Q + head * stride_qh, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, 1),
                               offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    kt_tile = tl.make_block_ptr(base=K + head * stride_kh, shape=(HEAD_DIM, N_CTX), strides=(1, stride_kn),
                                offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    v_tile = tl.make_block_ptr(base=V + head * stride_vh, shape=(N_CTX, HEAD_DIM), strides=(stride_vn, 1),
                               offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = tl.load(q_tile)
    q = (q * (sm_scale * 1.44269504)).to(Q.dtype.element_ty)  # base 2 from here on
    hi = (start_m + 1) * BLOCK_M if IS_CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        kt = tl.load(kt_tile)
        v = tl.load(v_tile)
        qk = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        if IS_CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        qk += tl.dot(q, kt)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(qk - m_new[:, None])
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(V.dtype.element_ty), v)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        kt_tile = tl.advance(kt_tile, (0, BLOCK_N))
        v_tile = tl.advance(v_tile, (BLOCK_N, 0))
    acc = acc / l_i[:, None]
    o_tile = tl.make_block_ptr(base=Out + head * stride_oh, shape=(N_CTX, HEAD_DIM), strides=(stride_om, 1),
                               offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    tl.store(o_tile, acc.to(Out.dtype.element_ty))


def attention(q, k, v, causal, sm_scale, BLOCK_M=32, BLOCK_N=16, num_warps=4):
    """softmax(q @ k^T * sm_scale) @ v for [Z, H, N, D] arrays, N a multiple of both blocks."""
    z, h, n, d = q.shape
    assert n % BLOCK_M == 0 and n % BLOCK_N == 0
    q3, k3, v3 = (np.ascontiguousarray(t.reshape(z * h, n, d)) for t in (q, k, v))
    o = np.empty_like(q3)

    def strides(t):
        return [s // t.itemsize for s in t.strides[:2]]

    grid = (triton.cdiv(n, BLOCK_M), z * h)
    attn_fwd_block_ptr[grid](q3, k3, v3, o, sm_scale, *strides(q3), *strides(k3), *strides(v3), *strides(o), n,
                             BLOCK_M=BLOCK_M, HEAD_DIM=d, BLOCK_N=BLOCK_N, IS_CAUSAL=causal, num_warps=num_warps)
    return o.reshape(z, h, n, d)
