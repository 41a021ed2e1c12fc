"""cse: common subexpression elimination over pure ops, aware of loop scopes.

    %a = mul %x, 4 : i32             %a = mul %x, 4 : i32
    %b = mul 4, %x : i32      =>     (uses of %b read %a)

An op is replaced only by an equal op that dominates it: one earlier in its
own block or earlier in an enclosing block (before the loop or if that holds
it), never one in a sibling or nested region (a loop body, the other branch of
an if, the other region of a while). Two ops are equal when they have
the same name, operands (values by identity, literals by type and value),
attributes and result types; commutative ops compare their operands as an
unordered pair. Ops that read memory (``load``, ``dot_shared``) are never
merged (a store or copy may come between), nor are allocations (two
``shared_alloc`` are two buffers), nor ops with effects or regions. An op inside a combine region (reduce,
scan) is only replaced by one in the same region: the region is closed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from mytriton.ir import opdefs
from mytriton.ir.ssa import Const, Kernel, Op, Operand, Value, enclosing_combine, erase_ops, is_within, walk


def _operand_key(operand: Operand) -> Hashable:
    if isinstance(operand, Const):
        # repr keeps 1, 1.0, True and -0.0 apart (they compare equal in Python).
        return ("const", repr(operand.value))
    if operand is None:
        return ("none",)
    return ("value", id(operand))


def _key(op: Op) -> Hashable:
    operands = [_operand_key(o) for o in op.operands]
    if opdefs.OPS[op.name].commutative:
        operands.sort(key=repr)
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))
    return (op.name, tuple(operands), attrs, tuple(r.type for r in op.results))


def _mergeable(op: Op) -> bool:
    opdef = opdefs.lookup(op.name)
    return (opdef is not None and opdef.pure and not opdefs.reads_memory(op.name) and not opdef.allocates
            and not op.regions)


@dataclass(frozen=True)
class CSEPass:
    name: str = "cse"
    summary: str = "merge equal pure ops that dominate each other: %b = mul 4, %x => %a"

    def apply(self, kernel: Kernel) -> Kernel:
        seen: dict[Hashable, list[Op]] = {}
        replaced: dict[Value, Value] = {}
        dead: list[Op] = []
        # Program order: an op is visited after everything that dominates it,
        # and its operands are renamed before its key is taken.
        for op in walk(kernel.body):
            op.operands = [replaced.get(o, o) if isinstance(o, Value) else o for o in op.operands]
            if not _mergeable(op):
                continue
            candidates = seen.setdefault(_key(op), [])
            # An earlier equal op dominates this one iff its block encloses this op.
            # A combine region (reduce, scan) is closed: nothing crosses into it.
            leader = next((c for c in candidates if is_within(op.parent, c.parent)
                           and enclosing_combine(op.parent) is enclosing_combine(c.parent)), None)
            if leader is None:
                candidates.append(op)
                continue
            for mine, theirs in zip(op.results, leader.results):
                replaced[mine] = theirs
            dead.append(op)
        erase_ops(dead)
        return kernel
