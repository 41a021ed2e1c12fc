"""The interpreter's pointer model: a pointer is a buffer id and an offset
inside that buffer's own window, so no offset, however large, reaches another
buffer. An offset that leaves the window poisons the pointer for good; an
enabled access through it is an out-of-bounds error naming the buffer, a
masked-off one is harmless."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, randf
from mytriton.backends.interp import advance, run_kernel
from mytriton.diagnostics import CompileError

# Loads x_ptr + delta + arange(16) (delta an i64 scalar) into out_ptr, where enabled.
SHIFTED_LOAD = """
@mytriton.jit
def shifted(x_ptr, y_ptr, out_ptr, delta, enabled):
    offs = tl.arange(0, 16)
    mask = offs < enabled
    tl.store(out_ptr + offs, tl.load(x_ptr + delta + offs, mask=mask, other=-1.0), mask=offs < 16)
"""

SIGNATURE = "*fp32, *fp32, *fp32, i64, i32"

# Byte distances at which the old model (buffers at (i + 1) << 40) put the
# neighbouring buffer, and offsets far beyond any window.
FAR_DELTAS = [2**38, 2**38 - 16, -2**38, 2**45, 2**62, -2**63]


def run_shifted(rng, delta: int, enabled: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x, y = randf(rng, 16), randf(rng, 16)
    out = np.zeros(16, np.float32)
    run_kernel(build(SHIFTED_LOAD, signature=SIGNATURE), (1,), [x, y, out, delta, enabled])
    return y, out


@pytest.mark.parametrize("delta", FAR_DELTAS)
def test_a_far_offset_is_out_of_bounds_of_its_own_buffer_never_a_neighbour(rng, delta):
    with pytest.raises(CompileError, match="out-of-bounds load from 'x_ptr'") as err:
        run_shifted(rng, delta)
    assert "'y_ptr'" not in err.value.message


def test_a_masked_off_access_through_a_poisoned_pointer_is_harmless(rng):
    _, out = run_shifted(rng, 2**45, enabled=0)
    np.testing.assert_array_equal(out, np.full(16, -1.0, np.float32))


def test_a_near_out_of_bounds_offset_reports_the_element_offset(rng):
    with pytest.raises(CompileError, match=r"'x_ptr': element offset 16 is outside the buffer of 16"):
        run_shifted(rng, 1)


def test_an_offset_that_goes_below_the_buffer_and_back_is_in_bounds(rng):
    x = randf(rng, 16)
    out = np.zeros(16, np.float32)
    kernel = build("""
    @mytriton.jit
    def back(x_ptr, out_ptr, delta):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, tl.load(x_ptr - delta + delta + offs))
    """, signature="*fp32, *fp32, i32")
    run_kernel(kernel, (1,), [x, out, 1000])
    np.testing.assert_array_equal(out, x)


def test_a_pointer_that_left_its_window_stays_poisoned_when_moved_back():
    ptr = np.array([(1 << 40) | (1 << 39)], dtype=np.int64)  # buffer 1, offset 0
    far = advance(ptr, np.array([2**37]), 4)  # 2**39 bytes: out of the window
    back = advance(far, np.array([-2**37]), 4)
    assert (back >> 62)[0] == 1
    assert ((back >> 40) & ((1 << 22) - 1))[0] == 1  # still names buffer 1


def test_stores_through_far_offsets_do_not_touch_other_buffers(rng):
    x, y = randf(rng, 16), randf(rng, 16)
    kernel = build("""
    @mytriton.jit
    def far_store(x_ptr, y_ptr, delta):
        offs = tl.arange(0, 16)
        tl.store(x_ptr + delta + offs, offs.to(tl.float32))
    """, signature="*fp32, *fp32, i64")
    before = y.copy()
    with pytest.raises(CompileError, match="out-of-bounds store to 'x_ptr'"):
        run_kernel(kernel, (1,), [x, y, 2**38])
    np.testing.assert_array_equal(y, before)


def test_loads_from_two_buffers_in_one_op_read_each_buffer(rng):
    x, y = randf(rng, 16), randf(rng, 16)
    out = np.zeros(16, np.float32)
    kernel = build("""
    @mytriton.jit
    def pick(x_ptr, y_ptr, out_ptr):
        offs = tl.arange(0, 16)
        ptrs = tl.where(offs % 2 == 0, x_ptr + offs, y_ptr + offs)
        tl.store(out_ptr + offs, tl.load(ptrs))
    """)
    run_kernel(kernel, (1,), [x, y, out])
    np.testing.assert_array_equal(out, np.where(np.arange(16) % 2 == 0, x, y))
