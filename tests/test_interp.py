"""The NumPy interpreter (mytriton/backends/interp.py): straight-line kernels,
elementwise ops, rank-2 tiles, reductions and error paths. Loops are in
test_interp_loops.py."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, cdiv, randf
from mytriton.backends.interp import np_dtype, run_kernel
from mytriton.diagnostics import CompileError
from mytriton.types import BF16, F16, F32, I32, BlockType, PointerType


ADD = """
@mytriton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
"""

UNARY = """
@mytriton.jit
def unary_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, {expr}, mask=mask)
"""


def run_unary(rng, expr: str, x: np.ndarray, out_dtype=np.float32, signature=None) -> np.ndarray:
    n = x.size
    out = np.full(n, 7, dtype=out_dtype)
    kernel = build(UNARY.format(expr=expr), signature=signature, BLOCK=64)
    run_kernel(kernel, (cdiv(n, 64),), [x, out, n])
    return out


# ---- elementwise kernels -----------------------------------------------------------------------


def test_vector_add_ragged(rng):
    n = 1000  # not a multiple of BLOCK
    x, y = randf(rng, n), randf(rng, n)
    out = np.zeros(n, dtype=np.float32)
    run_kernel(build(ADD, BLOCK=128), (cdiv(n, 128),), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


def test_store_writes_into_the_callers_multidimensional_array(rng):
    x, y = randf(rng, 7, 9), randf(rng, 7, 9)
    out = np.zeros((7, 9), dtype=np.float32)
    run_kernel(build(ADD, BLOCK=16), (4,), [x, y, out, x.size])
    np.testing.assert_array_equal(out, x + y)


def test_relu_with_where(rng):
    x = randf(rng, 300)
    out = run_unary(rng, "tl.where(x > 0, x, 0.0)", x)
    np.testing.assert_array_equal(out, np.where(x > 0, x, 0))


def test_relu_with_maximum(rng):
    x = randf(rng, 300)
    out = run_unary(rng, "tl.maximum(x, 0.0)", x)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_sigmoid_with_exp(rng):
    x = randf(rng, 300) * 4
    out = run_unary(rng, "1.0 / (1.0 + tl.exp(-x))", x)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-x)), rtol=1e-6)


@pytest.mark.parametrize("expr, reference", [
    ("tl.sigmoid(x)", lambda x: 1 / (1 + np.exp(-x))),
    ("tl.exp2(x)", np.exp2),
    ("tl.log(tl.abs(x))", lambda x: np.log(np.abs(x))),
    ("tl.log2(tl.abs(x))", lambda x: np.log2(np.abs(x))),
    ("tl.sqrt(tl.abs(x))", lambda x: np.sqrt(np.abs(x))),
    ("tl.rsqrt(tl.abs(x))", lambda x: 1 / np.sqrt(np.abs(x))),
    ("tl.sin(x) + tl.cos(x)", lambda x: np.sin(x) + np.cos(x)),
    ("tl.floor(x) * 10.0 + tl.ceil(x)", lambda x: np.floor(x) * 10 + np.ceil(x)),
    ("-x", np.negative),
    ("tl.minimum(x, 0.5)", lambda x: np.minimum(x, 0.5)),
])
def test_math_functions(rng, expr, reference):
    x = randf(rng, 200) * 3
    np.testing.assert_allclose(run_unary(rng, expr, x), reference(x).astype(np.float32), rtol=2e-6)


def test_masked_load_gives_other_in_masked_lanes(rng):
    n = 77
    x = randf(rng, n)
    out = np.zeros(128, dtype=np.float32)
    kernel = build("""
        @mytriton.jit
        def pad_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offsets, mask=offsets < n, other=-2.5)
            tl.store(out_ptr + offsets, x)
    """, BLOCK=32)
    run_kernel(kernel, (4,), [x, out, n])
    np.testing.assert_array_equal(out, np.concatenate([x, np.full(128 - n, -2.5, np.float32)]))


def test_integer_floordiv_and_mod_follow_c(rng):
    n = 300
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    q, r = np.zeros(n, np.int32), np.zeros(n, np.int32)
    kernel = build("""
        @mytriton.jit
        def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            a = tl.load(a_ptr + offsets, mask=mask, other=0)
            b = tl.load(b_ptr + offsets, mask=mask, other=1)
            tl.store(q_ptr + offsets, a // b, mask=mask)
            tl.store(r_ptr + offsets, a % b, mask=mask)
    """, signature="*i32, *i32, *i32, *i32, i32", BLOCK=64)
    run_kernel(kernel, (cdiv(n, 64),), [a, b, q, r, n])
    np.testing.assert_array_equal(q, np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(r, a - b * np.trunc(a / b).astype(np.int32))


def test_tl_functions_of_plain_numbers_are_runtime_values_as_in_triton():
    # tl.where, tl.maximum, tl.minimum and tl.abs give a tensor in Triton even
    # on numbers, so % and // after them divide as C does (1 % -5 is 1, not
    # Python's -4), while plain Python numbers keep Python's arithmetic.
    out = np.zeros(8, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(out_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            r = (1 % tl.where(False, 3, -5)) * 1000 + (-7 // tl.maximum(-9, 2)) * 100 \
                + (7 % tl.abs(-3)) * 10 + (1 % -5)
            tl.store(out_ptr + offsets, r)
    """, signature="*i32", BLOCK=8)
    run_kernel(kernel, (1,), [out])
    np.testing.assert_array_equal(out, np.full(8, 1 * 1000 + (-3) * 100 + 1 * 10 + (-4), np.int32))


