"""The Python API: `kernel[grid](*args, **meta)` as in Triton."""
from __future__ import annotations

import numpy as np
import pytest

import mytriton
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.runtime.jit import select_backend

ADD = '''
    @mytriton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''


def inputs(n=100):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_a_grid_can_be_a_callable_of_the_meta_parameters(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    out = np.full_like(x, np.nan)
    add[lambda meta: (mytriton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, 100, BLOCK=32, backend="interp")
    np.testing.assert_array_equal(out, x + y)


def test_each_specialisation_compiles_once(kernel_module, monkeypatch):
    add = kernel_module(ADD).add
    calls = []
    real = compiler.source_to_ssa
    monkeypatch.setattr(compiler, "source_to_ssa", lambda *a, **k: calls.append(a) or real(*a, **k))
    x, y = inputs()
    out = np.empty_like(x)
    for _ in range(3):
        add[(2,)](x, y, out, 100, backend="interp")
    add[(4,)](x, y, out, 100, BLOCK=32, backend="interp")  # a new constexpr value: a new specialisation
    assert len(calls) == 2


def test_a_launch_checks_the_kernels_syntax_once_per_specialisation(kernel_module, monkeypatch):
    """jit's first look at the file, the parse stage and the trace stage's read of the bundle: one check."""
    from mytriton.frontend import stages

    add = kernel_module(ADD).add
    checked = []
    real = stages.check_function
    monkeypatch.setattr(stages, "check_function", lambda module, fn, entry: checked.append(fn.name) or
                        real(module, fn, entry))
    x, y = inputs()
    out = np.empty_like(x)
    add[(2,)](x, y, out, 100, backend="interp")
    assert checked == ["add"]
    add[(4,)](x, y, out, 100, BLOCK=32, backend="interp")  # a new specialisation: the file read again, checked
    assert checked == ["add", "add"]


def test_argument_types_specialise_the_kernel(kernel_module):
    add = kernel_module(ADD).add
    xi = np.arange(100, dtype=np.int32)
    out = np.zeros(100, np.int32)
    add[(2,)](xi, xi, out, 100, backend="interp")
    np.testing.assert_array_equal(out, 2 * xi)


def test_calling_a_kernel_without_a_grid_is_an_error(kernel_module):
    add = kernel_module(ADD).add
    with pytest.raises(RuntimeError, match=r"add\[grid\]"):
        add(*inputs(), np.empty(100, np.float32), 100)


def test_wrong_arguments_are_reported(kernel_module):
    add = kernel_module(ADD).add
    with pytest.raises(CompileError, match="missing a required argument"):
        add[(1,)](*inputs(), backend="interp")


def test_the_backend_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    assert select_backend() == "interp"
    monkeypatch.setenv("MYTRITON_BACKEND", "tpu")
    with pytest.raises(CompileError, match="unknown backend 'tpu'"):
        select_backend()


def test_auto_picks_the_interpreter_without_a_gpu(monkeypatch):
    from mytriton.runtime import cuda_driver

    monkeypatch.delenv("MYTRITON_BACKEND", raising=False)
    monkeypatch.setattr(cuda_driver, "cuda_status", lambda: (False, "the CUDA driver sees no GPU"))
    assert select_backend() == "interp"


class CudaArrayInterface:
    """A minimal foreign GPU array: only __cuda_array_interface__, as CuPy and
    Numba arrays expose it."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


@pytest.mark.gpu
def test_objects_with_cuda_array_interface_are_passed_without_copies(kernel_module):
    torch = pytest.importorskip("torch")
    add = kernel_module(ADD).add
    x, y = (torch.randn(1000, device="cuda") for _ in range(2))
    out = torch.full((1000,), float("nan"), device="cuda")
    add[(mytriton.cdiv(1000, 64),)](CudaArrayInterface(x), CudaArrayInterface(y), CudaArrayInterface(out),
                                    1000, backend="cuda")
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
