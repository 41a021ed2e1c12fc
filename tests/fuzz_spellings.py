"""Generators of kernel spellings that once broke the compiler, each case with
the property its outcome must have (a plain function raising AssertionError,
as in tests/fuzz_checks.py):

- ``operators``: an operator (binary, unary, comparison, ``and``/``or``,
  ``if``/``else``) over constant values of every kind (bools, integers up to
  and past 64 bits, floats with infinities, NaN and -0.0, strings, None,
  tuples, dtypes), spelled as literals, constexpr parameters or module
  constants, nested up to three deep. The kernel stores what Python computes,
  or the compiler refuses it, located: always where Python raises.
- ``recursion``: @jit helpers calling themselves (or each other) one to three
  times per level with a constexpr depth, returning early inside an ``if``
  on it or at the end. A call repeating an earlier one's arguments is traced
  once, so the kernel compiles; one that doubles the work per level may be
  refused at a named limit, never after more than MAX_SECONDS.
- ``elif``: an if/elif chain of up to 300 branches on a runtime scalar,
  maybe in a helper, maybe inside another runtime ``if``: it runs as Python
  would run it, or is refused at MAX_LOOP_NESTING exactly when it nests
  deeper.
- ``annotations``: a generated kernel (tests/fuzz_kernels.py) under ``from
  __future__ import annotations``, its constexprs annotated with strings:
  it compiles to the SSA the plain spelling gives.

``generate(kind, seed)`` is case ``seed`` (what tools/fuzz.py replays);
``cases(kind)`` is a hypothesis strategy of them.
"""
from __future__ import annotations

import ast
import difflib
import operator
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import mytriton.language as tl
from mytriton import compiler
from mytriton.deep_stack import run_deep
from mytriton.diagnostics import CompileError
from mytriton.ir.tree import Effect
from mytriton.compiler import Options

from fuzz_kernels import HEADER, HypothesisChooser, RandomChooser, generate_kernel

GENERATORS = ("operators", "recursion", "elif", "annotations")

# Any one input is compiled or refused within this, even on a shared two-core machine.
MAX_SECONDS = 10.0


@dataclass
class SpellingCase:
    kind: str
    source: str
    check: Callable[[], None]

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return f"SpellingCase({self.kind})\n{self.source}"


def compiled(source: str, emit: str, options: Options) -> Any:
    """``emit`` of ``source``, or the CompileError refusing it (located, and
    within MAX_SECONDS); any other exception is a failure of the compiler."""
    start = time.monotonic()
    try:  # on a large stack, as the CLI and the JIT compile
        result = run_deep(compiler.compile_source, source, "k.py", emit, options)
    except CompileError as err:
        result = err
        assert err.loc is not None, f"an error without a location: {err.message}"
    elapsed = time.monotonic() - start
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s"
    return result


def traced(source: str, options: Options) -> Any:
    """The tree of ``source``, lowered too (so that lowering's refusals
    count), or the CompileError refusing it."""
    start = time.monotonic()
    try:
        result = run_deep(compiler.trace, source, "k.py", options)
        run_deep(compiler.lower, result)
    except CompileError as err:
        assert err.loc is not None, f"an error without a location: {err.message}"
        result = err
    elapsed = time.monotonic() - start
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s"
    return result


def run_interpreter(source: str, options: Options, grid: tuple[int, ...], args: list[Any]) -> list[Any]:
    from mytriton.backends.interp import run_kernel

    kernel = run_deep(compiler.source_to_ssa, source, "k.py", options)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(kernel, grid, copies)
    return copies


# ---- operators over constants -----------------------------------------------------------------

# Constants of every kind a constexpr can hold, as source writes them.
CONSTANTS: dict[str, tuple[str, ...]] = {
    "bool": ("True", "False"),
    "int": ("0", "1", "-1", "3", "-8", "255", "2147483648", "-2147483648", "9223372036854775807",
            "-9223372036854775808", "18446744073709551615", "18446744073709551616", "12345678901234567890123"),
    "float": ("0.0", "-0.0", "2.5", "-1.5", "0.1", "1e+308", "1e-308", "float('inf')", "-float('inf')",
              "float('nan')"),
    "str": ("''", "'ab'"),
    "none": ("None",),
    "tuple": ("()", "(1, 2)", "(2.5,)"),
    "dtype": ("tl.float32", "tl.int8", "tl.int1"),
}
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
          "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
UNARY = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not ": operator.not_}
STORABLE = (bool, int, float)
# Refusals of a value Python computes that are right: a kernel literal is an
# i64, a u64 or a double, and constants are bounded (limits.py).
RANGE_ERRORS = ("out of range", "MAX_CONSTANT_BITS", "MAX_CONSTANT_LENGTH", "too large", "does not fit")
# Results Python would take gigabytes or hours to build: the reference stops
# there (the compiler must refuse them at its constant limits).
HUGE_SHIFT = 1 << 16
HUGE_REPEAT = 1 << 20