def test_integer_division_by_zero_does_not_crash(rng):
    a = rng.integers(-100, 100, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(a_ptr, out_ptr, d, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            a = tl.load(a_ptr + offsets)
            tl.store(out_ptr + offsets, a // d + a % d)
    """, signature="*i32, *i32, i32", BLOCK=64)
    run_kernel(kernel, (1,), [a, out, 0])  # any value, but no exception


def test_int32_arithmetic_wraps():
    a = np.array([2**31 - 1, -(2**31), 5, -7], dtype=np.int32)
    out = np.zeros(4, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(a_ptr, out_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.load(a_ptr + offsets) * 2 + 1)
    """, signature="*i32, *i32", BLOCK=4)
    run_kernel(kernel, (1,), [a, out])
    np.testing.assert_array_equal(out, (a.astype(np.int64) * 2 + 1).astype(np.int32))


def test_bitwise_ops_on_ints_and_logical_ops_on_bools(rng):
    n = 100
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            a = tl.load(a_ptr + offsets, mask=mask, other=0)
            b = tl.load(b_ptr + offsets, mask=mask, other=0)
            bits = (a & b) ^ (~a | 3)
            flag = ~((a > 0) & (b > 0)) | (a == b)
            tl.store(out_ptr + offsets, bits + tl.where(flag, 100000, 0), mask=mask)
    """, signature="*i32, *i32, *i32, i32", BLOCK=32)
    run_kernel(kernel, (4,), [a, b, out, n])
    flag = ~((a > 0) & (b > 0)) | (a == b)
    np.testing.assert_array_equal(out, ((a & b) ^ (~a | 3)) + np.where(flag, 100000, 0))


def test_scalar_params_i32_and_fp32(rng):
    n = 150
    x = randf(rng, n)
    out = np.zeros(n, np.float32)
    kernel = build("""
        @mytriton.jit
        def axpb(x_ptr, out_ptr, n, scale, shift, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask)
            tl.store(out_ptr + offsets, x * scale + shift, mask=mask)
    """, signature="*fp32, *fp32, i32, fp32, i32", BLOCK=64)
    run_kernel(kernel, (3,), [x, out, n, np.float32(1.75), -3])
    np.testing.assert_allclose(out, x * np.float32(1.75) - 3, rtol=1e-6)


def test_casts_and_f16_buffers(rng):
    n = 90
    x = (randf(rng, n) * 20).astype(np.float16)
    ints, halves = np.zeros(n, np.int32), np.zeros(n, np.float16)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, i_ptr, h_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask)
            tl.store(i_ptr + offsets, x.to(tl.int32), mask=mask)
            tl.store(h_ptr + offsets, x.to(tl.float32) * 0.5, mask=mask)
    """, signature="*fp16, *i32, *fp16, i32", BLOCK=32)
    run_kernel(kernel, (3,), [x, ints, halves, n])
    np.testing.assert_array_equal(ints, np.trunc(x.astype(np.float32)).astype(np.int32))
    np.testing.assert_array_equal(halves, (x.astype(np.float32) * 0.5).astype(np.float16))


# ---- grids ----------------------------------------------------------------------------------------


def test_two_dimensional_grid_program_ids(rng):
    rows, cols = 5, 100
    x = randf(rng, rows, cols)
    out = np.zeros((rows, cols), np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
            row = tl.program_id(1)
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + row * cols + offsets, mask=mask)
            tl.store(out_ptr + row * cols + offsets, x + row * 10, mask=mask)
    """, BLOCK=32)
    run_kernel(kernel, (cdiv(cols, 32), rows), [x, out, cols])
    np.testing.assert_array_equal(out, x + 10 * np.arange(rows, dtype=np.float32)[:, None])


def test_three_dimensional_grid_and_num_programs():
    out = np.zeros((4, 3, 2, 4), np.int32)  # [pid2, pid1, pid0, field]
    kernel = build("""
        @mytriton.jit
        def k(out_ptr):
            p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
            n0, n1, n2 = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
            base = ((p2 * n1 + p1) * n0 + p0) * 4
            tl.store(out_ptr + base, p0)
            tl.store(out_ptr + base + 1, p1)
            tl.store(out_ptr + base + 2, p2)
            tl.store(out_ptr + base + 3, n0 * 100 + n1 * 10 + n2)
    """, signature="*i32")
    run_kernel(kernel, (2, 3, 4), [out])
    p2, p1, p0 = np.meshgrid(np.arange(4), np.arange(3), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], p0)
    np.testing.assert_array_equal(out[..., 1], p1)
    np.testing.assert_array_equal(out[..., 2], p2)
    assert (out[..., 3] == 234).all()


# ---- rank-2 tiles ----------------------------------------------------------------------------------


def test_rank2_broadcast_with_2d_mask(rng):
    M, N = 11, 13
    x, y = randf(rng, M), randf(rng, N)
    out = np.full((M, N), 99.0, np.float32)
    kernel = build("""
        @mytriton.jit
        def outer(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            cols = tl.program_id(1) * BN + tl.arange(0, BN)
            x = tl.load(x_ptr + rows, mask=rows < M, other=0.0)
            y = tl.load(y_ptr + cols, mask=cols < N, other=0.0)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            tl.store(out_ptr + rows[:, None] * N + cols[None, :], x[:, None] * 10.0 + y[None, :], mask=mask)
    """, BM=4, BN=8)
    run_kernel(kernel, (cdiv(M, 4), cdiv(N, 8)), [x, y, out, M, N])
    np.testing.assert_allclose(out, x[:, None] * 10 + y[None, :], rtol=1e-6)


def test_zeros_and_full_tiles():
    out = np.zeros((3, 4, 8), np.float32)
    kernel = build("""
        @mytriton.jit
        def k(out_ptr, value, BM: tl.constexpr, BN: tl.constexpr):
            pid = tl.program_id(0)
            idx = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
            tile = tl.zeros((BM, BN), tl.float32) + tl.full((BM, BN), 2.0, tl.float32) * pid
            tile = tile + tl.full((BM, BN), value, tl.float32)
            tl.store(out_ptr + pid * BM * BN + idx, tile)
    """, signature="*fp32, fp32", BM=4, BN=8)
    run_kernel(kernel, (3,), [out, 0.25])
    np.testing.assert_array_equal(out, np.broadcast_to((2.0 * np.arange(3) + 0.25)[:, None, None], out.shape))


# ---- reductions -------------------------------------------------------------------------------------

REDUCE_2D = """
@mytriton.jit
def reduce_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * N + cols, mask=mask, other={other})
    r = tl.{op}(x, axis={axis})
    idx = tl.arange(0, {size})
    tl.store(out_ptr + idx, r, mask=idx < {limit})
"""


@pytest.mark.parametrize("op, other, reference", [
    ("sum", "0.0", np.sum), ("max", "-float('inf')", np.max), ("min", "float('inf')", np.min),
])
@pytest.mark.parametrize("axis", [0, 1])
def test_row_and_column_reductions(rng, op, other, reference, axis):
    M, N = 6, 13
    x = randf(rng, M, N)
    size, limit = ("BN", "N") if axis == 0 else ("BM", "M")
    out = np.zeros(max(M, N), np.float32)
    body = REDUCE_2D.format(op=op, other=other, axis=axis, size=size, limit=limit)
    run_kernel(build(body, BM=8, BN=16), (1,), [x, out, M, N])
    expected = reference(x, axis=axis)
    np.testing.assert_allclose(out[:expected.size], expected, rtol=1e-5)


def test_rank1_sum_to_scalar(rng):
    n = 1000
    x = randf(rng, n)
    partial = np.zeros(cdiv(n, 128), np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offsets = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)))
    """, BLOCK=128)
    run_kernel(kernel, (partial.size,), [x, partial, n])
    expected = np.add.reduceat(x, np.arange(0, n, 128))
    np.testing.assert_allclose(partial, expected, rtol=1e-5, atol=1e-5)


