"""A kernel's global names as Python bound them, and kernel source from
wherever Python keeps it.

A kernel launched from Python resolves its global names in its module's
namespace (``fn.__globals__``), as Python does: imports made under
``try``/``if``, constants and ``@jit`` helpers imported from other
modules, module aliases. mytriton still runs no kernel code: it reads the
values Python has already bound there and turns each into what the
frontend knows (a path in the kernel language, a constant, a ``@jit``
function with the module whose source defines it). Source text comes from
``linecache``, where Python keeps the files it imported and IPython the
cells it ran (whose file names name no file).
"""
from __future__ import annotations

import inspect
import linecache
import types
import weakref
from typing import Any, Callable

from mytriton.as_triton.modules import MODULES, is_language_path, kernel_path
from mytriton.diagnostics import CompileError
from mytriton.frontend.source import KernelModule, Unresolved, function_first_line, python_function, read_module

# The shim modules' own names -> the path the kernel language knows them by
# (the ``triton`` module object is mytriton.as_triton.api: ``triton.jit``).
_PROVIDED = {provider: kernel_path(name) for name, provider in MODULES.items()}


def function_source(fn: Callable[..., Any]) -> tuple[str, str]:
    """(the file that defines ``fn``, the text of that whole file or
    notebook cell), from linecache; a located error where Python keeps none
    (a function made by ``exec`` of a string)."""
    code = getattr(fn, "__code__", None)
    file = inspect.getsourcefile(fn) or (code.co_filename if code is not None else "<unknown>")
    linecache.checkcache(file)
    lines = linecache.getlines(file, getattr(fn, "__globals__", None))
    if not lines:
        raise CompileError(f"the source of @jit function '{fn.__name__}' is not available: Python keeps no "
                           f"text for '{file}' (a function made by exec() of a string has none); define the "
                           "kernel in a file or a notebook cell")
    return file, "".join(lines)


def binding_of(module: KernelModule, name: str, value: Any) -> tuple[str, Any]:
    """What the frontend makes of ``value``, bound to the global ``name``
    of ``module`` (KernelModule.lookup's kinds)."""
    from mytriton.runtime.jit import JITFunction

    if isinstance(value, types.ModuleType):
        path = _language_path(getattr(value, "__name__", ""))
        return ("alias", path) if path else ("module", value)
    if isinstance(value, JITFunction):
        return _jit_binding(module, name, value)
    constant = _constant(value)
    if constant is not _NOT_CONSTANT:
        return ("value", constant)
    home, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(home, str) and isinstance(qualname, str) and "." not in qualname:
        path = _language_path(home)
        if path:  # tl.load, libdevice.rsqrt, tl.constexpr itself
            return ("alias", f"{path}.{qualname}")
    return ("value", Unresolved(_not_usable(name, value)))


def _language_path(module_name: str) -> str | None:
    if module_name in _PROVIDED:
        return _PROVIDED[module_name]
    return kernel_path(module_name) if is_language_path(module_name) else None


_NOT_CONSTANT = object()


def _constant(value: Any) -> Any:
    """``value`` as a kernel constant (a number, string, None, dtype, tuple
    of them; a ``tl.constexpr`` as its value), else _NOT_CONSTANT."""
    from mytriton.language import constexpr
    from mytriton.types import ScalarType

    if isinstance(value, constexpr):
        return _constant(value.value)
    if value is None or isinstance(value, (bool, int, float, str, ScalarType)):
        return value
    if isinstance(value, tuple):
        items = [_constant(item) for item in value]
        return _NOT_CONSTANT if any(item is _NOT_CONSTANT for item in items) else tuple(items)
    return _NOT_CONSTANT


def _not_usable(name: str, value: Any) -> str:
    if inspect.isclass(value):
        return f"'{name}' is a class"
    if callable(value) and hasattr(value, "fn"):
        return f"'{name}' is a kernel wrapped by autotune or heuristics; a kernel calls @jit functions only"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return python_function(name)
    return f"'{name}' is a {type(value).__name__} object, not a constant a kernel can use"


# JITFunction -> the KernelModule of the file or cell that defines it.
_MODULES: "weakref.WeakKeyDictionary[Any, KernelModule]" = weakref.WeakKeyDictionary()


def _jit_binding(module: KernelModule, name: str, jit: Any) -> tuple[str, Any]:
    fn = jit.fn
    home = getattr(fn, "__module__", "") or ""
    if is_language_path(home):  # a function of the language written in it (tl.random's)
        return ("alias", f"{kernel_path(home)}.{fn.__name__}")
    local = module.functions.get(fn.__name__)
    code = getattr(fn, "__code__", None)
    if (local is not None and code is not None and module.file == jit.file
            and function_first_line(local) == code.co_firstlineno):
        return ("function", (module, fn.__name__))
    defining = _MODULES.get(jit)
    if defining is None:
        file, text = function_source(fn)
        defining = read_module(text, file, fn.__globals__)
        found = defining.functions.get(fn.__name__)
        if found is None or code is None or function_first_line(found) != code.co_firstlineno:
            nested = _module_level_definition(defining.tree.body, fn.__name__, getattr(code, "co_firstlineno", 0))
            if nested is not None:
                # One of several definitions under a module-level if or try (fla's
                # ``if FAST_OPS: @jit def exp ... else: @jit def exp ...``): the
                # one Python ran, found by its line, in a reading of its own.
                defining = defining.scratch()
                defining.bind_function(nested)
        _MODULES[jit] = defining
    if fn.__name__ not in defining.functions:
        return ("value", Unresolved(f"'{name}' is a @jit function that is not defined at the top level of "
                                    f"{defining.file}, nor under an 'if' or 'try' there; kernels call "
                                    "module-level @jit functions"))
    return ("function", (defining, fn.__name__))


def _module_level_definition(body: list, name: str, line: int) -> Any:
    """The definition of ``name`` at ``line`` among ``body``'s statements or
    those of the ``if``, ``try`` and ``with`` blocks in it (not in functions or classes)."""
    import ast

    for stmt in body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name and function_first_line(stmt) == line:
            return stmt
        blocks: list[list] = []
        if isinstance(stmt, ast.If):
            blocks = [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.Try):
            blocks = [stmt.body, stmt.orelse, stmt.finalbody, *(handler.body for handler in stmt.handlers)]
        elif isinstance(stmt, ast.With):
            blocks = [stmt.body]
        for block in blocks:
            found = _module_level_definition(block, name, line)
            if found is not None:
                return found
    return None