class _Huge(Exception):
    pass


def _is_int(value: Any) -> bool:
    return isinstance(value, int)  # bools too: True << n is 1 << n


def _python(expression: str, env: dict[str, Any]) -> tuple[str, Any]:
    """What Python makes of ``expression``: ("value", v), ("error", exc),
    or ("huge", None) for a result too large to build here."""

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.BinOp):
            a, b = value(node.left), value(node.right)
            op = _SYMBOLS[type(node.op)]
            if op == "<<" and _is_int(a) and _is_int(b) and b > HUGE_SHIFT:
                raise _Huge
            sequence, count = (a, b) if isinstance(a, (str, tuple)) else (b, a)
            if op == "*" and isinstance(sequence, (str, tuple)) and _is_int(count) \
                    and len(sequence) * count > HUGE_REPEAT:
                raise _Huge
            return BINARY[op](a, b)
        if isinstance(node, ast.UnaryOp):
            return UNARY[_SYMBOLS[type(node.op)]](value(node.operand))
        if isinstance(node, ast.Compare):
            return COMPARE[_SYMBOLS[type(node.ops[0])]](value(node.left), value(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            result = value(node.values[0])
            for operand in node.values[1:]:
                if bool(result) == isinstance(node.op, ast.Or):
                    return result
                result = value(operand)
            return result
        if isinstance(node, ast.IfExp):
            return value(node.body) if value(node.test) else value(node.orelse)
        return eval(compile(ast.Expression(node), "<constant>", "eval"), {"tl": tl}, env)  # noqa: S307

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ~True is deprecated: still Python's value
            return "value", value(ast.parse(expression, mode="eval").body)
    except _Huge:
        return "huge", None
    except (ArithmeticError, TypeError, ValueError) as err:
        return "error", err


_SYMBOLS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.BitAnd: "&",
    ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.USub: "-", ast.UAdd: "+",
    ast.Invert: "~", ast.Not: "not ", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
    ast.NotEq: "!=",
}


def _operand(ch: Any, names: dict[str, str]) -> str:
    text = ch.choice(CONSTANTS[ch.choice(tuple(CONSTANTS))])
    spelling = ch.choice(("literal", "literal", "constexpr", "module"))
    if spelling == "literal":
        return f"({text})"
    name = f"{'A' if spelling == 'constexpr' else 'K'}{len(names)}"
    names[name] = text
    return name


def _expression(ch: Any, names: dict[str, str], depth: int) -> str:
    if depth <= 0 or ch.integer(0, 3) == 0:
        return _operand(ch, names)
    form = ch.choice(("binary", "binary", "compare", "unary", "boolop", "ifexp"))
    a = _expression(ch, names, depth - 1)
    if form == "unary":
        return f"({ch.choice(tuple(UNARY))}{a})"
    b = _expression(ch, names, depth - 1)
    if form == "binary":
        return f"({a} {ch.choice(tuple(BINARY))} {b})"
    if form == "compare":
        return f"({a} {ch.choice(tuple(COMPARE))} {b})"
    if form == "boolop":
        return f"({a} {ch.choice(('and', 'or'))} {b})"
    return f"({a} if {_expression(ch, names, depth - 1)} else {b})"


def _operators(ch: Any) -> SpellingCase:
    names: dict[str, str] = {}
    expression = _expression(ch, names, ch.integer(1, 3))
    constexprs = [n for n in names if n.startswith("A")]
    module = "".join(f"{n} = {t}\n" for n, t in names.items() if n.startswith("K"))
    params = "".join(f", {n}: tl.constexpr" for n in constexprs)
    source = (HEADER + module + f"\n@mytriton.jit\ndef k(x_ptr{params}):\n    v = {expression}\n"
              "    tl.store(x_ptr, v)\n")
    env = {n: eval(t, {"tl": tl}) for n, t in names.items()}  # noqa: S307 (our own constants)
    defines = {n: env[n] for n in constexprs}

    def check() -> None:
        kind, expected = _python(expression, dict(env))
        outcome = traced(source, Options(defines=defines, signature="*fp32"))
        if isinstance(outcome, CompileError):
            if "its value is computed when the file runs" in outcome.message:
                # A module constant made by a call (float('inf')): mytriton never runs the file.
                assert any("(" in text and not text.startswith("(") for text in names.values()), outcome.message
                return
            if kind == "huge":
                assert "MAX_CONSTANT" in outcome.message, outcome.message
            if kind == "value" and isinstance(expected, STORABLE):
                assert any(phrase in outcome.message for phrase in RANGE_ERRORS), \
                    f"Python gives {expected!r}, the compiler refuses it: {outcome.message}"
            return
        assert kind != "huge", "the compiler builds a constant past its limits"
        assert kind == "value", f"Python raises {type(expected).__name__}: {expected}; the compiler accepts it"
        store = outcome.body[-1]
        assert isinstance(store, Effect) and store.node.op == "store"
        got = store.node.args[1]
        assert isinstance(expected, STORABLE), f"Python gives {expected!r}, the compiler stores {got!r}"
        assert (type(got), repr(got)) == (type(expected), repr(expected)), \
            f"Python gives {expected!r}, the compiler stores {got!r}"

    return SpellingCase("operators", source, check)


# ---- helpers that call themselves ---------------------------------------------------------------


def _recursion(ch: Any) -> SpellingCase:
    depth = ch.choice((0, 1, 2, 5, 10, ch.integer(0, 40)))
    calls = ch.integer(1, 3)
    same_arguments = ch.boolean()
    early = ch.boolean()
    mutual = ch.boolean()
    combine = ch.choice(("sum", "max", "mean"))
    quoted = ch.boolean()
    base = ch.choice((0.0, 1.0, -0.5))
    annotation = "'tl.constexpr'" if quoted else "tl.constexpr"
    names = ("h", "g") if mutual else ("h", "h")

    def body(name: str, callee: str) -> str:
        args = [f"{callee}(x, D - 1)" if same_arguments or i == 0 else f"{callee}(x + {i}.0, D - 1)"
                for i in range(calls)]
        value = {"sum": " + ".join(args), "max": _nested("tl.maximum", args),
                 "mean": f"({' + '.join(args)}) * {1 / calls!r}"}[combine]
        if early:
            return (f"@mytriton.jit\ndef {name}(x, D: {annotation}):\n    if D <= 0:\n        return x + {base!r}\n"
                    f"    return {value}\n\n\n")
        return (f"@mytriton.jit\ndef {name}(x, D: {annotation}):\n    if D <= 0:\n        r = x + {base!r}\n"
                f"    else:\n        r = {value}\n    return r\n\n\n")

    helpers = body("h", names[1]) + (body("g", "h") if mutual else "")
    source = (HEADER + helpers + "@mytriton.jit\ndef k(x_ptr, out_ptr, DEPTH: tl.constexpr):\n"
              "    offs = tl.arange(0, 16)\n    tl.store(out_ptr + offs, h(tl.load(x_ptr + offs), DEPTH))\n")
    options = Options(defines={"DEPTH": depth}, signature="*fp32, *fp32")

    def reference(x: np.ndarray) -> np.ndarray:
        memo: dict[tuple[int, float], np.ndarray] = {}

        def value(d: int, shift: float) -> np.ndarray:
            if (d, shift) not in memo:
                if d <= 0:
                    memo[d, shift] = x + shift + base
                else:
                    parts = [value(d - 1, shift + (0 if same_arguments or i == 0 else i)) for i in range(calls)]
                    memo[d, shift] = {"sum": sum(parts), "max": np.maximum.reduce(parts),
                                      "mean": sum(parts) * (1 / calls)}[combine]
            return memo[d, shift]

        return value(depth, 0.0)

    def check() -> None:
        outcome = compiled(source, "opt", options)
        if isinstance(outcome, CompileError):
            if "nest too deeply" in outcome.message:
                assert depth > 30, outcome.message
            else:
                # Calls repeating their arguments trace once per level; others multiply the work.
                assert "MAX_TRACED_NODES" in outcome.message or "MAX_EXPRESSION_DEPTH" in outcome.message, \
                    outcome.message
                assert not same_arguments and calls > 1 and depth > 4, f"refused: {outcome.message}"
            return
        x = np.random.default_rng(depth).standard_normal(16).astype(np.float32)
        out = run_interpreter(source, options, (1,), [x, np.zeros(16, np.float32)])[1]
        want = reference(x.astype(np.float64))
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.max(np.abs(want)))))

    return SpellingCase("recursion", source, check)


