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


def test_a_stride_the_signature_leaves_unhinted_gets_tma_where_the_launch_gives_16_bytes(descriptor_matmul, gpu):
    """K = 1000 is no multiple of 16 (no ``i32:16``), yet its rows span 2,000
    bytes, a multiple of 16: the maps describe the launch, and TMA runs."""
    handle = launch(descriptor_matmul, 256, 512, 1000)
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]
    assert gpu.encoded[0][2] == 2000 and handle.launcher._cp_async_kernel is None


def test_a_stride_of_no_multiple_of_16_bytes_runs_the_kernel_built_with_cp_async(descriptor_matmul, gpu):
    handle = launch(descriptor_matmul, 256, 512, 1001)  # rows of 2,002 bytes: no tensor map
    (run,) = gpu.launches
    assert run.param_pointers is None and handle.launcher._cp_async_kernel is not None
    assert gpu.encoded == []


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


# A is G matrices of M rows stacked: its descriptor's rows are G * M, which
# the kernel computes and no parameter holds (the attention's Z * H * N_CTX).
STACKED = """
@mytriton.jit
def stacked(a_ptr, b_ptr, c_ptr, G, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[G * M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    row = tl.program_id(0) * BM
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, tl.program_id(1) * BN]), acc)
    rows = row + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < G * M) & (cols[None, :] < N))
"""
STACKED_BLOCKS = {"BM": 128, "BN": 128, "BK": 64}


def launch_stacked(module, G, M, N, K):
    grid = (-(-(G * M) // 128), -(-N // 128))
    return module.stacked[grid](StandInTensor(0x100000, FLOAT16), StandInTensor(0x200000, FLOAT16),
                                StandInTensor(0x300000, FLOAT16), G, M, N, K, **STACKED_BLOCKS)


def test_a_bound_the_kernel_multiplies_from_parameters_is_multiplied_at_the_launch(kernel_module, gpu):
    handle = launch_stacked(kernel_module(STACKED), 3, 40, 256, 128)
    assert "cp.async.bulk.tensor.2d" in handle.asm["cuda"]
    a_map, b_map, c_map = gpu.encoded
    assert a_map == (0x100000, (128, 120), 256, (64, 128), UINT16, SWIZZLE_128B)  # K columns, 3 * 40 rows
    assert b_map[1] == (256, 128)
    assert c_map[:2] == (0x300000, (256, 120))  # the store's mask tests its rows against G * M too


def test_a_product_past_i32_runs_the_kernel_built_with_cp_async(kernel_module, gpu):
    # 2^16 * 2^15 = 2^31 is negative in the kernel's i32: no map has that many rows.
    launch_stacked(kernel_module(STACKED), 2 ** 16, 2 ** 15, 256, 128)
    (run,) = gpu.launches
    assert run.param_pointers is None and gpu.encoded == []


def test_a_product_is_wrapped_to_i32_as_the_kernel_computes_it():
    from mytriton.runtime.tensor_maps import TensorMaps, read_specs

    header = [{"base": "a", "dims": [64, ["G", "M"]], "stride": 64, "element_bytes": 2, "box": [64, 64],
               "swizzle": 128}]
    maps = TensorMaps(read_specs(header, ["a", "G", "M"], "k"))
    assert maps.shapes([0x1000, 3, 40]) == ((0x1000, (64, 120), 128),)
    # 65536 * 65537 = 2^32 + 65536: the kernel's i32 product, and its mask's bound, is 65536.
    assert maps.shapes([0x1000, 65536, 65537]) == ((0x1000, (64, 65536), 128),)


def test_a_product_naming_no_parameter_is_an_error_in_the_header():
    from mytriton.diagnostics import CompileError
    from mytriton.runtime.tensor_maps import read_specs

    header = [{"base": "a", "dims": [64, ["G", "rows"]], "stride": 64, "element_bytes": 2, "box": [64, 64],
               "swizzle": 128}]
    with pytest.raises(CompileError, match="'rows', which is no parameter"):
        read_specs(header, ["a", "G"], "k")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(3, 40, 256, 128), (2, 200, 136, 64)], ids=lambda s: "x".join(map(str, s)))
