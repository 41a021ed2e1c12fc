"""The Triton-style tier: kernel files written as Triton users write them
(only the imports changed to ``import mytriton as triton`` and
``import mytriton.language as tl``; host code on NumPy arrays where the
originals use torch tensors), each run through its own host wrapper in the
interpreter against NumPy (random data, ragged sizes) and, on the GPU,
against the interpreter.

A kernel file that mytriton cannot compile yet is listed in NEEDS with what
it waits for; a test checks that it still fails with a located error in
that file, so a kernel that starts working fails that test: move it from
NEEDS to the tested ones then. ``_with_triton.py`` runs the same cases
with real Triton on a GPU machine, which checks the kernel files and the
references themselves.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from conftest import tiered
from mytriton.diagnostics import CompileError
from mytriton.testing import assert_close

HERE = Path(__file__).resolve().parent

# Each kernel file that does not compile yet, with what it waits for (none today):
# test_a_waiting_kernel_still_fails_with_a_located_error keeps the list honest.
NEEDS: dict[str, str] = {
}

_counter = itertools.count()

# The tolerance of f32 tl.dot results: f32 tl.dot is TF32 by default, in
# mytriton as in Triton (10 mantissa bits per operand).
F32_DOT_TOL = 3e-2


def load(stem: str) -> Any:
    """Import a kernel file as a user's module (a fresh module each time, so
    that autotuning caches do not leak between tests)."""
    path = HERE / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"triton_style_{stem}_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- NumPy references ---------------------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(x, w, b, eps):
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def _layer_norm_grads(dy, x, w, mean, rstd):
    n = x.shape[1]
    x_hat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (x_hat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    dx = (wdy - (x_hat * c1 + c2)) * rstd[:, None]
    return dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)


def _attention(q, k, v, causal, sm_scale):
    scores = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float64), k.astype(np.float64)) * sm_scale
    if causal:
        n = q.shape[2]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    probs = _softmax(scores)
    lse2 = np.log2(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1)) + scores.max(-1) / np.log(2)
    return np.einsum("zhmn,zhnd->zhmd", probs, v.astype(np.float64)), lse2


# ---- the cases: each runs a file's host code and gives (name, got, expected, atol, rtol) ----

Result = list[tuple[str, np.ndarray, np.ndarray, float, float]]


def case_vector_add(m, rng) -> Result:
    x = rng.standard_normal(3001).astype(np.float32)
    y = rng.standard_normal(3001).astype(np.float32)
    return [("output", m.add(x, y), x + y, 0, 0)]


def case_fused_softmax(m, rng) -> Result:
    x = rng.standard_normal((37, 781)).astype(np.float32)
    return [("y", m.softmax(x), _softmax(x), 1e-6, 1e-5)]


def case_matmul(m, rng) -> Result:
    a = rng.standard_normal((83, 70)).astype(np.float16)
    b = rng.standard_normal((70, 95)).astype(np.float16)
    exact = a.astype(np.float32) @ b.astype(np.float32)
    leaky = np.where(exact >= 0, exact, 0.01 * exact)
    return [("c", m.matmul(a, b).astype(np.float32), exact, 2e-2, 2e-2),
            ("c leaky_relu", m.matmul(a, b, activation="leaky_relu").astype(np.float32), leaky, 2e-2, 2e-2)]


def case_matmul_transposed_b(m, rng) -> Result:
    out: Result = []
    # ragged (a row of w not a multiple of 16 bytes: no chunks), whole tiles, K < BK
    for M, N, K in ((83, 95, 70), (128, 64, 96), (20, 33, 9)):
        x = rng.standard_normal((M, K)).astype(np.float16)
        w = rng.standard_normal((N, K)).astype(np.float16)
        exact = x.astype(np.float32) @ w.astype(np.float32).T
        out.append((f"x @ w.T {M}x{N}x{K}", m.linear(x, w).astype(np.float32), exact, 2e-2, 2e-2))
        # 8 warps over 64 rows: mma.sync on the GPU, w's tile held K-major (Liger's MoE config)
        wide = m.linear(x, w, BM=64, BN=128, BK=64, num_warps=8, num_stages=2)
        out.append((f"x @ w.T {M}x{N}x{K}, 8 warps", wide.astype(np.float32), exact, 2e-2, 2e-2))
    return out


def case_weight_grad(m, rng) -> Result:
    out: Result = []
    # ragged (masked rows, columns and T), whole tiles
    for T, n_in, n_out in ((70, 83, 95), (96, 128, 128)):
        for dtype, tol in ((np.float16, 2e-2), (np.float32, 2e-2)):
            x = rng.standard_normal((T, n_in)).astype(dtype)
            dy = rng.standard_normal((T, n_out)).astype(dtype)
            exact = dy.astype(np.float32).T @ x.astype(np.float32)
            name = f"dW {T}x{n_in}x{n_out} {np.dtype(dtype).name}"
            out.append((name, m.weight_grad_of(x, dy).astype(np.float32), exact, tol, tol))
            # Liger's dW config: 8 warps over 64 rows (wgmma's warpgroups split N on the GPU)
            wide = m.weight_grad_of(x, dy, BM=64, BN=128, BK=32, num_warps=8, num_stages=2)
            out.append((f"{name}, 8 warps", wide.astype(np.float32), exact, tol, tol))
    return out


def case_block_ptr_matmul(m, rng) -> Result:
    out: Result = []
    for shape in ((83, 95, 70), (128, 64, 96), (20, 33, 9)):  # ragged; whole blocks; K < BLOCK_SIZE_K
        M, N, K = shape
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        exact = a.astype(np.float32) @ b.astype(np.float32)
        out.append((f"c {M}x{N}x{K}", m.matmul(a, b).astype(np.float32), exact, 2e-2, 2e-2))
    return out


def case_descriptor_matmul(m, rng) -> Result:
    out: Result = []
    # Rows of A, B and C 16-byte multiples (as TMA needs), no size a multiple of its block.
    for shape in ((83, 104, 72), (128, 64, 96), (20, 24, 8)):
        M, N, K = shape
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        exact = a.astype(np.float32) @ b.astype(np.float32)
        out.append((f"c {M}x{N}x{K}", m.matmul(a, b).astype(np.float32), exact, 2e-2, 2e-2))
    return out


def case_persistent_matmul_descriptors(m, rng) -> Result:
    out: Result = []
    # Rows 16-byte multiples (as TMA needs), no size a multiple of its block; the
    # epilogue whole and split in two halves.
    for (M, N, K), subtile in (((150, 88, 72), False), ((150, 88, 72), True), ((40, 136, 24), True)):
        a = rng.standard_normal((M, K)).astype(np.float16)
        b_t = rng.standard_normal((N, K)).astype(np.float16)
        exact = a.astype(np.float32) @ b_t.T.astype(np.float32)
        c = m.matmul(a, b_t, epilogue_subtile=subtile)
        out.append((f"c {M}x{N}x{K} subtile={subtile}", c.astype(np.float32), exact, 2e-2, 2e-2))
    return out


def case_matmul_split_k(m, rng) -> Result:
    out: Result = []
    for dtype, tol in ((np.float16, 2e-2), (np.float32, F32_DOT_TOL)):
        a = rng.standard_normal((70, 300)).astype(dtype)  # ragged: no size a multiple of its block
        b = rng.standard_normal((300, 45)).astype(dtype)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        for split_k in (1, 4):
            out.append((f"c {np.dtype(dtype).name} split_k={split_k}", m.matmul_split_k(a, b, split_k), exact, tol, tol))
    return out


def case_persistent_matmul(m, rng) -> Result:
    out: Result = []
    for dtype, tol in ((np.float16, 2e-2), (np.float32, F32_DOT_TOL)):
        a = rng.standard_normal((150, 70)).astype(dtype)
        b = rng.standard_normal((70, 75)).astype(dtype)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        out.append((f"c {np.dtype(dtype).name}", m.matmul_persistent(a, b).astype(np.float32), exact, tol, tol))
    return out


def _matmul_operands(rng, M, N, K, dtype, b_shape=None, a_shape=None):
    a = rng.standard_normal(a_shape or (M, K)).astype(dtype)
    b = rng.standard_normal(b_shape or (K, N)).astype(dtype)
    return a, b


def _matmul_cases(rng, run, shapes, b_stored="kn", a_stored="mk") -> Result:
    """``run(a, b)`` against NumPy for f16 and f32 operands at each shape;
    ``b_stored`` "nk" passes B as [N, K] (x @ w.T), ``a_stored`` "km" A as
    [K, M] (a.T @ b)."""
    out: Result = []
    for dtype, tol in ((np.float16, 2e-2), (np.float32, F32_DOT_TOL)):
        for M, N, K in shapes:
            a, b = _matmul_operands(rng, M, N, K, dtype, b_shape=(N, K) if b_stored == "nk" else None,
                                    a_shape=(K, M) if a_stored == "km" else None)
            a64 = a.astype(np.float64).T if a_stored == "km" else a.astype(np.float64)
            b64 = b.astype(np.float64).T if b_stored == "nk" else b.astype(np.float64)
            got = run(a, b).astype(np.float32)
            out.append((f"c {np.dtype(dtype).name} {M}x{N}x{K}", got, a64 @ b64, tol, tol))
    return out


# ragged (no size a multiple of 32); whole blocks; K under one block
RAGGED_MATMULS = ((83, 95, 70), (64, 96, 128), (20, 33, 9))


def case_matmul_offsets(m, rng) -> Result:
    return _matmul_cases(rng, m.matmul, RAGGED_MATMULS)


def case_matmul_unmasked(m, rng) -> Result:
    return _matmul_cases(rng, m.matmul, ((64, 96, 128), (32, 32, 32)))  # whole blocks only


def case_matmul_loop_helper(m, rng) -> Result:
    return _matmul_cases(rng, m.matmul, RAGGED_MATMULS)


def case_matmul_tl_range(m, rng) -> Result:
    return _matmul_cases(rng, m.matmul, RAGGED_MATMULS)


def case_matmul_trans(m, rng) -> Result:
    out = [(f"x @ w.T {label}", *rest) for label, *rest in
           _matmul_cases(rng, m.linear, RAGGED_MATMULS, b_stored="nk")]
    out += [(f"a.T @ b {label}", *rest) for label, *rest in
            _matmul_cases(rng, m.matmul_at, RAGGED_MATMULS, a_stored="km")]
    # 8 warps over 64 rows: mma.sync on the GPU, A held M-major (Liger's MoE weight gradients)
    def eight_warps(at, b):
        return m.matmul_at(at, b, BLOCK_M=64, BLOCK_N=64, num_warps=8)
    return out + [(f"a.T @ b {label}, 8 warps", *rest) for label, *rest in
                  _matmul_cases(rng, eight_warps, RAGGED_MATMULS[:1], a_stored="km")]


def case_matmul_gathered_rows(m, rng) -> Result:
    out: Result = []
    # ragged: no size a multiple of its block, one expert's run under a tile, an expert with none
    for dtype, tol in ((np.float16, 2e-2), (np.float32, F32_DOT_TOL)):
        tokens, hidden, n, experts = 50, 70, 45, 5
        x = rng.standard_normal((tokens, hidden)).astype(dtype)
        w = rng.standard_normal((experts, n, hidden)).astype(dtype)
        top = np.stack([rng.choice(experts - 1, size=2, replace=False) for _ in range(tokens)])
        got, token, expert_start = m.up_proj(x, w, top)
        exact = np.empty(got.shape)
        for e in range(experts):
            run = slice(expert_start[e], expert_start[e + 1])
            exact[run] = x[token[run]].astype(np.float64) @ w[e].astype(np.float64).T
        out.append((f"out {np.dtype(dtype).name}", got.astype(np.float32), exact, tol, tol))
        if dtype == np.float16:  # 64-row tiles too: wgmma on the GPU (the 32-row ones: mma.sync)
            wide, _, _ = m.up_proj(x, w, top, BLOCK_M=64, BLOCK_N=64)
            out.append(("out float16, 64x64 tiles", wide.astype(np.float32), exact, tol, tol))
        # the down-projection of the up-projection's rows, in place, by expert (its rows' offsets int64)
        a = (got / np.sqrt(hidden)).astype(dtype)  # (unit scale: TF32's error grows with it)
        w_down = rng.standard_normal((experts, hidden, n)).astype(dtype)
        down = m.down_proj(a, w_down, expert_start)
        exact = np.empty(down.shape)
        for e in range(experts):
            run = slice(expert_start[e], expert_start[e + 1])
            exact[run] = a[run].astype(np.float64) @ w_down[e].astype(np.float64).T
        out.append((f"down {np.dtype(dtype).name}", down.astype(np.float32), exact, tol, tol))
    return out


def case_layer_norm_fwd(m, rng) -> Result:
    x = rng.standard_normal((13, 300)).astype(np.float32) * 3 + 1
    w = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    y, mean, rstd = m.layer_norm(x, w, b, 1e-5)
    ry, rmean, rrstd = _layer_norm(x.astype(np.float64), w, b, 1e-5)
    return [("y", y, ry, 1e-4, 1e-4), ("mean", mean, rmean, 1e-5, 1e-5), ("rstd", rstd, rrstd, 1e-5, 1e-4)]


def _backward_inputs(rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    dy = rng.standard_normal((rows, cols)).astype(np.float32)
    mean = x.mean(axis=1).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(axis=1) + 1e-5)).astype(np.float32)
    return dy, x, w, mean, rstd


def case_layer_norm_bwd(m, rng) -> Result:
    dy, x, w, mean, rstd = _backward_inputs(rng, 29, 200)
    dx, dw, db = m.layer_norm_backward(dy, x, w, mean, rstd)
    rdx, rdw, rdb = _layer_norm_grads(dy, x, w, mean, rstd)
    return [("dx", dx, rdx, 1e-4, 1e-4), ("dw", dw, rdw, 1e-4, 1e-4), ("db", db, rdb, 1e-4, 1e-4)]


def case_layer_norm_bwd_locks(m, rng) -> Result:
    dy, x, w, mean, rstd = _backward_inputs(rng, 29, 200)
    dx, dw, db = m.layer_norm_backward(dy, x, w, mean, rstd)
    rdx, rdw, rdb = _layer_norm_grads(dy, x, w, mean, rstd)
    return [("dx", dx, rdx, 1e-4, 1e-4), ("dw", dw, rdw, 1e-4, 1e-4), ("db", db, rdb, 1e-4, 1e-4)]


def case_fused_attention(m, rng) -> Result:
    out: Result = []
    for dtype, causal in itertools.product((np.float32, np.float16), (False, True)):
        q, k, v = (rng.standard_normal((2, 3, 50, 16)).astype(dtype) for _ in range(3))
        sm_scale = 0.5
        o, lse = m.attention(q, k, v, causal, sm_scale)
        ro, rlse = _attention(q, k, v, causal, sm_scale)
        tol = F32_DOT_TOL if dtype == np.float32 else 1e-2
        label = f"{np.dtype(dtype).name} causal={causal}"
        out += [(f"o {label}", o.astype(np.float32), ro, tol, tol), (f"M {label}", lse, rlse, tol, tol)]
    return out


def case_attention_descriptors(m, rng) -> Result:
    out: Result = []
    for host_descriptors, causal in itertools.product((True, False), (False, True)):
        q, k, v = (rng.standard_normal((2, 3, 64, 16)).astype(np.float16) for _ in range(3))
        o, lse = m.attention(q, k, v, causal, 0.5, host_descriptors=host_descriptors)
        ro, rlse = _attention(q, k, v, causal, 0.5)
        label = f"host descriptors={host_descriptors} causal={causal}"
        out += [(f"o {label}", o.astype(np.float32), ro, 1e-2, 1e-2), (f"M {label}", lse, rlse, 1e-2, 1e-2)]
    return out


def _attention_forward_cases(m, rng, n_ctx: int) -> Result:
    """``m.attention(q, k, v, causal, sm_scale)`` in f16 and f32, causal and not, against NumPy."""
    out: Result = []
    for dtype, causal in itertools.product((np.float16, np.float32), (False, True)):
        q, k, v = (rng.standard_normal((2, 2, n_ctx, 16)).astype(dtype) for _ in range(3))
        o = m.attention(q, k, v, causal, 0.5)
        ro, _ = _attention(q, k, v, causal, 0.5)
        tol = F32_DOT_TOL if dtype == np.float32 else 1e-2
        out.append((f"o {np.dtype(dtype).name} causal={causal}", o.astype(np.float32), ro, tol, tol))
    return out


def case_attention_block_ptr(m, rng) -> Result:
    return _attention_forward_cases(m, rng, 64)  # a multiple of the blocks: no boundary checks


def case_attention_trans(m, rng) -> Result:
    return _attention_forward_cases(m, rng, 50)


def _causal_attention_grads(q, k, v, do, sm_scale):
    """Float64 forward statistics (O, base-2 log-sum-exp) and gradients of causal attention."""
    n = q.shape[2]
    Q, K, V, dO = (x.astype(np.float64) for x in (q, k, v, do))
    s = np.einsum("zhmd,zhnd->zhmn", Q, K) * sm_scale
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("zhmn,zhnd->zhmd", p, V)
    ds = p * (np.einsum("zhmd,zhnd->zhmn", dO, V) - (o * dO).sum(-1)[..., None])
    s2 = s / np.log(2)
    lse = s2.max(-1) + np.log2(np.exp2(s2 - s2.max(-1, keepdims=True)).sum(-1))
    grads = (np.einsum("zhmn,zhnd->zhmd", ds, K) * sm_scale, np.einsum("zhmn,zhmd->zhnd", ds, Q) * sm_scale,
             np.einsum("zhmn,zhmd->zhnd", p, dO))
    return o, lse, grads


def case_attention_backward(m, rng) -> Result:
    out: Result = []
    for dtype in (np.float16,):
        q, k, v, do = ((rng.standard_normal((1, 2, 128, 64)) * 0.5).astype(dtype) for _ in range(4))
        o, lse, expected = _causal_attention_grads(q, k, v, do, 0.3)
        got = m.attention_backward(q, k, v, o.astype(dtype), do, lse.astype(np.float32), 0.3)
        out += [(name, g.astype(np.float32), e, 2e-2, 2e-2) for name, g, e in zip(("dq", "dk", "dv"), got, expected)]
    return out


def case_rms_norm(m, rng) -> Result:
    out: Result = []
    for dtype, tol in ((np.float32, 1e-5), (np.float16, 1e-2)):
        x = rng.standard_normal((21, 333)).astype(dtype)
        w = rng.standard_normal(333).astype(dtype)
        y, rstd = m.rms_norm_forward(x, w, 1e-6)
        x64 = x.astype(np.float64)
        rrstd = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
        ry = (x64 * rrstd[:, None]).astype(dtype).astype(np.float64) * w
        out += [(f"y {np.dtype(dtype).name}", y.astype(np.float32), ry, tol, tol),
                (f"rstd {np.dtype(dtype).name}", rstd, rrstd, 1e-5, 1e-5)]
    return out


def case_cross_entropy(m, rng) -> Result:
    logits = rng.standard_normal((17, 1500)).astype(np.float32) * 2
    target = rng.integers(0, 1500, size=17).astype(np.int64)
    target[[3, 11]] = -100
    keep = target != -100
    n = int(keep.sum())
    probs = _softmax(logits.astype(np.float64))
    rows = np.arange(17)[keep]
    loss = -np.log(probs[rows, target[keep]]).sum() / n
    grad = probs / n
    grad[rows, target[keep]] -= 1.0 / n
    grad[~keep] = 0
    got_loss, got_grad = m.cross_entropy_forward(logits.copy(), target)
    return [("loss", np.asarray(got_loss), np.asarray(loss), 1e-5, 1e-5), ("grad", got_grad, grad, 1e-6, 1e-4)]


def case_rope(m, rng) -> Result:
    x = rng.standard_normal((7, 3, 64)).astype(np.float32)
    angles = rng.uniform(0, 2 * math.pi, (7, 32))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    expected = np.empty_like(x)
    expected[..., 0::2] = x1 * cos[:, None] - x2 * sin[:, None]
    expected[..., 1::2] = x1 * sin[:, None] + x2 * cos[:, None]
    return [("out", m.rope(x, cos, sin), expected, 1e-5, 1e-5)]


def case_rope_pairs(m, rng) -> Result:
    out: Result = []
    for half, block in ((32, 64), (40, 16)):  # one masked block; three blocks, the last masked
        x = rng.standard_normal((5, 3, 2 * half)).astype(np.float32)
        angles = rng.uniform(0, 2 * math.pi, (5, half))
        freqs = np.stack([np.cos(angles), np.sin(angles)], -1).astype(np.float32)
        cos, sin = freqs[..., 0][:, None], freqs[..., 1][:, None]
        real, imag = x[..., 0::2], x[..., 1::2]
        expected = np.empty_like(x)
        expected[..., 0::2] = real * cos - imag * sin
        expected[..., 1::2] = real * sin + imag * cos
        out.append((f"x half={half}", m.rope_pairs(x.copy(), freqs, block), expected, 1e-5, 1e-5))
    return out


def case_token_gather_sum(m, rng) -> Result:
    out: Result = []
    # K and H ragged against their tiles (a masked K tile, a masked H tile), then even and unweighted
    for tokens, k, h, block_h, block_k, weighted in ((6, 3, 200, 64, 2, True), (5, 8, 256, 128, 4, False)):
        y = rng.standard_normal((tokens * k, h)).astype(np.float32)
        rev = rng.permutation(tokens * k).astype(np.int32)
        w = rng.uniform(0.1, 1.0, tokens * k).astype(np.float32) if weighted else None
        rows = y[rev].reshape(tokens, k, h)
        expected = (rows * w.reshape(tokens, k, 1)).sum(1) if weighted else rows.sum(1)
        got = m.token_gather_sum(y, w, rev, tokens, k, block_h, block_k)
        out.append((f"out k={k} h={h} weighted={weighted}", got, expected, 1e-5, 1e-5))
    return out


def case_scale_heuristics(m, rng) -> Result:
    out: Result = []
    for n in (3001, 2048):  # a ragged size (masked) and an even one (EVEN_N: unmasked)
        x = rng.standard_normal(n).astype(np.float32)
        out.append((f"out n={n}", m.scale_shift(x, 1.5, -0.25), x * np.float32(1.5) + np.float32(-0.25), 1e-6, 1e-6))
    return out


def case_dropout(m, rng) -> Result:
    """Triton's numbers exactly: the mask is Philox's (tests/philox_reference.py,
    from the published algorithm), so mytriton and Triton must drop the same
    elements. p is 0.5 so that x / (1 - p) is exact whatever the division's
    rounding (Triton divides f32 with div.full, mytriton correctly rounded)."""
    from philox_reference import rand

    x = rng.standard_normal(5000).astype(np.float32) + 3.0  # never zero: a zero output is a dropped one
    out: Result = []
    for seed in (123, 2**31 - 1):
        got = m.seeded_dropout(x, 0.5, seed)
        kept = got != 0
        assert 0.45 < kept.mean() < 0.55, f"kept {kept.mean():.2f} of the elements, expected about 0.5"
        keep = rand(seed, np.arange(x.size, dtype=np.int32)) > np.float32(0.5)
        expected = np.where(keep, x / np.float32(0.5), np.float32(0)).astype(np.float32)
        out.append((f"output seed={seed}", got, expected, 0, 0))
    again = m.seeded_dropout(x, 0.5, 123)
    out.append(("the same seed again", again, out[0][1], 0, 0))
    return out


def case_random_numbers(m, rng) -> Result:
    """Philox's bits exactly (tests/philox_reference.py, from the published
    algorithm); randn within a few ulps (its log, cos and sin are the
    backend's: NumPy's f32 log is within 3 ulps, CUDA's logf within 1)."""
    import philox_reference as ref

    out: Result = []
    for seed, base, n in ((1234, 0, 3000), (-5, 2**32 - 1000, 2000)):
        ints, words, uniform, normal = m.random_numbers(seed, n, base)
        offsets = np.arange(n, dtype=np.int64) + base
        offsets = offsets.astype(np.int32) if base == 0 else offsets
        expected_words = np.stack(ref.randint4x(seed, offsets), axis=1)
        label = f"seed={seed} base={base}"
        out += [(f"randint {label}", ints.view(np.uint32), ref.randint(seed, offsets), 0, 0),
                (f"randint4x {label}", words.view(np.uint32), expected_words, 0, 0),
                (f"rand {label}", uniform, ref.rand(seed, offsets), 0, 0),
                (f"randn {label}", normal, ref.randn(seed, offsets), 2e-6, 1e-6)]
    return out


def _gelu_tanh(a):
    inner = np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)
    return 0.5 * a * (1 + np.tanh(inner)), inner


