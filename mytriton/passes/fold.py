"""fold: constant folding and algebraic simplification.

    %r = mul 4, 8 : i32                                =>  uses of %r read 32
    %r = add %x, 0 : i32                               =>  uses of %r read %x
    %r = where true, %a, %b : T                        =>  uses of %r read %a   (%a : T)
    %r = cast %x, dtype=f32 : T                        =>  uses of %r read %x   (%x : T)
    %r = for %i in range(4, 2, 1) iter_args(%c = %x)   =>  uses of %r read %x   (zero trips)
    %r = if true { ops; yield %a } else { ... }        =>  ops (moved before it); uses of %r read %a
    %d = dot %a, %b, none; %r = add %x, %d             =>  %r = dot %a, %b, %x   (%d used once)

A folded op is erased once nothing reads it. An op is evaluated by its
semantics in the op table (``ir/opdefs.py``, the interpreter's too) on 0-d
NumPy arrays, so integers wrap at 32 bits and divide as C does (toward zero;
the remainder takes the dividend's sign) and floats round to f32. A literal is
weakly typed, so a value is replaced by one only where the user's type rule
gives the same types as before; otherwise that use keeps the op. Not folded:
what an op's ``fold_refuses`` names (division by zero, INT_MIN / -1, NaN and
signed zeros in maximum/minimum), math functions that are not exact (the
device's libm decides exp, sin...; floor and ceil fold), ops that read memory
or have an effect, pointers, blocks, and results other than
i32, f32 and bool (no literal stands for them). An integer literal beyond i32
is i64 (``mul %x, 4294967296 : i64``), so what it meets computes in i64 and is
left alone rather than wrapped at 32 bits. An ``if`` on a literal condition
is replaced by the ops of the branch it takes (effects too: they run either
way) unless one of its results is a literal its user cannot take.

A dot without an accumulator whose only use is an ``add`` of a tile of its
type, in the same block, becomes a dot accumulating into that tile (Triton's
combine pass does the same): ``acc += tl.dot(a, b)`` then updates the
accumulator's registers in place instead of summing into a fresh zeroed tile
that is added afterwards, which would double the registers a large tile
needs. The interpreter computes both forms alike (the product, then the sum);
on the GPU the accumulator is part of the FMA chain.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import struct

from mytriton.ir import opdefs
from mytriton.ir.ssa import (
    Const, Kernel, Op, OpResult, Operand, Value, erase_op, for_bounds, for_carried, for_inits, insert_before, use_counts,
    values_used, walk, yield_types,
)
from mytriton.ir.literals import carried_type_fits
from mytriton.types import BOOL, F32, I32, PointerType, ScalarType, Type, TypeRuleError, concrete, element_of, promote

# The types a weak literal stands for exactly wherever it is used (i32 and an
# int literal promote alike; f32 and a float literal do, except against f16).
LITERAL_TYPES = (BOOL, I32, F32)
INT_MIN = -2**31

def _convert(value: bool | int | float, t: Type) -> bool | int | float | None:
    """``value`` as an element of ``t``, as C converts it; None where C is undefined."""
    if t == BOOL:
        return bool(value)
    if t == I32:
        if isinstance(value, float):
            if not math.isfinite(value) or not INT_MIN <= math.trunc(value) < 2**31:
                return None
            return math.trunc(value)
        return (int(value) - INT_MIN) % 2**32 + INT_MIN
    if t == F32:
        try:
            return to_f32(float(value))
        except OverflowError:  # an integer literal beyond any double
            return None
    return None


def to_f32(value: float) -> float:
    """Round a double to the nearest f32 (IEEE round-to-nearest-even), as
    the GPU would store it; out-of-range values become infinities."""
    if not math.isfinite(value):
        return value
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        # Beyond f32's range: round to the largest finite value or overflow to inf.
        largest = 3.4028234663852886e38
        halfway = 3.4028235677973366e38
        return math.copysign(largest if abs(value) < halfway else math.inf, value)


def _compute(op: Op, args: list[Const], t: Type) -> bool | int | float | None:
    """The value of ``op`` over literal operands, or None if it must not fold."""
    name = op.name
    if name == "cast":
        return _convert(args[0].value, t)
    if name == "where":
        return _convert(args[1].value if args[0].value else args[2].value, t)
    opdef = opdefs.lookup(name)
    if opdef is None or opdef.semantics is None or not opdef.folds or len(args) != opdef.arity:
        return None
    # Comparisons compute in the operands' common type, everything else in the result's.
    ct = concrete(promote(args[0].type, args[1].type)) if opdef.computes_in == "operands" else t
    if ct not in LITERAL_TYPES:
        return None
    xs = [_convert(a.value, ct) for a in args]
    if any(x is None for x in xs):
        return None
    if opdef.fold_refuses is not None and opdef.fold_refuses(*xs):
        return None
    return _convert(evaluate(opdef, xs, ct), t)


def evaluate(opdef: opdefs.OpDef, xs: list[bool | int | float], ct: ScalarType) -> bool | int | float:
    """``opdef``'s semantics (the interpreter's) on 0-d arrays of ``ct``: C's
    wrap-around and f32 rounding come with the dtypes. NumPy is imported
    here, when there is something to fold, so that compiling without
    literals to fold never loads it."""
    import numpy as np

    dtype = _NUMPY_LITERAL_TYPES[ct]
    with np.errstate(all="ignore"):
        result = opdef.semantics(np, *(np.array(x, dtype=dtype) for x in xs))
    return np.asarray(result).item()


# The NumPy dtype (by name) of each type a literal stands for.
_NUMPY_LITERAL_TYPES = {BOOL: "bool", I32: "int32", F32: "float32"}


def _is_float(t: Type | None) -> bool:
    e = element_of(t) if t is not None else None
    return isinstance(e, ScalarType) and e.is_float


def _literal(c: Operand, value: int) -> bool:
    return isinstance(c, Const) and not isinstance(c.value, bool) and c.value == value


def _simplify(op: Op, t: Type) -> Operand | None:
    """An operand (or literal) equal to ``op``'s result by an identity."""
    ops = op.operands
    if op.name == "where" and isinstance(ops[0], Const):
        pick = ops[1] if ops[0].value else ops[2]
        return pick if isinstance(pick, Value) and pick.type == t else None
    if op.name == "cast":
        # ``acc.to(c_ptr.dtype.element_ty)`` on an f32 accumulator: kept, it stood between the dot's
        # result and the layout change before the store, which then copied the accumulator
        # through scratch without the padding and the vector reads planned for the cast's result.
        return ops[0] if isinstance(ops[0], Value) and ops[0].type == t else None
    if op.name not in ("add", "sub", "mul"):
        return None
    pairs = [(ops[0], ops[1])] if op.name == "sub" else [(ops[0], ops[1]), (ops[1], ops[0])]
    for x, c in pairs:
        if not (isinstance(x, Value) and x.type == t):
            continue
        # For floats -0.0 + 0.0 is +0.0: only x + (-0.0) and x - (+0.0) are x.
        plus_zero = _literal(c, 0) and math.copysign(1, c.value) > 0
        if op.name != "mul" and _literal(c, 0) and (not _is_float(t) or plus_zero == (op.name == "sub")):
            return x
        if op.name == "mul" and _literal(c, 1):
            return x
        if op.name == "mul" and _literal(c, 0) and t == I32:
            return Const(0)
    return None


