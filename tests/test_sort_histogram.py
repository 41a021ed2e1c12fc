"""tl.sort, tl.flip and tl.histogram: Triton's semantics in the interpreter
(against NumPy), the located errors for bad arguments, the CUDA that nvcc
builds, and (on the GPU) agreement with the interpreter.

tl.sort and tl.flip are library functions (mytriton/language/sorting.py): a
bitonic network over reshape, permute, split, join and where. tl.histogram
is one op (``histogram``), counted in shared memory on the GPU."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source, tiered
from mytriton.diagnostics import CompileError

NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32,
      "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64}
SIGNATURE = {"i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8", "u32": "u32", "u64": "u64",
             "f16": "fp16", "f32": "fp32", "f64": "fp64"}
SORT_DTYPES = ("i8", "i16", "i32", "i64", "u8", "u32", "u64", "f16", "f32", "f64")

SORT = """
@mytriton.jit
def k(x_ptr, sorted_ptr, flipped_ptr, R: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.program_id(0) * R * N + tl.arange(0, R)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(sorted_ptr + offs, tl.sort(x, descending=DESCENDING))
    tl.store(flipped_ptr + offs, tl.flip(x))
"""

SORT_1D = """
@mytriton.jit
def k(x_ptr, sorted_ptr, flipped_ptr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(sorted_ptr + offs, tl.sort(x, 0, DESCENDING))
    tl.store(flipped_ptr + offs, x.flip(dim=0))
"""

# A ragged row: the missing elements load as the largest value, sort last
# and are not stored.
SORT_RAGGED = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BIG, N: tl.constexpr):
    offs = tl.arange(0, N)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=BIG)
    tl.store(out_ptr + offs, x.sort(), mask=m)
"""

HISTOGRAM = """
@mytriton.jit
def hist(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    h = tl.histogram(x, BINS, mask=m)
    tl.store(out_ptr + tl.program_id(0) * BINS + tl.arange(0, BINS), h)
"""


def _values(rng, dtype: str, shape, low: int = -20, high: int = 20) -> np.ndarray:
    """Random non-zero values with many duplicates: small integers (of both
    signs where signed), or floats on a grid of quarters."""
    if dtype.startswith("f"):
        x = (np.round(rng.standard_normal(shape) * 8) / 4).astype(NP[dtype])
        x[x == 0] = 0.5
        return x
    if dtype.startswith("u"):
        return rng.integers(1, 40, shape).astype(NP[dtype])
    x = rng.integers(low, high, shape).astype(NP[dtype])
    x[x == 0] = 3
    return x


def _run_sort(kernel_module, x: np.ndarray, descending: bool, backend: str = "interp", num_warps: int = 4,
              programs: int = 1):
    sorted_, flipped = np.zeros_like(x), np.zeros_like(x)
    if x.ndim == 1:
        module = kernel_module(SORT_1D)
        n = x.shape[0] // programs
        module.k[(programs,)](x, sorted_, flipped, N=n, DESCENDING=descending, backend=backend, num_warps=num_warps)
    else:
        module = kernel_module(SORT)
        r, n = x.shape[0] // programs, x.shape[1]
        module.k[(programs,)](x, sorted_, flipped, R=r, N=n, DESCENDING=descending, backend=backend,
                              num_warps=num_warps)
    return sorted_, flipped


def _bitonic_reference(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton 3.9's network (language/standard.py, sort_impl) on each row of
    x, in NumPy: stage s, step j compare the elements 2**j apart; each member
    decides alone: the left one takes the right one's value where
    (left > right) != down, the right one the left one's where
    (right > left) == down (down: the pair's order is descending). A NaN
    compares false, and so do +0.0 and -0.0 either way: such a pair ends up
    as two copies of one of its elements."""
    x = x.copy()
    n_elems = x.shape[-1]
    n = n_elems.bit_length() - 1
    index = np.arange(n_elems)
    for s in range(1, n + 1):
        for j in range(s - 1, -1, -1):
            left = index[(index >> j) & 1 == 0]
            right = left + (1 << j)
            down = bool(descending) if s == n else ((left >> s) & 1) == 1
            a, b = x[..., left].copy(), x[..., right].copy()
            with np.errstate(invalid="ignore"):
                x[..., left] = np.where((a > b) != down, b, a)
                x[..., right] = np.where((b > a) == down, a, b)
    return x


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.itemsize}")


# ---- tl.sort in the interpreter -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_a_vector_as_np_sort(kernel_module, dtype, descending):
    rng = np.random.default_rng(len(dtype) + 7 * descending)
    x = _values(rng, dtype, 64)
    sorted_, _ = _run_sort(kernel_module, x, descending)
    expected = np.sort(x)[::-1] if descending else np.sort(x)
    np.testing.assert_array_equal(sorted_, expected)


@pytest.mark.parametrize("dtype", ["i32", "u32", "f32", "f16"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_each_row_of_a_2d_tile(kernel_module, dtype, descending):
    rng = np.random.default_rng(3)
    x = _values(rng, dtype, (8, 32))
    sorted_, _ = _run_sort(kernel_module, x, descending)
    expected = np.sort(x, axis=1)
    np.testing.assert_array_equal(sorted_, expected[:, ::-1] if descending else expected)


@pytest.mark.parametrize("n", [1, 2, 4, 512])
def test_sort_takes_rows_of_every_power_of_two_length(kernel_module, n):
    x = _values(np.random.default_rng(n), "i32", (2, n), -1000, 1000)
    sorted_, _ = _run_sort(kernel_module, x, False)
    np.testing.assert_array_equal(sorted_, np.sort(x, axis=1))


def test_sort_of_many_programs_sorts_each_programs_tile(kernel_module):
    x = _values(np.random.default_rng(5), "f32", (4 * 16,))
    sorted_, _ = _run_sort(kernel_module, x, False, programs=4)
    np.testing.assert_array_equal(sorted_, np.sort(x.reshape(4, 16), axis=1).reshape(-1))


def test_sort_of_a_ragged_row_loaded_with_a_large_fill_sorts_the_loaded_part(kernel_module):
    x = _values(np.random.default_rng(9), "f32", 100)
    out = np.full(128, -7.0, np.float32)
    kernel_module(SORT_RAGGED).k[(1,)](x, out, 100, 1e30, N=128, backend="interp")
    np.testing.assert_array_equal(out[:100], np.sort(x))
    np.testing.assert_array_equal(out[100:], -7.0)


def test_sort_orders_infinities_and_signed_zeros_as_tritons_network(kernel_module):
    x = np.array([0.0, -0.0, np.inf, -np.inf, 1.5, -0.0, 0.0, -2.5], np.float32)
    sorted_, _ = _run_sort(kernel_module, x, False)
    np.testing.assert_array_equal(sorted_, np.sort(x))  # as numbers
    np.testing.assert_array_equal(_bits(sorted_), _bits(_bitonic_reference(x, False)))  # zeros' signs as Triton's


@pytest.mark.parametrize("descending", [False, True])
def test_sort_places_nans_where_tritons_network_does(kernel_module, descending):
    # A NaN compares false: what a pair holding one becomes depends on the
    # network, which is Triton 3.9's, bit for bit.
    rng = np.random.default_rng(2 + descending)
    x = _values(rng, "f32", (4, 16))
    x[rng.random(x.shape) < 0.2] = np.nan
    x[0, 3] = np.float32(np.nan) * -1  # another NaN payload
    sorted_, _ = _run_sort(kernel_module, x, descending)
    np.testing.assert_array_equal(_bits(sorted_), _bits(_bitonic_reference(x, descending)))


def test_the_reference_network_loses_an_element_of_a_pair_with_a_nan_as_tritons_does():
    x = np.array([[np.nan, 3.0], [3.0, np.nan]], np.float32)
    np.testing.assert_array_equal(_bits(_bitonic_reference(x, False)), _bits(x[:, [0, 0]]))


def test_the_reference_network_sorts_as_np_sort_without_nans():
    x = _values(np.random.default_rng(4), "i32", (3, 64), -50, 50)
    np.testing.assert_array_equal(_bitonic_reference(x, False), np.sort(x, axis=1))
    np.testing.assert_array_equal(_bitonic_reference(x, True), np.sort(x, axis=1)[:, ::-1])


def test_sort_of_booleans_puts_false_first(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs) > 0).to(tl.int32))
    """)
    x = _values(np.random.default_rng(1), "i32", 32)
    out = np.zeros(32, np.int32)
    module.k[(1,)](x, out, N=32, backend="interp")
    np.testing.assert_array_equal(out, np.sort((x > 0).astype(np.int32)))


def test_sort_accepts_the_last_dim_by_index_and_as_minus_one(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, a_ptr, b_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
        x = tl.load(x_ptr + offs)
        tl.store(a_ptr + offs, tl.sort(x, dim=1))
        tl.store(b_ptr + offs, tl.sort(x, dim=-1, descending=True))
    """)
    x = _values(np.random.default_rng(6), "f32", (8, 8))
    a, b = np.zeros_like(x), np.zeros_like(x)
    module.k[(1,)](x, a, b, N=8, backend="interp")
    np.testing.assert_array_equal(a, np.sort(x, axis=1))
    np.testing.assert_array_equal(b, np.sort(x, axis=1)[:, ::-1])


# ---- tl.flip in the interpreter --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["i8", "i32", "u64", "f16", "f32", "f64"])
def test_flip_reverses_a_vector(kernel_module, dtype):
    x = _values(np.random.default_rng(len(dtype)), dtype, 128)
    _, flipped = _run_sort(kernel_module, x, False)
    np.testing.assert_array_equal(flipped, x[::-1])


def test_flip_reverses_each_row_of_a_2d_tile_keeping_nan_payloads(kernel_module):
    x = _values(np.random.default_rng(8), "f32", (4, 16))
    x[1, 2] = np.nan
    x[2, 5] = -np.float32(np.nan)
    _, flipped = _run_sort(kernel_module, x, False)
    np.testing.assert_array_equal(_bits(flipped), _bits(x[:, ::-1]))


FLIP_3D = """
@mytriton.jit
def k(x_ptr, a_ptr, b_ptr, c_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    offs = (tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
            + tl.arange(0, C)[None, None, :])
    x = tl.load(x_ptr + offs)
    tl.store(a_ptr + offs, tl.flip(x, 0))
    tl.store(b_ptr + offs, tl.flip(x, dim=-2))
    tl.store(c_ptr + offs, x.flip(2))
"""


def _run_flip_3d(kernel_module, x: np.ndarray, backend: str = "interp", num_warps: int = 4):
    outs = [np.zeros_like(x) for _ in range(3)]
    a, b, c = x.shape
    kernel_module(FLIP_3D).k[(1,)](x, *outs, A=a, B=b, C=c, backend=backend, num_warps=num_warps)
    return outs


@pytest.mark.parametrize("shape", [(4, 8, 16), (2, 1, 32), (16, 4, 1)])
def test_flip_reverses_any_dimension_as_tritons_does(kernel_module, shape):
    x = _values(np.random.default_rng(sum(shape)), "f32", shape)
    first, middle, last = _run_flip_3d(kernel_module, x)
    np.testing.assert_array_equal(first, x[::-1])
    np.testing.assert_array_equal(middle, x[:, ::-1])
    np.testing.assert_array_equal(last, x[:, :, ::-1])


# ---- tl.histogram in the interpreter ---------------------------------------------------------------------


# A histogram of a reduction's result (a sliced layout, replicated across
# the reduced dimension's threads) and one accumulated in a runtime loop.
HISTOGRAM_OF_ROW_MAXIMA = """
@mytriton.jit
def k(a_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, BINS: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    a = tl.load(a_ptr + rows[:, None] * C + cols[None, :])
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(tl.max(a, axis=1), BINS))
"""

HISTOGRAM_IN_A_LOOP = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    counts = tl.zeros((BINS,), tl.int32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        counts += tl.histogram(tl.load(x_ptr + offs, mask=m, other=0), BINS, mask=m)
    tl.store(out_ptr + tl.arange(0, BINS), counts)
"""


def _row_maxima_case(kernel_module, backend: str, num_warps: int = 4):
    a = np.random.default_rng(21).integers(-3, 40, (64, 32)).astype(np.int32)
    out = np.full(32, -1, np.int32)
    kernel_module(HISTOGRAM_OF_ROW_MAXIMA).k[(1,)](a, out, R=64, C=32, BINS=32, backend=backend,
                                                     num_warps=num_warps)
    maxima = a.max(axis=1)
    return out, np.bincount(maxima[maxima < 32], minlength=32)


def _loop_case(kernel_module, backend: str, num_warps: int = 4):
    x = np.random.default_rng(22).integers(-5, 70, 1000).astype(np.int32)
    out = np.full(64, -1, np.int32)
    kernel_module(HISTOGRAM_IN_A_LOOP).k[(1,)](x, out, 1000, BLOCK=128, BINS=64, backend=backend,
                                                  num_warps=num_warps)
    return out, np.bincount(x[(x >= 0) & (x < 64)], minlength=64)


def test_histogram_of_a_reductions_result_counts_each_row_once(kernel_module):
    out, expected = _row_maxima_case(kernel_module, "interp")
    np.testing.assert_array_equal(out, expected)


def test_histograms_accumulated_in_a_runtime_loop_count_every_block(kernel_module):
    out, expected = _loop_case(kernel_module, "interp")
    np.testing.assert_array_equal(out, expected)


def _histogram_reference(x: np.ndarray, n: int, block: int, bins: int) -> np.ndarray:
    programs = -(-n // block)
    out = np.zeros((programs, bins), np.int32)
    for p in range(programs):
        chunk = x[p * block:min(n, (p + 1) * block)].astype(np.int64)
        chunk = chunk[(chunk >= 0) & (chunk < bins)]
        out[p] = np.bincount(chunk, minlength=bins)
    return out


def _run_histogram(kernel_module, x: np.ndarray, n: int, block: int, bins: int, backend: str = "interp",
                   num_warps: int = 4) -> np.ndarray:
    programs = -(-n // block)
    out = np.full((programs, bins), -1, np.int32)
    kernel_module(HISTOGRAM).hist[(programs,)](x, out, n, BLOCK=block, BINS=bins, backend=backend,
                                               num_warps=num_warps)
    return out


@pytest.mark.parametrize("block,bins", [(128, 32), (64, 64), (32, 256), (256, 1)])
def test_histogram_counts_each_value_and_ignores_those_outside_the_bins(kernel_module, block, bins):
    # num_bins below, equal to and above the block size; values below 0 and
    # at or past num_bins are counted nowhere.
    rng = np.random.default_rng(block + bins)
    n = 3 * block - 5  # ragged: the last program's masked-off elements count nowhere
    x = rng.integers(-bins // 2 - 3, bins + bins // 2 + 3, n).astype(np.int32)
    np.testing.assert_array_equal(_run_histogram(kernel_module, x, n, block, bins),
                                  _histogram_reference(x, n, block, bins))


@pytest.mark.parametrize("dtype", ["i32", "u32"])
def test_histogram_counts_signed_and_unsigned_32_bit_integers(kernel_module, dtype):
    rng = np.random.default_rng(len(dtype))
    info = np.iinfo(NP[dtype])
    x = rng.integers(max(info.min, -40), 40, 200).astype(NP[dtype])
    x[:3] = [info.max, info.min, 15]  # extremes: out of range (or bin 0 for unsigned min; u32's max is past i32's)
    np.testing.assert_array_equal(_run_histogram(kernel_module, x, 200, 64, 32),
                                  _histogram_reference(x, 200, 64, 32))


def test_histogram_of_a_masked_tile_leaves_masked_elements_out(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr, BINS: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, x % 3 != 0))
    """)
    x = np.random.default_rng(2).integers(0, 16, 128).astype(np.int32)
    out = np.zeros(16, np.int32)
    module.k[(1,)](x, out, BLOCK=128, BINS=16, backend="interp")
    np.testing.assert_array_equal(out, np.bincount(x[x % 3 != 0], minlength=16))


def test_histogram_is_a_tile_method_with_a_constant_mask(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.store(out_ptr + tl.arange(0, BLOCK), x.histogram(BLOCK, mask=True) + tl.histogram(x, BLOCK, False))
    """)
    x = np.random.default_rng(4).integers(1, 9, 16).astype(np.int32)
    out = np.zeros(16, np.int32)
    module.k[(1,)](x, out, BLOCK=16, backend="interp")
    np.testing.assert_array_equal(out, np.bincount(x, minlength=16))


def test_histogram_is_an_op_with_its_bins_as_an_attribute_and_an_i32_result():
    ssa = compile_text(kernel_source(HISTOGRAM), "ssa", signature="*u32, *i32, i32",
                       defines={"BLOCK": 64, "BINS": 8})
    line = next(text for text in ssa.splitlines() if "histogram" in text)
    assert "num_bins=8 : vector<8 x i32>" in line


def test_histogram_shows_its_layouts_in_the_laid_out_ssa():
    laid_out = compile_text(kernel_source(HISTOGRAM), "layouts", signature="*i32, *i32, i32",
                            defines={"BLOCK": 64, "BINS": 8})
    line = next(text for text in laid_out.splitlines() if "histogram" in text)
    assert "vector<8 x i32, #" in line


# ---- located errors --------------------------------------------------------------------------------------


def _error(body: str, signature: str, **defines) -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(body), "ssa", signature=signature, defines=defines)
    return info.value


def _line_of(body: str, text: str) -> int:
    lines = kernel_source(body).splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_sort_along_another_dim_than_the_last_is_a_located_error():
    body = """
    @mytriton.jit
    def k(x_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
        tl.store(x_ptr + offs, tl.sort(tl.load(x_ptr + offs), dim=0))
    """
    err = _error(body, "*fp32", N=8)
    assert "tl.sort sorts along the last dimension only" in str(err)
    assert err.loc.line == _line_of(body, "tl.sort(")


def test_flip_along_a_dim_out_of_range_is_a_located_error():
    body = """
    @mytriton.jit
    def k(x_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
        tl.store(x_ptr + offs, tl.flip(tl.load(x_ptr + offs), 2))
    """
    err = _error(body, "*fp32", N=8)
    assert "tl.flip: dim must be None or in [-rank, rank)" in str(err)
    assert err.loc.line == _line_of(body, "tl.flip(")


def test_sort_of_a_scalar_is_a_located_error():
    body = """
    @mytriton.jit
    def k(x_ptr):
        tl.store(x_ptr, tl.sort(tl.load(x_ptr)))
    """
    err = _error(body, "*fp32")
    assert "tl.sort needs a tile, not a scalar" in str(err)
    assert err.loc.line == _line_of(body, "tl.sort(")


@pytest.mark.parametrize("descending,message", [
    ("2", "tl.sort: descending must be True or False (a constant)"),
    ("d", "parameter 'descending' is a tl.constexpr, but its argument is a value computed at run time"),
])
def test_sort_order_that_is_not_a_constant_flag_is_a_located_error(descending, message):
    body = f"""
    @mytriton.jit
    def k(x_ptr, d, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(x_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending={descending}))
    """
    err = _error(body, "*fp32, i32", N=8)
    assert message in str(err)
    assert err.loc.line == _line_of(body, "tl.sort(")


def test_a_sort_length_that_is_not_a_power_of_two_cannot_be_made():
    # Every tile dimension is a power of two, so a row of 12 is refused where it is made.
    body = """
    @mytriton.jit
    def k(x_ptr):
        tl.store(x_ptr + tl.arange(0, 16), tl.sum(tl.sort(tl.zeros((12,), tl.float32))))
    """
    err = _error(body, "*fp32")
    assert "powers of two" in str(err)
    assert err.loc.line == _line_of(body, "tl.zeros(")


def test_histogram_bins_from_a_runtime_value_are_a_located_error():
    body = """
    @mytriton.jit
    def k(x_ptr, nbins, BLOCK: tl.constexpr):
        h = tl.histogram(tl.load(x_ptr + tl.arange(0, BLOCK)), nbins)
        tl.store(x_ptr + tl.arange(0, BLOCK), h)
    """
    err = _error(body, "*i32, i32", BLOCK=16)
    assert "num_bins must be an integer constant (a tl.constexpr)" in str(err)
    assert err.loc.line == _line_of(body, "tl.histogram(")


@pytest.mark.parametrize("bins", [12, 0, -4])
def test_histogram_bins_that_are_not_a_positive_power_of_two_are_a_located_error(bins):
    body = f"""
    @mytriton.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        h = tl.histogram(tl.load(x_ptr + tl.arange(0, BLOCK)), {bins})
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.sum(h))
    """
    err = _error(body, "*i32", BLOCK=16)
    assert "the number of bins must be a positive power of two" in str(err)
    assert err.loc.line == _line_of(body, "tl.histogram(")


@pytest.mark.parametrize("body,message", [
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)).to(tl.float32), 16)",
     "'histogram' counts 32-bit integers (i32 or u32, as Triton's), not f32"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)).to(tl.int8), 16)", "counts 32-bit integers"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)).to(tl.int64), 16)", "counts 32-bit integers"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)) > 0, 16)", "counts 32-bit integers"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16))[:, None] + tl.zeros((16, 2), tl.int32), 16)",
     "counts the values of a 1-D tile"),
    ("h = tl.histogram(tl.load(x_ptr), 16)", "counts the values of a 1-D tile (as Triton's), got i32"),
    ("h = tl.histogram(3, 16)", "tl.histogram needs a 1-D tile of 32-bit integers, got"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)), 16, mask=tl.arange(0, 16))",
     "the mask of 'histogram' must be boolean"),
    ("h = tl.histogram(tl.load(x_ptr + tl.arange(0, 16)), 16, mask=1)", "mask must be a boolean tile"),
])
def test_bad_histogram_arguments_are_located_errors(body, message):
    source = f"""
    @mytriton.jit
    def k(x_ptr):
        {body}
        tl.store(x_ptr + tl.arange(0, 16), tl.sum(h))
    """
    err = _error(source, "*i32")
    assert message in str(err)
    assert err.loc.line == _line_of(source, "tl.histogram(")


