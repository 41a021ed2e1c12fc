"""f16 and bf16 defined in the kernel's own CUDA (backends/cuda/halves.py) in place of
cuda_fp16.h and cuda_bf16.h, which NVRTC reads in 10 and 20 ms of every build: the PTX is
the one the headers give, instruction for instruction."""
from __future__ import annotations

import re

import pytest
from conftest import SAMPLES, compile_text, kernel_source, sample_options

from mytriton.backends.cuda import halves, nvcc, nvrtc

ARITH = kernel_source("""
@mytriton.jit
def arith(x_ptr, y_ptr, out_ptr, f_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = x * y + x - y
    tl.store(out_ptr + offs, z)
    w = z.to(tl.float32) * 2.0
    tl.store(f_ptr + offs, w)
    tl.store(out_ptr + BLOCK + offs, w.to(out_ptr.dtype.element_ty))
""")

ATOMIC = kernel_source("""
@mytriton.jit
def adds(x_ptr, relaxed_ptr, ordered_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.atomic_add(relaxed_ptr + offs % 8, x, sem="relaxed")
    tl.atomic_add(ordered_ptr + offs % 8, x, sem="acq_rel")
""")


def arith_cuda(element: str) -> str:
    return compile_text(ARITH, "cuda", defines={"BLOCK": 256}, signature=f"*{element}, *{element}, *{element}, *fp32")


def atomic_cuda(element: str) -> str:
    return compile_text(ATOMIC, "cuda", defines={"BLOCK": 256}, signature=f"*{element}, *{element}, *{element}")


def matmul_cuda(arch: str) -> str:
    path = SAMPLES / "matmul.py"
    return compile_text(path.read_text(), "cuda", str(path), arch=arch, **sample_options("matmul"))


def with_headers(cuda: str) -> str:
    """The same kernel reading cuda_fp16.h and cuda_bf16.h instead of its own definitions."""
    return cuda.replace(halves.F16, "#include <cuda_fp16.h>").replace(halves.BF16, "#include <cuda_bf16.h>")


def code_of(ptx: str) -> list[str]:
    """The PTX's instructions and declarations: not its debug sections (they name the inlined
    functions), line records, comments or blank lines."""
    code = ptx.split(".section\t.debug")[0]
    return [line for line in code.splitlines() if line.strip() and not re.match(r"\s*(\.loc|\.file|//)", line)]


def test_an_f32_kernel_has_no_half_definitions():
    cuda = compile_text(ARITH, "cuda", defines={"BLOCK": 256}, signature="*fp32, *fp32, *fp32, *fp32")
    assert halves.F16 not in cuda and halves.BF16 not in cuda


@pytest.mark.parametrize("element", ["fp32", "fp16", "bf16"])
def test_a_kernel_includes_no_header(element):
    """Nothing for NVRTC to look for: the library alone builds generated CUDA."""
    assert [line for line in arith_cuda(element).splitlines() if line.lstrip().startswith("#include")] == []


def test_an_f16_kernel_defines_f16_and_includes_no_half_header():
    cuda = arith_cuda("fp16")
    assert halves.F16 in cuda and halves.BF16 not in cuda
    assert "#include <cuda_fp16.h>" not in cuda and "#include <cuda_bf16.h>" not in cuda


def test_a_bf16_kernel_defines_bf16_alone():
    cuda = arith_cuda("bf16")
    assert halves.BF16 in cuda and halves.F16 not in cuda
    assert "#include <cuda_bf16.h>" not in cuda


def test_a_half_is_converted_to_f32_by_name_not_by_a_cast_cpp_would_choose():
    # No conversion operator is defined: (float)(h) would not build.
    cuda = arith_cuda("fp16")
    assert "__half2float(" in cuda.split(halves.F16)[1]


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("kernel", ["arith fp16", "arith bf16", "atomic fp16", "atomic bf16", "matmul"])
def test_the_ptx_is_the_one_the_headers_give(kernel, arch, cache, monkeypatch):
    # nvcc builds both: the headers are the toolkit's, and NVRTC is given no include folder.
    monkeypatch.setenv(nvrtc.ENV, "0")
    name, _, element = kernel.partition(" ")
    cuda = matmul_cuda(arch) if name == "matmul" else {"arith": arith_cuda, "atomic": atomic_cuda}[name](element)
    assert code_of(nvcc.compile_ptx(cuda, arch)) == code_of(nvcc.compile_ptx(with_headers(cuda), arch))


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel", ["arith bf16", "atomic bf16"])
def test_bf16_builds_for_sm_75_where_it_has_no_instructions(kernel, cache):
    # sm_75 has no bf16 conversion or arithmetic: f32 and rounding to nearest even, as the header's
    # fallback does (its own spelling, so the PTX is not compared).
    name, _, element = kernel.partition(" ")
    cuda = {"arith": arith_cuda, "atomic": atomic_cuda}[name](element)
    ptx = nvcc.compile_ptx(cuda, "sm_75")
    assert "cvt.rn.bf16.f32" not in ptx and ".bf16" not in "\n".join(code_of(ptx))


