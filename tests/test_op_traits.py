"""Passes and analyses ask the op table's traits, never an op's name: a
hypothetical op that writes global memory and returns a value (an atomic
add, registered here for the test only) is kept by DCE, never merged by CSE,
never hoisted by LICM, never folded, counts as a written buffer, and stands
as a statement of the tree IR."""
from __future__ import annotations

from textwrap import dedent

import pytest

from mytriton.ir import opdefs
from mytriton.ir.analysis import stored_params
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.ir.tree_text import parse_tree, print_tree
from mytriton.passes.cse import CSEPass
from mytriton.passes.dce import DCEPass
from mytriton.passes.fold import FoldPass
from mytriton.passes.licm import LICMPass
from mytriton.passes.verify import verify


def _atomic_add(types, attrs):
    ptr, value, mask = types
    return [ptr.pointee]


@pytest.fixture(autouse=True)
def atomic_add(monkeypatch):
    monkeypatch.setitem(opdefs.OPS, "atomic_add", opdefs.OpDef(
        "atomic_add", ("ptr", "value", "mask?"), _atomic_add, reads_global=True, writes_global=True,
        address_operand="ptr"))


TWO_ATOMICS = dedent("""\
    kernel k(x: ptr<f32>, y: ptr<f32>) @"k.py":1:1 {
      %0 = atomic_add x, 1.0, none : f32 @2:5
      %1 = atomic_add x, 1.0, none : f32 @3:5
      store y, %1, none @4:5
    }
    """)


def run(pass_, text: str) -> str:
    return print_kernel(verify(pass_.apply(verify(parse_kernel(text)))))


def test_the_trait_queries_see_the_writer():
    assert opdefs.writes_memory("atomic_add") and opdefs.has_effect("atomic_add")
    assert opdefs.reads_memory("atomic_add") and not opdefs.is_pure("atomic_add")
    assert opdefs.global_address("atomic_add") == 0


def test_dce_keeps_an_unread_writer():
    assert run(DCEPass(), TWO_ATOMICS) == TWO_ATOMICS


def test_cse_does_not_merge_two_writers():
    assert run(CSEPass(), TWO_ATOMICS) == TWO_ATOMICS


def test_fold_leaves_a_writer_with_literal_operands_alone():
    assert run(FoldPass(), TWO_ATOMICS) == TWO_ATOMICS


def test_licm_does_not_hoist_a_loop_invariant_writer():
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          for %0 in range(0, n, 1) @2:5 {
            %1 = atomic_add x, 1.0, none : f32 @3:9
            yield @2:5
          }
        }
        """)
    assert run(LICMPass(), text) == text


def test_a_buffer_written_by_any_writer_is_a_stored_parameter():
    kernel = verify(parse_kernel(TWO_ATOMICS))
    assert stored_params(kernel) == ["x", "y"]


def test_the_tree_ir_takes_a_writer_as_a_statement():
    text = dedent("""\
        tree k(x: ptr<f32>) @"k.py":1:1 {
          atomic_add(x, 1.0, none)@2:5
        }
        """)
    assert print_tree(parse_tree(text)) == text


def test_the_tree_ir_refuses_a_pure_op_as_a_statement():
    from mytriton.diagnostics import CompileError

    with pytest.raises(CompileError, match="'add' has no effect"):
        parse_tree(dedent("""\
            tree k(x: i32) @"k.py":1:1 {
              add(x, 1)@2:5
            }
            """))
