"""A launch specialises as Triton's JIT does: integers equal to 1 are compiled
in, integers divisible by 16 and pointers aligned to 16 bytes become parameter
facts ({divisibility=16}), and integers divisible by 8 (not 16) too
({divisibility=8}, as Triton 2 did); do_not_specialize(_on_alignment) turn
that off."""
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


def test_an_integer_divisible_by_8_and_not_16_is_a_fact_of_8(kernel_module):
    module = kernel_module(ADD.format(options=""))
    handle = launch(module, 1000)
    assert handle.metadata["signature"].endswith(", i32:8")
    assert "n: i32 {divisibility=8}) constexpr(BLOCK = 64)" in handle.asm["ssa"].splitlines()[0]


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


# ---- the launch key: a cheap key that tells apart what the compile cache's key does ----------------


def test_the_launch_key_tells_ints_apart_by_range_and_hint():
    import numpy as np

    from mytriton.runtime.arguments import launch_key

    def key(n, on_value=frozenset({"n"}), on_alignment=frozenset({"n"})):
        return launch_key([n], on_value, on_alignment, ["n"], [], ())

    assert key(32) == key(48) != key(33)  # both divisible by 16
    assert key(8) == key(24) != key(32) and key(8) != key(33)  # by 8 and not 16
    assert key(1) != key(33) and key(1) != key(16)
    assert key(2**31) != key(2**31 - 17 * 16)  # i64 against i32
    assert key(2**63) != key(2**62)  # u64 against i64
    assert key(1, on_value=frozenset()) == key(33, on_value=frozenset())  # do_not_specialize
    assert key(32, on_alignment=frozenset()) == key(33, on_alignment=frozenset()) == key(8, on_alignment=frozenset())
    a = np.zeros(64, np.float32)
    assert launch_key([a], frozenset({"a"}), frozenset({"a"}), ["a"], [], ()) != \
        launch_key([a.astype(np.float16)], frozenset({"a"}), frozenset({"a"}), ["a"], [], ())


def test_the_launch_key_tells_arrays_apart_by_alignment_and_constants_by_value():
    import numpy as np

    from mytriton.runtime.arguments import launch_key

    buffer = np.zeros(64, np.float32)
    aligned, offset = buffer[:32], buffer[1:33]  # the second starts 4 bytes on
    names, on = ["a"], frozenset({"a"})
    assert (aligned.ctypes.data % 16 == 0) != (offset.ctypes.data % 16 == 0)
    assert launch_key([aligned], on, on, names, [], ()) != launch_key([offset], on, on, names, [], ())
    assert launch_key([aligned], on, on, names, [64], ()) != launch_key([aligned], on, on, names, [128], ())
    assert launch_key([aligned], on, on, names, [1], ()) != launch_key([aligned], on, on, names, [True], ())
    assert launch_key([aligned], on, on, names, [object()], ()) is None  # the full key decides