def test_histogram_bins_past_the_shared_memory_budget_are_a_located_error():
    body = """
    @mytriton.jit
    def k(x_ptr, out_ptr):
        h = tl.histogram(tl.load(x_ptr + tl.arange(0, 128)), 4096)
        tl.store(out_ptr + tl.arange(0, 4096), h)
    """
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(body), "cuda", signature="*i32, *i32", shared_budget=8192)
    assert "shared" in str(info.value)
    assert info.value.loc.line == _line_of(body, "tl.histogram(")


def test_the_mlir_back_end_refuses_histograms_at_their_line():
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(HISTOGRAM), "mlir", signature="*i32, *i32, i32", defines={"BLOCK": 64, "BINS": 8})
    assert "tl.histogram is not covered by the MLIR back end" in str(info.value)
    assert info.value.loc.line == _line_of(HISTOGRAM, "tl.histogram(")


def test_ttir_writes_tt_histogram_with_its_mask():
    ttir = compile_text(kernel_source(HISTOGRAM), "ttir", signature="*i32, *i32, i32",
                        defines={"BLOCK": 64, "BINS": 8})
    line = next(text for text in ttir.splitlines() if "tt.histogram" in text)
    assert ": tensor<64xi32> -> tensor<8xi32>" in line and "," in line.split(":")[0]


# ---- CUDA: what nvcc builds ------------------------------------------------------------------------------


def test_a_histogram_counts_in_shared_memory_each_element_by_its_owner_once():
    # 32 elements on 4 warps: copies of each element on spare threads, which count nothing.
    cuda = compile_text(kernel_source(HISTOGRAM), "cuda", signature="*i32, *i32, i32",
                        defines={"BLOCK": 32, "BINS": 64}, num_warps=4)
    bins_line = next(text for text in cuda.splitlines() if "_bin[k] = (" in text)
    assert "L0_p0 < 32" in bins_line or "&&" in bins_line.split("?")[0]
    assert "atomicAdd(&" in cuda and "reinterpret_cast<int*>(smem)" in cuda
    header = cuda.splitlines()[0]
    assert '"shared_bytes": 256' in header  # the 64 bins


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["i32", "u32"])
@pytest.mark.parametrize("block,bins,warps", [(128, 32, 4), (32, 256, 4), (256, 64, 1)])
def test_histograms_build_with_nvcc(dtype, block, bins, warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(HISTOGRAM), "cuda", signature=f"*{SIGNATURE[dtype]}, *i32, i32",
                        defines={"BLOCK": block, "BINS": bins}, num_warps=warps)
    ptx = compile_ptx(cuda, "sm_90")
    assert "atom.shared.add" in ptx or "red.shared.add" in ptx


