"""CudaKernel's launch: device arrays and scalars go straight to PyCUDA's
launch (launch3), the parameters packed by struct as C lays them out; a
host array, a value struct refuses, or a PyCUDA without that launch take
the prepared call, as before."""
from __future__ import annotations

import struct
import types

import pytest

from conftest import kernel_source
from mytriton.diagnostics import CompileError

# Parameters of four sizes and alignments: a pointer after an i32 needs 4 bytes of padding.
SCALE = '''
    @mytriton.jit
    def scale(x, n, out, s, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * s, mask=offs < n)
'''


# ---- stand-ins for torch and PyCUDA ----------------------------------------------------------------


class StandInDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


FLOAT32, FLOAT16 = StandInDtype("float32"), StandInDtype("float16")


class StandInTensor:
    """What the launch path reads of a torch tensor (class attributes, as torch's)."""

    def __init__(self, address, dtype=FLOAT32, cuda=True):
        self.address, self._dtype, self.cuda = address, dtype, cuda

    def data_ptr(self):
        return self.address

    @property
    def dtype(self):
        return self._dtype

    @property
    def is_cuda(self):
        return self.cuda


class StandInFunction:
    """Records PyCUDA launches: the direct one (_launch_kernel) and the prepared call."""

    def __init__(self, direct=True):
        self.launches, self.prepared = [], []
        if not direct:
            self._launch_kernel = None

    def prepare(self, arg_format):
        self.arg_format = arg_format

    def set_attribute(self, attribute, value):
        pass

    def _launch_kernel(self, grid, block, buffer, shared_size, stream):
        self.launches.append((grid, block, bytes(buffer), shared_size, stream))

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.prepared.append((grid, block, args, shared_size))


# ---- CudaKernel.launch3 --------------------------------------------------------------------------


def cuda_kernel(monkeypatch, tmp_path, body, signature, function):
    """A CudaKernel of ``body`` (a kernel file) whose PyCUDA function is ``function``."""
    from mytriton import pipeline
    from mytriton.runtime import cuda_driver

    monkeypatch.setattr(cuda_driver, "compile_cubin", lambda text, arch: b"cubin")
    monkeypatch.setattr(cuda_driver, "_load_module", lambda cubin: types.SimpleNamespace(get_function=lambda n: function))
    monkeypatch.setattr(cuda_driver, "context", lambda: None)
    text = kernel_source(body)
    name = "scale" if "def scale" in body else "add"
    options = pipeline.Options(kernel=name, signature=signature)
    return cuda_driver.CudaKernel(pipeline.to_cuda(pipeline.source_to_ssa(text, str(tmp_path / "k.py"), options),
                                                   options))


def test_launch_packs_a_bf16_scalar_as_its_rounded_bits(monkeypatch, tmp_path):
    from mytriton.runtime.cuda_driver import bf16_bits

    function = StandInFunction()
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*bf16, i32, *bf16, bf16", function)
    kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 1.00390625])
    assert function.launches[0][2] == struct.pack("<QiiQH", 0x10000, 100, 0, 0x20000, bf16_bits(1.00390625))


def test_launch_packs_an_f16_scalar_beyond_its_range_as_infinity(monkeypatch, tmp_path):
    function = StandInFunction()
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*fp16, i32, *fp16, fp16", function)
    kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 1e6])
    assert function.launches[0][2][-2:] == struct.pack("<e", float("inf"))


def test_a_value_struct_refuses_takes_the_prepared_call_which_converts_it(monkeypatch, tmp_path):
    function = StandInFunction()
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*fp32, i32, *fp32, fp32", function)
    kernel.launch((2,), [StandInTensor(0x10000), 100.0, StandInTensor(0x20000), 2.0])  # a float for the i32
    assert function.launches == [] and function.prepared[0][2] == (0x10000, 100, 0x20000, 2.0)


def test_a_pycuda_without_the_direct_launch_takes_the_prepared_call(monkeypatch, tmp_path):
    function = StandInFunction(direct=False)
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*fp32, i32, *fp32, fp32", function)
    kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 2.0])
    assert function.prepared == [((2, 1, 1), (128, 1, 1), (0x10000, 100, 0x20000, 2.0), 0)]


def test_a_direct_launch_that_refuses_its_arguments_leaves_the_prepared_call_for_good(monkeypatch, tmp_path):
    function = StandInFunction()
    refused = []

    def other_signature(*args):
        refused.append(args)
        raise TypeError("Python argument types did not match C++ signature")

    function._launch_kernel = other_signature
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*fp32, i32, *fp32, fp32", function)
    for _ in range(2):
        kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 2.0])
    assert len(refused) == 1 and len(function.prepared) == 2


def test_launch_still_checks_the_argument_count(monkeypatch, tmp_path):
    kernel = cuda_kernel(monkeypatch, tmp_path, SCALE, "*fp32, i32, *fp32, fp32", StandInFunction())
    with pytest.raises(CompileError, match=r"kernel 'scale' takes 4 argument\(s\), got 3"):
        kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000)])
