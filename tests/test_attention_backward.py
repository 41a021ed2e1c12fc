"""Causal attention's backward (tests/triton_style/attention_backward.py,
tutorial 06's algorithm; the Triton-style tier checks its gradients against
NumPy and the GPU against the interpreter): every dot of its four walks is
staged and pipelined, the masked walks' constant step counts included, and
the staged kernel computes what the unstaged one does."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from mytriton import compiler
from mytriton.backends.interp import run_kernel
from mytriton.ir.ssa import walk

PATH = ROOT / "tests" / "triton_style" / "attention_backward.py"
SOURCE = PATH.read_text()
TILES = {"BLOCK_M1": 32, "BLOCK_N1": 64, "BLOCK_M2": 64, "BLOCK_N2": 32, "SLICE": 2, "HEAD_DIM": 64}
SIGNATURE = "*fp16, *fp16, *fp16, *fp16, *fp16, *fp16, *fp16, *fp32, *fp32, fp32, i32"


def kernels(tiles=TILES, **options):
    options = compiler.Options(kernel="attention_bwd", signature=SIGNATURE, defines=tiles, num_stages=3, **options)
    unstaged = compiler.source_to_ssa(SOURCE, str(PATH), options, optimized=True)
    staged = compiler.stage_dots(compiler.source_to_ssa(SOURCE, str(PATH), options, optimized=True), options)
    return unstaged, staged


def test_every_dot_of_the_four_walks_is_staged_and_pipelined():
    _, staged = kernels()
    assert "dot" not in [op.name for op in walk(staged.body)]
    loops = [op for op in walk(staged.body) if op.name == "for"]
    assert len(loops) == 4 and all(loop.attrs.get("pipeline_stages") == 3 for loop in loops)


def test_the_staged_kernel_computes_what_the_unstaged_one_does():
    heads, n, d = 2, 128, 64
    rng = np.random.default_rng(5)
    q, k, v, do = ((rng.standard_normal((heads, n, d)) * 0.5).astype(np.float16) for _ in range(4))
    lse = rng.uniform(1.0, 3.0, (heads, n)).astype(np.float32)
    delta = rng.standard_normal((heads, n)).astype(np.float32)
    results = []
    for kernel in kernels():
        grads = [np.full_like(q, np.nan) for _ in range(3)]
        run_kernel(kernel, (n // TILES["BLOCK_N1"], heads), [q, k, v, do, *grads, lse, delta, 0.3, n])
        results.append(grads)
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


@pytest.mark.nvcc
def test_nvcc_builds_it_on_wgmma_at_the_tutorials_tiles():
    tiles = {**TILES, "BLOCK_N1": 128, "BLOCK_M2": 128}
    options = compiler.Options(kernel="attention_bwd", signature=SIGNATURE, defines=tiles, num_stages=3, arch="sm_90a")
    ptx = compiler.compile_source(SOURCE, str(PATH), "ptx", options)
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx
