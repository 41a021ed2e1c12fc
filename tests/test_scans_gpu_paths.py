"""The two GPU paths of ``reduce`` and ``scan`` with a combine region
(backends/cuda/warp_scan.py and scans.py): which one a layout takes, what
the fast path's CUDA is made of, that it builds with nvcc, and that both
match the interpreter on the GPU: 1, 4 and 8 warps, either axis, forward
and reverse, a non-commutative combine (an affine recurrence, exact in
integers; a 2x2 matrix product in floats), int and float, ragged masked
tiles, tiles with more threads than elements and tiles the layout repeats
over."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import compile_text, kernel_source, tiered

COMBINES = """
@mytriton.jit
def _affine(a1, b1, a2, b2):
    # (h -> a1 h + b1) then (h -> a2 h + b2): associative, not commutative
    return a1 * a2, a2 * b1 + b2


@mytriton.jit
def _matmul(a, b, c, d, e, f, g, h):
    # [[a, b], [c, d]] @ [[e, f], [g, h]]: associative, not commutative
    return a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h


@mytriton.jit
def _first(a, b):
    return a
"""

# Every form along one axis (AXIS, REVERSE constexprs) of a ragged R x C tile in BM x BN:
# cumsum of floats and of ints, an affine recurrence over a tuple of ints (exact, so the
# order is checked bit for bit), a 2x2 matrix-product scan over floats, the affine and
# "first" reduces (non-commutative), argmax.
PATHS = COMBINES + """
@mytriton.jit
def k(x_ptr, i_ptr, s_ptr, n_ptr, h_ptr, m_ptr, ra_ptr, rf_ptr, am_ptr, R, C,
      BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < R) & (cols < C)
    offs = rows * C + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    i = tl.load(i_ptr + offs, mask=mask, other=0)
    tl.store(s_ptr + offs, tl.cumsum(x, AXIS, reverse=REVERSE), mask=mask)
    tl.store(n_ptr + offs, tl.cumsum(i, AXIS, reverse=REVERSE), mask=mask)
    sign = tl.where((i % 2) == 0, 1, -1)
    _, h = tl.associative_scan((sign, i), AXIS, _affine, reverse=REVERSE)
    tl.store(h_ptr + offs, h, mask=mask)
    one = tl.where(mask, 1.0, 0.0)
    zero = x * 0.0
    c = tl.cos(x * 0.1)
    s = tl.sin(x * 0.1)
    ma, mb, mc, md = tl.associative_scan((tl.where(mask, c, 1.0), tl.where(mask, -s, 0.0),
                                          tl.where(mask, s, 0.0) + zero, tl.where(mask, c, one)),
                                         AXIS, _matmul, reverse=REVERSE)
    tl.store(m_ptr + offs * 4, ma, mask=mask)
    tl.store(m_ptr + offs * 4 + 1, mb, mask=mask)
    tl.store(m_ptr + offs * 4 + 2, mc, mask=mask)
    tl.store(m_ptr + offs * 4 + 3, md, mask=mask)
    _, ra = tl.reduce((sign, i), AXIS, _affine)
    first = tl.reduce(x, AXIS, _first)
    arg = tl.argmax(tl.where(mask, x, -float('inf')), AXIS)
    if AXIS == 0:
        j = tl.arange(0, BN)
        keep = j < C
    else:
        j = tl.arange(0, BM)
        keep = j < R
    tl.store(ra_ptr + j, ra, mask=keep)
    tl.store(rf_ptr + j, first, mask=keep)
    tl.store(am_ptr + j, arg, mask=keep)
