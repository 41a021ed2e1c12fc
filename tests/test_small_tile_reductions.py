"""Reductions of tiles smaller than the block's lanes: the layout wraps the
lanes around a dimension, so several lanes hold copies of each element, and
each aligned group of distinct lanes counts its own copy and shuffles within
itself; and of tiles whose warps split the reduced dimension, whose warps'
partials meet in shared memory and are combined with shuffles, a partial a
lane, where each group of lanes computes the same outputs
(backends/cuda/reductions.py). Checked against NumPy on the GPU for every
axis, sums and maxima, tiles from 1x2 to 256x2 on 1, 4 and 8 warps."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import compile_text, kernel_source

SUMS = """
@mytriton.jit
def k(x_ptr, rows_ptr, cols_ptr, all_ptr, maxes_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(rows_ptr + r, tl.sum(x, axis=1))
    tl.store(cols_ptr + c, tl.sum(x, axis=0))
    tl.store(all_ptr, tl.sum(x))
    tl.store(maxes_ptr + c, tl.max(x, axis=0))
"""

SHAPES = [(1, 2), (2, 2), (4, 4), (2, 8), (8, 2), (4, 16), (16, 8), (1, 32), (32, 1), (64, 32), (256, 2), (2, 256)]
SIGNATURE = "*fp32:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16"


def test_a_column_sum_of_a_4x4_tile_takes_two_shuffle_rounds():
    cuda = compile_text(kernel_source(SUMS), "cuda", signature=SIGNATURE, defines={"R": 4, "C": 4})
    column_sum = cuda.split("along axis 0")[1].split("// store")[0]
    assert column_sum.count("__shfl_xor_sync") == 2


def test_the_warps_partials_of_a_whole_tile_sum_are_combined_with_shuffles_a_partial_a_lane():
    cuda = compile_text(kernel_source(SUMS), "cuda", signature=SIGNATURE, defines={"R": 64, "C": 32}, num_warps=8)
    whole = cuda.split("along all axes")[1].split("// max")[0]
    assert "_warps[(0) * 8 + threadIdx.x % 8];" in whole
    assert [f"total, {offset})" in whole for offset in (4, 2, 1)] == [True] * 3
    assert "for (int w = 0;" not in whole


def test_the_warps_partials_of_column_sums_whose_lanes_run_along_the_columns_are_each_read_by_every_lane():
    # lanes 0-7 of a warp hold different columns: a shuffle between them would mix two columns' sums
    cuda = compile_text(kernel_source(SUMS), "cuda", signature=SIGNATURE, defines={"R": 64, "C": 32}, num_warps=4)
    columns = cuda.split("along axis 0")[1].split("// store")[0]
    assert "for (int w = 0; w < 4; ++w)" in columns


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_a_sum_along_a_dimension_of_one_element_on_warps_that_copy_it_compiles(num_warps):
    # a 32x1 tile on 4 warps: the warps hold copies of its one column, and the
    # row sums' slots have no digit along it
    cuda = compile_text(kernel_source(SUMS), "cuda", signature=SIGNATURE, defines={"R": 32, "C": 1},
                        num_warps=num_warps)
    assert "along axis 1" in cuda


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_small_tile_reductions_match_numpy(tmp_path, shape, num_warps):
    path = tmp_path / "sums.py"
    path.write_text(kernel_source(SUMS))
    spec = importlib.util.spec_from_file_location("small_sums", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows, cols = shape
    x = np.random.default_rng(rows * 100 + cols).standard_normal(shape).astype(np.float32)
    out_rows, out_cols = np.empty(rows, np.float32), np.empty(cols, np.float32)
    out_all, out_max = np.empty(1, np.float32), np.empty(cols, np.float32)
    module.k[(1,)](x, out_rows, out_cols, out_all, out_max, R=rows, C=cols, num_warps=num_warps, backend="cuda")
    np.testing.assert_allclose(out_rows, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_cols, x.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_all[0], x.sum(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out_max, x.max(axis=0))
