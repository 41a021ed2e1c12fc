"""A mixture-of-experts up-projection, as Liger-Kernel's fused MoE spells it:
the tokens routed to each expert are sorted by expert, and each program
multiplies one BLOCK_M run of them by its expert's weights. A's rows are
gathered (each row is the token an index array names, loaded once before the
K loop, its offsets in int64), B is the expert's [N, H] weight tile
transposed (``x @ w.T``), and masks cut both the expert's run of rows and N.

The down-projection after it reads its A rows in place, the expert's run of
them, with their offsets widened to int64 as a whole
(``(row_start + arange).to(tl.int64)``, Liger's guard against overflow in the
product with the row stride)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def moe_up_proj(x_ptr, w_ptr, token_ptr, expert_start_ptr, tile_row_start_ptr, tile_expert_ptr, out_ptr,
                H, N, stride_x_t, stride_w_e, stride_w_n, stride_out_t,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    row_start = tl.load(tile_row_start_ptr + pid_m)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    expert_end = tl.load(expert_start_ptr + expert + 1)
    rows = (row_start + tl.arange(0, BLOCK_M)).to(tl.int64)
    row_mask = rows < expert_end
    token = tl.load(token_ptr + rows, mask=row_mask, other=0).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, H, BLOCK_K):
        ks = k + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + token[:, None] * stride_x_t + ks[None, :],
                    mask=row_mask[:, None] & (ks[None, :] < H), other=0.0)
        w = tl.load(w_ptr + expert * stride_w_e + cols[:, None] * stride_w_n + ks[None, :],
                    mask=col_mask[:, None] & (ks[None, :] < H), other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
    tl.store(out_ptr + rows[:, None] * stride_out_t + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=row_mask[:, None] & col_mask[None, :])


@triton.jit
def moe_down_proj(a_ptr, w_ptr, expert_start_ptr, tile_row_start_ptr, tile_expert_ptr, out_ptr,
                  H, inner, stride_a_t, stride_w_e, stride_w_h, stride_out_t,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    row_start = tl.load(tile_row_start_ptr + pid_m)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    expert_end = tl.load(expert_start_ptr + expert + 1)
    m_offs = tl.arange(0, BLOCK_M)
    rows = (row_start + m_offs).to(tl.int64)
    row_mask = rows < expert_end
    n_idx = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = n_idx < H
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, inner, BLOCK_K):
        k_idx = k + tl.arange(0, BLOCK_K)
        k_mask = k_idx < inner
        a = tl.load(a_ptr + rows[:, None] * stride_a_t + k_idx[None, :], mask=row_mask[:, None] & k_mask[None, :],
                    other=0.0)
        w = tl.load(w_ptr + expert * stride_w_e + n_idx[:, None] * stride_w_h + k_idx[None, :],
                    mask=n_mask[:, None] & k_mask[None, :], other=0.0)
        acc = tl.dot(a, tl.trans(w), acc=acc)
    tl.store(out_ptr + rows[:, None] * stride_out_t + n_idx[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=row_mask[:, None] & n_mask[None, :])


def route(top_experts, num_experts, BLOCK_M):
    """The routed slots sorted by expert: each slot's token, where each
    expert's run starts, and each BLOCK_M tile's first slot and expert."""
    tokens, k = top_experts.shape
    experts = top_experts.reshape(-1)
    order = np.argsort(experts, kind="stable")
    token = (order // k).astype(np.int32)
    counts = np.bincount(experts, minlength=num_experts)
    expert_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return (token, expert_start, *tiles(expert_start, BLOCK_M))


def tiles(expert_start, BLOCK_M):
    """Each BLOCK_M tile's first slot and expert, the experts' runs cut into tiles."""
    tile_row_start, tile_expert = [], []
    for e in range(len(expert_start) - 1):
        for first in range(expert_start[e], expert_start[e + 1], BLOCK_M):
            tile_row_start.append(first)
            tile_expert.append(e)
    return np.array(tile_row_start, np.int32), np.array(tile_expert, np.int32)


def up_proj(x, w, top_experts, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    """out[p] = x[token[p]] @ w[expert of p].T for every routed slot p, in expert order."""
    num_experts, N, H = w.shape
    token, expert_start, tile_row_start, tile_expert = route(top_experts, num_experts, BLOCK_M)
    out = np.empty((len(token), N), dtype=x.dtype)
    grid = (len(tile_row_start), triton.cdiv(N, BLOCK_N))
    moe_up_proj[grid](x, w, token, expert_start, tile_row_start, tile_expert, out, H, N,
                      x.strides[0] // x.itemsize, w.strides[0] // w.itemsize, w.strides[1] // w.itemsize,
                      out.strides[0] // out.itemsize, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                      num_warps=num_warps)
    return out, token, expert_start


def down_proj(a, w, expert_start, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    """out[p] = a[p] @ w[expert of p].T for the routed slots in expert order
    (``expert_start``: where each expert's run starts, as ``route`` gives)."""
    _, H, inner = w.shape
    tile_row_start, tile_expert = tiles(expert_start, BLOCK_M)
    out = np.empty((a.shape[0], H), dtype=a.dtype)
    grid = (len(tile_row_start), triton.cdiv(H, BLOCK_N))
    moe_down_proj[grid](a, w, expert_start, tile_row_start, tile_expert, out,
                        H, inner, a.strides[0] // a.itemsize, w.strides[0] // w.itemsize, w.strides[1] // w.itemsize,
                        out.strides[0] // out.itemsize, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=num_warps)
    return out
