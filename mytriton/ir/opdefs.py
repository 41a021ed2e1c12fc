"""What each SSA op is: its operands, attributes, traits and type rule.

This table is the one place that knows the ops. Lowering asks it for result
types, the verifier checks declared types against it, the SSA parser checks
arities with it, and the passes read its traits (pure, commutative,
reads_memory, allocates).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from mytriton.limits import tile_error
from mytriton.types import (
    BOOL, F32, I32, BlockType, PointerType, ScalarType, SharedType, Type, TypeRuleError, WeakType,
    broadcast_shapes, concrete, element_of, promote, shape_of, with_element,
)

InferFn = Callable[[list[Type | None], dict[str, Any]], list[Type]]


@dataclass(frozen=True)
class OpDef:
    name: str
    operands: tuple[str, ...]  # operand names; a trailing '?' marks one that may be none
    infer: InferFn
    attrs: tuple[str, ...] = ()
    pure: bool = True  # no side effect: DCE may drop it; CSE may merge it unless a trait below says no
    commutative: bool = False
    elementwise: bool = False
    # Its result depends on memory (global or shared), which ops between two
    # executions may change: CSE never merges two, LICM never hoists one.
    reads_memory: bool = False
    # Each execution makes a new buffer: CSE never merges two (they are two
    # buffers), and it only appears at the kernel's top level.
    allocates: bool = False
    # Operands that are shared buffers; no other operand may be one.
    shared_operands: tuple[str, ...] = ()
    # How the layouts of its tile operands and results relate (the layouts
    # stage and the verifier read it; LAYOUT_RULES says what each means).
    layout_rule: str = "none"
    doc: str = ""

    @property
    def arity(self) -> int:
        return len(self.operands)

    def optional(self, index: int) -> bool:
        return self.operands[index].endswith("?")


OPS: dict[str, OpDef] = {}


def _register(opdef: OpDef) -> None:
    OPS[opdef.name] = replace(opdef, infer=_checked(opdef))


def _checked(opdef: OpDef) -> InferFn:
    """``opdef``'s type rule, refusing an absent operand the op needs and a
    shared buffer where the op takes none (the rules below only know
    values), and results over
    MAX_TILE_ELEMENTS: every way a tile grows (arange, full, broadcasting,
    expand_dims, dot) goes through a rule."""
    infer = opdef.infer

    def checked(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        for name, t in zip(opdef.operands, types):
            if t is None and not name.endswith("?"):
                raise _err(f"operand '{name}' of '{opdef.name}' cannot be none")
            if isinstance(t, SharedType) and name not in opdef.shared_operands:
                raise _err(f"operand '{name.rstrip('?')}' of '{opdef.name}' cannot be a shared buffer ({t})")
        results = infer(types, attrs)
        for t in results:
            problem = tile_error(t.shape) if isinstance(t, (BlockType, SharedType)) else None
            if problem:
                raise _err(problem)
        return results

    return checked


def _err(message: str) -> TypeRuleError:
    return TypeRuleError(message)


# ---- helpers for type rules ---------------------------------------------------


def _numeric(t: Type | None, what: str, op: str) -> ScalarType | WeakType:
    e = element_of(t)
    if isinstance(e, PointerType):
        raise _err(f"'{op}' does not take pointer operands ({what} is {t})")
    return e


def _broadcast(*types: Type | None) -> tuple[int, ...]:
    return broadcast_shapes(*(shape_of(t) for t in types if t is not None))


def _arith(name: str, *, ints_only: bool = False, int_division_to_float: bool = False,
           bools: bool = False) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        a, b = types
        ea, eb = _numeric(a, "the left operand", name), _numeric(b, "the right operand", name)
        shape = _broadcast(a, b)
        e = promote(ea, eb)
        if ints_only and (e == F32 or (isinstance(e, ScalarType) and e.is_float)
                          or (isinstance(e, WeakType) and e.kind == "float")):
            raise _err(f"'{name}' needs integer operands, got {a} and {b}")
        if not bools and isinstance(e, ScalarType) and e.is_bool:
            e = I32
        if int_division_to_float and not (isinstance(e, ScalarType) and e.is_float):
            e = F32
        return [with_element(shape, concrete(e))]

    return infer


def _bitwise(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        a, b = types
        ea, eb = _numeric(a, "the left operand", name), _numeric(b, "the right operand", name)
        e = promote(ea, eb)
        if (isinstance(e, ScalarType) and e.is_float) or (isinstance(e, WeakType) and e.kind == "float"):
            raise _err(f"'{name}' needs integer or boolean operands, got {a} and {b}")
        return [with_element(_broadcast(a, b), concrete(e))]

    return infer


def _compare(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        a, b = types
        _numeric(a, "the left operand", name)
        _numeric(b, "the right operand", name)
        return [with_element(_broadcast(a, b), BOOL)]

    return infer


def _unary_numeric(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        (a,) = types
        e = concrete(_numeric(a, "the operand", name))
        if e.is_bool:
            e = I32
        return [with_element(shape_of(a), e)]

    return infer


def _unary_not(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    e = concrete(_numeric(a, "the operand", "not"))
    if e.is_float:
        raise _err(f"'not' (~) needs an integer or boolean operand, got {a}")
    return [with_element(shape_of(a), e)]


def _math(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        (a,) = types
        e = concrete(_numeric(a, "the operand", name))
        if not e.is_float:
            e = F32
        return [with_element(shape_of(a), e)]

    return infer


def _where(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    cond, a, b = types
    if element_of(cond) != BOOL:
        raise _err(f"'where' needs a boolean condition, got {cond}")
    ea, eb = element_of(a), element_of(b)
    if isinstance(ea, PointerType) or isinstance(eb, PointerType):
        if ea != eb:
            raise _err(f"'where' cannot choose between {a} and {b}")
        e: Any = ea
    else:
        e = concrete(promote(ea, eb))
    return [with_element(_broadcast(cond, a, b), e)]


def _addptr(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    ptr, offset = types
    e = element_of(ptr)
    if not isinstance(e, PointerType):
        raise _err(f"'addptr' needs a pointer, got {ptr}")
    eo = concrete(element_of(offset))
    if not (isinstance(eo, ScalarType) and eo.is_int):
        raise _err(f"a pointer offset must be an integer, got {offset}")
    return [with_element(_broadcast(ptr, offset), e)]


def _pointer_element(ptr: Type | None, op: str) -> PointerType:
    e = element_of(ptr)
    if not isinstance(e, PointerType):
        raise _err(f"'{op}' needs a pointer, got {ptr}")
    return e


def _mask_ok(mask: Type | None, op: str) -> None:
    if mask is not None and element_of(mask) != BOOL:
        raise _err(f"the mask of '{op}' must be boolean, got {mask}")


def _load(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    ptr, mask, other = types
    pointee = _pointer_element(ptr, "load").pointee
    _mask_ok(mask, "load")
    if other is not None:
        eo = element_of(other)
        if isinstance(eo, PointerType):
            raise _err(f"'other' of a load of {pointee} cannot be a pointer")
    shape = _broadcast(ptr, mask, other)
    if shape != shape_of(ptr):
        raise _err(f"the mask and other of a load must broadcast to the pointer's shape {ptr}")
    return [with_element(shape, pointee)]


def _store(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    ptr, value, mask = types
    _pointer_element(ptr, "store")
    _mask_ok(mask, "store")
    if isinstance(element_of(value), PointerType):
        raise _err("cannot store a pointer")
    if _broadcast(ptr, value, mask) != shape_of(ptr):
        raise _err(f"stored value {value} and mask must broadcast to the pointer's shape {ptr}")
    return []


def _axis_attr(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    axis = attrs.get("axis")
    if axis not in (0, 1, 2):
        raise _err(f"program axis must be 0, 1 or 2, got {axis}")
    return [I32]


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _arange(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    start, end = attrs.get("start"), attrs.get("end")
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool) or isinstance(end, bool):
        raise _err("arange bounds must be integer constants")
    if not _is_power_of_two(end - start):
        raise _err(f"arange's range must be a power of two, got {end} - {start} = {end - start}")
    return [BlockType((end - start,), I32)]


def _shape_attr(attrs: dict[str, Any], what: str = "block") -> tuple[int, ...]:
    shape = attrs.get("shape")
    if not isinstance(shape, tuple) or not shape or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise _err(f"a {what} shape must be a tuple of integer constants, got {shape!r}")
    for d in shape:
        if not _is_power_of_two(d):
            raise _err(f"{what} dimensions must be powers of two, got {shape}")
    return shape


def _dtype_attr(attrs: dict[str, Any]) -> ScalarType:
    dtype = attrs.get("dtype")
    if not isinstance(dtype, ScalarType):
        raise _err(f"expected a dtype, got {dtype!r}")
    return dtype


def _full(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (value,) = types
    if shape_of(value):
        raise _err(f"the fill value of 'full' must be a scalar, got {value}")
    if isinstance(element_of(value), PointerType):
        raise _err("cannot fill a block with a pointer")
    return [BlockType(_shape_attr(attrs), _dtype_attr(attrs))]


def _expand_dims(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    shape = shape_of(a)
    axis = attrs.get("axis")
    if not isinstance(axis, int) or not 0 <= axis <= len(shape):
        raise _err(f"expand_dims axis {axis} is out of range for {a}")
    new_shape = shape[:axis] + (1,) + shape[axis:]
    return [BlockType(new_shape, element_of(a))]


def _reduce(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        (a,) = types
        shape = shape_of(a)
        if not shape:
            raise _err(f"'{name}' needs a block, got the scalar {a}")
        e = concrete(_numeric(a, "the operand", name))
        if e.is_bool:
            e = I32
        axis = attrs.get("axis")
        if axis is None:
            return [e]
        if not isinstance(axis, int) or not 0 <= axis < len(shape):
            raise _err(f"'{name}' axis {axis} is out of range for {a}")
        return [with_element(shape[:axis] + shape[axis + 1:], e)]

    return infer


def _dot_rule(name: str, a: Type | None, b: Type | None, acc: Type | None) -> list[Type]:
    """``a @ b (+ acc)`` for blocks (``dot``) or shared buffers (``dot_shared``)."""
    what = "shared buffers" if name == "dot_shared" else "blocks"
    sa, sb = _tile_shape(a), _tile_shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise _err(f"'{name}' needs two rank-2 {what}, got {a} and {b}")
    if sa[1] != sb[0]:
        raise _err(f"'{name}' inner dimensions differ: {a} by {b}")
    ea, eb = _tile_element(a), _tile_element(b)
    if not (isinstance(ea, ScalarType) and ea.is_float and isinstance(eb, ScalarType) and eb.is_float):
        raise _err(f"'{name}' needs floating-point {what}, got {a} and {b}")
    if ea != eb:
        raise _err(f"'{name}' operands must have one element type, got {a} and {b}")
    for d in (sa[0], sa[1], sb[1]):
        if d < 16:
            raise _err(f"'{name}' dimensions must be at least 16, got {a} by {b}")
    out = BlockType((sa[0], sb[1]), F32)
    if acc is not None and acc != out:
        raise _err(f"the accumulator of '{name}' must be {out}, got {acc}")
    return [out]


def _tile_shape(t: Type | None) -> tuple[int, ...]:
    return t.shape if isinstance(t, SharedType) else shape_of(t)


def _tile_element(t: Type | None) -> ScalarType | PointerType | WeakType | None:
    return t.element if isinstance(t, SharedType) else element_of(t)


def _dot(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b, acc = types
    return _dot_rule("dot", a, b, acc)


# ---- shared memory (the stage-dots pass writes these ops) -------------------------


def _shared_alloc(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    name = attrs.get("name")
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise _err(f"a shared buffer's name must be an identifier, got {name!r}")
    shape = _shape_attr(attrs, "shared buffer")
    if len(shape) != 2:
        raise _err(f"a shared buffer has two dimensions, got {shape}")
    return [SharedType(shape, _dtype_attr(attrs))]  # type: ignore[arg-type]


def _i32_scalar(t: Type | None, what: str) -> None:
    if t is None or shape_of(t) or concrete(t) != I32:
        raise _err(f"{what} of 'copy_to_shared' must be an i32 scalar, got {t or 'none'}")


def _copy_to_shared(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    buffer, base, row_offset, col_offset, row_stride, row_bound, col_bound, fill = types
    if not isinstance(buffer, SharedType):
        raise _err(f"'copy_to_shared' copies into a shared buffer, got {buffer}")
    if not isinstance(base, PointerType):
        raise _err(f"the base of 'copy_to_shared' must be a scalar pointer, got {base}")
    if base.pointee != buffer.element:
        raise _err(f"'copy_to_shared' cannot copy from {base} into {buffer}: the element types differ")
    for t, what in ((row_offset, "the row offset"), (col_offset, "the column offset"),
                    (row_stride, "the row stride"), (row_bound, "the row bound"),
                    (col_bound, "the column bound")):
        _i32_scalar(t, what)
    if fill is None or shape_of(fill) or not isinstance(fill, (ScalarType, WeakType)):
        raise _err(f"the fill value of 'copy_to_shared' must be a scalar number, got {fill}")
    return []


def _dot_shared(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b, acc = types
    if not (isinstance(a, SharedType) and isinstance(b, SharedType)):
        raise _err(f"'dot_shared' multiplies two shared buffers, got {a} and {b}")
    return _dot_rule("dot_shared", a, b, acc)


def _cast(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    if isinstance(element_of(a), PointerType):
        raise _err("cannot cast a pointer")
    return [with_element(shape_of(a), _dtype_attr(attrs))]


def _none(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    return []


def _convert_layout(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (x,) = types
    if not isinstance(x, BlockType):
        raise _err(f"'convert_layout' takes a tile, got {x}")
    return [BlockType(x.shape, x.element)]


# ---- the table ----------------------------------------------------------------

for _name in ("add", "sub", "mul", "maximum", "minimum"):
    _register(OpDef(_name, ("lhs", "rhs"), _arith(_name),
                    commutative=_name in ("add", "mul", "maximum", "minimum"), elementwise=True))
_register(OpDef("div", ("lhs", "rhs"), _arith("div", int_division_to_float=True), elementwise=True))
_register(OpDef("floordiv", ("lhs", "rhs"), _arith("floordiv", ints_only=True), elementwise=True))
_register(OpDef("mod", ("lhs", "rhs"), _arith("mod", ints_only=True), elementwise=True))
for _name in ("and", "or", "xor"):
    _register(OpDef(_name, ("lhs", "rhs"), _bitwise(_name), commutative=True, elementwise=True))
for _name in ("cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "cmp_eq", "cmp_ne"):
    _register(OpDef(_name, ("lhs", "rhs"), _compare(_name),
                    commutative=_name in ("cmp_eq", "cmp_ne"), elementwise=True))
_register(OpDef("neg", ("x",), _unary_numeric("neg"), elementwise=True))
_register(OpDef("abs", ("x",), _unary_numeric("abs"), elementwise=True))
_register(OpDef("not", ("x",), _unary_not, elementwise=True))

MATH_FUNCTIONS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "sigmoid")
for _name in MATH_FUNCTIONS:
    _register(OpDef(_name, ("x",), _math(_name), elementwise=True))

_register(OpDef("where", ("condition", "true_value", "false_value"), _where, elementwise=True))
_register(OpDef("addptr", ("ptr", "offset"), _addptr, elementwise=True))
_register(OpDef("cast", ("x",), _cast, attrs=("dtype",), elementwise=True))
_register(OpDef("load", ("ptr", "mask?", "other?"), _load, reads_memory=True))
_register(OpDef("store", ("ptr", "value", "mask?"), _store, pure=False))
_register(OpDef("program_id", (), _axis_attr, attrs=("axis",)))
_register(OpDef("num_programs", (), _axis_attr, attrs=("axis",)))
_register(OpDef("arange", (), _arange, attrs=("start", "end")))
_register(OpDef("full", ("value",), _full, attrs=("shape", "dtype")))
_register(OpDef("expand_dims", ("x",), _expand_dims, attrs=("axis",)))
for _name in ("sum", "max", "min"):
    _register(OpDef(_name, ("x",), _reduce(_name), attrs=("axis",)))
_register(OpDef("dot", ("a", "b", "acc?"), _dot))
_register(OpDef("shared_alloc", (), _shared_alloc, attrs=("name", "shape", "dtype"), allocates=True,
                doc="a zero-filled row-major buffer in the program's shared memory"))
_register(OpDef("copy_to_shared", ("buffer", "base", "row_offset", "col_offset", "row_stride", "row_bound",
                                   "col_bound", "fill"), _copy_to_shared, pure=False,
                shared_operands=("buffer",),
                doc="buffer[r, c] = (row_offset + r < row_bound && col_offset + c < col_bound) "
                    "? base[(row_offset + r) * row_stride + col_offset + c] : fill"))
_register(OpDef("barrier", (), _none, pure=False,
                doc="every thread of the program has finished its earlier shared-memory accesses"))
_register(OpDef("dot_shared", ("a", "b", "acc?"), _dot_shared, reads_memory=True, shared_operands=("a", "b"),
                doc="dot of two shared buffers (plus acc)"))
_register(OpDef("yield", (), _none, pure=False))
# ``for`` has a region and variadic operands; the verifier checks it by hand.
_register(OpDef("for", ("start", "stop", "step"), _none, pure=False))

_register(OpDef("convert_layout", ("x",), _convert_layout,
                doc="the same tile in the layout its result type names (the layouts stage adds these)"))

# ---- layout rules ---------------------------------------------------------------
# "elementwise": tile operands are read in the result's layout (sliced for a
#     lower-rank operand, which broadcasts); cheap enough to recompute in
#     another layout rather than move data;
# "expand_dims": the operand's layout is the result's sliced along the new axis;
# "load": like elementwise, but the result is held in registers (materialized);
# "store": the value and mask are read in the pointer's layout;
# "reduce": the result's layout is the operand's sliced along the axis;
# "dot": the accumulator is in the result's layout; operands in any;
# "convert": operand and result in any layouts: the one op that moves data;
# "none": no tile operand or result is laid out by a rule (scalars, shared memory).
LAYOUT_RULES = ("elementwise", "expand_dims", "load", "store", "reduce", "dot", "convert", "none")


def _set_layout_rule(name: str, rule: str) -> None:
    OPS[name] = replace(OPS[name], layout_rule=rule)


for _op in list(OPS.values()):
    if _op.elementwise or _op.name in ("arange", "full"):
        _set_layout_rule(_op.name, "elementwise")
for _name, _rule in (("expand_dims", "expand_dims"), ("load", "load"), ("store", "store"), ("sum", "reduce"),
                     ("max", "reduce"), ("min", "reduce"), ("dot", "dot"), ("dot_shared", "dot"),
                     ("convert_layout", "convert")):
    _set_layout_rule(_name, _rule)

# Rules whose results are held in registers rather than recomputed where used.
MATERIALIZING_RULES = ("load", "reduce", "dot", "convert")

REDUCTIONS = ("sum", "max", "min")
CMP_OPS = ("cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "cmp_eq", "cmp_ne")


def lookup(name: str) -> OpDef | None:
    return OPS.get(name)

