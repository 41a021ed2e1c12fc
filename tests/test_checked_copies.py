"""A copy the threads wait for (a dot staged outside any loop, attention's Q)
whose row stride is a runtime value: copy-widths has the kernel check its
alignment at run time (``chunks="checked"``), so that 16-byte chunks move
where it holds and single elements where not. Both paths against NumPy:
the interpreter here, the GPU there, with strides that take each. (A launch
proves a stride divisible by 8 or 16, so the aligned path of the test runs
where the kernel is not specialised on the stride's alignment.)"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import cdiv, kernel_source
from mytriton import compiler
from mytriton.compiler import Options
from mytriton.ir.ssa import walk

BODY = '''
@mytriton.jit{options}
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
    kernel = compiler.layouts(compiler.stage_dots(compiler.source_to_ssa(kernel_source(BODY.format(options="")), "k.py", options),
                                                  options), options)
    (copy,) = [op for op in walk(kernel.body)
               if op.name == "copy_strided_to_shared" and getattr(op.operands[4], "name", None) == "stride_xm"]
    assert copy.attrs["chunk"] == 8 and copy.attrs["chunks"] == "checked"


def test_a_stride_a_launch_proves_divisible_by_8_needs_no_check():
    options = Options(kernel="one_product", signature="*fp16:16, *fp16, *fp32, i32, i32:8", defines=TILE)
    kernel = compiler.layouts(compiler.stage_dots(compiler.source_to_ssa(
        kernel_source(BODY.format(options="")), "k.py", options), options), options)
    (copy,) = [op for op in walk(kernel.body)
               if op.name.endswith("copy_strided_to_shared") and getattr(op.operands[4], "name", None) == "stride_xm"]
    assert copy.attrs["chunk"] == 8 and copy.attrs["chunks"] == "whole"


def run_case(module, backend: str, m: int, stride: int):
    rng = np.random.default_rng(m + stride)
    x = rng.standard_normal((m, stride)).astype(np.float16)
    w = rng.standard_normal((TILE["K"], TILE["N"])).astype(np.float16)
    out = np.full((m, TILE["N"]), np.nan, np.float32)
    module.one_product[(cdiv(m, TILE["BM"]),)](x, w, out, m, stride, **TILE, backend=backend)
    expected = x[:, :TILE["K"]].astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=2e-2, atol=2e-2)


def test_the_interpreter_gives_the_product(kernel_module):
    run_case(kernel_module(BODY.format(options="")), "interp", 70, 72)


UNPROVEN = "(do_not_specialize_on_alignment=['{}'])"


@pytest.mark.gpu
@pytest.mark.parametrize("stride, options", [(72, UNPROVEN.format("stride_xm")), (67, ""), (72, ""), (128, "")],
                         ids=["checked-and-aligned", "element-by-element", "proven-by-8", "proven"])
@pytest.mark.parametrize("m", [128, 70])
def test_the_gpu_gives_the_product(kernel_module, m, stride, options):
    run_case(kernel_module(BODY.format(options=options)), "cuda", m, stride)


LOOP = '''
@mytriton.jit{options}
def matmul_loop(a, b, c, M, N, K, stride_am, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rows[:, None] * stride_am + (k + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
        y = tl.load(b + (k + ks)[:, None] * N + cols[None, :],
                    mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(c + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
'''


def test_a_pipelined_copy_s_fallback_behind_the_alignment_test_stays_a_rolled_loop():
    """Only a misaligned launch runs it; unrolled by 4, it was an eighth of a
    ragged TF32 matmul's build."""
    options = Options(kernel="matmul_loop", signature="*fp32:16, *fp32:16, *fp32:16, i32, i32:16, i32, i32",
                      defines=dict(BM=128, BN=128, BK=32), arch="sm_90a")
    cuda = compiler.compile_source(kernel_source(LOOP.format(options="")), "k.py", "cuda", options)
    fallbacks = cuda.split("} else {  // element by element")[1:]
    assert fallbacks and all(f.lstrip().startswith("#pragma unroll 1\n") for f in fallbacks)


@pytest.mark.gpu
@pytest.mark.parametrize("stride, options", [(200, UNPROVEN.format("stride_am")), (201, ""), (200, "")],
                         ids=["chunks", "element-by-element", "proven-by-8"])
def test_the_gpu_gives_the_pipelined_product_whichever_path_the_alignment_test_takes(kernel_module, stride, options):
    m, n, k = 150, 130, 190
    rng = np.random.default_rng(stride)
    a = rng.standard_normal((m, stride)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel_module(LOOP.format(options=options)).matmul_loop[(cdiv(m, 128), cdiv(n, 128))](a, b, c, m, n, k, stride, BM=128, BN=128, BK=32)
    np.testing.assert_allclose(c, a[:, :k].astype(np.float64) @ b.astype(np.float64), rtol=2e-2, atol=0.1)  # TF32
