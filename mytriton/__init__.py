"""mytriton: a small Triton-like GPU kernel compiler.

``@mytriton.jit`` kernels are read from source (never run), compiled stage by
stage through textual IRs to CUDA C++, and launched through the CUDA driver, or run by a
NumPy interpreter where there is no GPU. Importing this package loads
neither NumPy nor the CUDA driver. Triton's host names are here too, so that
``import mytriton as triton`` is the only change a Triton file needs:
``triton.jit``, ``triton.autotune``, ``triton.Config``, ``triton.heuristics``,
``triton.cdiv``, ``triton.next_power_of_2``, ``triton.language``, ``triton.testing``.
"""
from typing import Any

from mytriton import language
from mytriton.diagnostics import CompileError
from mytriton.runtime.autotuner import Autotuner, Config, Heuristics, autotune, heuristics
from mytriton.runtime.jit import JITFunction, jit


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grids: ``cdiv(n, BLOCK)``."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two at least ``n`` (1 for n <= 1), for block
    sizes: ``next_power_of_2(n_cols)``."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def install_as_triton() -> None:
    """Make ``import triton`` give mytriton for the rest of this process,
    so that Triton code as it is published runs on mytriton unchanged; call
    it before the library that imports triton is imported (docs/porting.md, "The one
    step"; mytriton/as_triton)."""
    from mytriton.as_triton import install_as_triton as install

    install()


def __getattr__(name: str) -> Any:
    # mytriton.testing imports NumPy when used; loaded on first access only.
    if name == "testing":
        import importlib

        return importlib.import_module("mytriton.testing")
    raise AttributeError(f"module 'mytriton' has no attribute '{name}'")


__version__ = "0.1.0"
__all__ = ["jit", "JITFunction", "install_as_triton", "autotune", "Autotuner", "Config", "heuristics", "Heuristics",
           "cdiv", "next_power_of_2", "language", "testing", "CompileError", "__version__"]
