"""Small analyses over SSA that several stages share."""
from __future__ import annotations

from mytriton.ir import opdefs
from mytriton.ir.ssa import BlockArg, Const, Kernel, Op, Operand, OpResult, Param, Value, walk
from mytriton.types import BlockType


class NotDefinedBy(Exception):
    """A value is not defined by the op a pattern expects."""

    def __init__(self, value: Operand, expected: tuple[str, ...], found: Op | None) -> None:
        self.value = value
        self.expected = expected
        self.found = found
        wanted = " or ".join(f"'{name}'" for name in expected)
        super().__init__(f"expected a value defined by {wanted}, got {describe_operand(value, found)}")


def describe_operand(value: Operand, op: Op | None) -> str:
    """What an operand is, in a few words, for messages."""
    if op is not None:
        return f"one defined by '{op.name}'"
    if isinstance(value, Param):
        return f"the parameter '{value.name}'"
    if isinstance(value, BlockArg):
        return "a loop's induction variable" if value.index == 0 else "a loop-carried value"
    if isinstance(value, Const):
        return f"the literal {value.value!r}"
    if value is None:
        return "none"
    return "a value defined outside the kernel"


class Definitions:
    """A use-def index of a kernel: the op defining each value, found through
    loop bodies (a value defined before a loop and one defined in its body are
    both known), for matchers that follow operands backwards.

    Built once; edits made afterwards are not seen.
    """

    def __init__(self, kernel: Kernel) -> None:
        self.ops: dict[Value, Op] = {}
        self.position: dict[Op, int] = {}  # program order, as ``walk`` visits the ops
        # Ops a matcher made from the kernel's (not in it until a rewrite puts
        # them there), by the op each comes from: one each, so that matching
        # again finds the same values.
        self.made: dict[Op, Op] = {}
        for position, op in enumerate(walk(kernel.body)):
            self.position[op] = position
            for result in op.results:
                self.ops[result] = op

    def op(self, value: Operand) -> Op | None:
        """The op defining ``value``; None for parameters, block arguments, literals and none."""
        return self.ops.get(value) if isinstance(value, OpResult) else None

    def defined_by(self, value: Operand, *names: str) -> Op | None:
        """The op defining ``value`` if it is one of ``names``, else None."""
        op = self.op(value)
        return op if op is not None and op.name in names else None

    def require(self, value: Operand, *names: str) -> Op:
        """The op defining ``value``, which must be one of ``names`` (else NotDefinedBy)."""
        op = self.op(value)
        if op is None or op.name not in names:
            raise NotDefinedBy(value, names, op)
        return op


def pointer_bases(value: Value) -> set[Param]:
    """The pointer parameters a pointer value can be derived from (through
    ``addptr``, ``where`` and loop-carried pointers)."""
    found: set[Param] = set()
    seen: set[Value] = set()
    work: list[Value] = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, Param):
            found.add(v)
        elif isinstance(v, OpResult):
            op = v.op
            if op.name in ("addptr", "expand_dims", "hint", "trans", "convert_layout", "permute", "reshape",
                           "split", "broadcast_to"):
                work.append(op.operands[0])  # the same pointers, offset, reshaped or moved
            elif op.name == "join":
                work.extend(o for o in op.operands if isinstance(o, Value))
            elif op.name == "where":
                work.extend(o for o in op.operands[1:] if isinstance(o, Value))
            elif op.name == "for":
                work.append(op.operands[3 + v.index])
                yielded = op.regions[0].ops[-1].operands[v.index]
                if isinstance(yielded, Value):
                    work.append(yielded)
            elif op.name in ("if", "while"):
                if op.name == "while":
                    work.append(op.operands[v.index])
                regions = op.regions if op.name == "if" else op.regions[1:]
                work.extend(o for r in regions for o in r.ops[-1].operands[v.index:v.index + 1]
                            if isinstance(o, Value))
        elif isinstance(v, BlockArg) and v.block.parent is not None and v.block.parent.name == "while":
            work.append(v.block.parent.operands[v.index])
            yielded = v.block.parent.regions[1].ops[-1].operands[v.index]
            if isinstance(yielded, Value):
                work.append(yielded)
        elif isinstance(v, BlockArg) and v.index > 0:
            loop = v.block.parent
            if loop is not None:
                work.append(loop.operands[3 + v.index - 1])
                yielded = v.block.ops[-1].operands[v.index - 1] if v.block.ops else None
                if isinstance(yielded, Value):
                    work.append(yielded)
    return found


def stored_params(kernel: Kernel) -> list[str]:
    """Names of the pointer parameters the kernel may write through (a
    store, or any op that writes global memory through its address operand),
    in parameter order (the buffers a launcher copies back)."""
    stored: set[Param] = set()
    for op in walk(kernel.body):
        opdef = opdefs.lookup(op.name)
        if opdef is None or not opdef.writes_global or opdef.address_operand is None:
            continue
        address = op.operands[opdef.operand_index(opdef.address_operand)]
        if isinstance(address, Value):
            stored |= pointer_bases(address)
    return [p.name for p in kernel.params if p in stored]


# ---- tiles in registers ----------------------------------------------------------


def is_tile(value: object) -> bool:
    return isinstance(value, Value) and isinstance(value.type, BlockType)


def is_materialized(value: Value) -> bool:
    """Whether a tile is held in registers (in its own layout) rather than
    recomputed wherever it is used."""
    if isinstance(value, BlockArg):
        return True
    if not isinstance(value, OpResult):
        return False
    opdef = opdefs.lookup(value.op.name)
    return value.op.name in ("for", "if", "while") or (opdef is not None and opdef.materialised)


def reaches_materialized(value: object) -> bool:
    """Whether computing tile ``value`` reads a tile held in registers."""
    work, seen = [value], set()
    while work:
        v = work.pop()
        if not is_tile(v) or v in seen:
            continue
        seen.add(v)
        if is_materialized(v):
            return True
        work.extend(v.op.operands)
    return False
