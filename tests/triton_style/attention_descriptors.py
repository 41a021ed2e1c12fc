"""Attention forward in the form Triton 3.x's fused-attention tutorial now
takes on Hopper: Q, K, V and O passed as host TensorDescriptors of the
(Z * H * N_CTX, HEAD_DIM) matrices, with a dummy block shape that the
autotuner's pre_hook sets per config; a @jit helper that keeps a descriptor
it is given (``isinstance(x, tl.tensor_descriptor)``) or makes one from a
pointer (the same kernel launched with plain arrays); an output dtype chosen
between an 8-bit float and the inputs' (a name read only where taken);
``tl.range`` with ``warp_specialize``; the causal split in two stages.
N_CTX is a multiple of the blocks, as the tutorial's flattened rows need.
f16 inputs, f32 accumulation."""
import numpy as np

import mytriton as triton
import mytriton.language as tl
from mytriton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype: tl.constexpr, start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                    offs_m, offs_n, N_CTX, warp_specialize: tl.constexpr):
    # the keys this stage covers: below the diagonal's blocks, on them, or all
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offset_kv = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=warp_specialize):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offset_kv, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            visible = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(visible, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_kv, 0])
        acc = tl.dot(p.to(dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offset_kv += BLOCK_N
    return acc, l_i, m_i


def _set_block_shapes(nargs):
    """An autotuner config's pre_hook: each host descriptor's block for this config."""
    if not isinstance(nargs["desc_q"], TensorDescriptor):
        return
    block_m, block_n, head_dim = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    nargs["desc_q"].block_shape = [block_m, head_dim]
    nargs["desc_o"].block_shape = [block_m, head_dim]
    nargs["desc_k"].block_shape = [block_n, head_dim]
    nargs["desc_v"].block_shape = [block_n, head_dim]


configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=3, num_warps=4, pre_hook=_set_block_shapes)
           for bm, bn in ((32, 16), (64, 32))]


@triton.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@triton.autotune(configs=configs, key=["N_CTX", "HEAD_DIM", "FP8_OUTPUT", "warp_specialize"])
@triton.jit
def _attn_fwd(sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FP8_OUTPUT: tl.constexpr,
              STAGE: tl.constexpr, warp_specialize: tl.constexpr, default_dtype: tl.constexpr):
    dtype = tl.float8e5 if FP8_OUTPUT else default_dtype
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H

    rows = Z * H * N_CTX
    desc_q = _maybe_make_tensor_desc(desc_q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = _maybe_make_tensor_desc(desc_k, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = _maybe_make_tensor_desc(desc_v, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = _maybe_make_tensor_desc(desc_o, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])

    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    # STAGE 1: every key (not causal); STAGE 3: the blocks below the diagonal, then those on it
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m, qk_scale,
                                        BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX,
                                        warp_specialize)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m, qk_scale,
                                        BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n, N_CTX, warp_specialize)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


def attention(q, k, v, causal, sm_scale, host_descriptors=True, warp_specialize=False):
    """Attention of (Z, H, N_CTX, HEAD_DIM) f16 arrays: the output and the base-2 log-sum-exp of each row."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    assert k.shape == v.shape == q.shape and HEAD_DIM in {16, 32, 64, 128, 256}
    o = np.empty_like(q)
    M = np.empty((Z, H, N_CTX), dtype=np.float32)
    rows = Z * H * N_CTX
    if host_descriptors:
        dummy_block = [1, 1]
        desc_q, desc_k, desc_v, desc_o = (TensorDescriptor(t.reshape(rows, HEAD_DIM), shape=[rows, HEAD_DIM],
                                                           strides=[HEAD_DIM, 1], block_shape=dummy_block)
                                          for t in (q, k, v, o))
    else:
        desc_q, desc_k, desc_v, desc_o = q, k, v, o

    def grid(META):
        return (triton.cdiv(N_CTX, META["BLOCK_M"]), Z * H, 1)

    _attn_fwd[grid](sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX=N_CTX, HEAD_DIM=HEAD_DIM,
                    FP8_OUTPUT=False, STAGE=3 if causal else 1, warp_specialize=warp_specialize,
                    default_dtype=tl.float16)
    return o, M
