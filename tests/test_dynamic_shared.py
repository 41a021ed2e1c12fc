"""Shared memory past 48 KiB: the budget is the target's (sm_90: 227 KiB),
every buffer is carved out of one dynamic shared array at offsets the emitter
lays out from the IR, the header says how many bytes a launch must give, and
the launcher raises the kernel's limit before launching with them."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from conftest import cdiv, compile_text, load_sample, randf, sample_names, sample_options
from mytriton.backends.cuda.emitter import HEADER_PREFIX, read_header
from mytriton.diagnostics import CompileError
from mytriton.target import DEFAULT_SHARED_LIMIT, SHARED_MEMORY_BUDGET, shared_memory_budget

F16_SIGNATURE = "*fp16, *fp16, *fp32, i32, i32, i32"
BIG = {"BM": 128, "BN": 128, "BK": 64}  # Triton's 128x128x64 f16 config


def matmul_text(emit: str, signature: str = F16_SIGNATURE, defines=None, **options) -> str:
    with open(load_sample("matmul").__file__) as handle:
        text = handle.read()
    return compile_text(text, emit, "samples/matmul.py", signature=signature,
                        defines=defines or BIG, **{"num_warps": 8, **options})


def header_of(cuda: str) -> dict:
    return json.loads(cuda.split("\n", 1)[0][len(HEADER_PREFIX):])


# ---- the budget ------------------------------------------------------------------------------------


def test_the_budget_is_the_targets():
    assert shared_memory_budget("sm_90") == SHARED_MEMORY_BUDGET == 232448
    assert shared_memory_budget("sm_80") == 163 * 1024
    assert shared_memory_budget("sm_52") == DEFAULT_SHARED_LIMIT == 49152  # not listed: what every GPU allows


# ---- the header and the declarations --------------------------------------------------------------


def test_the_128x128x64_f16_three_stage_matmul_records_its_shared_bytes():
    cuda = matmul_text("cuda")
    # 3 stages of A (128 rows of 64 halves) and B (64 rows of 128), swizzled for wgmma (no padding)
    expected = 3 * (128 * 64 * 2 + 64 * 128 * 2)
    assert header_of(cuda)["shared_bytes"] == expected == 98304
    assert read_header(cuda)["shared_bytes"] == expected


def test_every_buffer_is_carved_out_of_one_dynamic_array_at_aligned_offsets():
    cuda = matmul_text("cuda")
    assert cuda.count("__shared__") == 1
    # 1024-byte alignment: wgmma's swizzle follows address bits 4-9
    assert "extern __shared__ __align__(1024) unsigned char smem[];  // 98304 bytes at launch" in cuda
    assert "__half* const shared_dot_a0 = reinterpret_cast<__half*>(smem + 0);" in cuda
    assert f"__half* const shared_dot_b0 = reinterpret_cast<__half*>(smem + {3 * 128 * 64 * 2});" in cuda


def test_an_epilogues_scratch_overlays_the_staged_buffers_after_their_last_use():
    # A reduction of the accumulator after the K loop (and its drain) needs scratch
    # only once the staged buffers are dead: it reuses their memory from byte 0.
    with open(load_sample("matmul").__file__) as handle:
        text = handle.read().replace("acc,", "acc - tl.max(acc, axis=1)[:, None],")
    assert "tl.max(acc" in text
    cuda = compile_text(text, "cuda", "samples/matmul.py", f32_default="ieee")
    assert "float* const shared_dot_a0 = reinterpret_cast<float*>(smem + 0);" in cuda
    declaration = next(line for line in cuda.splitlines() if "extern __shared__" in line)
    assert "the staged buffers, then" in declaration and "of scratch from 0 after their last use" in declaration
    late = int(declaration.split("then ", 1)[1].split(" of scratch", 1)[0])
    assert header_of(cuda)["shared_bytes"] >= late > 0


WIDE = {"BM": 128, "BN": 256, "BK": 32}  # the f16 config of 128 accumulators a thread on 8 warps
ALIGNED = "*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16"  # stores proven 16 bytes wide


def test_an_epilogue_exchange_past_the_buffers_takes_the_launchs_opted_in_memory():
    # 128x256 f32 (128 KiB, rows padded by 8: 132 KiB) over 72 KiB of buffers, as Triton's epilogue.
    cuda = matmul_text("cuda", ALIGNED, defines=WIDE, tma=False)  # (TMA would store it: test_tma_stores.py)
    assert header_of(cuda)["shared_bytes"] == 128 * (256 + 8) * 4
    assert "const float* const s35_read = &s35[(L1_p0) * 264 + L1_p1 * 4];" in cuda


def test_the_fragments_rows_in_scratch_are_padded_apart():
    # Rows of 1 KiB would put a warp's 8 fragment rows in the same banks.
    layouts = matmul_text("layouts", ALIGNED, defines=WIDE, tma=False)
    assert "convert_layout %35, scratch_pad=8" in layouts


def test_scratch_used_while_the_buffers_live_comes_first_and_the_buffers_after_it():
    # A reduction inside the K loop needs scratch while the staged buffers are in use.
    with open(load_sample("matmul").__file__) as handle:
        text = handle.read().replace("acc += tl.dot(a, b)", "acc += tl.dot(a, b)\n        acc -= tl.max(acc, axis=1)[:, None]")
    assert "tl.max(acc" in text
    cuda = compile_text(text, "cuda", "samples/matmul.py", f32_default="ieee")
    scratch = int(cuda.split("bytes at launch: ", 1)[1].split(" of scratch", 1)[0])
    assert scratch > 0
    offset = (scratch + 15) // 16 * 16
    assert f"float* const shared_dot_a0 = reinterpret_cast<float*>(smem + {offset});" in cuda
    assert header_of(cuda)["shared_bytes"] > offset


def sample_cuda(name: str) -> str:
    with open(load_sample(name).__file__) as handle:
        return compile_text(handle.read(), "cuda", f"samples/{name}.py", **sample_options(name))


def test_a_kernel_without_shared_memory_declares_none_and_needs_none():
    cuda = sample_cuda("add")
    assert "smem" not in cuda and header_of(cuda)["shared_bytes"] == 0


@pytest.mark.parametrize("name", sorted(sample_names()))
def test_each_samples_header_gives_the_bytes_its_one_shared_array_takes(name):
    cuda = sample_cuda(name)
    shared = header_of(cuda)["shared_bytes"]
    assert cuda.count("__shared__") == (1 if shared else 0)
    if shared:
        assert f"unsigned char smem[];  // {shared} bytes at launch" in cuda


def test_a_shared_budget_of_48_kib_keeps_the_old_limit():
    # One 32 KiB stage fits in 48 KiB (swizzled for wgmma, unpadded), two do not; a 64 KiB stage is refused.
    assert "pipeline_stages=1" in matmul_text("staged", shared_budget=48 * 1024)
    assert header_of(matmul_text("cuda", shared_budget=48 * 1024))["shared_bytes"] == 128 * 64 * 2 + 64 * 128 * 2
    with pytest.raises(CompileError, match=r"49152-byte \(48 KiB\) budget"):
        matmul_text("staged", shared_budget=48 * 1024, defines={"BM": 128, "BN": 128, "BK": 128})


def test_a_tile_whose_buffers_pass_227_kib_is_a_located_error():
    with pytest.raises(CompileError, match=r"over the 232448-byte \(227 KiB\) budget") as info:
        matmul_text("cuda", defines={"BM": 256, "BN": 256, "BK": 256})
    assert info.value.loc.line == 24  # tl.dot


def test_the_layouts_stage_refuses_buffers_past_the_budget_at_the_first_one_with_exit_1(tmp_path):
    from click.testing import CliRunner

    from mytriton.cli import main

    staged = tmp_path / "matmul.ssa"
    staged.write_text(matmul_text("staged", signature="*fp32, *fp32, *fp32, i32, i32, i32"))
    refused = CliRunner().invoke(main, ["layouts", str(staged), "--shared-budget", "16384"])
    assert refused.exit_code == 1
    assert refused.output.startswith("samples/matmul.py:20:13: error: kernel 'matmul_kernel' needs 196608 bytes "
                                     "of shared memory (196608 for staged dot tiles and 0 of scratch), over the "
                                     "16384-byte (16 KiB) budget")


def test_the_compile_command_takes_shared_budget(tmp_path):
    from click.testing import CliRunner

    from mytriton.cli import main
    from conftest import SAMPLES

    out = tmp_path / "k.cu"
    args = ["compile", str(SAMPLES / "matmul.py"), "-s", F16_SIGNATURE, "-D", "BM=128", "-D", "BN=128",
            "-D", "BK=64", "--num-warps", "8"]
    assert CliRunner().invoke(main, args + ["-o", str(out)]).exit_code == 0
    assert header_of(out.read_text())["shared_bytes"] == 98304
    args[args.index("BK=64")] = "BK=128"  # 64 KiB a stage
    refused = CliRunner().invoke(main, args + ["--shared-budget", "49152", "-o", str(tmp_path / "no.cu")])
    assert refused.exit_code == 1 and "49152-byte (48 KiB) budget" in refused.output
    assert not (tmp_path / "no.cu").exists()


@pytest.mark.parametrize("bad", ["-1", "1.5", '"64"', "1000000000"])
def test_a_header_with_a_bad_shared_size_is_refused(bad):
    cuda = matmul_text("cuda")
    first, rest = cuda.split("\n", 1)
    edited = first.replace('"shared_bytes": 98304', f'"shared_bytes": {bad}') + "\n" + rest
    with pytest.raises(CompileError, match="'shared_bytes' must be an integer"):
        read_header(edited)


# ---- nvcc -------------------------------------------------------------------------------------------


@pytest.mark.nvcc
def test_the_kernel_past_48_kib_builds_with_dynamic_shared_memory():
    from mytriton.backends.cuda.nvcc import compile_cubin, compile_ptx

    cuda = matmul_text("cuda")
    ptx = compile_ptx(cuda, "sm_90")
    assert ".extern .shared .align 1024 .b8 smem[];" in ptx
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx
    assert compile_cubin(cuda, "sm_90")[:4] == b"\x7fELF"


# ---- the launcher -----------------------------------------------------------------------------------


class FakeDeviceArray:
    def __init__(self, address: int) -> None:
        self.__cuda_array_interface__ = {"data": (address, False), "shape": (1,), "typestr": "<f4", "version": 3}


@pytest.fixture
def gpu(monkeypatch):
    """A stand-in driver (tests/fake_driver.py) for a device allowing 227 KiB a block."""
    from fake_driver import FakeDriver, install

    return install(monkeypatch, FakeDriver(shared_limit=232448))


def launched(kernel, grid, args):
    """Launch on the stand-in driver; (grid, threads, the matmul's parameters, shared bytes)."""
    kernel.launch(grid, args)
    (launch,) = kernel.driver.launches
    return launch.grid, launch.threads, list(struct.unpack("<QQQiii", launch.params)), launch.shared_bytes


def test_the_launcher_raises_the_limit_and_launches_with_the_headers_bytes(gpu):
    from mytriton.runtime.cuda_driver import CudaKernel

    kernel = CudaKernel(matmul_text("cuda"))
    args = [FakeDeviceArray(4096), FakeDeviceArray(8192), FakeDeviceArray(12288), 300, 200, 100]
    grid, threads, words, shared = launched(kernel, (3, 2), args)
    assert (grid, threads, shared) == ((3, 2, 1), 256, 98304)
    assert list(gpu.attributes.values()) == [98304]
    assert words == [4096, 8192, 12288, 300, 200, 100]


def test_the_launcher_leaves_the_limit_alone_within_48_kib(gpu):
    from mytriton.runtime.cuda_driver import CudaKernel

    small = matmul_text("cuda", defines={"BM": 32, "BN": 32, "BK": 32}, num_warps=4)
    assert 0 < header_of(small)["shared_bytes"] <= 48 * 1024
    _, _, _, shared = launched(CudaKernel(small), (1,), [FakeDeviceArray(16)] * 3 + [32, 32, 32])
    assert gpu.attributes == {} and shared == header_of(small)["shared_bytes"]


def test_more_than_the_device_allows_is_an_error_naming_the_kernel(monkeypatch):
    from fake_driver import FakeDriver, install
    from mytriton.runtime.cuda_driver import CudaKernel

    install(monkeypatch, FakeDriver(shared_limit=64 * 1024))
    with pytest.raises(CompileError, match=r"kernel 'matmul_kernel' needs 98304 bytes of shared memory, more "
                                           r"than this GPU allows a block \(65536\)"):
        launched(CudaKernel(matmul_text("cuda")), (1,), [FakeDeviceArray(16)] * 3 + [32, 32, 32])


# ---- the GPU against the interpreter ----------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(256, 256, 256), (200, 130, 300), (100, 70, 40)])
def test_the_128x128x64_f16_three_stage_matmul_matches_the_interpreter(shape):
    kernel = load_sample("matmul").matmul_kernel
    M, N, K = shape
    rng = np.random.default_rng(10)
    a = randf(rng, M, K).astype(np.float16)
    b = randf(rng, K, N).astype(np.float16)
    results = {}
    for backend in ("interp", "cuda"):
        c = np.full((M, N), np.nan, np.float32)  # an unwritten output shows
        compiled = kernel[(cdiv(M, 128), cdiv(N, 128))](a, b, c, M, N, K, BM=128, BN=128, BK=64,
                                                          num_warps=8, num_stages=3, backend=backend)
        results[backend] = c
    assert compiled.metadata["num_stages"] == 3
    assert header_of(compiled.asm["cuda"])["shared_bytes"] > 48 * 1024
    np.testing.assert_allclose(results["cuda"], results["interp"], rtol=1e-3, atol=1e-3)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(results["cuda"], exact, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,shared", [((256, 512, 96), 128 * 256 * 4 + 3 * 8), ((200, 300, 70), 128 * 264 * 4)])
def test_a_128x256_f16_matmul_exchanged_through_132_kib_matches_the_interpreter(shape, shared):
    # Ragged sizes (rows of 140 and 600 bytes, which no tensor map takes) run the cp.async build, whose
    # stores' rows are proven contiguous (not aligned): the result is exchanged into a warp's lanes
    # along the row (e86d346), through the 128 x 264 f32 of scratch that overlays the three stages'
    # buffers. Sizes that are multiples of 16 let TMA copy the tiles (its three mbarriers come last)
    # and store the result, staged unpadded in the same scratch (tma-stores).
    kernel = load_sample("matmul").matmul_kernel
    M, N, K = shape
    rng = np.random.default_rng(N)
    a = randf(rng, M, K).astype(np.float16)
    b = randf(rng, K, N).astype(np.float16)
    results = {}
    for backend in ("interp", "cuda"):
        c = np.full((M, N), np.nan, np.float32)  # an unwritten output shows
        compiled = kernel[(cdiv(M, 128), cdiv(N, 256))](a, b, c, M, N, K, **WIDE, num_warps=8, num_stages=3,
                                                          backend=backend)
        results[backend] = c
    np.testing.assert_allclose(results["cuda"], results["interp"], rtol=1e-3, atol=1e-3)
    ran = compiled.launcher._cp_async_kernel or compiled.launcher
    assert ran.shared_bytes == shared


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 4])
def test_an_f32_tf32_matmul_past_48_kib_matches_the_interpreter(stages):
    kernel = load_sample("matmul").matmul_kernel
    M, N, K = 190, 170, 150
    rng = np.random.default_rng(stages)
    a, b = randf(rng, M, K), randf(rng, K, N)
    results = {}
    for backend in ("interp", "cuda"):
        c = np.full((M, N), np.nan, np.float32)  # an unwritten output shows
        compiled = kernel[(cdiv(M, 128), cdiv(N, 128))](a, b, c, M, N, K, BM=128, BN=128, BK=32,
                                                          num_warps=8, num_stages=stages, backend=backend)
        results[backend] = c
    # stages x (128 rows of 32 + 4, 32 rows of 128 + 8) f32: 71680 or 143360 bytes
    assert header_of(compiled.asm["cuda"])["shared_bytes"] == stages * (128 * 36 + 32 * 136) * 4
    # Operands rounded to TF32 alike; only the order of the f32 sums differs.
    np.testing.assert_allclose(results["cuda"], results["interp"], rtol=1e-3, atol=1e-3)