def case_gelu_tanh(m, rng) -> Result:
    out: Result = []
    # f32: 1 + tanh cancels for negative a (an absolute error of a few f32 ulps of 1)
    for dtype, tol in ((np.float32, 1e-4), (np.float16, 3e-3)):
        a, b, dc = (rng.standard_normal((23, 333)).astype(dtype) * 2 for _ in range(3))
        a64, b64, dc64 = (v.astype(np.float64) for v in (a, b, dc))
        gelu, inner = _gelu_tanh(a64)
        t = np.tanh(inner)
        dgelu = 0.5 * (1 + t) + 0.5 * a64 * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * a64 ** 2)
        da, db = m.geglu_backward(a, b, dc)
        name = np.dtype(dtype).name
        out += [(f"c {name}", m.geglu_forward(a, b).astype(np.float64), gelu * b64, tol, tol),
                (f"da {name}", da.astype(np.float64), dc64 * b64 * dgelu, tol, tol),
                (f"db {name}", db.astype(np.float64), dc64 * gelu, tol, tol)]
    return out


def case_grouped_gemm(m, rng) -> Result:
    # whole tiles of both configs (64), as the tutorial's kernel assumes; products of different shapes
    shapes = [(64, 128, 64), (128, 64, 192), (192, 192, 64), (64, 64, 128)]
    group_a = [rng.standard_normal((mm, k)).astype(np.float16) for mm, n, k in shapes]
    group_b = [rng.standard_normal((k, n)).astype(np.float16) for mm, n, k in shapes]
    group_c = m.group_gemm_fn(group_a, group_b)
    return [(f"c{i} {a.shape}x{b.shape}", c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
             2e-2, 2e-2) for i, (a, b, c) in enumerate(zip(group_a, group_b, group_c))]


