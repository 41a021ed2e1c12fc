"""``libdevice``: Triton's ``tl.extra.libdevice`` (also
``triton.language.extra.cuda.libdevice``), the CUDA math library's functions
by their libdevice names.

As with ``mytriton.language``, kernels are never run by Python: the frontend
reads ``libdevice.<name>(...)`` and makes the op ``FUNCTIONS`` names
(frontend/builtins.py). Each function takes the dtypes Triton's libdevice
table gives it (f32 and f64 for most; a Python float is an f32, a Python int
an i32); anything else is a located error, as Triton's "input arg type does
not match". The math functions among them, their semantics and every
back end's spelling are rows of ir/math_functions.py.
"""
from __future__ import annotations

from mytriton.ir import math_functions
from mytriton.language.host_stubs import outside_kernel
from mytriton.types import F32, F64, I32, I64

_DTYPES = {"f32": F32, "f64": F64, "i32": I32}
_F = ((F32,), (F64,))
_FF = ((F32, F32), (F64, F64))

# libdevice name: (op, the operand dtypes Triton's table accepts). The math
# functions come from their rows (ir/math_functions.py); the rest are
# libdevice's names for ops of other groups.
SIGNATURES: dict[str, tuple[str, tuple[tuple, ...]]] = {
    **{name: (row.name, tuple(tuple(_DTYPES[d] for d in s) for s in row.dtypes))
       for row in math_functions.TABLE if row.libdevice for name in (row.name, *row.libdevice_aliases)},
    "abs": ("abs", ((I32,), (I64,), (F32,), (F64,))),
    "fabs": ("abs", _F),
    "fmax": ("maximum", _FF),
    "fmin": ("minimum", _FF),
    "fma": ("fma", ((F32, F32, F32), (F64, F64, F64))),
    "div_rn": ("div_rn", _FF),
}

FUNCTIONS = tuple(SIGNATURES)

# The qualified paths a kernel reaches this module by, and the namespaces above it.
MODULE_PATHS = ("mytriton.language.extra.libdevice", "mytriton.language.extra.cuda.libdevice")
NAMESPACES = ("mytriton.language.extra", "mytriton.language.extra.cuda", *MODULE_PATHS)


def function_name(qualified: str) -> str | None:
    """``mytriton.language.extra[.cuda].libdevice.NAME`` -> ``NAME``; None
    for any other path (the name may still be unknown: check FUNCTIONS)."""
    for path in MODULE_PATHS:
        if qualified.startswith(path + "."):
            return qualified[len(path) + 1:]
    return None


for _name in FUNCTIONS:
    globals()[_name] = outside_kernel(__name__, _name, f"libdevice.{_name}")

__all__ = list(FUNCTIONS)
