"""A launch specialises as Triton's JIT does: integers equal to 1 are compiled
in, integers divisible by 16 and pointers aligned to 16 bytes become parameter
facts ({divisibility=16}); do_not_specialize(_on_alignment) turn that off."""
from __future__ import annotations

import numpy as np
import pytest

import mytriton
from mytriton.diagnostics import CompileError

ADD = '''
    @mytriton.jit{options}
    def add(x, y, out, n, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''


def aligned(values: np.ndarray, offset_elements: int = 0) -> np.ndarray:
    """A copy of ``values`` whose first element sits ``offset_elements``
    elements past a 64-byte boundary."""
    raw = np.zeros(values.size + 64, dtype=values.dtype)
    start = (-raw.ctypes.data % 64) // values.itemsize + offset_elements
    view = raw[start:start + values.size]
    view[:] = values
    return view


def launch(module, n, offset=0, **kwargs):
    rng = np.random.default_rng(n)
    x = aligned(rng.standard_normal(n).astype(np.float32), offset)
    y = aligned(rng.standard_normal(n).astype(np.float32), offset)
    out = aligned(np.zeros(n, np.float32), offset)
    handle = module.add[(mytriton.cdiv(n, 64),)](x, y, out, n, backend="interp", **kwargs)
    np.testing.assert_array_equal(out, x + y)
    return handle


def test_aligned_pointers_and_a_multiple_of_16_are_parameter_facts(kernel_module):
    module = kernel_module(ADD.format(options=""))
    handle = launch(module, 160)
    assert handle.metadata["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32:16"
    assert handle.asm["ssa"].splitlines()[0].startswith(
        "kernel add(x: ptr<f32> {divisibility=16}, y: ptr<f32> {divisibility=16}, "
        "out: ptr<f32> {divisibility=16}, n: i32 {divisibility=16})")


def test_an_offset_view_compiles_another_variant_without_the_facts(kernel_module):
    module = kernel_module(ADD.format(options=""))
    first = launch(module, 160)
    second = launch(module, 160, offset=1)  # x[1:]-like: 4 bytes past an aligned address
    assert second is not first
    assert second.metadata["signature"] == "*fp32, *fp32, *fp32, i32:16"
    assert "{divisibility" not in second.asm["ssa"].splitlines()[0].split("n: i32")[0]
    assert launch(module, 160) is first  # the aligned variant is cached


def test_an_integer_equal_to_one_is_compiled_in(kernel_module):
    module = kernel_module(ADD.format(options=""))
    handle = launch(module, 1)
    assert handle.metadata["constants"] == {"n": 1, "BLOCK": 64}
    assert handle.runtime_params == ["x", "y", "out"]
    assert "constexpr(n = 1, BLOCK = 64)" in handle.asm["ssa"].splitlines()[0]


def test_other_integers_are_not_facts(kernel_module):
    module = kernel_module(ADD.format(options=""))
    assert launch(module, 100).metadata["signature"].endswith(", i32")


@pytest.mark.parametrize("names", [["n"], [3]])
def test_do_not_specialize_keeps_an_integer_a_plain_parameter(kernel_module, names):
    module = kernel_module(ADD.format(options=f"(do_not_specialize={names!r})"))
    assert launch(module, 1).metadata["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32"
    assert launch(module, 160).metadata["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32"


def test_do_not_specialize_on_alignment_drops_divisibility_but_not_one(kernel_module):
    module = kernel_module(ADD.format(options="(do_not_specialize_on_alignment=['x', 'n'])"))
    assert launch(module, 160).metadata["signature"] == "*fp32, *fp32:16, *fp32:16, i32"
    assert launch(module, 1).metadata["constants"]["n"] == 1


def test_a_position_past_the_parameters_is_an_error():
    def kernel(x, n):
        return x

    with pytest.raises(CompileError, match="do_not_specialize names position 5, but the kernel has 2 parameters"):
        mytriton.jit(do_not_specialize=[5])(kernel)