def case_histogram(m, rng) -> Result:
    out: Result = []
    for n_tokens, num_experts in ((5000, 64), (777, 8), (300, 1024)):  # ragged; fewer and more bins than a block
        expert_ids = rng.integers(0, num_experts, n_tokens).astype(np.int32)
        expected = np.bincount(expert_ids, minlength=num_experts).astype(np.int32)
        out.append((f"counts n={n_tokens} bins={num_experts}", m.expert_histogram(expert_ids, num_experts),
                    expected, 0, 0))
    return out


def case_sort_rows(m, rng) -> Result:
    out: Result = []
    for shape in ((37, 100), (5, 1024), (64, 8)):
        x = (np.round(rng.standard_normal(shape) * 16) / 4).astype(np.float32)  # duplicates too
        out.append((f"ascending {shape}", m.sort_rows(x), np.sort(x, axis=1), 0, 0))
        out.append((f"descending {shape}", m.sort_rows(x, descending=True), np.sort(x, axis=1)[:, ::-1], 0, 0))
    return out


def _linear_recurrence(a, b):
    h = np.zeros(a.shape, np.float64)
    state = np.zeros(a.shape[0], np.float64)
    for t in range(a.shape[1]):
        state = a[:, t] * state + b[:, t]
        h[:, t] = state
    return h


