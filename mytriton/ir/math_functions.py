"""The elementwise math functions, one row each: every name and spelling of
a function that the compiler knows.

A row gives the op (``tl.<name>`` when ``tl`` is set, ``libdevice.<name>``
unless ``libdevice`` is off), its NumPy semantics (constant folding and the
interpreter share them), and what each back end writes for it: the C
function on f32 and f64 (the CUDA math library's), the upstream MLIR op, and
the libdevice symbol Triton's ``tt.extern_elementwise`` names. Most spellings
follow from the name (``{name}f(x)``, ``{name}(x)``, ``math.{name}``,
``__nv_{name}f``/``__nv_{name}``); a row spells out only what differs. The op
table (ir/opdefs.py), ``tl`` and ``tl.math``, tensor methods, libdevice's
namespace and the CUDA, MLIR and TTIR back ends all read this table, so a
new function is one row here (docs/adding_an_op.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

Semantics = Callable[..., Any]

LOG2E_F32 = "1.44269504088896341f"  # log2(e), which exp(x) = exp2(x * log2(e)) scales by
# The CUDA back end's f32 division (div.full.f32, within 2 ulp over the full
# range), as Triton's ``/``; generated code defines it where it calls it.
DIV_FULL_F32 = "__mytriton_div_full"
# The CUDA back end's f32 exp2: ex2.approx.ftz.f32, as Triton's NVIDIA lowering
# of tl.exp2 (exp2f keeps subnormal results: a compare and two multiplies more
# an element, a fifth of an attention loop's instructions).
EX2_FTZ_F32 = "__mytriton_ex2_ftz"
FoldGuard = Callable[..., bool]


@dataclass(frozen=True)
class MathFunction:
    name: str
    semantics: Semantics  # NumPy's: ``lambda np, x: np.exp(x)``
    doc: str = ""  # the op reference's line (the tl group shares one, see ``tl``)
    operands: int = 1
    # tl.<name> and tl.math.<name> (the op table's math group); the rest are
    # reached only as libdevice.<name>, as in Triton.
    tl: bool = False
    method: bool = False  # x.<name>() too, one of Triton's tensor member functions
    # Only a function whose device result is exact folds.
    folds: bool = False
    fold_refuses: FoldGuard | None = None  # operands whose result C leaves undefined
    answers: str = "float"  # "float" (its operands' type), "bool" (a predicate) or "i64"
    # C on f32 and f64, {0} and {1} the operands; None: f"{name}f(...)" and f"{name}(...)".
    c_f32: str | None = None
    c_f64: str | None = None
    # The CUDA back end's f32 spelling where it computes as Triton's NVIDIA
    # lowering does (a PTX approximation, not the C library's careful
    # function); None: ``c_f32``.
    cuda_f32: str | None = None
    # The upstream MLIR op; None: f"math.{name}". ``mlir_refused`` says why
    # upstream has none; ``expanded`` is a formula both MLIR back ends write out.
    mlir: str | None = None
    mlir_refused: str | None = None
    expanded: str | None = None
    # Triton's own op where its front end writes one (tt.precise_sqrt); None: the MLIR op.
    ttir: str | None = None
    # libdevice's symbols on f32 and f64; None: (f"__nv_{name}f", f"__nv_{name}").
    nv_symbols: tuple[str, str] | None = None
    # Where Triton's front end writes tl.<name> as libdevice's symbol, not a math op.
    triton_extern: bool = False
    libdevice: bool = True  # libdevice.<name> (tl.extra.libdevice) reaches it
    libdevice_dtypes: tuple[tuple[str, ...], ...] | None = None  # None: each operand f32, or each f64
    libdevice_aliases: tuple[str, ...] = ()  # more libdevice names for the same op

    def c(self, f64: bool, cuda: bool = False) -> str:
        """The C spelling computing in f64 (else f32); ``cuda``: the CUDA back end's."""
        spelled = self.c_f64 if f64 else (self.cuda_f32 if cuda and self.cuda_f32 else self.c_f32)
        if spelled is not None:
            return spelled
        args = ", ".join(f"{{{i}}}" for i in range(self.operands))
        return f"{self.name}{'' if f64 else 'f'}({args})"

    @property
    def mlir_op(self) -> str:
        return self.mlir or f"math.{self.name}"

    def symbol(self, f64: bool) -> str:
        """libdevice's symbol computing in f64 (else f32)."""
        f32_symbol, f64_symbol = self.nv_symbols or (f"__nv_{self.name}f", f"__nv_{self.name}")
        return f64_symbol if f64 else f32_symbol

    @property
    def dtypes(self) -> tuple[tuple[str, ...], ...]:
        """The dtype names libdevice.<name> accepts, one tuple per signature."""
        if self.libdevice_dtypes is not None:
            return self.libdevice_dtypes
        return tuple((t,) * self.operands for t in ("f32", "f64"))


