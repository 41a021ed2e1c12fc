"""Block pointers and tensor descriptors, as Triton 3.x has them.

``tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`` and
``tl.make_tensor_descriptor(base, shape, strides, block_shape)`` make frontend
values, never IR: a base pointer, the parent tensor's shape and strides (and,
for a block pointer, the block's offsets, which ``tl.advance`` moves), with
the block's shape a constant. A load or store through one is lowered here to
the ordinary tile access, as Triton's RewriteTensorPointer pass lowers it:

    pointer = base + sum over d of (offset_d + arange(0, block_d)) * stride_d   (each along its own axis)
    mask    = (coordinate_d >= 0) & (coordinate_d < shape_d) for each checked d

so every later stage (and stage-dots' matchers) sees only loads and stores.
A block pointer carried by a loop carries its offsets, one loop value each
(``carry_leaves`` / ``rebuild``); its base, shape and strides must stay the
ones it entered with.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, replace
from typing import Any

from mytriton.frontend.tracer import Builtin, Tracer, describe, is_number
from mytriton.ir.tree import Expr
from mytriton.types import F32, PointerType, ScalarType, element_of, shape_of

PADDING_OPTIONS = ("", "zero", "nan")
MAX_DESCRIPTOR_RANK = 5  # Triton's (TMA's) limit


@dataclass(frozen=True, eq=False)
class BlockPointer:
    """What ``tl.make_block_ptr`` returns: runtime parts (base, shape,
    strides, offsets: values or numbers) and constant ones."""

    base: Expr
    shape: tuple[Any, ...]
    strides: tuple[Any, ...]
    offsets: tuple[Any, ...]
    block_shape: tuple[int, ...]
    order: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class TensorDescriptor:
    """What ``tl.make_tensor_descriptor`` returns; loads read zeros out of
    bounds (its padding), stores there are dropped."""

    base: Expr
    shape: tuple[Any, ...]
    strides: tuple[Any, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"


# ---- loop carries ------------------------------------------------------------------------


def carry_leaves(value: Any) -> list[Any]:
    """The values a loop or an ``if`` carries for ``value``: a block
    pointer's offsets, or the value itself."""
    if isinstance(value, BlockPointer):
        return list(value.offsets)
    return [value]


def leaf_hints(name: str, value: Any) -> list[str]:
    if isinstance(value, BlockPointer):
        return [f"{name}_off{d}" for d in range(len(value.offsets))]
    return [name]


def rebuild(value: Any, leaves: list[Any]) -> Any:
    """``value`` with its carried parts replaced by ``leaves`` (carry_leaves' order)."""
    if isinstance(value, BlockPointer):
        return replace(value, offsets=tuple(leaves))
    assert len(leaves) == 1
    return leaves[0]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if is_number(a) and is_number(b):
        return type(a) is type(b) and a == b
    return a is b


def carry_mismatch(before: Any, after: Any, branches: bool = False) -> str | None:
    """Why a loop cannot carry a name that holds ``before`` on entry and
    ``after`` at the end of its body (or an ``if`` one that its two
    ``branches`` leave so); None if it can."""
    if not isinstance(before, BlockPointer) and not isinstance(after, BlockPointer):
        return None
    if not (isinstance(before, BlockPointer) and isinstance(after, BlockPointer)):
        if branches:
            return f"holds {describe(before)} after one branch and {describe(after)} after the other"
        return f"holds {describe(before)} on entry and {describe(after)} at the end"
    if not (_same(before.base, after.base) and _same(before.shape, after.shape)
            and _same(before.strides, after.strides) and before.block_shape == after.block_shape
            and before.order == after.order):
        return ("holds a block pointer whose base, shape, strides, block_shape or order change; only its "
                "offsets may change (tl.advance)")
    return None


# ---- making them -------------------------------------------------------------------------