def test_sum_of_bools_counts(rng):
    n = 200
    x = randf(rng, n)
    out = np.zeros(1, np.int32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
            tl.store(out_ptr, tl.sum(x > 0.5))
    """, signature="*fp32, *i32, i32", BLOCK=256)
    run_kernel(kernel, (1,), [x, out, n])
    assert out[0] == np.count_nonzero(x > 0.5)


def test_row_softmax(rng):
    M, N = 7, 50
    x = randf(rng, M, N) * 5
    out = np.zeros((M, N), np.float32)
    kernel = build("""
        @mytriton.jit
        def softmax(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            mask = cols < N
            x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float('inf'))
            z = x - tl.max(x, axis=0)
            num = tl.exp(z)
            tl.store(out_ptr + row * N + cols, num / tl.sum(num, axis=0), mask=mask)
    """, BLOCK=64)
    run_kernel(kernel, (M,), [x, out, N])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_dot_16x16(rng):
    a, b = randf(rng, 16, 16), randf(rng, 16, 16)
    out = np.zeros((2, 16, 16), np.float32)
    kernel = build("""
        @mytriton.jit
        def k(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
            pid = tl.program_id(0)
            idx = tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :]
            a = tl.load(a_ptr + idx)
            b = tl.load(b_ptr + idx)
            acc = tl.full((B, B), 1.0, tl.float32) * pid
            tl.store(c_ptr + pid * B * B + idx, tl.dot(a, b, acc, input_precision="ieee"))
    """, B=16)
    run_kernel(kernel, (2,), [a, b, out])
    np.testing.assert_allclose(out[0], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], a @ b + 1, rtol=1e-5, atol=1e-5)


# ---- errors -------------------------------------------------------------------------------------------


def test_out_of_bounds_load_names_the_buffer(rng):
    n = 100
    x, y, out = randf(rng, n), randf(rng, n), np.zeros(n, np.float32)
    kernel = build(ADD, BLOCK=64)
    with pytest.raises(CompileError) as info:
        run_kernel(kernel, (2,), [x, y, out, n + 3])  # the mask lets 3 lanes past the end
    message = info.value.message
    assert "out-of-bounds load" in message and "'x_ptr'" in message
    assert "element offset 100" in message and "100 element" in message
    assert "program 1" in message
    assert info.value.loc is not None and info.value.loc.line == 9  # the first tl.load


def test_out_of_bounds_store_reports_a_program_of_a_2d_grid(rng):
    out = np.zeros(10, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(out_ptr):
            tl.store(out_ptr + tl.program_id(1) * 4 + tl.program_id(0), 1.0)
    """)
    with pytest.raises(CompileError, match=r"out-of-bounds store to 'out_ptr'.*program \(2, 2\)"):
        run_kernel(kernel, (4, 3), [out])


