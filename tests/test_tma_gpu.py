"""Copies made by TMA on the GPU (skipped without one), against NumPy: the
tensor-descriptor matmul at sizes no block divides (rows of a multiple of 16
elements, as a tensor map needs; TMA's zero fill is the masks'); a launch
whose row stride is 0 (a broadcast operand), which no tensor map describes:
the launcher runs the kernel built with cp.async; and pointers the loop
advances (the pointer-increment spelling), their offset in the column
coordinate."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mytriton

pytestmark = pytest.mark.gpu

STYLE = Path(__file__).resolve().parent / "triton_style"


def load(name):
    spec = importlib.util.spec_from_file_location(f"tma_gpu_{name}", STYLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_product(c, a, b):
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=2e-1)


def operands(M, N, K, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)


@pytest.mark.parametrize("M,N,K", [(256, 256, 512), (200, 272, 144), (130, 80, 16)])
def test_the_descriptor_matmul_copies_with_tma_and_matches_numpy(M, N, K):
    module = load("descriptor_matmul")
    a, b = operands(M, N, K, M + N + K)
    c = np.empty((M, N), dtype=np.float16)
    grid = (mytriton.cdiv(M, 128), mytriton.cdiv(N, 128))
    handle = module.matmul_kernel_descriptor[grid](a, b, c, M, N, K, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128,
                                                   BLOCK_SIZE_K=64, backend="cuda")
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]
    assert handle.launcher._cp_async_kernel is None  # the maps described it: TMA ran
    assert_product(c, a, b)


@pytest.mark.parametrize("K,tma", [(1000, True), (1001, False)])
def test_an_unhinted_row_stride_is_tested_at_the_launch_and_either_build_matches_numpy(K, tma):
    """K = 1000 (rows of 2,000 bytes) runs the TMA build; K = 1001 (2,002
    bytes, which no tensor map takes) the cp.async build."""
    module = load("descriptor_matmul")
    M, N = 200, 272
    a, b = operands(M, N, K, K)
    c = np.full((M, N), np.nan, dtype=np.float16)
    grid = (mytriton.cdiv(M, 128), mytriton.cdiv(N, 128))
    handle = module.matmul_kernel_descriptor[grid](a, b, c, M, N, K, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128,
                                                   BLOCK_SIZE_K=64, backend="cuda")
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]
    assert (handle.launcher._cp_async_kernel is None) == tma
    assert_product(c, a, b)


def test_a_row_stride_of_0_runs_the_cp_async_build_and_matches_numpy():
    module = load("matmul_offsets")
    M, N, K = 192, 128, 256
    a, _ = operands(M, N, K, 5)
    row = np.random.default_rng(6).standard_normal((1, N)).astype(np.float16)
    b = np.broadcast_to(row, (K, N))  # every row the same: row stride 0
    c = np.full((M, N), np.nan, dtype=np.float16)
    grid = (mytriton.cdiv(M, 64), mytriton.cdiv(N, 64))
    handle = module.matmul_offsets[grid](a, row, c, M, N, K, K, 1, 0, 1, N, 1, BLOCK_M=64, BLOCK_N=64,
                                         BLOCK_K=64, backend="cuda")
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]  # compiled with TMA; this launch ran without
    assert handle.launcher._cp_async_kernel is not None
    assert_product(c, a, b)


def test_pointers_the_loop_advances_are_copied_by_tma_at_a_column_offset():
    module = load("matmul_unmasked")
    M, N, K = 256, 384, 512
    a, b = operands(M, N, K, 9)
    c = np.full((M, N), np.nan, dtype=np.float16)
    handle = module.matmul_unmasked[(M // 128, N // 128)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=128,
                                                          BLOCK_N=128, BLOCK_K=64, backend="cuda")
    assert handle.asm["cuda"].count("cp.async.bulk.tensor.2d") >= 2  # A and B, each a + k's column
    assert handle.launcher._cp_async_kernel is None
    assert_product(c, a, b)


@pytest.mark.parametrize("out,tiles,warps", [
    (np.float16, (64, 64, 32), 4), (np.float32, (128, 128, 64), 4), (np.float16, (128, 256, 64), 8),
    (np.float32, (64, 128, 32), 4), ("bfloat16", (128, 128, 64), 4),
    (np.float16, (64, 32, 32), 4), (np.float16, (64, 16, 32), 4),  # rows of 64 and 32 bytes: those swizzles
])
def test_an_epilogue_stored_by_tma_writes_every_element_in_bounds_and_none_past(out, tiles, warps):
    import ml_dtypes

    out = ml_dtypes.bfloat16 if out == "bfloat16" else out
    module = load("matmul_offsets")
    M, N, K = 200, 272, 144
    bm, bn, bk = tiles
    a, b = operands(M, N, K, bm + bn + warps)
    if out is ml_dtypes.bfloat16:
        a, b = a.astype(out), b.astype(out)
    # C the top left of a larger matrix (rows N + 16 apart): what the store must
    # leave alone lies past its bounds.
    whole = np.full((M + 3, N + 16), 7, dtype=out)
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    handle = module.matmul_offsets[grid](a, b, whole, M, N, K, K, 1, N, 1, N + 16, 1, BLOCK_M=bm, BLOCK_N=bn,
                                         BLOCK_K=bk, num_warps=warps, backend="cuda")
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in handle.asm["cuda"]
    assert handle.launcher._cp_async_kernel is None  # the maps described it: TMA stored it
    assert_product(whole[:M, :N], a, b)
    assert (whole[M:] == 7).all() and (whole[:, N:] == 7).all()
