"""The SSA verifier on what SSA text cannot spell. Each rule that text can
break is a file in tests/lit/verify/ (`not mytriton verify %s`)."""
import pytest

from conftest import ROOT
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel
from mytriton.passes.verify import verify
from mytriton.types import F32

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


def _other_kind(value):
    """A value of another kind, equal to ``value`` where Python makes it so
    (1 == 1.0 == True): what a type rule comparing values would let through."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, tuple):
        return tuple(float(v) for v in value) or (1.0,)
    if isinstance(value, str):
        return 0
    return "f32" if value == F32 else 1


def test_an_attribute_of_another_kind_is_refused_in_every_op():
    # The samples' SSA at every stage and the lit suite's valid SSA hold most
    # ops; each attribute of each op, given a value of another kind, is a
    # located error, never a crash.
    seen = set()
    corpus = [*sorted((ROOT / "tests" / "snapshots").glob("*.ssa")), *sorted((ROOT / "tests" / "lit").rglob("*.ssa"))]
    for path in corpus:
        text = path.read_text()
        try:
            verify(parse_kernel(text, path.name))
        except CompileError:
            continue  # a lit test of an error
        places = [(i, op.name, key) for i, op in enumerate(walk(parse_kernel(text, path.name).body))
                  for key in op.attrs]
        for index, name, key in places:
            if (name, key) in seen:
                continue
            seen.add((name, key))
            kernel = parse_kernel(text, path.name)
            op = next(op for i, op in enumerate(walk(kernel.body)) if i == index)
            op.attrs[key] = _other_kind(op.attrs[key])
            with pytest.raises(CompileError) as info:
                verify(kernel)
            assert info.value.loc is not None, (name, key)
    names = {name for name, _ in seen}
    assert {"program_id", "hint", "atomic_rmw", "device_print", "scan", "dot_shared", "for"} <= names
