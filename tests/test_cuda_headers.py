"""The headers a kernel's CUDA includes: only those its element types need
(NVRTC's front end reads cuda_bf16.h's 5,000 lines in about 5 ms of each build)."""
from __future__ import annotations

from conftest import compile_text, kernel_source

COPY = kernel_source("""
@mytriton.jit
def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
""")


def includes(element: str) -> list[str]:
    cuda = compile_text(COPY, "cuda", defines={"BLOCK": 128}, signature=f"*{element}, *{element}")
    return [line for line in cuda.splitlines() if line.startswith("#include")]


def test_an_f32_kernel_includes_no_half_header():
    assert includes("fp32") == ["#include <math_constants.h>"]


def test_an_f16_kernel_includes_cuda_fp16_alone():
    assert includes("fp16") == ["#include <cuda_fp16.h>", "#include <math_constants.h>"]


def test_a_bf16_kernel_includes_cuda_bf16():
    assert "#include <cuda_bf16.h>" in includes("bf16")
