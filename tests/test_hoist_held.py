"""hoist-held on a kernel: an unrolled tl.static_range of dots and sums
(Liger's mhc mm_norm forward, small) comes out in program order, each dot
and sum right after its tiles, and computes what NumPy does."""
from __future__ import annotations

import numpy as np

from conftest import kernel_source
from mytriton import compiler
from mytriton.backends.interp import run_kernel
from mytriton.compiler import Options
from mytriton.passes import DEFAULT_PIPELINE

BODY = '''
@mytriton.jit
def mm_norm(x_ptr, w_ptr, out_ptr, sq_ptr, K: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    rows = tl.arange(0, BM)
    acc = tl.zeros((BM, BM), tl.float32)
    sumsq = tl.zeros((BM,), tl.float32)
    for k0 in tl.static_range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :])
        sumsq += tl.sum(x * x, axis=1)
        w = tl.load(w_ptr + ks[:, None] * BM + rows[None, :])
        acc += tl.dot(x, w)
    tl.store(out_ptr + rows[:, None] * BM + rows[None, :], acc)
    tl.store(sq_ptr + rows, sumsq)
'''
TILE = dict(K=128, BM=16, BK=32)


UNHOISTED = tuple(name for name in DEFAULT_PIPELINE if name != "hoist-held")


def hoisted(passes=DEFAULT_PIPELINE):
    options = Options(kernel="mm_norm", signature="*fp32, *fp32, *fp32, *fp32", defines=TILE, passes=list(passes))
    return compiler.source_to_ssa(kernel_source(BODY), "k.py", options)


def test_each_dot_and_sum_follows_its_tiles():
    names = [op.name for op in hoisted().body.ops if op.name in ("load", "dot", "sum")]
    assert names == ["load", "sum", "load", "dot"] * (TILE["K"] // TILE["BK"])


def run(kernel):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((TILE["BM"], TILE["K"])).astype(np.float32)
    w = rng.standard_normal((TILE["K"], TILE["BM"])).astype(np.float32)
    out, sq = np.full((TILE["BM"], TILE["BM"]), np.nan, np.float32), np.full(TILE["BM"], np.nan, np.float32)
    run_kernel(kernel, (1,), [x, w, out, sq])
    return x, w, out, sq


def test_the_hoisted_kernel_computes_what_the_unhoisted_one_does():
    x, w, out, sq = run(hoisted())
    _, _, before_out, before_sq = run(hoisted(UNHOISTED))
    np.testing.assert_array_equal(out, before_out)
    np.testing.assert_array_equal(sq, before_sq)
    # (the product in TF32, tl.dot's default for f32, as in Triton)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w, rtol=2e-2, atol=5e-2)
    np.testing.assert_allclose(sq, (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)


def test_the_default_pipeline_ends_with_it():
    assert DEFAULT_PIPELINE[-1] == "hoist-held"
