"""The kernel language's library functions: ``tl.<name>`` functions that are
@jit helpers written in the kernel language itself (as Triton writes its
random numbers), read from mytriton's own source and traced as a user's
helpers are.

Each library module is read once (``ast`` only, never run) and its
functions' syntax checked like a kernel file's. A call is traced in a view
of the library module that puts every op it makes, and every error it
raises, at the kernel's call (``tl.rand(...)``'s line): the IR names one
source file, the kernel's, and the user's line is the one to point at.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from mytriton.diagnostics import Location
from mytriton.frontend.source import KernelModule, read_module
from mytriton.frontend.syntax import check_function
from mytriton.frontend.tracer import Builtin, Tracer
from mytriton.language import RANDOM_FUNCTIONS, SORTING_FUNCTIONS, STANDARD_FUNCTIONS, STANDARD_HELPERS

# library module (under mytriton/language) -> the functions it gives tl.
LIBRARIES: dict[str, tuple[str, ...]] = {"random": RANDOM_FUNCTIONS, "sorting": SORTING_FUNCTIONS,
                                         "standard": STANDARD_FUNCTIONS}
# library module -> helpers builtins call (tl.max(..., return_indices=True)), not tl names.
HELPERS: dict[str, tuple[str, ...]] = {"standard": STANDARD_HELPERS}
# tl.<name> -> the library module defining it.
FUNCTIONS: dict[str, str] = {name: library for library, names in LIBRARIES.items() for name in names}


@dataclass
class _AtCallSite(KernelModule):
    """A library module whose every location is one call's in the kernel."""

    site: Location | None = None

    def loc(self, node: ast.AST) -> Location:
        assert self.site is not None
        return self.site


@functools.cache
def library_module(library: str) -> KernelModule:
    text = resources.files("mytriton.language").joinpath(f"{library}.py").read_text(encoding="utf-8")
    module = read_module(text, f"<mytriton.language.{library}>")
    for fn in module.functions.values():
        check_function(module, fn, entry=False)
    missing = [name for name in (*LIBRARIES[library], *HELPERS.get(library, ())) if name not in module.functions]
    assert not missing, f"mytriton.language.{library} lacks {missing}"
    return module


def call(tracer: Tracer, node: ast.Call, name: str, args: list, kwargs: dict, library_name: str | None = None) -> Any:
    """``tl.<name>(*args, **kwargs)`` (or a helper of ``library_name``): the
    library function traced into the caller's region, its ops located at ``node``."""
    library = library_module(library_name or FUNCTIONS[name])
    at_site = _AtCallSite(**{f.name: getattr(library, f.name) for f in fields(KernelModule)},
                          site=tracer.loc(node))
    helper = Tracer(at_site, tracer.kernel, tracer.region, {}, tracer.depth, tracer.budget)
    return helper.call_jit(name, node, args, kwargs)


def builtins() -> dict[str, Builtin]:
    """A Builtin for each library function, for frontend/builtins.py's table."""
    def bind(name: str) -> Builtin:
        return Builtin(name, lambda tracer, node, args, kwargs: call(tracer, node, name, args, kwargs))

    return {name: bind(name) for name in FUNCTIONS}
