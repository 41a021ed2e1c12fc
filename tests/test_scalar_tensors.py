"""0-d tensors, as Triton has them: ``tl.full((), value, dtype)``,
``tl.zeros((), dtype)`` and ``tl.zeros_like`` of a scalar are scalars of the
dtype, which loops carry and tiles combine with (Liger-Kernel's running
maximum starts as ``tl.full((), float("-inf"), tl.float32)``). Each through
the interpreter against NumPy, CUDA that nvcc builds, and the MLIR and TTIR
back ends."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, compile_text, kernel_source, randf
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError

RUNNING_MAX = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    best = tl.full((), float("-inf"), dtype=tl.float32)
    total = tl.zeros((), tl.float32)
    count = tl.zeros((), dtype=tl.int32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
        best = tl.maximum(best, tl.max(x, axis=0))
        total += tl.sum(tl.where(offs < n, x, 0.0), axis=0)
        count += tl.sum((offs < n).to(tl.int32), axis=0)
    one = tl.zeros_like(total) + 1.0
    tl.store(out_ptr, best)
    tl.store(out_ptr + 1, total * one)
    tl.store(out_ptr + 2, count.to(tl.float32))
"""


@pytest.mark.parametrize("n", [1, 37, 64, 130])
def test_a_running_maximum_and_sum_start_from_0_d_tensors(rng, n):
    kernel = build(RUNNING_MAX, BLOCK=32)
    x = randf(rng, n)
    out = np.zeros(3, np.float32)
    run_kernel(kernel, (1,), [x, out, n])
    np.testing.assert_allclose(out, [x.max(), x.sum(), n], rtol=1e-5)


def test_a_0_d_tensor_is_a_scalar_of_its_dtype():
    ssa = compile_text(kernel_source(RUNNING_MAX), "ssa", defines={"BLOCK": 32})
    assert "cast -inf, dtype=f32 : f32" in ssa
    assert "cast 0, dtype=i32 : i32" in ssa
    assert "shape=()" not in ssa


def test_a_0_d_tensor_of_a_runtime_scalar_casts_it():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr, n):
        tl.store(out_ptr, tl.full((), n, tl.float32) / 4)
    """)
    out = np.zeros(1, np.float32)
    run_kernel(kernel, (1,), [out, 10])
    assert out[0] == 2.5


def test_the_value_of_a_0_d_tensor_cannot_be_a_tile():
    with pytest.raises(CompileError, match="the value of a 0-d tensor must be a scalar, not a tile") as info:
        build("""
        @mytriton.jit
        def k(out_ptr):
            tl.store(out_ptr, tl.full((), tl.arange(0, 4), tl.float32))
        """)
    assert info.value.loc.line == 6


@pytest.mark.nvcc
def test_cuda_of_0_d_tensors_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(RUNNING_MAX), "cuda", defines={"BLOCK": 32})
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


def test_mlir_of_0_d_tensors_verifies():
    from mlir_check import parse_and_verify

    parse_and_verify(compile_text(kernel_source(RUNNING_MAX), "mlir", defines={"BLOCK": 32}))


def test_triton_compiles_the_ttir_of_0_d_tensors(tmp_path):
    from ttir_check import triton_compile

    triton_compile(compile_text(kernel_source(RUNNING_MAX), "ttir", defines={"BLOCK": 32}), tmp_path)
