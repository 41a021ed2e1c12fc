"""What each ``tl.*`` function means while tracing.

Each builtin binds its arguments the way Triton's signature does (positional
or keyword, with Triton's defaults), computes on Python constants when it
can, and otherwise builds tree expressions.
"""
from __future__ import annotations

import ast
import math
from typing import Any, Callable

import sys

from mytriton.diagnostics import CompileError, printable
from mytriton.frontend import block_pointers
from mytriton.frontend.tracer import Builtin, Tracer, describe, is_number
from mytriton.ir.opdefs import (
    ATOMIC_KINDS, ATOMIC_SCOPES, ATOMIC_SEMS, DOT_INPUT_PRECISIONS, HINT_KINDS, MATH_FUNCTIONS, gather_problem,
    histogram_problem,
)
from mytriton.ir.tree import Expr
from mytriton.language import PropagateNan
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I32, I64, U8, U64, PointerType, ScalarType, TypeRuleError, broadcast_shapes, concrete,
    element_of, promote, shape_of,
)

BUILTINS: dict[str, Builtin] = {}
_REQUIRED = object()


def builtin(name: str, *params: str, **defaults: Any) -> Callable:
    """Register ``impl(tracer, node, **bound)`` as ``tl.<name>`` with the
    given parameters; a parameter without a default is required."""
    names = list(params) + [k for k in defaults if k not in params]

    def wrap(impl: Callable[..., Any]) -> Callable[..., Any]:
        def call(tracer: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
            if len(args) > len(names):
                raise tracer.error(f"tl.{name}() takes at most {len(names)} argument(s), got {len(args)}", node)
            bound = dict(zip(names, args))
            for key, value in kwargs.items():
                if key not in names:
                    raise tracer.error(f"tl.{name}() has no parameter '{key}'", node)
                if key in bound:
                    raise tracer.error(f"tl.{name}() got two values for '{key}'", node)
                bound[key] = value
            for key in names:
                if key not in bound:
                    if defaults.get(key, _REQUIRED) is _REQUIRED:
                        raise tracer.error(f"tl.{name}() is missing the argument '{key}'", node)
                    bound[key] = defaults[key]
            return impl(tracer, node, **bound)

        BUILTINS[name] = Builtin(name, call)
        return impl

    return wrap


def _axis(tracer: Tracer, node: ast.AST, value: Any, what: str) -> int:
    if type(value) is not int:
        raise tracer.error(f"{what} must be an integer constant", node)
    return value


def _shape(tracer: Tracer, node: ast.AST, value: Any, zero_d: bool = False) -> tuple[int, ...]:
    """A tile shape; ``()`` too where ``zero_d`` (a 0-d tensor: a scalar)."""
    shape = (value,) if type(value) is int else tuple(value) if isinstance(value, list) else value
    if not isinstance(shape, tuple) or not (shape or zero_d) or not all(type(d) is int for d in shape):
        raise tracer.error("a shape must be an integer constant or a tuple of them", node)
    return shape


def _dtype(tracer: Tracer, node: ast.AST, value: Any) -> ScalarType:
    if not isinstance(value, ScalarType):
        raise tracer.error("expected a dtype such as tl.float32", node)
    return value


# ---- program and indices ---------------------------------------------------------


@builtin("program_id", "axis")
def _program_id(t: Tracer, node: ast.Call, axis: Any) -> Any:
    axis = _axis(t, node, axis, "the program axis")
    if axis not in (0, 1, 2):
        raise t.error(f"the program axis must be 0, 1 or 2, got {axis}", node)
    return t.make("program_id", (), node, axis=axis)


@builtin("num_programs", "axis")
def _num_programs(t: Tracer, node: ast.Call, axis: Any) -> Any:
    axis = _axis(t, node, axis, "the program axis")
    if axis not in (0, 1, 2):
        raise t.error(f"the program axis must be 0, 1 or 2, got {axis}", node)
    return t.make("num_programs", (), node, axis=axis)


@builtin("arange", "start", "end")
def _arange(t: Tracer, node: ast.Call, start: Any, end: Any) -> Any:
    if type(start) is not int or type(end) is not int:
        raise t.error("tl.arange bounds must be integer constants (tl.constexpr)", node)
    size = end - start
    if size <= 0 or size & (size - 1):
        raise t.error(f"tl.arange's range must be a power of two, got {end} - {start} = {size}", node)
    return t.make("arange", (), node, start=start, end=end)


# ---- memory ---------------------------------------------------------------------------


@builtin("load", "pointer", mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False)
def _load(t: Tracer, node: ast.Call, pointer: Any, mask: Any, other: Any, boundary_check: Any,
          padding_option: Any, **hints: Any) -> Any:
    if isinstance(pointer, block_pointers.BlockPointer):
        return block_pointers.load_block(t, node, pointer, mask, other, boundary_check, padding_option)
    if isinstance(pointer, block_pointers.TensorDescriptor):
        raise t.error("tl.load needs a pointer, got a tensor descriptor (use desc.load(offsets))", node)
    if not isinstance(pointer, Expr):
        raise t.error("tl.load needs a pointer", node)
    if other is not None and mask is None:
        raise t.error("tl.load: 'other' needs a 'mask'", node)
    expr = t.make("load", (pointer, mask, other), node)
    t.anchor(expr)
    return expr


@builtin("store", "pointer", "value", mask=None, boundary_check=(), cache_modifier="",
         eviction_policy="")
def _store(t: Tracer, node: ast.Call, pointer: Any, value: Any, mask: Any, boundary_check: Any,
           **hints: Any) -> Any:
    if isinstance(pointer, block_pointers.BlockPointer):
        block_pointers.store_block(t, node, pointer, value, mask, boundary_check)
        return None
    if isinstance(pointer, block_pointers.TensorDescriptor):
        raise t.error("tl.store needs a pointer, got a tensor descriptor (use desc.store(offsets, value))", node)
    if not isinstance(pointer, Expr):
        raise t.error("tl.store needs a pointer", node)
    t.effect(t.make("store", (pointer, value, mask), node))
    return None


# ---- block pointers and tensor descriptors ---------------------------------
# Frontend values (frontend/block_pointers.py): loads and stores through them
# become the ordinary masked tile accesses above.


@builtin("make_block_ptr", "base", "shape", "strides", "offsets", "block_shape", "order")
def _make_block_ptr(t: Tracer, node: ast.Call, **parts: Any) -> Any:
    return block_pointers.make_block_ptr(t, node, **parts)


@builtin("advance", "base", "offsets")
def _advance(t: Tracer, node: ast.Call, base: Any, offsets: Any) -> Any:
    return block_pointers.advance(t, node, base, offsets)


@builtin("make_tensor_descriptor", "base", "shape", "strides", "block_shape", padding_option="zero")
def _make_tensor_descriptor(t: Tracer, node: ast.Call, **parts: Any) -> Any:
    return block_pointers.make_tensor_descriptor(t, node, **parts)


@builtin("load_tensor_descriptor", "desc", "offsets")
def _load_tensor_descriptor(t: Tracer, node: ast.Call, desc: Any, offsets: Any) -> Any:
    return block_pointers.descriptor_load(t, node, desc, offsets)


@builtin("store_tensor_descriptor", "desc", "offsets", "value")
def _store_tensor_descriptor(t: Tracer, node: ast.Call, desc: Any, offsets: Any, value: Any) -> Any:
    block_pointers.descriptor_store(t, node, desc, offsets, value)
    return None


# ---- atomics ---------------------------------------------------------------------------
# Each atomic is anchored where the kernel calls it (a read and a write of
# memory), whether or not its result is used.


def _atomic_options(t: Tracer, node: ast.Call, name: str, sem: Any, scope: Any) -> dict[str, str]:
    sem = "acq_rel" if sem is None else sem
    scope = "gpu" if scope is None else scope
    if sem not in ATOMIC_SEMS:
        raise t.error(f"tl.{name}: sem must be one of {', '.join(map(repr, ATOMIC_SEMS))}, got {describe(sem) if not isinstance(sem, str) else repr(sem)}", node)
    if scope not in ATOMIC_SCOPES:
        raise t.error(f"tl.{name}: scope must be one of {', '.join(map(repr, ATOMIC_SCOPES))}, got {describe(scope) if not isinstance(scope, str) else repr(scope)}", node)
    return {"sem": sem, "scope": scope}


def _atomic_rmw_builtin(kind: str) -> None:
    name = f"atomic_{kind}"

    @builtin(name, "pointer", "val", mask=None, sem=None, scope=None)
    def impl(t: Tracer, node: ast.Call, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
        if not isinstance(pointer, Expr):
            raise t.error(f"tl.{name} needs a pointer, got {describe(pointer)}", node)
        options = _atomic_options(t, node, name, sem, scope)
        expr = t.make("atomic_rmw", (pointer, val, mask), node, kind=kind, **options)
        t.anchor(expr)
        return expr


for _kind in ATOMIC_KINDS:
    _atomic_rmw_builtin(_kind)


@builtin("atomic_cas", "pointer", "cmp", "val", sem=None, scope=None)
def _atomic_cas(t: Tracer, node: ast.Call, pointer: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
    if not isinstance(pointer, Expr):
        raise t.error(f"tl.atomic_cas needs a pointer, got {describe(pointer)}", node)
    expr = t.make("atomic_cas", (pointer, cmp, val), node, **_atomic_options(t, node, "atomic_cas", sem, scope))
    t.anchor(expr)
    return expr


@builtin("debug_barrier")
def _debug_barrier(t: Tracer, node: ast.Call) -> Any:
    t.effect(t.make("barrier", (), node))
    return None


# tl.extra.cuda.gdc_wait() and gdc_launch_dependents(), by function name
# (language/extra/cuda/gdc.py): not tl.<name>s.
GRID_DEPENDENCY: dict[str, Builtin] = {}


def _grid_dependency(function: str, op: str) -> None:
    def call(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
        if args or kwargs:
            raise t.error(f"{function}() takes no arguments", node)
        t.effect(t.make(op, (), node))
        return None

    GRID_DEPENDENCY[function] = Builtin(function, call)


_grid_dependency("gdc_wait", "grid_dependency_wait")
_grid_dependency("gdc_launch_dependents", "grid_dependency_launch_dependents")


# ---- elementwise ------------------------------------------------------------------------

# As in Triton, these make runtime values even from plain numbers (a
# 0-d tensor there): ``1 % tl.where(c, 3, -5)`` divides as C does, not as
# Python would; the fold pass computes what can be computed.


def _math(name: str) -> None:
    @builtin(name, "x")
    def impl(t: Tracer, node: ast.Call, x: Any) -> Any:
        return t.make(name, (_value(t, node, x, name),), node)


for _name in MATH_FUNCTIONS:
    _math(_name)


def _value(t: Tracer, node: ast.Call, value: Any, name: str) -> Any:
    if not (is_number(value) or isinstance(value, Expr)):
        raise t.error(f"tl.{name} needs numbers or tiles, got {describe(value)}", node)
    return value


@builtin("abs", "x")
def _abs(t: Tracer, node: ast.Call, x: Any) -> Any:
    return t.make("abs", (_value(t, node, x, "abs"),), node)


@builtin("where", "condition", "x", "y")
def _where(t: Tracer, node: ast.Call, condition: Any, x: Any, y: Any) -> Any:
    condition, x, y = (_value(t, node, v, "where") for v in (condition, x, y))
    if isinstance(condition, Expr) and element_of(t.type_of(condition, node)) != BOOL:
        # Triton casts a condition of another type to int1 (with a deprecation
        # warning): the published tutorial 04 passes an int32 keep-mask.
        condition = t.make("cmp_ne", (condition, 0), node)
    return t.make("where", (condition, x, y), node)


def _min_max(name: str) -> None:
    @builtin(name, "x", "y", propagate_nan=PropagateNan.NONE)
    def impl(t: Tracer, node: ast.Call, x: Any, y: Any, propagate_nan: Any) -> Any:
        op = name + "_nan" if _propagates_nan(t, node, propagate_nan, name) else name
        return t.make(op, (_value(t, node, x, name), _value(t, node, y, name)), node)


for _name in ("maximum", "minimum"):
    _min_max(_name)


@builtin("cdiv", "x", "div")
def _cdiv(t: Tracer, node: ast.Call, x: Any, div: Any) -> Any:
    # Triton's own definition: on two constants it is Python arithmetic.
    total = t.binary(ast.Add(), x, div, node)
    total = t.binary(ast.Sub(), total, 1, node)
    return t.binary(ast.FloorDiv(), total, div, node)


# ---- math and dtypes ----------------------------------------------------


def _propagates_nan(t: Tracer, node: ast.Call, value: Any, name: str) -> bool:
    """``propagate_nan=``: tl.PropagateNan.NONE or ALL (Triton's values)."""
    if type(value) is not int or value not in (PropagateNan.NONE, PropagateNan.ALL):
        raise t.error(f"tl.{name}: propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL", node)
    return value == PropagateNan.ALL


def _flag(t: Tracer, node: ast.Call, value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise t.error(f"{what} must be True or False (a constant)", node)
    return value


@builtin("clamp", "x", "min", "max", propagate_nan=PropagateNan.NONE)
def _clamp(t: Tracer, node: ast.Call, x: Any, min: Any, max: Any, propagate_nan: Any) -> Any:
    op = "clamp_nan" if _propagates_nan(t, node, propagate_nan, "clamp") else "clamp"
    return t.make(op, tuple(_value(t, node, v, "clamp") for v in (x, min, max)), node)


def _arithmetic(name: str, operator: ast.operator) -> None:
    """``tl.add``, ``tl.sub``, ``tl.mul``: the operator as a function, as
    Triton's core has them. ``sanitize_overflow`` asks Triton, in its debug
    mode only, to check signed integers for overflow; here it is accepted
    (a constant flag) and the operator computes as ``+``, ``-``, ``*`` do."""
    @builtin(name, "x", "y", sanitize_overflow=True)
    def impl(t: Tracer, node: ast.Call, x: Any, y: Any, sanitize_overflow: Any) -> Any:
        _flag(t, node, sanitize_overflow, f"tl.{name}: sanitize_overflow")
        return t.binary(operator, _value(t, node, x, name), _value(t, node, y, name), node)


_arithmetic("add", ast.Add())
_arithmetic("sub", ast.Sub())
_arithmetic("mul", ast.Mult())


@builtin("fma", "x", "y", "z")
def _fma(t: Tracer, node: ast.Call, x: Any, y: Any, z: Any) -> Any:
    return t.make("fma", tuple(_value(t, node, v, "fma") for v in (x, y, z)), node)


@builtin("div_rn", "x", "y")
def _div_rn(t: Tracer, node: ast.Call, x: Any, y: Any) -> Any:
    return t.make("div_rn", (_value(t, node, x, "div_rn"), _value(t, node, y, "div_rn")), node)


@builtin("fdiv", "x", "y", ieee_rounding=False)
def _fdiv(t: Tracer, node: ast.Call, x: Any, y: Any, ieee_rounding: Any) -> Any:
    # Both roundings divide correctly rounded here: Triton's approximate
    # division (ieee_rounding=False) is allowed to be that exact. Like
    # Triton's, it refuses integers (div_rn's type rule).
    _flag(t, node, ieee_rounding, "tl.fdiv: ieee_rounding")
    return t.make("div_rn", (_value(t, node, x, "fdiv"), _value(t, node, y, "fdiv")), node)


@builtin("umulhi", "x", "y")
def _umulhi(t: Tracer, node: ast.Call, x: Any, y: Any) -> Any:
    return t.make("umulhi", (_value(t, node, x, "umulhi"), _value(t, node, y, "umulhi")), node)


@builtin("softmax", "x", dim=None, keep_dims=False, ieee_rounding=False)
def _softmax(t: Tracer, node: ast.Call, x: Any, dim: Any, keep_dims: Any, ieee_rounding: Any) -> Any:
    """Triton's library definition (language/standard.py), over ops that
    exist: exp(x - max) / sum(exp(x - max)) along ``dim``, which defaults
    to 0 as in Triton (the only axis of a vector; down each column of a
    rank-2 tile). The result has ``x``'s shape whatever ``keep_dims`` says."""
    if not isinstance(x, Expr):
        raise t.error("tl.softmax needs a tile", node)
    axis = 0 if dim is None else _axis(t, node, dim, "tl.softmax's dim")
    if axis < 0:
        raise t.error("tl.softmax needs a non-negative dim", node)
    _flag(t, node, keep_dims, "tl.softmax: keep_dims")
    _flag(t, node, ieee_rounding, "tl.softmax: ieee_rounding")
    peak = t.make("expand_dims", (t.make("max", (x,), node, axis=axis),), node, axis=axis)
    num = t.make("exp", (t.make("sub", (x, peak), node),), node)
    den = t.make("expand_dims", (t.make("sum", (num,), node, axis=axis),), node, axis=axis)
    return t.make("div_rn", (num, den), node)


# ---- blocks ------------------------------------------------------------------------------


def _fill_literal(dtype: ScalarType, value: Any) -> Any:
    if dtype == BOOL:
        return bool(value)
    return float(value) if dtype.is_float else int(value)


@builtin("zeros", "shape", "dtype")
def _zeros(t: Tracer, node: ast.Call, shape: Any, dtype: Any) -> Any:
    return _full(t, node, shape, 0, dtype)


@builtin("empty", "shape", "dtype")
def _empty(t: Tracer, node: ast.Call, shape: Any, dtype: Any) -> Any:
    # mytriton zero-fills "empty" blocks: reading one is then deterministic.
    return _zeros(t, node, shape, dtype)


@builtin("full", "shape", "value", "dtype")
def _full(t: Tracer, node: ast.Call, shape: Any, value: Any, dtype: Any) -> Any:
    dtype = _dtype(t, node, dtype)
    try:
        fill = _fill_literal(dtype, value) if is_number(value) else value
    except OverflowError:  # float(1 << 2000)
        raise t.error(f"tl.full: the fill value is too large for {dtype.name}", node) from None
    shape = _shape(t, node, shape, zero_d=True)
    if not shape:  # a 0-d tensor, as Triton's: a scalar of the dtype
        if not (is_number(fill) or isinstance(fill, Expr)):
            raise t.error(f"tl.full: the value must be a number or a scalar, got {describe(fill)}", node)
        if isinstance(fill, Expr) and shape_of(t.type_of(fill, node)):
            raise t.error("tl.full: the value of a 0-d tensor must be a scalar, not a tile", node)
        return t.make("cast", (fill,), node, dtype=dtype)
    return t.make("full", (fill,), node, shape=shape, dtype=dtype)


@builtin("expand_dims", "input", "axis")
def _expand_dims(t: Tracer, node: ast.Call, input: Any, axis: Any) -> Any:
    axis = _axis(t, node, axis, "the axis")
    if axis < 0:
        raise t.error("tl.expand_dims needs a non-negative axis", node)
    return t.make("expand_dims", (input,), node, axis=axis)


def _kept_dims(t: Tracer, node: ast.Call, result: Any, axis: int | None, input: Any) -> Any:
    """A reduction's result with the reduced dimension kept as 1 (``keep_dims``):
    along ``axis``, or, reduced over every axis, a tile of ones of the input's rank."""
    if axis is not None:
        return t.make("expand_dims", (result,), node, axis=axis)
    rank = len(shape_of(t.type_of(input, node)))
    return t.make("full", (result,), node, shape=(1,) * rank, dtype=concrete(element_of(t.type_of(result, node))))


def _reduction(name: str) -> None:
    @builtin(name, "input", axis=None, keep_dims=False)
    def impl(t: Tracer, node: ast.Call, input: Any, axis: Any, keep_dims: Any) -> Any:
        if not isinstance(input, Expr):
            raise t.error(f"tl.{name} needs a tile", node)
        if axis is not None:
            axis = _axis(t, node, axis, "the reduction axis")
            if axis < 0:
                raise t.error(f"tl.{name} needs a non-negative axis", node)
        result = t.make(name, (input,), node, axis=axis)
        if keep_dims:
            result = _kept_dims(t, node, result, axis, input)
        return result


for _name in ("sum", "max", "min"):
    _reduction(_name)


@builtin("dot", "input", "other", acc=None, input_precision=None, allow_tf32=None,
         max_num_imprecise_acc=None, out_dtype=F32)
def _dot(t: Tracer, node: ast.Call, input: Any, other: Any, acc: Any, input_precision: Any, allow_tf32: Any,
         max_num_imprecise_acc: Any, out_dtype: Any) -> Any:
    """``tl.dot`` with Triton's rules (core.dot and semantic.dot): the
    precision and the result dtype are resolved here and kept as the op's
    attributes; the type rule (opdefs) checks the operands against them."""
    if not isinstance(input, Expr) or not isinstance(other, Expr):
        raise t.error("tl.dot needs two tiles", node)
    if input_precision is not None and allow_tf32 is not None:
        raise t.error("tl.dot: only one of input_precision and allow_tf32 can be given (as in Triton)", node)
    if allow_tf32 is not None and type(allow_tf32) is not bool:
        raise t.error(f"tl.dot: allow_tf32 must be True or False, got {describe(allow_tf32)}", node)
    if max_num_imprecise_acc is not None and (type(max_num_imprecise_acc) is not int or max_num_imprecise_acc < 0):
        # Triton uses it for fp8 operands only, which mytriton does not have.
        raise t.error("tl.dot: max_num_imprecise_acc must be a non-negative integer constant", node)
    out_dtype = _dtype(t, node, out_dtype)
    if input_precision is None:
        # Triton: TRITON_F32_DEFAULT (here the compile options' f32_default)
        # first, then allow_tf32 (default True) picks tf32 or ieee.
        input_precision = t.budget.f32_default or ("ieee" if allow_tf32 is False else "tf32")
    elif not isinstance(input_precision, str) or input_precision.lower() not in DOT_INPUT_PRECISIONS:
        raise t.error(f"tl.dot: input_precision must be one of {', '.join(map(repr, DOT_INPUT_PRECISIONS))}, "
                      f"got {printable(repr(input_precision)) if isinstance(input_precision, str) else describe(input_precision)}",
                      node)
    input_precision = input_precision.lower()
    element = element_of(t.type_of(input, node))
    if element in (I8, U8):
        out = I32  # Triton: integer operands accumulate in int32 whatever out_dtype says
    elif out_dtype == BF16:
        raise t.error("tl.dot: out_dtype=bfloat16 is unsupported (as in Triton); use float32 or float16 and "
                      "cast with .to(tl.bfloat16)", node)
    elif element in (F32, BF16):
        out = F32  # Triton: f32 and bf16 operands give f32 whatever out_dtype says
    elif element == F64:
        out = F64
    elif element == F16:
        if out_dtype not in (F32, F16):
            raise t.error(f"tl.dot: out_dtype of f16 operands must be float32 or float16, got {out_dtype}", node)
        out = out_dtype
    else:
        out = out_dtype  # the type rule refuses these operands
    if element != F32:
        input_precision = "ieee"  # products of other dtypes are exact; Triton ignores the precision for them
    return t.make("dot", (input, other, acc), node, input_precision=input_precision, out_dtype=out)


# ---- loops (only meaningful as the iterable of a for) -------------------------------------


def _loop_only(name: str) -> None:
    options = {"num_stages": None, "loop_unroll_factor": None, "disallow_acc_multi_buffer": False,
               "flatten": False, "warp_specialize": False, "disable_licm": False} if name == "range" else {}

    @builtin(name, "arg1", arg2=None, arg3=None, **options)
    def impl(t: Tracer, node: ast.Call, **_: Any) -> Any:
        raise t.error(f"tl.{name} can only be the iterable of a 'for' loop", node)


for _name in ("static_range", "range"):
    _loop_only(_name)


# ---- hints, casts and compile-time checks ------------------------------------------------


def _hint(kind: str) -> None:
    @builtin(kind, "input", "values")
    def impl(t: Tracer, node: ast.Call, input: Any, values: Any) -> Any:
        values = (values,) if type(values) is int else values
        if not (isinstance(values, tuple) and values and all(type(v) is int and v > 0 for v in values)):
            raise t.error(f"tl.{kind}: the values must be a positive integer constant or a tuple of them", node)
        if is_number(input):
            return input  # a fact about a constant says nothing new
        if not isinstance(input, Expr):
            raise t.error(f"tl.{kind} needs a tile or a runtime scalar, got {describe(input)}", node)
        # A fact kept in the IR (later stages may vectorise accesses with it);
        # the value is unchanged.
        hinted = t.make("hint", (input,), node, kind=kind, values=values)
        # Triton's hint marks its operand itself (it sets the attribute on x and
        # returns x): tutorial 08's statement ``tl.multiple_of(a_ptrs, [16, 16])``
        # is a fact about a_ptrs. The name means the hinted value from here on.
        named = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "input"), None)
        if isinstance(named, ast.Name) and t.env.get(named.id) is input:
            t.env[named.id] = hinted
        return hinted


for _name in HINT_KINDS:
    _hint(_name)


def cast_value(t: Tracer, node: ast.Call, x: Any, dtype: Any, rounding: Any, bitcast: Any, spelled: str) -> Any:
    """``tl.cast(x, dtype, fp_downcast_rounding, bitcast)`` and ``x.to(...)``."""
    if isinstance(dtype, PointerType) or (isinstance(dtype, ScalarType) and _is_pointer(t, x, node)):
        return _pointer_cast(t, node, x, dtype, bitcast, spelled)
    if not isinstance(dtype, ScalarType):
        raise t.error(f"{spelled} takes a dtype such as tl.float16, got {describe(dtype)}", node)
    if rounding not in (None, "rtne"):
        raise t.error(f"{spelled}: fp_downcast_rounding={printable(repr(rounding))} is not supported "
                      "(casts round to nearest even, 'rtne')", node)
    if type(bitcast) is not bool:
        raise t.error(f"{spelled}: bitcast must be True or False", node)
    if not (is_number(x) or isinstance(x, Expr)):
        raise t.error(f"{spelled} needs a number or a tile, got {describe(x)}", node)
    if bitcast:
        if is_number(x):
            raise t.error(f"{spelled}: bitcast needs a typed value, not the constant {x!r}", node)
        return t.make("bitcast", (x,), node, dtype=dtype)
    return t.make("cast", (x,), node, dtype=dtype)


def _is_pointer(t: Tracer, x: Any, node: ast.Call) -> bool:
    """Whether ``x`` is a pointer value. Asking for its type is a question
    the trace depends on only when the answer is yes (an ill-typed operand
    is left for lowering to report, as before)."""
    if not isinstance(x, Expr):
        return False
    asked = t.budget.asked_types
    try:
        found = isinstance(element_of(t.type_of(x, node)), PointerType)
    except CompileError:
        found = False
    if not found:
        t.budget.asked_types = asked
    return found


def _pointer_cast(t: Tracer, node: ast.Call, x: Any, dtype: Any, bitcast: Any, spelled: str) -> Any:
    """Casts to and from pointers, as Triton's: a 64-bit integer to a pointer
    (int_to_ptr), a pointer to i64 or u64 (ptr_to_int), a pointer to a pointer
    of another element type (through its address)."""
    if not isinstance(x, Expr):
        raise t.error(f"{spelled}: a pointer cast needs a runtime value, not the constant {describe(x)}", node)
    source = element_of(t.type_of(x, node))
    if isinstance(dtype, PointerType):
        if isinstance(source, PointerType):
            if source == dtype:
                return x
            x = t.make("ptr_to_int", (x,), node, dtype=I64)
        elif t.budget.probing and not (isinstance(source, ScalarType) and source.is_int):
            source = I64  # a placeholder parameter type
        elif not (isinstance(source, ScalarType) and source.is_int and source.bits == 64):
            raise t.error(f"{spelled}: only a 64-bit integer (i64 or u64) converts to a pointer, got {source}",
                          node)
        return t.make("int_to_ptr", (x,), node, dtype=dtype.pointee)
    if dtype not in (I64, U64):
        raise t.error(f"{spelled}: a pointer converts to i64 or u64 (an address), not {dtype}", node)
    return t.make("ptr_to_int", (x,), node, dtype=dtype)


@builtin("cast", "input", "dtype", fp_downcast_rounding=None, bitcast=False)
def _cast(t: Tracer, node: ast.Call, input: Any, dtype: Any, fp_downcast_rounding: Any, bitcast: Any) -> Any:
    return cast_value(t, node, input, dtype, fp_downcast_rounding, bitcast, "tl.cast")


@builtin("pointer_type", "element_ty")
def _pointer_type(t: Tracer, node: ast.Call, element_ty: Any) -> Any:
    if not isinstance(element_ty, ScalarType):
        raise t.error(f"tl.pointer_type takes a dtype such as tl.float32, got {describe(element_ty)}", node)
    return PointerType(element_ty)


def _message(t: Tracer, node: ast.Call, value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise t.error(f"{what} must be a string, got {describe(value)}", node)
    return value


@builtin("static_assert", "cond", msg="")
def _static_assert(t: Tracer, node: ast.Call, cond: Any, msg: Any) -> Any:
    msg = _message(t, node, msg, "the message of tl.static_assert")
    if not (is_number(cond) or isinstance(cond, (str, tuple, ScalarType, PointerType)) or cond is None):
        raise t.error("tl.static_assert needs a compile-time condition; use tl.device_assert "
                      "for a runtime one", node)
    if not cond:
        if t.budget.probing:  # perhaps only the placeholder types make it fail: decided by the real trace
            t.budget.asked_types = True
            return None
        raise t.error("tl.static_assert failed" + (f": {msg}" if msg else ""), node)
    return None


@builtin("assume", "cond")
def _assume(t: Tracer, node: ast.Call, cond: Any) -> Any:
    """``tl.assume(cond)``: a fact the compiler may take as true (Triton hands
    it to LLVM's assume, and a program where it is false is undefined). It
    changes no result of a program where it holds, so it is checked to be a
    condition and adds nothing to the IR."""
    if isinstance(cond, Expr):
        ty = t.type_of(cond, node)
        if element_of(ty) != BOOL:
            raise t.error(f"tl.assume needs a condition (a bool), got {ty}", node)
    elif type(cond) is not bool:
        raise t.error(f"tl.assume needs a condition (a bool), got {describe(cond)}", node)
    return None


def _static_text(t: Tracer, node: ast.Call, value: Any) -> str:
    if isinstance(value, Expr):
        return str(t.type_of(value, node))
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return "(" + ", ".join(_static_text(t, node, v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, (ScalarType, PointerType)):
        return str(value)
    if is_number(value) or value is None:
        return repr(value)
    return describe(value)


def _static_print(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    """``tl.static_print(*values, sep=" ", end="\\n")``: prints while compiling, to
    stderr (runtime values by their type), as Python's print would."""
    unknown = set(kwargs) - {"sep", "end", "file", "flush"}
    if unknown:
        raise t.error(f"tl.static_print() has no parameter '{sorted(unknown)[0]}'", node)
    sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
    if not isinstance(sep, str) or not isinstance(end, str):
        raise t.error("tl.static_print: sep and end must be strings", node)
    text = sep.join(_static_text(t, node, v) for v in args) + end
    t.budget.prints += 1  # a helper that prints is traced at every call (Tracer.call_jit)
    if t.budget.probing:
        t.budget.asked_types = True
        return None  # printed by the trace with the real parameter types
    sys.stderr.write(printable(text, keep="\n"))
    sys.stderr.flush()
    return None


BUILTINS["static_print"] = Builtin("static_print", _static_print)


def _device_print(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    """``tl.device_print(prefix, *args, hex=False)``: one ``device_print`` op per
    value (each prints every element of every program, as Triton's does)."""
    if set(kwargs) - {"prefix", "hex"}:
        raise t.error(f"tl.device_print() has no parameter '{sorted(set(kwargs) - {'prefix', 'hex'})[0]}'", node)
    if "prefix" in kwargs:
        if args:
            raise t.error("tl.device_print() got two values for 'prefix'", node)
        args = [kwargs["prefix"]]
    if not args:
        raise t.error("tl.device_print() is missing the argument 'prefix'", node)
    prefix = _message(t, node, args[0], "the prefix of tl.device_print")
    hex_ = kwargs.get("hex", False)
    if type(hex_) is not bool:
        raise t.error("tl.device_print: hex must be True or False", node)
    # Triton's spacing: a prefix that does not start with a space gets one.
    if prefix and not prefix.startswith(" "):
        prefix = " " + prefix
    values = args[1:]
    for value in values:
        if not (is_number(value) or isinstance(value, Expr)):
            raise t.error(f"tl.device_print prints numbers and tiles, got {describe(value)}", node)
    for value in values or [None]:
        t.effect(t.make("device_print", (value,), node, prefix=prefix, hex=hex_))
    return None


BUILTINS["device_print"] = Builtin("device_print", _device_print)


@builtin("device_assert", "cond", msg="", mask=None)
def _device_assert(t: Tracer, node: ast.Call, cond: Any, msg: Any, mask: Any) -> Any:
    msg = _message(t, node, msg, "the message of tl.device_assert")
    if is_number(cond) and mask is None:
        if not cond:
            raise t.error("tl.device_assert fails on a constant condition" + (f": {msg}" if msg else ""), node)
        return None
    if not (is_number(cond) or isinstance(cond, Expr)):
        raise t.error(f"tl.device_assert needs a condition, got {describe(cond)}", node)
    if not (mask is None or isinstance(mask, Expr) or type(mask) is bool):
        raise t.error(f"the mask of tl.device_assert must be a tile or a boolean, got {describe(mask)}", node)
    t.effect(t.make("device_assert", (cond, mask), node, msg=msg))
    return None


# ---- shape ops -------------------------------------------------------
# Triton's signatures: the shape or dims may be spelled as one tuple or as
# several arguments (``tl.reshape(x, (M, N))``, ``x.reshape(M, N)``).


def _bind(t: Tracer, node: ast.Call, name: str, args: list, kwargs: dict, first: str, rest: str,
          options: dict[str, Any]) -> tuple[Any, tuple, dict[str, Any]]:
    """``tl.<name>(first, *rest, **options)``: the first argument, the rest as
    one tuple (a single tuple argument is the tuple), and the options."""
    unknown = set(kwargs) - {first, rest, *options}
    if unknown:
        raise t.error(f"tl.{name}() has no parameter '{sorted(unknown)[0]}'", node)
    if first in kwargs:
        args = [kwargs[first], *args]
    if not args:
        raise t.error(f"tl.{name}() is missing the argument '{first}'", node)
    more = list(args[1:])
    if rest in kwargs:
        if more:
            raise t.error(f"tl.{name}() got two values for '{rest}'", node)
        more = [kwargs[rest]]
    values = tuple(more[0]) if len(more) == 1 and isinstance(more[0], tuple) else tuple(more)
    return args[0], values, {k: kwargs.get(k, v) for k, v in options.items()}


def _tile_shape(t: Tracer, node: ast.AST, x: Any, name: str) -> tuple[int, ...]:
    if not isinstance(x, Expr) or not shape_of(t.type_of(x, node)):
        raise t.error(f"tl.{name} needs a tile, got {describe(x) if not isinstance(x, Expr) else t.type_of(x, node)}", node)
    return shape_of(t.type_of(x, node))


def _sizes(t: Tracer, node: ast.AST, values: tuple, name: str, what: str) -> tuple[int, ...]:
    if not values or not all(type(v) is int for v in values):
        raise t.error(f"tl.{name}: the {what} must be integer constants, got {values!r}", node)
    return values


def permute(t: Tracer, node: ast.AST, x: Any, dims: tuple, name: str = "permute") -> Any:
    shape = _tile_shape(t, node, x, name)
    dims = _sizes(t, node, dims, name, "dims")
    if sorted(dims) != list(range(len(shape))):
        raise t.error(f"tl.{name} of a rank-{len(shape)} tile takes a permutation of "
                      f"{tuple(range(len(shape)))}, got {dims}", node)
    if dims == tuple(range(len(shape))):
        return x
    if dims == (1, 0):
        return t.make("trans", (x,), node)
    return t.make("permute", (x,), node, dims=dims)


def transpose(t: Tracer, node: ast.AST, x: Any, dims: tuple) -> Any:
    """``x.T`` and ``tl.trans(x, *dims)``: without dims, a rank-2 tile
    transposed (a rank-1 tile is itself); with dims, ``tl.permute``."""
    if not isinstance(x, Expr):
        raise t.error(f"tl.trans needs a tile, got {describe(x)}", node)
    rank = len(shape_of(t.type_of(x, node)))
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], tuple) else tuple(dims)
    if not dims:
        if rank > 2:
            raise t.error(f"tl.trans of a rank-{rank} tile needs its dims (a permutation)", node)
        if rank < 2:
            return x
        dims = (1, 0)
    return permute(t, node, x, dims, "trans")


def _trans(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    """``tl.trans(input, *dims)``, as Triton spells it (dims may also be one tuple)."""
    x, dims, _ = _bind(t, node, "trans", args, kwargs, "input", "dims", {})
    return transpose(t, node, x, dims)


def _permute(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    x, dims, _ = _bind(t, node, "permute", args, kwargs, "input", "dims", {})
    return permute(t, node, x, dims)


def reshape(t: Tracer, node: ast.AST, x: Any, shape: tuple, name: str = "reshape") -> Any:
    old = _tile_shape(t, node, x, name)
    shape = _sizes(t, node, shape, name, "shape")
    if any(d < 1 for d in shape) or math.prod(shape) != math.prod(old):
        raise t.error(f"tl.{name}: a tile of shape {old} ({math.prod(old)} elements) cannot be "
                      f"reshaped to {shape}", node)
    if shape == old:
        return x
    return t.make("reshape", (x,), node, shape=shape)


def _reshape(name: str) -> Callable:
    def impl(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
        """``tl.reshape(input, *shape, can_reorder=False)``: the elements in
        row-major order (an order any can_reorder allows)."""
        x, shape, options = _bind(t, node, name, args, kwargs, "input", "shape", {"can_reorder": False})
        _flag(t, node, options["can_reorder"], "can_reorder")
        return reshape(t, node, x, shape, name)

    return impl


def _split(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    """``tl.split(a)``: a tile whose last dimension is 2 as its two halves."""
    x, extra, _ = _bind(t, node, "split", args, kwargs, "a", "", {})
    if extra:
        raise t.error("tl.split() takes one argument", node)
    shape = _tile_shape(t, node, x, "split")
    if shape[-1] != 2:
        raise t.error(f"tl.split needs a tile whose last dimension is 2, got shape {shape}", node)
    if len(shape) < 2:
        raise t.error("tl.split of a rank-1 tile (two scalars) is not supported; reshape it to (1, 2) first", node)
    return tuple(t.make("split", (x,), node, index=i) for i in (0, 1))


def join(t: Tracer, node: ast.AST, a: Any, b: Any, name: str = "join") -> Any:
    """``tl.join(a, b)``: a and b (broadcast to one shape) along a new last dimension of 2."""
    sa, sb = _tile_shape(t, node, a, name), _tile_shape(t, node, b, name)
    ta, tb = t.type_of(a, node), t.type_of(b, node)
    if element_of(ta) != element_of(tb):
        raise t.error(f"tl.{name} takes two tiles of one dtype, got {ta} and {tb}", node)
    try:
        shape = broadcast_shapes(sa, sb)
    except TypeRuleError as e:
        raise t.error(f"tl.{name}: {e}", node) from None
    a = a if sa == shape else t.make("broadcast_to", (a,), node, shape=shape)
    b = b if sb == shape else t.make("broadcast_to", (b,), node, shape=shape)
    return t.make("join", (a, b), node)


@builtin("join", "a", "b")
def _join(t: Tracer, node: ast.Call, a: Any, b: Any) -> Any:
    return join(t, node, a, b)


@builtin("interleave", "a", "b")
def _interleave(t: Tracer, node: ast.Call, a: Any, b: Any) -> Any:
    """``tl.interleave(a, b)``: a[0], b[0], a[1], b[1]... along the last dimension."""
    joined = join(t, node, a, b, "interleave")
    shape = shape_of(t.type_of(joined, node))
    return reshape(t, node, joined, (*shape[:-2], shape[-2] * 2), "interleave")


@builtin("cat", "input", "other", can_reorder=False, dim=0)
def _cat(t: Tracer, node: ast.Call, input: Any, other: Any, can_reorder: Any, dim: Any) -> Any:
    """``tl.cat(input, other)``: the two tiles one after the other along
    dimension 0. Triton only promises some order (can_reorder=True); this
    order is the one NumPy's concatenate gives, which satisfies both."""
    _flag(t, node, can_reorder, "can_reorder")
    if dim != 0:
        raise t.error(f"tl.cat concatenates along dimension 0, got dim={dim!r}", node)
    sa, sb = _tile_shape(t, node, input, "cat"), _tile_shape(t, node, other, "cat")
    if sa != sb:
        raise t.error(f"tl.cat takes two tiles of one shape, got {sa} and {sb}", node)
    joined = join(t, node, input, other, "cat")  # [..., 2]: the last dimension picks the tile
    rank = len(sa)
    stacked = permute(t, node, joined, (rank, *range(rank)), "cat")  # [2, ...]
    return reshape(t, node, stacked, (2 * sa[0], *sa[1:]), "cat")


def _broadcast_to(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
    """``tl.broadcast_to(input, *shape)``."""
    x, shape, _ = _bind(t, node, "broadcast_to", args, kwargs, "input", "shape", {})
    shape = _sizes(t, node, shape, "broadcast_to", "shape")
    if not (is_number(x) or isinstance(x, Expr)):
        raise t.error(f"tl.broadcast_to needs a tile or a number, got {describe(x)}", node)
    old = shape_of(t.type_of(x, node))
    try:
        if len(old) > len(shape) or broadcast_shapes(old, shape) != shape:
            raise TypeRuleError(f"shape {old} does not broadcast to {shape}")
    except TypeRuleError as e:
        raise t.error(f"tl.broadcast_to: {e}", node) from None
    if old == shape:
        return x
    return t.make("broadcast_to", (x,), node, shape=shape)


@builtin("broadcast", "input", "other")
def _broadcast(t: Tracer, node: ast.Call, input: Any, other: Any) -> Any:
    """``tl.broadcast(input, other)``: the two broadcast to their common shape."""
    values = tuple(_value(t, node, v, "broadcast") for v in (input, other))
    shapes = [shape_of(t.type_of(v, node)) for v in values]
    try:
        shape = broadcast_shapes(*shapes)
    except TypeRuleError as e:
        raise t.error(f"tl.broadcast: {e}", node) from None
    return tuple(v if old == shape else t.make("broadcast_to", (v,), node, shape=shape)
                 for v, old in zip(values, shapes))


def _dim(t: Tracer, node: ast.Call, dim: Any, rank: int, name: str) -> int:
    """``dim`` of a rank-``rank`` result counted from 0 (a negative one from the end)."""
    dim = _axis(t, node, dim, f"tl.{name}'s dim")
    if not -rank <= dim < rank:
        raise t.error(f"tl.{name}: dim {dim} is out of range for {rank} dimension(s)", node)
    return dim % rank


@builtin("squeeze", "x", "dim")
def _squeeze(t: Tracer, node: ast.Call, x: Any, dim: Any) -> Any:
    """``tl.squeeze(x, dim)``: ``x`` without its dimension ``dim``, which must be 1."""
    shape = _tile_shape(t, node, x, "squeeze")
    dim = _dim(t, node, dim, len(shape), "squeeze")
    if shape[dim] != 1:
        raise t.error(f"tl.squeeze: dimension {dim} of shape {shape} is {shape[dim]}, not 1", node)
    if len(shape) == 1:
        raise t.error("tl.squeeze of a rank-1 tile would give a 0-d tensor, which mytriton does not make "
                      "from a tile; keep the tile of one element", node)
    return reshape(t, node, x, shape[:dim] + shape[dim + 1:], "squeeze")


@builtin("unsqueeze", "x", "dim")
def _unsqueeze(t: Tracer, node: ast.Call, x: Any, dim: Any) -> Any:
    """``tl.unsqueeze(x, dim)``: ``x`` with a new dimension of 1 at ``dim`` (tl.expand_dims)."""
    shape = _tile_shape(t, node, x, "unsqueeze")
    return t.make("expand_dims", (x,), node, axis=_dim(t, node, dim, len(shape) + 1, "unsqueeze"))


def _full_like(t: Tracer, node: ast.Call, input: Any, value: Any, dtype: Any) -> Any:
    if not (is_number(input) or isinstance(input, Expr)):
        raise t.error(f"tl.full_like needs a tile, got {describe(input)}", node)
    like = t.type_of(input, node)
    dtype = concrete(element_of(like)) if dtype is None else _dtype(t, node, dtype)
    return _full(t, node, shape_of(like), value, dtype)


@builtin("full_like", "input", "value", dtype=None)
def _full_like_builtin(t: Tracer, node: ast.Call, input: Any, value: Any, dtype: Any) -> Any:
    return _full_like(t, node, input, value, dtype)


@builtin("zeros_like", "input", dtype=None)
def _zeros_like(t: Tracer, node: ast.Call, input: Any, dtype: Any) -> Any:
    return _full_like(t, node, input, 0, dtype)


BUILTINS["permute"] = Builtin("permute", _permute)
BUILTINS["reshape"] = Builtin("reshape", _reshape("reshape"))
BUILTINS["view"] = Builtin("view", _reshape("view"))
BUILTINS["split"] = Builtin("split", _split)
BUILTINS["broadcast_to"] = Builtin("broadcast_to", _broadcast_to)


def _decided_by_the_real_trace(name: str) -> None:
    """The shape ops check their operands' types, which a probe trace only
    guesses (the parameters' types are placeholders, and a type it could not
    work out is a scalar f32): there a failed check asks for the real trace,
    which decides, and tracing goes on with the first operand in place of the
    result (two of it for tl.split)."""
    impl = BUILTINS[name].impl

    def guarded(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
        try:
            return impl(t, node, args, kwargs)
        except CompileError:
            if not t.budget.probing:
                raise
            t.budget.asked_types = True
            stand_in = args[0] if args else next(iter(kwargs.values()), 0)
            return (stand_in, stand_in) if name == "split" else stand_in

    BUILTINS[name] = Builtin(name, guarded)


BUILTINS["trans"] = Builtin("trans", _trans)


for _name in ("trans", "permute", "reshape", "view", "split", "join", "interleave", "cat", "broadcast_to",
              "zeros_like", "full_like"):
    _decided_by_the_real_trace(_name)


# ---- libdevice ----------------------------------------------------------
# ``libdevice.<name>(...)`` (``tl.extra.libdevice``, ``tl.extra.cuda.libdevice``):
# each function makes its op (language/extra/libdevice.py's SIGNATURES) after
# Triton's dispatch: the operand dtypes (a Python float is f32, an int i32)
# must be a row of the function's table, as they are or once promoted together.

LIBDEVICE: dict[str, Builtin] = {}


def _literal_dtype(value: Any) -> Any:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I32 if -2**31 <= value < 2**31 else I64
    return F32


def _libdevice_function(name: str) -> None:
    from mytriton.language.extra.libdevice import SIGNATURES

    op, signatures = SIGNATURES[name]
    count = len(signatures[0])
    spelled = f"libdevice.{name}"

    def call(t: Tracer, node: ast.Call, args: list, kwargs: dict) -> Any:
        if kwargs:
            raise t.error(f"{spelled}() takes positional arguments only, got {', '.join(kwargs)}=", node)
        if len(args) != count:
            raise t.error(f"{spelled}() takes {count} argument(s), got {len(args)}", node)
        values = tuple(_value(t, node, v, spelled) for v in args)
        if not t.budget.probing:  # placeholder parameter types say nothing about the real ones
            _libdevice_check(t, node, spelled, values, signatures)
        return t.make(op, values, node)

    LIBDEVICE[name] = Builtin(spelled, call)


def _libdevice_check(t: Tracer, node: ast.Call, spelled: str, values: tuple, signatures: tuple) -> None:
    dtypes = tuple(_literal_dtype(v) if is_number(v) else concrete(element_of(t.type_of(v, node)))
                   for v in values)
    if dtypes in signatures:
        return
    common = dtypes[0]
    if not isinstance(common, PointerType):
        for other in dtypes[1:]:
            if isinstance(other, PointerType):
                common = other
                break
            common = concrete(promote(common, other))
    if (common,) * len(dtypes) in signatures:
        return
    accepted = "; ".join("(" + ", ".join(str(d) for d in s) + ")" for s in signatures)
    got = "(" + ", ".join(str(d) for d in dtypes) + ")"
    raise t.error(f"{spelled}: libdevice has no function of {got}; it takes {accepted}"
                  + (" (convert with .to(tl.float32))" if all(not isinstance(d, PointerType) for d in dtypes)
                     else ""), node)


def _register_libdevice() -> None:
    from mytriton.language.extra.libdevice import FUNCTIONS

    for name in FUNCTIONS:
        _libdevice_function(name)


_register_libdevice()


# ---- sort and histogram ---------------------------------------------
# tl.sort and tl.flip are library functions (language/sorting.py, registered
# below with random's); tl.histogram is one op.


@builtin("histogram", "input", "num_bins", mask=None)
def _histogram(t: Tracer, node: ast.Call, input: Any, num_bins: Any, mask: Any) -> Any:
    """Triton's tl.histogram(input, num_bins, mask=None): int32 counts of the
    values 0 .. num_bins - 1 (bins of width 1 from 0) among input's elements
    where mask holds. num_bins is the result's length: a constant."""
    if not isinstance(input, Expr):
        raise t.error(f"tl.histogram needs a 1-D tile of 32-bit integers, got {describe(input)}", node)
    if type(num_bins) is not int:
        raise t.error(f"tl.histogram: num_bins must be an integer constant (a tl.constexpr), "
                      f"got {describe(num_bins)}", node)
    problem = histogram_problem(num_bins)
    if problem:
        raise t.error(f"tl.histogram: {problem}", node)
    if mask is True:
        mask = None  # every element counts
    elif not (mask is None or mask is False or isinstance(mask, Expr)):
        raise t.error(f"tl.histogram: mask must be a boolean tile, got {describe(mask)}", node)
    return t.make("histogram", (input, mask), node, num_bins=num_bins)


# ---- gather ----------------------------------------------------------------


@builtin("gather", "src", "index", "axis")
def _gather(t: Tracer, node: ast.Call, src: Any, index: Any, axis: Any) -> Any:
    """Triton's tl.gather(src, index, axis): src's elements at index along
    axis; a negative axis counts from the end, as Triton's does."""
    if not isinstance(src, Expr) or not isinstance(index, Expr):
        raise t.error(f"tl.gather takes a tile and a tile of indices, got {describe(src)} and {describe(index)}", node)
    src_type, index_type = t.type_of(src, node), t.type_of(index, node)
    rank = len(shape_of(src_type))
    if type(axis) is not int:
        raise t.error(f"tl.gather: axis must be an integer constant, got {describe(axis)}", node)
    if -rank <= axis < 0:
        axis += rank
    problem = gather_problem(src_type, index_type, axis)
    if problem:
        raise t.error(f"tl.gather: {problem}", node)
    return t.make("gather", (src, index), node, axis=axis)


# ---- inline assembly -------------------------------------------------------


@builtin("inline_asm_elementwise", "asm", "constraints", "args", "dtype", "is_pure", "pack")
def _inline_asm_elementwise(t: Tracer, node: ast.Call, asm: Any, constraints: Any, args: Any, dtype: Any,
                            is_pure: Any, pack: Any) -> Any:
    """Triton's tl.inline_asm_elementwise: ``asm`` (PTX, ``$N`` its operand N)
    run once per element of ``args`` broadcast together, with one result of
    ``dtype``. pack=1 only, one dtype only, and a non-pure asm of scalars only
    (the CUDA back end computes a tile's elements where they are used)."""
    name = "tl.inline_asm_elementwise"
    if type(asm) is not str or type(constraints) is not str:
        raise t.error(f"{name}: asm and constraints must be strings, got {describe(asm)} and "
                      f"{describe(constraints)}", node)
    if not isinstance(args, (tuple, list)):
        raise t.error(f"{name}: args must be a list of values, got {describe(args)}", node)
    if isinstance(dtype, tuple):
        raise t.error(f"{name}: several results (a tuple of dtypes) are not supported; one dtype", node)
    if not isinstance(dtype, ScalarType) or isinstance(dtype, PointerType):
        raise t.error(f"{name}: dtype must be a dtype such as tl.float32, got {describe(dtype)}", node)
    if type(is_pure) is not bool:
        raise t.error(f"{name}: is_pure must be True or False, got {describe(is_pure)}", node)
    if pack != 1:
        raise t.error(f"{name}: pack={pack!r}: only pack=1 (one element per asm) is supported", node)
    values = list(args)
    for value in values:
        if not isinstance(value, Expr):
            raise t.error(f"{name}: each argument must be a tensor or a runtime scalar, got {describe(value)}", node)
    types = [t.type_of(v, node) for v in values]
    try:
        shape = broadcast_shapes(*(shape_of(x) for x in types))
    except TypeRuleError as err:
        raise t.error(f"{name}: {err}", node) from None
    values = [v if shape_of(x) in (shape, ()) else t.make("broadcast_to", (v,), node, shape=shape)
              for v, x in zip(values, types)]
    if not is_pure and shape:
        raise t.error(f"{name}: is_pure=False over tensors is not supported (its elements would be computed "
                      "where they are used); give scalars, or is_pure=True", node)
    op = "inline_asm" if is_pure else "inline_asm_volatile"
    expr = t.make(op, tuple(values), node, asm=asm, constraints=constraints, dtype=dtype)
    if not is_pure:
        t.anchor(expr)
    return expr


# ---- random ------------------------------------------------------------
# tl.rand, tl.randn, tl.randint, tl.randint4x, tl.philox...: @jit helpers in the
# kernel language (mytriton/language/random.py), traced at the call.
from mytriton.frontend import library as _library  # noqa: E402

BUILTINS.update(_library.builtins())


# ---- scans ----------------------------------------------------------------
# tl.reduce and tl.associative_scan: the combine function, a @jit function of the
# calling module, is traced once on scalars (of the tiles' element types) into
# the closed region of a ``reduce`` or ``scan`` op (tree.CombineStmt). The
# library functions over them (tl.cumsum, tl.argmax, ...) are in
# mytriton/language/standard.py.
from mytriton.frontend.tracer import JitRef, Region  # noqa: E402
from mytriton.ir import opdefs as _opdefs  # noqa: E402
from mytriton.ir.tree import CombineStmt, LoopCarry, LoopResult, Yield  # noqa: E402


def _combine(t: Tracer, node: ast.Call, name: str, op: str, input: Any, axis: Any, combine_fn: Any,
             attrs: dict[str, Any]) -> tuple[Any, ...]:
    """The results of ``op`` (reduce or scan) over ``input`` (a tile or a
    tuple of tiles) combined by ``combine_fn``."""
    tiles = input if isinstance(input, tuple) else (input,)
    if not tiles or not all(isinstance(x, Expr) for x in tiles):
        bad = next((x for x in tiles if not isinstance(x, Expr)), input)
        raise t.error(f"tl.{name}: input must be a tile or a tuple of tiles, got {describe(bad)}", node)
    if len(tiles) > _opdefs.MAX_COMBINE_OPERANDS:
        raise t.error(f"tl.{name}: at most {_opdefs.MAX_COMBINE_OPERANDS} tiles, got {len(tiles)}", node)
    if not isinstance(combine_fn, JitRef):
        raise t.error(f"tl.{name}: combine_fn must be a @jit function of this module, got {describe(combine_fn)}",
                      node)
    types = [t.type_of(x, node) for x in tiles]
    try:
        _opdefs.combine_elements(types, op)
    except TypeRuleError as err:
        raise t.error(f"tl.{name}: {err}", node) from None
    shape = shape_of(types[0])
    if axis is not None or op == "scan":
        axis = _axis(t, node, axis, f"tl.{name}: the axis")
        if not -len(shape) <= axis < len(shape):
            raise t.error(f"tl.{name}: axis {axis} is out of range for a tile of shape {list(shape)}", node)
        axis %= len(shape)
    attrs = {"axis": axis, **attrs}
    elements = [concrete(element_of(ty)) for ty in types]
    fn = (combine_fn.module or t.module).functions[combine_fn.name]
    params = [a.arg for a in fn.args.args]
    required = len(params) - len(fn.args.defaults)
    count = 2 * len(tiles)
    if not required <= count <= len(params):
        raise t.error(f"tl.{name}: the combine function '{combine_fn.name}' takes {len(params)} argument(s), but "
                      f"a {op} over {len(tiles)} tile(s) passes it {count} (the left values, then the right ones)",
                      node)
    region = Region(None)  # closed: the combine function sees its arguments only
    args = tuple(LoopCarry(i, hint=params[i]) for i in range(count))
    for arg, element in zip(args, elements * 2):
        region.own(arg)
        t.budget.types[id(arg)] = (arg, element)
    body = Tracer(t.module, t.kernel, region, {}, t.depth, t.budget, t.site)
    try:
        values = body.call_jit(combine_fn.name, node, list(args), {}, combine_fn.module)
    except CompileError:
        if not t.budget.probing:
            raise
        # A probe trace guesses element types (placeholder parameters): the
        # real trace decides; the left arguments stand in meanwhile.
        t.budget.asked_types = True
        values = args[:len(tiles)]
    values = values if isinstance(values, tuple) else (values,)
    if len(values) != len(tiles):
        raise t.error(f"tl.{name}: the combine function '{combine_fn.name}' returns {len(values)} value(s); a "
                      f"{op} over {len(tiles)} tile(s) needs {len(tiles)}", node)
    for value in values:
        if not (is_number(value) or isinstance(value, Expr)):
            raise t.error(f"tl.{name}: the combine function '{combine_fn.name}' returns {describe(value)}", node)
        t.check_literal(value, node)
    loc = t.loc(node)
    region.stmts.append(Yield(tuple(values), loc))
    stmt = CombineStmt(op, tiles, attrs, args, region.stmts, (), loc)
    stmt.results = tuple(LoopResult(stmt, i) for i in range(len(tiles)))
    result_types = _opdefs.OPS[op].infer(types, attrs)  # combine_elements and the axis were checked above
    for x in tiles:
        t.region.reference(x)
    for result, rtype in zip(stmt.results, result_types):
        t.region.own(result)
        t.budget.types[id(result)] = (result, rtype)
    t.region.stmts.append(stmt)
    return stmt.results


@builtin("reduce", "input", "axis", "combine_fn", keep_dims=False)
def _reduce(t: Tracer, node: ast.Call, input: Any, axis: Any, combine_fn: Any, keep_dims: Any) -> Any:
    keep_dims = _flag(t, node, keep_dims, "tl.reduce: keep_dims")
    results = _combine(t, node, "reduce", "reduce", input, axis, combine_fn, {})
    if keep_dims:
        axis = results[0].loop.attrs["axis"]
        first = input[0] if isinstance(input, tuple) else input
        results = tuple(_kept_dims(t, node, r, axis, first) for r in results)
    return results if isinstance(input, tuple) else results[0]


@builtin("associative_scan", "input", "axis", "combine_fn", reverse=False)
def _associative_scan(t: Tracer, node: ast.Call, input: Any, axis: Any, combine_fn: Any, reverse: Any) -> Any:
    reverse = _flag(t, node, reverse, "tl.associative_scan: reverse")
    attrs = {"reverse": True} if reverse else {}
    results = _combine(t, node, "associative_scan", "scan", input, axis, combine_fn, attrs)
    return results if isinstance(input, tuple) else results[0]


def _max_min_with_indices(name: str) -> None:
    """tl.max / tl.min with Triton's signature: with return_indices=True, the
    (values, indices) pair of standard.py's ``<name>_with_indices``."""
    plain = BUILTINS[name].impl

    @builtin(name, "input", axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False)
    def impl(t: Tracer, node: ast.Call, input: Any, axis: Any, return_indices: Any,
             return_indices_tie_break_left: Any, keep_dims: Any) -> Any:
        if not _flag(t, node, return_indices, f"tl.{name}: return_indices"):
            return plain(t, node, [input], {"axis": axis, "keep_dims": keep_dims})
        tie = _flag(t, node, return_indices_tie_break_left, f"tl.{name}: return_indices_tie_break_left")
        return _library.call(t, node, f"{name}_with_indices", [input, axis, tie, keep_dims], {},
                             library_name="standard")


for _name in ("max", "min"):
    _max_min_with_indices(_name)
