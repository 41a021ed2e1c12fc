"""A kernel whose copies (and epilogue store) TMA makes is launched with a
tensor map per matrix it copies or stores, encoded from the launch's arguments (runtime/tensor_maps.py), and a
launch no map can describe runs the kernel built with cp.async. On a
stand-in driver (tests/fake_driver.py): its "maps" are their arguments."""
import ctypes
import importlib.util
import struct
from pathlib import Path

import pytest

from fake_driver import FakeDriver, decode_map, install
from test_launch_path import FLOAT16, StandInTensor

ROOT = Path(__file__).resolve().parent
UINT16, SWIZZLE_128B = 1, 3


@pytest.fixture
def gpu(monkeypatch):
    return install(monkeypatch, FakeDriver())


@pytest.fixture
def descriptor_matmul():
    spec = importlib.util.spec_from_file_location("tma_descriptor_matmul", ROOT / "triton_style" / "descriptor_matmul.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul_kernel_descriptor


def launch(kernel, M, N, K, a=0x100000, b=0x200000, c=0x300000):
    return kernel[(M // 128, N // 128)](StandInTensor(a, FLOAT16), StandInTensor(b, FLOAT16),
                                        StandInTensor(c, FLOAT16), M, N, K,
                                        BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)


def params_of(run, count):
    """The launch's kernelParams (the kernel's six, then its three maps) and the
    first ``count`` parameters' 8 bytes."""
    pointers = (ctypes.c_void_p * 9).from_address(run.param_pointers)
    return pointers, [ctypes.string_at(pointers[i], 8) for i in range(count)]


def test_each_map_is_encoded_from_the_arguments_and_passed_after_them(descriptor_matmul, gpu):
    handle = launch(descriptor_matmul, 256, 512, 1024)
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]
    a_map, b_map, c_map = gpu.encoded
    # A: K columns, M rows, K * 2 bytes a row, boxes of 64 columns (128 bytes) by 128 rows.
    assert a_map == (0x100000, (1024, 256), 2048, (64, 128), UINT16, SWIZZLE_128B)
    # B: a 64x128 tile as two boxes of 64 columns by 64 rows, N * 2 bytes a row.
    assert b_map == (0x200000, (512, 1024), 1024, (64, 64), UINT16, SWIZZLE_128B)
    # C, stored by TMA: N columns, M rows, in boxes of 64 columns by 128 rows.
    assert c_map == (0x300000, (512, 256), 1024, (64, 128), UINT16, SWIZZLE_128B)
    (run,) = gpu.launches
    assert run.params == b""  # no packed buffer: kernelParams
    pointers, values = params_of(run, 3)
    assert [struct.unpack("<Q", v)[0] for v in values] == [0x100000, 0x200000, 0x300000]
    maps = [ctypes.string_at(pointers[6 + i], 128) for i in range(3)]
    assert [decode_map(m) for m in maps] == [a_map, b_map, c_map]
    # After the six parameters (36 bytes), each map at the next multiple of 64, as CUDA lays them out.
    assert [pointers[i] - pointers[0] for i in range(9)] == [0, 8, 16, 24, 28, 32, 64, 192, 320]


def test_a_repeated_launch_on_the_same_matrices_encodes_its_maps_once(descriptor_matmul, gpu):
    for _ in range(3):
        launch(descriptor_matmul, 256, 512, 1024)
    launch(descriptor_matmul, 256, 512, 1024, a=0x500000)
    assert [m[0] for m in gpu.encoded] == [0x100000, 0x200000, 0x300000, 0x500000, 0x200000, 0x300000]


def test_a_launch_no_map_can_describe_runs_the_kernel_built_with_cp_async(descriptor_matmul, gpu):
    launch(descriptor_matmul, 256, 512, 1024)
    launch(descriptor_matmul, 256, 512, 0)  # K = 0: a matrix of no columns, which TMA cannot describe
    tma_run, cp_async_run = gpu.launches
    assert tma_run.function != cp_async_run.function
    assert cp_async_run.param_pointers is None and len(cp_async_run.params) > 0
    assert len(gpu.encoded) == 3  # only the first launch's


def test_a_map_the_driver_refuses_runs_the_kernel_built_with_cp_async(descriptor_matmul, gpu):
    gpu.refuse_maps = True
    handle = launch(descriptor_matmul, 256, 512, 1024)
    (run,) = gpu.launches
    assert run.param_pointers is None and handle.launcher._cp_async_kernel is not None


def test_host_arrays_on_a_thread_with_no_context_current_still_get_their_maps(gpu):
    """The maps are encoded once the device's context is current (the driver
    encodes none before): NumPy arrays, copied to the device around the
    launch, are copied by TMA too."""
    import numpy as np

    spec = importlib.util.spec_from_file_location("tma_unmasked", ROOT / "triton_style" / "matmul_unmasked.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    M, N, K = 256, 384, 512
    a, b, c = np.ones((M, K), np.float16), np.ones((K, N), np.float16), np.zeros((M, N), np.float16)
    assert gpu.current_context() == 0
    handle = module.matmul_unmasked[(2, 3)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=128, BLOCK_N=128,
                                           BLOCK_K=64, backend="cuda")
    assert handle.launcher._cp_async_kernel is None
    assert gpu.launches[0].param_pointers is not None
