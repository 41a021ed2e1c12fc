"""Real Triton as the judge of the TTIR back end's text: ``triton.compile``
of a ``.ttir`` file for sm_90, which needs no GPU (Triton parses the file,
runs its TTIR, TTGIR and LLVM passes, and builds a cubin with the ptxas it
ships). Tests that use it skip where Triton is not installed (it is not a
test extra: the wheel is large; ``pip install triton`` in the venv to run them).
Checked with Triton 3.9.0."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Triton 3.9 warns once about a changing default; mytriton's CUDA fuses too (nvcc's --fmad=true).
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

NUM_WARPS = 4  # mytriton's default, and Triton's


def triton_compile(text: str, directory: Path | None = None, num_warps: int = NUM_WARPS):
    """``triton.compile`` of ``text`` written to a ``.ttir`` file: the compiled
    kernel (its ``asm["cubin"]`` is the binary); raises where Triton rejects it."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget

    directory = directory or Path(tempfile.mkdtemp(prefix="mytriton-ttir-"))
    path = directory / "kernel.ttir"
    path.write_text(text)
    return triton.compile(str(path), target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
