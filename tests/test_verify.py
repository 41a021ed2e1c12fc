"""The SSA verifier: each rule, shown catching a hand-written bad SSA file."""
import pytest

from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel
from mytriton.passes.verify import verify

HEADER = 'kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {\n'

GOOD = HEADER + """\
  %0 = program_id axis=0 : i32 @2:5
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %4 = add %2, 1.0 : f32 @4:9
    yield %4 @3:5
  }
  store x, %3, none @5:5
}
"""


def check(body: str) -> str:
    with pytest.raises(CompileError) as info:
        verify(parse_kernel(HEADER + body + "}\n", "bad.ssa"))
    return info.value.message


def test_a_well_formed_loop_verifies():
    verify(parse_kernel(GOOD, "good.ssa"))


def test_loop_bounds_must_be_i32_scalars():
    message = check("""\
  %0 = arange start=0, end=4 : vector<4 x i32> @2:5
  for %1 in range(0, %0, 1) @3:5 {
    yield @3:5
  }
""")
    assert "loop stop must be an i32 scalar" in message


def test_loop_step_must_be_a_constant():
    message = check("""\
  for %1 in range(0, n, n) @3:5 {
    yield @3:5
  }
""")
    assert "step must be an integer constant" in message


def test_loop_step_must_be_positive():
    message = check("""\
  for %1 in range(0, n, 0) @3:5 {
    yield @3:5
  }
""")
    assert "step must be positive" in message


def test_induction_and_carried_names_are_fresh():
    with pytest.raises(CompileError, match="already defined"):
        parse_kernel(HEADER + """\
  %0 = program_id axis=0 : i32 @2:5
  %3 = for %0 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    yield %2 @3:5
  }
}
""", "bad.ssa")


def test_the_parser_rejects_a_use_before_its_definition_in_the_text():
    with pytest.raises(CompileError, match="use of undefined value %5"):
        parse_kernel(HEADER + """\
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %4 = add %2, %5 : f32 @4:9
    %5 = add %2, 1.0 : f32 @4:9
    yield %4 @3:5
  }
}
""", "bad.ssa")


def test_the_body_uses_only_earlier_definitions():
    kernel = parse_kernel(GOOD, "good.ssa")
    loop = kernel.body.ops[1]
    body = loop.regions[0]
    body.ops.insert(0, body.ops.pop(1))  # yield before the add it yields
    with pytest.raises(CompileError, match="used before it is defined"):
        verify(kernel)


def test_body_definitions_do_not_escape_the_loop():
    message = check("""\
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %4 = add %2, 1.0 : f32 @4:9
    yield %4 @3:5
  }
  store x, %4, none @5:5
""")
    assert "defined inside a loop body is used outside it" in message


def test_the_induction_variable_does_not_escape_the_loop():
    message = check("""\
  for %1 in range(0, n, 1) @3:5 {
    yield @3:5
  }
  %5 = add %1, 1 : i32 @5:5
""")
    assert "defined inside a loop body is used outside it" in message


def test_carried_counts_agree():
    message = check("""\
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    yield @3:5
  }
""")
    assert "carries 1 value(s) but yields 0" in message


def test_carried_types_agree_across_the_lane():
    message = check("""\
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %4 = arange start=0, end=4 : vector<4 x i32> @4:9
    yield %4 @3:5
  }
""")
    assert "carried value 0 is f32 but the body yields vector<4 x i32>" in message


def test_an_initial_value_must_fit_its_lane():
    message = check("""\
  %0 = arange start=0, end=4 : vector<4 x i32> @2:5
  %3 = for %1 in range(0, n, 1) iter_args(%2 = %0) : f32 @3:5 {
    yield %2 @3:5
  }
""")
    assert "enters the loop as vector<4 x i32>" in message


def test_yield_only_ends_a_loop_body():
    message = check("""\
  yield @2:5
""")
    assert "'yield' may only end a loop body" in message


def test_a_loop_body_ends_with_yield():
    message = check("""\
  for %1 in range(0, n, 1) @3:5 {
    %4 = add %1, 1 : i32 @4:9
  }
""")
    assert "must end with 'yield'" in message


def test_nested_loops_obey_the_rules_recursively():
    message = check("""\
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %6 = for %4 in range(0, n, 1) iter_args(%5 = %2) : f32 @4:9 {
      %7 = add %5, 1.0 : f32 @5:13
      yield %7 @4:9
    }
    yield %7 @3:5
  }
""")
    assert "defined inside a loop body is used outside it" in message


def test_declared_types_must_match_the_type_rule():
    message = check("""\
  %0 = program_id axis=0 : f32 @2:5
""")
    assert "declares f32 but its operands give i32" in message


def test_errors_point_at_the_kernel_source_and_quote_the_op():
    with pytest.raises(CompileError) as info:
        verify(parse_kernel(HEADER + "  %0 = program_id axis=0 : f32 @2:5\n}\n", "bad.ssa"))
    assert (info.value.loc.file, info.value.loc.line, info.value.loc.col) == ("k.py", 2, 5)
    assert info.value.notes[0][1] == "in: %0 = program_id axis=0 : f32 @2:5"
