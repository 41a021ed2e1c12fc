"""What C-family GPU languages share, as one object per target.

A back end spells everything target-specific through a ``CStyleLanguage``:
type names, literals and conversions, thread and program indices, barriers,
warp shuffles, shared-memory declarations, pragmas, headers, math
functions. The base class holds the C spellings and the hooks; a target is
a subclass that overrides what differs (``backends/cuda/spelling.py``), so a
HIP or Metal target would be another subclass, as tinygrad's renderers are
small tables over one C-style base.
"""
from __future__ import annotations

import math

from mytriton.diagnostics import CompileError
from mytriton.ir import math_functions
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, PointerType, ScalarType, Type, element_of,
)


class CStyleLanguage:
    # ---- names of types --------------------------------------------------------------------
    scalar_names: dict[ScalarType, str] = {
        BOOL: "bool", I8: "signed char", I16: "short", I32: "int", I64: "long long",
        U8: "unsigned char", U16: "unsigned short", U32: "unsigned int", U64: "unsigned long long",
        F32: "float", F64: "double",
    }
    # Integer literal suffixes by type (narrower types take an int literal and a cast).
    int_suffixes: dict[ScalarType, str] = {I64: "LL", U32: "u", U64: "ull"}
    half_names: dict[ScalarType, str] = {}  # f16 and bf16, where the target has them

    # ---- the kernel and its threads ------------------------------------------------------
    kernel_prefix = "void"
    thread_id = "tid"  # the thread's index within its program (a C expression)
    warp_size = 32
    barrier = "barrier();"
    shared_prefix = "__local"
    unroll = "#pragma unroll"
    helpers: dict[str, str] = {}  # name -> definition of a function generated code may call

    # The math group's functions (tl.<name>) by op name on f32 and f64; {0}
    # is the operand. Spelled in ir/math_functions.py, one row per function.
    math_f32: dict[str, str] = math_functions.c_spellings(tl=True, f64=False)
    math_f64: dict[str, str] = math_functions.c_spellings(tl=True, f64=True)

    def math_function(self, name: str, t: ScalarType) -> str | None:
        """The spelling of math function ``name`` computing in ``t`` (f32 or f64)."""
        return (self.math_f64 if t == F64 else self.math_f32).get(name)

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

    def fma(self, a: str, b: str, c: str, t: ScalarType = F32) -> str:
        if not t.is_float:  # integer dot accumulators: wrap at the width, as the interpreter does
            return f"({self.scalar_type(t)})(({self.unsigned_of(t)})({c}) + ({self.unsigned_of(t)})(({a}) * ({b})))"
        return f"{'fma' if t == F64 else 'fmaf'}({a}, {b}, {c})"

    def unsigned_of(self, t: ScalarType) -> str:
        return "unsigned long long" if t.bits == 64 else "unsigned int"

    # ---- tl.dot's operand precisions (opdefs.DOT_INPUT_PRECISIONS) ------------------------------
    def round_tf32(self, target: str, value: str) -> str:
        """A statement setting the float ``target`` to the f32 ``value``
        rounded to TF32 (to nearest, ties away from zero): tf32x3's split."""
        raise CompileError(f"{type(self).__name__} has no TF32 rounding")

    def truncate_tf32(self, target: str, value: str) -> str:
        """A statement setting the float ``target`` to the f32 ``value`` as
        the tensor cores read a TF32 operand: the low 13 mantissa bits cleared."""
        raise CompileError(f"{type(self).__name__} has no TF32 truncation")

    def is_nan(self, x: str) -> str:
        return f"(({x}) != ({x}))"

    def abs(self, x: str, t: ScalarType) -> str:
        if t.is_float:
            return f"{'fabs' if t == F64 else 'fabsf'}({x})"
        if t.unsigned:
            return x
        return f"llabs({x})" if t == I64 else f"abs({x})"

    def min_max(self, name: str, a: str, b: str, t: ScalarType) -> str:
        """``name`` is "maximum"/"max" or "minimum"/"min" (a NaN loses to a number)."""
        biggest = name.startswith("max")
        if t.is_float:
            suffix = "" if t == F64 else "f"
            return f"{'fmax' if biggest else 'fmin'}{suffix}({a}, {b})"
        return f"{'max' if biggest else 'min'}({a}, {b})"

    def min_max_nan(self, name: str, a: str, b: str, t: ScalarType) -> str:
        """``min_max``, but NaN when either operand is NaN (PropagateNan.ALL);
        ``a + b`` is that NaN."""
        plain = self.min_max(name, a, b, t)
        if not t.is_float:
            return plain
        return f"((({a}) != ({a}) || ({b}) != ({b})) ? (({a}) + ({b})) : {plain})"

    def clamp(self, x: str, lo: str, hi: str, t: ScalarType, propagate_nan: bool) -> str:
        """min(max(x, lo), hi); with ``propagate_nan`` a NaN ``x`` stays NaN."""
        plain = self.min_max("min", self.min_max("max", x, lo, t), hi, t)
        return f"((({x}) != ({x})) ? ({x}) : {plain})" if propagate_nan else plain

    def div_rn(self, a: str, b: str, t: ScalarType) -> str:
        """IEEE division rounded to nearest even (C's ``/`` on floats)."""
        return f"({a} / {b})"

    def umulhi(self, a: str, b: str, t: ScalarType) -> str:
        """The high half of the unsigned product of two 32- or 64-bit integers."""
        if t.bits == 32:
            return f"(unsigned int)(((unsigned long long)(unsigned int)({a}) * (unsigned int)({b})) >> 32)"
        return f"(unsigned long long)(((unsigned __int128)(unsigned long long)({a}) * (unsigned long long)({b})) >> 64)"

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
            suffix = self.int_suffixes.get(t, "")
            if value == low and not t.unsigned and t.bits >= 32:
                # -2147483648 in C is the negation of an unsigned-sized literal
                return f"({value + 1}{suffix} - 1)"
            if t.bits < 32:  # C has no literals of narrow types: an int, converted
                return f"(({self.scalar_type(t)}){value})"
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
            if t == F64:
                return text  # an unsuffixed C literal is a double
            text += "f"
        if t == F64:
            return f"((double){text})"  # NaN or infinity
        if t == F32:
            return text
        return self.half_literal(v, t) if math.isfinite(v) else self.from_float(text, t)

    def half_literal(self, value: float, t: ScalarType) -> str:
        """A finite literal of the half type ``t``: the f32 literal converted."""
        return self.from_float(f"{value!r}f", t)

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
            return self.from_float(self.to_float(expr, source) if source in (F16, BF16) else f"(float)({expr})",
                                   target)
        if source in (F16, BF16):
            expr = self.to_float(expr, source)
            if target == F32:
                return expr
        if target == BOOL:
            return f"(({expr}) != 0)"
        return f"({self.scalar_type(target)})({expr})"

    def preamble(self, types: list[Type]) -> list[str]:
        """What a kernel whose values have ``types`` needs before its own code:
        the definitions of the half types it uses (generated code includes no header)."""
        def scalar(t: Type) -> object:
            e = element_of(t)
            return e.pointee if isinstance(e, PointerType) else e

        present = {scalar(t) for t in types}
        return list(self.half_definitions(present & {F16, BF16}))

    def half_definitions(self, halves: set[ScalarType]) -> tuple[str, ...]:
        """What a kernel with values of ``halves`` (f16, bf16) needs before its own code: none here."""
        return ()
