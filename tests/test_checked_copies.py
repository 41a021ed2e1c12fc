"""A copy the threads wait for (a dot staged outside any loop, attention's Q)
whose row stride is a runtime value: copy-widths has the kernel check its
alignment at run time (``chunks="checked"``), so that 16-byte chunks move
where it holds and single elements where not. Both paths against NumPy:
the interpreter here, the GPU there, with strides that take each."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import cdiv, kernel_source
from mytriton import compiler
from mytriton.compiler import Options
from mytriton.ir.ssa import walk

BODY = '''
@mytriton.jit
def one_product(x, w, out, M, stride_xm, BM: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ks = tl.arange(0, K)
    cols = tl.arange(0, N)
    a = tl.load(x + rows[:, None] * stride_xm + ks[None, :], mask=rows[:, None] < M, other=0.0)
    b = tl.load(w + ks[:, None] * N + cols[None, :])
    tl.store(out + rows[:, None] * N + cols[None, :], tl.dot(a, b), mask=rows[:, None] < M)
'''
TILE = dict(BM=64, K=64, N=64)


def test_the_copy_of_a_tile_with_a_runtime_stride_is_checked():
    options = Options(kernel="one_product", signature="*fp16, *fp16, *fp32, i32, i32", defines=TILE)
    kernel = compiler.layouts(compiler.stage_dots(compiler.source_to_ssa(kernel_source(BODY), "k.py", options),
                                                  options), options)
    (copy,) = [op for op in walk(kernel.body)
               if op.name == "copy_strided_to_shared" and getattr(op.operands[4], "name", None) == "stride_xm"]
    assert copy.attrs["chunk"] == 8 and copy.attrs["chunks"] == "checked"


def run_case(module, backend: str, m: int, stride: int):
    rng = np.random.default_rng(m + stride)
    x = rng.standard_normal((m, stride)).astype(np.float16)
    w = rng.standard_normal((TILE["K"], TILE["N"])).astype(np.float16)
    out = np.full((m, TILE["N"]), np.nan, np.float32)
    module.one_product[(cdiv(m, TILE["BM"]),)](x, w, out, m, stride, **TILE, backend=backend)
    expected = x[:, :TILE["K"]].astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=2e-2, atol=2e-2)


def test_the_interpreter_gives_the_product(kernel_module):
    run_case(kernel_module(BODY), "interp", 70, 72)


@pytest.mark.gpu
@pytest.mark.parametrize("stride", [72, 67, 128], ids=["checked-and-aligned", "element-by-element", "proven"])
@pytest.mark.parametrize("m", [128, 70])
def test_the_gpu_gives_the_product(kernel_module, m, stride):
    run_case(kernel_module(BODY), "cuda", m, stride)