def case_scans(m, rng) -> Result:
    x = rng.integers(-5, 5, (19, 300)).astype(np.float32)  # ties, for argmax
    cumsum, argmax = m.cumsum_argmax(x)
    value, index = m.last_max(x)
    last = x.shape[1] - 1 - np.argmax(x[:, ::-1], axis=1)
    a = rng.uniform(0.5, 1.0, (7, 1000)).astype(np.float32)
    b = rng.standard_normal((7, 1000)).astype(np.float32)
    return [("cumsum", cumsum, np.cumsum(x, axis=1), 1e-4, 1e-5),
            ("argmax", argmax, x.argmax(axis=1), 0, 0),
            ("last max", value, x.max(axis=1), 0, 0),
            ("last max index", index, last, 0, 0),
            ("selective scan", m.selective_scan(a, b), _linear_recurrence(a, b), 1e-4, 1e-4)]


CASES: dict[str, Callable[[Any, Any], Result]] = {
    name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}
WORKING = [name for name in CASES if name not in NEEDS]


def run_case(name: str, backend: str, monkeypatch) -> Result:
    monkeypatch.setenv("MYTRITON_BACKEND", backend)
    return CASES[name](load(name), np.random.default_rng(sorted(CASES).index(name)))


def test_every_kernel_file_has_a_case():
    files = {p.stem for p in HERE.glob("*.py") if not p.stem.startswith(("test_", "_"))}
    assert files == set(CASES)
    assert set(NEEDS) <= set(CASES)


