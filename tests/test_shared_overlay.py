"""Two K loops one after the other, each staging its own tiles: the second
loop's buffers take the first one's bytes (passes/buffer_liveness.py, a
drained barrier between them). Their products must come out as two
unshared loops' would: the interpreter here, the GPU there, both against
NumPy on ragged sizes."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import cdiv
from mytriton import compiler
from mytriton.compiler import Options

BODY = '''
@mytriton.jit
def two_products(x, w, y, v, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(x + rows[:, None] * K + (k + ks)[None, :], mask=(rows[:, None] < M) & ((k + ks)[None, :] < K),
                    other=0.0)
        b = tl.load(w + (k + ks)[:, None] * N + cols[None, :], mask=((k + ks)[:, None] < K) & (cols[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    for k in range(0, K, BK):
        a = tl.load(y + rows[:, None] * K + (k + ks)[None, :], mask=(rows[:, None] < M) & ((k + ks)[None, :] < K),
                    other=0.0)
        b = tl.load(v + (k + ks)[:, None] * N + cols[None, :], mask=((k + ks)[:, None] < K) & (cols[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(out + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
'''
SIGNATURE = "*fp16, *fp16, *fp16, *fp16, *fp32, i32, i32, i32"
TILE = dict(BM=64, BN=64, BK=32)


def test_the_second_loops_buffers_lie_over_the_first_loops():
    from conftest import kernel_source
    options = Options(kernel="two_products", signature=SIGNATURE, defines=TILE, num_stages=3)
    kernel = compiler.layouts(compiler.stage_dots(compiler.source_to_ssa(kernel_source(BODY), "k.py", options),
                                                  options), options)
    offsets = {op.attrs["name"]: op.attrs["offset"] for op in kernel.body.ops if "offset" in op.attrs}
    assert offsets["dot_a1"] == offsets["dot_a0"] and offsets["dot_b1"] == offsets["dot_b0"]


def run_case(module, backend: str, m: int, n: int, k: int, num_stages: int):
    rng = np.random.default_rng(m * n + k)
    x, y = (rng.standard_normal((m, k)).astype(np.float16) for _ in range(2))
    w, v = (rng.standard_normal((k, n)).astype(np.float16) for _ in range(2))
    out = np.full((m, n), np.nan, np.float32)
    grid = (cdiv(m, TILE["BM"]), cdiv(n, TILE["BN"]))
    module.two_products[grid](x, w, y, v, out, m, n, k, **TILE, num_stages=num_stages, backend=backend)
    expected = x.astype(np.float64) @ w.astype(np.float64) + y.astype(np.float64) @ v.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=2e-2, atol=2e-2)


def test_the_interpreter_gives_the_two_products(kernel_module):
    run_case(kernel_module(BODY), "interp", 70, 50, 45, 3)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3])
@pytest.mark.parametrize("size", [(256, 192, 512), (70, 50, 45), (129, 65, 33)], ids=lambda s: "x".join(map(str, s)))
def test_the_gpu_gives_the_two_products(kernel_module, size, num_stages):
    run_case(kernel_module(BODY), "cuda", *size, num_stages)
