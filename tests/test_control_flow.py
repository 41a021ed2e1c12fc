"""Runtime control flow: if/elif/else, while, early return, runtime and
negative loop steps, a rebound loop variable, conditional expressions. Each
kernel runs in the interpreter against NumPy (programs taking different
branches and trip counts), its tree and SSA round-trip, and its CUDA builds
with nvcc; the GPU tests compare the GPU with the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source
from control_flow_kernels import CASES
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.ir.tree_text import parse_tree, print_tree


def launch(kernel_module, name: str, backend: str, seed: int = 7):
    case = CASES[name]
    module = kernel_module(case.source)
    args = case.args(np.random.default_rng(seed))
    getattr(module, case.name)[case.grid](*args, **case.defines, backend=backend)
    return case, args


def emit(name: str, stage: str) -> str:
    case = CASES[name]
    return compile_text(kernel_source(case.source), stage, defines=case.defines, signature=case.signature)


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter_matches_numpy(kernel_module, name):
    case = CASES[name]
    inputs = case.args(np.random.default_rng(7))
    expected = case.expected([a.copy() if isinstance(a, np.ndarray) else a for a in inputs])
    _, args = launch(kernel_module, name, "interp")
    for index, want in expected.items():
        np.testing.assert_allclose(args[index], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tree_round_trips(name):
    text = emit(name, "tree")
    assert print_tree(parse_tree(text)) == text


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("stage", ["ssa", "opt", "layouts"])
def test_ssa_round_trips(name, stage):
    text = emit(name, stage)
    assert print_kernel(parse_kernel(text)) == text


def test_ssa_shows_the_if_and_while_regions():
    assert " = if " in emit("if_elif_else", "ssa")
    text = emit("while_loop", "ssa")
    assert " = while (" in text and "  condition " in text and "} do (" in text


def test_a_long_constant_range_is_a_loop_and_a_short_one_unrolls():
    assert emit("long_constant_ranges", "ssa").count(" for ") == 2
    short = kernel_source("""
        @mytriton.jit
        def k(x_ptr, N: tl.constexpr):
            for i in range(0, N):
                tl.store(x_ptr + i, 1.0)
    """)
    assert " for " not in compile_text(short, "ssa", defines={"N": 8})
    assert " for " in compile_text(short, "ssa", defines={"N": 9})


def test_early_return_makes_the_rest_of_the_kernel_the_else_branch():
    text = emit("early_return", "tree")
    first_if = next(i for i, line in enumerate(text.splitlines()) if line.strip().startswith("if "))
    lines = text.splitlines()
    assert lines[first_if + 1].strip().startswith("yield")  # the returning branch does nothing
    assert lines[first_if + 2].strip() == "} else {"
    assert "store(" in "\n".join(lines[first_if + 3:])


def test_constexpr_if_is_resolved_while_tracing():
    source = kernel_source("""
        @mytriton.jit
        def k(x_ptr, n, FLAG: tl.constexpr):
            if FLAG > 1:
                tl.store(x_ptr, 1.0)
            else:
                tl.store(x_ptr, 2.0)
    """)
    text = compile_text(source, "tree", defines={"FLAG": 3})
    assert "if " not in text and "store(x_ptr, 1.0, none)" in text


def test_constant_false_while_traces_nothing():
    source = kernel_source("""
        @mytriton.jit
        def k(x_ptr, n, FLAG: tl.constexpr):
            i = 0
            while FLAG > 1:
                i += 1
            tl.store(x_ptr, i)
    """)
    text = compile_text(source, "ssa", defines={"FLAG": 0}, signature="*i32, i32")
    assert "while" not in text and "store x_ptr, 0, none" in text


def test_names_assigned_in_one_branch_only_are_not_results():
    source = kernel_source("""
        @mytriton.jit
        def k(x_ptr, n):
            if n > 0:
                t = n + 1
            tl.store(x_ptr, n)
    """)
    text = compile_text(source, "ssa", signature="*i32, i32")
    assert "  if " in text and " = if " not in text


def test_branches_must_agree_on_a_result_type():
    source = kernel_source("""
        @mytriton.jit
        def k(x_ptr, n):
            v = n
            if n > 0:
                v = 1.5
            tl.store(x_ptr, v)
    """)
    with pytest.raises(CompileError, match="'v' is f32 after one branch of this 'if' and i32 after the other"):
        compile_text(source, "ssa", signature="*fp32, i32")


NONE_BEFORE_A_LOOP = """
    @mytriton.jit
    def k(x_ptr, out_ptr, n, USE_H: tl.constexpr):
        offs = tl.arange(0, 16)
        acc = tl.zeros([16], dtype=tl.float32)
        h = None
        LOOP
            x = tl.load(x_ptr + offs)
            if USE_H:
                h = x * 2
            acc += x
            i += 1
        if USE_H:
            acc += h
        tl.store(out_ptr + offs, acc)