@pytest.mark.nvcc
@pytest.mark.parametrize("source,signature,defines", [
    (HISTOGRAM_OF_ROW_MAXIMA, "*i32, *i32", {"R": 64, "C": 32, "BINS": 32}),
    (HISTOGRAM_IN_A_LOOP, "*i32, *i32, i32", {"BLOCK": 128, "BINS": 64}),
])
def test_histograms_of_sliced_layouts_and_in_loops_build_with_nvcc(source, signature, defines):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(source), "cuda", signature=signature, defines=defines)
    assert "atom.shared.add" in compile_ptx(cuda, "sm_90").replace("red.shared.add", "atom.shared.add")


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", tiered(["i8", "i32", "u64", "f16", "f32", "f64"], fast=("f32",)))
@pytest.mark.parametrize("rows,n,warps", [(1, 64, 4), (8, 16, 4), (4, 128, 8), (2, 2, 1)])
def test_sort_and_flip_build_with_nvcc(dtype, rows, n, warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(SORT), "cuda", signature=f"*{SIGNATURE[dtype]}, *{SIGNATURE[dtype]}, "
                                                               f"*{SIGNATURE[dtype]}",
                        defines={"R": rows, "N": n, "DESCENDING": rows % 2 == 0}, num_warps=warps)
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("warps", [1, 4])
def test_flips_of_any_dimension_build_with_nvcc(warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(FLIP_3D), "cuda", signature="*fp16, *fp16, *fp16, *fp16",
                        defines={"A": 4, "B": 8, "C": 16}, num_warps=warps)
    assert ".entry" in compile_ptx(cuda, "sm_90")


