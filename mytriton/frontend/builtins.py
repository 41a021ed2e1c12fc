"""What each ``tl.*`` function means while tracing.

Each builtin binds its arguments the way Triton's signature does (positional
or keyword, with Triton's defaults), computes on Python constants when it
can, and otherwise builds tree expressions.
"""
from __future__ import annotations

import ast
from typing import Any, Callable

from mytriton.frontend.tracer import Builtin, Tracer, describe, is_number
from mytriton.ir.opdefs import MATH_FUNCTIONS
from mytriton.ir.tree import Expr
from mytriton.language import PropagateNan
from mytriton.types import BOOL, ScalarType

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


def _shape(tracer: Tracer, node: ast.AST, value: Any) -> tuple[int, ...]:
    shape = (value,) if type(value) is int else value
    if not isinstance(shape, tuple) or not shape or not all(type(d) is int for d in shape):
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
def _load(t: Tracer, node: ast.Call, pointer: Any, mask: Any, other: Any, **hints: Any) -> Any:
    if not isinstance(pointer, Expr):
        raise t.error("tl.load needs a pointer", node)
    if other is not None and mask is None:
        raise t.error("tl.load: 'other' needs a 'mask'", node)
    expr = t.make("load", (pointer, mask, other), node)
    t.anchor(expr)
    return expr


@builtin("store", "pointer", "value", mask=None, boundary_check=(), cache_modifier="",
         eviction_policy="")
def _store(t: Tracer, node: ast.Call, pointer: Any, value: Any, mask: Any, **hints: Any) -> Any:
    if not isinstance(pointer, Expr):
        raise t.error("tl.store needs a pointer", node)
    t.effect(t.make("store", (pointer, value, mask), node))
    return None


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
    args = tuple(_value(t, node, v, "where") for v in (condition, x, y))
    return t.make("where", args, node)


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


# ---- math and dtypes (issue 9, part 5) ----------------------------------------------------


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
    dtype = _dtype(t, node, dtype)
    return t.make("full", (_fill_literal(dtype, 0),), node, shape=_shape(t, node, shape), dtype=dtype)


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
    return t.make("full", (fill,), node, shape=_shape(t, node, shape), dtype=dtype)


@builtin("expand_dims", "input", "axis")
def _expand_dims(t: Tracer, node: ast.Call, input: Any, axis: Any) -> Any:
    axis = _axis(t, node, axis, "the axis")
    if axis < 0:
        raise t.error("tl.expand_dims needs a non-negative axis", node)
    return t.make("expand_dims", (input,), node, axis=axis)


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
            if axis is None:
                raise t.error(f"tl.{name}: keep_dims needs an axis", node)
            result = t.make("expand_dims", (result,), node, axis=axis)
        return result


for _name in ("sum", "max", "min"):
    _reduction(_name)


@builtin("dot", "input", "other", acc=None, input_precision=None, allow_tf32=None,
         max_num_imprecise_acc=None, out_dtype=None)
def _dot(t: Tracer, node: ast.Call, input: Any, other: Any, acc: Any, **options: Any) -> Any:
    if not isinstance(input, Expr) or not isinstance(other, Expr):
        raise t.error("tl.dot needs two tiles", node)
    return t.make("dot", (input, other, acc), node)


# ---- loops (only meaningful as the iterable of a for) -------------------------------------


def _loop_only(name: str) -> None:
    @builtin(name, "arg1", arg2=None, arg3=None)
    def impl(t: Tracer, node: ast.Call, **_: Any) -> Any:
        raise t.error(f"tl.{name} can only be the iterable of a 'for' loop", node)


for _name in ("static_range", "range"):
    _loop_only(_name)
