"""The frontend's two stages: ``parse`` (kernel file -> checked kernel bundle)
and ``trace`` (kernel file or bundle -> tree IR)."""
from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping

from mytriton.diagnostics import SOURCES, CompileError, Location, did_you_mean
from mytriton.frontend.source import (
    BUNDLE_MARKER, MODULES, KernelModule, Unresolved, function_first_line, read_module,
)
from mytriton.frontend.syntax import check_function, is_constexpr
from mytriton.frontend.tracer import trace_kernel
from mytriton.ir import opdefs
from mytriton.ir.tree import (
    Arg, CombineStmt, ForRange, IfStmt, LoopCarry, LoopResult, Node, ParamRef, Stmt, TreeKernel, WhileLoop, Yield,
)
from mytriton.language import DTYPES
from mytriton.types import BOOL, F16, F32, F64, I32, I64, SCALARS, DescriptorParam, PointerType, ScalarType, Type

# ---- choosing the kernel ------------------------------------------------------------------


def called_functions(module: KernelModule, fn: ast.FunctionDef) -> list[str]:
    """The @jit functions of ``module`` that ``fn`` calls, in the order of the
    calls, then those it names as values (tl.reduce's combine_fn is called
    too). One walk of the function: a long kernel is walked several times."""
    called: dict[str, None] = {}
    named: dict[str, None] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in module.functions:
            called[node.func.id] = None
        elif isinstance(node, ast.Name) and node.id in module.functions and node.id != fn.name:
            named[node.id] = None
    return [*called, *(name for name in named if name not in called)]


def reachable(module: KernelModule, entry: str) -> list[str]:
    order = [entry]
    for name in order:
        for callee in called_functions(module, module.functions[name]):
            if callee not in order:
                order.append(callee)
    return order


def select_kernel(module: KernelModule, name: str | None) -> str:
    if name is None:
        name = module.kernel_name
    if name is not None:
        if name not in module.functions:
            known = ", ".join(module.functions) or "none"
            raise CompileError(f"no @jit kernel named '{name}' in {module.file} (kernels: {known})",
                               Location(module.file, 1, 1))
        return name
    if not module.functions:
        raise CompileError(f"no @jit kernel in {module.file}; decorate one with @mytriton.jit",
                           Location(module.file, 1, 1))
    callees = {c for fn in module.functions.values() for c in called_functions(module, fn)}
    entries = [n for n in module.functions if n not in callees]
    if len(entries) != 1:
        raise CompileError(f"{module.file} has several kernels ({', '.join(entries or module.functions)}); "
                           "choose one with -k NAME", Location(module.file, 1, 1))
    return entries[0]


# What this process checked a moment ago, which the next stage reads again
# without checking it a second time (a launch's first compile read the file
# twice and the bundle once, each check 1-6 ms): a kernel file read with its
# globals (jit's first look at it, then compile's parse stage), and the
# bundle the parse stage wrote (each function in it as checked in the file),
# each skipped once, by the next read of the same text with the same globals.
# Each entry keeps its globals, so that no other namespace takes their id meanwhile.
_CHECKED_KEPT = 16
_checked: OrderedDict[tuple, Mapping[str, Any] | None] = OrderedDict()
_checked_lock = threading.Lock()


def _checked_key(text: str, namespace: Mapping[str, Any] | None, *more: Any) -> tuple:
    return (text, *more, id(namespace) if namespace is not None else None)


def _remember_checked(key: tuple, namespace: Mapping[str, Any] | None) -> None:
    with _checked_lock:
        _checked[key] = namespace
        _checked.move_to_end(key)
        while len(_checked) > _CHECKED_KEPT:
            _checked.popitem(last=False)


def _was_checked(key: tuple, namespace: Mapping[str, Any] | None) -> bool:
    """Whether ``key`` was checked a moment ago with these globals; it is then forgotten (read once)."""
    with _checked_lock:
        if key not in _checked or _checked[key] is not namespace:
            return False
        del _checked[key]
        return True


