"""The tiled matmul sample for tile sizes from 16 to 128 and ragged shapes
(M, N, K not multiples of the tiles, K below BK), in the interpreter and on
the H200 (the GPU cases are skipped without a GPU)."""
import numpy as np
import pytest

import mytriton
from conftest import compile_text, kernel_source, load_sample
from mytriton.diagnostics import CompileError

CONFIGS = [(16, 16, 16), (32, 32, 16), (64, 64, 32), (32, 128, 32), (128, 128, 32), (128, 64, 64),
           (16, 64, 128), (64, 16, 128)]
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


# Scaling a loaded tile before the dot leaves the canonical pattern: the
# stage-dots pass keeps this dot, and the CUDA backend's general path writes
# both operand tiles from registers to shared memory.
SCALED = '''
    @mytriton.jit
    def scaled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ks = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :],
                        mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :],
                        mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a * 2.0, b, acc)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
'''


def test_a_dot_of_computed_tiles_takes_the_general_path():
    cuda = compile_text(kernel_source(SCALED), "cuda", defines={"BM": 32, "BN": 32, "BK": 16})
    assert "dot operand a: registers to shared memory" in cuda
    assert "copy_to_shared" not in cuda


def run_scaled(kernel_module, backend):
    module = kernel_module(SCALED)
    M, N, K = 50, 70, 45
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    module.scaled_matmul[(mytriton.cdiv(M, 32), mytriton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16,
                                                                         backend=backend)
    np.testing.assert_allclose(c, 2 * a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_the_general_path_matches_numpy_in_the_interpreter(kernel_module):
    run_scaled(kernel_module, "interp")


@pytest.mark.gpu
def test_the_general_path_matches_numpy_on_the_gpu(kernel_module):
    run_scaled(kernel_module, "cuda")
