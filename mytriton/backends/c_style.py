"""What C-family GPU languages share, as one object per target.

A back end spells everything target-specific through a ``CStyleLanguage``:
type names, literals and conversions, thread and program indices, barriers,
warp shuffles, shared-memory declarations, pragmas, headers, math
functions. The base class holds the C spellings and the hooks; a target is
a subclass that overrides what differs (``backends/cuda/language.py``), so a
HIP or Metal target would be another subclass, as tinygrad's renderers are
small tables over one C-style base.
"""
from __future__ import annotations

import math

from mytriton.diagnostics import CompileError
from mytriton.types import BF16, BOOL, F16, F32, I32, I64, PointerType, ScalarType, Type, element_of


class CStyleLanguage:
    # ---- names of types --------------------------------------------------------------------
    scalar_names: dict[ScalarType, str] = {BOOL: "bool", I32: "int", I64: "long long", F32: "float"}
    half_names: dict[ScalarType, str] = {}  # f16 and bf16, where the target has them

    # ---- the kernel and its threads ------------------------------------------------------
    kernel_prefix = "void"
    thread_id = "tid"  # the thread's index within its program (a C expression)
    warp_size = 32
    barrier = "barrier();"
    shared_prefix = "__local"
    unroll = "#pragma unroll"
    includes: tuple[str, ...] = ()
    half_includes: tuple[str, ...] = ()

    # Math functions on f32 by op name; {0} is the operand.
    math_f32: dict[str, str] = {
        "exp": "expf({0})", "exp2": "exp2f({0})", "log": "logf({0})", "log2": "log2f({0})",
        "sqrt": "sqrtf({0})", "floor": "floorf({0})", "ceil": "ceilf({0})",
        "sin": "sinf({0})", "cos": "cosf({0})", "sigmoid": "(1.0f / (1.0f + expf(-({0}))))",
        "erf": "erff({0})", "tanh": "tanhf({0})",
    }

    def program_id(self, axis: int) -> str:
        raise CompileError(f"{type(self).__name__} has no program index")

    def num_programs(self, axis: int) -> str:
        raise CompileError(f"{type(self).__name__} has no program count")

    def kernel_signature(self, symbol: str, params: list[str], threads: int) -> str:
        return f"{self.kernel_prefix} {symbol}({', '.join(params)})"

    def shared_array(self, element: str, name: str, count: int) -> str:
        return f"{self.shared_prefix} {element} {name}[{count}];"

    def shuffle_xor(self, value: str, lane_mask: int) -> str:
        raise CompileError(f"{type(self).__name__} has no warp shuffle")

    def fma(self, a: str, b: str, c: str) -> str:
        return f"fmaf({a}, {b}, {c})"

    def abs(self, x: str, t: ScalarType) -> str:
        if t.is_float:
            return f"fabsf({x})"
        return f"llabs({x})" if t == I64 else f"abs({x})"

    def min_max(self, name: str, a: str, b: str, t: ScalarType) -> str:
        """``name`` is "maximum"/"max" or "minimum"/"min"."""
        biggest = name.startswith("max")
        if t.is_float:
            return f"{'fmaxf' if biggest else 'fminf'}({a}, {b})"
        return f"{'max' if biggest else 'min'}({a}, {b})"

    def infinity(self, negative: bool = False) -> str:
        return "(-INFINITY)" if negative else "INFINITY"

    def nan(self) -> str:
        return "NAN"

    # ---- types, literals and conversions --------------------------------------------------
    def scalar_type(self, t: ScalarType) -> str:
        name = self.scalar_names.get(t) or self.half_names.get(t)
        if name is None:
            raise CompileError(f"{type(self).__name__} has no type for {t}")
        return name

    def element_type(self, t: Type) -> str:
        """The C type of one element of a value of type ``t``."""
        e = element_of(t)
        if isinstance(e, PointerType):
            return f"{self.scalar_type(e.pointee)}*"
        return self.scalar_type(e)

    def literal(self, value: bool | int | float, t: ScalarType) -> str:
        """A literal of type ``t`` (the op's computation type). An integer
        wraps to ``t``'s width, as the interpreter's conversion does; a float
        becomes an integer by truncation, and one with no integer value (inf,
        nan, out of range) is an error: the verifier reports it first, at
        the op."""
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
            suffix = "LL" if t == I64 else ""
            if value == low:  # -2147483648 in C is the negation of an unsigned-sized literal
                return f"({value + 1}{suffix} - 1)"
            return f"{value}{suffix}"
        v = float(value)
        if math.isnan(v):
            text = self.nan()
        elif math.isinf(v):
            text = self.infinity(v < 0)
        else:
            text = repr(v)
            if "e" not in text and "." not in text:
                text += ".0"
            text += "f"
        return text if t == F32 else self.from_float(text, t)

    def from_float(self, expr: str, t: ScalarType) -> str:
        """An f32 expression as the half type ``t``."""
        return f"({self.scalar_type(t)})({expr})"

    def to_float(self, expr: str, t: ScalarType) -> str:
        """An expression of type ``t`` as f32."""
        return expr if t == F32 else f"(float)({expr})"

    def cast(self, expr: str, source: ScalarType, target: ScalarType) -> str:
        if source == target:
            return expr
        if target in (F16, BF16):
            return self.from_float(f"(float)({expr})", target)
        if source in (F16, BF16):
            expr = f"(float)({expr})"
            if target == F32:
                return expr
        if target == BOOL:
            return f"(({expr}) != 0)"
        return f"({self.scalar_type(target)})({expr})"

    def headers(self, types: list[Type]) -> list[str]:
        """The ``#include`` lines a kernel whose values have ``types`` needs."""
        def scalar(t: Type) -> object:
            e = element_of(t)
            return e.pointee if isinstance(e, PointerType) else e

        halves = any(scalar(t) in (F16, BF16) for t in types)
        return [*(self.half_includes if halves else ()), *self.includes]
