"""How mytriton's types and literals are spelled in CUDA C++."""
from __future__ import annotations

import math

from mytriton.diagnostics import CompileError

from mytriton.types import BF16, BOOL, F16, F32, I32, I64, PointerType, ScalarType, Type, element_of

_SCALARS = {BOOL: "bool", I32: "int", I64: "long long", F32: "float", F16: "__half", BF16: "__nv_bfloat16"}


def c_scalar(t: ScalarType) -> str:
    return _SCALARS[t]


def c_element(t: Type) -> str:
    """The C type of one element of a value of type ``t``."""
    e = element_of(t)
    if isinstance(e, PointerType):
        return f"{c_scalar(e.pointee)}*"
    return c_scalar(e)


def c_literal(value: bool | int | float, t: ScalarType) -> str:
    """A literal of type ``t`` (the op's computation type). An integer wraps
    to ``t``'s width, as the interpreter's conversion does; a float becomes an
    integer by truncation, and one with no integer value (inf, nan, out of
    range) is an error: the verifier reports it first, at the op."""
    if t == BOOL:
        return "true" if value else "false"
    if t.is_int:
        if isinstance(value, float):
            low, high = t.int_range
            if not math.isfinite(value) or not low <= math.trunc(value) <= high:
                raise CompileError(f"the literal {value!r} has no {t} value")
            value = math.trunc(value)
        low, _ = t.int_range
        value = (int(value) - low) % 2**t.bits + low
        if value == low:  # -2147483648 in C is the negation of an unsigned-sized literal
            return f"({value + 1}{'LL' if t == I64 else ''} - 1)"
        return f"{value}LL" if t == I64 else str(value)
    v = float(value)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(v)
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f"
    if t == F32:
        return text
    return f"{'__float2half' if t == F16 else '__float2bfloat16'}({text})"


def c_cast(expr: str, source: ScalarType, target: ScalarType) -> str:
    if source == target:
        return expr
    if target == F16:
        return f"__float2half((float)({expr}))"
    if target == BF16:
        return f"__float2bfloat16((float)({expr}))"
    if source in (F16, BF16):
        expr = f"(float)({expr})"
        if target == F32:
            return expr
    if target == BOOL:
        return f"(({expr}) != 0)"
    return f"({c_scalar(target)})({expr})"


def needs_half_headers(types: list[Type]) -> bool:
    for t in types:
        e = element_of(t)
        s = e.pointee if isinstance(e, PointerType) else e
        if s in (F16, BF16):
            return True
    return False
