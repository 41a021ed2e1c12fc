"""Constant folding evaluates the op table's semantics, the interpreter's own
(the IR-in, IR-out fold tests are text: tests/lit/fold/)."""
from mytriton.ir import opdefs
from mytriton.passes.fold import evaluate
from mytriton.types import F32, I32


def test_folding_evaluates_the_interpreters_semantics():
    assert evaluate(opdefs.OPS["floordiv"], [-7, 2], I32) == -3  # toward zero, as C
    assert evaluate(opdefs.OPS["mod"], [-7, 2], I32) == -1
    assert evaluate(opdefs.OPS["add"], [2**31 - 1, 1], I32) == -2**31  # wraps
    assert evaluate(opdefs.OPS["div"], [1.0, 3.0], F32) == 0.3333333432674408  # f32 rounding
