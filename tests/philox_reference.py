"""A NumPy reference of Triton's random numbers, written from the published
algorithm rather than from mytriton's kernel code: Philox-4x32-10 and
Philox-4x64-10 as Random123 defines them (Salmon, Moraes, Dror and Shaw,
"Parallel random numbers: as easy as 1, 2, 3", SC 2011; Random123's
philox.h), checked against Random123's known-answer vectors
(tests/kat_vectors), then Triton's use of it (python/triton/language/random.py,
Triton 3.x): the counter is (offset's low word, its high word, 0, 0), the
key (seed's low word, its high word); ``rand`` reads the first output word
as a signed integer, folds the negatives onto the non-negatives and scales
it in f32; ``randn`` is Box-Muller on the first two in f32.
"""
from __future__ import annotations

import numpy as np

# Random123's Philox constants: round multipliers and Weyl key increments.
_M4X32 = (0xD2511F53, 0xCD9E8D57)
_W32 = (0x9E3779B9, 0xBB67AE85)
_M4X64 = (0xD2E7470EE14C6C93, 0xCA5A826395121157)
_W64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)

# Random123 tests/kat_vectors: (counter words, key words, output words).
KAT_4X32_10 = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
KAT_4X64_10 = [
    ((0, 0, 0, 0), (0, 0), (0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B)),
    ((0xFFFFFFFFFFFFFFFF,) * 4, (0xFFFFFFFFFFFFFFFF,) * 2,
     (0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0)),
]


def _mulhilo(a: int, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The high and low ``bits`` of the exact product ``a * b``, elementwise
    (Python integers: exact whatever the width)."""
    mask = (1 << bits) - 1
    flat = [a * int(x) for x in np.asarray(b).ravel()]
    dtype = np.uint32 if bits == 32 else np.uint64
    shape = np.shape(b)
    hi = np.array([p >> bits for p in flat], dtype=dtype).reshape(shape)
    lo = np.array([p & mask for p in flat], dtype=dtype).reshape(shape)
    return hi, lo


def philox(counter, key, rounds: int = 10, bits: int = 32) -> tuple[np.ndarray, ...]:
    """Philox-4xW-R on arrays of counter words (broadcast together) and a
    two-word key (scalars): Random123's philox4x{32,64}_R."""
    dtype = np.uint32 if bits == 32 else np.uint64
    m0, m1 = _M4X32 if bits == 32 else _M4X64
    w0, w1 = _W32 if bits == 32 else _W64
    mask = (1 << bits) - 1
    c = np.broadcast_arrays(*[np.asarray(x).astype(dtype) for x in counter])
    c = [np.array(x) for x in c]
    k0, k1 = (int(key[0]) & mask, int(key[1]) & mask)
    for r in range(rounds):
        if r:  # the key is bumped before every round but the first
            k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
        hi0, lo0 = _mulhilo(m0, c[0], bits)
        hi1, lo1 = _mulhilo(m1, c[2], bits)
        c = [hi1 ^ c[1] ^ dtype(k0), lo1, hi0 ^ c[3] ^ dtype(k1), lo0]
    return tuple(c)


def randint4x(seed: int, offsets: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, ...]:
    """Triton's tl.randint4x: uint32 words for integer offsets (any width)."""
    offsets = np.asarray(offsets)
    wide = offsets.astype(np.int64).astype(np.uint64)  # the offset's bits, sign-extended as Triton's casts do
    lo = (wide & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (wide >> np.uint64(32)).astype(np.uint32) if offsets.dtype.itemsize > 4 else np.zeros_like(lo)
    seed_bits = int(seed) & 0xFFFFFFFFFFFFFFFF  # a negative seed sign-extends to 64 bits
    zero = np.zeros_like(lo)
    return philox((lo, hi, zero, zero), (seed_bits & 0xFFFFFFFF, seed_bits >> 32), rounds)


def randint(seed: int, offsets: np.ndarray, rounds: int = 10) -> np.ndarray:
    return randint4x(seed, offsets, rounds)[0]


def uniform(bits: np.ndarray) -> np.ndarray:
    """Triton's uint_to_uniform_float for uint32: f32 in [0, 1)."""
    x = np.asarray(bits).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def rand(seed: int, offsets: np.ndarray, rounds: int = 10) -> np.ndarray:
    return uniform(randint(seed, offsets, rounds))


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triton's pair_uniform_to_normal, each f32 operation rounded once from
    an f64 result (so within half an ulp per step of the exact function)."""
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = _f32(np.sqrt(_f32(np.float32(-2.0) * _f32(np.log(u1.astype(np.float64))))))
    return r * _f32(np.cos(th.astype(np.float64))), r * _f32(np.sin(th.astype(np.float64)))


def randn(seed: int, offsets: np.ndarray, rounds: int = 10) -> np.ndarray:
    i1, i2, _, _ = randint4x(seed, offsets, rounds)
    return box_muller(uniform(i1), uniform(i2))[0]


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many f32 values lie between ``a`` and ``b`` (0 where equal)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))
