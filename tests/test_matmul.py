"""The tiled matmul sample for tile sizes from 16 to 128 and ragged shapes
(M, N, K not multiples of the tiles, K below BK), in the interpreter and on
the H200 (the GPU cases are skipped without a GPU)."""
import numpy as np
import pytest

import mytriton
from conftest import compile_text, load_sample
from mytriton.diagnostics import CompileError

CONFIGS = [(16, 16, 16), (32, 32, 16), (64, 64, 32), (32, 128, 32), (128, 128, 32), (128, 64, 64)]
SHAPES = [(128, 128, 128), (70, 50, 77), (65, 130, 20), (33, 17, 9)]


def run_matmul(backend, config, shape, seed=0, num_warps=4):
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    kernel = load_sample("matmul").matmul_kernel
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=num_warps, backend=backend)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("config", CONFIGS[:3])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_matmul_matches_numpy_in_the_interpreter(config, shape):
    run_matmul("interp", config, shape)


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_matches_numpy_on_the_gpu(config, shape):
    run_matmul("cuda", config, shape, seed=sum(config) + sum(shape))


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_matmul_runs_on_other_warp_counts(num_warps):
    run_matmul("cuda", (64, 64, 32), (100, 90, 70), num_warps=num_warps)


def test_tiles_over_the_shared_memory_budget_are_refused_before_emitting():
    source = (load_sample("matmul").__file__)
    with open(source) as handle:
        text = handle.read()
    with pytest.raises(CompileError, match="49152"):
        compile_text(text, "cuda", file="samples/matmul.py", defines={"BM": 16, "BN": 128, "BK": 128})
