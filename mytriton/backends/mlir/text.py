"""Printing helpers shared by the MLIR-family emitters: string literals,
locations, types, constants, and a writer of indented, located lines with
fresh SSA names.

Everything here follows MLIR's textual syntax, which xDSL's parser reads too:
strings escape '"', '\\' and the bytes of unprintable characters as ``\\XX``;
a float literal always has a '.' (``1.0e-05``), and infinities and NaNs are
hexadecimal bit patterns; integers are printed as signed values of their width.
"""
from __future__ import annotations

import math
import struct
from typing import Iterator

from mytriton.diagnostics import Location
from mytriton.types import BOOL, ScalarType


def mlir_string(text: str) -> str:
    """``text`` as an MLIR string literal: '"' and '\\' escaped, printable
    characters (non-ASCII ones too, as UTF-8) as themselves, and the bytes of
    any other character as ``\\XX``. (xDSL reads an escaped byte above 0x7F
    as a bytes literal, which no location takes: printable text stays readable
    to both.)"""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(ch)
        else:
            out.extend(f"\\{byte:02X}" for byte in ch.encode("utf-8", "backslashreplace"))
    return '"' + "".join(out) + '"'


def mlir_loc(loc: Location | None) -> str:
    """``loc("file":line:col)``, or ``loc(unknown)`` for an op without one."""
    if loc is None:
        return "loc(unknown)"
    return f"loc({mlir_string(loc.file)}:{loc.line}:{loc.col})"


def scalar_type(t: ScalarType) -> str:
    """MLIR's spelling of a scalar: integers are signless (the op says how
    they are read), bool is i1."""
    if t == BOOL:
        return "i1"
    if t.is_int:
        return f"i{t.bits}"
    return t.name  # f16, bf16, f32, f64


def vector_type(shape: tuple[int, ...], element: str) -> str:
    return f"vector<{'x'.join(str(d) for d in shape)}x{element}>"


def shaped(shape: tuple[int, ...], element: str) -> str:
    """The element type itself for a scalar (empty shape), else a vector of it."""
    return vector_type(shape, element) if shape else element


_FLOAT_BITS = {"f16": ("e", "H", 16), "f32": ("f", "I", 32), "f64": ("d", "Q", 64)}


def _float_bits(value: float, name: str) -> int:
    if name == "bf16":  # f32's upper half, rounded to nearest even
        bits = _float_bits(value, "f32")
        if math.isnan(value):
            return 0x7FC0
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    fmt, ifmt, _ = _FLOAT_BITS[name]
    try:
        packed = struct.pack("<" + fmt, value)
    except (OverflowError, struct.error):
        packed = struct.pack("<" + fmt, math.copysign(math.inf, value))
    return struct.unpack("<" + ifmt, packed)[0]


def _round_to(value: float, name: str) -> float:
    """``value`` rounded to the float type ``name`` (inf beyond its range)."""
    bits = _float_bits(value, name)
    if name == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    fmt, ifmt, _ = _FLOAT_BITS[name]
    return struct.unpack("<" + fmt, struct.pack("<" + ifmt, bits))[0]


def float_literal(value: float, name: str) -> str:
    """A float attribute's value for type ``name``: decimal when finite (the
    exact value after rounding to the type), else the bit pattern in hex."""
    rounded = _round_to(float(value), name)
    if math.isfinite(rounded):
        text = repr(rounded)
        mantissa, _, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + ("e" + exponent if exponent else "")
    width = 16 if name in ("f16", "bf16") else _FLOAT_BITS[name][2]
    return f"0x{_float_bits(float(value), name):0{width // 4}X}"


def int_literal(value: int, bits: int) -> str:
    """``value`` wrapped to ``bits`` and printed signed (signless integers)."""
    value &= (1 << bits) - 1
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    return str(value)


def literal(value: bool | int | float, t: ScalarType) -> str:
    """The text of an attribute holding ``value`` converted to ``t``."""
    if t == BOOL:
        return "true" if bool(value) else "false"
    if t.is_int:
        return int_literal(int(value), t.bits)
    return float_literal(float(value), t.name)


class Writer:
    """Indented lines of MLIR, each op ending in its location, with fresh
    numbered SSA names (``%0``, ``%1``, ...; parameters keep their own)."""

    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.depth = indent
        self._next = 0

    def fresh(self) -> str:
        name = f"%{self._next}"
        self._next += 1
        return name

    def line(self, text: str, loc: Location | None = None, located: bool = True) -> None:
        suffix = f" {mlir_loc(loc)}" if located else ""
        self.lines.append("  " * self.depth + text + suffix)

    def op(self, text: str, loc: Location | None, results: int = 1) -> str | list[str]:
        """Write ``<results> = text loc(...)``; returns the result name (or
        names, for ``results != 1``)."""
        if results == 0:
            self.line(text, loc)
            return []
        if results == 1:
            name = self.fresh()
            self.line(f"{name} = {text}", loc)
            return name
        name = self.fresh()
        self.line(f"{name}:{results} = {text}", loc)
        return [f"{name}#{i}" for i in range(results)]

    def nested(self) -> "_Nested":
        return _Nested(self)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Nested:
    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    def __enter__(self) -> Writer:
        self.writer.depth += 1
        return self.writer

    def __exit__(self, *exc: object) -> None:
        self.writer.depth -= 1


def joined(items: Iterator[str] | list[str]) -> str:
    return ", ".join(items)


def conversion_op(source: ScalarType, target: ScalarType) -> str | None:
    """The arith op converting ``source`` values to ``target`` ones (not bool,
    which compares with zero, nor f16 <-> bf16, which goes through f32), as C
    and Triton convert: from bool as 0 or 1, integers by their signedness,
    floats to integers toward zero; None where the bits stay (signless ints
    of one width)."""
    if source == BOOL:
        return "arith.uitofp" if target.is_float else "arith.extui"
    if source.is_int and target.is_int:
        if source.bits == target.bits:
            return None
        if source.bits < target.bits:
            return "arith.extui" if source.unsigned else "arith.extsi"
        return "arith.trunci"
    if source.is_int:
        return "arith.uitofp" if source.unsigned else "arith.sitofp"
    if target.is_int:
        return "arith.fptoui" if target.unsigned else "arith.fptosi"
    return "arith.extf" if source.bits < target.bits else "arith.truncf"

