"""The NumPy interpreter running runtime ``for`` loops: vectorised over
programs whose trip counts differ, with inactive programs gated out of every
load and store."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, cdiv, kernel_source, randf, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError


# The runtime-K matmul of the loops milestone, with a second carried value.
MATMUL = """
@mytriton.jit
def matmul_kernel(a, b, c, t, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]
    c_offsets = offs_m * N + offs_n
    c_mask = (offs_m < M) & (offs_n < N)
    acc = tl.zeros((BM, BN), tl.float32)
    total = 0.0
    for k in range(K):
        a_values = tl.load(a + offs_m * K + k, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + k * N + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values
        total += tl.sum(tl.sum(a_values, axis=1), axis=0)
    tl.store(c + c_offsets, acc, mask=c_mask)
    tl.store(t + pid_n * tl.num_programs(0) + pid_m, total)
"""


def run_matmul(rng, M: int, N: int, K: int):
    a, b = randf(rng, M, K), randf(rng, K, N)
    c = np.full((M, N), 5.0, np.float32)
    grid = (cdiv(M, 4), cdiv(N, 8))
    t = np.zeros(grid[0] * grid[1], np.float32)
    run_kernel(build(MATMUL, BM=4, BN=8), grid, [a, b, c, t, M, N, K])
    return a, b, c, t.reshape(grid[1], grid[0])


def test_runtime_k_matmul(rng):
    a, b, c, _ = run_matmul(rng, 13, 19, 7)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_runtime_k_matmul_second_carried_value(rng):
    a, _, _, totals = run_matmul(rng, 13, 19, 7)
    for pid_m in range(totals.shape[1]):
        expected = a[pid_m * 4:pid_m * 4 + 4].sum()
        np.testing.assert_allclose(totals[:, pid_m], expected, rtol=1e-5, atol=1e-5)


def test_zero_trip_matmul_keeps_the_initial_accumulator(rng):
    _, _, c, totals = run_matmul(rng, 5, 9, 0)
    assert (c == 0).all() and (totals == 0).all()


def test_trip_count_differs_per_program(rng):
    G, BLOCK = 6, 16
    x = randf(rng, G, BLOCK)
    out = np.zeros((G, BLOCK), np.float32)
    kernel = build("""
        @mytriton.jit
        def prefix_rows(x_ptr, out_ptr, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            acc = tl.load(x_ptr + cols) * 0.0
            for i in range(pid + 1):
                acc += tl.load(x_ptr + i * BLOCK + cols)
            tl.store(out_ptr + pid * BLOCK + cols, acc)
    """, BLOCK=BLOCK)
    run_kernel(kernel, (G,), [x, out])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-6)


def test_finished_programs_do_not_load(rng):
    # Program p sums x[p:]; once a program is past the end, its index points
    # outside x, which must not be bounds-checked while others still run.
    n = 9
    x = randf(rng, n)
    out = np.zeros(n, np.float32)
    kernel = build("""
        @mytriton.jit
        def suffix_sums(x_ptr, out_ptr, n):
            pid = tl.program_id(0)
            acc = 0.0
            for i in range(pid, n):
                acc += tl.load(x_ptr + i)
            tl.store(out_ptr + pid, acc)
    """)
    run_kernel(kernel, (n,), [x, out, n])
    np.testing.assert_allclose(out, np.cumsum(x[::-1])[::-1], rtol=1e-5, atol=1e-6)


def test_finished_programs_do_not_store(rng):
    G, T = 5, 8
    x = randf(rng, G)
    out = np.full((G, T), -1.0, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, T):
            pid = tl.program_id(0)
            x = tl.load(x_ptr + pid)
            for i in range(2 * pid):
                tl.store(out_ptr + pid * T + i, x + i)
    """)
    run_kernel(kernel, (G,), [x, out, T])
    expected = np.full((G, T), -1.0, np.float32)
    for p in range(G):
        expected[p, :2 * p] = x[p] + np.arange(2 * p)
    np.testing.assert_array_equal(out, expected)


def test_zero_trip_loop_neither_loads_nor_changes_carried_values(rng):
    x = randf(rng, 4)
    out = np.zeros(4, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, n):
            offsets = tl.arange(0, 4)
            acc = tl.load(x_ptr + offsets)
            for i in range(n):
                acc += tl.load(x_ptr + offsets + 1000000)  # would fault if it ran
            tl.store(out_ptr + offsets, acc)
    """)
    run_kernel(kernel, (1,), [x, out, 0])
    np.testing.assert_array_equal(out, x)


def test_nested_loops_with_inner_bound_from_outer_index(rng):
    W = 6
    x = randf(rng, W, W)
    out = np.zeros(4, np.float32)
    kernel = build("""
        @mytriton.jit
        def triangle(x_ptr, out_ptr, W):
            pid = tl.program_id(0)
            acc = 0.0
            for i in range(pid + 2):
                for j in range(i + 1):
                    acc += tl.load(x_ptr + i * W + j)
            tl.store(out_ptr + pid, acc)
    """)
    run_kernel(kernel, (4,), [x, out, W])
    expected = [np.tril(x)[:p + 2].sum() for p in range(4)]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_two_carried_values_of_different_types(rng):
    G, BLOCK, T = 3, 8, 5
    x = randf(rng, T, BLOCK)
    out_max, out_count = np.zeros((G, BLOCK), np.float32), np.zeros(G, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, max_ptr, count_ptr, T, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            best = tl.full((BLOCK,), -float('inf'), tl.float32)
            count = 0
            for i in range(T - pid):
                best = tl.maximum(best, tl.load(x_ptr + i * BLOCK + cols))
                count += 1
            tl.store(max_ptr + pid * BLOCK + cols, best)
            tl.store(count_ptr + pid, count)
    """, signature="*fp32, *fp32, *i32, i32", BLOCK=BLOCK)
    run_kernel(kernel, (G,), [x, out_max, out_count, T])
    np.testing.assert_array_equal(out_count, [T, T - 1, T - 2])
    np.testing.assert_array_equal(out_max, [x[:T - p].max(axis=0) for p in range(G)])


