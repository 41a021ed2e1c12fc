"""The SSA verifier on what SSA text cannot spell. Each rule that text can
break is a file in tests/lit/verify/ (`not mytriton verify %s`)."""
import pytest

from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel
from mytriton.passes.verify import verify

GOOD = """\
kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
  %0 = program_id axis=0 : i32 @2:5
  %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
    %4 = add %2, 1.0 : f32 @4:9
    yield %4 @3:5
  }
  store x, %3, none @5:5
}
"""


def test_the_body_uses_only_earlier_definitions():
    # The reader refuses a use before its definition in the text, so only a
    # pass could build this: the verifier catches it after that pass.
    kernel = parse_kernel(GOOD, "good.ssa")
    loop = kernel.body.ops[1]
    body = loop.regions[0]
    body.ops.insert(0, body.ops.pop(1))  # yield before the add it yields
    with pytest.raises(CompileError, match="used before it is defined"):
        verify(kernel)
