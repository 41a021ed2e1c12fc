"""A loop that carries a tile of addresses which the layouts pass moves
between layouts (fla's fused_recurrent kernels: a pointer block advanced
each step beside a 2-D accumulator reduced into it). Its scratch exchange
holds 8-byte addresses: no bank padding is asked of a pointer's size, and
the C reads them through ``T* const*``."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source, ssa_of
from mytriton.backends.interp import run_kernel

RECURRENT = kernel_source("""
    @mytriton.jit
    def k(K, O, T, BK: tl.constexpr, BV: tl.constexpr):
        o_k = tl.arange(0, BK)
        o_v = tl.arange(0, BV)
        b_h = tl.zeros([BK, BV], dtype=tl.float32)
        p_o = O + o_v
        p_k = K + o_k
        for _ in range(0, T):
            b_h += tl.load(p_k)[:, None] * tl.load(p_o)[None, :]
            tl.store(p_o, tl.sum(b_h, axis=0))
            p_o += BV
            p_k += BK
""")
TILES = {"BK": 16, "BV": 16}
SIGNATURE = "*fp32,*fp32,i32"


def reference(k: np.ndarray, o: np.ndarray) -> np.ndarray:
    h = np.zeros((k.shape[1], o.shape[1]), np.float64)
    out = o.astype(np.float64).copy()
    for t in range(k.shape[0]):
        h += k[t][:, None] * out[t][None, :]
        out[t] = h.sum(axis=0)
    return out


def test_the_recurrence_computes_what_numpy_does():
    kernel = ssa_of(RECURRENT, optimized=True, defines=TILES, signature=SIGNATURE)
    rng = np.random.default_rng(7)
    k, o = (rng.standard_normal((3, 16)).astype(np.float32) for _ in range(2))
    expected = reference(k, o)
    run_kernel(kernel, (1,), [k, o, 3])
    np.testing.assert_allclose(o, expected, rtol=1e-5, atol=1e-5)


def test_the_address_exchange_reads_through_a_const_pointer_to_pointers():
    cuda = compile_text(RECURRENT, "cuda", defines=TILES, signature=SIGNATURE, arch="sm_90a")
    assert "float* const* const" in cuda and "const float**" not in cuda


@pytest.mark.nvcc
def test_nvcc_builds_the_address_exchange():
    ptx = compile_text(RECURRENT, "ptx", defines=TILES, signature=SIGNATURE, arch="sm_90a")
    assert ".entry" in ptx