def _sequence(t: Tracer, node: ast.AST, value: Any, what: str, name: str) -> tuple[Any, ...]:
    """A tuple argument (Triton also takes a single value for one dimension)."""
    items = value if isinstance(value, tuple) else (value,)
    for item in items:
        if not (type(item) is int or isinstance(item, Expr)):
            raise t.error(f"{name}: each entry of {what} must be an integer or a runtime integer, "
                          f"got {describe(item)}", node)
        if isinstance(item, Expr) and not t.budget.probing:
            item_type = t.type_of(item, node)
            element = element_of(item_type)
            if shape_of(item_type) or not (isinstance(element, ScalarType) and not element.is_float
                                           and not element.is_bool):
                raise t.error(f"{name}: each entry of {what} must be an integer scalar, got {item_type}", node)
    return items


def _constants(t: Tracer, node: ast.AST, value: Any, what: str, name: str) -> tuple[int, ...]:
    items = value if isinstance(value, tuple) else (value,)
    if not items or not all(type(item) is int for item in items):
        shown = ", ".join(describe(i) if type(i) is not int else str(i) for i in items)
        raise t.error(f"{name}: {what} must be integer constants (tl.constexpr), got ({shown})", node)
    return items


def _block_shape(t: Tracer, node: ast.AST, value: Any, name: str) -> tuple[int, ...]:
    shape = _constants(t, node, value, "block_shape", name)
    for size in shape:
        if size <= 0 or size & (size - 1):
            raise t.error(f"{name}: each dimension of block_shape must be a power of two, got {shape}", node)
    if math.prod(shape) > 1 << 20:
        raise t.error(f"{name}: a block of {shape} has more than 2**20 elements", node)
    return shape


def _pointer_base(t: Tracer, node: ast.AST, base: Any, name: str) -> Expr:
    if not isinstance(base, Expr):
        raise t.error(f"{name} needs a pointer as its base, got {describe(base)}", node)
    if t.budget.probing:
        t.budget.asked_types = True  # checked, and the fill chosen, by the real trace
    else:
        base_type = t.type_of(base, node)
        if not isinstance(base_type, PointerType):
            raise t.error(f"{name} needs a scalar pointer as its base, got {base_type}", node)
    return base


def _pointee(t: Tracer, node: ast.AST, base: Expr) -> ScalarType | None:
    """The element the base points to; None in a probe trace (placeholder types)."""
    if t.budget.probing:
        t.budget.asked_types = True
        return None
    base_type = t.type_of(base, node)
    return base_type.pointee if isinstance(base_type, PointerType) else None


def make_block_ptr(t: Tracer, node: ast.Call, base: Any, shape: Any, strides: Any, offsets: Any,
                   block_shape: Any, order: Any) -> BlockPointer:
    name = "tl.make_block_ptr"
    base = _pointer_base(t, node, base, name)
    block = _block_shape(t, node, block_shape, name)
    order = _constants(t, node, order, "order", name)
    if sorted(order) != list(range(len(order))):
        raise t.error(f"{name}: order must be a permutation of {tuple(range(len(order)))}, got {order}", node)
    parts = {"shape": _sequence(t, node, shape, "shape", name), "strides": _sequence(t, node, strides, "strides", name),
             "offsets": _sequence(t, node, offsets, "offsets", name), "order": order}
    for what, items in parts.items():
        if len(items) != len(block):
            raise t.error(f"{name}: block_shape has {len(block)} dimension(s) but {what} has {len(items)}; "
                          "shape, strides, offsets, block_shape and order must have the same length", node)
    for offset in parts["offsets"]:
        t.check_literal(offset, node)
    return BlockPointer(base, parts["shape"], parts["strides"], parts["offsets"], block, order)


