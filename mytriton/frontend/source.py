"""Reading a kernel file without running it.

The file is parsed with ``ast`` only. Imports of mytriton are recorded as
aliases, module-level constants are evaluated statically, and ``@jit``
functions are collected. A *kernel bundle* (what ``mytriton parse`` prints)
is itself a kernel file with one extra assignment, ``__mytriton_bundle__``,
that maps its functions back to their lines in the original source.
"""
from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Any

from mytriton.diagnostics import (
    SOURCES, CompileError, Location, is_digest, source_digest, source_lines,
)
from mytriton.language import DTYPES
from mytriton.limits import MAX_EXPRESSION_DEPTH, MAX_SOURCE_LINES, constant_result_error, constant_value_error

MODULES = ("mytriton", "mytriton.language")
BUNDLE_MARKER = "__mytriton_bundle__"


@dataclass(frozen=True)
class Unresolved:
    """A module-level name whose value is not a compile-time constant."""

    reason: str


@dataclass
class KernelModule:
    file: str  # the original source file, for diagnostics
    tree: ast.Module
    aliases: dict[str, str]  # local name -> qualified mytriton name
    constants: dict[str, Any]
    functions: dict[str, ast.FunctionDef]  # the @jit functions, by name
    kernel_name: str | None = None  # chosen by a bundle
    digest: str | None = None  # of the original source text (a bundle's header carries it)

    def loc(self, node: ast.AST) -> Location:
        return Location(self.file, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)

    def qualname(self, expr: ast.expr) -> str | None:
        """``tl.load`` -> ``mytriton.language.load`` when ``tl`` is an alias."""
        if isinstance(expr, ast.Name):
            return self.aliases.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    def is_jit_decorator(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.qualname(target) == "mytriton.jit"


def read_module(text: str, file: str) -> KernelModule:
    lines = text.count("\n") + 1
    if lines > MAX_SOURCE_LINES:
        raise CompileError(f"the file has {lines} lines, over the limit of {MAX_SOURCE_LINES} (MAX_SOURCE_LINES)",
                           Location(file, MAX_SOURCE_LINES + 1, 1))
    try:
        with warnings.catch_warnings():
            # Python's own warnings about the file ("invalid escape sequence")
            # are not mytriton's diagnostics, and would print raw.
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=file)
    except SyntaxError as err:
        SOURCES.register(file, text)
        loc = Location(file, err.lineno or 1, err.offset or 1)
        raise CompileError(f"invalid Python syntax: {err.msg}", loc) from None
    SOURCES.register(file, text)
    module = KernelModule(file, tree, {}, {}, {}, digest=source_digest(text))
    bundle = _bundle_header(tree, file)
    if bundle is not None:
        _remap_bundle(module, bundle, text)
    for stmt in tree.body:
        _read_statement(module, stmt)
    return module


def _read_statement(module: KernelModule, stmt: ast.stmt) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name.split(".")[0] != "mytriton":
                module.aliases.pop(alias.asname or alias.name.split(".")[0], None)
                continue
            if alias.asname:
                module.aliases[alias.asname] = alias.name
            else:
                module.aliases["mytriton"] = "mytriton"
    elif isinstance(stmt, ast.ImportFrom):
        if stmt.level == 0 and stmt.module and stmt.module.split(".")[0] == "mytriton":
            for alias in stmt.names:
                module.aliases[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
    elif isinstance(stmt, ast.FunctionDef):
        if any(module.is_jit_decorator(d) for d in stmt.decorator_list):
            module.functions[stmt.name] = stmt
        else:
            module.constants[stmt.name] = Unresolved(f"'{stmt.name}' is a Python function, not a @jit function")
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if stmt.value is None:
            return
        value = constant_value(module, stmt.value)
        for target in targets:
            if isinstance(target, ast.Name) and target.id != BUNDLE_MARKER:
                module.constants[target.id] = value
    elif isinstance(stmt, ast.ClassDef):
        module.constants[stmt.name] = Unresolved(f"'{stmt.name}' is a class")


def constant_value(module: KernelModule, expr: ast.expr) -> Any:
    """Evaluate a module-level expression made of literals, other constants,
    arithmetic, tuples, dtypes and ``tl.constexpr(...)``; anything else is
    Unresolved (it would need running the file)."""
    if _depth_over(expr, MAX_EXPRESSION_DEPTH):  # before _fold recurses into it
        return Unresolved(f"it nests more than {MAX_EXPRESSION_DEPTH} operations deep (MAX_EXPRESSION_DEPTH)")
    try:
        return _fold(module, expr)
    except _NotConstant as err:
        return Unresolved(str(err))


def _depth_over(expr: ast.expr, limit: int) -> bool:
    """Whether ``expr`` nests deeper than ``limit``, found without recursion."""
    stack = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


class _NotConstant(Exception):
    pass


_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
}