def test_negative_offset_is_out_of_bounds(rng):
    x, out = randf(rng, 8), np.zeros(8, np.float32)
    kernel = build("""
        @mytriton.jit
        def k(x_ptr, out_ptr):
            offsets = tl.arange(0, 8) - 8
            tl.store(out_ptr + offsets + 8, tl.load(x_ptr + offsets))
    """)
    with pytest.raises(CompileError, match="'x_ptr': element offset -8"):
        run_kernel(kernel, (1,), [x, out])


def test_masked_off_lanes_are_not_bounds_checked(rng):
    x, out = randf(rng, 3), np.zeros(3, np.float32)
    run_kernel(build(UNARY.format(expr="x"), BLOCK=1024), (5,), [x, out, 3])
    np.testing.assert_array_equal(out, x)


def test_wrong_argument_count(rng):
    with pytest.raises(CompileError, match=r"takes 4 argument\(s\).*got 3"):
        run_kernel(build(ADD, BLOCK=64), (1,), [randf(rng, 4), randf(rng, 4), randf(rng, 4)])


def test_pointer_dtype_mismatch(rng):
    x = randf(rng, 4).astype(np.float64)
    with pytest.raises(CompileError, match=r"'x_ptr'.*float32.*float64"):
        run_kernel(build(ADD, BLOCK=64), (1,), [x, randf(rng, 4), randf(rng, 4), 4])


