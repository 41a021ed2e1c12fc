"""Causal attention's backward pass, the algorithm of Triton's tutorial 06
(FlashAttention 2's backward) in a spelling of its own: one program owns a
block of keys (their dK and dV) and a block of queries (their dQ); each walk
is a @jit helper whose loop recomputes its offsets from the step, its count
a constant on the masked diagonal blocks (BLOCK_N1 // MASK_BLOCK_M1) and a
runtime value below them. The scale is applied in the kernel (the tutorial
scales K on the host). Forward statistics: ``lse`` is each query row's
log2-sum-exp2 of its scores times ``sm_scale * log2(e)``, ``delta`` its
rowsum(O * dO) (attention_bwd_preprocess). The same file runs under Triton
(benchmarks/attention_backward.py)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def attention_bwd_preprocess(o_ptr, do_ptr, delta_ptr, n_ctx, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    head = tl.program_id(1).to(tl.int64) * n_ctx
    cols = tl.arange(0, HEAD_DIM)
    at = (head + rows)[:, None] * HEAD_DIM + cols[None, :]
    o = tl.load(o_ptr + at).to(tl.float32)
    do = tl.load(do_ptr + at).to(tl.float32)
    tl.store(delta_ptr + head + rows, tl.sum(o * do, axis=1))


@triton.jit
def _key_block_steps(dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, scale, first_query, steps, keys,
                     BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr):
    """dK and dV of one block of keys over ``steps`` blocks of queries from ``first_query``."""
    cols = tl.arange(0, HEAD_DIM)
    for step in range(steps):
        queries = first_query + step * BLOCK_M + tl.arange(0, BLOCK_M)
        q_t = tl.load(q_ptr + queries[None, :] * HEAD_DIM + cols[:, None])  # [HEAD_DIM, BLOCK_M]
        lse = tl.load(lse_ptr + queries)
        p_t = tl.math.exp2(tl.dot(k, q_t) * scale - lse[None, :])  # [BLOCK_N, BLOCK_M]
        if MASKED:
            p_t = tl.where(queries[None, :] >= keys[:, None], p_t, 0.0)
        do = tl.load(do_ptr + queries[:, None] * HEAD_DIM + cols[None, :])
        dv += tl.dot(p_t.to(do.dtype), do)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - tl.load(delta_ptr + queries)[None, :])
        dk += tl.dot(ds_t.to(do.dtype), tl.trans(q_t))
    return dk, dv


@triton.jit
def _query_block_steps(dq, q, do, lse, delta, k_ptr, v_ptr, scale, queries, first_key, steps,
                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr):
    """dQ of one block of queries over ``steps`` blocks of keys from ``first_key``."""
    cols = tl.arange(0, HEAD_DIM)
    for step in range(steps):
        keys = first_key + step * BLOCK_N + tl.arange(0, BLOCK_N)
        k_t = tl.load(k_ptr + keys[None, :] * HEAD_DIM + cols[:, None])  # [HEAD_DIM, BLOCK_N]
        v_t = tl.load(v_ptr + keys[None, :] * HEAD_DIM + cols[:, None])
        p = tl.math.exp2(tl.dot(q, k_t) * scale - lse[:, None])
        if MASKED:
            p = tl.where(queries[:, None] >= keys[None, :], p, 0.0)
        ds = p * (tl.dot(do, v_t) - delta[:, None])
        dq += tl.dot(ds.to(q.dtype), tl.trans(k_t))
    return dq


@triton.jit
def attention_bwd(q_ptr, k_ptr, v_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr, lse_ptr, delta_ptr, sm_scale, n_ctx,
                  BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
                  SLICE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Program (i, head): dK and dV of keys [i * BLOCK_N1, +BLOCK_N1) and dQ of
    queries [i * BLOCK_M2, +BLOCK_M2) of one head (rows of HEAD_DIM contiguous)."""
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0 and BLOCK_M2 % BLOCK_N2 == 0)
    head = tl.program_id(1).to(tl.int64) * n_ctx
    q_ptr += head * HEAD_DIM
    k_ptr += head * HEAD_DIM
    v_ptr += head * HEAD_DIM
    do_ptr += head * HEAD_DIM
    dq_ptr += head * HEAD_DIM
    dk_ptr += head * HEAD_DIM
    dv_ptr += head * HEAD_DIM
    lse_ptr += head
    delta_ptr += head
    scale = sm_scale * LOG2E
    cols = tl.arange(0, HEAD_DIM)

    # dK, dV: the diagonal block's queries in finer, masked steps, then every later block whole.
    first_key = tl.program_id(0) * BLOCK_N1
    keys = first_key + tl.arange(0, BLOCK_N1)
    k = tl.load(k_ptr + keys[:, None] * HEAD_DIM + cols[None, :])
    v = tl.load(v_ptr + keys[:, None] * HEAD_DIM + cols[None, :])
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    MASK_M1: tl.constexpr = BLOCK_M1 // SLICE
    dk, dv = _key_block_steps(dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, scale, first_key,
                              BLOCK_N1 // MASK_M1, keys, MASK_M1, HEAD_DIM, True)
    after = first_key + BLOCK_N1
    dk, dv = _key_block_steps(dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, scale, after,
                              (n_ctx - after) // BLOCK_M1, keys, BLOCK_M1, HEAD_DIM, False)
    tl.store(dv_ptr + keys[:, None] * HEAD_DIM + cols[None, :], dv.to(dv_ptr.dtype.element_ty))
    tl.store(dk_ptr + keys[:, None] * HEAD_DIM + cols[None, :], (dk * sm_scale).to(dk_ptr.dtype.element_ty))

    # dQ: the diagonal block's keys in finer, masked steps, then every earlier block whole.
    first_query = tl.program_id(0) * BLOCK_M2
    queries = first_query + tl.arange(0, BLOCK_M2)
    q = tl.load(q_ptr + queries[:, None] * HEAD_DIM + cols[None, :])
    do = tl.load(do_ptr + queries[:, None] * HEAD_DIM + cols[None, :])
    lse = tl.load(lse_ptr + queries)
    delta = tl.load(delta_ptr + queries)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    MASK_N2: tl.constexpr = BLOCK_N2 // SLICE
    dq = _query_block_steps(dq, q, do, lse, delta, k_ptr, v_ptr, scale, queries, first_query,
                            BLOCK_M2 // MASK_N2, MASK_N2, HEAD_DIM, True)
    dq = _query_block_steps(dq, q, do, lse, delta, k_ptr, v_ptr, scale, queries, 0,
                            first_query // BLOCK_N2, BLOCK_N2, HEAD_DIM, False)
    tl.store(dq_ptr + queries[:, None] * HEAD_DIM + cols[None, :], (dq * sm_scale).to(dq_ptr.dtype.element_ty))


def attention_backward(q, k, v, o, do, lse, sm_scale, BLOCK_M1=32, BLOCK_N1=64, BLOCK_M2=64, BLOCK_N2=32, SLICE=2,
                       num_warps=4, num_stages=3):
    """dQ, dK and dV of causal attention over [Z, H, N, D] arrays (N a
    multiple of BLOCK_N1 and BLOCK_M2), given the forward's output ``o`` and
    base-2 log-sum-exp ``lse`` ([Z, H, N])."""
    z, h, n, d = q.shape
    assert n % BLOCK_N1 == 0 and n % BLOCK_M2 == 0 and BLOCK_N1 * BLOCK_M2 > 0
    delta = np.empty((z, h, n), np.float32)
    attention_bwd_preprocess[(n // BLOCK_M2, z * h)](o, do, delta, n, BLOCK_M=BLOCK_M2, HEAD_DIM=d)
    dq, dk, dv = (np.empty_like(q) for _ in range(3))
    attention_bwd[(n // BLOCK_N1, z * h)](q, k, v, do, dq, dk, dv, lse, delta, sm_scale, n,
                                          BLOCK_M1=BLOCK_M1, BLOCK_N1=BLOCK_N1, BLOCK_M2=BLOCK_M2,
                                          BLOCK_N2=BLOCK_N2, SLICE=SLICE, HEAD_DIM=d, num_warps=num_warps,
                                          num_stages=num_stages)
    return dq, dk, dv
