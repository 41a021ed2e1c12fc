"""tl.topk(x, k, dim=None, descending=True) and tl.bitonic_merge(x, dim=None,
descending=False), as Triton 3.9 defines them: library functions
(mytriton/language/sorting.py) over tl.sort's compare-exchange steps and a
max (or min) of neighbouring blocks, checked against NumPy in the
interpreter and built by nvcc."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source
from mytriton.diagnostics import CompileError

TOPK = """
@mytriton.jit
def k(x_ptr, out_ptr, R: tl.constexpr, N: tl.constexpr, K: tl.constexpr, DESCENDING: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
    top = tl.topk(x, K, descending=DESCENDING)
    tl.store(out_ptr + rows[:, None] * top.shape[1] + tl.arange(0, top.shape[1])[None, :], top)
"""

MERGE = """
@mytriton.jit
def k(x_ptr, out_ptr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=DESCENDING))
"""


def run_topk(kernel_module, x: np.ndarray, k: int, descending: bool, rows: int = 4) -> np.ndarray:
    r, n = x.shape
    out = np.full((r, k), -1, x.dtype)
    kernel_module(TOPK).k[(r // rows,)](x, out, R=rows, N=n, K=k, DESCENDING=descending, backend="interp")
    return out


@pytest.mark.parametrize("n, k", [(64, 8), (64, 64), (32, 1), (128, 16), (16, 2)])
@pytest.mark.parametrize("descending", [True, False])
def test_topk_gives_each_rows_k_extremes_in_order(kernel_module, n, k, descending):
    x = np.random.default_rng(n + k).standard_normal((8, n)).astype(np.float32)
    expected = np.sort(x, axis=1)
    expected = expected[:, ::-1][:, :k] if descending else expected[:, :k]
    np.testing.assert_array_equal(run_topk(kernel_module, x, k, descending), expected)


def test_topk_of_integers_with_repeats_keeps_each_copy(kernel_module):
    x = np.random.default_rng(2).integers(-5, 5, (4, 32)).astype(np.int32)
    np.testing.assert_array_equal(run_topk(kernel_module, x, 8, True), np.sort(x, axis=1)[:, ::-1][:, :8])


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge_orders_a_bitonic_row(kernel_module, descending):
    rng = np.random.default_rng(4)
    up, down = np.sort(rng.standard_normal(32)), np.sort(rng.standard_normal(32))[::-1]
    x = np.concatenate([up, down]).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    kernel_module(MERGE).k[(1,)](x, out, N=64, DESCENDING=descending, backend="interp")
    np.testing.assert_array_equal(out, np.sort(x)[::-1] if descending else np.sort(x))


@pytest.mark.parametrize("k, message", [(3, "k must be a positive power of two"),
                                        (128, "k must not exceed the size of the last dimension")])
def test_a_k_triton_refuses_is_a_located_error(k, message):
    with pytest.raises(CompileError, match=message) as info:
        compile_text(kernel_source(TOPK), "ssa", defines={"R": 4, "N": 64, "K": k, "DESCENDING": True})
    assert info.value.loc.line == 8


@pytest.mark.nvcc
def test_nvcc_builds_topk():
    compile_text(kernel_source(TOPK), "ptx", defines={"R": 4, "N": 64, "K": 8, "DESCENDING": True}, arch="sm_90a")


@pytest.mark.gpu
def test_gpu_topk_as_the_interpreter(kernel_module):
    x = np.random.default_rng(9).standard_normal((64, 128)).astype(np.float32)
    out = np.full((64, 16), np.nan, np.float32)
    kernel_module(TOPK).k[(16,)](x, out, R=4, N=128, K=16, DESCENDING=True, backend="cuda")
    np.testing.assert_array_equal(out, np.sort(x, axis=1)[:, ::-1][:, :16])
