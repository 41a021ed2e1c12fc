"""What each SSA op is: its operands, attributes, traits and type rule.

This table is the one place that knows the ops. Lowering asks it for result
types, the verifier checks declared types against it, the SSA parser checks
arities with it, and the passes read its traits: memory effects (reads or
writes global or shared memory, synchronises, allocates), commutative, and
the groups (reduction, comparison, math function, materialised). Each op that
computes on elements carries its NumPy semantics, which constant folding and
the interpreter both evaluate; the CUDA spelling of each op sits in
``backends/cuda/expressions.py``, keyed by the op's name.

Semantics are functions of the NumPy module (``lambda np, a, b: np.add(a, b)``)
so that this module never imports NumPy: the CLI stays fast, and only the
interpreter (and folding, when it has literals to fold) loads it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from mytriton.ir import math_functions
from mytriton.limits import tile_error
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I32, I64, U32, U64, BlockType, PointerType, ScalarType, SharedType, Type, TypeRuleError, WeakType,
    broadcast_shapes, concrete, element_of, mixed_signedness, promote, shape_of, with_element,
)

InferFn = Callable[[list[Type | None], dict[str, Any]], list[Type]]
# ``semantics(np, *operands)``: the op on NumPy arrays (or 0-d arrays) already
# converted to the type it computes in (see ``computes_in``).
Semantics = Callable[..., Any]
# ``fold_refuses(*operands)``: whether folding must leave these Python values
# alone, because C leaves the result undefined or the device decides it.
FoldGuard = Callable[..., bool]


@dataclass(frozen=True)
class OpDef:
    name: str
    operands: tuple[str, ...]  # operand names; a trailing '?' marks one that may be none
    infer: InferFn
    attrs: tuple[str, ...] = ()
    # Attributes an op may have, printed after ``attrs`` when present (the type
    # rule says what absence means).
    optional_attrs: tuple[str, ...] = ()
    commutative: bool = False
    elementwise: bool = False
    # Memory effects. A read makes the result depend on memory that ops
    # between two executions may change: CSE never merges two, LICM never
    # hoists one. A write or a synchronisation is an effect: DCE keeps the op
    # and no pass moves memory accesses across it.
    reads_global: bool = False
    writes_global: bool = False
    reads_shared: bool = False
    writes_shared: bool = False
    synchronises: bool = False
    # Its shared-memory writes land later (cp.async): complete for this thread
    # at an ``async_wait``, for the block after a barrier that follows it. They
    # are the generic proxy's, which wgmma reads without a proxy fence (as
    # Triton's fence insertion and CUTLASS's cp.async mainloops take them).
    async_shared_write: bool = False
    # Talks to the host while the kernel runs (prints, or stops the kernel):
    # an effect, kept by DCE and never moved; not a memory access.
    talks_to_host: bool = False
    # Structure (``for`` and ``yield``): kept or dropped by what it contains
    # and carries, never merged or moved as a whole.
    control: bool = False
    # Each execution makes a new buffer: CSE never merges two (they are two
    # buffers), and it only appears at the kernel's top level.
    allocates: bool = False
    # Operands that are shared buffers; no other operand may be one.
    shared_operands: tuple[str, ...] = ()
    # The operand holding the global address an op that reads or writes
    # global memory accesses (analyses follow it back to the parameters).
    address_operand: str | None = None
    # Groups.
    reduction: bool = False
    comparison: bool = False
    math_function: bool = False  # an elementwise ``tl.<name>(x)`` of a float
    # Written through shared scratch by the CUDA back end whatever its layouts
    # (a TMA store stages its tile there): it may carry a scratch_barrier.
    stages_through_scratch: bool = False
    # Held in registers by the CUDA backend instead of recomputed where used.
    materialised: bool = False
    # Its result is its first operand's value itself (a hint): a back end
    # may read the operand where the result is not yet defined.
    identity: bool = False
    # Runs a combine region over its N tile operands (reduce, scan): variadic
    # operands and results, one closed region of 2N scalar arguments
    # (``ssa.make_combine``); the readers and the verifier check it by hand.
    combine: bool = False
    # Semantics, shared by the interpreter and constant folding. ``computes_in``
    # says which type the operands are converted to first: "result" (the
    # result's element type), "operands" (their promoted type; comparisons)
    # or "float" (the result type, at least f32; math functions).
    semantics: Semantics | None = None
    computes_in: str = "result"
    # Whether constant folding may evaluate ``semantics`` at compile time: not
    # where the device's libm may differ from NumPy's by an ulp (exp, sin...).
    folds: bool = False
    fold_refuses: FoldGuard | None = None
    # How the layouts of its tile operands and results relate (the layouts
    # stage and the verifier read it; LAYOUT_RULES says what each means).
    layout_rule: str = "none"
    doc: str = ""

    @property
    def arity(self) -> int:
        return len(self.operands)

    @property
    def variadic(self) -> bool:
        """Its last operand name ends in '*': any number of operands there (none included)."""
        return bool(self.operands) and self.operands[-1].endswith("*")

    def takes(self, count: int) -> bool:
        """Whether the op takes ``count`` operands."""
        return count >= self.arity - 1 if self.variadic else count == self.arity

    def operand_name(self, index: int) -> str:
        """Operand ``index``'s name (a variadic tail's numbered: args0, args1...)."""
        if self.variadic and index >= self.arity - 1:
            return f"{self.operands[-1].rstrip('*')}{index - self.arity + 1}"
        return self.operands[index].rstrip("?")

    @property
    def reads_memory(self) -> bool:
        return self.reads_global or self.reads_shared

    @property
    def writes_memory(self) -> bool:
        return self.writes_global or self.writes_shared

    @property
    def has_effect(self) -> bool:
        """Whether running the op matters beyond its results: DCE keeps it."""
        return self.writes_memory or self.synchronises or self.control or self.talks_to_host

    @property
    def pure(self) -> bool:
        """No effect: DCE may drop it; CSE may merge it unless it reads memory or allocates."""
        return not self.has_effect

    def operand_index(self, name: str) -> int:
        return [o.rstrip("?") for o in self.operands].index(name.rstrip("?"))

    def optional(self, index: int) -> bool:
        return not (self.variadic and index >= self.arity - 1) and self.operands[index].endswith("?")


OPS: dict[str, OpDef] = {}


@dataclass(frozen=True)
class AttrKind:
    """The Python type an attribute's value has; what the value may be
    within that type is the op's type rule's to say."""

    text: str
    accepts: Callable[[Any], bool]


def _ints(value: Any) -> bool:
    return isinstance(value, tuple) and all(type(v) is int for v in value)


_INT = AttrKind("an integer", lambda v: type(v) is int)
_INT_OR_NONE = AttrKind("an integer or none", lambda v: v is None or type(v) is int)
_BOOL = AttrKind("true or false", lambda v: type(v) is bool)
_STRING = AttrKind("a string", lambda v: type(v) is str)
_DTYPE = AttrKind("a dtype", lambda v: isinstance(v, ScalarType))
_INTS = AttrKind("a tuple of integers", _ints)

# Every attribute name means one kind of value in every op that has it. The
# type rules compare values (``axis in (0, 1, 2)``), and Python's 0.0 == 0
# and True == 1 would let a float or a bool through to the back ends, which
# index and format with it: so the kind is checked before any rule runs.
ATTR_KINDS: dict[str, AttrKind] = {
    "axis": _INT_OR_NONE, "dims": _INTS, "dtype": _DTYPE, "start": _INT, "end": _INT, "hex": _BOOL,
    "in_flight": _INT, "index": _INT, "input_precision": _STRING, "out_dtype": _DTYPE, "kind": _STRING,
    "msg": _STRING, "prefix": _STRING, "asm": _STRING, "constraints": _STRING, "name": _STRING, "num_bins": _INT, "pending": _INT, "reverse": _BOOL,
    "scope": _STRING, "sem": _STRING, "shape": _INTS, "stages": _INT, "values": _INTS, "vector": _INT,
    "lower_bounds": _INTS,  # stage-dots: the axes a strided copy tests from 0
    # The CUDA back end's passes' decisions (copy-widths, combine-strategy, allocate-shared, insert-barriers,
    # read-widths).
    "chunk": _INT, "chunks": _STRING, "zero_fill": _STRING, "engine": _STRING, "offset": _INT, "strategy": _STRING, "chunks_per_row": _INT,
    "scratch_barrier": _BOOL, "proxy_fence": _BOOL, "read_widths": _INTS, "a_pad": _INT, "scratch_pad": _INT, "scratch_columns": _BOOL,
    "a_columns": _BOOL, "b_columns": _BOOL, "b_pad": _INT,
    # A loop's options (loop_attrs_problem says more: a flag is true when given).
    "num_stages": _INT, "loop_unroll_factor": _INT, "pipeline_stages": _INT, "flatten": _BOOL,
    "warp_specialize": _BOOL, "disallow_acc_multi_buffer": _BOOL, "disable_licm": _BOOL,
    # The hold-tiles pass's decision, which any op may carry (ANY_OP_ATTRS).
    "hold": _BOOL,
}


# Attributes any op may carry, outside its own list: the CUDA back end's
# decisions on a statement (insert-barriers') and on a tile (hold-tiles');
# the verifier says which ops may have them.
ANY_OP_ATTRS = ("scratch_barrier", "hold")


def attrs_problem(op_name: str, attrs: dict[str, Any]) -> str | None:
    """Which attribute of ``op_name`` has a value of the wrong kind, or None."""
    for key, value in attrs.items():
        kind = ATTR_KINDS.get(key)
        if kind is not None and not kind.accepts(value):
            return f"the attribute {key} of '{op_name}' must be {kind.text}, got {_attr_description(value)}"
    return None


def _attr_description(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, tuple):
        return "a tuple" if _ints(value) or not value else "a tuple that is not all integers"
    if isinstance(value, ScalarType):
        return f"the dtype {value.name}"
    return f"a {type(value).__name__}"


def _register(opdef: OpDef) -> None:
    OPS[opdef.name] = replace(opdef, infer=_checked(opdef))


def _checked(opdef: OpDef) -> InferFn:
    """``opdef``'s type rule, refusing attributes of the wrong kind, an
    absent operand the op needs and a shared buffer where the op takes none
    (the rules below only know values), and results over
    MAX_TILE_ELEMENTS: every way a tile grows (arange, full, broadcasting,
    expand_dims, dot) goes through a rule."""
    infer = opdef.infer

    def checked(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        problem = attrs_problem(opdef.name, attrs)
        if problem:
            raise _err(problem)
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
        if name in ("div", "floordiv", "mod") and mixed_signedness(ea, eb):
            # Triton's computation_type_impl refuses these; C would divide as unsigned.
            raise _err(f"'{name}' cannot mix signed and unsigned integers ({a} and {b}), as in Triton")
        if ints_only and (e == F32 or (isinstance(e, ScalarType) and e.is_float)
                          or (isinstance(e, WeakType) and e.kind == "float")):
            raise _err(f"'{name}' needs integer operands, got {a} and {b}")
        if not bools and isinstance(e, ScalarType) and e.is_bool:
            e = I32
        if int_division_to_float and not (isinstance(e, ScalarType) and e.is_float and e.bits >= 32):
            e = F32  # Triton: '/' of integers, and of f16 or bf16 (PTX has no half division), is f32
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
        if name == "sum" and e.is_int and e.bits < 32:
            # Triton's _pick_sum_dtype: narrow integers sum in 32 bits, keeping their signedness.
            e = U32 if e.unsigned else I32
        elif name in ("max", "min") and e.bits < 32:
            # Triton's tl.max / tl.min (language/standard.py): a float narrower than 32 bits
            # reduces in f32 and an integer in i32, and that is the result's type (softmax's
            # m = tl.max(x) of a bf16 row is f32, so x - m, exp and the sum are f32 too).
            e = F32 if e.is_float else I32
        axis = attrs.get("axis")
        if axis is None:
            return [e]
        if not isinstance(axis, int) or not 0 <= axis < len(shape):
            raise _err(f"'{name}' axis {axis} is out of range for {a}")
        return [with_element(shape[:axis] + shape[axis + 1:], e)]

    return infer


# ---- dot semantics ----
# tl.dot's precisions and dtypes, as Triton's semantic.dot has them. The
# frontend resolves both attributes (precision from the call, allow_tf32 or the
# compile options' f32 default; out_dtype from the operand dtype and the
# call); IR text may leave them out, meaning "ieee" and the first dtype below.

# How f32 operands are multiplied: "tf32" truncates each operand to TF32 (10
# mantissa bits, the low 13 dropped: what the tensor cores read of the f32 bits
# Triton gives them) and accumulates in f32; "tf32x3" adds hi*hi + hi*lo + lo*hi
# with hi = tf32(x), lo = tf32(x - hi), rounded (cvt.rna: to nearest, ties away);
# "ieee" is exact f32 FMA. Other dtypes have exact products: "ieee" only.
DOT_INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee")
DOT_ATTRS = ("input_precision", "out_dtype")
# The result dtypes each operand dtype allows, the default first (Triton:
# f32 and bf16 accumulate in f32, f16 in f32 or f16, i8 in i32, f64 in f64).
DOT_OUT_DTYPES: dict[ScalarType, tuple[ScalarType, ...]] = {
    F32: (F32,), F16: (F32, F16), BF16: (F32,), F64: (F64,), I8: (I32,),
}


def dot_input_precision(attrs: dict[str, Any]) -> str:
    """A dot's input precision ("ieee" where the IR text leaves it out)."""
    return attrs.get("input_precision", "ieee")


