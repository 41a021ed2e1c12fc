"""C names for what the kernel's source names: its parameters and its symbol.

A kernel or parameter name is any Python identifier, so it may be a C++
keyword (``float``), a CUDA built-in (``threadIdx``), a macro of the headers
(``INFINITY``, ``linux``), a function the generated code calls (``min``,
``expf``), one of the emitter's own locals (``k``, ``smem``, ``v3``, ``L0_p0``),
reserved (``_x``, ``a__b``) or not ASCII. Such a name is renamed in the C:
a parameter to ``pN_<name>``, the kernel's symbol to ``mytriton_<name>`` (the
JSON header then carries it as ``symbol`` for the launcher). Other names are
kept, so generated code reads like the kernel.
"""
from __future__ import annotations

import re

from mytriton.backends.cuda.atomics import ATOMIC_CALLED
from mytriton.backends.cuda.expressions import MATH_CALLED
from mytriton.backends.cuda.histogram import HISTOGRAM_CALLED
from mytriton.backends.cuda.header_names import FUNCTIONS, MACROS

KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class co_await co_return co_yield compl concept const consteval constexpr constinit
    const_cast continue decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register reinterpret_cast requires restrict
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq main
""".split())

# CUDA's built-in variables and the type names generated code may spell.
CUDA_BUILTINS = frozenset("threadIdx blockIdx blockDim gridDim warpSize half nv_bfloat16 dim3 size_t".split())

# What generated code calls or names besides locals (expressions.py, ctypes.py,
# reductions.py, dots.py): a parameter of that name would hide it.
CALLED = frozenset("""
    expf exp2f logf log2f sqrtf rsqrtf sinf cosf floorf ceilf fabsf abs llabs fmaxf fminf fmaf min max
    INFINITY NAN
""".split()) | MATH_CALLED | ATOMIC_CALLED | HISTOGRAM_CALLED

# The emitter's fixed locals; its numbered ones (v3, t1, s2, c0, r4_warps,
# L0_p0, p1_x) and prefixed ones (shared_..., mytriton_...) match the pattern.
LOCALS = frozenset("k kk i j r s w h c q row col total a_col b_row smem lane warp tid base first at".split())
_LOCAL_PATTERN = re.compile(r"[A-Za-z][0-9]+(_|$)|shared_|mytriton_")

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def param_c_names(names: list[str]) -> list[str]:
    """The C name of each parameter, in order; renamed ones are ``pN_...``
    with N the position, so they are distinct from each other and from kept
    names (which never look like ``pN_``)."""
    out = []
    for index, name in enumerate(names):
        clash = name in MACROS or name in CALLED or name in LOCALS or _LOCAL_PATTERN.match(name)
        out.append(name if _is_plain(name) and not clash else f"p{index}_{_spelled(name)}")
    return out


def kernel_symbol(name: str) -> str:
    """The kernel's C (and PTX) symbol: its name unless that could clash with
    anything the headers declare."""
    if _is_plain(name) and name not in MACROS and name not in FUNCTIONS and name not in CALLED:
        return name
    return f"mytriton_{_spelled(name)}"


def _is_plain(name: str) -> bool:
    return bool(_PLAIN.match(name)) and "__" not in name and name not in KEYWORDS and name not in CUDA_BUILTINS


def _spelled(name: str) -> str:
    """``name`` in letters, digits and single underscores (non-ASCII as uXXXX)."""
    parts = []
    for ch in name:
        if ch.isascii() and ch.isalnum():
            parts.append(ch)
        elif ch.isascii():
            parts.append("_")
        else:
            parts.append(f"_u{ord(ch):04x}_")
    spelled = re.sub("_+", "_", "".join(parts)).strip("_")
    return spelled or "arg"
