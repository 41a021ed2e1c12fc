"""A ``range`` with a constant trip count short enough to unroll stays a loop
when its body calls ``tl.dot``, itself or through a @jit helper, as every
``range`` does in Triton: the loop is what stage-dots stages and the software
pipeline overlaps. Tutorial 06's backward walks its masked diagonal blocks in
``range(BLOCK_N1 // MASK_BLOCK_M1)``, eight steps of four dots."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.ir.ssa import walk
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import StageDotsPass
from mytriton.passes.verify import verify

# Causal blocks as attention's backward walks them: the loop in a helper, its
# count a constant for the diagonal and a runtime value below it, the key
# offsets recomputed from the step, K transposed with tl.trans, the mask a
# comparison of row and column offsets.
CAUSAL_STEPS = kernel_source("""
    @mytriton.jit
    def steps(acc, q, k_ptr, offs_m, start_n, num_steps, stride, BN: tl.constexpr, D: tl.constexpr,
              MASK: tl.constexpr):
        offs_d = tl.arange(0, D)
        for step in range(num_steps):
            offs_n = start_n + step * BN + tl.arange(0, BN)
            k = tl.load(k_ptr + offs_n[:, None] * stride + offs_d[None, :])
            s = tl.dot(q, tl.trans(k))
            if MASK:
                s = tl.where(offs_m[:, None] >= offs_n[None, :], s, 0.0)
            acc += tl.dot(s.to(tl.float16), k)
        return acc

    @mytriton.jit
    def causal(q_ptr, k_ptr, out_ptr, stride, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
        start_m = tl.program_id(0) * BM
        offs_m = start_m + tl.arange(0, BM)
        offs_d = tl.arange(0, D)
        q = tl.load(q_ptr + offs_m[:, None] * stride + offs_d[None, :])
        acc = tl.zeros((BM, D), tl.float32)
        acc = steps(acc, q, k_ptr, offs_m, 0, start_m // BN, stride, BN, D, False)
        acc = steps(acc, q, k_ptr, offs_m, start_m, BM // BN, stride, BN, D, True)
        tl.store(out_ptr + offs_m[:, None] * stride + offs_d[None, :], acc)
""")
TILES = {"BM": 64, "BN": 16, "D": 32}  # the diagonal: 64 // 16 = 4 constant steps
SIGNATURE = "*fp16, *fp16, *fp32, i32"


def loops(kernel) -> int:
    return sum(op.name == "for" for op in walk(kernel.body))


def test_a_short_constant_range_that_calls_dot_is_a_loop():
    source = kernel_source("""
        @mytriton.jit
        def k(a_ptr, b_ptr, c_ptr, K: tl.constexpr):
            offs = tl.arange(0, 16)
            acc = tl.zeros((16, 16), tl.float32)
            for k0 in range(0, K, 16):
                a = tl.load(a_ptr + offs[:, None] * K + k0 + offs[None, :])
                b = tl.load(b_ptr + (k0 + offs[:, None]) * 16 + offs[None, :])
                acc += tl.dot(a, b)
            tl.store(c_ptr + offs[:, None] * 16 + offs[None, :], acc)
    """)
    text = compile_text(source, "ssa", defines={"K": 64}, signature="*fp16, *fp16, *fp32")
    assert text.count(" for ") == 1 and text.count(" = dot ") == 1


def test_a_dot_in_a_helper_the_body_calls_keeps_the_loop():
    assert loops(ssa_of(CAUSAL_STEPS, defines=TILES, signature=SIGNATURE)) == 2


def test_a_short_constant_range_through_a_helper_without_a_dot_still_unrolls():
    source = kernel_source("""
        @mytriton.jit
        def steps(acc, x_ptr, num_steps, BN: tl.constexpr):
            for step in range(num_steps):
                acc += tl.load(x_ptr + step * BN + tl.arange(0, BN))
            return acc

        @mytriton.jit
        def k(x_ptr, out_ptr, BN: tl.constexpr):
            acc = steps(tl.zeros((BN,), tl.float32), x_ptr, 4, BN)
            tl.store(out_ptr + tl.arange(0, BN), acc)
    """)
    assert loops(ssa_of(source, defines={"BN": 16})) == 0


def causal_reference(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ k.astype(np.float64).T
    n = np.arange(len(q))
    s = np.where(n[:, None] >= n[None, :], s, 0.0)
    return s.astype(np.float16).astype(np.float64) @ k.astype(np.float64)


@pytest.mark.parametrize("stages", [None, 1, 3, 4], ids=["unstaged", "staged", "3-stages", "4-stages"])
@pytest.mark.parametrize("bn", [16, 32, 64], ids=["4-steps", "2-steps", "1-step"])
def test_the_looped_diagonal_computes_what_numpy_does(bn, stages):
    """Fewer constant steps than pipeline stages included: the prologue
    must not copy a step that the loop does not have."""
    tiles = {**TILES, "BN": bn}
    kernel = ssa_of(CAUSAL_STEPS, optimized=True, defines=tiles, signature=SIGNATURE)
    if stages is not None:
        kernel = verify(StageDotsPass().apply(kernel))
        assert not any(op.name == "dot" for op in walk(kernel.body))  # both loops' dots staged
    if stages is not None and stages > 1:
        kernel = verify(SoftwarePipelinePass(num_stages=stages).apply(kernel))
    rng = np.random.default_rng(bn)
    n, d = 192, tiles["D"]
    q, k = ((rng.standard_normal((n, d)) * 0.5).astype(np.float16) for _ in range(2))
    out = np.full((n, d), np.nan, np.float32)
    run_kernel(kernel, (n // tiles["BM"],), [q, k, out, d])
    np.testing.assert_allclose(out, causal_reference(q, k), rtol=2e-2, atol=2e-2)


@pytest.mark.nvcc
@pytest.mark.parametrize("bn", [16, 64], ids=["4-steps", "1-step"])
def test_nvcc_builds_the_pipelined_constant_loops(bn):
    ptx = compile_text(CAUSAL_STEPS, "ptx", defines={**TILES, "BN": bn}, signature=SIGNATURE, num_stages=3,
                       arch="sm_90a")
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx


def test_a_dot_in_a_jit_function_passed_in_keeps_the_loop(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def product(a, b):
            return tl.dot(a, b)

        @mytriton.jit
        def k(a_ptr, b_ptr, c_ptr, STEP: tl.constexpr):
            offs = tl.arange(0, 16)
            acc = tl.zeros((16, 16), tl.float32)
            for k0 in range(0, 64, 16):
                a = tl.load(a_ptr + offs[:, None] * 64 + k0 + offs[None, :])
                b = tl.load(b_ptr + (k0 + offs[:, None]) * 16 + offs[None, :])
                acc += STEP(a, b)
            tl.store(c_ptr + offs[:, None] * 16 + offs[None, :], acc)
    """)
    a, b = (np.random.default_rng(i).standard_normal(s).astype(np.float16) for i, s in ((1, (16, 64)), (2, (64, 16))))
    c = np.full((16, 16), np.nan, np.float32)
    handle = module.k[(1,)](a, b, c, STEP=module.product, backend="interp")
    assert loops(handle.kernel) == 1
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
