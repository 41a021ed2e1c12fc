"""The CUDA spellings of shared-memory stores and loads at 32-bit shared
addresses (``CudaLanguage.shared_store`` and ``shared_load``: a TMA store's
staging, a layout change's copy through scratch). Every form, the ones no
sample or test kernel reaches today included (a single value; a 4- or 8-byte
run), builds, and on the GPU moves the bytes it names."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mytriton.backends.cuda import halves as half_types
from mytriton.backends.cuda.spelling import CUDA

FLOATS, HALVES = 96, 96  # each region of the scratch, in elements


def kernel_text() -> str:
    """32 threads: each stores a pair and a single value of f32 and of f16,
    then reads 16, 8 and 4 bytes back from places the others wrote."""
    header = {"kernel": "k", "params": [["x", "ptr<f32>"], ["h", "ptr<f16>"], ["out", "ptr<f32>"],
                                        ["hout", "ptr<f16>"]],
              "constexprs": {}, "stores": ["out", "hout"], "num_warps": 1, "threads": 32,
              "shared_bytes": FLOATS * 4 + HALVES * 2}
    halves = f"at + {FLOATS * 4}"
    body = [
        "const int t = threadIdx.x;",
        "const unsigned at = (unsigned)__cvta_generic_to_shared(smem);",
        CUDA.shared_store("float", "at + 8 * t", ["x[2 * t]", "x[2 * t + 1]"]),
        CUDA.shared_store("float", "at + 4 * (64 + t)", ["x[64 + t]"]),
        CUDA.shared_store("__half", f"{halves} + 4 * t", ["h[2 * t]", "h[2 * t + 1]"]),
        CUDA.shared_store("__half", f"{halves} + 2 * (64 + t)", ["h[64 + t]"]),
        "__syncthreads();",
        "__align__(16) float r4[4]; __align__(8) float r2[2]; float r1;",
        CUDA.shared_load("&r4[0]", "at + 16 * (t % 24)", 16),
        CUDA.shared_load("&r2[0]", "at + 8 * ((t + 5) % 48)", 8),
        CUDA.shared_load("&r1", "at + 4 * (3 * t % 96)", 4),
        "for (int i = 0; i < 4; ++i) out[4 * t + i] = r4[i];",
        "for (int i = 0; i < 2; ++i) out[128 + 2 * t + i] = r2[i];",
        "out[192 + t] = r1;",
        "__align__(8) __half q4[4]; __align__(4) __half q2[2];",
        CUDA.shared_load("&q4[0]", f"{halves} + 8 * (t % 24)", 8),
        CUDA.shared_load("&q2[0]", f"{halves} + 4 * ((t + 7) % 48)", 4),
        "for (int i = 0; i < 4; ++i) hout[4 * t + i] = q4[i];",
        "for (int i = 0; i < 2; ++i) hout[128 + 2 * t + i] = q2[i];",
    ]
    return "\n".join([
        f"// mytriton-kernel: {json.dumps(header)}",
        half_types.F16,  # __half as generated code defines it: no header, as NVRTC is given none
        'extern "C" __global__ void __launch_bounds__(32) k(float* x, __half* h, float* out, __half* hout) {',
        "  extern __shared__ __align__(16) unsigned char smem[];",
        *(f"  {line}" for line in body),
        "}",
        "",
    ])


def expected(x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the kernel reads back, from the same places on the host."""
    floats = np.concatenate([x[:64], x[64:96]])  # the pairs, then the single values
    halves = np.concatenate([h[:64], h[64:96]])
    t = np.arange(32)
    out = np.zeros(224, np.float32)
    for i in range(4):
        out[4 * t + i] = floats[4 * (t % 24) + i]
    for i in range(2):
        out[128 + 2 * t + i] = floats[2 * ((t + 5) % 48) + i]
    out[192 + t] = floats[3 * t % 96]
    hout = np.zeros(192, np.float16)
    for i in range(4):
        hout[4 * t + i] = halves[4 * (t % 24) + i]
    for i in range(2):
        hout[128 + 2 * t + i] = halves[2 * ((t + 7) % 48) + i]
    return out, hout


@pytest.mark.nvcc
def test_each_shared_store_and_load_spelling_builds():
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(kernel_text(), "sm_90")
    for instruction in ("st.shared.v2.f32", "st.shared.f32", "st.shared.b32", "st.shared.b16",
                        "ld.shared.v4.b32", "ld.shared.v2.b32", "ld.shared.b32"):
        assert instruction in ptx, instruction


@pytest.mark.gpu
def test_each_shared_store_and_load_moves_the_bytes_it_names():
    from mytriton.runtime.cuda_driver import CudaKernel

    rng = np.random.default_rng(7)
    x = (rng.standard_normal(FLOATS) + 3.0).astype(np.float32)
    h = (rng.standard_normal(HALVES) + 3.0).astype(np.float16)
    out, hout = np.full(224, np.nan, np.float32), np.full(192, np.nan, np.float16)
    CudaKernel(kernel_text()).launch((1,), [x, h, out, hout])
    want, want_halves = expected(x, h)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(hout, want_halves)
