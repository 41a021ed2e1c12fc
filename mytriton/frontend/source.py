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
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from mytriton.as_triton.modules import is_language_path, kernel_path, provides
from mytriton.diagnostics import (
    SOURCES, CompileError, Location, is_digest, source_digest, source_lines,
)
from mytriton.language import DTYPES
from mytriton.limits import MAX_EXPRESSION_DEPTH, MAX_SOURCE_LINES, constant_result_error, constant_value_error

MODULES = ("mytriton", "mytriton.language")
# The decorators that make a function a kernel (Triton's spellings are read as these).
JIT_DECORATORS = ("mytriton.jit", "mytriton.runtime.jit.jit")
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
    # The module's globals as Python bound them, for a kernel launched from
    # Python (frontend/namespace.py reads them); None where nothing runs (the
    # CLI), and the names are what the file's text binds.
    namespace: Mapping[str, Any] | None = None
    checked: set[str] = field(default_factory=set)  # functions whose syntax is checked (another file's helpers)

    def loc(self, node: ast.AST) -> Location:
        return Location(self.file, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)

    def lookup(self, name: str) -> tuple[str, Any] | None:
        """What a global name is bound to: ("alias", a mytriton path),
        ("function", (its KernelModule, its name)) for a @jit function,
        ("module", a Python module that is not mytriton's), ("value", a
        constant or Unresolved); None where the module binds no such name."""
        if self.namespace is not None and name in self.namespace:
            from mytriton.frontend.namespace import binding_of

            return binding_of(self, name, self.namespace[name])
        return self.binding(name)

    def binding(self, name: str) -> tuple[str, Any] | None:
        """What the file's text binds ``name`` to (lookup without the namespace)."""
        if name in self.aliases:
            return ("alias", self.aliases[name])
        if name in self.functions:
            return ("function", (self, name))
        if name in self.constants:
            return ("value", self.constants[name])
        return None

    def qualname(self, expr: ast.expr) -> str | None:
        """``tl.load`` -> ``mytriton.language.load`` when ``tl`` is an alias."""
        if isinstance(expr, ast.Name):
            found = self.lookup(expr.id)
            return found[1] if found is not None and found[0] == "alias" else None
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return kernel_path(f"{base}.{expr.attr}") if base else None
        return None

    def is_jit_decorator(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.qualname(target) in JIT_DECORATORS

    # ---- binding names while reading (one binding per name, the last one) ---------
    def bind_alias(self, name: str, path: str) -> None:
        self._unbind(name)
        self.aliases[name] = path

    def bind_value(self, name: str, value: Any) -> None:
        self._unbind(name)
        self.constants[name] = value

    def bind_function(self, fn: ast.FunctionDef) -> None:
        self._unbind(fn.name)
        self.functions[fn.name] = fn

    def rebind(self, name: str, found: tuple[str, Any] | None) -> None:
        """Bind ``name`` as ``binding`` reported it in another reading."""
        if found is None:
            self._unbind(name)
        elif found[0] == "alias":
            self.bind_alias(name, found[1])
        elif found[0] == "function":
            self.bind_function(found[1][0].functions[found[1][1]])
        else:
            self.bind_value(name, found[1])

    def _unbind(self, name: str) -> None:
        for table in (self.aliases, self.constants, self.functions):
            table.pop(name, None)

    def scratch(self) -> "KernelModule":
        """A copy whose bindings can change without changing this module's."""
        return replace(self, aliases=dict(self.aliases), constants=dict(self.constants),
                       functions=dict(self.functions))


def read_module(text: str, file: str, namespace: Mapping[str, Any] | None = None) -> KernelModule:
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
    module = KernelModule(file, tree, {}, {}, {}, digest=source_digest(text), namespace=namespace)
    bundle = _bundle_header(tree, file)
    if bundle is not None:
        _remap_bundle(module, bundle, text)
    for stmt in tree.body:
        _read_statement(module, stmt)
    return module


def _read_statement(module: KernelModule, stmt: ast.stmt) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            name = alias.asname or alias.name.split(".")[0]
            if is_language_path(alias.name):
                module.bind_alias(name, kernel_path(alias.name if alias.asname else name))
            else:
                module.bind_value(name, Unresolved(_imported(name, alias.name)))
    elif isinstance(stmt, ast.ImportFrom):
        source = stmt.module or ""
        for alias in stmt.names:
            if alias.name == "*":
                continue
            name = alias.asname or alias.name
            if stmt.level == 0 and is_language_path(source):
                module.bind_alias(name, kernel_path(f"{source}.{alias.name}"))
            else:
                module.bind_value(name, Unresolved(_imported(name, "." * stmt.level + source)))
    elif isinstance(stmt, ast.FunctionDef):
        if any(module.is_jit_decorator(d) for d in stmt.decorator_list):
            module.bind_function(stmt)
        else:
            module.bind_value(stmt.name, Unresolved(python_function(stmt.name)))
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if stmt.value is None:
            return
        value = constant_value(module, stmt.value)
        # ``rsqrt = libdevice.rsqrt``: another name for a function of the language.
        path = module.qualname(stmt.value) if isinstance(value, Unresolved) else None
        for target in targets:
            if isinstance(target, ast.Name) and target.id != BUNDLE_MARKER:
                if path is not None:
                    module.bind_alias(target.id, path)
                else:
                    module.bind_value(target.id, value)
    elif isinstance(stmt, ast.ClassDef):
        module.bind_value(stmt.name, Unresolved(f"'{stmt.name}' is a class"))
    elif isinstance(stmt, ast.Try):
        _read_try(module, stmt)
    elif isinstance(stmt, ast.If):
        _read_if(module, stmt)


def python_function(name: str) -> str:
    """Why a plain Python function cannot be used in a kernel."""
    return f"'{name}' is a Python function, not a @jit function"


def _imported(name: str, source: str) -> str:
    return (f"'{name}' comes from {source}, which is imported only when the file runs (mytriton reads the file "
            "without running it); launch the kernel from Python, where its module is imported")


# ---- imports under try and if --------------------------------------------------------------
#
# Libraries choose their imports at run time: ``try: from triton.language.extra.libdevice import
# rsqrt`` with ``except ModuleNotFoundError:`` fallbacks, under ``if`` on the Triton version.
# Read without running the file, a ``try`` takes its first alternative whose Triton imports
# mytriton provides (what Python would do with ``triton`` resolved to mytriton); an ``if`` on a
# constant takes its branch; an ``if`` on anything else binds a name only where every branch
# that can run binds it alike (or imports the same function of the language under two paths,
# as Triton's versions move libdevice), and leaves it unresolved otherwise.


def _read_try(module: KernelModule, stmt: ast.Try) -> None:
    alternatives = [[*stmt.body, *stmt.orelse], *(handler.body for handler in stmt.handlers)]
    chosen = next((body for body in alternatives if not _fails(module, body)), None)
    if chosen is None:
        for name in _bound_names(alternatives):
            module.bind_value(name, Unresolved(
                f"'{name}' is imported at line {stmt.lineno} by imports of which mytriton provides none"))
    else:
        for inner in chosen:
            _read_statement(module, inner)
    for inner in stmt.finalbody:
        _read_statement(module, inner)


def _read_if(module: KernelModule, stmt: ast.If) -> None:
    condition = constant_value(module, stmt.test)
    if not isinstance(condition, Unresolved):
        for inner in stmt.body if condition else stmt.orelse:
            _read_statement(module, inner)
        return
    branches = [body for body in (stmt.body, stmt.orelse) if not _fails(module, body)]
    if not branches:
        branches = [stmt.body, stmt.orelse]
    readings = []
    for body in branches:
        reading = module.scratch()
        for inner in body:
            _read_statement(reading, inner)
        readings.append(reading)
    for name in _bound_names([stmt.body, stmt.orelse]):
        found = [reading.binding(name) for reading in readings]
        if all(_alike(found[0], other) for other in found[1:]):
            module.rebind(name, found[0])
        else:
            module.bind_value(name, Unresolved(
                f"'{name}' is bound by the branches of the 'if' at line {stmt.lineno}, whose condition is "
                "computed when the file runs (mytriton reads the file without running it); launch the kernel "
                "from Python, where its module is imported"))


def _alike(a: tuple[str, Any] | None, b: tuple[str, Any] | None) -> bool:
    """Whether two bindings of a name are the same for a kernel: equal, or
    one function of the language imported under two module paths."""
    if a is None or b is None:
        return a is b
    if a[0] != b[0]:
        return False
    if a[0] == "alias":
        return a[1].rsplit(".", 1)[-1] == b[1].rsplit(".", 1)[-1]
    if a[0] == "function":
        return a[1] is b[1]
    return type(a[1]) is type(b[1]) and a[1] == b[1]


def _fails(module: KernelModule, body: list[ast.stmt]) -> bool:
    """Whether running ``body`` would stop at an import of Triton (or
    mytriton) that mytriton does not provide; other imports are the user's
    and assumed to succeed."""
    for stmt in body:
        if isinstance(stmt, ast.Import):
            if any(is_language_path(a.name) and not provides(a.name) for a in stmt.names):
                return True
        elif isinstance(stmt, ast.ImportFrom):
            source = stmt.module or ""
            if stmt.level == 0 and is_language_path(source) and not all(
                    provides(source, None if a.name == "*" else a.name) for a in stmt.names):
                return True
        elif isinstance(stmt, ast.Try):
            alternatives = [[*stmt.body, *stmt.orelse], *(h.body for h in stmt.handlers)]
            if all(_fails(module, alternative) for alternative in alternatives):
                return True
        elif isinstance(stmt, ast.If):
            condition = constant_value(module, stmt.test)
            if isinstance(condition, Unresolved):
                if _fails(module, stmt.body) and _fails(module, stmt.orelse):
                    return True
            elif _fails(module, stmt.body if condition else stmt.orelse):
                return True
    return False


def _bound_names(bodies: list[list[ast.stmt]]) -> list[str]:
    """The names the module-level statements of ``bodies`` may bind, in order."""
    names: dict[str, None] = {}

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    if alias.name != "*":
                        bound = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import)
                                                 else alias.name)
                        names[bound] = None
            elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                names[stmt.name] = None
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(target, ast.Name):
                        names[target.id] = None
            elif isinstance(stmt, ast.Try):
                visit([*stmt.body, *stmt.orelse, *stmt.finalbody])
                for handler in stmt.handlers:
                    visit(handler.body)
            elif isinstance(stmt, ast.If):
                visit(stmt.body)
                visit(stmt.orelse)

    for body in bodies:
        visit(body)
    return list(names)


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
    if isinstance(expr, ast.Name):
        found = module.lookup(expr.id)
        if found is None or found[0] in ("function", "module"):
            raise _NotConstant(f"'{expr.id}' is not a constant")
        if found[0] == "value":
            if isinstance(found[1], Unresolved):
                raise _NotConstant(found[1].reason)
            return found[1]
    qualified = module.qualname(expr)
    if qualified and qualified.startswith("mytriton.language.") and qualified.split(".")[-1] in DTYPES:
        return DTYPES[qualified.split(".")[-1]]
    if isinstance(expr, ast.Call) and module.qualname(expr.func) == "mytriton.language.constexpr":
        if len(expr.args) == 1 and not expr.keywords:
            return _fold(module, expr.args[0])
    raise _NotConstant("its value is computed when the file runs, which mytriton never does")