def test_pointer_param_needs_an_array(rng):
    with pytest.raises(CompileError, match="'y_ptr'.*NumPy array"):
        run_kernel(build(ADD, BLOCK=64), (1,), [randf(rng, 4), [1.0, 2.0], randf(rng, 4), 2])


def test_scalar_param_needs_a_number(rng):
    with pytest.raises(CompileError, match="'n' is a scalar"):
        run_kernel(build(ADD, BLOCK=64), (1,), [randf(rng, 4), randf(rng, 4), randf(rng, 4), "4"])


def test_non_contiguous_array_is_rejected(rng):
    x = randf(rng, 8, 2)[:, 0]
    with pytest.raises(CompileError, match="contiguous"):
        run_kernel(build(ADD, BLOCK=64), (1,), [x, randf(rng, 8), randf(rng, 8), 8])


def test_bf16_arrays_need_ml_dtypes_bfloat16():
    kernel = build(ADD, signature="*bf16, *bf16, *bf16, i32", BLOCK=64)
    with pytest.raises(CompileError, match="expected an array of bfloat16, got float32"):
        run_kernel(kernel, (1,), [np.zeros(4, np.float32)] * 3 + [4])


def test_bf16_without_ml_dtypes_names_the_package(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)  # import fails
    with pytest.raises(CompileError, match="bf16 in the interpreter needs the ml_dtypes package"):
        np_dtype(BF16)


def test_np_dtype_mapping():
    assert np_dtype(F32) == np.float32 and np_dtype(F16) == np.float16
    assert np_dtype(BlockType((4,), I32)) == np.int32
    assert np_dtype(PointerType(F32)) == np.int64  # addresses


def test_same_array_for_two_pointers_works_in_place(rng):
    x, y = randf(rng, 100), randf(rng, 100)
    expected = x + y
    run_kernel(build(ADD, BLOCK=32), (4,), [x, y, x, 100])  # out_ptr aliases x_ptr
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("grid", [(), (1, 1, 1, 1), (2, -1), (1.5,)])
def test_bad_grid_is_rejected(rng, grid):
    with pytest.raises(CompileError, match="grid"):
        run_kernel(build(ADD, BLOCK=32), grid, [randf(rng, 4), randf(rng, 4), randf(rng, 4), 4])