# ---- semantics that NumPy has no one function for ------------------------------------------


def _erf(np: Any, x: Any) -> Any:
    """erf, which NumPy lacks: the double-precision libm's, rounded to ``x``'s type."""
    dtype = np.result_type(x)
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(dtype)


def _round_half_away(np: Any, x: Any) -> Any:
    """C's round: halves away from zero (NumPy's round is to even). The
    fraction ``a - floor(a)`` of a float is exact, so this is exact."""
    a = np.abs(x)
    whole = np.floor(a)
    up = (a - whole) >= np.asarray(0.5, dtype=np.result_type(x))
    return np.copysign(whole + up.astype(whole.dtype), x)


def _erfinv_scalar(y: float) -> float:
    """The inverse of erf in double precision: Giles' single-precision
    approximation, refined by Newton steps on erf (on erfc near +-1, where
    ``1 - |y|`` is exact and erf has no digits left)."""
    if y != y or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a = abs(y)
    w = -math.log((1 - a) * (1 + a))
    if w < 5:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    x = p * a
    slope = 2 / math.sqrt(math.pi)
    for _ in range(4):
        err = math.erf(x) - a if a < 0.5 else (1 - a) - math.erfc(x)
        x -= err / (slope * math.exp(-x * x))
    return math.copysign(x, y)


def _erfinv(np: Any, x: Any) -> Any:
    dtype = np.result_type(x)
    return np.vectorize(_erfinv_scalar, otypes=[np.float64])(x).astype(dtype)


def _llrint(np: Any, x: Any) -> Any:
    """To the nearest integer, ties to even, as i64. Out of range and NaN
    are undefined in C; the device (cvt.rni.s64, which llrintf is)
    saturates, and gives i64's smallest value for NaN (seen on the H200),
    and so does this."""
    r = np.rint(np.asarray(x, dtype=np.float64))
    inside = (r >= -2.0**63) & (r < 2.0**63)
    whole = np.where(inside, r, 0).astype(np.int64)
    return np.where(inside, whole, np.where(r > 0, np.int64(2**63 - 1), np.int64(-2**63)))


def _fmod_undefined(a: Any, b: Any) -> bool:
    return b == 0 or a != a or b != b or a in (math.inf, -math.inf)


# ---- the table -----------------------------------------------------------------------------------