@pytest.mark.parametrize("name", WORKING)
def test_the_kernel_matches_numpy_in_the_interpreter(name, monkeypatch):
    for label, got, expected, atol, rtol in run_case(name, "interp", monkeypatch):
        assert_close(got, expected, atol=atol, rtol=rtol, err_msg=f"{name}: {label}")


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_waiting_kernel_still_fails_with_a_located_error(name, monkeypatch):
    """Each waiting kernel still stops with a located error in its own file;
    when this test fails, the kernel compiles: move it out of NEEDS."""
    with pytest.raises(CompileError) as info:
        run_case(name, "interp", monkeypatch)
    loc = info.value.loc
    assert loc is not None and Path(loc.file).name == f"{name}.py", str(info.value)
    assert loc.line > 1


@pytest.mark.gpu
@pytest.mark.parametrize("name", WORKING)
def test_the_kernel_on_the_gpu_matches_the_interpreter(name, monkeypatch):
    on_gpu = run_case(name, "cuda", monkeypatch)
    interpreted = run_case(name, "interp", monkeypatch)
    for (label, got, _, atol, rtol), (_, reference, _, _, _) in zip(on_gpu, interpreted):
        assert_close(got, reference, atol=atol, rtol=rtol, err_msg=f"{name}: {label}")


