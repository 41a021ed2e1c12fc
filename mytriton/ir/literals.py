"""Where a weak literal may stand, and what it becomes there: part of the
type system that lowering, the verifier and constant folding share.

A literal is weakly typed (``2``, ``0.5``); each backend converts it to the
type of the place it is used: the lane of a loop it is carried in, or the
type the op computes in (the mask of a load is boolean, the value a store
writes is the pointee). These rules say whether that conversion exists.
"""
from __future__ import annotations

import math

from mytriton.ir import opdefs
from mytriton.ir.ssa import Const, Op, Operand
from mytriton.ir.text_common import format_literal
from mytriton.types import (
    BOOL, PointerType, ScalarType, SharedType, Type, WeakType, concrete, element_of, promote,
)


def operand_type(operand: Operand) -> Type | None:
    return None if operand is None else operand.type


def carried_type_fits(declared: Type, operand: Operand) -> bool:
    """A carried lane accepts values of its own type, and literals that the
    type can hold (an int literal in an f32 lane, say)."""
    if operand is None:
        return False
    t = operand.type
    if isinstance(t, WeakType):
        e = element_of(declared)
        return not isinstance(e, PointerType) and not (t.kind == "float" and not e.is_float) \
            and declared == e
    return t == declared


def _literal_target(op: Op, index: int) -> Type | None:
    """The type the backends convert operand ``index`` of ``op`` to when it
    is a literal (as ``backends/cuda/expressions.py`` and the interpreter
    do), from the op's traits and operand names."""
    opdef = opdefs.lookup(op.name)
    if opdef is None or opdef.control or op.name in ("cast", "addptr") or index >= opdef.arity or opdef.variadic:
        return None  # checked on their own (loops, casts) or integer-only by their type rule
    operand = opdef.operands[index].rstrip("?")
    if opdef.comparison:
        a, b = (operand_type(o) for o in op.operands)
        return concrete(promote(element_of(a), element_of(b))) if a is not None and b is not None else None
    if operand in ("mask", "condition"):
        return BOOL
    if operand == "value" and opdef.address_operand is not None:  # what a writer writes: the pointee
        ptr = element_of(operand_type(op.operands[opdef.operand_index(opdef.address_operand)]))
        return ptr.pointee if isinstance(ptr, PointerType) else None
    if opdef.shared_operands:  # the fill of a copy: the buffer's element; the rest are i32 by their rule
        if operand != "fill":
            return None
        buffer = operand_type(op.operands[opdef.operand_index(opdef.shared_operands[0])])
        return buffer.element if isinstance(buffer, SharedType) else None
    if op.name == "full":
        return op.attrs.get("dtype")
    return element_of(op.results[0].type) if op.results else None


def literal_conversion_error(op: Op) -> str | None:
    """Why a literal operand of ``op`` has no value in the type it is
    converted to, if one has none: a float literal that is infinite, NaN or
    out of range where an integer is computed (``load %p, %m, -inf : i64``).
    C leaves those conversions undefined and NumPy gives garbage, so no back
    end may see them. A fraction truncates toward zero, as Triton's cast does
    (``tl.store(int_ptr, 2.5)`` stores 2)."""
    for index, operand in enumerate(op.operands):
        if not isinstance(operand, Const) or type(operand.value) is not float:
            continue
        value = operand.value
        target = op.attrs.get("dtype") if op.name == "cast" else _literal_target(op, index)
        if not isinstance(target, ScalarType) or not target.is_int:
            continue
        low, high = target.int_range
        if not (math.isfinite(value) and low <= math.trunc(value) <= high):
            return f"the literal {format_literal(value)} has no {target} value"
    return None