TABLE: tuple[MathFunction, ...] = (
    # tl.<name>: computed in f32 at least (f64 stays f64).
    # Triton's NVIDIA lowering of f32 exp: ex2.approx of x * log2(e), which
    # exp2f is on sm_90 (expf's range reduction costs a memory-bound kernel,
    # such as a softmax, twice its time). libdevice.exp is this op too.
    MathFunction("exp", lambda np, x: np.exp(x), tl=True, method=True,
                 cuda_f32=f"exp2f(({{0}}) * {LOG2E_F32})"),
    MathFunction("exp2", lambda np, x: np.exp2(x), tl=True, method=True, cuda_f32=f"{EX2_FTZ_F32}({{0}})"),
    MathFunction("log", lambda np, x: np.log(x), tl=True, method=True),
    MathFunction("log2", lambda np, x: np.log2(x), tl=True, method=True),
    MathFunction("sqrt", lambda np, x: np.sqrt(x), tl=True, method=True),
    MathFunction("rsqrt", lambda np, x: 1 / np.sqrt(x), tl=True, method=True),
    # tl.sqrt_rn: the square root rounded to nearest, as the IEEE standard has
    # it, whatever the build's flags (Triton's tt.precise_sqrt; its tl.sqrt
    # may approximate). mytriton's tl.sqrt rounds so too.
    MathFunction("sqrt_rn", lambda np, x: np.sqrt(x), tl=True, c_f32="sqrtf({0})", c_f64="sqrt({0})",
                 cuda_f32="__fsqrt_rn({0})", mlir="math.sqrt", ttir="tt.precise_sqrt",
                 nv_symbols=("__nv_fsqrt_rn", "__nv_dsqrt_rn")),
    MathFunction("sin", lambda np, x: np.sin(x), tl=True, method=True),
    MathFunction("cos", lambda np, x: np.cos(x), tl=True, method=True),
    MathFunction("floor", lambda np, x: np.floor(x), tl=True, method=True, folds=True),
    MathFunction("ceil", lambda np, x: np.ceil(x), tl=True, method=True, folds=True),
    MathFunction("sigmoid", lambda np, x: 1 / (1 + np.exp(-x)), tl=True, method=True, libdevice=False,
                 c_f32="(1.0f / (1.0f + expf(-({0}))))", c_f64="(1.0 / (1.0 + exp(-({0}))))",
                 cuda_f32=f"{DIV_FULL_F32}(1.0f, 1.0f + exp2f(-({{0}}) * {LOG2E_F32}))",
                 expanded="1 / (1 + math.exp(-x))"),
    MathFunction("erf", _erf, tl=True, method=True),
    MathFunction("tanh", lambda np, x: np.tanh(x), tl=True, triton_extern=True),
    # libdevice.<name> only.
    MathFunction("erfinv", _erfinv, "the inverse error function (erfinvf / erfinv)",
                 mlir_refused="libdevice's erfinv has no upstream MLIR op (math has erf, not its inverse)"),
    MathFunction("log1p", lambda np, x: np.log1p(x), "log(1 + x), accurate for small x (log1pf)"),
    MathFunction("expm1", lambda np, x: np.expm1(x), "exp(x) - 1, accurate for small x (expm1f)"),
    MathFunction("round", _round_half_away, "x to the nearest integer, halves away from zero (roundf)", folds=True),
    MathFunction("trunc", lambda np, x: np.trunc(x), "x rounded toward zero (truncf)", folds=True),
    MathFunction("rint", lambda np, x: np.rint(x), "x to the nearest integer, halves to even (rintf)", folds=True,
                 mlir="math.roundeven", libdevice_aliases=("nearbyint",)),
    MathFunction("sinh", lambda np, x: np.sinh(x), "the hyperbolic sine (sinhf)"),
    MathFunction("cosh", lambda np, x: np.cosh(x), "the hyperbolic cosine (coshf)"),
    MathFunction("tan", lambda np, x: np.tan(x), "the tangent (tanf)"),
    MathFunction("asin", lambda np, x: np.arcsin(x), "the arc sine (asinf)"),
    MathFunction("acos", lambda np, x: np.arccos(x), "the arc cosine (acosf)"),
    MathFunction("atan", lambda np, x: np.arctan(x), "the arc tangent (atanf)"),
    MathFunction("asinh", lambda np, x: np.arcsinh(x), "the inverse hyperbolic sine (asinhf)"),
    MathFunction("acosh", lambda np, x: np.arccosh(x), "the inverse hyperbolic cosine (acoshf)"),
    MathFunction("atanh", lambda np, x: np.arctanh(x), "the inverse hyperbolic tangent (atanhf)"),
    MathFunction("log10", lambda np, x: np.log10(x), "the base-10 logarithm (log10f)"),
    MathFunction("cbrt", lambda np, x: np.cbrt(x), "the cube root (cbrtf)"),
    # The approximation is the lowering's business, as for tl.exp; libdevice
    # has it on f32 only, and f64 IR computes exactly.
    MathFunction("fast_expf", lambda np, x: np.exp(x),
                 "exp(x) by the hardware's approximation (__expf; the interpreter computes exp)",
                 c_f32="__expf({0})", c_f64="exp({0})", mlir="math.exp", nv_symbols=("__nv_fast_expf", "__nv_exp"),
                 libdevice_dtypes=(("f32",),)),
    MathFunction("pow", lambda np, a, b: np.power(a, b), "x ** y (powf / pow)", operands=2, mlir="math.powf",
                 libdevice_dtypes=(("f32", "f32"), ("f64", "f64"), ("f32", "i32"), ("f64", "i32"))),
    MathFunction("atan2", lambda np, a, b: np.arctan2(a, b), "the angle of the point (x=rhs, y=lhs) (atan2f)",
                 operands=2),
    MathFunction("fmod", lambda np, a, b: np.fmod(a, b), "the remainder of lhs / rhs with lhs's sign, exactly (fmodf)",
                 operands=2, folds=True, fold_refuses=_fmod_undefined, mlir="arith.remf"),
    MathFunction("hypot", lambda np, a, b: np.hypot(a, b), "sqrt(x * x + y * y) without overflow (hypotf)",
                 operands=2, mlir_refused="libdevice's hypot has no upstream MLIR op (math.sqrt of x * x + y * y "
                                          "would overflow where hypot does not)"),
    MathFunction("copysign", lambda np, a, b: np.copysign(a, b), "|lhs| with rhs's sign (copysignf)", operands=2,
                 folds=True),
    MathFunction("fast_dividef", lambda np, a, b: np.true_divide(a, b),
                 "lhs / rhs by the hardware's approximation (__fdividef; the interpreter divides exactly)",
                 operands=2, c_f32="__fdividef({0}, {1})", c_f64="({0} / {1})", mlir="arith.divf",
                 nv_symbols=("__nv_fast_fdividef", "__nv_ddiv_rn"), libdevice_dtypes=(("f32", "f32"),)),
    # Predicates: a bool per element (libdevice answers an int32, which Triton compares with 0).
    MathFunction("isnan", lambda np, x: np.isnan(x), "whether x is NaN, a bool per element (isnan)",
                 answers="bool", c_f32="((bool)isnan({0}))", c_f64="((bool)isnan({0}))",
                 nv_symbols=("__nv_isnanf", "__nv_isnand")),
    MathFunction("isinf", lambda np, x: np.isinf(x), "whether x is an infinity, a bool per element (isinf)",
                 answers="bool", c_f32="((bool)isinf({0}))", c_f64="((bool)isinf({0}))",
                 nv_symbols=("__nv_isinff", "__nv_isinfd")),
    MathFunction("signbit", lambda np, x: np.signbit(x),
                 "whether x's sign bit is set (-0.0 and -NaN too), a bool (signbit)",
                 answers="bool", c_f32="((bool)signbit({0}))", c_f64="((bool)signbit({0}))",
                 nv_symbols=("__nv_signbitf", "__nv_signbitd")),
    MathFunction("llrint", _llrint,
                 "x to the nearest integer (halves to even) as i64, saturating, NaN i64 min (llrintf)", answers="i64"),
)

BY_NAME: dict[str, MathFunction] = {row.name: row for row in TABLE}
TL_FUNCTIONS = tuple(row.name for row in TABLE if row.tl)
LIBDEVICE_ONLY = tuple(row.name for row in TABLE if not row.tl)


def c_spellings(tl: bool, f64: bool, cuda: bool = False) -> dict[str, str]:
    """The C spelling of each function of the tl group (or of the others);
    ``cuda``: the CUDA back end's."""
    return {row.name: row.c(f64, cuda) for row in TABLE if row.tl == tl}
