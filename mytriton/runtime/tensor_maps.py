"""A kernel's tensor maps: what each of its TMA copies reads (emit-cuda's
header ``tensor_maps``, ``backends/cuda/tma.py``), encoded for a launch's
arguments by the driver (``cuTensorMapEncodeTiled``) and passed after the
kernel's own parameters, each 128 bytes at a multiple of 64.

A map describes a row-major matrix by its base address, its extents and its
row stride, each a parameter of the kernel or a literal; an extent may be the
product of such factors, wrapped to i32 as the kernel computes it. TMA takes only a
16-byte aligned base, positive extents below 2^32 and a positive row stride
of a multiple of 16 bytes below 2^40; a launch whose values give anything
else cannot use the kernel (``shapes`` says None), and the launcher runs the
kernel built with cp.async instead. Encodings are kept per shape, and each
launch's answer by the values the maps read: a loop of launches on the same
tensors encodes once and then finds its maps with one lookup (a 40 us matmul
is timed by its launches where each takes longer).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

from mytriton.diagnostics import CompileError

MAP_BYTES = 128
MAP_ALIGNMENT = 64
SWIZZLE_MODES = {32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_32B, _64B, _128B
# CU_TENSOR_MAP_DATA_TYPE_UINT8, 16, 32, 64: a copy moves bits, zero-filled outside.
DATA_TYPES = {1: 0, 2: 1, 4: 2, 8: 4}
DIM_LIMIT = 2 ** 32
STRIDE_LIMIT = 2 ** 40
CACHE_LIMIT = 64  # encodings kept per kernel
# Where a pointer's device buffer is yet to be made (a host array's): an
# aligned address, so that the driver says whether it takes the map's shape.
PLACEHOLDER_ADDRESS = 1 << 20

Shape = tuple[int, tuple[int, int], int]  # base address, (columns, rows), row stride in bytes


@dataclass(frozen=True)
class MapSpec:
    """One map of the header: parameter indices (int), literals (("literal", n))
    or, for an extent, products of them (("product", (factor, ...)))."""

    base: int
    dims: tuple[Any, Any]
    stride: Any
    element_bytes: int
    box: tuple[int, int]
    swizzle: int


def _extent(text: Any, names: list[str], kernel: str) -> Any:
    if isinstance(text, list) and len(text) >= 2:
        return ("product", tuple(_operand(t, names, kernel) for t in text))
    return _operand(text, names, kernel)


def _operand(text: Any, names: list[str], kernel: str) -> Any:
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise CompileError(f"kernel '{kernel}': a tensor map names {text!r}, neither a parameter nor an integer")
    if isinstance(text, int):
        return ("literal", text)
    if text not in names:
        raise CompileError(f"kernel '{kernel}': a tensor map names '{text}', which is no parameter")
    return names.index(text)


def read_specs(specs: Any, names: list[str], kernel: str) -> list[MapSpec]:
    """The header's maps, checked (a malformed header is an error, not a wrong copy)."""
    if not isinstance(specs, list):
        raise CompileError(f"kernel '{kernel}': the header's tensor_maps is not a list")
    out = []
    for spec in specs:
        try:
            base = _operand(spec["base"], names, kernel)
            dims = tuple(_extent(d, names, kernel) for d in spec["dims"])
            stride = _operand(spec["stride"], names, kernel)
            element_bytes, swizzle = int(spec["element_bytes"]), int(spec["swizzle"])
            box = tuple(int(b) for b in spec["box"])
        except (KeyError, TypeError, ValueError):
            raise CompileError(f"kernel '{kernel}': a malformed tensor map in the header: {spec!r}") from None
        if not isinstance(base, int) or len(dims) != 2 or len(box) != 2 or element_bytes not in DATA_TYPES \
                or swizzle not in SWIZZLE_MODES or not all(0 < b <= 256 for b in box):
            raise CompileError(f"kernel '{kernel}': a malformed tensor map in the header: {spec!r}")
        out.append(MapSpec(base, dims, stride, element_bytes, box, swizzle))
    return out


def _value(operand: Any, values: list[Any]) -> int:
    """A spec's operand for these argument values (a product wrapped to i32, as the kernel computes it)."""
    if isinstance(operand, int):
        return operator.index(values[operand])
    if operand[0] == "literal":
        return operand[1]
    product = 1
    for factor in operand[1]:
        product *= _value(factor, values)
    return (product + 2 ** 31) % 2 ** 32 - 2 ** 31