# ---- kernel bundles -------------------------------------------------------------


MAX_INDENT = 1000  # columns a bundled function's source indents it by


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
                    and isinstance(header.get("indents", {}), dict)
                    and ("digest" not in header or is_digest(header["digest"]))):
                raise CompileError(f"malformed {BUNDLE_MARKER} header", where)
            for name, line in header["lines"].items():
                if not (isinstance(name, str) and type(line) is int and 1 <= line <= MAX_SOURCE_LINES):
                    raise CompileError(f"malformed {BUNDLE_MARKER} header: the line of '{name}' must be "
                                       f"an integer from 1 to {MAX_SOURCE_LINES}", where)
            for name, indent in header.get("indents", {}).items():
                if not (isinstance(name, str) and type(indent) is int and 0 <= indent <= MAX_INDENT):
                    raise CompileError(f"malformed {BUNDLE_MARKER} header: the indent of '{name}' must be "
                                       f"an integer from 0 to {MAX_INDENT}", where)
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
        indent = header.get("indents", {}).get(stmt.name, 0)
        if indent:  # defined indented (under an if or try) in the source
            for node in ast.walk(stmt):
                if hasattr(node, "col_offset"):
                    node.col_offset += indent
                    if getattr(node, "end_col_offset", None) is not None:
                        node.end_col_offset += indent
            chunk = [" " * indent + line if line else line for line in chunk]
        SOURCES.register_lines(module.file, original, chunk, module.digest)


def function_first_line(fn: ast.FunctionDef) -> int:
    return min([fn.lineno] + [d.lineno for d in fn.decorator_list])
