"""dce: dead code elimination, including dead loops and dead carried lanes.

    %a = load %p, none, none : f32          (nothing reads %a)     =>  (erased)
    %r, %s = for ... iter_args(%c = 0, %d = 0.0) {                 =>  %r = for ... iter_args(%c = 0) {
      ...; %e = add %d, 1.0 : f32; yield %x, %e                          ...; yield %x
    }                                       (nothing reads %s)         }
    for ... { %t = mul %i, 2 : i32; yield }  (no store inside)     =>  (erased)

Mark and sweep: ops with an effect (``opdefs.has_effect``: stores and
whatever else writes memory or synchronises) are live; an op is live when a live op reads one of its
results; a carried lane is live when a live op reads its result or its block
argument, and then its initial and yielded values are read; a loop is live
when one of its lanes or an op in its body is live, and then its bounds are
read. Everything else goes: unread pure ops (``load`` too, which has no
effect), lanes that only feed themselves, and loops with neither. Loops
always terminate, so dropping one cannot change whether the kernel does.

An ``if`` is live when a live op reads one of its results or a live op is in
one of its regions; then its condition is read, and for each result read,
both branches' yielded values; unread results go, and so does an ``if`` with
neither (``if %c { yield %a } else { yield %b }`` with no reader).
A ``while`` loop need not terminate, so it is always kept, with all its
carried values (dropping one could turn a loop that never ends into one
that does).
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.ir import opdefs
from mytriton.ir.ssa import (
    BlockArg, Kernel, Op, OpResult, Operand, drop_if_results, drop_loop_lanes, erase_ops, for_inits, for_yield,
    is_combine, walk,
)


def _has_effect(op: Op) -> bool:
    if op.name == "while":
        return True  # it may never end: kept (see the module's docstring)
    opdef = opdefs.lookup(op.name)
    if opdef is not None and opdef.control:
        return False  # loops and yields: decided by what they carry and contain
    return opdefs.has_effect(op.name)


class _Liveness:
    def __init__(self) -> None:
        self.ops: set[Op] = set()
        self.lanes: set[tuple[Op, int]] = set()
        self.pending: list[Operand] = []

    def op(self, op: Op) -> None:
        while op is not None and op not in self.ops:
            self.ops.add(op)
            if op.name == "for":
                self.pending.extend(op.operands[:3])
            elif op.name == "while":
                self.pending.append(op.regions[0].ops[-1].operands[0])  # the condition
                for index in range(len(op.results)):
                    self.lane(op, index)
            else:
                self.pending.extend(op.operands)  # an if: its condition; a reduce or scan: its tiles
                if is_combine(op):  # and what its combine region yields
                    self.pending.extend(op.regions[0].ops[-1].operands)
            # The body only runs if its loop does.
            block = op.parent
            op = block.parent if block is not None else None

    def lane(self, loop: Op, index: int) -> None:
        if (loop, index) in self.lanes:
            return
        self.lanes.add((loop, index))
        self.op(loop)
        if loop.name == "if":
            self.pending.extend(region.ops[-1].operands[index] for region in loop.regions)
        elif loop.name == "while":
            self.pending.append(loop.operands[index])
            self.pending.append(loop.regions[1].ops[-1].operands[index])
        else:
            self.pending.append(for_inits(loop)[index])
            self.pending.append(for_yield(loop).operands[index])

    def value(self, value: Operand) -> None:
        if isinstance(value, OpResult):
            if value.op.name in ("for", "if", "while"):
                self.lane(value.op, value.index)
            else:
                self.op(value.op)
        elif isinstance(value, BlockArg):
            loop = value.block.parent
            if is_combine(loop):
                self.op(loop)
            elif loop.name == "while":
                self.lane(loop, value.index)
            elif value.index == 0:
                self.op(loop)
            else:
                self.lane(loop, value.index - 1)

    def run(self, roots: list[Op]) -> None:
        for op in roots:
            self.op(op)
        while self.pending:
            self.value(self.pending.pop())


@dataclass(frozen=True)
class DCEPass:
    name: str = "dce"
    summary: str = "erase unread pure ops, dead carried lanes and effect-free loops: %a = load ... => ()"

    def apply(self, kernel: Kernel) -> Kernel:
        ops = list(walk(kernel.body))
        live = _Liveness()
        live.run([op for op in ops if _has_effect(op)])
        dead: list[Op] = []
        for op in ops:
            if op.name in ("yield", "condition"):
                continue
            if op not in live.ops:
                dead.append(op)  # its regions go with it
            elif op.name in ("for", "if"):
                unread = {i for i in range(len(op.results)) if (op, i) not in live.lanes}
                if unread:
                    (drop_loop_lanes if op.name == "for" else drop_if_results)(op, unread)
        erase_ops(dead)
        return kernel
