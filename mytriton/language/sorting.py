"""``tl.sort`` and ``tl.flip`` (also ``x.sort()``, ``x.flip()``): Triton's
sorting functions (its language/standard.py), written as @jit helpers over
ordinary ops in mytriton's kernel language.

This file is kernel source: the frontend reads it with ``ast`` and traces
these functions as it traces a user's helpers (frontend/library.py), every
op they make located at the kernel's call (``tl.sort(...)``'s line). No op
is special to sorting: the interpreter, folding and the CUDA back end run
the network as they run any reshape, sum and select.

``sort`` acts on the last dimension (as in Triton: another ``dim`` is an
error), ``flip`` on any (the last by default), as Triton 3.9's do.

Both are built from one move: the tile viewed as [M, 2, D] (D = 2**j), each
element paired with the one D further on in row-major order, the pair's two
members along the middle axis. ``_halves`` takes them apart: a sum along
that axis of the tile with the other member zeroed gives each ([M, 1, D],
read back against the [M, 2, D] tile by broadcasting). The sums are of the
elements' bits as integers of their width (one term is zero, so a sum is
exact), which moves whole elements: every bit (NaN payloads, -0.0) is kept
in every dtype. Between steps the working tile goes straight from one
[M, 2, D] view to the next (one reshape: the elements' row-major order is
the row's throughout), and only the end reshapes it back to x's shape.

``sort`` is a bitonic network: for rows of 2**n elements, stages
s = 1..n, each of s compare-exchange steps between the elements 2**j apart
(j = s-1 down to 0); a pair is put in ascending order where bit s of its
index is 0 and in descending order elsewhere, the last stage in the order
asked for. Each member of a pair decides alone, as in Triton 3.9's
network: the left one takes the right one's value where
``(left > right) != descending``, the right one the left one's where
``(right > left) == descending``. A NaN compares false, so (as in Triton)
both members of a pair holding one end up with the same element: sort
NaN-free data.

``flip`` swaps the two members of every pair 2**j * inner apart, for each
bit j of the flipped dimension's index (``inner``: the elements after one
along it): every bit of that index inverted.
"""
import mytriton
import mytriton.language as tl


@mytriton.jit
def _log2(n: tl.constexpr):
    """log2(n) of a power of two n (checked by the caller): at most 20, as a
    tile holds at most 2**20 elements (each iteration counts against the
    trace's unrolling budget)."""
    log: tl.constexpr = 0
    for i in tl.static_range(1, 21):
        if (1 << i) <= n:
            log = i
    return log


@mytriton.jit
def _numel(x):
    numel: tl.constexpr = 1
    for i in tl.static_range(len(x.shape)):
        numel = numel * x.shape[i]
    return numel


@mytriton.jit
def _is_power_of_two(n: tl.constexpr):
    return n >= 1 and (n & (n - 1)) == 0


@mytriton.jit
def _is_last_dim(x, dim):
    """Whether ``dim`` names x's last dimension (None does)."""
    rank: tl.constexpr = len(x.shape)
    return dim == None or dim == rank - 1 or dim == -1  # noqa: E711 - kernel source has no 'is'


@mytriton.jit
def _bits_type(dtype):
    """The signed integer type a dtype's elements move as (bool as int8)."""
    bits: tl.constexpr = dtype.primitive_bitwidth
    if bits <= 8:
        result = tl.int8
    elif bits == 16:
        result = tl.int16
    elif bits == 32:
        result = tl.int32
    else:
        result = tl.int64
    return result


@mytriton.jit
def _to_bits(x):
    if x.dtype == tl.int1:
        y = x.to(tl.int8)
    else:
        y = x.to(_bits_type(x.dtype), bitcast=True)
    return y


@mytriton.jit
def _from_bits(y, dtype):
    if dtype == tl.int1:
        x = y != 0
    else:
        x = y.to(dtype, bitcast=True)
    return x


