"""``tl.cumsum``, ``tl.cumprod``, ``tl.argmax``, ``tl.argmin``, the
index-returning forms of ``tl.max``/``tl.min``, ``tl.xor_sum``,
``tl.reduce_or``, ``tl.ravel`` and ``tl.swizzle2d``: Triton's scans, index
and bitwise reductions and index helpers (its language/standard.py), written
as @jit helpers over ``tl.associative_scan``, ``tl.reduce`` and
``tl.reshape`` in mytriton's kernel language.

This file is kernel source: the frontend reads it with ``ast`` and traces
these functions as it traces a user's helpers (frontend/library.py), every
op they make located at the kernel's call. The combine functions below are
traced into the ``scan``/``reduce`` ops' regions, on scalars.

Semantics follow Triton's: cumsum sums narrow integers (and bools) in 32
bits, keeping their signedness, and bf16 in f32, unless ``dtype`` says
otherwise; argmax/argmin keep, of equal values, the lowest index
(``tie_break_left``; otherwise the one the combining order meets last); a NaN
compares false with everything, as in Triton's combine, so where NaNs are
present which one wins depends on the combining order.
"""
import mytriton
import mytriton.language as tl


@mytriton.jit
def _sum_combine(a, b):
    return a + b


@mytriton.jit
def _prod_combine(a, b):
    return a * b


@mytriton.jit
def _sum_dtype(input, dtype: tl.constexpr):
    """``input`` in the type cumsum accumulates in (Triton's _pick_sum_dtype)."""
    if input.dtype == tl.bfloat16:
        input = input.to(tl.float32)
    if dtype != None:  # noqa: E711 - the kernel language compares constants with ==
        input = input.to(dtype)
    elif input.dtype == tl.uint8 or input.dtype == tl.uint16:
        input = input.to(tl.uint32)
    elif input.dtype == tl.int1 or input.dtype == tl.int8 or input.dtype == tl.int16:
        input = input.to(tl.int32)
    return input


@mytriton.jit
def cumsum(input, axis=0, reverse=False, dtype: tl.constexpr = None):
    """The inclusive running sum along ``axis`` (from the end when ``reverse``)."""
    return tl.associative_scan(_sum_dtype(input, dtype), axis, _sum_combine, reverse)


@mytriton.jit
def cumprod(input, axis=0, reverse=False):
    """The inclusive running product along ``axis`` (from the end when ``reverse``)."""
    if input.dtype == tl.bfloat16:
        input = input.to(tl.float32)
    return tl.associative_scan(input, axis, _prod_combine, reverse)


# ---- index reductions ----------------------------------------------------------
# Each combine keeps the pair (value, index) that wins: the greater (smaller)
# value, and of two equal values the one of lower index when ties break left.


@mytriton.jit
def _argmax_combine(value1, index1, value2, index2, tie_break_left: tl.constexpr):
    if tie_break_left:
        wins = value1 > value2 or (value1 == value2 and index1 < index2)
    else:
        wins = value1 > value2
    return tl.where(wins, value1, value2), tl.where(wins, index1, index2)


@mytriton.jit
def _argmax_combine_tie_break_left(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, True)


@mytriton.jit
def _argmax_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, False)


@mytriton.jit
def _argmin_combine(value1, index1, value2, index2, tie_break_left: tl.constexpr):
    if tie_break_left:
        wins = value1 < value2 or (value1 == value2 and index1 < index2)
    else:
        wins = value1 < value2
    return tl.where(wins, value1, value2), tl.where(wins, index1, index2)


@mytriton.jit
def _argmin_combine_tie_break_left(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, True)


@mytriton.jit
def _argmin_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, False)


@mytriton.jit
def _indices_along(input, axis: tl.constexpr):
    """Each element's index along ``axis``, as an i32 tile of ``input``'s shape."""
    index = tl.arange(0, input.shape[axis])
    for d in tl.static_range(len(input.shape)):
        if d != axis:
            index = tl.expand_dims(index, d)
    return tl.broadcast_to(index, input.shape)


@mytriton.jit
def _numel(input):
    n = 1
    for d in tl.static_range(len(input.shape)):
        n = n * input.shape[d]
    return n


@mytriton.jit
def _with_indices(input, axis, keep_dims, combine_fn):
    """The reduction of ``input`` along ``axis`` (every axis: the row-major
    elements) by ``combine_fn`` over (value, index) pairs."""
    if input.dtype == tl.bfloat16:
        input = input.to(tl.float32)
    if axis == None:  # noqa: E711 - over the whole tile: its elements in row-major order
        axis = 0
        input = tl.reshape(input, (_numel(input),))
    if axis < 0:
        axis = axis + len(input.shape)
    return tl.reduce((input, _indices_along(input, axis)), axis, combine_fn, keep_dims=keep_dims)


@mytriton.jit
def max_with_indices(input, axis, tie_break_left=True, keep_dims=False):
    """``tl.max(input, axis, return_indices=True)``: the maxima and their indices."""
    if tie_break_left:
        values, indices = _with_indices(input, axis, keep_dims, _argmax_combine_tie_break_left)
    else:
        values, indices = _with_indices(input, axis, keep_dims, _argmax_combine_tie_break_fast)
    return values, indices


@mytriton.jit
def min_with_indices(input, axis, tie_break_left=True, keep_dims=False):
    """``tl.min(input, axis, return_indices=True)``: the minima and their indices."""
    if tie_break_left:
        values, indices = _with_indices(input, axis, keep_dims, _argmin_combine_tie_break_left)
    else:
        values, indices = _with_indices(input, axis, keep_dims, _argmin_combine_tie_break_fast)
    return values, indices


@mytriton.jit
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the maximum along ``axis`` (of equal maxima, the first)."""
    _, index = max_with_indices(input, axis, tie_break_left, keep_dims)
    return index


@mytriton.jit
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the minimum along ``axis`` (of equal minima, the first)."""
    _, index = min_with_indices(input, axis, tie_break_left, keep_dims)
    return index


# ---- bitwise reductions ------------------------------------------------------------------------


@mytriton.jit
def _xor_combine(a, b):
    return a ^ b


@mytriton.jit
def _or_combine(a, b):
    return a | b


@mytriton.jit
def xor_sum(input, axis=None, keep_dims=False):
    """The exclusive or of the elements along ``axis`` (every axis: all of them)."""
    tl.static_assert(input.dtype.is_int(), "xor_sum only supported for integers")
    return tl.reduce(input, axis, _xor_combine, keep_dims=keep_dims)


@mytriton.jit
def reduce_or(input, axis, keep_dims=False):
    """The bitwise or of the elements along ``axis``."""
    tl.static_assert(input.dtype.is_int(), "reduce_or only supported for integers")
    return tl.reduce(input, axis, _or_combine, keep_dims=keep_dims)


# ---- shapes and indices ------------------------------------------------------------------------


@mytriton.jit
def ravel(x, can_reorder=False):
    """``x``'s elements as one dimension, in row-major order."""
    return tl.reshape(x, (_numel(x),), can_reorder=can_reorder)


@mytriton.jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """The cell (i, j) of a row-major size_i x size_j grid renumbered so that
    each band of size_g rows is walked column by column (the last band may
    have fewer rows): the grouped order in which Triton's matmul tutorial
    visits C's tiles, so that the programs running together share rows of A
    and columns of B."""
    linear = i * size_j + j
    band_cells = size_g * size_j
    first_row = (linear // band_cells) * size_g
    band_rows = min(size_i - first_row, size_g)
    within = linear % band_cells
    return first_row + within % band_rows, within // band_rows
