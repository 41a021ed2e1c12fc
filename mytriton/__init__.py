"""mytriton: a small Triton-like GPU kernel compiler.

``@mytriton.jit`` kernels are read from source (never run), compiled stage by
stage through textual IRs to CUDA C++, and launched with PyCUDA, or run by a
NumPy interpreter where there is no GPU. Importing this package loads
neither NumPy nor PyCUDA.
"""
from mytriton import language
from mytriton.diagnostics import CompileError
from mytriton.runtime.jit import JITFunction, jit


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grids: ``cdiv(n, BLOCK)``."""
    return -(-a // b)


__version__ = "0.1.0"
__all__ = ["jit", "JITFunction", "cdiv", "language", "CompileError", "__version__"]