def _fold_op(op: Op) -> Operand | None:
    if len(op.results) != 1 or op.regions or opdefs.reads_memory(op.name) or opdefs.has_effect(op.name):
        return None
    t = op.result.type
    if isinstance(element_of(t), PointerType):
        return None
    if t in LITERAL_TYPES and op.operands and all(isinstance(o, Const) for o in op.operands):
        value = _compute(op, op.operands, t)
        return None if value is None else Const(value)
    return _simplify(op, t)


def _zero_trip(op: Op) -> bool:
    start, stop, _ = for_bounds(op)
    return all(isinstance(b, Const) and type(b.value) is int for b in (start, stop)) \
        and _convert(start.value, I32) >= _convert(stop.value, I32)


def _initial(init: Operand, t: Type) -> Operand | None:
    """A zero-trip loop's result of type ``t``: its initial value, if it can stand for it."""
    if isinstance(element_of(t), PointerType):
        return None
    if isinstance(init, Value):
        return init if init.type == t else None
    value = _convert(init.value, t) if isinstance(init, Const) else None
    return None if value is None else Const(value)


def _literal_fits(user: Op, index: int, c: Const) -> bool:
    """Whether operand ``index`` of ``user`` may become the literal ``c`` with
    every type (and so every meaning) unchanged."""
    if user.name == "yield":
        return carried_type_fits(yield_types(user)[index], c)
    if user.name in ("if", "condition"):
        return c.type == BOOL
    if user.name == "while":
        return carried_type_fits(user.results[index].type, c)
    if user.name == "for":
        if index < 3:  # bounds are i32: an integer literal beyond i32 is i64
            return type(c.value) is int and concrete(c.type) == I32
        return carried_type_fits(for_carried(user)[index - 3].type, c)
    opdef = opdefs.lookup(user.name)
    if opdef is None:
        return False
    types = [None if o is None else o.type for o in user.operands]
    others = types[:index] + types[index + 1:]
    if isinstance(c.value, float) and any(_is_float(o) and element_of(o).bits < 32 for o in others):
        return False  # against f16 a float literal computes in f16, an f32 value in f32
    types[index] = c.type
    try:
        return opdef.infer(types, user.attrs) == [r.type for r in user.results]
    except TypeRuleError:
        return False