def _nested(fn: str, args: list[str]) -> str:
    result = args[0]
    for arg in args[1:]:
        result = f"{fn}({result}, {arg})"
    return result


# ---- long if/elif chains --------------------------------------------------------------------------


def _elif(ch: Any) -> SpellingCase:
    branches = ch.integer(1, 32) if ch.integer(0, 4) else ch.integer(200, 300)
    test = ch.choice(("equal", "below"))
    has_else = ch.boolean()
    in_helper = ch.boolean()
    outer_if = ch.boolean()
    lines = []
    for i in range(branches):
        keyword = "if" if i == 0 else "elif"
        condition = f"n == {i}" if test == "equal" else f"n < {2 * i}"
        lines += [f"{keyword} {condition}:", f"    y = x + {i}.0"]
    if has_else:
        lines += ["else:", "    y = x * 2.0"]
    chain = ["y = x * 0.5", *lines]
    if in_helper:
        helper = ("@mytriton.jit\ndef pick(x, n):\n" + "".join(f"    {line}\n" for line in chain)
                  + "    return y\n\n\n")
        inner = ["y = pick(x, n)"]
    else:
        helper, inner = "", chain
    if outer_if:
        inner = ["y = x", "if n >= -100:", *(f"    {line}" for line in inner)]
    source = (HEADER + helper + "@mytriton.jit\ndef k(x_ptr, n):\n    offs = tl.arange(0, 16)\n"
              "    x = tl.load(x_ptr + offs)\n" + "".join(f"    {line}\n" for line in inner)
              + "    tl.store(x_ptr + offs, y)\n")
    options = Options(signature="*fp32, i32")
    nesting = branches - 1 + (1 if outer_if else 0)  # regions around the chain's last 'if'

    def reference(x: np.ndarray, n: int) -> np.ndarray:
        for i in range(branches):
            if (n == i) if test == "equal" else (n < 2 * i):
                return x + np.float32(i)
        return x * np.float32(2.0) if has_else else x * np.float32(0.5)

    def check() -> None:
        from mytriton.limits import MAX_LOOP_NESTING

        outcome = compiled(source, "opt", options)
        if isinstance(outcome, CompileError):
            assert "MAX_LOOP_NESTING" in outcome.message, outcome.message
            assert nesting >= MAX_LOOP_NESTING, f"{branches} branches refused: {outcome.message}"
            return
        assert nesting < MAX_LOOP_NESTING, f"{branches} branches nest {nesting} deep and compile"
        rng = np.random.default_rng(branches)
        for n in (0, branches - 1, int(rng.integers(-3, 2 * branches + 3))):
            x = rng.standard_normal(16).astype(np.float32)
            got = run_interpreter(source, options, (1,), [x, n])[0]
            np.testing.assert_array_equal(got, reference(x, n))

    return SpellingCase("elif", source, check)


