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


def dot_tolerance(a, b, precision):
    """How far a dot of f32 ``a`` and ``b`` at ``precision`` may be from the
    float64 product: each product's operand rounding (TF32 keeps 10 mantissa
    bits; tf32x3 drops only lo*lo) plus f32 accumulation over K, per element
    of |a| @ |b|."""
    K = a.shape[1]
    per_product = {"ieee": 0.0, "tf32": 2.0**-9, "tf32x3": 2.0**-19}[precision]
    return (per_product + K * 2.0**-23) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-6


def run_matmul(backend, config, shape, seed=0, num_warps=4, precision="ieee", monkeypatch=None):
    """samples/matmul.py (tl.dot without a precision) with MYTRITON_F32_DEFAULT
    set to ``precision``; against float64 NumPy within that precision's tolerance."""
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    kernel = load_sample("matmul").matmul_kernel
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MYTRITON_F32_DEFAULT", precision)
        kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=num_warps, backend=backend)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    if precision == "ieee":
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    else:
        assert (np.abs(c - expected) <= dot_tolerance(a, b, precision)).all()
    return c


@pytest.mark.parametrize("config", CONFIGS[:3])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_matmul_matches_numpy_in_the_interpreter(config, shape):
    run_matmul("interp", config, shape)


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_matches_numpy_on_the_gpu(config, shape):
    run_matmul("cuda", config, shape, seed=sum(config) + sum(shape))


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_matmul_at_each_f32_precision_matches_numpy_in_the_interpreter(precision, shape):
    run_matmul("interp", (32, 32, 16), shape, precision=precision)


def test_the_default_precision_of_f32_operands_is_tf32():
    explicit = run_matmul("interp", (32, 32, 16), (70, 50, 77), precision="tf32")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MYTRITON_F32_DEFAULT", raising=False)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((70, 77)).astype(np.float32)
        y = rng.standard_normal((77, 50)).astype(np.float32)
        c = np.full((70, 50), np.nan, np.float32)
        load_sample("matmul").matmul_kernel[(3, 2)](x, y, c, 70, 50, 77, BM=32, BN=32, BK=16, backend="interp")
    np.testing.assert_array_equal(c, explicit)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
@pytest.mark.parametrize("config", [(64, 64, 32), (32, 128, 32)])
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_at_each_f32_precision_on_the_gpu_matches_the_interpreter(precision, config, shape):
    gpu = run_matmul("cuda", config, shape, precision=precision)
    interp = run_matmul("interp", config, shape, precision=precision)
    # The same rounded operands, summed in another order.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((shape[0], shape[2])).astype(np.float32)
    b = rng.standard_normal((shape[2], shape[1])).astype(np.float32)
    assert (np.abs(gpu - interp) <= 2 * shape[2] * 2.0**-23 * (np.abs(a) @ np.abs(b)) + 1e-6).all()


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_matmul_runs_on_other_warp_counts(num_warps):
    run_matmul("cuda", (64, 64, 32), (100, 90, 70), num_warps=num_warps)


def test_tiles_over_the_shared_memory_budget_are_refused_before_emitting():
    source = (load_sample("matmul").__file__)
    with open(source) as handle:
        text = handle.read()
    with pytest.raises(CompileError, match=r"232448-byte \(227 KiB\) budget"):
        compile_text(text, "cuda", file="samples/matmul.py", defines={"BM": 16, "BN": 256, "BK": 256})
    with pytest.raises(CompileError, match="49152"):  # a GPU that cannot opt in past 48 KiB
        compile_text(text, "cuda", file="samples/matmul.py", defines={"BM": 16, "BN": 128, "BK": 128},
                     shared_budget=48 * 1024)


# Scaling a loaded tile before the dot leaves the canonical pattern for A:
# the stage-dots pass stages B alone (a dot_rs, A in registers), and the CUDA
# backend writes the A tile from registers to shared scratch.
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
            acc = tl.dot(a * 2.0, b, acc, input_precision="ieee")
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
'''


def test_a_dot_of_a_computed_a_stages_b_alone_and_a_through_scratch():
    cuda = compile_text(kernel_source(SCALED), "cuda", defines={"BM": 32, "BN": 32, "BK": 16})
    assert "dot operand a: registers to shared memory" in cuda
    assert "dot operand b: registers to shared memory" not in cuda
    assert "copy_to_shared" in cuda and "// dot_rs" in cuda


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