def test_gpu_stacked_descriptor_matmul_matches_the_interpreter(kernel_module, shape):
    import numpy as np

    G, M, N, K = shape
    module = kernel_module(STACKED)
    rng = np.random.default_rng(G * M)
    a = rng.standard_normal((G * M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    results = []
    for backend in ("cuda", "interp"):
        c = np.full((G * M, N), np.nan, np.float16)
        module.stacked[(-(-(G * M) // 128), -(-N // 128))](a, b, c, G, M, N, K, **STACKED_BLOCKS, backend=backend)
        results.append(c.astype(np.float32))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-2, atol=1e-2)


def run_misaligned(out_dir):
    """``mytriton run`` of the descriptor matmul with K = 1001: rows of 2,002 bytes, which no map takes."""
    return ["run", str(ROOT / "triton_style" / "descriptor_matmul.py"), "-k", "matmul_kernel_descriptor",
            "--grid", "2,4", "--backend", "cuda", "--out-dir", str(out_dir),
            "-D", "BLOCK_SIZE_M=128", "-D", "BLOCK_SIZE_N=128", "-D", "BLOCK_SIZE_K=64",
            "--arg", "a_ptr=rand:256x1001:f16", "--arg", "b_ptr=rand:1001x512:f16",
            "--arg", "c_ptr=zeros:256x512:f16", "--arg", "M=256", "--arg", "N=512", "--arg", "K=1001"]


def test_mytriton_run_of_a_kernel_file_runs_the_cp_async_build_where_no_map_describes_the_launch(gpu, tmp_path):
    from click.testing import CliRunner

    from mytriton.cli import main

    result = CliRunner().invoke(main, run_misaligned(tmp_path), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run,) = gpu.launches
    assert run.param_pointers is None and gpu.encoded == []  # rows of 2,002 bytes: no map, the cp.async build


def test_mytriton_run_s_launch_remark_is_located_at_no_caller_s_line(gpu, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from mytriton import remarks
    from mytriton.cli import main

    monkeypatch.setattr(remarks, "remarks_from_env", lambda: True)
    monkeypatch.setattr(remarks, "print_jit_remarks", lambda *args: None)
    result = CliRunner().invoke(main, run_misaligned(tmp_path), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("remark: kernel 'matmul_kernel_descriptor': this launch runs the kernel built "
                                    "with cp.async"), result.stderr  # not click's line


def test_a_launch_no_map_describes_never_builds_the_tma_kernel(descriptor_matmul, gpu, monkeypatch):
    from mytriton.runtime import cuda_driver

    built = []
    def compile_cubin(source, arch, driver_version=None):
        built.append("bulk.tensor" in source)
        return source.encode()

    monkeypatch.setattr(cuda_driver, "compile_cubin", compile_cubin)
    launch(descriptor_matmul, 256, 512, 1001)  # rows of 2,002 bytes: the cp.async build runs
    assert built == [False]
    launch(descriptor_matmul, 256, 512, 1024)  # another specialisation (K divisible by 16): TMA's
    assert built == [False, True]


def test_with_remarks_on_the_first_launch_that_runs_the_cp_async_build_says_why(descriptor_matmul, gpu,
                                                                               monkeypatch, capsys):
    from mytriton import remarks

    monkeypatch.setattr(remarks, "remarks_from_env", lambda: True)
    monkeypatch.setattr(remarks, "print_jit_remarks", lambda *args: None)  # the compile's own: not these tests'
    launch(descriptor_matmul, 256, 512, 1001)
    launch(descriptor_matmul, 256, 512, 1001)
    err = capsys.readouterr().err
    assert err.count("remark: kernel 'matmul_kernel_descriptor': this launch runs the kernel built with "
                     "cp.async, not TMA: the row stride K = 1001 elements of 2 bytes (2002 bytes) is not a "
                     "positive multiple of 16 bytes below 2^40") == 1
    assert "test_tensor_maps.py" in err  # located at the launch


def test_a_map_s_problem_names_the_parameter_it_reads():
    from mytriton.runtime.tensor_maps import TensorMaps, read_specs

    spec = {"base": "a", "dims": ["K", ["M", "B"]], "stride": "K", "element_bytes": 4, "box": [32, 64], "swizzle": 128}
    maps = TensorMaps(read_specs([spec], ["a", "M", "K", "B"], "k"))
    assert maps.problem([0x1008, 64, 64, 2], ["a", "M", "K", "B"]) == "a's address 0x1008 is not a multiple of 16 bytes"
    assert maps.problem([0x1000, 0, 64, 2], ["a", "M", "K", "B"]) == "the extent M * B = 0 is not from 1 to 2^32 - 1"
    assert maps.problem([0x1000, 64, 64, 2], ["a", "M", "K", "B"]) is None


def test_a_warmup_builds_the_cubin_and_the_launch_after_it_does_not(descriptor_matmul, gpu, monkeypatch):
    from mytriton.runtime import cuda_driver

    built = []
    monkeypatch.setattr(cuda_driver, "compile_cubin",
                        lambda source, arch, driver_version=None: built.append(1) or source.encode())
    args = (StandInTensor(0x100000, FLOAT16), StandInTensor(0x200000, FLOAT16), StandInTensor(0x300000, FLOAT16),
            256, 512, 1024)
    descriptor_matmul.warmup(*args, grid=(2, 4), BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
    assert built == [1] and gpu.launches == []
    launch(descriptor_matmul, 256, 512, 1024)
    assert built == [1] and len(gpu.launches) == 1


def test_a_warmup_no_map_describes_builds_the_cp_async_kernel_the_launch_runs(descriptor_matmul, gpu, monkeypatch):
    """An autotuner warms every config up at once: the TMA builds there
    would be wasted, and each launch after would build again."""
    from mytriton.runtime import cuda_driver

    built = []
    def compile_cubin(source, arch, driver_version=None):
        built.append("bulk.tensor" in source)
        return source.encode()

    monkeypatch.setattr(cuda_driver, "compile_cubin", compile_cubin)
    args = (StandInTensor(0x100000, FLOAT16), StandInTensor(0x200000, FLOAT16), StandInTensor(0x300000, FLOAT16),
            256, 512, 1001)  # rows of 2,002 bytes
    descriptor_matmul.warmup(*args, grid=(2, 4), BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
    assert built == [False] and gpu.launches == []
    launch(descriptor_matmul, 256, 512, 1001)
    assert built == [False] and len(gpu.launches) == 1
