"""Reading the ``.npy`` files ``mytriton run`` takes (``--arg``, ``--expect``).

A header is a promise about the bytes after it: NumPy believes it and
allocates what it claims before reading, so a 100-byte file whose header says
``shape=(10**12,)`` asks for terabytes. Here the data the header describes
must be exactly what the file holds, checked before anything is allocated;
object arrays (pickles, which would run code) are refused, as ``np.load``
refuses them by default.
"""
from __future__ import annotations

import math
import os
from typing import Any

from mytriton.diagnostics import CompileError, printable


def load(path: str, what: str) -> Any:
    """The array in the ``.npy`` file ``path``; ``what`` names the option
    for errors (``--arg x``)."""
    import numpy as np
    from numpy.lib import format as npy

    def refused(reason: str) -> CompileError:
        return CompileError(f"{what}: cannot load {printable(path)}: {reason}")

    try:
        with open(path, "rb") as handle:
            try:
                version = npy.read_magic(handle)
                read_header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0,
                               (3, 0): npy.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise refused(f"unknown .npy version {version}")
                shape, fortran_order, dtype = read_header(handle)
            except CompileError:
                raise
            except Exception as err:  # NumPy's header parser raises whatever its tokenizer meets
                raise refused(f"not a .npy header: {type(err).__name__}: {err}") from None
            if dtype.hasobject:
                raise refused("it holds Python objects (a pickle), which mytriton does not load")
            count = math.prod(shape)
            size = os.fstat(handle.fileno()).st_size - handle.tell()
            if count * dtype.itemsize != size:
                raise refused(f"its header says {count} elements of {dtype} ({count * dtype.itemsize} bytes), "
                              f"but {size} bytes follow it")
            array = np.fromfile(handle, dtype=dtype, count=count) if count else np.empty(0, dtype)
    except CompileError:
        raise
    except (OSError, ValueError, EOFError, SyntaxError, TypeError, OverflowError, MemoryError) as err:
        raise refused(str(err) or type(err).__name__) from None
    if fortran_order:
        return array.reshape(shape[::-1]).transpose()
    return array.reshape(shape)
