"""Loops whose bounds are i64 count in i64, as Triton promotes them:
Liger-Kernel's backward kernels loop ``for row in range(row_start, row_end)``
with ``row_start = tl.program_id(0).to(tl.int64) * rows_per_program``. An
i32 bound of such a loop is cast to i64; an i32 loop stays i32. Through the
interpreter against NumPy, SSA text, CUDA that nvcc builds, MLIR and TTIR."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, compile_text, kernel_source, randf
from mytriton.backends.interp import run_kernel
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.types import I32, I64

ROWS = """
@mytriton.jit
def k(x_ptr, out_ptr, n_rows, n_cols, rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row_start = pid * rows_per_program
    row_end = min((pid + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for row in range(row_start, row_end):
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + pid * n_cols + cols, acc, mask=cols < n_cols)
"""


def loop_of(kernel):
    return next(op for op in walk(kernel.body) if op.name == "for")


@pytest.mark.parametrize("n_rows, n_cols, per_program", [(7, 5, 3), (16, 32, 4), (1, 1, 1)])
def test_a_loop_over_i64_rows_sums_each_programs_rows(rng, n_rows, n_cols, per_program):
    kernel = build(ROWS, BLOCK=32)
    x = randf(rng, n_rows, n_cols)
    programs = -(-n_rows // per_program)
    out = np.zeros((programs, n_cols), np.float32)
    run_kernel(kernel, (programs,), [x, out, n_rows, n_cols, per_program])
    expected = np.stack([x[p * per_program:(p + 1) * per_program].sum(axis=0) for p in range(programs)])
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_the_counter_of_a_loop_with_an_i64_bound_is_i64_and_its_i32_bounds_are_cast():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr, n):
        start = tl.program_id(0).to(tl.int64)
        acc = tl.zeros((), tl.int64)
        for i in range(start, n, 2):
            acc += i
        tl.store(out_ptr, acc)
    """, signature="*i64, i32")
    loop = loop_of(kernel)
    assert loop.regions[0].args[0].type == I64
    assert [o.type for o in loop.operands[:2]] == [I64, I64]
    out = np.zeros(1, np.int64)
    run_kernel(kernel, (1,), [out, 9])
    assert out[0] == 0 + 2 + 4 + 6 + 8


def test_a_loop_over_i32_bounds_counts_in_i32():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr, n):
        acc = 0
        for i in range(0, n):
            acc += i
        tl.store(out_ptr, acc)
    """, signature="*i32, i32")
    assert loop_of(kernel).regions[0].args[0].type == I32


def test_ssa_text_of_an_i64_loop_reads_back_with_its_counter_type():
    kernel = build(ROWS, BLOCK=32)
    text = print_kernel(kernel)
    again = parse_kernel(text, "k.ssa")
    assert print_kernel(again) == text
    assert loop_of(again).regions[0].args[0].type == I64


@pytest.mark.nvcc
def test_cuda_of_an_i64_loop_counts_in_long_long_and_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(ROWS), "cuda", defines={"BLOCK": 32})
    assert "for (long long " in cuda
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


def test_mlir_of_an_i64_loop_verifies():
    from mlir_check import parse_and_verify

    text = compile_text(kernel_source(ROWS), "mlir", defines={"BLOCK": 32})
    assert ": i64 {" in text
    parse_and_verify(text)


def test_triton_compiles_the_ttir_of_an_i64_loop(tmp_path):
    from ttir_check import triton_compile

    triton_compile(compile_text(kernel_source(ROWS), "ttir", defines={"BLOCK": 32}), tmp_path)