def load_kernel(text: str, file: str, name: str | None = None,
                namespace: Mapping[str, Any] | None = None, again_soon: bool = False) -> tuple[KernelModule, str]:
    """Read a kernel file or bundle, choose the kernel and check its syntax
    and that of every @jit function of the file it calls. ``namespace``:
    the module's globals, for a kernel launched from Python (source.py's
    KernelModule.namespace). ``again_soon``: the same file is read again
    next (a launch, to compile it), which need not check it again."""
    module = read_module(text, file, namespace)
    entry = select_kernel(module, name)
    key = _checked_key(text, namespace, file, name)
    if not (_was_checked(key, namespace) or _was_checked(_checked_key(text, namespace, "bundle"), namespace)):
        for fn_name in reachable(module, entry):
            check_function(module, module.functions[fn_name], entry=fn_name == entry)
    if again_soon:
        _remember_checked(key, namespace)
    return module, entry


# ---- parse: write a bundle --------------------------------------------------------------


def parse_stage(text: str, file: str, name: str | None = None,
                namespace: Mapping[str, Any] | None = None) -> str:
    module, entry = load_kernel(text, file, name, namespace)
    functions = reachable(module, entry)
    lines = [
        "# mytriton kernel bundle: one checked kernel and the @jit functions it calls, copied",
        "# verbatim from its source; __mytriton_bundle__ maps them back to their lines there.",
    ]
    first = {fn: function_first_line(module.functions[fn]) for fn in functions}
    header = {"source": module.file, "kernel": entry, "lines": first}
    if module.digest is not None:
        header["digest"] = module.digest  # lets later stages quote the source file, and no other
    used = _used_names(module, functions)
    # Names the kernel uses that are not constants travel with their reason,
    # so tracing the bundle explains them as tracing the file would.
    unresolved = {name: value.reason for name, value in module.constants.items()
                  if name in used and isinstance(value, Unresolved)}
    if unresolved:
        header["unresolved"] = unresolved
    at_header = len(lines)
    lines += _imports(module)
    for const_name, value in module.constants.items():
        if const_name in used and not isinstance(value, Unresolved):
            lines.append(f"{const_name} = {_constant_source(module, value)}")
    for fn_name in functions:
        # Line numbers are the original file's (a bundle's were remapped when read).
        fn = module.functions[fn_name]
        lines.append("")
        chunk = [SOURCES.line(module.file, n) or "" for n in range(first[fn_name], fn.end_lineno + 1)]
        # A function defined under a module-level if or try (fla's helpers) is
        # indented there: at the top of the bundle it would sit inside the
        # function before it. The header keeps the indent for columns.
        indent = chunk[0][:len(chunk[0]) - len(chunk[0].lstrip())] if chunk else ""
        if indent:
            header.setdefault("indents", {})[fn_name] = len(indent)
            chunk = [line[len(indent):] if line.startswith(indent) else line for line in chunk]
        lines += chunk
    lines.insert(at_header, f"{BUNDLE_MARKER} = {header!r}")
    bundle = "\n".join(lines) + "\n"
    _remember_checked(_checked_key(bundle, namespace, "bundle"), namespace)
    return bundle


def _imports(module: KernelModule) -> list[str]:
    out = []
    for local, qualified in sorted(module.aliases.items(), key=lambda kv: (kv[1], kv[0])):
        if qualified in MODULES:
            out.append(f"import {qualified}" if local == qualified else f"import {qualified} as {local}")
        else:
            parent, _, attr = qualified.rpartition(".")
            out.append(f"from {parent} import {attr}" + ("" if attr == local else f" as {local}"))
    return out


def _used_names(module: KernelModule, functions: list[str]) -> set[str]:
    used: set[str] = set()
    for fn_name in functions:
        for node in ast.walk(module.functions[fn_name]):
            if isinstance(node, ast.Name):
                used.add(node.id)
    return used