def _compiled_kernels(module: Any) -> list[Any]:
    """Every specialisation the module's kernels compiled so far."""
    from mytriton.runtime.autotuner import KernelInterface
    from mytriton.runtime.jit import JITFunction

    found = []
    for value in vars(module).values():
        if isinstance(value, KernelInterface):
            value = value.jit_function
        if isinstance(value, JITFunction):
            found += value._compiled.values()
    return found


@pytest.mark.nvcc
@pytest.mark.parametrize("name", tiered(WORKING, fast=("matmul",)))
def test_the_kernels_cuda_builds_with_nvcc(name, monkeypatch):
    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    module = load(name)
    CASES[name](module, np.random.default_rng(0))
    compiled = _compiled_kernels(module)
    assert compiled
    for kernel in compiled:
        assert ".entry" in kernel.asm["ptx"], kernel.name


@pytest.mark.parametrize("name", tiered(WORKING, slow=("sort_rows", "fused_attention", "matmul_offsets",
                                                     "matmul_unmasked", "matmul_loop_helper",
                                                     "matmul_tl_range")))
def test_every_stage_of_the_kernels_prints_back_as_it_parses(name, monkeypatch):
    from mytriton import compiler

    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    module = load(name)
    CASES[name](module, np.random.default_rng(0))
    compiled = _compiled_kernels(module)
    assert compiled
    for kernel in compiled:
        for stage in ("ssa", "layouts"):
            text = kernel.asm[stage]
            assert compiler.print_ssa(compiler.read_ssa(text, f"{kernel.name}.ssa")) == text, (kernel.name, stage)