def test_loop_with_step(rng):
    n = 11
    x = randf(rng, n)
    out = np.zeros(2, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, n):
            pid = tl.program_id(0)
            acc = 0.0
            for i in range(pid, n, 3):
                acc += tl.load(x_ptr + i)
            tl.store(out_ptr + pid, acc)
    """)
    run_kernel(kernel, (2,), [x, out, n])
    np.testing.assert_allclose(out, [x[0::3].sum(), x[1::3].sum()], rtol=1e-5)


def test_carried_pointer(rng):
    T, BLOCK = 4, 8
    x = randf(rng, T, BLOCK)
    out = np.zeros(BLOCK, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, T, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            ptrs = x_ptr + cols
            acc = tl.zeros((BLOCK,), tl.float32)
            for i in range(T):
                acc += tl.load(ptrs)
                ptrs += BLOCK
            tl.store(out_ptr + cols, acc)
    """, BLOCK=BLOCK)
    run_kernel(kernel, (1,), [x, out, T])
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-5)


def test_out_of_bounds_inside_a_loop_reports_the_program(rng):
    x = randf(rng, 10)
    out = np.zeros(3, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr):
            pid = tl.program_id(0)
            acc = 0.0
            for i in range(pid * 6):
                acc += tl.load(x_ptr + i)
            tl.store(out_ptr + pid, acc)
    """)
    with pytest.raises(CompileError, match=r"'x_ptr': element offset 10 .*program 2"):
        run_kernel(kernel, (3,), [x, out])


def test_runs_optimized_ssa(rng):
    M, N, K = 9, 10, 5
    a, b = randf(rng, M, K), randf(rng, K, N)
    c, t = np.zeros((M, N), np.float32), np.zeros(6, np.float32)
    kernel = ssa_of(kernel_source(MATMUL), optimized=True, defines={"BM": 4, "BN": 8})
    run_kernel(kernel, (3, 2), [a, b, c, t, M, N, K])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