# ---- on the GPU, against the interpreter -----------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["i8", "u32", "i64", "f16", "f32", "f64"])
@pytest.mark.parametrize("shape,programs,num_warps", [((256,), 2, 4), ((8, 32), 1, 1), ((16, 8), 2, 4),
                                                      ((2, 512), 1, 8)])
def test_gpu_sort_and_flip_match_the_interpreter(kernel_module, dtype, shape, programs, num_warps):
    rng = np.random.default_rng(len(dtype) + len(shape))
    full = (shape[0] * programs,) + shape[1:]
    x = _values(rng, dtype, full, -100, 100)
    for descending in (False, True):
        gpu = _run_sort(kernel_module, x, descending, "cuda", num_warps, programs)
        interp = _run_sort(kernel_module, x, descending, "interp", num_warps, programs)
        np.testing.assert_array_equal(_bits(gpu[0]), _bits(interp[0]))
        np.testing.assert_array_equal(_bits(gpu[1]), _bits(interp[1]))


@pytest.mark.gpu
def test_gpu_sort_places_nans_as_the_interpreter_does(kernel_module):
    rng = np.random.default_rng(12)
    x = _values(rng, "f32", (8, 64))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    for descending in (False, True):
        gpu, _ = _run_sort(kernel_module, x, descending, "cuda")
        interp, _ = _run_sort(kernel_module, x, descending, "interp")
        np.testing.assert_array_equal(_bits(gpu), _bits(interp))