def make_tensor_descriptor(t: Tracer, node: ast.Call, base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> TensorDescriptor:
    name = "tl.make_tensor_descriptor"
    base = _pointer_base(t, node, base, name)
    block = _block_shape(t, node, block_shape, name)
    if not 1 <= len(block) <= MAX_DESCRIPTOR_RANK:
        raise t.error(f"{name}: a descriptor has 1 to {MAX_DESCRIPTOR_RANK} dimensions, got {len(block)}", node)
    shape = _sequence(t, node, shape, "shape", name)
    strides = _sequence(t, node, strides, "strides", name)
    for what, items in (("shape", shape), ("strides", strides)):
        if len(items) != len(block):
            raise t.error(f"{name}: block_shape has {len(block)} dimension(s) but {what} has {len(items)}", node)
    if not (type(strides[-1]) is int and strides[-1] == 1):
        raise t.error(f"{name}: the last dimension must be contiguous (its stride the constant 1), got "
                      f"{describe(strides[-1]) if type(strides[-1]) is not int else strides[-1]}", node)
    if padding_option not in ("zero", "nan"):
        raise t.error(f"{name}: padding_option must be 'zero' or 'nan', got {_shown(padding_option)}", node)
    pointee = _pointee(t, node, base)
    if pointee is not None:
        if block[-1] * max(1, pointee.bits // 8) < 16:
            raise t.error(f"{name}: the block's last dimension must span at least 16 bytes, got {block[-1]} x "
                          f"{pointee.name}", node)
        if padding_option == "nan" and not pointee.is_float:
            raise t.error(f"{name}: padding_option 'nan' needs floating-point elements, got {pointee.name}", node)
        _check_constant_strides(t, node, strides, pointee, name)
    return TensorDescriptor(base, shape, strides, block, padding_option)


def _check_constant_strides(t: Tracer, node: ast.Call, strides: tuple[Any, ...], pointee: ScalarType,
                            name: str) -> None:
    """Triton's rule for a descriptor (its documentation: "leading dimensions
    must be multiples of 16-byte strides"), checked here for a constant
    stride. A runtime stride is not taken to keep it: the copies assume
    only what the launch's specialisation proves (a multiple of 16 or 8 elements).
    (Taken as a hint, a stride of 77 f32 computed wrong tiles on the H100,
    silently.)"""
    elements = 16 // max(1, pointee.bits // 8)
    for stride in strides[:-1]:
        if type(stride) is int and elements >= 2 and stride % elements:
            raise t.error(f"{name}: a leading stride must be a multiple of 16 bytes, got {stride} x "
                          f"{pointee.name}", node)


def advance(t: Tracer, node: ast.Call, base: Any, offsets: Any) -> BlockPointer:
    if not isinstance(base, BlockPointer):
        raise t.error(f"tl.advance needs a block pointer (tl.make_block_ptr), got {describe(base)}", node)
    deltas = _sequence(t, node, offsets, "offsets", "tl.advance")
    if len(deltas) != len(base.offsets):
        raise t.error(f"tl.advance: the block pointer has {len(base.offsets)} dimension(s) but the offsets have "
                      f"{len(deltas)}", node)
    moved = []
    for offset, delta in zip(base.offsets, deltas):
        # Adding a constant 0 changes nothing: the offset stays the value it was.
        moved.append(offset if type(delta) is int and delta == 0 else t.binary(ast.Add(), offset, delta, node))
    return replace(base, offsets=tuple(moved))


# ---- loads and stores --------------------------------------------------------------------


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else describe(value)


def _boundary_check(t: Tracer, node: ast.AST, value: Any, rank: int, name: str) -> tuple[int, ...]:
    """Triton's _canonicalize_boundary_check: dims in range, no repeats, sorted."""
    if value is None:
        return ()
    dims = value if isinstance(value, tuple) else (value,)
    for dim in dims:
        if type(dim) is not int:
            raise t.error(f"{name}: boundary_check takes dimension numbers (integer constants), got "
                          f"{describe(dim)}", node)
        if not 0 <= dim < rank:
            raise t.error(f"{name}: boundary_check dimension {dim} is out of range for a block of rank {rank}", node)
    if len(set(dims)) != len(dims):
        raise t.error(f"{name}: boundary_check names a dimension twice: {dims}", node)
    return tuple(sorted(dims))


def _coordinates(t: Tracer, node: ast.AST, offsets: tuple[Any, ...], block: tuple[int, ...]) -> list[Any]:
    """Each dimension's ``offset + arange(0, size)``, expanded to the block's rank along its own axis."""
    rank = len(block)
    coordinates = []
    for d, (offset, size) in enumerate(zip(offsets, block)):
        value: Any = t.make("arange", (), node, start=0, end=size)
        if not (type(offset) is int and offset == 0):
            value = t.make("add", (offset, value), node)
        for axis in range(rank):
            if axis != d:
                value = t.make("expand_dims", (value,), node, axis=axis)
        coordinates.append(value)
    return coordinates


def _access(t: Tracer, node: ast.AST, base: Expr, shape: tuple[Any, ...], strides: tuple[Any, ...],
            offsets: tuple[Any, ...], block: tuple[int, ...], checked: tuple[int, ...]) -> tuple[Expr, Any]:
    """The pointer tile and mask (None without checks) of one block access."""
    coordinates = _coordinates(t, node, offsets, block)
    total: Any = None
    for coordinate, stride in zip(coordinates, strides):
        term = coordinate if type(stride) is int and stride == 1 else t.make("mul", (coordinate, stride), node)
        total = term if total is None else t.make("add", (total, term), node)
    pointer = t.make("add", (base, total), node)
    mask: Any = None
    for d in checked:
        test = t.make("and", (t.make("cmp_ge", (coordinates[d], 0), node),
                              t.make("cmp_lt", (coordinates[d], shape[d]), node)), node)
        mask = test if mask is None else t.make("and", (mask, test), node)
    return pointer, mask


def _fill(t: Tracer, node: ast.AST, base: Expr, padding: str, name: str) -> Any:
    pointee = _pointee(t, node, base)
    if padding == "nan":
        if pointee is not None and not pointee.is_float:
            raise t.error(f"{name}: padding_option 'nan' needs floating-point elements, got {pointee.name}", node)
        return math.nan
    # "zero", and "" (Triton leaves those elements undefined: zero is one choice, and the one stage-dots stages)
    return 0 if pointee is not None and not pointee.is_float else 0.0


def load_block(t: Tracer, node: ast.Call, pointer: BlockPointer, mask: Any, other: Any, boundary_check: Any,
               padding_option: Any) -> Expr:
    name = "tl.load"
    if mask is not None or other is not None:
        raise t.error(f"{name}: a block pointer takes no mask= or other= (use boundary_check= and "
                      "padding_option=)", node)
    if padding_option not in PADDING_OPTIONS:
        raise t.error(f"{name}: padding_option must be 'zero', 'nan' or '', got {_shown(padding_option)}", node)
    checked = _boundary_check(t, node, boundary_check, len(pointer.block_shape), name)
    tile, tile_mask = _access(t, node, pointer.base, pointer.shape, pointer.strides, pointer.offsets,
                              pointer.block_shape, checked)
    fill = _fill(t, node, pointer.base, padding_option, name) if checked else None
    if padding_option == "nan" and not checked:
        _fill(t, node, pointer.base, padding_option, name)  # still refused on integers, as Triton does
    expr = t.make("load", (tile, tile_mask, fill), node)
    t.anchor(expr)
    return expr


def _check_value(t: Tracer, node: ast.AST, base: Expr, block: tuple[int, ...], value: Any, name: str) -> None:
    if not (is_number(value) or isinstance(value, Expr)):
        raise t.error(f"{name} stores a tile or a number, got {describe(value)}", node)
    if t.budget.probing or is_number(value):
        return
    value_type = t.type_of(value, node)
    shape = shape_of(value_type)
    if shape and shape != block:
        raise t.error(f"{name}: the value's shape {shape} is not the block's {block}", node)
    pointee = _pointee(t, node, base)
    if pointee is not None and element_of(value_type) != pointee:
        raise t.error(f"{name}: the value's elements are {element_of(value_type)} but the block's are "
                      f"{pointee.name}; convert with .to()", node)


def store_block(t: Tracer, node: ast.Call, pointer: BlockPointer, value: Any, mask: Any, boundary_check: Any) -> None:
    name = "tl.store"
    if mask is not None:
        raise t.error(f"{name}: a block pointer takes no mask= (use boundary_check=)", node)
    checked = _boundary_check(t, node, boundary_check, len(pointer.block_shape), name)
    _check_value(t, node, pointer.base, pointer.block_shape, value, name)
    tile, tile_mask = _access(t, node, pointer.base, pointer.shape, pointer.strides, pointer.offsets,
                              pointer.block_shape, checked)
    t.effect(t.make("store", (tile, value, tile_mask), node))


def _descriptor_offsets(t: Tracer, node: ast.AST, desc: TensorDescriptor, offsets: Any, name: str) -> tuple[Any, ...]:
    if isinstance(offsets, list):
        offsets = tuple(offsets)
    items = _sequence(t, node, offsets, "offsets", name)
    if len(items) != len(desc.block_shape):
        raise t.error(f"{name}: the descriptor has {len(desc.block_shape)} dimension(s) but the offsets have "
                      f"{len(items)}", node)
    for item in items:
        t.check_literal(item, node)
    return items


def descriptor_load(t: Tracer, node: ast.Call, desc: Any, offsets: Any) -> Expr:
    name = "desc.load"
    if not isinstance(desc, TensorDescriptor):
        raise t.error(f"tl.load_tensor_descriptor needs a tensor descriptor, got {describe(desc)}", node)
    items = _descriptor_offsets(t, node, desc, offsets, name)
    every = tuple(range(len(desc.block_shape)))
    tile, mask = _access(t, node, desc.base, desc.shape, desc.strides, items, desc.block_shape, every)
    expr = t.make("load", (tile, mask, _fill(t, node, desc.base, desc.padding, name)), node)
    t.anchor(expr)
    return expr


def descriptor_store(t: Tracer, node: ast.Call, desc: Any, offsets: Any, value: Any) -> None:
    name = "desc.store"
    if not isinstance(desc, TensorDescriptor):
        raise t.error(f"tl.store_tensor_descriptor needs a tensor descriptor, got {describe(desc)}", node)
    items = _descriptor_offsets(t, node, desc, offsets, name)
    _check_value(t, node, desc.base, desc.block_shape, value, name)
    every = tuple(range(len(desc.block_shape)))
    tile, mask = _access(t, node, desc.base, desc.shape, desc.strides, items, desc.block_shape, every)
    t.effect(t.make("store", (tile, value, mask), node))


def _bind(t: Tracer, node: ast.Call, name: str, params: tuple[str, ...], args: list, kwargs: dict) -> list[Any]:
    if len(args) > len(params):
        raise t.error(f"{name}() takes {len(params)} argument(s), got {len(args)}", node)
    bound = dict(zip(params, args))
    for key, value in kwargs.items():
        if key not in params:
            raise t.error(f"{name}() has no parameter '{key}'", node)
        if key in bound:
            raise t.error(f"{name}() got two values for '{key}'", node)
        bound[key] = value
    missing = [p for p in params if p not in bound]
    if missing:
        raise t.error(f"{name}() is missing the argument '{missing[0]}'", node)
    return [bound[p] for p in params]


def attribute(t: Tracer, value: Any, attr: str, node: ast.AST) -> Any:
    """``desc.load``, ``desc.store``, ``desc.block_shape``... of a descriptor or block pointer."""
    if isinstance(value, TensorDescriptor):
        if attr == "load":
            return Builtin("desc.load", lambda tr, call, args, kwargs: descriptor_load(
                tr, call, value, *_bind(tr, call, "desc.load", ("offsets",), args, kwargs)))
        if attr == "store":
            return Builtin("desc.store", lambda tr, call, args, kwargs: descriptor_store(
                tr, call, value, *_bind(tr, call, "desc.store", ("offsets", "value"), args, kwargs)))
        if attr in ("block_shape", "shape", "strides"):
            return getattr(value, attr)
        if attr == "dtype":
            pointee = _pointee(t, node, value.base)
            if pointee is None:  # a probe trace: a guess (the real trace follows)
                return F32
            return pointee
    raise t.error(f"{describe(value)} has no attribute '{attr}' in kernels", node)