# bf16 before sm_80 on the host: the definitions compiled by the host's C++ compiler, where
# __CUDA_ARCH__ is not defined, take the paths sm_75 takes (f32 and rounding by hand).
HOST_MAIN = r"""
#include <cstdio>
#include <cstring>
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
static unsigned int __float_as_uint(float f) { unsigned int u; std::memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
// the shuffles' 32-bit forms, which the halves' call (not run here)
static unsigned int __shfl_sync(unsigned int, unsigned int v, int, int) { return v; }
static unsigned int __shfl_up_sync(unsigned int, unsigned int v, unsigned int, int) { return v; }
static unsigned int __shfl_down_sync(unsigned int, unsigned int v, unsigned int, int) { return v; }
static unsigned int __shfl_xor_sync(unsigned int, unsigned int v, int, int) { return v; }
static unsigned short atomicCAS(unsigned short* p, unsigned short expected, unsigned short value) {
  const unsigned short old = *p; if (old == expected) *p = value; return old;
}
%s
int main() {
  unsigned int a, b;
  while (std::scanf("%%x %%x", &a, &b) == 2) {
    float fa, fb; std::memcpy(&fa, &a, 4); std::memcpy(&fb, &b, 4);
    __nv_bfloat16 x = __float2bfloat16(fa), y = __float2bfloat16(fb), cell = x;
    atomicAdd(&cell, y);
    std::printf("%%04x %%04x %%04x %%04x %%04x\n", x.__x, __hadd_rn(x, y).__x, __hsub_rn(x, y).__x,
                __hmul_rn(x, y).__x, cell.__x);
  }
}
"""


def test_bf16_without_instructions_rounds_as_bf16_does(tmp_path):
    import shutil
    import subprocess

    import numpy as np
    ml_dtypes = pytest.importorskip("ml_dtypes")
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no host C++ compiler")
    (tmp_path / "bf16.cpp").write_text(HOST_MAIN % halves.BF16)
    subprocess.run([compiler, "-std=c++17", "-O1", "-o", str(tmp_path / "bf16"), str(tmp_path / "bf16.cpp")],
                   check=True, capture_output=True)
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(4000) * 10.0 ** rng.integers(-40, 39, 4000)).astype(np.float32)
    b = (rng.standard_normal(4000) * 10.0 ** rng.integers(-40, 39, 4000)).astype(np.float32)
    # ties (the 17th bit set, nothing below it), the largest values, infinities and NaN
    ties = (rng.integers(0, 1 << 15, 200, dtype=np.uint32) << 16 | 0x8000).view(np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 3.4e38, -3.39e38, 0.0, -0.0, 1e-45], np.float32)
    a = np.concatenate([a, ties, special])
    b = np.concatenate([b, ties[::-1], special[::-1]])
    lines = "\n".join(f"{x:08x} {y:08x}" for x, y in zip(a.view(np.uint32), b.view(np.uint32)))
    done = subprocess.run([str(tmp_path / "bf16")], input=lines, capture_output=True, text=True, check=True)
    got = np.array([[int(v, 16) for v in line.split()] for line in done.stdout.splitlines()], np.uint16)
    bf16 = ml_dtypes.bfloat16
    with np.errstate(all="ignore"):
        x, y = a.astype(bf16), b.astype(bf16)
        xf, yf = x.astype(np.float32), y.astype(np.float32)
        want = [x, (xf + yf).astype(bf16), (xf - yf).astype(bf16), (xf * yf).astype(bf16), (xf + yf).astype(bf16)]
    for column, expected in enumerate(want):
        expected_bits = expected.view(np.uint16)
        nan = np.isnan(expected.astype(np.float32))
        assert np.array_equal(got[~nan, column], expected_bits[~nan]), column
        assert np.all(got[nan, column] == 0x7FFF), column  # the canonical NaN the header returns


@pytest.mark.nvcc
def test_a_whole_nvcc_build_of_the_cuda_passes_and_the_unused_definitions_draw_no_warning(tmp_path):
    # A user building the emitted .cu with nvcc -c: its host pass reads the kernel too (without
    # __CUDA_ARCH__), so what the kernel calls is declared there; and no "declared but never
    # referenced" for the definitions it leaves unused (the headers' are spared as system headers).
    import subprocess

    source = tmp_path / "k.cu"
    source.write_text(compile_text(ATOMIC, "cuda", defines={"BLOCK": 256}, signature="*bf16, *fp16, *bf16"))
    done = subprocess.run([nvcc.find_nvcc(), "-c", "-arch=sm_80", "-o", str(tmp_path / "k.o"), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "never referenced" not in done.stderr + done.stdout