def _dot_rule(name: str, a: Type | None, b: Type | None, acc: Type | None,
              attrs: dict[str, Any]) -> list[Type]:
    """``a @ b (+ acc)`` for blocks (``dot``) or shared buffers (``dot_shared``),
    with Triton's rules for operand dtypes, precision and result dtype."""
    what = {"dot_shared": "shared buffers", "dot_rs": "operands"}.get(name, "blocks")
    sa, sb = _tile_shape(a), _tile_shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise _err(f"'{name}' needs two rank-2 {what}, got {a} and {b}")
    if sa[1] != sb[0]:
        raise _err(f"'{name}' inner dimensions differ: {a} by {b}")
    ea, eb = _tile_element(a), _tile_element(b)
    if not (isinstance(ea, ScalarType) and ea in DOT_OUT_DTYPES and isinstance(eb, ScalarType)
            and eb in DOT_OUT_DTYPES):
        raise _err(f"'{name}' takes f32, f16, bf16, f64 or i8 {what}, got {a} and {b}")
    if ea != eb:
        raise _err(f"'{name}' operands must have one element type, got {a} and {b}")
    for d in (sa[0], sa[1], sb[1]):
        if d < 16:
            raise _err(f"'{name}' dimensions must be at least 16, got {a} by {b}")
    precision = dot_input_precision(attrs)
    if precision not in DOT_INPUT_PRECISIONS:
        raise _err(f"'{name}' input_precision must be one of {', '.join(DOT_INPUT_PRECISIONS)}, got {precision!r}")
    if precision != "ieee" and ea != F32:
        raise _err(f"'{name}' input_precision {precision!r} applies to f32 operands only; {ea} is 'ieee'")
    out_dtype = attrs.get("out_dtype", DOT_OUT_DTYPES[ea][0])
    if out_dtype not in DOT_OUT_DTYPES[ea]:
        allowed = " or ".join(str(t) for t in DOT_OUT_DTYPES[ea])
        raise _err(f"'{name}' of {ea} operands gives {allowed}, not out_dtype={out_dtype}")
    out = BlockType((sa[0], sb[1]), out_dtype)
    if acc is not None and acc != out:
        raise _err(f"the accumulator of '{name}' must be {out}, got {acc}")
    return [out]


def _tile_shape(t: Type | None) -> tuple[int, ...]:
    return t.shape if isinstance(t, SharedType) else shape_of(t)


def _tile_element(t: Type | None) -> ScalarType | PointerType | WeakType | None:
    return t.element if isinstance(t, SharedType) else element_of(t)