"""


@pytest.mark.parametrize("loop", ["for _ in range(n):", "while i < n:"])
def test_a_loop_carries_no_name_that_only_a_branch_left_out_assigns(kernel_module, loop):
    """flash-linear-attention's ``b_h = None`` before a loop whose body sets it
    under a constexpr flag: with the flag off, the name is not carried."""
    source = NONE_BEFORE_A_LOOP.replace("LOOP", "i = 0\n        " + loop)
    k = kernel_module(source).k
    x = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    out = np.zeros_like(x)
    k[(1,)](x, out, 3, USE_H=False, backend="interp")
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)


@pytest.mark.parametrize("loop", ["for _ in range(n):", "while i < n:"])
def test_a_loop_whose_body_assigns_a_name_that_holds_none_is_a_located_error(loop):
    source = kernel_source(NONE_BEFORE_A_LOOP.replace("LOOP", "i = 0\n        " + loop))
    with pytest.raises(CompileError, match="'h' holds None before the loop, which a (runtime|while) loop cannot "
                                           "carry") as info:
        compile_text(source, "ssa", signature="*fp32, *fp32, i32", defines={"USE_H": True})
    assert info.value.loc.line == 13


def test_a_loop_variable_that_held_none_before_the_loop_is_rebound_in_it(kernel_module):
    k = kernel_module("""
    @mytriton.jit
    def k(x_ptr, n):
        i = None
        acc = 0
        for i in range(n):
            i = tl.multiple_of(i, 1)
            acc += i
        tl.store(x_ptr, acc)
    """).k
    out = np.zeros(1, np.int32)
    k[(1,)](out, 5, backend="interp")
    assert out[0] == 10


def test_interpreter_reports_a_non_positive_runtime_step(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def k(x_ptr, n, step):
            acc = 0.0
            for i in range(0, n, step):
                acc += 1.0
            tl.store(x_ptr, acc)
    """)
    out = np.zeros(1, np.float32)
    with pytest.raises(CompileError, match="a runtime loop needs a positive step"):
        module.k[(1,)](out, 4, 0, backend="interp")


def test_negative_runtime_loop_step_counts_down_in_the_interpreter(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def k(out_ptr, start, stop):
            pos = 0
            for i in range(start, stop, -3):
                tl.store(out_ptr + pos, i)
                pos += 1
    """)
    out = np.full(8, -1, np.int32)
    module.k[(1,)](out, 10, -2, backend="interp")
    np.testing.assert_array_equal(out, [10, 7, 4, 1, -1, -1, -1, -1])  # range(10, -2, -3)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_builds_with_nvcc(name):
    ptx = emit(name, "ptx")
    assert f".entry {CASES[name].name}" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_the_interpreter(kernel_module, name):
    _, on_gpu = launch(kernel_module, name, "cuda")
    _, interpreted = launch(kernel_module, name, "interp")
    for got, want in zip(on_gpu, interpreted):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_gpu_runs_no_iteration_for_a_non_positive_runtime_step(kernel_module):
    """Triton leaves a runtime step <= 0 undefined; mytriton's GPU loop runs
    no iteration rather than forever (the interpreter reports it)."""
    module = kernel_module("""
        @mytriton.jit
        def k(x_ptr, n, step):
            acc = 0.0
            for i in range(0, n, step):
                acc += 1.0
            tl.store(x_ptr, acc)
    """)
    out = np.full(1, 5.0, np.float32)
    module.k[(1,)](out, 4, 0, backend="cuda")
    assert out[0] == 0.0
