"""The type system shared by every IR and backend.

Scalars (``i32``, ``f32``, ``bool``, ...), pointers to scalars (``ptr<f32>``)
and blocks of either: ``vector<256 x f32>`` for rank 1, ``block<64x32 x f32>``
for rank 2 and up. Python literals in kernels are *weak*: they take the type of
what they meet (``x * 2.0`` keeps ``x``'s f16), as in Triton.

``shared<64x32 x f32>`` is a buffer in the shared memory of a program (a CUDA
block), which the stage-dots pass allocates: physical storage, not a value
that arithmetic reads.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class ScalarType:
    name: str  # as printed in IR
    kind: str  # "bool", "int" or "float"
    bits: int
    # Unsigned integers (u8, u32...) wrap modulo 2**bits and compare,
    # divide and shift as C's unsigned types do.
    unsigned: bool = False

    def __str__(self) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def nbytes(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer type (two's complement,
        or 0 to 2**bits - 1 unsigned)."""
        if self.unsigned:
            return 0, 2 ** self.bits - 1
        return -2 ** (self.bits - 1), 2 ** (self.bits - 1) - 1


BOOL = ScalarType("bool", "bool", 1)
I8 = ScalarType("i8", "int", 8)
I16 = ScalarType("i16", "int", 16)
I32 = ScalarType("i32", "int", 32)
I64 = ScalarType("i64", "int", 64)
U8 = ScalarType("u8", "int", 8, unsigned=True)
U16 = ScalarType("u16", "int", 16, unsigned=True)
U32 = ScalarType("u32", "int", 32, unsigned=True)
U64 = ScalarType("u64", "int", 64, unsigned=True)
F16 = ScalarType("f16", "float", 16)
BF16 = ScalarType("bf16", "float", 16)
F32 = ScalarType("f32", "float", 32)
F64 = ScalarType("f64", "float", 64)

SCALARS: dict[str, ScalarType] = {t.name: t for t in (
    BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64)}


@dataclass(frozen=True)
class PointerType:
    pointee: ScalarType

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Element = ScalarType | PointerType


@dataclass(frozen=True)
class BlockType:
    shape: tuple[int, ...]
    element: Element
    # How the tile is spread over a program's threads (mytriton.ir.layout_attributes),
    # once the layouts stage has decided; None before.
    layout: Any = None

    def __str__(self) -> str:
        return self.text(None if self.layout is None else self.layout.text())

    def text(self, layout: str | None) -> str:
        """The type, its layout spelled ``layout`` (an alias, or inline)."""
        suffix = "" if layout is None else f", {layout}"
        if len(self.shape) == 1:
            return f"vector<{self.shape[0]} x {self.element}{suffix}>"
        dims = "x".join(str(d) for d in self.shape)
        return f"block<{dims} x {self.element}{suffix}>"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class SharedType:
    """A row-major ``rows x columns`` buffer of scalars in a program's shared
    memory. Only the ops made for it (``copy_to_shared``, ``dot_shared``)
    take one as an operand."""

    shape: tuple[int, int]
    element: ScalarType
    layout: Any = None  # mytriton.ir.layout_attributes.PaddedShared, once laid out

    def __str__(self) -> str:
        return self.text(None if self.layout is None else self.layout.text())

    def text(self, layout: str | None) -> str:
        suffix = "" if layout is None else f", {layout}"
        return f"shared<{self.shape[0]}x{self.shape[1]} x {self.element}{suffix}>"

    @property
    def numel(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return self.numel * self.element.nbytes

    @property
    def allocated_bytes(self) -> int:
        """The bytes it takes in shared memory, its layout's row padding included
        (a column-major buffer's: its transpose's rows, each padded)."""
        rows, cols = self.shape[::-1] if getattr(self.layout, "transposed", False) else self.shape
        pitch = self.layout.row_pitch(cols) if self.layout is not None else cols
        return rows * pitch * self.element.nbytes


@dataclass(frozen=True)
class WeakType:
    """The type of a Python literal before it meets a typed value."""

    kind: str  # "int" or "float"

    def __str__(self) -> str:
        return f"literal {self.kind}"

    @property
    def default(self) -> ScalarType:
        return I32 if self.kind == "int" else F32


WEAK_INT = WeakType("int")
WEAK_FLOAT = WeakType("float")


def int_literal_type(value: int) -> "WeakType | ScalarType | None":
    """The type of an integer literal, as Triton types a Python int: a weak
    int if it fits i32; u32 in [2**31, 2**32); i64 if it fits i64; u64 in
    [2**63, 2**64); None beyond (no type holds it). So ``x_u32 * 2654435761``
    wraps at 32 bits, as a hash written for Triton expects."""
    if -2**31 <= value < 2**31:
        return WEAK_INT
    if 2**31 <= value < 2**32:
        return U32
    if -2**63 <= value < 2**63:
        return I64
    if 2**63 <= value < 2**64:
        return U64
    return None

Type = ScalarType | PointerType | BlockType | SharedType | WeakType

# Triton's AOT signature names of the scalar types.
SIGNATURE_NAMES = {F16: "fp16", BF16: "bf16", F32: "fp32", F64: "fp64", I8: "i8", I16: "i16", I32: "i32",
                   I64: "i64", U8: "u8", U16: "u16", U32: "u32", U64: "u64", BOOL: "i1"}


@dataclass(frozen=True)
class DescriptorParam:
    """The type of a kernel parameter passed a host tensor descriptor
    (Triton's ``TensorDescriptor``): in a signature only, spelled as Triton
    spells it, ``tensordesc<fp16[64, 64]>`` (``, i64`` where the shape or a
    stride needs 64 bits, ``, nan`` for NaN padding). The frontend gives the
    kernel one parameter per part: the base pointer (16-byte aligned, as
    Triton's descriptor requires), the shape, and the strides but the last
    (which is 1); each stride spans a multiple of 16 bytes."""

    element: ScalarType
    block_shape: tuple[int, ...]
    index: ScalarType = I32  # the shape's and the strides' integer type
    padding: str = "zero"

    def __str__(self) -> str:
        options = ("" if self.index == I32 else f", {self.index}") + ("" if self.padding == "zero" else ", nan")
        return f"tensordesc<{SIGNATURE_NAMES[self.element]}[{', '.join(map(str, self.block_shape))}]{options}>"

    def parts(self, name: str) -> list[tuple[str, "ScalarType | PointerType"]]:
        """The kernel's parameters for a descriptor parameter ``name``, in order."""
        rank = len(self.block_shape)
        return [(name, PointerType(self.element)),
                *((f"{name}_shape{d}", self.index) for d in range(rank)),
                *((f"{name}_stride{d}", self.index) for d in range(rank - 1))]

    def facts(self, name: str) -> dict[str, dict[str, int]]:
        """What the descriptor's alignment rules prove of its parts (``divisibility``)."""
        stride = 16 // self.element.nbytes
        facts = {name: {"divisibility": 16}}
        if stride > 1:
            facts.update({f"{name}_stride{d}": {"divisibility": stride} for d in range(len(self.block_shape) - 1)})
        return facts


def element_of(t: Type) -> Element | WeakType:
    return t.element if isinstance(t, BlockType) else t


def shape_of(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, BlockType) else ()


def with_element(shape: tuple[int, ...], element: Element) -> Type:
    return BlockType(shape, element) if shape else element


def without_layout(t: Type) -> Type:
    """``t`` as the type rules see it: tiles without their layout."""
    if isinstance(t, (BlockType, SharedType)) and t.layout is not None:
        return replace(t, layout=None)
    return t


def concrete(t: Type) -> Type:
    """Resolve a weak literal type to its default (i32 or f32)."""
    return t.default if isinstance(t, WeakType) else t


class TypeRuleError(Exception):
    """A type rule was broken; the caller attaches the location."""


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting: align on the right, dims of 1 stretch."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for i, d in enumerate(padded):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
                continue
            pretty = ", ".join(_shape_str(s) for s in shapes)
            raise TypeRuleError(f"shapes {pretty} do not broadcast")
    return tuple(out)


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]" if shape else "scalar"