# ---- annotations written as strings ---------------------------------------------------------------


def _annotations(ch: Any) -> SpellingCase:
    gk = generate_kernel(ch.integer(0, 10**6))
    spelled = ch.choice(("'tl.constexpr'", '"tl.constexpr"', "' tl.constexpr '", "'mytriton.language.constexpr'"))
    source = gk.source.replace(": tl.constexpr", f": {spelled}")
    if ch.boolean():  # a runtime parameter's annotation is only a note, string or not
        source = source.replace("(x_ptr,", "(x_ptr: 'tl.tensor',", 1)
    if "mytriton.language.constexpr" in spelled:
        source = source.replace("import mytriton.language as tl\n", "import mytriton.language as tl; "
                                "import mytriton.language\n", 1)
    # The future import joins the first line, so that every other line keeps its number.
    source = source.replace("import mytriton\n", "from __future__ import annotations; import mytriton\n", 1)
    options = Options(kernel=gk.name, defines=dict(gk.defines), signature=gk.signature, num_warps=gk.num_warps)

    def check() -> None:
        plain = compiler.source_to_ssa(gk.source, gk.file, options)
        quoted = compiled(source, "opt", options)
        assert not isinstance(quoted, CompileError), f"refused: {quoted.message}"
        again = compiler.source_to_ssa(source, gk.file, options)
        plain.digest = again.digest = None
        want, got = compiler.print_ssa(plain), compiler.print_ssa(again)
        assert got == want, "string annotations change the SSA:\n" + "\n".join(
            difflib.unified_diff(want.splitlines(), got.splitlines(), lineterm="", n=0))

    return SpellingCase("annotations", source, check)


BUILDERS: dict[str, Callable[[Any], SpellingCase]] = {
    "operators": _operators, "recursion": _recursion, "elif": _elif, "annotations": _annotations,
}


def generate(kind: str, seed: int) -> SpellingCase:
    """Case ``seed`` of generator ``kind``: the same on every machine."""
    return BUILDERS[kind](RandomChooser(seed * len(GENERATORS) + GENERATORS.index(kind)))


def cases(kind: str) -> Any:
    """A hypothesis strategy of ``kind``'s cases."""
    from hypothesis import strategies as st

    @st.composite
    def strategy(draw: Any) -> SpellingCase:
        return BUILDERS[kind](HypothesisChooser(draw))

    return strategy()