"""

# (BM, BN, R, C): one slot per thread; runs of slots and repeated blocks (a layout
# repeating along the axis); more threads than elements (copies); ragged everywhere.
SHAPES = [(8, 16, 5, 11), (16, 128, 13, 100), (64, 64, 50, 61), (2, 4, 2, 3), (4, 256, 3, 200)]


def path_args(rng, BM, BN, R, C):
    x = rng.integers(-4, 5, (R, C)).astype(np.float32) + rng.random((R, C)).astype(np.float32)
    i = rng.integers(-9, 10, (R, C)).astype(np.int32)
    i[i == 0] = 3
    return [x, i, np.full((R, C), np.nan, np.float32), np.zeros((R, C), np.int32), np.zeros((R, C), np.int32),
            np.full((R, C, 4), np.nan, np.float32), np.zeros(max(BM, BN), np.int32),
            np.full(max(BM, BN), np.nan, np.float32), np.full(max(BM, BN), -5, np.int32), R, C]


SIGNATURE = "*fp32, *i32, *fp32, *i32, *i32, *fp32, *i32, *fp32, *i32, i32, i32"


def kernel_cuda(BM: int, BN: int, axis: int, reverse: bool, num_warps: int) -> str:
    return compile_text(kernel_source(PATHS), "cuda", kernel="k", signature=SIGNATURE,
                        defines={"BM": BM, "BN": BN, "AXIS": axis, "REVERSE": reverse}, num_warps=num_warps)


def path_comments(cuda: str) -> list[str]:
    """The comment that opens each reduce and scan: which path it took."""
    return [line.strip() for line in cuda.splitlines() if line.strip().startswith(("// scan @", "// reduce @"))]


# One long ragged row: many blocks (repetitions of the layout) along the axis, split by
# every lane and warp: the reduces take halving rounds (warp_scan.emit_reduce_scatter).
LONG_ROW = COMBINES + """
@mytriton.jit
def k(x_ptr, i_ptr, s_ptr, h_ptr, out_ptr, n, BLOCK: tl.constexpr):
    t = tl.arange(0, BLOCK)
    mask = t < n
    x = tl.load(x_ptr + t, mask=mask, other=0.0)
    i = tl.load(i_ptr + t, mask=mask, other=0)
    tl.store(s_ptr + t, tl.cumsum(x, 0), mask=mask)
    sign = tl.where((i % 2) == 0, 1, -1)
    _, h = tl.associative_scan((sign, i), 0, _affine, reverse=True)
    tl.store(h_ptr + t, h, mask=mask)
    _, ra = tl.reduce((sign, i), 0, _affine)
    tl.store(out_ptr, ra)
    tl.store(out_ptr + 1, tl.argmax(tl.where(mask, x, -float('inf')), 0))
    tl.store(out_ptr + 2, tl.reduce(i, 0, _first))
"""
LONG_SIGNATURE = "*fp32, *i32, *fp32, *i32, *i32, i32"


def long_row_args(rng, n, block):
    x = rng.standard_normal(block).astype(np.float32)
    i = rng.integers(-9, 10, block).astype(np.int32)
    return [x, i, np.full(block, np.nan, np.float32), np.zeros(block, np.int32), np.zeros(3, np.int32), n]


# ---- which path --------------------------------------------------------------------------------


CUMSUM_1D = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr + i, tl.cumsum(x, 0), mask=i < n)
"""

CUMSUM_ROWS = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + row * n + i, mask=i < n, other=0.0)
    tl.store(out_ptr + row * n + i, tl.cumsum(x, 1), mask=i < n)
