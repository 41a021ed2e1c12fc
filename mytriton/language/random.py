"""``tl.rand``, ``tl.randn``, ``tl.randint``, ``tl.randint4x``, ``tl.philox``
(also as ``tl.random.<name>``): Triton's counter-based random numbers,
written as Triton writes them (python/triton/language/random.py, Triton
3.x), as @jit helpers over ordinary ops in mytriton's kernel language.

This file is kernel source: the frontend reads it with ``ast`` and traces
these functions as it traces a user's helpers (frontend/library.py), every
op they make located at the kernel's call (``tl.rand(...)``'s line). No op
is special to random numbers, so the interpreter, folding and the CUDA
back end compute them as they compute any u32 arithmetic.

Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC 2011): four 32-bit counters (the offset: its low word, its high
word for a 64-bit offset, then two zeros) and a two-word key (the seed's
low and high words), ten rounds of two 32x32->64-bit products with
Triton's constants. The same seed and offsets give the same bits as
Triton's ``tl.randint``; ``tl.rand`` and ``tl.randn`` turn them into
floats with the same f32 operations.
"""
import mytriton
import mytriton.language as tl

N_ROUNDS_DEFAULT = 10  # Philox 4x32-10

# Philox's constants for 32-bit words: the key's increments (the golden
# ratio and sqrt(3) - 1, as 32-bit fractions) and the round multipliers.
PHILOX_KEY_A_32 = 0x9E3779B9
PHILOX_KEY_B_32 = 0xBB67AE85
PHILOX_ROUND_A_32 = 0xD2511F53
PHILOX_ROUND_B_32 = 0xCD9E8D57
# The same for 64-bit words (Philox 4x64), used when the counters are 64-bit.
PHILOX_KEY_A_64 = 0x9E3779B97F4A7C15
PHILOX_KEY_B_64 = 0xBB67AE8584CAA73B
PHILOX_ROUND_A_64 = 0xD2E7470EE14C6C93
PHILOX_ROUND_B_64 = 0xCA5A826395121157

# uint_to_uniform_float's scales: the largest values with
# MAX_INT * scale < 1.0 after f32 rounding, for 32- and 64-bit integers.
UNIFORM_SCALE_32 = 4.6566127342e-10
UNIFORM_SCALE_64 = 1.0842020432385337e-19


# -------------------
# randint
# -------------------


@mytriton.jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """``n_rounds`` rounds of Philox on the counters (c0, c1, c2, c3) and the
    key (k0, k1), all u32 (or all u64); returns the four new counters."""
    if c0.dtype == tl.uint32:
        key_a = PHILOX_KEY_A_32
        key_b = PHILOX_KEY_B_32
        round_a = PHILOX_ROUND_A_32
        round_b = PHILOX_ROUND_B_32
    else:
        tl.static_assert(c0.dtype == tl.uint64, "tl.philox_impl: the counters must be uint32 or uint64")
        key_a = PHILOX_KEY_A_64
        key_b = PHILOX_KEY_B_64
        round_a = PHILOX_ROUND_A_64
        round_b = PHILOX_ROUND_B_64
    for _ in tl.static_range(n_rounds):
        _c0 = c0
        _c2 = c2
        c0 = tl.umulhi(round_b, _c2) ^ c1 ^ k0
        c2 = tl.umulhi(round_a, _c0) ^ c3 ^ k1
        c1 = round_b * _c2  # the low word: wraps, as the unsigned product's low half
        c3 = round_a * _c0
        # raise the key
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@mytriton.jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox on the counters (c0, c1, c2, c3) (32- or 64-bit integers, their
    bits read unsigned) keyed by ``seed``: its low and high 32-bit words for
    32-bit counters, the whole seed (and a zero) for 64-bit ones."""
    seed = tl.cast(seed, tl.uint64)  # sign-extended from a signed seed, as Triton's seed.to(tl.uint64)
    if c0.dtype.primitive_bitwidth == 32:
        int_dtype = tl.uint32
        seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
        seed_lo = (seed & 0xFFFFFFFF).to(tl.uint32)
    else:
        tl.static_assert(c0.dtype.primitive_bitwidth == 64, "tl.philox: the counters must be 32- or 64-bit integers")
        int_dtype = tl.uint64
        seed_hi = tl.full((1,), 0, dtype=tl.uint64)
        seed_lo = seed
    c0 = c0.to(int_dtype, bitcast=True)
    c1 = c1.to(int_dtype, bitcast=True)
    c2 = c2.to(int_dtype, bitcast=True)
    c3 = c3.to(int_dtype, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@mytriton.jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four tiles of random uint32 for a scalar ``seed`` and a tile (or scalar)
    of integer ``offset``s: Philox's four outputs for the counter (the
    offset's low word, its high word, 0, 0)."""
    tl.static_assert(not offset.dtype.is_ptr(), "tl.randint4x: the offsets must be integers, not pointers")
    offset_lo = offset.to(tl.uint32)
    _0 = offset_lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        offset_hi = (offset >> 32).to(tl.uint32)
    else:
        offset_hi = _0
    return philox(seed, offset_lo, offset_hi, _0, _0, n_rounds)


@mytriton.jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A tile of random uint32: the first of randint4x's four."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


# -------------------
# rand
# -------------------


@mytriton.jit
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers to f32 uniform in [0, 1): the bits read
    signed, negatives folded onto the non-negatives (-x - 1), scaled."""
    if x.dtype == tl.uint32 or x.dtype == tl.int32:
        x = x.to(tl.int32, bitcast=True)
        scale = UNIFORM_SCALE_32
    else:
        tl.static_assert(x.dtype == tl.uint64 or x.dtype == tl.int64,
                         "tl.uint_to_uniform_float: needs 32- or 64-bit integers")
        x = x.to(tl.int64, bitcast=True)
        scale = UNIFORM_SCALE_64
    x = tl.where(x < 0, -x - 1, x)
    return x * scale


@mytriton.jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A tile of random f32 in [0, 1) for a scalar ``seed`` and ``offset``s."""
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@mytriton.jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four tiles of random f32 in [0, 1), from randint4x's four."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    u3 = uint_to_uniform_float(i3)
    u4 = uint_to_uniform_float(i4)
    return u1, u2, u3, u4


# -------------------
# randn
# -------------------


@mytriton.jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform tiles to two independent standard normal ones."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@mytriton.jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A tile of random f32 from N(0, 1): Box-Muller on randint4x's first two."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@mytriton.jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four tiles of random f32 from N(0, 1): Box-Muller on rand4x's pairs."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
