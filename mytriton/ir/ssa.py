"""Typed SSA: the data model every pass and backend works on.

A kernel is a block of ops. An op has operands, attributes, results, a source
location and, for structured control flow (``for``), nested blocks whose
arguments are the induction variable and the carried values. Operands are SSA
values, literal constants (``Const``) or ``None`` (an absent mask).

``walk`` is the one walker that knows about regions: every analysis that
visits ops goes through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from mytriton.diagnostics import Location
from mytriton.types import BOOL, I64, WEAK_FLOAT, Type, int_literal_type


class Value:
    """An SSA value: a kernel parameter, an op result or a block argument."""

    type: Type


class Param(Value):
    def __init__(self, name: str, type: Type, attrs: dict[str, int] | None = None) -> None:
        self.name = name
        self.type = type
        # Facts the launch specialised on (``divisibility``: text_common.PARAM_ATTRS).
        self.attrs: dict[str, int] = dict(attrs or {})

    def __repr__(self) -> str:
        return f"Param({self.name}: {self.type})"


class OpResult(Value):
    def __init__(self, op: "Op", index: int, type: Type) -> None:
        self.op = op
        self.index = index
        self.type = type

    def __repr__(self) -> str:
        return f"OpResult({self.op.name}#{self.index}: {self.type})"


class BlockArg(Value):
    def __init__(self, block: "Block", index: int, type: Type) -> None:
        self.block = block
        self.index = index
        self.type = type

    def __repr__(self) -> str:
        return f"BlockArg(#{self.index}: {self.type})"


@dataclass(frozen=True, eq=False)
class Const:
    """A literal operand. Numbers are weakly typed: the op decides their type;
    an integer beyond i32 is i64 (as in Triton), so ``pid * 4294967296``
    computes in i64 instead of wrapping to 0. Readers and the tracer reject
    integers beyond i64 before they become a ``Const``. Equal only to the
    same literal: ``1``, ``1.0`` and ``true`` differ, and so do ``0.0`` and
    ``-0.0``."""

    value: bool | int | float

    def _key(self) -> tuple[type, str]:
        return type(self.value), repr(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def type(self) -> Type:
        if isinstance(self.value, bool):
            return BOOL
        if isinstance(self.value, int):
            return int_literal_type(self.value) or I64
        return WEAK_FLOAT


Operand = Value | Const | None


class Block:
    """A list of ops with typed arguments (a region's entry block)."""

    def __init__(self, arg_types: list[Type] | None = None) -> None:
        self.args: list[BlockArg] = [BlockArg(self, i, t) for i, t in enumerate(arg_types or [])]
        self.ops: list[Op] = []
        self.parent: Op | None = None

    def append(self, op: "Op") -> "Op":
        op.parent = self
        self.ops.append(op)
        return op


class Op:
    def __init__(
        self,
        name: str,
        operands: list[Operand],
        result_types: list[Type],
        attrs: dict[str, Any] | None = None,
        loc: Location | None = None,
        regions: list[Block] | None = None,
    ) -> None:
        self.name = name
        self.operands = list(operands)
        self.attrs = dict(attrs or {})
        self.results = [OpResult(self, i, t) for i, t in enumerate(result_types)]
        self.loc = loc
        self.regions = list(regions or [])
        for region in self.regions:
            region.parent = self
        self.parent: Block | None = None

    @property
    def result(self) -> OpResult:
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def __repr__(self) -> str:
        return f"Op({self.name})"


@dataclass(frozen=True)
class SharedMemory:
    """How a laid-out kernel's one dynamic shared-memory array is divided
    (the CUDA back end's allocate-shared pass): ops' scratch from byte 0,
    ``scratch`` bytes of it; the buffers at their ``offset`` attributes;
    scratch needed only after the buffers' last use from byte 0 again,
    ``late_scratch`` bytes, over them; ``bytes`` in all, what a launch gives."""

    bytes: int
    scratch: int
    late_scratch: int


@dataclass
class Kernel:
    name: str
    params: list[Param]
    constexprs: dict[str, Any]
    body: Block
    loc: Location
    # Free-form facts later stages add (e.g. shared-memory plans); not printed.
    meta: dict[str, Any] = field(default_factory=dict)
    digest: str | None = None  # short sha256 of the source text (diagnostics may then quote the file)
    # Set by the layouts stage, which lays tiles out for this many warps per
    # program: the SSA is then the CUDA back end's input.
    num_warps: int | None = None
    shared_memory: SharedMemory | None = None  # set by allocate-shared where the kernel uses any

    @property
    def laid_out(self) -> bool:
        return self.num_warps is not None


# ---- structured loops -------------------------------------------------------
# A ``for`` op's operands are (start, stop, step, *initial carried values); its
# one region's arguments are (induction variable, *carried values); the region
# ends with a ``yield`` of the next carried values; the op's results are the
# final carried values.


def make_for(start: Operand, stop: Operand, step: Operand, inits: list[Operand],
             carried_types: list[Type], loc: Location | None, index_type: Type) -> Op:
    body = Block([index_type, *carried_types])
    return Op("for", [start, stop, step, *inits], carried_types, loc=loc, regions=[body])


def for_bounds(op: Op) -> tuple[Operand, Operand, Operand]:
    return op.operands[0], op.operands[1], op.operands[2]


def for_inits(op: Op) -> list[Operand]:
    return op.operands[3:]


def for_body(op: Op) -> Block:
    return op.regions[0]


def for_index(op: Op) -> BlockArg:
    return op.regions[0].args[0]


def for_carried(op: Op) -> list[BlockArg]:
    return op.regions[0].args[1:]


def for_yield(op: Op) -> Op | None:
    ops = op.regions[0].ops
    return ops[-1] if ops and ops[-1].name == "yield" else None


# ---- structured if and while ----------------------------------------------
# An ``if`` op's one operand is its i1 condition; its two regions (then, else)
# have no arguments and each ends with a ``yield`` of the op's results.
# A ``while`` op's operands are the initial carried values; its first region
# (the condition) and its second (the body) both take the carried values as
# arguments; the first ends with ``condition %c`` (go on while %c), the second
# with a ``yield`` of the next carried values; its results are the carried
# values when the condition first fails.


def make_if(cond: Operand, result_types: list[Type], loc: Location | None) -> Op:
    return Op("if", [cond], result_types, loc=loc, regions=[Block(), Block()])


def make_while(inits: list[Operand], carried_types: list[Type], loc: Location | None) -> Op:
    return Op("while", list(inits), carried_types, loc=loc,
              regions=[Block(list(carried_types)), Block(list(carried_types))])


def region_terminator(block: Block) -> Op | None:
    """The ``yield`` or ``condition`` ending a region, if it has one."""
    ops = block.ops
    return ops[-1] if ops and ops[-1].name in ("yield", "condition") else None


def yield_types(terminator: Op) -> list[Type]:
    """The types the operands of a ``yield`` stand for: a loop's carried
    values, an ``if``'s or a ``while``'s results, a combine region's scalars."""
    owner = terminator.parent.parent
    if owner.name == "for":
        return [arg.type for arg in for_carried(owner)]
    if is_combine(owner):  # the combined scalars: the left arguments' types
        return [arg.type for arg in owner.regions[0].args[:len(owner.operands)]]
    return [result.type for result in owner.results]


# ---- walking ----------------------------------------------------------------


def walk_op(op: Op) -> Iterator[Op]:
    """``op``, then every op of its regions, in program order."""
    yield op
    for region in op.regions:
        yield from walk(region)


def walk(block: Block) -> Iterator[Op]:
    """Every op in ``block`` and its nested regions, in program order (an op
    before the ops of its regions)."""
    # An explicit stack: nested generators would cost each op one step per
    # level it is nested at (a chain of 1,000 elifs, quadratic).
    stack = [iter(block.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        stack.extend(iter(region.ops) for region in reversed(op.regions))


def values_used(op: Op) -> Iterator[Value]:
    for operand in op.operands:
        if isinstance(operand, Value):
            yield operand


def use_counts(block: Block) -> dict[Value, int]:
    counts: dict[Value, int] = {}
    for op in walk(block):
        for value in values_used(op):
            counts[value] = counts.get(value, 0) + 1
    return counts


def replace_uses(block: Block, old: Value, new: Operand) -> None:
    for op in walk(block):
        op.operands = [new if operand is old else operand for operand in op.operands]


# ---- scopes and edits ---------------------------------------------------------
# Passes that move, merge or delete ops ask these where a value lives, so
# scoping is decided in one place.


def defining_block(value: Value) -> Block | None:
    """The block whose scope ``value`` belongs to; None for kernel parameters."""
    if isinstance(value, OpResult):
        return value.op.parent
    if isinstance(value, BlockArg):
        return value.block
    return None


def is_within(block: Block | None, ancestor: Block) -> bool:
    """Whether ``block`` is ``ancestor`` or a region nested (at any depth) in it."""
    while block is not None:
        if block is ancestor:
            return True
        owner = block.parent
        block = owner.parent if owner is not None else None
    return False


def erase_op(op: Op) -> None:
    """Unlink ``op`` (with its regions) from its block. To delete it for good,
    the caller first makes sure nothing reads its results."""
    assert op.parent is not None, f"{op.name} is not in a block"
    op.parent.ops.remove(op)
    op.parent = None


def erase_ops(ops: list[Op]) -> None:
    """``erase_op`` for each of ``ops``, each block rebuilt once (removing
    ops one by one from a block of n ops costs n each)."""
    gone = {id(op) for op in ops}
    blocks = {id(op.parent): op.parent for op in ops if op.parent is not None}
    for block in blocks.values():
        block.ops = [op for op in block.ops if id(op) not in gone]
    for op in ops:
        op.parent = None


def insert_before(anchor: Op, *ops: Op) -> None:
    """Put ``ops`` (in order, in no block yet) just before ``anchor``, in its block."""
    _insert(anchor, 0, ops)


def insert_after(anchor: Op, *ops: Op) -> None:
    """Put ``ops`` (in order, in no block yet) just after ``anchor``, in its block."""
    _insert(anchor, 1, ops)


def _insert(anchor: Op, shift: int, ops: tuple[Op, ...]) -> None:
    block = anchor.parent
    assert block is not None, f"{anchor.name} is not in a block"
    at = block.ops.index(anchor) + shift
    for op in ops:
        assert op.parent is None, f"{op.name} is already in a block"
        op.parent = block
    block.ops[at:at] = ops


def move_before(op: Op, anchor: Op) -> None:
    """Move ``op`` out of its block to just before ``anchor`` (in anchor's block)."""
    erase_op(op)
    insert_before(anchor, op)


def drop_loop_lanes(op: Op, dead: set[int]) -> None:
    """Remove the carried lanes numbered in ``dead`` from a ``for`` op: their
    initial value, block argument, yielded value and result. Nothing may still
    use the dropped block arguments or results."""
    keep = [i for i in range(len(op.results)) if i not in dead]
    body = for_body(op)
    terminator = for_yield(op)
    assert terminator is not None, "a loop body ends with yield"
    op.operands = op.operands[:3] + [op.operands[3 + i] for i in keep]
    terminator.operands = [terminator.operands[i] for i in keep]
    body.args = [body.args[0]] + [body.args[1 + i] for i in keep]
    op.results = [op.results[i] for i in keep]
    for index, arg in enumerate(body.args):
        arg.index = index
    for index, result in enumerate(op.results):
        result.index = index


def drop_if_results(op: Op, dead: set[int]) -> None:
    """Remove the results numbered in ``dead`` from an ``if`` op, with the
    values both branches yield for them. Nothing may still read them."""
    keep = [i for i in range(len(op.results)) if i not in dead]
    for region in op.regions:
        terminator = region.ops[-1]
        terminator.operands = [terminator.operands[i] for i in keep]
    op.results = [op.results[i] for i in keep]
    for index, result in enumerate(op.results):
        result.index = index


# ---- combine ops (reduce, scan) -------------------------------------------------
# A ``reduce`` or ``scan`` op's operands are N tiles of one shape; its one
# region (the combine function) takes 2N scalars, N "left" values then N
# "right" ones, of the operands' element types, and ends with a ``yield`` of N
# combined scalars; its results are the N reduced values (reduce) or the N
# inclusive scans (scan). The region is closed: it reads only its arguments,
# kernel parameters and literals.


def make_combine(name: str, inputs: list[Operand], element_types: list[Type], result_types: list[Type],
                 attrs: dict[str, Any], loc: Location | None) -> Op:
    body = Block([*element_types, *element_types])
    return Op(name, list(inputs), result_types, attrs=attrs, loc=loc, regions=[body])


def is_combine(op: Op) -> bool:
    """Whether ``op`` runs a combine region over its tile operands (reduce, scan)."""
    from mytriton.ir import opdefs

    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.combine


def enclosing_combine(block: Block | None) -> Op | None:
    """The innermost reduce or scan whose region holds ``block``, if any:
    a pass may not give a value across that boundary (the region is closed)."""
    while block is not None:
        owner = block.parent
        if owner is None:
            return None
        if is_combine(owner):
            return owner
        block = owner.parent
    return None


def combine_region_problem(op: Op) -> tuple[Op, str] | None:
    """The first op of a combine region that the region may not hold, and
    why: the region combines scalars, so it holds pure scalar ops only (no
    tiles, no memory reads, no control flow), every backend evaluating it as
    plain expressions on each pair of elements."""
    from mytriton.ir import opdefs

    for inner in op.regions[0].ops[:-1] if op.regions and op.regions[0].ops else []:
        opdef = opdefs.lookup(inner.name)
        if inner.regions or (opdef is not None and opdef.control):
            return inner, f"a combine function cannot hold '{inner.name}' (no runtime control flow; use tl.where)"
        if opdef is None or not opdef.pure or opdef.reads_memory or opdef.allocates:
            return inner, f"a combine function cannot use '{inner.name}' (memory, effects): it combines values only"
        for result in inner.results:
            if getattr(result.type, "shape", ()):
                return inner, (f"a combine function works on scalars, but '{inner.name}' makes a tile "
                               f"({result.type})")
    return None