def _constant_source(module: KernelModule, value: Any) -> str:
    """A constant as the bundle spells it; a dtype through one of the file's
    own imports, which the bundle repeats (``mytriton`` may not be one)."""
    if isinstance(value, tuple):
        items = [_constant_source(module, v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if not isinstance(value, ScalarType):
        return repr(value)
    dtype = next(k for k, v in DTYPES.items() if v == value)
    # What an imported name needs after it to spell the dtype, best first.
    suffixes = {f"mytriton.language.{dtype}": "", "mytriton.language": f".{dtype}",
                "mytriton": f".language.{dtype}"}
    for qualified, suffix in suffixes.items():
        for local, target in sorted(module.aliases.items()):
            if target == qualified:
                return local + suffix
    return f"mytriton.language.{dtype}"


# ---- trace ---------------------------------------------------------------------------------

# Triton's AOT names (fp32, i8, u32...), mytriton's IR names and the dtype names.
_SIGNATURE_TYPES: dict[str, ScalarType] = {
    **{t.name: t for t in SCALARS.values()}, **DTYPES,
    "fp16": F16, "fp32": F32, "fp64": F64, "i1": BOOL,
}


_DESCRIPTOR = re.compile(r"tensordesc<\s*(\w+)\s*\[([\d\s,]*)\]\s*((?:,\s*\w+\s*)*)>")


def parse_descriptor_type(text: str) -> DescriptorParam | None:
    """``tensordesc<fp16[64, 64]>`` (``, i64``, ``, nan``): a host tensor descriptor's parameter type."""
    match = _DESCRIPTOR.fullmatch(text.strip())
    if match is None:
        return None
    element = _SIGNATURE_TYPES.get(match.group(1))
    block = tuple(int(v) for v in match.group(2).split(",") if v.strip())
    options = [o.strip() for o in match.group(3).split(",") if o.strip()]
    if element is None or not block or any(o not in ("i32", "i64", "nan", "zero") for o in options):
        return None
    return DescriptorParam(element, block, I64 if "i64" in options else I32, "nan" if "nan" in options else "zero")


def split_signature(signature: str) -> list[str]:
    """A signature's entries: split at the commas outside ``<...>`` and ``[...]``."""
    entries, depth, start = [], 0, 0
    for at, char in enumerate(signature):
        if char in "<[":
            depth += 1
        elif char in ">]":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            entries.append(signature[start:at])
            start = at + 1
    entries.append(signature[start:])
    return [e.strip() for e in entries if e.strip()]


def parse_signature_type(text: str) -> Type | DescriptorParam | None:
    descriptor = parse_descriptor_type(text)
    if descriptor is not None:
        return descriptor
    text = text.strip().split(":")[0].strip()
    if text.startswith("*"):
        pointee = _SIGNATURE_TYPES.get(text[1:].strip())
        return PointerType(pointee) if pointee is not None else None
    return _SIGNATURE_TYPES.get(text)


def parse_define(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from ``-D``: a Python literal (a number, a boolean, a
    quoted string as in Triton's ``ACTIVATION=""``, a tuple) or a dtype name."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise CompileError(f"-D expects NAME=VALUE, got '{text}'")
    value = value.strip()
    dtype = DTYPES.get(value.removeprefix("tl.").removeprefix("mytriton.language."))
    if dtype is not None:
        return name, dtype
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise CompileError(f"-D {name}: '{value}' is not a number, boolean, quoted string or dtype") from None
    if not isinstance(parsed, (bool, int, float, str, tuple)):
        raise CompileError(f"-D {name}: '{value}' is not a number, boolean, quoted string or dtype")
    return name, parsed


def kernel_params(module: KernelModule, entry: str) -> tuple[list[str], list[str], dict[str, ast.expr]]:
    """(runtime parameters, constexpr parameters, defaults) in order."""
    fn = module.functions[entry]
    args = fn.args.args
    defaults = dict(zip([a.arg for a in args[len(args) - len(fn.args.defaults):]], fn.args.defaults))
    runtime, constexpr = [], []
    for arg in args:
        if is_constexpr(module, arg):
            constexpr.append(arg.arg)
        else:
            runtime.append(arg.arg)
    return runtime, constexpr, defaults


def resolve_constexprs(module: KernelModule, entry: str, defines: dict[str, Any]) -> dict[str, Any]:
    runtime, constexpr, defaults = kernel_params(module, entry)
    fn = module.functions[entry]
    for name in defines:
        if name in runtime:
            raise CompileError(f"-D {name}: '{name}' is a runtime parameter, not a tl.constexpr",
                               module.loc(fn))
        if name not in constexpr:
            raise CompileError(f"-D {name}: kernel '{entry}' has no constexpr parameter '{name}'"
                               f"{did_you_mean(name, constexpr)}",
                               module.loc(fn))
    values: dict[str, Any] = {}
    for name in constexpr:
        if name in defines:
            values[name] = defines[name]
        elif name in defaults:
            from mytriton.frontend.source import constant_value

            value = constant_value(module, defaults[name])
            if isinstance(value, Unresolved):
                raise CompileError(f"the default of '{name}' is not a constant: {value.reason}",
                                   module.loc(defaults[name]))
            values[name] = value
        else:
            arg = next(a for a in fn.args.args if a.arg == name)
            raise CompileError(f"constexpr '{name}' has no value; give one with -D {name}=VALUE",
                               module.loc(arg))
    return values


@dataclass
class Signature:
    """What a Triton AOT signature says: each runtime parameter's type, the
    facts its ``:16`` hints give (``divisibility``), and the values it binds
    (a number in a constexpr's place, or ``i32:1``: a constant, as Triton's
    compile.py makes it)."""

    types: dict[str, Type | DescriptorParam]
    attrs: dict[str, dict[str, int]]
    values: dict[str, Any]


# Triton's AOT tool accepts these hints (tools/compile.py): 16 is divisibility,
# 1 makes the argument the constant 1. 8 is divisibility too: a launch
# specialises integers on it (runtime/arguments.py, as Triton 2 did).
SIGNATURE_HINTS = (1, 8, 16)


_NO_VALUE = object()


def _signature_value(text: str) -> Any:
    """The value a signature entry binds: a number (Triton's AOT
    ``constexpr(s)``) or ``None`` (an argument passed as None, which Triton
    compiles in as a constant); _NO_VALUE for a type."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE
    return value if value is None or type(value) in (int, float, bool) else _NO_VALUE


def resolve_signature(module: KernelModule, entry: str, signature: str | None) -> Signature | None:
    """Runtime parameter types, hints and bound values from a Triton AOT
    signature (``"*fp32:16, *fp32, i32:16, 1024"``); None: infer the
    defaults after tracing (pointers to f32, i32 scalars). The signature
    lists every parameter, or only the runtime ones."""
    if signature is None:
        return None
    runtime, constexpr, _ = kernel_params(module, entry)
    entries = split_signature(signature)
    fn = module.functions[entry]
    all_params = [a.arg for a in fn.args.args]
    named = list(all_params if len(entries) == len(all_params) else runtime)
    if len(entries) != len(named):
        raise CompileError(f"the signature gives {len(entries)} entries but '{entry}' has "
                           f"{len(runtime)} runtime parameter(s) ({', '.join(runtime)}) and "
                           f"{len(all_params)} in all", module.loc(fn))
    out = Signature({}, {}, {})
    for name, text in zip(named, entries):
        arg = next(a for a in fn.args.args if a.arg == name)
        value = _signature_value(text)
        if value is not _NO_VALUE:
            out.values[name] = value
            continue
        if name in constexpr:
            raise CompileError(f"'{name}' is a tl.constexpr: the signature gives its value (a number), "
                               f"not the type '{text}'", module.loc(arg))
        descriptor = parse_descriptor_type(text)
        if descriptor is not None:
            out.types[name] = descriptor
            continue
        base, _, hint = text.partition(":")
        t = parse_signature_type(base)
        if t is None:
            raise CompileError(f"unknown type '{text}' for '{name}' in the signature "
                               "(use *fp32, *fp16, *bf16, *fp64, *i8, *u8, *i32, *u32, *i64, i32, u32, i64, fp32, ..., "
                               "tensordesc<fp16[64, 64]>)",
                               module.loc(arg))
        if hint:
            number = _signature_value(hint.strip())
            if type(number) is not int or number not in SIGNATURE_HINTS:
                raise CompileError(f"'{text}' for '{name}': a hint is :16 (divisible by 16) or :1 (equal to 1), "
                                   f"as in Triton's AOT signatures, or mytriton's :8 (an integer divisible by 8)", module.loc(arg))
            integer = isinstance(t, ScalarType) and t.is_int
            if number == 1:
                if not integer:
                    raise CompileError(f"'{text}' for '{name}': only an integer can be the constant 1",
                                       module.loc(arg))
                out.values[name] = 1
                continue
            if not (integer or isinstance(t, PointerType)):
                raise CompileError(f"'{text}' for '{name}': divisibility is a fact about a pointer or an "
                                   f"integer, not {t}", module.loc(arg))
            if number == 8 and not integer:
                raise CompileError(f"'{text}' for '{name}': :8 is an integer's hint (divisible by 8); a pointer's "
                                   "is :16 (aligned to 16 bytes)", module.loc(arg))
            out.attrs[name] = {"divisibility": number}
        out.types[name] = t
    return out


def trace_stage(text: str, file: str, defines: dict[str, Any] | None = None,
                signature: str | None = None, name: str | None = None,
                f32_default: str | None = None, namespace: Mapping[str, Any] | None = None) -> TreeKernel:
    module, entry = load_kernel(text, file, name, namespace)
    sig = resolve_signature(module, entry, signature)
    defines = dict(defines or {})
    runtime, constexpr, _ = kernel_params(module, entry)
    for pname, value in (sig.values.items() if sig else ()):
        if pname in constexpr:
            if pname in defines and defines[pname] != value:
                raise CompileError(f"'{pname}' is {value!r} in the signature and {defines[pname]!r} in -D",
                                   module.loc(module.functions[entry]))
            defines[pname] = value
    constexprs = resolve_constexprs(module, entry, defines)
    types = sig.types if sig else None
    if sig:
        # Runtime parameters the signature binds (a number, or i32:1) are
        # traced as constants and leave the kernel's parameters, as in Triton.
        constexprs.update({p: v for p, v in sig.values.items() if p in runtime})
        runtime = [p for p in runtime if p not in sig.values]
    placeholder = {p: I32 for p in runtime}
    kernel, asked_types = trace_kernel(module, entry, constexprs, types or placeholder, probing=types is None,
                                       f32_default=f32_default)
    kernel.digest = module.digest
    if sig:
        kernel.param_attrs = {p: dict(a) for p, a in sig.attrs.items()}
        for p, t in sig.types.items():
            if isinstance(t, DescriptorParam):
                kernel.param_attrs.update(t.facts(p))
    if types is None:
        pointers = pointer_params(kernel)
        inferred = {p: PointerType(F32) if p in pointers else I32 for p in runtime}
        if asked_types:  # x.dtype and the like read the placeholders: trace again with the real types
            kernel, _ = trace_kernel(module, entry, constexprs, inferred, f32_default=f32_default)
            kernel.digest = module.digest
        else:
            kernel.params = [(p, inferred[p]) for p, _ in kernel.params]
    return kernel


def pointer_params(kernel: TreeKernel) -> set[str]:
    """Parameters used as the base of an address through which an op reads
    or writes global memory (a load's or a store's)."""
    loops: dict[int, ForRange | WhileLoop] = {}
    found: set[str] = set()

    def index_loops(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ForRange, WhileLoop)):
                for arg in stmt.carried_args:
                    loops[id(arg)] = stmt
                index_loops(stmt.body)
            if isinstance(stmt, WhileLoop):
                index_loops(stmt.before)
            if isinstance(stmt, IfStmt):
                index_loops(stmt.then_body)
                index_loops(stmt.else_body)

    def bases(expr: Arg, seen: set[int]) -> set[str]:
        if id(expr) in seen:
            return set()
        seen.add(id(expr))
        if isinstance(expr, ParamRef):
            return {expr.name}
        if isinstance(expr, LoopCarry):
            return bases(loops[id(expr)].carried_inputs[expr.index], seen)
        if isinstance(expr, LoopResult) and isinstance(expr.loop, CombineStmt):
            return set()  # reduced or scanned numbers (a combine op takes no pointers)
        if isinstance(expr, LoopResult) and isinstance(expr.loop, IfStmt):
            branches = (expr.loop.then_body, expr.loop.else_body)
            return set().union(*(bases(b[-1].values[expr.index], seen) for b in branches
                                 if b and isinstance(b[-1], Yield)))
        if isinstance(expr, LoopResult):
            return bases(expr.loop.carried_inputs[expr.index], seen)
        if not isinstance(expr, Node):
            return set()
        if expr.op in ("hint", "trans", "permute", "reshape", "split", "broadcast_to"):
            return bases(expr.args[0], seen)  # the same pointers (a fact about them; moved)
        if expr.op == "join":
            return bases(expr.args[0], seen) | bases(expr.args[1], seen)
        if expr.op in ("add", "sub", "expand_dims"):
            left = bases(expr.args[0], seen)
            return left or (bases(expr.args[1], seen) if expr.op == "add" else set())
        if expr.op == "where":
            return bases(expr.args[1], seen) | bases(expr.args[2], seen)
        return set()

    def visit(stmts: list[Stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ForRange):
                visit(stmt.body)
            elif isinstance(stmt, WhileLoop):
                visit(stmt.before)
                visit(stmt.body)
            elif isinstance(stmt, IfStmt):
                visit(stmt.then_body)
                visit(stmt.else_body)
            elif not isinstance(stmt, (Yield, CombineStmt)):  # a combine region touches no memory
                address = opdefs.global_address(stmt.node.op)
                if address is not None:
                    found.update(bases(stmt.node.args[address], set()))

    index_loops(kernel.body)
    visit(kernel.body)
    return found