@pytest.mark.gpu
def test_gpu_sort_of_a_ragged_row_matches_the_interpreter(kernel_module):
    x = _values(np.random.default_rng(13), "f32", 1000)
    results = []
    for backend in ("cuda", "interp"):
        out = np.full(1024, -7.0, np.float32)
        kernel_module(SORT_RAGGED).k[(1,)](x, out, 1000, 1e30, N=1024, backend=backend)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["i32", "u32"])
@pytest.mark.parametrize("block,bins,warps", [(128, 32, 4), (32, 256, 4), (1024, 64, 8), (64, 64, 1),
                                              (256, 1, 2)])
def test_gpu_histogram_matches_the_interpreter(kernel_module, dtype, block, bins, warps):
    rng = np.random.default_rng(block + bins)
    n = 5 * block - 7  # ragged
    low = 0 if dtype.startswith("u") else -bins
    x = rng.integers(low, 2 * bins + 3, n).astype(NP[dtype])
    gpu = _run_histogram(kernel_module, x, n, block, bins, "cuda", warps)
    interp = _run_histogram(kernel_module, x, n, block, bins, "interp", warps)
    np.testing.assert_array_equal(gpu, interp)
    np.testing.assert_array_equal(interp, _histogram_reference(x, n, block, bins))


@pytest.mark.gpu
def test_gpu_histogram_of_repeated_values_loses_no_count(kernel_module):
    # Every element in one bin: all threads' shared atomics on one address.
    x = np.full(4096, 3, np.int32)
    gpu = _run_histogram(kernel_module, x, 4096, 1024, 8, "cuda", 4)
    assert (gpu[:, 3] == 1024).all() and gpu.sum() == 4096


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_histograms_of_a_sliced_layout_and_in_a_loop_match_the_interpreter(kernel_module, num_warps):
    for case in (_row_maxima_case, _loop_case):
        gpu, expected = case(kernel_module, "cuda", num_warps)
        interp, _ = case(kernel_module, "interp", num_warps)
        np.testing.assert_array_equal(gpu, interp)
        np.testing.assert_array_equal(gpu, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["i8", "f16", "f32", "i64"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_flip_of_any_dimension_matches_the_interpreter(kernel_module, dtype, num_warps):
    x = _values(np.random.default_rng(31), dtype, (4, 8, 16), -100, 100)
    for gpu, interp in zip(_run_flip_3d(kernel_module, x, "cuda", num_warps),
                           _run_flip_3d(kernel_module, x, "interp", num_warps)):
        np.testing.assert_array_equal(_bits(gpu), _bits(interp))