def _rewrite_operands(op: Op, replaced: dict[Value, Operand]) -> None:
    for i, operand in enumerate(op.operands):
        new = operand
        while isinstance(new, Value) and new in replaced:
            candidate = replaced[new]
            if isinstance(candidate, Const) and not _literal_fits(op, i, candidate):
                break
            new = candidate
        op.operands[i] = new


def _erase_unused(kernel: Kernel, folded: list[Op]) -> None:
    counts = use_counts(kernel.body)
    # Users come after their definitions, so a reverse sweep lets chains die.
    for op in reversed(folded):
        if any(counts.get(r, 0) for r in op.results):
            continue
        for gone in [op, *(inner for region in op.regions for inner in walk(region))]:
            for value in values_used(gone):
                counts[value] -= 1
        erase_op(op)


def _fuse_dot_accumulators(kernel: Kernel) -> None:
    """``add %x, %d`` (either order) with ``%d = dot %a, %b, none`` used only
    there, in the add's block and of the add's type: the add becomes
    ``dot %a, %b, %x`` (its result keeps its users) and the first dot goes."""
    counts = use_counts(kernel.body)
    for op in list(walk(kernel.body)):
        if op.name != "add" or len(op.operands) != 2:
            continue
        for d, x in ((op.operands[1], op.operands[0]), (op.operands[0], op.operands[1])):
            if not (isinstance(d, OpResult) and d.op.name == "dot" and d.op.operands[2] is None
                    and counts.get(d) == 1 and d.op.parent is op.parent
                    and isinstance(x, Value) and x is not d and x.type == d.type == op.result.type):
                continue
            dot = d.op
            op.name, op.operands, op.attrs = "dot", [dot.operands[0], dot.operands[1], x], dict(dot.attrs)
            op.loc = dot.loc
            erase_op(dot)
            break


@dataclass(frozen=True)
class FoldPass:
    name: str = "fold"
    summary: str = "fold literal arithmetic and identities: mul 4, 8 => 32; add %x, 0 => %x"

    def apply(self, kernel: Kernel) -> Kernel:
        replaced: dict[Value, Operand] = {}
        folded: list[Op] = []
        taken: list[tuple[Op, int]] = []  # ifs on a literal, and the branch they take
        # Program order: every use is visited after its definition was folded.
        for op in walk(kernel.body):
            _rewrite_operands(op, replaced)
            if op.name == "if":
                cond = op.operands[0]
                if not (isinstance(cond, Const) and type(cond.value) is bool):
                    continue
                branch = 0 if cond.value else 1
                taken.append((op, branch))
                folded.append(op)
                for result, new in zip(op.results, op.regions[branch].ops[-1].operands):
                    if new is not None:
                        replaced[result] = new
                continue
            if op.name == "for":
                if not _zero_trip(op):
                    continue
                news = [_initial(i, r.type) for i, r in zip(for_inits(op), op.results)]
            else:
                news = [_fold_op(op)]
                if news[0] is None:
                    continue
            folded.append(op)
            for result, new in zip(op.results, news):
                if new is not None:
                    replaced[result] = new
        # Inner ifs first: their ops move into the branch an outer if then moves.
        for op, branch in reversed(taken):
            region = op.regions[branch]
            body = region.ops[:-1]
            region.ops = region.ops[-1:]
            for inner in body:
                inner.parent = None
            insert_before(op, *body)
        _erase_unused(kernel, folded)
        _fuse_dot_accumulators(kernel)
        return kernel