def test_the_triton_script_compares_random_numbers_within_their_tolerances(monkeypatch, capsys):
    """randint and rand exactly, randn within its tolerance (ulps printed)."""
    import _with_triton

    monkeypatch.setattr(_with_triton, "mytriton_backends", lambda: ["interp"])
    seed = sorted(CASES).index("random_numbers")
    ours = run_case("random_numbers", "interp", monkeypatch)
    nudged = [(label, np.nextafter(got, np.float32(np.inf)) if label.startswith("randn") else got, *rest)
              for label, got, *rest in ours]
    assert _with_triton.compare_with_mytriton("random_numbers", nudged, seed) == ["interp"]
    assert "randn seed=1234 base=0: mytriton (interp) within 1 ulps of Triton" in capsys.readouterr().out
    label, got, *rest = ours[0]
    with pytest.raises(AssertionError, match="differs from Triton"):
        _with_triton.compare_with_mytriton("random_numbers", [(label, got ^ np.uint32(1), *rest), *ours[1:]], seed)


def test_the_triton_script_compares_dropout_with_mytriton_bit_for_bit(monkeypatch):
    """_with_triton.py checks Triton's dropout against mytriton's exactly:
    results equal to mytriton's pass, and one flipped element fails."""
    import _with_triton

    monkeypatch.setattr(_with_triton, "mytriton_backends", lambda: ["interp"])
    seed = sorted(CASES).index("dropout")
    ours = run_case("dropout", "interp", monkeypatch)
    assert _with_triton.compare_with_mytriton("dropout", ours, seed) == ["interp"]
    label, got, expected, atol, rtol = ours[0]
    flipped = got.copy()
    flipped[7] = 0 if flipped[7] else 1
    with pytest.raises(AssertionError, match="differs from Triton"):
        _with_triton.compare_with_mytriton("dropout", [(label, flipped, expected, atol, rtol), *ours[1:]], seed)
