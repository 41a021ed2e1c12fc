"""Where a GPU launch runs (runtime/placement.py, cuda_driver.py), on a
stand-in driver (tests/fake_driver.py): in the primary context of the
device that holds the arrays, made current for the launch only, from any
thread; on the arrays' framework's current stream or ``stream=``; a module
loaded once per device; arrays on two GPUs, tensors off the GPU and
objects that are not arrays refused by name at the launch."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from conftest import kernel_source
from fake_driver import FakeDriver, install
from mytriton.diagnostics import CompileError

SCALE = '''
    @mytriton.jit
    def scale(x, n, out, s, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * s, mask=offs < n)
'''
ROOT = Path(__file__).resolve().parent.parent
GPU1 = 0x1_0000_0000  # the stand-in driver's addresses from here up are GPU 1's


class DeviceArray:
    """A device array of another framework: only the CUDA array interface."""

    def __init__(self, address: int, typestr: str = "<f4") -> None:
        self.__cuda_array_interface__ = {"data": (address, False), "shape": (64,), "typestr": typestr,
                                         "version": 3}


@pytest.fixture
def gpus(monkeypatch):
    """Two stand-in GPUs: addresses below GPU1 are on GPU 0, the others on GPU 1."""
    return install(monkeypatch, FakeDriver(devices=2, device_of=lambda a: None if not a else int(a >= GPU1)))


@pytest.fixture
def scale(kernel_module):
    return kernel_module(SCALE).scale


def launch(scale, x=0x10000, out=0x20000, **options):
    wrap = lambda a: DeviceArray(a) if isinstance(a, int) else a  # noqa: E731
    return scale[(2,)](wrap(x), 100, wrap(out), 2.0, **options)


# ---- contexts -----------------------------------------------------------------------------------


def test_a_launch_runs_in_the_primary_context_of_its_arrays_device(gpus, scale):
    launch(scale, GPU1 + 0x10000, GPU1 + 0x20000)
    (made,) = gpus.launches
    assert made.device == 1 and gpus.loads == [1]


def test_a_launch_leaves_a_thread_without_a_context_without_one(gpus, scale):
    launch(scale)
    assert gpus.launches[0].device == 0 and gpus.current_context() == 0


def test_a_launch_on_another_device_restores_the_context_that_was_current(gpus, scale):
    gpus.set_current(gpus.contexts[1])  # as torch.cuda.set_device(1) leaves it
    launch(scale)
    assert gpus.launches[0].device == 0 and gpus.current_context() == gpus.contexts[1]


def test_no_launch_is_ever_tried_in_the_wrong_context(gpus, scale):
    for current in (0, gpus.contexts[1], gpus.contexts[0]):
        gpus.set_current(current)
        launch(scale)
        launch(scale, GPU1 + 0x10000, GPU1 + 0x20000)
    assert gpus.refused == [] and len(gpus.launches) == 6


def test_a_launch_on_the_current_device_switches_no_context(gpus, scale):
    gpus.set_current(gpus.contexts[0])
    switches = gpus.context_switches
    launch(scale)
    launch(scale)
    assert gpus.context_switches == switches and len(gpus.launches) == 2


def test_a_compiled_kernel_launched_past_cudas_grid_is_refused_not_wrapped(gpus, scale):
    compiled = launch(scale)
    with pytest.raises(CompileError, match="grid axis 0 has 4294967298 programs, over CUDA's limit"):
        compiled.launcher.launch((2**32 + 2,), [DeviceArray(0x10000), 100, DeviceArray(0x20000), 2.0])
    assert len(gpus.launches) == 1  # the first launch only


def test_a_module_is_loaded_once_per_device(gpus, scale):
    for base in (0, GPU1, 0, GPU1, 0):
        launch(scale, base + 0x10000, base + 0x20000)
    assert sorted(gpus.loads) == [0, 1] and [run.device for run in gpus.launches] == [0, 1, 0, 1, 0]


def test_kernels_first_launched_from_several_threads_at_once_all_run(gpus, scale):
    start = threading.Barrier(4)
    errors = []

    def work(base):
        try:
            start.wait()
            for _ in range(5):
                launch(scale, base + 0x10000, base + 0x20000)
            assert gpus.current_context() == 0
        except Exception as err:  # reported below, with the thread's own message
            errors.append(err)

    threads = [threading.Thread(target=work, args=(base,)) for base in (0, GPU1, 0, GPU1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(gpus.launches) == 20
    assert sorted(gpus.loads) == [0, 1] and len({run.thread for run in gpus.launches}) == 4


def test_the_parameters_of_concurrent_launches_do_not_mix(gpus, scale):
    start = threading.Barrier(2)

    def work(n):
        start.wait()
        for _ in range(200):
            scale[(2,)](DeviceArray(0x10000), n, DeviceArray(0x20000), 2.0)

    threads = [threading.Thread(target=work, args=(n,)) for n in (100, 300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = {struct.unpack_from("<i", launch.params, 8)[0] for launch in gpus.launches}
    assert seen == {100, 300} and len(gpus.launches) == 400


# ---- which device -------------------------------------------------------------------------------


def test_arrays_on_two_gpus_are_an_error_naming_both_at_the_launch(gpus, scale):
    with pytest.raises(CompileError, match=r"kernel 'scale': arguments on different GPUs: 'x' is on cuda:0 and "
                                           r"'out' on cuda:1") as err:
        launch(scale, 0x10000, GPU1 + 0x20000)
    assert err.value.loc.file == __file__ and gpus.launches == []


def test_a_launch_of_host_arrays_only_runs_on_the_current_device(gpus, scale):
    gpus.set_current(gpus.contexts[1])
    scale[(2,)](np.ones(100, np.float32), 100, np.zeros(100, np.float32), 2.0)
    assert gpus.launches[0].device == 1


def test_mytriton_device_chooses_the_device_of_host_arrays(gpus, scale, monkeypatch):
    monkeypatch.setenv("MYTRITON_DEVICE", "1")
    scale[(2,)](np.ones(100, np.float32), 100, np.zeros(100, np.float32), 2.0)
    assert gpus.launches[0].device == 1 and gpus.current_context() == 0


def test_a_device_that_does_not_exist_is_an_error(gpus, scale, monkeypatch):
    monkeypatch.setenv("MYTRITON_DEVICE", "5")
    with pytest.raises(CompileError, match=r"there is no GPU 5 \(this machine has 2\)"):
        scale[(2,)](np.ones(100, np.float32), 100, np.zeros(100, np.float32), 2.0)


# ---- which stream -------------------------------------------------------------------------------


def test_device_arrays_of_no_known_framework_go_on_the_legacy_default_stream(gpus, scale):
    launch(scale)
    assert gpus.launches[0].stream == 0


def test_stream_takes_a_handle(gpus, scale):
    launch(scale, stream=0x5EA)
    launch(scale, stream=0x5EB)
    assert [run.stream for run in gpus.launches] == [0x5EA, 0x5EB]


class TorchLikeStream:
    def __init__(self, handle, index):
        self.cuda_stream = handle
        self.device = type("device", (), {"index": index, "type": "cuda"})()


def test_stream_takes_a_torch_stream_of_the_launchs_device(gpus, scale):
    launch(scale, stream=TorchLikeStream(0x5EA, 0))
    assert gpus.launches[0].stream == 0x5EA


def test_a_stream_of_another_device_is_an_error(gpus, scale):
    with pytest.raises(CompileError, match=r"stream= is a stream of GPU 1, but the launch runs on GPU 0"):
        launch(scale, stream=TorchLikeStream(0x5EA, 1))


def test_stream_takes_the_cuda_stream_protocol(gpus, scale):
    class Protocol:
        def __cuda_stream__(self):
            return (0, 0x5EC)

    launch(scale, stream=Protocol())
    assert gpus.launches[0].stream == 0x5EC


def test_a_stream_of_another_kind_is_an_error_naming_it(gpus, scale):
    with pytest.raises(CompileError, match=r"stream= takes a stream handle .* got str"):
        launch(scale, stream="default")


def test_host_arrays_wait_for_the_launchs_stream_before_copying_back(gpus, scale):
    out = np.zeros(100, np.float32)
    scale[(2,)](np.ones(100, np.float32), 100, out, 2.0, stream=0x5EA)
    assert gpus.synchronized == [0x5EA] and gpus.memory == {}


# ---- what a pointer parameter takes -------------------------------------------------------------


class TensorLike:
    """An object with a data_ptr and a dtype (Triton passes such objects by address)."""

    def __init__(self, address, device_type=None):
        self.address = address
        self.dtype = "torch.float32"
        if device_type:
            self.device = type("device", (), {"type": device_type, "index": 0})()

    def data_ptr(self):
        return self.address


def test_a_tensor_like_on_the_gpu_is_passed_by_its_address(gpus, scale):
    scale[(2,)](TensorLike(GPU1 + 0x10000), 100, DeviceArray(GPU1 + 0x20000), 2.0)
    assert struct.unpack_from("<Q", gpus.launches[0].params)[0] == GPU1 + 0x10000
    assert gpus.launches[0].device == 1


def test_a_tensor_like_in_host_memory_is_refused_not_copied(gpus, scale):
    gpus.device_of = lambda address: None
    with pytest.raises(CompileError, match=r"argument 'x' \(TensorLike\) does not point into GPU memory"):
        scale[(2,)](TensorLike(0x10000), 100, DeviceArray(0x20000), 2.0)
    assert gpus.launches == [] and gpus.memory == {}


def test_a_tensor_like_on_the_cpu_is_refused_by_name(gpus, scale):
    with pytest.raises(CompileError, match=r"argument 'x' is a tensor on .*reads GPU memory only"):
        scale[(2,)](TensorLike(0x10000, "cpu"), 100, DeviceArray(0x20000), 2.0)


@pytest.mark.parametrize("value", [[1.0, 2.0], "x", object(), {"data": 1}])
def test_an_argument_that_is_not_an_array_is_refused_by_name(gpus, scale, value):
    with pytest.raises(CompileError, match=r"argument 'x': cannot pass \w+ to a kernel") as err:
        scale[(2,)](value, 100, DeviceArray(0x20000), 2.0)
    assert err.value.loc.file == __file__ and gpus.launches == []


def test_an_object_array_is_refused_by_name(gpus, scale):
    with pytest.raises(CompileError, match=r"argument 'x': unsupported element type object"):
        scale[(2,)](np.array([object()] * 4), 100, DeviceArray(0x20000), 2.0)


def test_the_kernel_launcher_refuses_a_non_array_by_name(gpus, tmp_path):
    from mytriton import compiler
    from mytriton.runtime.cuda_driver import CudaKernel

    options = compiler.Options(kernel="scale", signature="*fp32, i32, *fp32, fp32")
    kernel = CudaKernel(compiler.to_cuda(compiler.source_to_ssa(kernel_source(SCALE), "scale.py", options), options))
    with pytest.raises(CompileError, match=r"argument 'out' is a object, not an array"):
        kernel.launch((1,), [DeviceArray(0x10000), 10, object(), 1.0])


# ---- PyTorch's CPU tensors ----------------------------------------------------------------------


def test_a_cpu_torch_tensor_is_refused_by_the_gpu_launch_at_the_launch(gpus, scale):
    torch = pytest.importorskip("torch")
    x = torch.ones(100)
    with pytest.raises(CompileError, match=r"kernel 'scale': argument 'x' is a tensor on cpu, but the kernel runs "
                                           r"on the GPU .*x\.cuda\(\)") as err:
        scale[(2,)](x, 100, DeviceArray(0x20000), 2.0)
    assert err.value.loc.file == __file__ and gpus.launches == [] and gpus.memory == {}


def test_the_interpreter_takes_cpu_tensors_as_numpy_arrays(scale):
    torch = pytest.importorskip("torch")
    x = torch.randn(100) + 3.0
    out = torch.full((100,), float("nan"))
    scale[(2,)](x, 100, out, 2.0, backend="interp")
    assert torch.equal(out, x * 2.0)


def test_the_interpreter_takes_bf16_cpu_tensors(scale):
    torch = pytest.importorskip("torch")
    pytest.importorskip("ml_dtypes")
    x = (torch.randn(100) + 3.0).to(torch.bfloat16)
    out = torch.full((100,), float("nan"), dtype=torch.bfloat16)
    scale[(2,)](x, 100, out, 2.0, backend="interp")
    assert torch.equal(out, x * 2)


def test_the_interpreter_takes_a_tensor_that_requires_grad(scale):
    torch = pytest.importorskip("torch")
    x = (torch.randn(100) + 3.0).requires_grad_()
    out = torch.full((100,), float("nan"))
    scale[(2,)](x, 100, out, 2.0, backend="interp")
    assert torch.equal(out, x.detach() * 2.0)


STRIDED = '''
    @mytriton.jit
    def column(x, stride, out, n, BLOCK: tl.constexpr = 64):
        rows = tl.arange(0, BLOCK)
        tl.store(out + rows, tl.load(x + rows * stride, mask=rows < n) + 1.0, mask=rows < n)
'''


def test_the_interpreter_reads_a_strided_cpu_tensor_through_its_strides(kernel_module):
    torch = pytest.importorskip("torch")
    column = kernel_module(STRIDED).column
    matrix = torch.randn(50, 7)
    x = matrix[:, 3]  # every 7th element from the 4th
    out = torch.full((50,), float("nan"))
    column[(1,)](x, x.stride(0), out, 50, backend="interp")
    assert torch.equal(out, x + 1.0)


# ---- what a launch compiles ----------------------------------------------------------------------


def test_the_cuda_a_launch_builds_is_the_cuda_of_its_ssa_read_back(gpus, scale):
    """A launch lays out the compiled kernel itself, not a copy parsed back
    from its SSA text: the CUDA is the same either way."""
    from mytriton import compiler

    compiled = launch(scale)
    from_text = compiler.layouts(compiler.stage_dots(compiler.read_ssa(compiled.asm["ssa"], compiled.kernel.loc.file),
                                                     compiled.options), compiled.options)
    assert compiled.asm["cuda"] == compiler.emit_cuda(from_text, compiled.options)
    assert gpus.launches[0].params  # and it launched


def test_a_launch_parses_no_ir_text(tmp_path):
    """A process's launch reads no IR text: lark (the IR grammars' parser) is
    not even imported, which cost a first launch ~0.06 s, and building or
    loading the SSA grammar's tables 0.1-0.6 s more."""
    script = tmp_path / "launch.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {str(ROOT / 'tests')!r})
from fake_driver import FakeDriver
from mytriton.runtime import cuda_driver, driver_api
driver_api._driver = FakeDriver()
cuda_driver.cuda_status = lambda: (True, "a stand-in GPU")
cuda_driver.compile_cubin = lambda source, arch, driver_version=None: source.encode()
import mytriton
import mytriton.language as tl

@mytriton.jit
def scale(x, n, out, s, BLOCK: tl.constexpr = 64):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * s, mask=offs < n)

class Device:
    def __init__(self, address):
        self.__cuda_array_interface__ = {{"data": (address, False), "shape": (64,), "typestr": "<f4", "version": 3}}

scale[(2,)](Device(0x10000), 100, Device(0x20000), 2.0)
assert driver_api._driver.launches, "no launch"
print("lark" in sys.modules)
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MYTRITON_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
