"""An argument passed as None is compiled in as the constant None, as
Triton specialises it: a pointer the kernel leaves unused behind a flag
(Liger-Kernel's ``weight_ptr=None`` with ``HAS_WEIGHT=False``), or a scalar
the kernel tests with ``is None``. The kernel no longer takes it; a launch
with a value there compiles another kernel. The CLI binds it with ``None`` in
the signature."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source, randf
from mytriton.diagnostics import CompileError

SCALED = """
@mytriton.jit
def k(x_ptr, w_ptr, out_ptr, scale, n, HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if HAS_W:
        x = x * tl.load(w_ptr + offs, mask=offs < n)
    if scale is not None:
        x = x * scale
    tl.store(out_ptr + offs, x, mask=offs < n)
"""


def test_none_arguments_are_constants_the_kernel_tests_and_leaves_unused(kernel_module, rng):
    k = kernel_module(SCALED).k
    x, w = randf(rng, 20), randf(rng, 20)
    out = np.zeros(20, np.float32)
    handle = k[(1,)](x, None, out, None, 20, HAS_W=False, BLOCK=32, backend="interp")
    np.testing.assert_array_equal(out, x)
    assert "w_ptr" not in handle.runtime_params and "scale" not in handle.runtime_params
    assert handle.metadata["constants"]["w_ptr"] is None
    k[(1,)](x, w, out, 2.0, 20, HAS_W=True, BLOCK=32, backend="interp")
    np.testing.assert_allclose(out, x * w * 2.0, rtol=1e-6)
    k[(1,)](x, None, out, 3.0, 20, HAS_W=False, BLOCK=32, backend="interp")
    np.testing.assert_allclose(out, x * 3.0, rtol=1e-6)


def test_a_none_argument_the_kernel_uses_is_a_located_error(kernel_module):
    k = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        tl.store(out_ptr, tl.load(x_ptr))
    """).k
    with pytest.raises(CompileError) as info:
        k[(1,)](None, np.zeros(1, np.float32), backend="interp")
    assert info.value.loc is not None and info.value.loc.line == 6


def test_the_signature_binds_none():
    ssa = compile_text(kernel_source(SCALED), "ssa", signature="*fp32, None, *fp32, None, i32",
                       defines={"HAS_W": False, "BLOCK": 32})
    header = ssa.splitlines()[0]
    assert header.startswith("kernel k(x_ptr: ptr<f32>, out_ptr: ptr<f32>, n: i32) constexpr(w_ptr = none, "
                             "scale = none,")
    assert "mul" not in ssa


def test_is_compares_runtime_values_with_none_only():
    with pytest.raises(CompileError, match="'is' compares with None or other constants"):
        compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr, n):
            if n is 3:
                tl.store(x_ptr, 1.0)
        """), "ssa")


def test_a_none_argument_launches_on_the_gpu_launcher(kernel_module, rng, monkeypatch):
    """The CUDA header carries the None constant (JSON null), which the launcher reads back."""
    from fake_driver import FakeDriver, install

    gpu = install(monkeypatch, FakeDriver())
    k = kernel_module(SCALED).k

    class DeviceArray:
        def __init__(self, address):
            self.__cuda_array_interface__ = {"data": (address, False), "shape": (20,), "typestr": "<f4",
                                             "version": 3}

    handle = k[(1,)](DeviceArray(0x10000), None, DeviceArray(0x20000), None, 20, HAS_W=False, BLOCK=32)
    assert handle.backend == "cuda" and '"w_ptr": null' in handle.asm["cuda"].splitlines()[0]
    assert len(gpu.launches) == 1
