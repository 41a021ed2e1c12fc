"""``tl.sort`` and ``tl.flip`` (also ``x.sort()``, ``x.flip()``): Triton's
sorting functions (its language/standard.py), written as @jit helpers over
ordinary shape ops in mytriton's kernel language.

This file is kernel source: the frontend reads it with ``ast`` and traces
these functions as it traces a user's helpers (frontend/library.py), every
op they make located at the kernel's call (``tl.sort(...)``'s line). No op
is special to sorting: the interpreter, folding and the CUDA back end run
the network as they run any reshape, permute, split, join and select.

Both act on the last dimension (as in Triton: another ``dim`` is an error),
whose size, and the tile's number of elements, must be powers of two.

Both are built from one move: the tile viewed as [M, 2, D] (D = 2**j), each
element paired with the one D further along the last axis. ``_halves``
takes the two members of every pair apart ([M, D] each, by a permute to
[M, D, 2] and a split) and ``_pairs`` puts two such halves back. Moving
whole elements keeps every bit (NaN payloads, -0.0) in every dtype.

``sort`` is a bitonic network: for rows of 2**n elements, stages
s = 1..n, each of s compare-exchange steps between the elements 2**j apart
(j = s-1 down to 0); a pair is put in ascending order where bit s of its
index is 0 and in descending order elsewhere, the last stage in the order
asked for. A pair swaps where

    (left > right) != descending

as in Triton 3.x's network: a NaN compares false, so a pair holding one
keeps its order where the pair is ascending and swaps where it is
descending. The result is always a permutation of each row.

``flip`` swaps the two halves of every pair, for each j: the last index's
bits all inverted.
"""
import mytriton
import mytriton.language as tl


@mytriton.jit
def _log2(n: tl.constexpr):
    """log2(n) of a power of two n (checked by the caller)."""
    log: tl.constexpr = 0
    for i in tl.static_range(1, 63):
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
def _halves(x, j: tl.constexpr):
    """Every element paired with the one 2**j further along the last axis:
    (left, right), each of shape [numel / 2**(j+1), 2**j]."""
    numel: tl.constexpr = _numel(x)
    d: tl.constexpr = 1 << j
    m: tl.constexpr = numel // (2 * d)
    y = tl.permute(tl.reshape(x, (m, 2, d)), (0, 2, 1))
    return tl.split(y)


@mytriton.jit
def _pairs(left, right, shape):
    """The inverse of ``_halves``: the pairs (left, right) back as a tile of ``shape``."""
    y = tl.permute(tl.join(left, right), (0, 2, 1))
    return tl.reshape(y, shape)


@mytriton.jit
def _compare_exchange(x, j: tl.constexpr, s: tl.constexpr, n: tl.constexpr, descending: tl.constexpr):
    """Step j of stage s: each pair of elements 2**j apart along the last
    axis (of size 2**n) ordered, ascending where bit s of its index is 0;
    in the last stage (s == n), all of them as ``descending`` says."""
    left, right = _halves(x, j)
    greater = left > right
    if s == n:
        if descending:
            swap = ~greater
        else:
            swap = greater
    else:
        # Bit s of a pair's index along the last axis is bit s - j - 1 of
        # its row in the [M, 2**j] view: rows are 2**(j+1) elements long.
        m: tl.constexpr = left.shape[0]
        down = ((tl.arange(0, m) >> (s - j - 1)) & 1)[:, None] == 1
        swap = greater != down
    new_left = tl.where(swap, right, left)
    new_right = tl.where(swap, left, right)
    return _pairs(new_left, new_right, x.shape)


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
    n: tl.constexpr = _log2(x.shape[len(x.shape) - 1])
    for s in tl.static_range(1, n + 1):
        for step in tl.static_range(s):
            x = _compare_exchange(x, s - 1 - step, s, n, descending)
    return x


@mytriton.jit
def flip(x, dim=None):
    """x with its last dimension reversed."""
    tl.static_assert(len(x.shape) >= 1, "tl.flip needs a tile, not a scalar")
    tl.static_assert(_is_last_dim(x, dim), "tl.flip flips the last dimension only (dim=None, -1 or "
                                           "the rank - 1), as in Triton")
    tl.static_assert(_is_power_of_two(x.shape[len(x.shape) - 1]),
                     "tl.flip needs the size of the last dimension to be a power of two")
    tl.static_assert(_is_power_of_two(_numel(x)), "tl.flip needs the number of elements to be a power of two")
    n: tl.constexpr = _log2(x.shape[len(x.shape) - 1])
    for j in tl.static_range(n):
        left, right = _halves(x, j)
        x = _pairs(right, left, x.shape)
    return x