def _dot(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b, acc = types
    return _dot_rule("dot", a, b, acc, attrs)


# ---- shared memory (the stage-dots pass writes these ops) -------------------------


def _shared_alloc(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    name = attrs.get("name")
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise _err(f"a shared buffer's name must be an identifier, got {name!r}")
    shape = _shape_attr(attrs, "shared buffer")
    if len(shape) != 2:
        raise _err(f"a shared buffer has two dimensions, got {shape}")
    offset = attrs.get("offset", 0)
    # 16: the alignment of cp.async's chunks and ldmatrix's rows, the least any buffer gets.
    if not (isinstance(offset, int) and not isinstance(offset, bool) and 0 <= offset < 2**31 and offset % 16 == 0):
        raise _err(f"a shared buffer's offset must be a non-negative multiple of 16 bytes, got {offset!r}")
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


def _in_flight_rule(name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` less ``in_flight`` (overlap-wgmma's: 0 or 1, issue only)."""
    in_flight = attrs.get("in_flight", 0)
    if type(in_flight) is not int or not 0 <= in_flight <= 1:
        raise _err(f"'{name}' takes in_flight=0 or 1 (1: issue only), got in_flight={in_flight!r}")
    return {k: v for k, v in attrs.items() if k != "in_flight"}


def _dot_shared(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b, acc = types
    if not (isinstance(a, SharedType) and isinstance(b, SharedType)):
        raise _err(f"'dot_shared' multiplies two shared buffers, got {a} and {b}")
    return _dot_rule("dot_shared", a, b, acc, _in_flight_rule("dot_shared", attrs))


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


# ---- semantics ------------------------------------------------------------------


def _trunc_div(np: Any, a: Any, b: Any) -> Any:
    """Integer division rounding toward zero, as in C (x / 0 gives garbage)."""
    q = np.floor_divide(a, b)
    r = a - q * b
    return np.where((r != 0) & ((a < 0) != (b < 0)), q + 1, q)


def _divides_badly(a: Any, b: Any) -> bool:
    """Division by zero, and INT_MIN / -1, are undefined in C."""
    return b == 0 or (type(a) is int and a == -2**31 and b == -1)


def _min_max_undecided(a: Any, b: Any) -> bool:
    """fmaxf/fminf: NaN and signed zeros are the device's business."""
    return a != a or b != b or (a == b and math.copysign(1, a) != math.copysign(1, b))


_BINARY: dict[str, Semantics] = {
    "add": lambda np, a, b: np.add(a, b),
    "sub": lambda np, a, b: np.subtract(a, b),
    "mul": lambda np, a, b: np.multiply(a, b),
    # Triton's default (PropagateNan.NONE) and CUDA's fmaxf/fminf: a NaN
    # operand loses to a number; maximum_nan/minimum_nan propagate it.
    "maximum": lambda np, a, b: np.fmax(a, b),
    "minimum": lambda np, a, b: np.fmin(a, b),
    "div": lambda np, a, b: np.true_divide(a, b),
    "floordiv": _trunc_div,
    "mod": lambda np, a, b: np.fmod(a, b),  # fmod: the remainder takes the dividend's sign, as in C
    # Logical on bools.
    "and": lambda np, a, b: np.bitwise_and(a, b),
    "or": lambda np, a, b: np.bitwise_or(a, b),
    "xor": lambda np, a, b: np.bitwise_xor(a, b),
}
_COMPARE: dict[str, Semantics] = {
    "cmp_lt": lambda np, a, b: np.less(a, b),
    "cmp_le": lambda np, a, b: np.less_equal(a, b),
    "cmp_gt": lambda np, a, b: np.greater(a, b),
    "cmp_ge": lambda np, a, b: np.greater_equal(a, b),
    "cmp_eq": lambda np, a, b: np.equal(a, b),
    "cmp_ne": lambda np, a, b: np.not_equal(a, b),
}

# ---- the table ----------------------------------------------------------------

# One line each for the ops registered in loops (``mytriton ops``, docs/ir.md).
_DOCS = {
    "add": "lhs + rhs, per element (operands broadcast)",
    "sub": "lhs - rhs, per element",
    "mul": "lhs * rhs, per element",
    "maximum": "tl.maximum(lhs, rhs): the larger; a number beats NaN (fmaxf)",
    "minimum": "tl.minimum(lhs, rhs): the smaller; a number beats NaN (fminf)",
    "and": "lhs & rhs: bitwise on integers, logical on booleans",
    "or": "lhs | rhs: bitwise on integers, logical on booleans",
    "xor": "lhs ^ rhs: bitwise on integers, logical on booleans",
    "cmp_lt": "lhs < rhs, a boolean per element",
    "cmp_le": "lhs <= rhs, a boolean per element",
    "cmp_gt": "lhs > rhs, a boolean per element",
    "cmp_ge": "lhs >= rhs, a boolean per element",
    "cmp_eq": "lhs == rhs, a boolean per element",
    "cmp_ne": "lhs != rhs, a boolean per element",
    "sum": "tl.sum: x added up along axis (over every element when axis is none)",
    "max": "tl.max: the largest element of x along axis (all when none); a number beats NaN",
    "min": "tl.min: the smallest element of x along axis (all when none); a number beats NaN",
}

# Of two booleans, mul, maximum and minimum stay boolean (and, or, and), as in
# Triton, which computes them in i1 (fla masks with mask_t[:, None] * mask_d[None, :]);
# add and sub count in i32 (Triton's i1 sum wraps, and its interpreter does not).
for _name in ("add", "sub", "mul", "maximum", "minimum"):
    _register(OpDef(_name, ("lhs", "rhs"), _arith(_name, bools=_name in ("mul", "maximum", "minimum")),
                    commutative=_name in ("add", "mul", "maximum", "minimum"), elementwise=True,
                    semantics=_BINARY[_name], folds=True,
                    fold_refuses=_min_max_undecided if _name in ("maximum", "minimum") else None,
                    doc=_DOCS[_name]))
_register(OpDef("div", ("lhs", "rhs"), _arith("div", int_division_to_float=True), elementwise=True,
                semantics=_BINARY["div"], folds=True, fold_refuses=_divides_badly,
                doc="lhs / rhs; integers, f16 and bf16 divide in f32 (Python's true division)"))
_register(OpDef("floordiv", ("lhs", "rhs"), _arith("floordiv", ints_only=True), elementwise=True,
                semantics=_BINARY["floordiv"], folds=True, fold_refuses=_divides_badly,
                doc="lhs // rhs of integers, rounded toward zero as in C (-7 // 2 == -3)"))
_register(OpDef("mod", ("lhs", "rhs"), _arith("mod", ints_only=True), elementwise=True,
                semantics=_BINARY["mod"], folds=True, fold_refuses=_divides_badly,
                doc="lhs % rhs of integers, with the sign of lhs as in C (-7 % 2 == -1)"))
for _name in ("and", "or", "xor"):
    _register(OpDef(_name, ("lhs", "rhs"), _bitwise(_name), commutative=True, elementwise=True,
                    semantics=_BINARY[_name], folds=True, doc=_DOCS[_name]))
for _name in _COMPARE:
    _register(OpDef(_name, ("lhs", "rhs"), _compare(_name), commutative=_name in ("cmp_eq", "cmp_ne"),
                    elementwise=True, comparison=True, semantics=_COMPARE[_name], computes_in="operands",
                    folds=True, doc=_DOCS[_name]))
_register(OpDef("neg", ("x",), _unary_numeric("neg"), elementwise=True,
                semantics=lambda np, x: np.negative(x), folds=True, doc="-x, per element"))
_register(OpDef("abs", ("x",), _unary_numeric("abs"), elementwise=True,
                semantics=lambda np, x: np.abs(x), folds=True, doc="|x|, per element (tl.abs)"))
_register(OpDef("not", ("x",), _unary_not, elementwise=True,
                semantics=lambda np, x: np.invert(x), folds=True,  # invert: logical not on bools
                doc="~x: bitwise not of integers, logical not of booleans"))
# The math group, tl.<name> (ir/math_functions.py: one row per function).
for _row in math_functions.TABLE:
    if not _row.tl:
        continue
    _register(OpDef(_row.name, ("x",), _math(_row.name), elementwise=True, math_function=True,
                    semantics=_row.semantics, computes_in="float", folds=_row.folds,
                    doc=f"tl.{_row.name}(x), per element, computed in f32 at least (f64 stays f64)"))

_register(OpDef("where", ("condition", "true_value", "false_value"), _where, elementwise=True,
                doc="tl.where: true_value where condition holds, else false_value, per element"))
_register(OpDef("addptr", ("ptr", "offset"), _addptr, elementwise=True,
                doc="ptr + offset, counted in elements of the pointee"))
_register(OpDef("cast", ("x",), _cast, attrs=("dtype",), elementwise=True,
                doc="x converted to dtype (tl.cast, x.to)"))
# ``vector=N`` (laid-out SSA only): each thread moves N consecutive elements
# of its slots with one access (the layouts stage proves it aligned).
_register(OpDef("load", ("ptr", "mask?", "other?"), _load, reads_global=True, materialised=True,
                address_operand="ptr", optional_attrs=("vector",),
                doc="tl.load: the elements at ptr where mask holds, other (or zero) elsewhere"))
_register(OpDef("store", ("ptr", "value", "mask?"), _store, writes_global=True, address_operand="ptr",
                optional_attrs=("vector",), doc="tl.store: writes value at ptr where mask holds"))
_register(OpDef("program_id", (), _axis_attr, attrs=("axis",),
                doc="this program's index along grid axis 0, 1 or 2 (tl.program_id)"))
_register(OpDef("num_programs", (), _axis_attr, attrs=("axis",),
                doc="the number of programs along grid axis 0, 1 or 2 (tl.num_programs)"))
_register(OpDef("arange", (), _arange, attrs=("start", "end"),
                doc="the i32 vector start, start + 1, ..., end - 1 (tl.arange)"))
_register(OpDef("full", ("value",), _full, attrs=("shape", "dtype"),
                doc="a tile of shape and dtype holding value everywhere (tl.full, tl.zeros)"))
_register(OpDef("expand_dims", ("x",), _expand_dims, attrs=("axis",),
                doc="x with a new dimension of size 1 at axis (x[:, None], tl.expand_dims)"))
for _name in ("sum", "max", "min"):
    _register(OpDef(_name, ("x",), _reduce(_name), attrs=("axis",), reduction=True, materialised=True,
                    doc=_DOCS[_name]))
# ``read_widths=(A's, B's)`` (laid-out SSA): the read-widths pass's answer
# for a dot on CUDA cores, elements per shared-memory read of each operand.
FMA_DOT_ATTRS = ("read_widths",)
FMA_DOT_DOC = "; read_widths: elements per shared read of A and of B on CUDA cores, once read-widths has decided"
# ``a_pad=N`` (laid-out SSA): allocate-shared's padding of each row of a
# register A tile that the CUDA back end writes to scratch (elements);
# ``a_columns``/``b_columns``: that operand's tile is written column-major
# (its transpose row-major: a ``tl.trans`` of a tile held in registers), its
# rows then padded by ``a_pad``/``b_pad``.
SCRATCH_DOT_ATTRS = ("a_pad", "a_columns", "b_columns", "b_pad")
# ``proxy_fence=true|false`` (laid-out SSA): the proxy-fences pass's answer
# for a wgmma dot, whether a ``fence.proxy.async`` comes before it.
WGMMA_DOT_ATTRS = ("proxy_fence",)
SCRATCH_DOT_DOC = ("; a_pad: elements of padding after each row of A in scratch, once allocate-shared has decided; "
                   "a_columns, b_columns: that operand written to scratch column-major (b_pad: its rows' padding)")
_register(OpDef("dot", ("a", "b", "acc?"), _dot, attrs=DOT_ATTRS + FMA_DOT_ATTRS + SCRATCH_DOT_ATTRS,
                optional_attrs=DOT_ATTRS + FMA_DOT_ATTRS + SCRATCH_DOT_ATTRS, materialised=True,
                doc="tl.dot: the matrix product of rank-2 tiles a and b, plus acc when given; input_precision "
                    "and out_dtype as in Triton (absent: 'ieee' and the operands' default)" + FMA_DOT_DOC
                    + SCRATCH_DOT_DOC))
_register(OpDef("shared_alloc", (), _shared_alloc, attrs=("name", "shape", "dtype", "offset"),
                optional_attrs=("offset",), allocates=True,
                doc="a zero-filled row-major buffer in the program's shared memory (at byte offset of the "
                    "shared array, once allocate-shared has placed it)"))
# The copy-widths pass's answer (laid-out SSA): elements per access (an async
# copy's cp.async), and what of the chunks' alignment is proven ("whole",
# "aligned") or checked at run time. A copy waited for moves chunks only where
# they are whole.
ASYNC_COPY_ATTRS = ("chunk", "chunks")
# copy-widths' choice, on an async copy of whole chunks, of how cp.async
# zero-fills a chunk out of bounds: "ignore_src" (its predicate operand),
# "src_size" (a source size of 0, as a copy whose chunks a bound may cut
# does). Absent: "ignore_src".
ZERO_FILL = "zero_fill"
ZERO_FILLS = ("ignore_src", "src_size")
# tma-copies' decision on a pipelined copy: engine="tma" (one thread, a
# tensor map) where cp.async would copy it (absent).
# proxy-fences' decision on a TMA copy: whether its issuing thread fences
# (fence.proxy.async) the plain accesses to the buffer before TMA writes it.
PIPELINED_COPY_ATTRS = (*ASYNC_COPY_ATTRS, ZERO_FILL, "engine", "proxy_fence")
TMA_COPY_DOC = ("; engine 'tma': TMA makes it, through a tensor map (tma-copies); proxy_fence: a fence.proxy.async "
                "before it (proxy-fences; absent: one)")
ASYNC_COPY_DOC = ("; chunk elements per cp.async, chunks 'whole', 'aligned' (proven) or 'checked' "
                  "(at run time), once copy-widths has decided; zero_fill, with whole chunks: 'ignore_src' "
                  "(absent) or 'src_size', how cp.async zero-fills a chunk out of bounds")
SYNC_COPY_DOC = ("; chunk elements per load ('whole' chunks, proven by copy-widths), absent or 1: "
                 "element by element")
_register(OpDef("copy_to_shared", ("buffer", "base", "row_offset", "col_offset", "row_stride", "row_bound",
                                   "col_bound", "fill"), _copy_to_shared, reads_global=True,
                writes_shared=True, address_operand="base", shared_operands=("buffer",),
                attrs=ASYNC_COPY_ATTRS, optional_attrs=ASYNC_COPY_ATTRS,
                doc="buffer[r, c] = (row_offset + r < row_bound && col_offset + c < col_bound) "
                    "? base[(row_offset + r) * row_stride + col_offset + c] : fill" + SYNC_COPY_DOC))
_register(OpDef("barrier", (), _none, synchronises=True,
                doc="every thread of the program has finished its earlier shared-memory accesses"))
# Programmatic dependent launch (tl.extra.cuda.gdc_*): each orders the grid
# against the kernels launched before and after it, so nothing moves across
# it. Both do nothing where the launch did not ask for it (launch_pdl).
_register(OpDef("grid_dependency_wait", (), _none, synchronises=True,
                doc="waits until the grid this one was launched after (launch_pdl) has finished and its memory "
                    "writes are visible; at once where nothing was launched before it that way"))
_register(OpDef("grid_dependency_launch_dependents", (), _none, synchronises=True,
                doc="lets the grid launched after this one with launch_pdl start once every program has "
                    "passed here or finished (a hint: it orders no memory)"))
_register(OpDef("dot_shared", ("a", "b", "acc?"), _dot_shared,
                attrs=DOT_ATTRS + ("in_flight",) + FMA_DOT_ATTRS + WGMMA_DOT_ATTRS,
                optional_attrs=DOT_ATTRS + ("in_flight",) + FMA_DOT_ATTRS + WGMMA_DOT_ATTRS,
                reads_shared=True, shared_operands=("a", "b"),
                materialised=True, doc="dot of two shared buffers (plus acc), with dot's attributes"))
_register(OpDef("yield", (), _none, control=True,
                doc="ends a region, passing on its values (the next carried values, or the if's results)"))
# ``for`` has a region and variadic operands; the verifier checks it by hand.
_register(OpDef("for", ("start", "stop", "step"), _none, control=True,
                doc="runs its region for i = start, start + step, ... short of stop, with carried iter_args; "
                    "i is i64 where a bound is, else i32"))


def loop_index_type(bounds: list[Type | None]) -> ScalarType:
    """The type of a ``for`` loop's index from its bounds' types, as Triton
    promotes them: i64 where one of them is i64 (or u32, whose values i64
    holds, as an integer literal in [2**31, 2**32) is), else i32. Each bound
    is an i32, i64 or u32 scalar or an integer literal; anything else is a
    TypeRuleError naming the first that is not."""
    index = I32
    for bound, what in zip(bounds, ("start", "stop", "step")):
        t = concrete(bound) if bound is not None and not isinstance(bound, BlockType) else None
        if t not in (I32, I64, U32):
            raise TypeRuleError(f"the loop {what} must be an i32 or i64 scalar, got {bound or 'none'}")
        if t != I32:
            index = I64
    return index

# ---- control flow ----
# ``if`` and ``while`` have regions and variadic results; the verifier checks
# them by hand (passes/verify.py), as it does ``for``. ``condition`` ends a
# ``while`` op's condition region: the loop goes on while its operand is true.
_register(OpDef("if", ("cond",), _none, control=True,
                doc="runs its then-region when cond is true, else its else-region; results are the yields"))
_register(OpDef("while", (), _none, control=True,
                doc="carried values; runs the body region while the condition region's condition holds"))
_register(OpDef("condition", ("cond",), _none, control=True, doc="ends a while op's condition region"))

_register(OpDef("convert_layout", ("x",), _convert_layout, attrs=("scratch_pad", "scratch_columns"),
                optional_attrs=("scratch_pad", "scratch_columns"),
                materialised=True,
                doc="the same tile in the layout its result type names (the layouts stage adds these); "
                    "scratch_pad: elements of padding after each row of x's copy in scratch (each column, "
                    "where scratch_columns), once allocate-shared has decided; scratch_columns: that copy "
                    "is column-major, for a new layout whose runs go down the columns"))

# ---- lang-surface ----------------------------------------------------------------
# Hints (tl.multiple_of, tl.max_contiguous, tl.max_constancy), bitcasts, and
# the ops that talk to the host while a kernel runs (tl.device_print,
# tl.device_assert).

HINT_KINDS = ("multiple_of", "max_contiguous", "max_constancy")


def _hint(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    """A fact about its operand (Triton's tt.divisibility, tt.contiguity,
    tt.constancy), one value per dimension; the result is the operand."""
    (x,) = types
    kind, values = attrs.get("kind"), attrs.get("values")
    if kind not in HINT_KINDS:
        raise _err(f"a hint's kind is one of {', '.join(HINT_KINDS)}, got {kind!r}")
    if not (isinstance(values, tuple) and values
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)):
        raise _err(f"a hint's values are a tuple of positive integers, got {values!r}")
    if len(values) != max(1, len(shape_of(x))):
        raise _err(f"'{kind}' needs one value per dimension of {x}, got {len(values)}")
    if isinstance(element_of(x), WeakType):
        x = concrete(x)
    return [x]


def _bitcast(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    source, target = element_of(a), _dtype_attr(attrs)
    if not isinstance(source, ScalarType):
        raise _err(f"'bitcast' reinterprets numbers, not {a}")
    if source.bits != target.bits or source.is_bool != target.is_bool:
        raise _err(f"'bitcast' needs types of one width: {source} has {source.bits} bits, "
                   f"{target} has {target.bits}")
    return [with_element(shape_of(a), target)]


def device_print_label(prefix: str) -> str:
    """What a device_print line shows between the element's place and its
    value: the prefix, ending in a colon (one is added where it has none)."""
    label = prefix.rstrip()
    return label if label.endswith(":") else label + ":"


def _device_print(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    if not isinstance(attrs.get("prefix"), str):
        raise _err(f"the prefix of 'device_print' must be a string, got {attrs.get('prefix')!r}")
    if not isinstance(attrs.get("hex"), bool):
        raise _err(f"the hex attribute of 'device_print' must be true or false, got {attrs.get('hex')!r}")
    return []  # any value prints: numbers, and pointers as addresses


def _device_assert(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    cond, mask = types
    if not isinstance(attrs.get("msg"), str):
        raise _err(f"the message of 'device_assert' must be a string, got {attrs.get('msg')!r}")
    e = element_of(cond)
    if isinstance(e, PointerType):
        raise _err(f"the condition of 'device_assert' must be a number, got {cond}")
    _mask_ok(mask, "device_assert")
    if mask is not None and _broadcast(cond, mask) != shape_of(cond):
        raise _err(f"the mask of 'device_assert' must broadcast to the condition's shape {cond}")
    return []


def _trans(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (x,) = types
    if not isinstance(x, BlockType) or len(x.shape) != 2:
        raise _err(f"'trans' transposes a rank-2 tile, got {x}")
    return [BlockType((x.shape[1], x.shape[0]), x.element)]


_register(OpDef("trans", ("x",), _trans, materialised=True,
                doc="the rank-2 tile x transposed (x.T, tl.trans); held in registers like a layout change"))
_register(OpDef("hint", ("x",), _hint, attrs=("kind", "values"), elementwise=True, identity=True,
                doc="x itself, with a fact about its values for later stages (vectorised access)"))
_register(OpDef("bitcast", ("x",), _bitcast, attrs=("dtype",), elementwise=True,
                doc="x's bits read as dtype (same width)"))
_register(OpDef("device_print", ("value?",), _device_print, attrs=("prefix", "hex"), talks_to_host=True,
                doc="prints prefix and each element of value, per program (tl.device_print)"))
_register(OpDef("device_assert", ("condition", "mask?"), _device_assert, attrs=("msg",), talks_to_host=True,
                doc="stops the kernel with msg where an element of condition is false (and mask true)"))

# tl.range's options, kept on the ``for`` op (printed inside its range(...)):
# the number of software-pipelining stages, the unroll factor, and Triton's
# flags. Each default is left out of the IR.
LOOP_ATTRS = ("num_stages", "loop_unroll_factor", "flatten", "warp_specialize", "disallow_acc_multi_buffer",
              "disable_licm")
LOOP_FLAGS = LOOP_ATTRS[2:]


def loop_attrs_problem(attrs: dict[str, Any]) -> str | None:
    """What is wrong with a ``for`` op's attributes, or None."""
    for key, value in attrs.items():
        if key not in LOOP_ATTRS:
            return f"a loop has no attribute '{key}' (it has {', '.join(LOOP_ATTRS)})"
        if key in LOOP_FLAGS:
            if value is not True:
                return f"the loop attribute {key} is true when given, got {value!r}"
        elif not (isinstance(value, int) and not isinstance(value, bool)):
            return f"the loop attribute {key} must be an integer, got {value!r}"
        elif key == "num_stages" and not 0 <= value <= 64:
            return f"num_stages must be from 0 to 64, got {value}"
        elif key == "loop_unroll_factor" and not 1 <= value <= 1024:
            return f"loop_unroll_factor must be from 1 to 1024, got {value}"
    return None


OPS["for"] = replace(OPS["for"], attrs=LOOP_ATTRS)


# ---- math and dtypes ------------------------------------------------
# Triton's elementwise functions beyond the one-float math group. Each is an
# op with NumPy semantics (the interpreter and folding) and a CUDA spelling
# in the language object (``CStyleLanguage.nan_aware``, ``fma``, ``div_rn``,
# ``umulhi``); ``tl.fdiv`` and ``tl.softmax`` are library functions over
# existing ops (frontend/builtins.py).


def _float_operands(name: str, count: int) -> InferFn:
    """``count`` operands promoted together (Triton's binary type checking
    applied pairwise), which must be floats: clamp, fma, div_rn."""
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        elements = [_numeric(t, f"operand {i + 1}", name) for i, t in enumerate(types[:count])]
        e = elements[0]
        for other in elements[1:]:
            e = promote(e, other)
        e = concrete(e)
        if not e.is_float:
            raise _err(f"'{name}' needs floating-point operands, got {', '.join(str(t) for t in types)}")
        return [with_element(_broadcast(*types), e)]

    return infer


def _umulhi_rule(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b = types
    e = concrete(promote(_numeric(a, "the left operand", "umulhi"), _numeric(b, "the right operand", "umulhi")))
    if not (e.is_int and e.bits in (32, 64)):
        raise _err(f"'umulhi' needs 32- or 64-bit integer operands, got {a} and {b}")
    return [with_element(_broadcast(a, b), e)]


def _clamp(np: Any, x: Any, lo: Any, hi: Any) -> Any:
    """min(max(x, lo), hi), a NaN ``x`` giving ``lo`` (fmaxf's rule; Triton
    leaves NaN bounds undefined, and folding refuses them)."""
    return np.fmin(np.fmax(x, lo), hi)


def _clamp_nan(np: Any, x: Any, lo: Any, hi: Any) -> Any:
    """clamp, a NaN ``x`` staying NaN (PropagateNan.ALL applies to x only)."""
    return np.where(np.isnan(x), x, _clamp(np, x, lo, hi))


def _fma(np: Any, x: Any, y: Any, z: Any) -> Any:
    """x * y + z, rounded once for f16, bf16 and f32: their product is exact
    in f64, so only the sum rounds before the final rounding (which can,
    rarely, differ from a true fused rounding by one ulp: not folded). f64
    is multiplied and added in f64 (NumPy has no fused multiply-add)."""
    dtype = np.result_type(x)
    wide = np.float64
    out = np.asarray(x).astype(wide) * np.asarray(y).astype(wide) + np.asarray(z).astype(wide)
    return out.astype(dtype)


def _umulhi(np: Any, a: Any, b: Any) -> Any:
    """The high half of the unsigned product of two 32- or 64-bit integers
    (CUDA's __umulhi / __umul64hi, read as the operands' own type)."""
    dtype = np.result_type(a)
    a, b = np.asarray(a), np.asarray(b)
    if dtype.itemsize == 4:
        wide = a.astype(np.uint32).astype(np.uint64) * b.astype(np.uint32).astype(np.uint64)
        return (wide >> np.uint64(32)).astype(np.uint32).astype(dtype)
    mask, s = np.uint64(0xFFFFFFFF), np.uint64(32)
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)
    a_lo, a_hi, b_lo, b_hi = ua & mask, ua >> s, ub & mask, ub >> s
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> s) + (hi_lo & mask) + lo_hi  # at most 2**64 - 1
    return (hi_hi + (hi_lo >> s) + (cross >> s)).astype(dtype)


def _nan_bound(x: Any, lo: Any, hi: Any) -> bool:
    """A NaN anywhere is the device's business for clamp (and Triton's: a NaN
    bound is undefined); so are signed zeros at the bounds."""
    return _min_max_undecided(x, lo) or _min_max_undecided(x, hi) or lo != lo or hi != hi


# NumPy's maximum and minimum give NaN where either operand is NaN (fmax and fmin do not).
_register(OpDef("maximum_nan", ("lhs", "rhs"), _arith("maximum_nan"), commutative=True, elementwise=True,
                semantics=lambda np, a, b: np.maximum(a, b), folds=True, fold_refuses=_min_max_undecided,
                doc="tl.maximum(..., propagate_nan=tl.PropagateNan.ALL): NaN if either is"))
_register(OpDef("minimum_nan", ("lhs", "rhs"), _arith("minimum_nan"), commutative=True, elementwise=True,
                semantics=lambda np, a, b: np.minimum(a, b), folds=True, fold_refuses=_min_max_undecided,
                doc="tl.minimum(..., propagate_nan=tl.PropagateNan.ALL): NaN if either is"))
_register(OpDef("clamp", ("x", "min", "max"), _float_operands("clamp", 3), elementwise=True,
                semantics=_clamp, folds=True, fold_refuses=_nan_bound,
                doc="tl.clamp(x, min, max): min(max(x, min), max); a NaN x gives min"))
_register(OpDef("clamp_nan", ("x", "min", "max"), _float_operands("clamp_nan", 3), elementwise=True,
                semantics=_clamp_nan, folds=True, fold_refuses=_nan_bound,
                doc="tl.clamp(..., propagate_nan=tl.PropagateNan.ALL): a NaN x stays NaN"))
_register(OpDef("fma", ("x", "y", "z"), _float_operands("fma", 3), elementwise=True,
                semantics=_fma, doc="x * y + z with one rounding (fmaf / fma)"))
_register(OpDef("div_rn", ("lhs", "rhs"), _float_operands("div_rn", 2), elementwise=True,
                semantics=lambda np, a, b: np.true_divide(a, b), folds=True, fold_refuses=_divides_badly,
                doc="x / y rounded to nearest even (IEEE), as tl.div_rn"))
_register(OpDef("umulhi", ("lhs", "rhs"), _umulhi_rule, commutative=True, elementwise=True,
                semantics=_umulhi, folds=True,
                doc="the high 32 (64) bits of the unsigned 64-bit (128-bit) product"))

def _shift_rule(name: str) -> InferFn:
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        a, b = types
        e = concrete(promote(_numeric(a, "the left operand", name), _numeric(b, "the right operand", name)))
        if not e.is_int:
            raise _err(f"'{name}' needs integer operands, got {a} and {b}")
        return [with_element(_broadcast(a, b), e)]

    return infer


def _shift_out_of_range(a: Any, b: Any) -> bool:
    """A shift by a negative amount or by the width or more is undefined in
    C (folding only sees i32 results)."""
    return not 0 <= b < 32


# << and >> on runtime integers, as Triton's shl and ashr/lshr: >> keeps the
# sign of a signed operand and shifts zeros into an unsigned one (C's rule
# for the two, and NumPy's right_shift).
_register(OpDef("shl", ("lhs", "rhs"), _shift_rule("shl"), elementwise=True,
                semantics=lambda np, a, b: np.left_shift(a, b), folds=True, fold_refuses=_shift_out_of_range,
                doc="x << y; undefined for y < 0 or y >= the width"))
_register(OpDef("shr", ("lhs", "rhs"), _shift_rule("shr"), elementwise=True,
                semantics=lambda np, a, b: np.right_shift(a, b), folds=True, fold_refuses=_shift_out_of_range,
                doc="x >> y: arithmetic for signed x, logical for unsigned; undefined for y < 0 or y >= the width"))

# ---- shape ops ------------------------------------------------------
# Ops that move elements without computing on them. Each result element is
# one operand element at coordinates ``source_coords`` maps it to (a remap of
# indices, as ``trans`` swaps two): the interpreter moves NumPy axes, and the
# CUDA emitter fills the result's slots reading the operand there (through
# shared memory where another thread holds it). ``broadcast_to`` is the
# elementwise exception: it reads its operand as any broadcasting op does.


def _tile(x: Type | None, op: str) -> BlockType:
    if not isinstance(x, BlockType):
        raise _err(f"'{op}' takes a tile, got {x}")
    return x


def _int_tuple(value: Any, what: str, op: str) -> tuple[int, ...]:
    if not (isinstance(value, tuple) and value
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise _err(f"the {what} of '{op}' is a tuple of integers, got {value!r}")
    return value


def _permute(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    x = _tile(types[0], "permute")
    dims = _int_tuple(attrs.get("dims"), "dims", "permute")
    if sorted(dims) != list(range(len(x.shape))):
        raise _err(f"the dims of 'permute' are a permutation of 0..{len(x.shape) - 1}, got {dims}")
    return [BlockType(tuple(x.shape[d] for d in dims), x.element)]


def _reshape(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    x = _tile(types[0], "reshape")
    shape = _int_tuple(attrs.get("shape"), "shape", "reshape")
    if any(d < 1 for d in shape):
        raise _err(f"the shape of 'reshape' has positive sizes, got {shape}")
    if math.prod(shape) != x.numel:
        raise _err(f"'reshape' keeps the number of elements: {x} has {x.numel}, "
                   f"shape {shape} holds {math.prod(shape)}")
    return [BlockType(shape, x.element)]


def _split(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    x = _tile(types[0], "split")
    if len(x.shape) < 2 or x.shape[-1] != 2:
        raise _err(f"'split' takes a tile of rank 2 or more whose last dimension is 2, got {x}")
    if attrs.get("index") not in (0, 1) or isinstance(attrs.get("index"), bool):
        raise _err(f"the index of 'split' is 0 or 1, got {attrs.get('index')!r}")
    return [BlockType(x.shape[:-1], x.element)]


def _join(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b = _tile(types[0], "join"), _tile(types[1], "join")
    if a != b:
        raise _err(f"'join' takes two tiles of one type, got {a} and {b}")
    return [BlockType((*a.shape, 2), a.element)]


def _broadcast_to(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (x,) = types
    shape = _int_tuple(attrs.get("shape"), "shape", "broadcast_to")
    if any(d < 1 for d in shape):
        raise _err(f"the shape of 'broadcast_to' has positive sizes, got {shape}")
    if len(shape_of(x)) > len(shape) or _broadcast(x, BlockType(shape, BOOL)) != shape:
        raise _err(f"{x} does not broadcast to the shape {shape}")
    e = element_of(x)
    return [BlockType(shape, concrete(e) if isinstance(e, WeakType) else e)]


def source_coords(op_name: str, attrs: dict[str, Any], operand_shapes: list[tuple[int, ...]],
                  coords: list[Any], linear: Callable[[list[Any], tuple[int, ...]], list[Any]]) -> list[list[Any]]:
    """For a shape op, the coordinates of each operand element that the result
    element at ``coords`` is. ``linear(coords, from_shape)`` re-indexes
    row-major coordinates into ``operand_shapes[0]`` (reshape); ``split``
    adds its index (an int) as the last coordinate; ``join`` reads both
    operands at the leading coordinates (the last one picks the operand)."""
    if op_name == "trans":
        return [coords[::-1]]
    if op_name == "permute":
        out: list[Any] = [None] * len(coords)
        for i, d in enumerate(attrs["dims"]):
            out[d] = coords[i]
        return [out]
    if op_name == "reshape":
        return [linear(coords, operand_shapes[0])]
    if op_name == "split":
        return [[*coords, attrs["index"]]]
    if op_name == "join":
        return [coords[:-1], coords[:-1]]
    raise KeyError(op_name)


REMAPS = ("trans", "permute", "reshape", "split", "join")

_register(OpDef("permute", ("x",), _permute, attrs=("dims",), materialised=True,
                doc="x with its dimensions reordered: result dim i is x's dim dims[i] (tl.permute, tl.trans)"))
_register(OpDef("reshape", ("x",), _reshape, attrs=("shape",), materialised=True,
                doc="x's elements in row-major order, read as a tile of another shape (tl.reshape, tl.view)"))
_register(OpDef("split", ("x",), _split, attrs=("index",), materialised=True,
                doc="x[..., index] of a tile whose last dimension is 2 (one half of tl.split)"))
_register(OpDef("join", ("a", "b"), _join, materialised=True,
                doc="a and b stacked along a new last dimension of size 2 (tl.join)"))
_register(OpDef("broadcast_to", ("x",), _broadcast_to, attrs=("shape",), elementwise=True,
                doc="x broadcast to shape (tl.broadcast_to)"))

# ---- pipelined K loop --------------------------------------------
# The software-pipeline pass turns a staged dot's loop into a multi-buffered one: each
# shared buffer holds ``stages`` tiles one above the other, ``stage_view``
# names one of them, ``async_copy_to_shared`` fills one without waiting
# (cp.async on the GPU), ``async_commit`` closes a thread's group of such
# copies and ``async_wait`` waits until at most ``pending`` groups are in
# flight. The copies write shared memory and the commit and wait order them:
# effects, so no pass removes, merges or moves them. A view reads shared
# memory as far as the passes know (the interpreter copies the stage out when
# it is taken), so it is never hoisted or merged across a copy either.


def _stage_view(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    buffer, stage = types
    stages = attrs.get("stages")
    if not (isinstance(stages, int) and not isinstance(stages, bool) and 1 <= stages <= 64):
        raise _err(f"'stage_view' needs stages from 1 to 64, got {stages!r}")
    if not isinstance(buffer, SharedType):
        raise _err(f"'stage_view' views a shared buffer, got {buffer}")
    rows, cols = buffer.shape
    if rows % stages:
        raise _err(f"'stage_view' cannot split {buffer} into {stages} stages: {rows} rows")
    if stage is None or shape_of(stage) or concrete(stage) != I32:
        raise _err(f"the stage of 'stage_view' must be an i32 scalar, got {stage or 'none'}")
    return [SharedType((rows // stages, cols), buffer.element)]


def _shared_alloc_stages(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    stages = attrs.get("stages")
    if not (isinstance(stages, int) and not isinstance(stages, bool) and 1 <= stages <= 64):
        raise _err(f"'shared_alloc_stages' needs stages from 1 to 64, got {stages!r}")
    (one,) = _shared_alloc(types, attrs)
    rows, cols = one.shape
    return [SharedType((rows * stages, cols), one.element)]


def _async_form(rule: InferFn, name: str) -> InferFn:
    """The type rule of ``async_<name>``: ``name``'s operands, then a bool scalar predicate."""
    async_name = f"async_{name}"

    def async_rule(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        *copy, pred = types
        try:
            rule(copy, attrs)
        except TypeRuleError as err:
            raise _err(str(err).replace(f"'{name}'", f"'{async_name}'")) from None
        if pred is None or shape_of(pred) or concrete(pred) != BOOL:
            raise _err(f"the predicate of '{async_name}' must be a bool scalar, got {pred or 'none'}")
        if attrs.get("engine", "tma") != "tma":
            raise _err(f"the engine of '{async_name}' is \"tma\" or absent (cp.async), got {attrs['engine']!r}")
        return []

    return async_rule


_async_copy_to_shared = _async_form(_copy_to_shared, "copy_to_shared")


def _async_wait(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    pending = attrs.get("pending")
    if not (isinstance(pending, int) and not isinstance(pending, bool) and 0 <= pending <= 62):
        raise _err(f"'async_wait' needs pending from 0 to 62, got {pending!r}")
    return []


_register(OpDef("shared_alloc_stages", (), _shared_alloc_stages, attrs=("name", "shape", "dtype", "stages", "offset"),
                optional_attrs=("offset",), allocates=True,
                doc="a zero-filled buffer of stages buffers of shape, one above the other (at byte offset, "
                    "as shared_alloc)"))
_register(OpDef("stage_view", ("buffer", "stage"), _stage_view, attrs=("stages",), reads_shared=True,
                shared_operands=("buffer",),
                doc="rows [stage * R, (stage + 1) * R) of a buffer of stages * R rows, as an R-row buffer"))
_register(OpDef("async_copy_to_shared", ("buffer", "base", "row_offset", "col_offset", "row_stride", "row_bound",
                                         "col_bound", "fill", "pred"), _async_copy_to_shared,
                reads_global=True, writes_shared=True, async_shared_write=True, address_operand="base",
                shared_operands=("buffer",),
                attrs=PIPELINED_COPY_ATTRS, optional_attrs=PIPELINED_COPY_ATTRS,
                doc="where pred holds, copy_to_shared without waiting for it; visible after "
                    "async_commit, async_wait and a barrier" + ASYNC_COPY_DOC + TMA_COPY_DOC))
def is_tma_copy(op: Any) -> bool:
    """An async copy into shared memory that TMA makes (tma-copies' ``engine="tma"``)."""
    opdef = lookup(op.name)
    return op.attrs.get("engine") == "tma" and opdef is not None and opdef.async_shared_write


_register(OpDef("async_commit", (), _none, synchronises=True,
                doc="closes this thread's group of async copies issued since the last commit"))
_register(OpDef("async_wait", (), _async_wait, attrs=("pending",), synchronises=True,
                doc="waits until at most pending of this thread's committed copy groups are in flight"))
# The proxy-fences pass's, before a loop whose wgmma dots read buffers plain
# stores wrote before it (attention's Q): one fence where the dot's own would
# come every iteration.
_register(OpDef("proxy_fence", (), _none, synchronises=True,
                doc="this thread's plain stores to shared memory so far are visible to wgmma's reads "
                    "(fence.proxy.async) after the next barrier"))

# A loop the software-pipeline pass has multi-buffered says how many stages it got
# (fewer than num_stages asked for where shared memory does not allow more).
LOOP_ATTRS = LOOP_ATTRS + ("pipeline_stages",)
OPS["for"] = replace(OPS["for"], attrs=LOOP_ATTRS)

# ---- warpgroup dots ---------------------------------------------------------
# A dot_shared with ``in_flight=1`` (the overlap-wgmma pass sets it on a
# pipelined loop's warpgroup dot) issues its tensor-core group and returns at
# once: its result is complete only after a later ``wgmma_wait`` of it, which
# the verifier requires before any other use. What comes between (the next
# tiles' copies) overlaps the multiplication. The CUDA back end lists the
# accumulator's registers in a pending-0 wait, so that nvcc cannot move a
# read of them above it.


def _wgmma_wait(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (acc,) = types
    if not isinstance(acc, BlockType):
        raise _err(f"'wgmma_wait' completes a dot's accumulator tile, got {acc}")
    pending = attrs.get("pending")
    if type(pending) is not int or not 0 <= pending <= 1:
        raise _err(f"'wgmma_wait' needs pending 0 or 1, got {pending!r}")
    return []


_register(OpDef("wgmma_wait", ("acc",), _wgmma_wait, attrs=("pending",), synchronises=True,
                doc="waits until at most pending of this warpgroup's in_flight dot groups remain; acc, "
                    "the result of such a dot, is complete after pending=0"))

# ---- libdevice ----------------------------------------------------------------------
# The functions of Triton's ``tl.extra.libdevice`` that no ``tl.<name>`` has:
# the rows of ir/math_functions.py without ``tl``, which give each one's
# semantics, spellings and the dtypes Triton's table takes. They are not in
# the math group: that group is ``tl.<name>``, and Triton's tl has none of
# these.


def _libdevice_predicate(name: str) -> InferFn:
    """isnan, isinf, signbit: a float operand, a bool per element (Triton
    converts libdevice's int32 answer to int1)."""
    def infer(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
        (a,) = types
        e = concrete(_numeric(a, "the operand", name))
        if not e.is_float:
            raise _err(f"'{name}' needs a floating-point operand, got {a}")
        return [with_element(shape_of(a), BOOL)]

    return infer


def _llrint_rule(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    e = concrete(_numeric(a, "the operand", "llrint"))
    if not e.is_float:
        raise _err(f"'llrint' needs a floating-point operand, got {a}")
    return [with_element(shape_of(a), I64)]


_LIBDEVICE_RULES: dict[str, Callable[[str], InferFn]] = {
    "float": lambda name: _float_operands(name, math_functions.BY_NAME[name].operands),
    "bool": _libdevice_predicate,
    "i64": lambda name: _llrint_rule,
}
for _row in math_functions.TABLE:
    if _row.tl:
        continue
    _operands = ("lhs", "rhs") if _row.operands == 2 else ("x",)
    _register(OpDef(_row.name, _operands, _LIBDEVICE_RULES[_row.answers](_row.name), elementwise=True,
                    semantics=_row.semantics, computes_in="float" if _row.answers == "float" else "operands",
                    folds=_row.folds, fold_refuses=_row.fold_refuses, doc=f"libdevice.{_row.name}: {_row.doc}"))
LIBDEVICE_OPS = math_functions.LIBDEVICE_ONLY

# ---- pointers from memory ---------------------------------------------------------
# ``x.to(tl.pointer_type(T))`` of a 64-bit integer (an address loaded from an
# array, as grouped GEMM loads its matrices' addresses) and ``p.to(tl.int64)``
# of a pointer: Triton's tt.int_to_ptr and tt.ptr_to_int. On the GPU they
# reinterpret the address; the interpreter maps an address into the array
# passed to the launch that holds it (backends/interp.py, ``int_to_ptr``).


def _int_to_ptr(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    pointee = _dtype_attr(attrs)
    e = concrete(_numeric(a, "the operand", "int_to_ptr"))
    if not (e.is_int and e.bits == 64):
        raise _err(f"'int_to_ptr' needs a 64-bit integer address (i64 or u64), got {a}")
    return [with_element(shape_of(a), PointerType(pointee))]


def _ptr_to_int(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    (a,) = types
    if not isinstance(element_of(a), PointerType):
        raise _err(f"'ptr_to_int' needs a pointer, got {a}")
    dtype = _dtype_attr(attrs)
    if dtype not in (I64, U64):
        raise _err(f"'ptr_to_int' gives i64 or u64 (an address has 64 bits), not {dtype}")
    return [with_element(shape_of(a), dtype)]


_register(OpDef("int_to_ptr", ("x",), _int_to_ptr, attrs=("dtype",), elementwise=True,
                doc="the 64-bit address x as a pointer to dtype (x.to(tl.pointer_type(dtype)))"))
_register(OpDef("ptr_to_int", ("x",), _ptr_to_int, attrs=("dtype",), elementwise=True,
                doc="the address the pointer x holds, as dtype i64 or u64 (ptr.to(tl.int64))"))
# ---- atomics ----
# tl.atomic_add/max/min/and/or/xor/xchg (one ``atomic_rmw`` op, its ``kind`` an
# attribute, as Triton's tt.atomic_rmw) and tl.atomic_cas. Each reads AND
# writes global memory: CSE never merges two, DCE keeps one whose result is
# unused, LICM never hoists one, and no pass moves a load or store across it.
# The result is the old value at each address (0 where the mask is off).
# tl.debug_barrier is the ``barrier`` op.

ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")
ATOMIC_SEMS = ("acquire", "release", "acq_rel", "relaxed")
ATOMIC_SCOPES = ("gpu", "cta", "sys")


def atomic_dtype_problem(kind: str, pointee: ScalarType) -> str | None:
    """Why ``kind`` cannot act on ``pointee``, as Triton's
    _validate_atomic_rmw_element_type says (f16 and bf16 only add; i1, i8
    and i16 none; max/min of floats only f32 and f64; bitwise ops integers
    only), or None."""
    if pointee.is_bool or (pointee.is_int and pointee.bits < 32):
        return f"atomic_{kind} does not support {pointee}"
    if pointee in (F16, BF16) and kind != "add":
        return f"atomic_{kind} does not support {pointee} (only atomic_add does)"
    if kind in ("and", "or", "xor") and pointee.is_float:
        return f"atomic_{kind} needs integers, not {pointee}"
    return None


def _atomic_attrs(attrs: dict[str, Any], op: str) -> None:
    if attrs.get("sem") not in ATOMIC_SEMS:
        raise _err(f"the sem of '{op}' is one of {', '.join(ATOMIC_SEMS)}, got {attrs.get('sem')!r}")
    if attrs.get("scope") not in ATOMIC_SCOPES:
        raise _err(f"the scope of '{op}' is one of {', '.join(ATOMIC_SCOPES)}, got {attrs.get('scope')!r}")


def _atomic_value(ptr: Type | None, value: Type | None, what: str, op: str) -> None:
    if isinstance(element_of(value), PointerType):
        raise _err(f"the {what} of '{op}' cannot be a pointer")
    if _broadcast(ptr, value) != shape_of(ptr):
        raise _err(f"the {what} of '{op}' ({value}) must broadcast to the pointer's shape {ptr}")


def _atomic_pointee(ptr: Type | None, op: str) -> ScalarType:
    pointee = _pointer_element(ptr, op).pointee
    if not isinstance(pointee, ScalarType):
        raise _err(f"'{op}' acts on numbers, not on {pointee}")
    return pointee


def _atomic_rmw(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    ptr, value, mask = types
    pointee = _atomic_pointee(ptr, "atomic_rmw")
    kind = attrs.get("kind")
    if kind not in ATOMIC_KINDS:
        raise _err(f"the kind of 'atomic_rmw' is one of {', '.join(ATOMIC_KINDS)}, got {kind!r}")
    _atomic_attrs(attrs, "atomic_rmw")
    problem = atomic_dtype_problem(kind, pointee)
    if problem:
        raise _err(problem)
    _atomic_value(ptr, value, "value", "atomic_rmw")
    _mask_ok(mask, "atomic_rmw")
    if mask is not None and _broadcast(ptr, mask) != shape_of(ptr):
        raise _err(f"the mask of 'atomic_rmw' must broadcast to the pointer's shape {ptr}")
    return [with_element(shape_of(ptr), pointee)]


def _atomic_cas(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    ptr, cmp, value = types
    pointee = _atomic_pointee(ptr, "atomic_cas")
    _atomic_attrs(attrs, "atomic_cas")
    if pointee.is_bool or pointee.bits not in (32, 64):
        raise _err(f"atomic_cas needs 32- or 64-bit elements, not {pointee}")
    _atomic_value(ptr, cmp, "cmp", "atomic_cas")
    _atomic_value(ptr, value, "value", "atomic_cas")
    return [with_element(shape_of(ptr), pointee)]


_register(OpDef("atomic_rmw", ("ptr", "value", "mask?"), _atomic_rmw, attrs=("kind", "sem", "scope"),
                optional_attrs=("vector",), reads_global=True, writes_global=True, address_operand="ptr", materialised=True,
                doc="tl.atomic_<kind>: at each address where mask holds, old = *ptr; *ptr = kind(old, value), "
                    "one element at a time; the result is old (0 where the mask is off)"))
_register(OpDef("atomic_cas", ("ptr", "cmp", "value"), _atomic_cas, attrs=("sem", "scope"),
                reads_global=True, writes_global=True, address_operand="ptr", materialised=True,
                doc="tl.atomic_cas: at each address, old = *ptr; if old == cmp then *ptr = value; the result is old"))
ATOMIC_OPS = ("atomic_rmw", "atomic_cas")
# ---- stage Triton-tutorial dots ----------------------------------------
# Triton's tutorials address a dot's operand through pointer tiles with
# runtime strides on both axes, rows taken modulo the matrix height
# (``(pid_m * BM + arange) % M``) and masks on one axis only; stage-dots copies
# such tiles with ``copy_strided_to_shared`` (and the software-pipeline pass with its
# async form). A wrap of 0 is none; a bound the mask does not test is
# 2147483647 (every i32 coordinate passes).

# A copy whose mask tests an axis's coordinates >= 0 too, where they may be
# negative (a tensor descriptor's rows at a place of runtime sizes): its
# attribute lower_bounds=(rows, cols), 1 for each such axis.
LOWER_BOUNDS = "lower_bounds"
COPY_STRIDED_OPERANDS = ("buffer", "base", "row_offset", "col_offset", "row_stride", "col_stride", "row_bound",
                         "col_bound", "row_wrap", "col_wrap", "fill")


def _copy_strided_to_shared(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    buffer, base, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound, row_wrap, col_wrap, fill \
        = types
    try:
        # A stride may be i64: the coordinates it scales are then multiplied in
        # 64 bits (a kernel's offsets widened with .to(tl.int64) against overflow).
        _copy_to_shared([buffer, base, row_offset, col_offset, _narrowed(row_stride), row_bound, col_bound, fill],
                        attrs)
        for t, what in ((_narrowed(col_stride), "the column stride"), (row_wrap, "the row wrap"),
                        (col_wrap, "the column wrap")):
            _i32_scalar(t, what)
    except TypeRuleError as err:
        raise _err(str(err).replace("'copy_to_shared'", "'copy_strided_to_shared'")) from None
    lower = attrs.get(LOWER_BOUNDS, (0, 0))
    if not (isinstance(lower, tuple) and len(lower) == 2 and all(flag in (0, 1) and type(flag) is int
                                                                  for flag in lower)):
        raise _err(f"{LOWER_BOUNDS} of 'copy_strided_to_shared' must be a pair of 0 or 1 (rows, columns), "
                   f"got {lower!r}")
    return []


def _narrowed(stride: Type | None) -> Type | None:
    """An i64 stride checked as the i32 ones are."""
    return I32 if stride is not None and not shape_of(stride) and concrete(stride) == I64 else stride


_async_copy_strided_to_shared = _async_form(_copy_strided_to_shared, "copy_strided_to_shared")


_register(OpDef("copy_strided_to_shared", COPY_STRIDED_OPERANDS, _copy_strided_to_shared, reads_global=True,
                writes_shared=True, address_operand="base", shared_operands=("buffer",),
                attrs=(*ASYNC_COPY_ATTRS, LOWER_BOUNDS), optional_attrs=(*ASYNC_COPY_ATTRS, LOWER_BOUNDS),
                doc="with R = wrap(row_offset + r, row_wrap), C = wrap(col_offset + c, col_wrap) (wrap(x, 0) = x, "
                    "else x mod w as 'mod'): buffer[r, c] = (R < row_bound && C < col_bound) "
                    "? base[R * row_stride + C * col_stride] : fill; a stride is i32 or i64, an i64 one "
                    "multiplying its coordinates in 64 bits; lower_bounds=(1, 0) (rows), (0, 1) (columns): "
                    "R >= 0 (C >= 0) is tested too" + SYNC_COPY_DOC))
_register(OpDef("async_copy_strided_to_shared", (*COPY_STRIDED_OPERANDS, "pred"), _async_copy_strided_to_shared,
                reads_global=True, writes_shared=True, async_shared_write=True, address_operand="base",
                shared_operands=("buffer",),
                attrs=(*PIPELINED_COPY_ATTRS, LOWER_BOUNDS), optional_attrs=(*PIPELINED_COPY_ATTRS, LOWER_BOUNDS),
                doc="where pred holds, copy_strided_to_shared without waiting for it; visible after "
                    "async_commit, async_wait and a barrier" + ASYNC_COPY_DOC + TMA_COPY_DOC))

# A tile stored as one box (tma-stores): the laid-out store of a dot's result
# at a pointer parameter's rows and columns, both bounded, which TMA writes
# from shared memory in one instruction a box, dropping what lies outside.
STORE_TILE_OPERANDS = ("base", "row_offset", "col_offset", "row_stride", "row_bound", "col_bound", "value")


def _store_tile(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    base, row_offset, col_offset, row_stride, row_bound, col_bound, value = types
    if not isinstance(base, PointerType):
        raise _err(f"the base of 'store_tile' must be a scalar pointer, got {base}")
    if not isinstance(value, BlockType) or len(value.shape) != 2:
        raise _err(f"'store_tile' stores a 2-D tile, got {value}")
    if value.element != base.pointee:
        raise _err(f"'store_tile' cannot store {value} through {base}: the element types differ")
    for t, what in ((row_offset, "the row offset"), (col_offset, "the column offset"),
                    (row_stride, "the row stride"), (row_bound, "the row bound"), (col_bound, "the column bound")):
        if t is None or shape_of(t) or concrete(t) != I32:
            raise _err(f"{what} of 'store_tile' must be an i32 scalar, got {t or 'none'}")
    return []


_register(OpDef("store_tile", STORE_TILE_OPERANDS, _store_tile, writes_global=True, address_operand="base",
                stages_through_scratch=True,
                attrs=("engine",), optional_attrs=("engine",),
                doc="base[(row_offset + r) * row_stride + col_offset + c] = value[r, c] where row_offset + r < "
                    "row_bound and col_offset + c < col_bound (the offsets never negative); engine 'tma': TMA "
                    "writes it from shared memory, through a tensor map (tma-stores)"))

# A tile whose rows are gathered (Liger's fused MoE: each row of x is the
# token an index array names): row r of the copy is the row index[row_offset + r]
# of the matrix at base, read where row_offset + r < row_bound, the positions
# the kernel's mask tests. The copy reads the index itself, so it needs no
# register tile of indices in the threads that copy each row.

COPY_GATHERED_OPERANDS = ("buffer", "base", "index", "row_offset", "col_offset", "row_stride", "col_stride",
                          "row_bound", "col_bound", "fill")


def _copy_gathered_to_shared(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    buffer, base, index, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound, fill = types
    if not isinstance(index, PointerType) or index.pointee not in (I32, I64):
        raise _err(f"the index of 'copy_gathered_to_shared' must be a scalar pointer to i32 or i64, got {index}")
    try:
        _copy_strided_to_shared([buffer, base, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound,
                                 I32, I32, fill], attrs)
    except TypeRuleError as err:
        raise _err(str(err).replace("'copy_strided_to_shared'", "'copy_gathered_to_shared'")) from None
    return []


_async_copy_gathered_to_shared = _async_form(_copy_gathered_to_shared, "copy_gathered_to_shared")


_register(OpDef("copy_gathered_to_shared", COPY_GATHERED_OPERANDS, _copy_gathered_to_shared, reads_global=True,
                writes_shared=True, address_operand="base", shared_operands=("buffer",),
                attrs=ASYNC_COPY_ATTRS, optional_attrs=ASYNC_COPY_ATTRS,
                doc="with P = row_offset + r, C = col_offset + c: buffer[r, c] = (P < row_bound && C < col_bound) "
                    "? base[index[P] * row_stride + C * col_stride] : fill (index read only where P < row_bound); "
                    "a stride is i32 or i64, an i64 one multiplying its coordinates in 64 bits" + SYNC_COPY_DOC))
_register(OpDef("async_copy_gathered_to_shared", (*COPY_GATHERED_OPERANDS, "pred"), _async_copy_gathered_to_shared,
                reads_global=True, writes_shared=True, async_shared_write=True, address_operand="base",
                shared_operands=("buffer",),
                attrs=(*ASYNC_COPY_ATTRS, ZERO_FILL), optional_attrs=(*ASYNC_COPY_ATTRS, ZERO_FILL),
                doc="where pred holds, copy_gathered_to_shared without waiting for it; visible after "
                    "async_commit, async_wait and a barrier" + ASYNC_COPY_DOC))

# ---- sort and histogram ----------------------------------------------------------
# tl.histogram(x, num_bins, mask=None): Triton's tt.histogram. The counts of
# the values 0 .. num_bins - 1 in a vector of 32-bit integers (bins of width 1
# from 0); values outside that range, and elements whose mask is false, are
# not counted. (tl.sort and tl.flip need no op: language/sorting.py writes
# them over reshape, sum and where.) On the GPU each thread adds its elements
# into a shared-memory bin array with shared atomics
# (backends/cuda/histogram.py). Its layout rule is "convert": the result's
# layout has nothing to do with the operand's.


def histogram_problem(num_bins: Any) -> str | None:
    """Why ``num_bins`` cannot be a histogram's number of bins, or None: it
    is the result's length, so a power of two as every tile's is."""
    if not isinstance(num_bins, int) or isinstance(num_bins, bool):
        return f"the number of bins must be an integer constant, got {num_bins!r}"
    if num_bins < 1 or not _is_power_of_two(num_bins):
        return f"the number of bins must be a positive power of two (it is the result's length), got {num_bins}"
    return None


def _histogram(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    x, mask = types
    if not isinstance(x, BlockType) or len(x.shape) != 1:
        raise _err(f"'histogram' counts the values of a 1-D tile (as Triton's), got {x}")
    e = element_of(x)
    if e not in (I32, U32):
        raise _err(f"'histogram' counts 32-bit integers (i32 or u32, as Triton's), not {e}")
    problem = histogram_problem(attrs.get("num_bins"))
    if problem:
        raise _err(f"'histogram': {problem}")
    _mask_ok(mask, "histogram")
    if mask is not None and _broadcast(x, mask) != x.shape:
        raise _err(f"the mask of 'histogram' ({mask}) must broadcast to the input's shape {x}")
    return [BlockType((attrs["num_bins"],), I32)]


def histogram_counts(np: Any, x: Any, mask: Any, num_bins: int) -> Any:
    """The counts of each program's row of ``x`` (shape [P, n]) in bins
    0 .. num_bins - 1, as int32 [P, num_bins]; values outside the range and
    elements where ``mask`` (broadcast to x, or None) is false count nowhere."""
    programs = x.shape[0]
    values = x.astype(np.int64)
    counted = (values >= 0) & (values < num_bins)
    if mask is not None:
        counted &= np.broadcast_to(mask, x.shape)
    rows = np.broadcast_to(np.arange(programs, dtype=np.int64)[:, None], x.shape)
    flat = (rows * num_bins + values)[counted]
    return np.bincount(flat, minlength=programs * num_bins).reshape(programs, num_bins).astype(np.int32)


_register(OpDef("histogram", ("x", "mask?"), _histogram, attrs=("num_bins",), materialised=True, layout_rule="convert",
                doc="tl.histogram: the int32 counts of the values 0 .. num_bins - 1 among x's elements where mask "
                    "holds (a 1-D tile of i32 or u32; other values are not counted)"))
# ---- inline assembly ---------------------------------------------------------------
# tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack=1):
# Triton's tt.elementwise_inline_asm, one result per element of the
# arguments broadcast together. ``inline_asm`` is pure (CSE may merge two,
# DCE drop an unused one); ``inline_asm_volatile`` (is_pure=False) is an
# effect that nothing moves a memory access across. ir/inline_asm.py reads
# the constraints; the interpreter cannot run PTX and says so.


def _inline_asm(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    from mytriton.ir import inline_asm

    try:
        constraints = inline_asm.parse(attrs["constraints"])
    except ValueError as err:
        raise _err(f"inline asm: {err}") from None
    if len(constraints.outputs) != 1 or len(constraints.inputs) != len(types):
        raise _err(f"inline asm: the constraints {attrs['constraints']!r} give {len(constraints.outputs)} output(s) "
                   f"and {len(constraints.inputs)} input(s), for 1 result and {len(types)} operand(s)")
    dtype = attrs["dtype"]
    for letter, t in zip(constraints.inputs, types):
        problem = inline_asm.fit_problem(letter, element_of(t)) if t is not None else "an operand is none"
        if problem:
            raise _err(f"inline asm: {problem}")
    problem = inline_asm.fit_problem(constraints.outputs[0], dtype)
    if problem:
        raise _err(f"inline asm: {problem}")
    shape = _broadcast(*types)
    return [BlockType(shape, dtype) if shape else dtype]


def _inline_asm_volatile(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    # An effect runs once, where it is: the CUDA back end computes a tile's
    # elements where they are used, so only scalars (as the frontend allows).
    (result,) = _inline_asm(types, attrs)
    if isinstance(result, BlockType):
        raise _err(f"inline asm that is not pure takes scalars only, got a result of {result}")
    return [result]


_INLINE_ASM_DOC = ("tl.inline_asm_elementwise: the PTX asm run once per element of the operands (broadcast), "
                   "$N its operand N, the constraints' registers (ir/inline_asm.py), one result of dtype")
_register(OpDef("inline_asm", ("args*",), _inline_asm, attrs=("asm", "constraints", "dtype"),
                doc=_INLINE_ASM_DOC + "; pure"))
_register(OpDef("inline_asm_volatile", ("args*",), _inline_asm_volatile, attrs=("asm", "constraints", "dtype"),
                synchronises=True, doc=_INLINE_ASM_DOC + "; not pure (is_pure=False): an effect, never moved"))
# ---- gather ---------------------------------------------------------------------
# tl.gather(src, index, axis): Triton's tt.gather. The result has index's shape
# and src's elements: result[..., i, ...] = src[..., index[..., i, ...], ...]
# along ``axis``, every other coordinate the same (index matches src on every
# other axis). On the GPU src goes through shared memory and each thread
# reads its result elements there (backends/cuda/gather.py); the result is
# laid out as index is (passes/layouts.py), src as its producers leave it.


def gather_problem(src: Type | None, index: Type | None, axis: Any) -> str | None:
    """Why tl.gather cannot take these operands, or None."""
    if not isinstance(src, BlockType) or not isinstance(index, BlockType):
        return f"it gathers from a tile with a tile of indices, got {src} and {index}"
    if not element_of(index).is_int:
        return f"the index must be a tile of integers, got {index}"
    if len(src.shape) != len(index.shape):
        return f"the source and the index must have the same rank, got {src} and {index}"
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < len(src.shape):
        return f"the axis must be an integer from 0 to {len(src.shape) - 1}, got {axis!r}"
    for d, (s, i) in enumerate(zip(src.shape, index.shape)):
        if d != axis and s != i:
            return f"the index's dimension {d} ({i}) must be the source's ({s}): only axis {axis} may differ"
    return None


def _gather(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    src, index = types
    problem = gather_problem(src, index, attrs.get("axis"))
    if problem:
        raise _err(f"'gather': {problem}")
    assert isinstance(index, BlockType)
    return [BlockType(index.shape, element_of(src))]


def gather_values(np: Any, src: Any, index: Any, axis: int) -> Any:
    """tl.gather over a leading program axis: src [P, ...], index [P, ...]
    (in range); result index's shape."""
    return np.take_along_axis(src, index.astype(np.int64), axis=axis + 1)


_register(OpDef("gather", ("src", "index"), _gather, attrs=("axis",), materialised=True, layout_rule="convert",
                doc="tl.gather: src's elements at index along axis (result[.., i, ..] = src[.., index[.., i, ..], ..]), "
                    "index's shape; index matches src on every other axis"))
# ---- scans ---------------------------------------------------------------------
# tl.reduce and tl.associative_scan with a @jit combine function: ``reduce`` and
# ``scan`` take N >= 1 tiles of one shape and a combine region (ssa.make_combine)
# whose block takes N "left" scalars then N "right" ones and yields N. The
# region is assumed associative (Triton's contract), not commutative: every
# back end keeps the order of the elements it combines. The interpreter runs
# the region on whole NumPy arrays (backends/interp.py).

MAX_COMBINE_OPERANDS = 16


def combine_elements(types: list[Type | None], op: str) -> tuple[tuple[int, ...], list[ScalarType]]:
    """The common shape and the element types of a combine op's operands."""
    if not types:
        raise _err(f"'{op}' needs at least one tile")
    if len(types) > MAX_COMBINE_OPERANDS:
        raise _err(f"'{op}' takes at most {MAX_COMBINE_OPERANDS} tiles, got {len(types)}")
    shape: tuple[int, ...] | None = None
    elements: list[ScalarType] = []
    for i, t in enumerate(types):
        if t is None or not isinstance(t, BlockType):
            raise _err(f"operand {i} of '{op}' must be a tile, got {t if t is not None else 'none'}")
        e = concrete(element_of(t))
        if not isinstance(e, ScalarType):
            raise _err(f"operand {i} of '{op}' must hold numbers, got {t}")
        if shape is None:
            shape = t.shape
        elif t.shape != shape:
            raise _err(f"the tiles of '{op}' must have one shape; operand 0 is {types[0]} and operand {i} is {t}")
        elements.append(e)
    assert shape is not None
    return shape, elements


def _combine_axis(attrs: dict[str, Any], shape: tuple[int, ...], op: str, optional: bool) -> int | None:
    axis = attrs.get("axis")
    if axis is None and optional:
        return None
    if type(axis) is not int or not 0 <= axis < len(shape):
        raise _err(f"'{op}' axis {axis!r} is out of range for a tile of shape {list(shape)}")
    return axis


def _reduce_combine(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    shape, elements = combine_elements(types, "reduce")
    axis = _combine_axis(attrs, shape, "reduce", optional=True)
    if axis is None:
        return list(elements)
    return [with_element(shape[:axis] + shape[axis + 1:], e) for e in elements]


def _scan(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    shape, elements = combine_elements(types, "scan")
    _combine_axis(attrs, shape, "scan", optional=False)
    if type(attrs.get("reverse", False)) is not bool:
        raise _err(f"'scan' reverse must be true or false, got {attrs.get('reverse')!r}")
    return [BlockType(shape, e) for e in elements]


# ``strategy`` and ``chunks_per_row`` (laid-out SSA): the combine-strategy
# pass's answer, warp shuffles or shared memory, and for the latter how many
# chunks each row of the axis is cut into, a thread to each.
COMBINE_ATTRS = ("strategy", "chunks_per_row")
_register(OpDef("reduce", ("inputs",), _reduce_combine, attrs=("axis", *COMBINE_ATTRS),
                optional_attrs=COMBINE_ATTRS, combine=True, materialised=True,
                doc="tl.reduce: the N tiles (one shape) reduced along axis (none: all of it) by the combine "
                    "region, which takes N left then N right scalars and yields N; N results"))
_register(OpDef("scan", ("inputs",), _scan, attrs=("axis", "reverse", *COMBINE_ATTRS),
                optional_attrs=("reverse", *COMBINE_ATTRS), combine=True,
                materialised=True,
                doc="tl.associative_scan: the inclusive scans of the N tiles (one shape) along axis, from the "
                    "end when reverse, by the combine region (N left then N right scalars, yields N)"))

# ---- dots with a register operand ----------------------------
# Attention's P @ V: P is computed in registers (the softmax of Q @ K^T), V is
# a tile load that stage-dots copies into shared memory (and pipelines with
# K's copies). ``dot_rs`` multiplies the register tile ``a`` by the shared
# buffer ``b``: on Hopper, wgmma reads A from registers and B through a
# matrix descriptor; elsewhere A goes through shared scratch as a general
# dot's operands do.


def _dot_rs(types: list[Type | None], attrs: dict[str, Any]) -> list[Type]:
    a, b, acc = types
    if not (isinstance(a, BlockType) and isinstance(b, SharedType)):
        raise _err(f"'dot_rs' multiplies a register tile by a shared buffer, got {a} and {b}")
    return _dot_rule("dot_rs", a, b, acc, _in_flight_rule("dot_rs", attrs))


_register(OpDef("dot_rs", ("a", "b", "acc?"), _dot_rs,
                attrs=DOT_ATTRS + ("in_flight",) + FMA_DOT_ATTRS + SCRATCH_DOT_ATTRS + WGMMA_DOT_ATTRS,
                optional_attrs=DOT_ATTRS + ("in_flight",) + FMA_DOT_ATTRS + SCRATCH_DOT_ATTRS + WGMMA_DOT_ATTRS,
                reads_shared=True, shared_operands=("b",), materialised=True,
                doc="dot of the register tile a and the shared buffer b (plus acc), with dot's attributes "
                    "(a_pad included)"))

# ---- layout rules ---------------------------------------------------------------
# "elementwise": tile operands are read in the result's layout (sliced for a
#     lower-rank operand, which broadcasts); cheap enough to recompute in
#     another layout rather than move data;
# "expand_dims": the operand's layout is the result's sliced along the new axis;
# "load": like elementwise, but the result is held in registers (materialized);
# "store": the value and mask are read in the pointer's layout (for the ops
#     that talk to the host, the other operands in the first one's);
# "reduce": the result's layout is the operand's sliced along the axis (a
#     combine ``reduce``: every operand in one layout, every result its slice);
# "scan": every operand and result in one layout (held in registers);
# "dot": the accumulator is in the result's layout; operands in any;
# "convert": operand and result in any layouts: the ops that move data
#     (convert_layout, and trans, which reads its operand transposed);
# "none": no tile operand or result is laid out by a rule (scalars, shared memory).
LAYOUT_RULES = ("elementwise", "expand_dims", "load", "store", "reduce", "scan", "dot", "convert", "none")


def _set_layout_rule(name: str, rule: str) -> None:
    OPS[name] = replace(OPS[name], layout_rule=rule)


for _op in list(OPS.values()):
    if _op.elementwise or _op.name in ("arange", "full", "inline_asm"):
        _set_layout_rule(_op.name, "elementwise")
for _name, _rule in (("expand_dims", "expand_dims"), ("load", "load"), ("store", "store"),
                     ("device_print", "store"), ("device_assert", "store"), ("sum", "reduce"),
                     ("atomic_rmw", "load"), ("atomic_cas", "load"),
                     ("max", "reduce"), ("min", "reduce"), ("reduce", "reduce"), ("scan", "scan"),
                     ("dot", "dot"), ("dot_shared", "dot"), ("dot_rs", "dot"),
                     ("convert_layout", "convert"), ("trans", "convert"), ("permute", "convert"),
                     ("reshape", "convert"), ("split", "convert"), ("join", "convert")):
    _set_layout_rule(_name, _rule)

# Groups, derived from the traits (other modules import these names).
REDUCTIONS = tuple(name for name, d in OPS.items() if d.reduction)
COMBINE_OPS = tuple(name for name, d in OPS.items() if d.combine)
CMP_OPS = tuple(name for name, d in OPS.items() if d.comparison)
MATH_FUNCTIONS = tuple(name for name, d in OPS.items() if d.math_function)
MATERIALISED = tuple(name for name, d in OPS.items() if d.materialised)


def lookup(name: str) -> OpDef | None:
    return OPS.get(name)


# ---- trait queries: an op unknown to the table is assumed to do everything ----------


def reads_memory(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is None or opdef.reads_memory


def writes_memory(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is None or opdef.writes_memory


def writes_global(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is None or opdef.writes_global


def synchronises(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is None or opdef.synchronises


def talks_to_host(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is None or opdef.talks_to_host


def has_effect(name: str) -> bool:
    """Whether the op must run even when nothing reads its results."""
    opdef = OPS.get(name)
    return opdef is None or opdef.has_effect


def is_pure(name: str) -> bool:
    opdef = OPS.get(name)
    return opdef is not None and opdef.pure


def global_address(name: str) -> int | None:
    """The index of the operand through which the op reads or writes global
    memory, if it does so through a pointer operand."""
    opdef = OPS.get(name)
    if opdef is None or opdef.address_operand is None or not (opdef.reads_global or opdef.writes_global):
        return None
    return opdef.operand_index(opdef.address_operand)
