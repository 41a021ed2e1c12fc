"""The pass registry and the passes run together through the pass manager
(the SSA they make together: tests/lit/opt/)."""
from __future__ import annotations

import numpy as np

from conftest import kernel_source, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.passes import REGISTRY, get_pass
from mytriton.passes.manager import run_passes

OPTIMISERS = ["fold", "cse", "dce", "licm"]


def test_every_registry_key_is_its_pass_name():
    for key in REGISTRY:
        assert get_pass(key).name == key


def test_every_pass_has_a_one_line_summary():
    for key in REGISTRY:
        summary = get_pass(key).summary
        assert summary and "\n" not in summary


MATMUL = """
@mytriton.jit
def matmul_kernel(a, b, c, t, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]
    c_mask = (offs_m < M) & (offs_n < N)
    acc = tl.zeros((BM, BN), tl.float32)
    total = 0.0
    unused = 0
    for k in range(K):
        a_values = tl.load(a + offs_m * K + k, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + k * N + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values
        total += tl.sum(tl.sum(a_values, axis=1), axis=0) * 1
        unused = unused * 2 + 1
    tl.store(c + offs_m * N + offs_n, acc, mask=c_mask)
    tl.store(t + pid_n * tl.num_programs(0) + pid_m, total)
"""


def test_optimised_matmul_computes_the_same_bits():
    rng = np.random.default_rng(7)
    M, N, K = 9, 11, 5
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    grid = (3, 2)
    outputs = []
    for passes in ([], OPTIMISERS + ["cse", "dce"]):
        kernel = run_passes(ssa_of(kernel_source(MATMUL), defines={"BM": 4, "BN": 8}), passes)
        c, t = np.zeros((M, N), np.float32), np.zeros(6, np.float32)
        run_kernel(kernel, grid, [a, b, c, t, M, N, K])
        outputs.append((c, t))
    (c0, t0), (c1, t1) = outputs
    assert np.array_equal(c0, c1) and np.array_equal(t0, t1)
    np.testing.assert_allclose(c1, a @ b, rtol=1e-5, atol=1e-5)