_FLOAT_RANK = {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}


def promote(a: ScalarType | WeakType, b: ScalarType | WeakType) -> ScalarType | WeakType:
    """The element type two arithmetic operands compute in: Triton's
    ``computation_type_impl`` and ``integer_promote_impl``. The wider float
    wins (f64, then f32, then f16, which beats bf16 too; bf16 with an integer
    gives f32); a float beats any integer; of two
    integers of one signedness the wider wins, and of mixed signedness the
    unsigned one unless the signed one is strictly wider (C's usual
    arithmetic conversions, without C's promotion of narrow types to int:
    i8 + i8 stays i8). A weak literal takes the other operand's type."""
    if isinstance(a, WeakType) and isinstance(b, WeakType):
        return WEAK_FLOAT if "float" in (a.kind, b.kind) else WEAK_INT
    if isinstance(a, WeakType):
        a, b = b, a
    assert isinstance(a, ScalarType)
    if isinstance(b, WeakType):
        if b.kind == "float" and not a.is_float:
            return F32
        if a.is_bool:
            return I32 if b.kind == "int" else F32
        return a
    if a == b:
        return a
    if a.is_float or b.is_float:
        # Triton's computation_type_impl: f32 wins, then f16 (over bf16
        # too); bf16 stays bf16 only with bf16, so bf16 and an integer give f32.
        if a.is_float and b.is_float:
            if {a.name, b.name} == {"f16", "bf16"}:
                return F16
            return a if _FLOAT_RANK[a.name] >= _FLOAT_RANK[b.name] else b
        f = a if a.is_float else b
        return F32 if f == BF16 else f
    # Both integer or bool; bool counts as the narrowest.
    if a.unsigned == b.unsigned:
        return a if a.bits >= b.bits else b
    unsigned, signed = (a, b) if a.unsigned else (b, a)
    return signed if signed.bits > unsigned.bits else unsigned


def mixed_signedness(a: ScalarType | WeakType, b: ScalarType | WeakType) -> bool:
    """Whether two integer operands differ in signedness, which Triton refuses
    for ``/``, ``//`` and ``%`` (C would silently divide as unsigned)."""
    if not (isinstance(a, ScalarType) and isinstance(b, ScalarType)):
        return False
    if not (a.is_int and b.is_int):
        return False
    return a.unsigned != b.unsigned
