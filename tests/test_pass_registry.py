"""The pass registry and the passes run together through the pass manager."""
from __future__ import annotations

from textwrap import dedent

import numpy as np

from conftest import kernel_source, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.ir.ssa_text import parse_kernel, print_kernel
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


def test_the_optimisers_run_together_and_verify():
    kernel = parse_kernel(dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @2:5
          %1 = cmp_lt %0, n : vector<4 x bool> @3:5
          %5, %6 = for %2 in range(0, n, 1) iter_args(%3 = 0.0, %4 = 0) : f32, i32 @4:5 {
            %7 = mul 2, 4 : i32 @5:9
            %8 = mul %0, %7 : vector<4 x i32> @6:9
            %9 = add %8, %2 : vector<4 x i32> @7:9
            %10 = cmp_lt %0, n : vector<4 x bool> @8:9
            %11 = addptr x, %9 : vector<4 x ptr<f32>> @9:9
            %12 = load %11, %10, 0.0 : vector<4 x f32> @9:9
            %13 = sum %12, axis=0 : f32 @10:9
            %14 = add %3, %13 : f32 @10:9
            %15 = add %4, 1 : i32 @11:9
            yield %14, %15 @4:5
          }
          %16 = addptr x, %0 : vector<4 x ptr<f32>> @12:5
          store %16, %5, %1 @12:5
        }
        """))
    assert print_kernel(run_passes(kernel, OPTIMISERS)) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @2:5
          %1 = cmp_lt %0, n : vector<4 x bool> @3:5
          %2 = mul %0, 8 : vector<4 x i32> @6:9
          %10 = for %3 in range(0, n, 1) iter_args(%4 = 0.0) : f32 @4:5 {
            %5 = add %2, %3 : vector<4 x i32> @7:9
            %6 = addptr x, %5 : vector<4 x ptr<f32>> @9:9
            %7 = load %6, %1, 0.0 : vector<4 x f32> @9:9
            %8 = sum %7, axis=0 : f32 @10:9
            %9 = add %4, %8 : f32 @10:9
            yield %9 @4:5
          }
          %11 = addptr x, %0 : vector<4 x ptr<f32>> @12:5
          store %11, %10, %1 @12:5
        }
        """)


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
