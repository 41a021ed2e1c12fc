"""Arithmetic on booleans as Triton types it: the product, maximum and
minimum of two booleans are booleans (and, or, and: fla's masks
``mask_t[:, None] * mask_d[None, :]``); a sum or difference counts in i32."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import kernel_source, ssa_of
from mytriton.ir.ssa import walk

KERNEL = """
@mytriton.jit
def k(x_ptr, out_ptr, n, m, N: tl.constexpr):
    o = tl.arange(0, N)
    inside = o < n
    past = o > m
    x = tl.load(x_ptr + o, mask=inside * past, other=-1.0)
    tl.store(out_ptr + o, x)
    tl.store(out_ptr + N + o, tl.maximum(inside, past).to(tl.float32))
    tl.store(out_ptr + 2 * N + o, tl.minimum(inside, past).to(tl.float32))
    tl.store(out_ptr + 3 * N + o, (inside + past).to(tl.float32))
"""


@pytest.mark.parametrize("op, element", [("mul", "bool"), ("maximum", "bool"), ("minimum", "bool"),
                                         ("add", "i32")])
def test_the_type_of_two_booleans_combined(op, element):
    kernel = ssa_of(kernel_source(KERNEL), signature="*fp32, *fp32, i32, i32", defines={"N": 16})
    (found,) = [o for o in walk(kernel.body) if o.name == op and o.operands[0].type.element.name == "bool"]
    assert found.result.type.element.name == element


def test_a_product_of_masks_masks_the_load_and_the_others_are_or_and_and_count(kernel_module):
    module = kernel_module(KERNEL)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(16).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    n, m = 11, 4
    module.k[(1,)](x, out, n, m, N=16, backend="interp")
    o = np.arange(16)
    inside, past = o < n, o > m
    np.testing.assert_array_equal(out[:16], np.where(inside & past, x, -1.0))
    np.testing.assert_array_equal(out[16:32], (inside | past).astype(np.float32))
    np.testing.assert_array_equal(out[32:48], (inside & past).astype(np.float32))
    np.testing.assert_array_equal(out[48:], inside.astype(np.float32) + past.astype(np.float32))


@pytest.mark.gpu
def test_gpu_boolean_arithmetic_matches_the_interpreter(kernel_module):
    module = kernel_module(KERNEL)
    x = np.random.default_rng(4).standard_normal(16).astype(np.float32)
    results = []
    for backend in ("cuda", "interp"):
        out = np.full(64, np.nan, np.float32)
        module.k[(1,)](x, out, 11, 4, N=16, backend=backend)
        results.append(out)
    np.testing.assert_array_equal(*results)