"""


@pytest.mark.parametrize("body", [CUMSUM_1D, CUMSUM_ROWS], ids=["1d", "row"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_a_plain_cumsum_takes_warp_shuffles_without_staging_its_elements(body, num_warps):
    block = 1024
    cuda = compile_text(kernel_source(body), "cuda", kernel="k", defines={"BLOCK": block}, num_warps=num_warps)
    (comment,) = path_comments(cuda)
    assert "by warp shuffles" in comment
    assert "__shfl_up_sync" in cuda
    header = json.loads(cuda.splitlines()[0].split(": ", 1)[1])
    # shared memory holds one value per warp and repetition of the layout (none with one
    # warp), never the tile's elements
    if num_warps == 1:
        assert header["shared_bytes"] == 0
    else:
        assert 0 < header["shared_bytes"] <= 4 * block // 32


def test_a_reduce_on_the_fast_path_exchanges_lanes_with_xor_shuffles():
    cuda = kernel_cuda(16, 128, 1, False, 4)
    reduces = [c for c in path_comments(cuda) if c.startswith("// reduce")]
    assert reduces and all("by warp shuffles" in c for c in reduces)
    assert "__shfl_xor_sync" in cuda


def test_a_reverse_scan_takes_values_from_the_lanes_above():
    cuda = kernel_cuda(16, 128, 1, True, 4)
    assert "__shfl_down_sync" in cuda


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_every_blocked_layout_of_these_tiles_takes_the_fast_path(shape, axis, num_warps):
    BM, BN, _, _ = shape
    comments = path_comments(kernel_cuda(BM, BN, axis, False, num_warps))
    assert len(comments) == 7 and all("by warp shuffles" in c for c in comments)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_a_reduce_over_many_blocks_halves_instead_of_a_butterfly_per_block(num_warps):
    cuda = compile_text(kernel_source(LONG_ROW), "cuda", kernel="k", defines={"BLOCK": 4096},
                        signature=LONG_SIGNATURE, num_warps=num_warps)
    reduces = [c for c in path_comments(cuda) if c.startswith("// reduce")]
    assert len(reduces) == 3
    assert cuda.count("halving round(s)") == 3
    assert cuda.count("__shfl_xor_sync") < 3 * 2 * 32  # a butterfly per block: blocks x 5 rounds each


WHOLE_TILE = COMBINES + """
@mytriton.jit
def k(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr, tl.reduce(tl.load(x_ptr + offs), None, _first))
"""


def test_a_whole_tile_reduce_of_a_2d_tile_falls_back_to_shared_memory():
    cuda = compile_text(kernel_source(WHOLE_TILE), "cuda", kernel="k", defines={"BM": 8, "BN": 32}, num_warps=4)
    comments = path_comments(cuda)
    assert comments and all("through shared memory" in c for c in comments)


# ---- nvcc ------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[1], SHAPES[3]])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("num_warps", [1, 8])
def test_cuda_of_both_paths_builds_with_nvcc(shape, axis, reverse, num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    BM, BN, _, _ = shape
    cuda = kernel_cuda(BM, BN, axis, reverse, num_warps)
    ptx = compile_ptx(cuda, "sm_90")
    assert ".entry k(" in ptx
    assert ("__shfl" in cuda) == ("shfl.sync" in ptx)  # lanes along the axis exchange by shuffles


@pytest.mark.nvcc
# One warp holds 128 elements a thread: its build takes nvcc 16-21 s on 2 cores, the slow tier's.
@pytest.mark.parametrize("num_warps", tiered([1, 8], slow=[1]))
def test_cuda_of_a_long_row_builds_with_nvcc(num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(LONG_ROW), "cuda", kernel="k", defines={"BLOCK": 4096},
                        signature=LONG_SIGNATURE, num_warps=num_warps)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
def test_cuda_of_the_fallback_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(WHOLE_TILE), "cuda", kernel="k", defines={"BM": 8, "BN": 32}, num_warps=4)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


# ---- on the GPU, against the interpreter -------------------------------------------------------------


def run_both(module, shape, axis, reverse, num_warps):
    BM, BN, R, C = shape
    results = []
    for backend in ("cuda", "interp"):
        args = path_args(np.random.default_rng(BM * BN + R + axis), BM, BN, R, C)
        module.k[(1,)](*args, BM=BM, BN=BN, AXIS=axis, REVERSE=reverse, num_warps=num_warps, backend=backend)
        results.append(args[2:9])
    return results


# Every shape on every warp count but 64x64 on one warp: 128 elements a thread of each of the
# kernel's ten tiles, which nvcc takes 60-80 s to build (ptxas spills 13 KB) and which made the
# GPU suite's tail; a thread's many slots and repeated blocks are the 16x128 tile's on one warp
# (64 a thread) already.
SHAPES_AND_WARPS = [(shape, warps) for shape in SHAPES for warps in (1, 4, 8) if (shape, warps) != (SHAPES[2], 1)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape, num_warps", SHAPES_AND_WARPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_gpu_fast_path_matches_the_interpreter(kernel_module, shape, axis, reverse, num_warps):
    (s, n, h, m, ra, rf, am), (s_, n_, h_, m_, ra_, rf_, am_) = run_both(kernel_module(PATHS), shape, axis, reverse,
                                                                         num_warps)
    np.testing.assert_allclose(s, s_, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(n, n_)
    np.testing.assert_array_equal(h, h_)  # integers: exact, so any change of order shows
    np.testing.assert_allclose(m, m_, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(ra, ra_)
    np.testing.assert_array_equal(rf, rf_)
    np.testing.assert_array_equal(am, am_)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("n, block", [(4000, 4096), (1000, 1024), (5, 64)])
def test_gpu_a_long_row_matches_the_interpreter(kernel_module, num_warps, n, block):
    module = kernel_module(LONG_ROW)
    results = []
    for backend in ("cuda", "interp"):
        args = long_row_args(np.random.default_rng(n), n, block)
        module.k[(1,)](*args, BLOCK=block, num_warps=num_warps, backend=backend)
        results.append(args[2:5])
    (s, h, out), (s_, h_, out_) = results
    np.testing.assert_allclose(s[:n], s_[:n], rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(h[:n], h_[:n])
    np.testing.assert_array_equal(out, out_)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_gpu_fallback_matches_the_interpreter(kernel_module, num_warps):
    module = kernel_module(WHOLE_TILE)
    results = []
    for backend in ("cuda", "interp"):
        x = np.random.default_rng(3).random((8, 32)).astype(np.float32)
        out = np.full(1, np.nan, np.float32)
        module.k[(1,)](x, out, BM=8, BN=32, num_warps=num_warps, backend=backend)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
