"""Both IR texts round-trip: for text a stage printed, ``print(parse(text)) == text``.

Covered: the tree text (``trace``) and SSA text (``lower``, ``opt`` and
``staged``) of every sample, a traced tree with a runtime loop carrying values, and a
hand-written SSA kernel with a nested loop and two carried values.
"""
from __future__ import annotations

from textwrap import dedent

import pytest

from conftest import SAMPLES, kernel_source
from mytriton import compiler
from mytriton.compiler import Options

# Every kernel in samples/ (demo.py is a host script), and the options the
# ones whose parameters are not all f32 pointers and i32 scalars need.
SAMPLE_KERNELS = sorted(p.stem for p in SAMPLES.glob("*.py") if "@mytriton.jit" in p.read_text())
SAMPLE_OPTIONS = {
    "leaky_relu": {"signature": "*fp32, *fp32, i32, fp32"},
    "ragged_rows": {"signature": "*fp32, *i32, *fp32"},
}


def sample_text(name: str, emit: str) -> str:
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, f"samples/{name}.py", emit, Options(**SAMPLE_OPTIONS.get(name, {})))


def tree_roundtrip(text: str) -> str:
    return compiler.print_tree(compiler.read_tree(text, "<test>"))


def ssa_roundtrip(text: str) -> str:
    return compiler.print_ssa(compiler.read_ssa(text, "<test>"))


def test_the_five_first_samples_are_found():
    assert {"add", "vector_copy", "relu", "leaky_relu", "sigmoid"} <= set(SAMPLE_KERNELS)


@pytest.mark.parametrize("name", SAMPLE_KERNELS)
def test_sample_tree_text_roundtrips(name):
    text = sample_text(name, "tree")
    assert tree_roundtrip(text) == text


@pytest.mark.parametrize("name", SAMPLE_KERNELS)
def test_sample_lowered_ssa_text_roundtrips(name):
    text = sample_text(name, "ssa")
    assert ssa_roundtrip(text) == text


@pytest.mark.parametrize("name", SAMPLE_KERNELS)
def test_sample_optimized_ssa_text_roundtrips(name):
    text = sample_text(name, "opt")
    assert ssa_roundtrip(text) == text


@pytest.mark.parametrize("name", SAMPLE_KERNELS)
def test_sample_staged_ssa_text_roundtrips(name):
    text = sample_text(name, "staged")
    assert ssa_roundtrip(text) == text


# ---- loops ------------------------------------------------------------------------------

ACCUMULATING_KERNEL = kernel_source("""
    @mytriton.jit
    def rowsum_kernel(x_ptr, out_ptr, K, BLOCK: tl.constexpr = 64):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        for k in range(K):
            acc += tl.load(x_ptr + k * BLOCK + offs)
        tl.store(out_ptr + offs, acc)
""")


@pytest.fixture(scope="module")
def loop_tree_text() -> str:
    return compiler.compile_source(ACCUMULATING_KERNEL, "kernel.py", "tree", Options())


def test_traced_loop_is_printed_as_a_for_with_carried_values(loop_tree_text):
    # The round-trip below is only meaningful if the text really holds a loop.
    assert "for $k in range(0, K, 1)" in loop_tree_text
    assert "iter_args($acc = " in loop_tree_text
    assert "yield " in loop_tree_text


def test_tree_text_with_a_loop_roundtrips(loop_tree_text):
    assert tree_roundtrip(loop_tree_text) == loop_tree_text


def test_ssa_lowered_from_a_tree_loop_roundtrips(loop_tree_text):
    text = compiler.print_ssa(compiler.lower(compiler.read_tree(loop_tree_text, "<test>")))
    assert " = for " in text
    assert ssa_roundtrip(text) == text


# Printed by hand in the printer's canonical numbering: induction variable and
# carried values before the body, results after it.
NESTED_LOOP_SSA = dedent("""\
    kernel nested(x: ptr<f32>, out: ptr<f32>, n: i32, m: i32) constexpr(BLOCK = 16) @"nested.py":5:1 {
      %0 = arange start=0, end=16 : vector<16 x i32> @6:12
      %1 = full 0.0, shape=(16,), dtype=f32 : vector<16 x f32> @7:11
      %12, %13 = for %2 in range(0, n, 1) iter_args(%3 = %1, %4 = 0.0) : vector<16 x f32>, f32 @9:5 {
        %9 = for %5 in range(0, m, 2) iter_args(%6 = %4) : f32 @10:9 {
          %7 = cast %5, dtype=f32 : f32 @11:20
          %8 = add %6, %7 : f32 @11:13
          yield %8 @10:9
        }
        %10 = addptr x, %0 : vector<16 x ptr<f32>> @12:24
        %11 = load %10, none, none : vector<16 x f32> @12:16
        yield %11, %9 @9:5
      }
      %14 = addptr out, %0 : vector<16 x ptr<f32>> @13:14
      %15 = add %12, %13 : vector<16 x f32> @13:27
      store %14, %15, none @13:5
    }
""")


def test_hand_written_nested_loop_ssa_is_valid():
    compiler.verify(compiler.read_ssa(NESTED_LOOP_SSA, "<test>"))


def test_hand_written_nested_loop_ssa_roundtrips():
    assert ssa_roundtrip(NESTED_LOOP_SSA) == NESTED_LOOP_SSA


def test_ssa_printer_renumbers_values_in_definition_order():
    # Any names read back print as %0, %1, ... in definition order.
    renamed = NESTED_LOOP_SSA
    for old in range(15, -1, -1):
        renamed = renamed.replace(f"%{old}", f"%v{old}")
    assert renamed != NESTED_LOOP_SSA
    assert ssa_roundtrip(renamed) == NESTED_LOOP_SSA


def test_comments_and_blank_lines_are_not_kept():
    commented = NESTED_LOOP_SSA.replace("  store ", "  // the result\n\n  store ", 1)
    assert ssa_roundtrip(commented) == NESTED_LOOP_SSA
