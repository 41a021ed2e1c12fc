"""The interpreter's fast paths (a vector's load or store as a slice of its
buffer, offsets and masks of ``s + tl.arange`` kept unmaterialised) give what
the lane-by-lane path gives, including its errors, wherever they apply."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, randf
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError

COPY_STRIDED = """
@mytriton.jit
def strided(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs))
"""


def test_a_loaded_value_keeps_what_it_read_after_a_store_to_its_buffer(rng):
    x = randf(rng, 64)
    original = x.copy()
    out = np.zeros(64, np.float32)
    kernel = build("""
    @mytriton.jit
    def bump(x_ptr, out_ptr):
        offs = tl.program_id(0) * 16 + tl.arange(0, 16)
        x = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, x + 1.0)
        tl.store(out_ptr + offs, x)
    """)
    run_kernel(kernel, (4,), [x, out])
    np.testing.assert_array_equal(out, original)
    np.testing.assert_array_equal(x, original + np.float32(1.0))


def test_a_store_through_an_aliased_argument_leaves_earlier_loads_alone(rng):
    x = randf(rng, 32)
    original = x.copy()
    kernel = build("""
    @mytriton.jit
    def swap_halves(a_ptr, b_ptr):
        offs = tl.arange(0, 16)
        lo = tl.load(a_ptr + offs)
        hi = tl.load(a_ptr + 16 + offs)
        tl.store(b_ptr + offs, hi)
        tl.store(b_ptr + 16 + offs, lo)
    """)
    run_kernel(kernel, (1,), [x, x])  # one array as both arguments
    np.testing.assert_array_equal(x, np.concatenate([original[16:], original[:16]]))


def test_a_loop_bound_loaded_before_the_loop_ignores_stores_in_its_body(rng):
    counts = np.array([3, 0, 0, 0], np.int32)
    out = np.zeros(4, np.int32)
    kernel = build("""
    @mytriton.jit
    def count(n_ptr, out_ptr):
        offs = tl.arange(0, 4)
        n = tl.load(n_ptr)
        total = 0
        for i in range(0, n):
            tl.store(n_ptr, 0)
            total += 1
        tl.store(out_ptr + offs, offs * 0 + total)
    """, signature="*i32, *i32")
    run_kernel(kernel, (1,), [counts, out])
    np.testing.assert_array_equal(out, [3, 3, 3, 3])


def test_programs_whose_runs_do_not_follow_each_other_read_their_own_runs(rng):
    x = randf(rng, 128)
    out = np.zeros(64, np.float32)
    run_kernel(build(COPY_STRIDED, BLOCK=16), (4,), [x, out, 32])
    np.testing.assert_array_equal(out, np.concatenate([x[32 * p:32 * p + 16] for p in range(4)]))


def test_overlapping_runs_read_the_same_elements(rng):
    x = randf(rng, 32)
    out = np.zeros(64, np.float32)
    run_kernel(build(COPY_STRIDED, BLOCK=16), (4,), [x, out, 4])
    np.testing.assert_array_equal(out, np.concatenate([x[4 * p:4 * p + 16] for p in range(4)]))


def test_a_run_past_the_end_is_the_lane_by_lane_error(rng):
    x = randf(rng, 40)
    out = np.zeros(64, np.float32)
    with pytest.raises(CompileError, match=r"out-of-bounds load from 'x_ptr': element offset 40 is outside "
                                           r"the buffer of 40 element\(s\) \(in program 2 at tile element \[8\]\)"):
        run_kernel(build(COPY_STRIDED, BLOCK=16), (4,), [x, out, 16])


def test_offsets_that_wrap_at_32_bits_are_out_of_bounds_as_in_c(rng):
    x = randf(rng, 16)
    out = np.zeros(16, np.float32)
    kernel = build("""
    @mytriton.jit
    def wrap(x_ptr, out_ptr, start):
        offs = start + tl.arange(0, 16)
        tl.store(out_ptr + tl.arange(0, 16), tl.load(x_ptr + offs, mask=offs < 0))
    """, signature="*fp32, *fp32, i32")
    # Lanes 8.. wrap to -2**31..: the mask enables them, and they are out of bounds.
    with pytest.raises(CompileError, match=r"out-of-bounds load from 'x_ptr': element offset -2147483648 "
                                           r"is outside the buffer of 16 element\(s\) \(in program 0 at tile element \[8\]\)"):
        run_kernel(kernel, (1,), [x, out, 2**31 - 8])


@pytest.mark.parametrize("n", [0, 5, 16, 64])
def test_a_tail_mask_over_the_ramp_enables_exactly_the_lanes_below_n(rng, n):
    x, y = randf(rng, 64), randf(rng, 64)
    out = np.full(64, -1.0, np.float32)
    kernel = build("""
    @mytriton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
    """, BLOCK=16)
    run_kernel(kernel, (4,), [x, y, out, n])
    expected = np.where(np.arange(64) < n, x + y, np.float32(-1.0))
    np.testing.assert_array_equal(out, expected)


def test_a_ramp_used_as_a_value_is_its_lanes(rng):
    out = np.zeros(32, np.int32)
    kernel = build("""
    @mytriton.jit
    def lanes(out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs * 3)
    """, signature="*i32", BLOCK=16)
    run_kernel(kernel, (2,), [out])
    np.testing.assert_array_equal(out, np.arange(32) * 3)


def test_a_store_to_a_read_only_array_is_refused_on_the_fast_path(rng):
    x = randf(rng, 16)
    out = np.zeros(16, np.float32)
    out.flags.writeable = False
    kernel = build("""
    @mytriton.jit
    def copy(x_ptr, out_ptr):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    """)
    with pytest.raises(CompileError, match="store to 'out_ptr': the array is read-only"):
        run_kernel(kernel, (1,), [x, out])


def test_a_float_plus_an_arange_is_computed_lane_by_lane(rng):
    out = np.zeros(16, np.float32)
    kernel = build("""
    @mytriton.jit
    def shifted(out_ptr, start):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, start + offs)
    """, signature="*fp32, fp32")
    run_kernel(kernel, (1,), [out, 16777216.0])  # 2**24: odd lanes round in f32
    np.testing.assert_array_equal(out, np.float32(16777216.0) + np.arange(16, dtype=np.float32))


def test_a_ramp_compared_with_a_float_bound_is_computed_lane_by_lane(rng):
    out = np.zeros(16, np.int32)
    kernel = build("""
    @mytriton.jit
    def below(out_ptr, bound):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, tl.where(offs < bound, 1, 0))
    """, signature="*i32, fp32")
    run_kernel(kernel, (1,), [out, 7.5])
    np.testing.assert_array_equal(out, (np.arange(16) < 7.5).astype(np.int32))
