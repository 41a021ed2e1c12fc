"""The ``triton`` module as mytriton gives it (install_as_triton): Triton's
top-level names that libraries use, each mytriton's own, and a
``__version__`` that says which Triton API mytriton implements (with
mytriton's version as its local part: ``3.6.0+mytriton.0.1.0``). Any other
name is an AttributeError that names it."""
from __future__ import annotations

import importlib
from typing import Any

import mytriton
from mytriton import Config, JITFunction, cdiv, heuristics, jit, language, next_power_of_2
from mytriton.as_triton import runtime
from mytriton.as_triton.autotuner import autotune
from mytriton.diagnostics import CompileError as CompilationError
from mytriton.runtime.autotuner import KernelInterface

# A package, as Triton's is, so that a submodule mytriton does not give is
# refused by name (as_triton's finder), not as "triton is not a package".
__path__: list[str] = []

# The Triton release whose kernel language and host API mytriton follows.
TRITON_API_LEVEL = "3.6.0"
__version__ = f"{TRITON_API_LEVEL}+mytriton.{mytriton.__version__}"

# __getattr__ loads testing and tools on first use.
__all__ = ["CompilationError", "Config", "JITFunction", "KernelInterface", "autotune", "cdiv", "heuristics",  # noqa: F822
           "jit", "language", "next_power_of_2", "runtime", "set_allocator", "testing", "tools", "__version__"]

_allocator: Any = None


def set_allocator(allocator: Any) -> None:
    """Triton's ``triton.set_allocator(fn)``: the function Triton calls for
    the global memory its device-side tensor descriptors live in
    (``fn(size, alignment, stream)``). mytriton's descriptors need none, so
    it is kept and never called."""
    global _allocator
    if allocator is not None and not callable(allocator):
        raise TypeError(f"triton.set_allocator takes a function or None, got {type(allocator).__name__}")
    _allocator = allocator


def __getattr__(name: str) -> Any:
    if name == "testing":  # its timers load on first use, as mytriton.testing's do
        return importlib.import_module("mytriton.as_triton.testing")
    if name == "tools":
        return importlib.import_module("mytriton.tools")
    raise AttributeError(f"mytriton does not provide triton.{name} (it implements Triton {TRITON_API_LEVEL}'s "
                         f"kernel language and these host names: {', '.join(__all__)})")
