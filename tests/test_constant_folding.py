"""The tracer computes operators on compile-time constants (constexprs,
literals: numbers, strings, tuples, None, dtypes) as Python does, as Triton's
constexprs do: the same value and type, or, where Python raises, a located
error that says what Python says."""
from __future__ import annotations

import itertools
import operator

import pytest

import mytriton.language as tl
from conftest import kernel_source
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.ir.tree import Effect

CONSTANTS = ("True", "False", "0", "3", "-2", "2.5", "-0.0", "7.0")
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
          "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
UNARY = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not ": operator.not_}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
OTHER_CONSTANTS = ("''", "'ab'", "()", "(1, 2)", "None", "tl.float32", "3", "2.5", "True")


def stored_constant(expression: str):
    """What ``tl.store(x_ptr, <expression>)`` stores, traced."""
    source = kernel_source(f"""
        @mytriton.jit
        def k(x_ptr, BLOCK: tl.constexpr = 64):
            tl.store(x_ptr, {expression})
        """)
    tree = compiler.trace(source, "k.py", compiler.Options(signature="*fp32"))
    store = tree.body[-1]
    assert isinstance(store, Effect)
    return store.node.args[1]


def python_outcome(fn, *operands):
    try:
        return "value", fn(*operands)
    except ZeroDivisionError:
        return "error", "division by zero"
    except (TypeError, ValueError) as err:
        return "error", str(err)


def check(expression: str, expected: tuple[str, object]) -> None:
    kind, value = expected
    if kind == "value":
        got = stored_constant(expression)
        assert (type(got), repr(got)) == (type(value), repr(value)), expression
        return
    with pytest.raises(CompileError) as info:
        stored_constant(expression)
    assert value in info.value.message, expression
    assert (info.value.loc.line, info.value.loc.col) == (6, 21), expression


@pytest.mark.parametrize("op", BINARY)
def test_a_binary_operator_on_constants_is_pythons(op):
    for a, b in itertools.product(CONSTANTS, repeat=2):
        check(f"({a}) {op} ({b})", python_outcome(BINARY[op], eval(a), eval(b)))


@pytest.mark.parametrize("op", UNARY)
def test_a_unary_operator_on_a_constant_is_pythons(op):
    for a in CONSTANTS:
        if op == "~" and a in ("True", "False"):
            continue  # Python 3.12 deprecates ~ on a bool (a warning, not a value to compare)
        check(f"{op}({a})", python_outcome(UNARY[op], eval(a)))


def test_a_shift_of_a_float_constexpr_is_a_located_error_as_in_python():
    # BLOCK / 2 is a float, as in Python: a shift of it is a TypeError there.
    with pytest.raises(CompileError, match=r"unsupported operand type\(s\) for >>: 'float' and 'int'") as info:
        stored_constant("(BLOCK / 2) >> 5")
    assert (info.value.loc.line, info.value.loc.col) == (6, 21)


@pytest.mark.parametrize("op", [*BINARY, *COMPARE])
def test_an_operator_on_strings_tuples_none_and_dtypes_is_pythons(op):
    fn = {**BINARY, **COMPARE}[op]
    for a, b in itertools.product(OTHER_CONSTANTS, repeat=2):
        expression = f"({a}) {op} ({b})"
        kind, value = python_outcome(fn, eval(a, {"tl": tl}), eval(b, {"tl": tl}))
        if kind == "value":
            # What the tracer computed must equal Python's value: 1 when it does.
            assert stored_constant(f"({expression}) == {value!r}") is True, expression
        else:
            check(expression, (kind, value))


@pytest.mark.parametrize("op", UNARY)
def test_a_unary_operator_on_a_string_tuple_none_or_dtype_is_pythons(op):
    for a in OTHER_CONSTANTS[:6]:
        expression = f"{op}({a})"
        kind, value = python_outcome(UNARY[op], eval(a, {"tl": tl}))
        if kind == "value":
            assert stored_constant(f"({expression}) == {value!r}") is True, expression
        else:
            check(expression, (kind, value))
