"""licm: loop-invariant code motion, hoisting pure ops out of loop bodies.

    for %i in range(0, n, 1) {              %t = mul %x, 4 : i32
      %t = mul %x, 4 : i32           =>     for %i in range(0, n, 1) {
      %u = add %t, %i : i32                   %u = add %t, %i : i32

An op moves to just before its loop when it is pure, has no regions and reads
only values defined outside the loop (or ops hoisted before it); hoisted ops
keep their order and locations. Inner loops go first, so an op invariant in
two nested loops leaves both. Never hoisted: ops that read memory (``load``,
``dot_shared``: a store or copy in the loop may change memory, and a loop that
runs zero times must not read it), allocations, and integer
``floordiv``/``mod`` unless the divisor is a literal other than 0 and -1 (the
loop might never have executed the division). Only ``for`` bodies are
hoisted from, and only their own ops: nothing leaves an ``if`` branch (it
might not run) or a ``while`` loop, and an ``if`` is never moved as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.ir import opdefs
from mytriton.ir.ssa import Const, Kernel, Op, Value, defining_block, for_body, is_within, move_before, walk


def _speculatable(op: Op) -> bool:
    opdef = opdefs.lookup(op.name)
    if opdef is None or not opdef.pure or opdefs.reads_memory(op.name) or opdef.allocates or op.regions:
        return False
    if op.name in ("floordiv", "mod"):
        divisor = op.operands[1]
        return isinstance(divisor, Const) and divisor.value not in (0, -1)
    return True


def _invariant(op: Op, loop: Op) -> bool:
    body = for_body(loop)
    return all(not is_within(defining_block(v), body)
               for v in op.operands if isinstance(v, Value))


def _hoist(loop: Op) -> None:
    for op in list(for_body(loop).ops):
        if _speculatable(op) and _invariant(op, loop):
            move_before(op, loop)


@dataclass(frozen=True)
class LICMPass:
    name: str = "licm"
    summary: str = "hoist pure loop-invariant ops before their loop: for { %t = mul %x, 4 } => %t = ...; for { }"

    def apply(self, kernel: Kernel) -> Kernel:
        loops = [op for op in walk(kernel.body) if op.name == "for"]
        # Reverse program order visits every inner loop before its outer loop.
        for loop in reversed(loops):
            _hoist(loop)
        return kernel