@mytriton.jit
def _view(bits, d: tl.constexpr):
    """The integer tile ``bits`` viewed as [M, 2, d]: each element paired
    with the one d further on in row-major order (the middle axis picks the
    member)."""
    return tl.reshape(bits, (_numel(bits) // (2 * d), 2, d))


@mytriton.jit
def _halves(y):
    """The pairs' members of a [M, 2, D] integer tile: (left, right), each
    [M, 1, D], and whether each element of y is the right one."""
    is_right = tl.arange(0, 2)[None, :, None] == 1
    zero = tl.zeros_like(y)
    left = tl.sum(tl.where(is_right, zero, y), 1, keep_dims=True).to(y.dtype)
    right = tl.sum(tl.where(is_right, y, zero), 1, keep_dims=True).to(y.dtype)
    return left, right, is_right


@mytriton.jit
def _compare_exchange(y, dtype, j: tl.constexpr, s: tl.constexpr, n: tl.constexpr, descending: tl.constexpr):
    """Step j of stage s on the bits of rows of 2**n elements of ``dtype``,
    viewed as [M, 2, 2**j]: each pair ordered, ascending where bit s of its
    index is 0; in the last stage (s == n), all of them as ``descending``
    says."""
    left, right, is_right = _halves(y)
    left_value = _from_bits(left, dtype)
    right_value = _from_bits(right, dtype)
    if s == n:
        down = descending != 0
    else:
        # Bit s of a pair's index along the row is bit s - j - 1 of its
        # index M in the [M, 2, 2**j] view: rows are 2**(j+1) elements long.
        m: tl.constexpr = y.shape[0]
        down = ((tl.arange(0, m) >> (s - j - 1)) & 1)[:, None, None] == 1
    # Each member decides alone, as in Triton 3.9: the left one takes the
    # right's value where (left > right) != down, the right one the left's
    # where (right > left) == down. Without NaNs that orders the pair (the
    # left member keeps the smaller value, ascending); a NaN compares false,
    # so both members of a pair holding one end up with the same element.
    new_left = tl.where((left_value > right_value) != down, right, left)
    new_right = tl.where((right_value > left_value) == down, left, right)
    return tl.where(is_right, new_right, new_left)


@mytriton.jit
def sort(x, dim=None, descending: tl.constexpr = 0):
    """x sorted along its last dimension (ascending, or descending when
    ``descending`` is true), by a bitonic network."""
    tl.static_assert(len(x.shape) >= 1, "tl.sort needs a tile, not a scalar")
    tl.static_assert(_is_last_dim(x, dim), "tl.sort sorts along the last dimension only (dim=None, -1 or "
                                           "the rank - 1), as in Triton")
    tl.static_assert(_is_power_of_two(x.shape[len(x.shape) - 1]),
                     "tl.sort needs the size of the last dimension to be a power of two")
    tl.static_assert(_is_power_of_two(_numel(x)), "tl.sort needs the number of elements to be a power of two")
    # (a runtime value here is refused too: a static_assert needs a constant)
    tl.static_assert(descending == 0 or descending == 1, "tl.sort: descending must be True or False (a constant)")
    n: tl.constexpr = _log2(x.shape[len(x.shape) - 1])
    y = _to_bits(x)
    for s in tl.static_range(1, n + 1):
        for step in tl.static_range(s):
            y = _compare_exchange(_view(y, 1 << (s - 1 - step)), x.dtype, s - 1 - step, s, n, descending)
    return _from_bits(tl.reshape(y, x.shape), x.dtype)


@mytriton.jit
def flip(x, dim=None):
    """x reversed along ``dim`` (the last dimension when None; a negative
    one counts from the end), as Triton 3.9's."""
    tl.static_assert(len(x.shape) >= 1, "tl.flip needs a tile, not a scalar")
    rank: tl.constexpr = len(x.shape)
    axis: tl.constexpr = rank - 1
    if dim != None:  # noqa: E711 - kernel source has no 'is'
        axis = dim
        if dim < 0:
            axis = dim + rank
    tl.static_assert(0 <= axis and axis < rank, "tl.flip: dim must be None or in [-rank, rank)")
    tl.static_assert(_is_power_of_two(x.shape[axis]), "tl.flip needs the size of its dimension to be a power of two")
    # The elements after one along ``axis`` (their count is a power of two,
    # as every dimension's): its index's bit j is bit j of the row-major
    # position counted in blocks of that many.
    inner: tl.constexpr = 1
    for i in tl.static_range(axis + 1, rank):
        inner = inner * x.shape[i]
    y = _to_bits(x)
    for j in tl.static_range(_log2(x.shape[axis])):
        left, right, is_right = _halves(_view(y, (1 << j) * inner))
        y = tl.where(is_right, left, right)
    return _from_bits(tl.reshape(y, x.shape), x.dtype)


@mytriton.jit
def _pair_extreme(y, dtype, k: tl.constexpr, descending: tl.constexpr):
    """Each k-block of the bits ``y`` paired with the next (blocks 2b and
    2b+1 of every row, viewed [M, 2, k]) and the larger (``descending``) or
    smaller elements of each pair kept: [M, k], in the blocks' order."""
    values = _from_bits(_view(y, k), dtype)
    if descending:
        kept = tl.max(values, axis=1)
    else:
        kept = tl.min(values, axis=1)
    return _to_bits(kept)


@mytriton.jit
def topk(x, k: tl.constexpr, dim=None, descending: tl.constexpr = True):
    """The k largest elements of each row of x (its last dimension), largest
    first; the k smallest, smallest first, with ``descending`` false. As
    Triton 3.9's: k a power of two no larger than the row.

    A bitonic top-k: the rows sorted in blocks of k, neighbouring blocks in
    opposite orders (the sort's first log2(k) stages); then, while a row
    holds more than one block, each pair of neighbouring blocks becomes the
    elementwise larger of the two (a bitonic block holding the pair's k
    largest), which one merge puts back in order (alternating, and in the
    order asked for at the last)."""
    tl.static_assert(len(x.shape) >= 1, "tl.topk needs a tile, not a scalar")
    tl.static_assert(_is_last_dim(x, dim), "tl.topk selects along the last dimension only (dim=None, -1 or "
                                           "the rank - 1), as in Triton")
    row: tl.constexpr = x.shape[len(x.shape) - 1]
    tl.static_assert(_is_power_of_two(row), "tl.topk needs the size of the last dimension to be a power of two")
    tl.static_assert(_is_power_of_two(_numel(x)), "tl.topk needs the number of elements to be a power of two")
    tl.static_assert(k >= 1 and _is_power_of_two(k), "tl.topk: k must be a positive power of two")
    tl.static_assert(k <= row, "tl.topk: k must not exceed the size of the last dimension")
    tl.static_assert(descending == 0 or descending == 1, "tl.topk: descending must be True or False (a constant)")
    n: tl.constexpr = _log2(row)
    log_k: tl.constexpr = _log2(k)
    y = _to_bits(x)
    for s in tl.static_range(1, log_k + 1):
        for step in tl.static_range(s):
            y = _compare_exchange(_view(y, 1 << (s - 1 - step)), x.dtype, s - 1 - step, s, n, descending)
    for level in tl.static_range(log_k, n):
        y = _pair_extreme(y, x.dtype, k, descending)
        # The last level orders each block as asked; the others alternate by block (bit log_k of the index).
        last: tl.constexpr = log_k + 1 if level < n - 1 else log_k
        for step in tl.static_range(log_k):
            y = _compare_exchange(_view(y, 1 << (log_k - 1 - step)), x.dtype, log_k - 1 - step, log_k, last,
                                  descending)
    shape: tl.constexpr = x.shape[:len(x.shape) - 1] + (k,)
    return _from_bits(tl.reshape(y, shape), x.dtype)


@mytriton.jit
def bitonic_merge(x, dim=None, descending: tl.constexpr = 0):
    """Each row of x (its last dimension), a bitonic sequence, merged into
    order: ascending, or descending when ``descending`` is true (the last
    stage of tl.sort's network alone), as Triton 3.9's."""
    tl.static_assert(len(x.shape) >= 1, "tl.bitonic_merge needs a tile, not a scalar")
    tl.static_assert(_is_last_dim(x, dim), "tl.bitonic_merge merges along the last dimension only, as in Triton")
    tl.static_assert(_is_power_of_two(x.shape[len(x.shape) - 1]),
                     "tl.bitonic_merge needs the size of the last dimension to be a power of two")
    tl.static_assert(_is_power_of_two(_numel(x)), "tl.bitonic_merge needs the number of elements to be a power of two")
    tl.static_assert(descending == 0 or descending == 1, "tl.bitonic_merge: descending must be True or False")
    n: tl.constexpr = _log2(x.shape[len(x.shape) - 1])
    y = _to_bits(x)
    for step in tl.static_range(n):
        y = _compare_exchange(_view(y, 1 << (n - 1 - step)), x.dtype, n - 1 - step, n, n, descending)
    return _from_bits(tl.reshape(y, x.shape), x.dtype)