def _text(operand: Any, names: list[str]) -> str:
    if isinstance(operand, int):
        return names[operand]
    if operand[0] == "literal":
        return str(operand[1])
    return " * ".join(_text(f, names) for f in operand[1])


def _shape(spec: MapSpec, values: list[Any], pending: frozenset[int], names: list[str] | None = None) -> Shape | str:
    """The map's base address, extents and row stride in bytes for these
    values, or why TMA takes none (in the words of ``names``, where given)."""
    name = (lambda operand: _text(operand, names)) if names else (lambda operand: "")
    try:
        address = 0 if spec.base in pending else operator.index(values[spec.base])
        dims = (_value(spec.dims[0], values), _value(spec.dims[1], values))
        stride = _value(spec.stride, values) * spec.element_bytes
    except (TypeError, IndexError):
        return "a value its tensor map reads is no integer"
    if address % 16:
        return f"{name(spec.base)}'s address {address:#x} is not a multiple of 16 bytes"
    for dim, extent in zip(spec.dims, dims):
        if not 0 < extent < DIM_LIMIT:
            return f"the extent {name(dim)} = {extent} is not from 1 to 2^32 - 1"
    if not 0 < stride < STRIDE_LIMIT or stride % 16:
        return (f"the row stride {name(spec.stride)} = {stride // spec.element_bytes} elements of "
                f"{spec.element_bytes} bytes ({stride} bytes) is not a positive multiple of 16 bytes below 2^40")
    return address, dims, stride


def _indices(operand: Any) -> set[int]:
    """The parameter indices an operand of a spec reads."""
    if isinstance(operand, int):
        return {operand}
    if operand[0] == "product":
        return set().union(*(_indices(f) for f in operand[1]))
    return set()


class TensorMaps:
    def __init__(self, specs: list[MapSpec]) -> None:
        self.specs = specs
        self._cache: dict[tuple[Shape, ...], list[bytes]] = {}
        # The parameters the maps read, and each launch's answer by their values:
        # a loop of launches on the same tensors finds its maps with one lookup.
        self.params = tuple(sorted(set().union(*(_indices(s.base) | _indices(s.stride) | _indices(s.dims[0])
                                                 | _indices(s.dims[1]) for s in specs))))
        self._by_values: dict[tuple[int, ...], list[bytes] | None] = {}

    def __len__(self) -> int:
        return len(self.specs)

    def shapes(self, values: list[Any], pending: frozenset[int] = frozenset()) -> tuple[Shape, ...] | None:
        """Each map's base, extents and stride for these argument values, or
        None where TMA cannot take one. ``pending``: pointer parameters whose
        device buffers are yet to be made (fresh, so aligned; address 0 here)."""
        out = []
        for spec in self.specs:
            shape = _shape(spec, values, pending)
            if isinstance(shape, str):
                return None
            out.append(shape)
        return tuple(out)

    def problem(self, values: list[Any], names: list[str], pending: frozenset[int] = frozenset()) -> str | None:
        """Why no map describes these values (``names``: the parameters'), or None."""
        for spec in self.specs:
            shape = _shape(spec, values, pending, names)
            if isinstance(shape, str):
                return shape
        return None

    def for_launch(self, values: list[Any], encoder: Callable[..., bytes | None],
                   pending: frozenset[int] = frozenset()) -> list[bytes] | None:
        """``encode(shapes(values))``: the maps for these values, or None where
        no map describes them or the driver refuses one; remembered by the
        values the maps read where each is an int (an address, a size)."""
        key = tuple(0 if i in pending else values[i] for i in self.params)
        memo = all(type(v) is int for v in key)
        if memo and key in self._by_values:
            return self._by_values[key]
        shapes = self.shapes(values, pending)
        maps = None if shapes is None else self.encode(shapes, encoder)
        if memo:
            if len(self._by_values) >= CACHE_LIMIT:
                self._by_values.clear()
            self._by_values[key] = maps
        return maps

    def encode(self, shapes: tuple[Shape, ...], encoder: Callable[..., bytes | None]) -> list[bytes] | None:
        """The maps' 128-byte encodings (the driver's ``encode_tensor_map``),
        or None where the driver refuses one."""
        cached = self._cache.get(shapes)
        if cached is not None:
            return cached
        out = []
        for spec, (address, dims, stride) in zip(self.specs, shapes):
            encoded = encoder(address or PLACEHOLDER_ADDRESS, dims, stride, spec.box, DATA_TYPES[spec.element_bytes],
                              SWIZZLE_MODES[spec.swizzle])
            if encoded is None:
                return None
            out.append(encoded)
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[shapes] = out
        return out
