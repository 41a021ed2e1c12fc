"""How mytriton's types and literals are spelled in CUDA C++."""
from __future__ import annotations

import math

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
    """A literal of type ``t`` (the op's computation type)."""
    if t == BOOL:
        return "true" if value else "false"
    if t.is_int:
        if isinstance(value, float):
            value = int(value)
        value = int(value)
        if t == I64:
            return "(-9223372036854775807LL - 1)" if value == -2**63 else f"{value}LL"
        return "(-2147483647 - 1)" if value == -2**31 else str(value)
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