_COMPARES = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def _fold(module: KernelModule, expr: ast.expr) -> Any:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (bool, int, float, str, type(None))):
        return expr.value
    if isinstance(expr, ast.Tuple):
        return tuple(_fold(module, e) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd, ast.Not, ast.Invert)):
        value = _fold(module, expr.operand)
        return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Not: lambda v: not v,
                ast.Invert: lambda v: ~v}[type(expr.op)](value)
    if isinstance(expr, ast.BinOp) and type(expr.op) in _BINOPS:
        left, right = _fold(module, expr.left), _fold(module, expr.right)
        # Judged before computing: 2 ** 10 ** 10 would take hours and gigabytes.
        too_large = constant_result_error(type(expr.op), left, right)
        if too_large:
            raise _NotConstant(f"constant arithmetic failed: {too_large}")
        try:
            result = _BINOPS[type(expr.op)](left, right)
        except (ArithmeticError, TypeError, ValueError) as err:
            raise _NotConstant(f"constant arithmetic failed: {err}") from None
        too_large = constant_value_error(result)
        if too_large:
            raise _NotConstant(f"constant arithmetic failed: {too_large}")
        return result
    if isinstance(expr, ast.IfExp):  # only the branch the condition picks is evaluated, as Python does
        return _fold(module, expr.body if _fold(module, expr.test) else expr.orelse)
    if isinstance(expr, ast.BoolOp):
        value: Any = None
        for operand in expr.values:
            value = _fold(module, operand)
            if bool(value) == isinstance(expr.op, ast.Or):
                return value
        return value
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in _COMPARES:
        left, right = _fold(module, expr.left), _fold(module, expr.comparators[0])
        try:
            return _COMPARES[type(expr.ops[0])](left, right)
        except TypeError as err:
            raise _NotConstant(f"constant comparison failed: {err}") from None
    if isinstance(expr, ast.Name) and expr.id not in module.aliases:
        value = module.constants.get(expr.id)
        if value is None and expr.id not in module.constants:
            raise _NotConstant(f"'{expr.id}' is not a constant")
        if isinstance(value, Unresolved):
            raise _NotConstant(value.reason)
        return value
    qualified = module.qualname(expr)
    if qualified and qualified.startswith("mytriton.language.") and qualified.split(".")[-1] in DTYPES:
        return DTYPES[qualified.split(".")[-1]]
    if isinstance(expr, ast.Call) and module.qualname(expr.func) == "mytriton.language.constexpr":
        if len(expr.args) == 1 and not expr.keywords:
            return _fold(module, expr.args[0])
    raise _NotConstant("its value is computed when the file runs, which mytriton never does")


# ---- kernel bundles -------------------------------------------------------------


def _bundle_header(tree: ast.Module, file: str) -> dict | None:
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == BUNDLE_MARKER):
            try:
                header = ast.literal_eval(stmt.value)
            except ValueError:
                header = None
            where = Location(file, stmt.lineno, stmt.col_offset + 1)
            if not (isinstance(header, dict) and isinstance(header.get("source"), str)
                    and isinstance(header.get("kernel"), str) and isinstance(header.get("lines"), dict)
                    and isinstance(header.get("unresolved", {}), dict)
                    and ("digest" not in header or is_digest(header["digest"]))):
                raise CompileError(f"malformed {BUNDLE_MARKER} header", where)
            for name, line in header["lines"].items():
                if not (isinstance(name, str) and type(line) is int and 1 <= line <= MAX_SOURCE_LINES):
                    raise CompileError(f"malformed {BUNDLE_MARKER} header: the line of '{name}' must be "
                                       f"an integer from 1 to {MAX_SOURCE_LINES}", where)
            return header
    return None


def _remap_bundle(module: KernelModule, header: dict, text: str) -> None:
    """Give the bundle's functions their original file and line numbers, and
    let diagnostics quote the original lines from the bundle's copy."""
    bundle_lines = source_lines(text)
    bundle_file = module.file
    module.file = header["source"]
    module.kernel_name = header["kernel"]
    module.digest = header.get("digest")
    for name, reason in header.get("unresolved", {}).items():
        module.constants[str(name)] = Unresolved(str(reason))
    for stmt in module.tree.body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.name not in header["lines"]:
            continue
        first = function_first_line(stmt)
        original = header["lines"][stmt.name]
        chunk = bundle_lines[first - 1: stmt.end_lineno]
        if original + len(chunk) - 1 > MAX_SOURCE_LINES:
            raise CompileError(f"malformed {BUNDLE_MARKER} header: '{stmt.name}' would end past line "
                               f"{MAX_SOURCE_LINES}", Location(bundle_file, stmt.lineno, stmt.col_offset + 1))
        ast.increment_lineno(stmt, original - first)
        SOURCES.register_lines(module.file, original, chunk, module.digest)


def function_first_line(fn: ast.FunctionDef) -> int:
    return min([fn.lineno] + [d.lineno for d in fn.decorator_list])
