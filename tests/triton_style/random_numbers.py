"""Triton's random numbers as a user calls them: ``tl.randint``,
``tl.randint4x``, ``tl.rand`` and ``tl.randn`` for a seed and a block of
offsets (i32, or i64 from a large base), stored for the host to compare."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _random_numbers(ints_ptr, words_ptr, uniform_ptr, normal_ptr, seed, base, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    idx = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = idx < n
    offsets = base + idx
    tl.store(ints_ptr + idx, tl.randint(seed, offsets).to(tl.int32, bitcast=True), mask=mask)
    r0, r1, r2, r3 = tl.randint4x(seed, offsets)
    tl.store(words_ptr + idx * 4, r0.to(tl.int32, bitcast=True), mask=mask)
    tl.store(words_ptr + idx * 4 + 1, r1.to(tl.int32, bitcast=True), mask=mask)
    tl.store(words_ptr + idx * 4 + 2, r2.to(tl.int32, bitcast=True), mask=mask)
    tl.store(words_ptr + idx * 4 + 3, r3.to(tl.int32, bitcast=True), mask=mask)
    tl.store(uniform_ptr + idx, tl.rand(seed, offsets), mask=mask)
    tl.store(normal_ptr + idx, tl.randn(seed, offsets), mask=mask)


def random_numbers(seed, n, base=0):
    ints = np.zeros(n, np.int32)
    words = np.zeros((n, 4), np.int32)
    uniform = np.zeros(n, np.float32)
    normal = np.zeros(n, np.float32)
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']), )
    _random_numbers[grid](ints, words, uniform, normal, seed, base, n, BLOCK_SIZE=512)
    return ints, words, uniform, normal
