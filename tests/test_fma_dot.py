"""The register-tiled FMA dot: the layouts stage gives an exact dot's result a
register tile per thread and pads its A buffer (swizzles it where TMA copies
it), and the CUDA loop reads both
operands from shared memory 16 bytes at a time. Here: what the CUDA and PTX
look like, that every tile and warp count builds with nvcc without spilling,
and (marked gpu, for the H200) that the GPU agrees with the interpreter.
The layout choice itself is tested as text in tests/lit/layouts/ and in
test_layouts.py."""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import mytriton
from conftest import compile_text, kernel_source, load_sample, tiered

MATMUL = Path(load_sample("matmul").__file__).read_text()


def matmul_cuda(bm: int, bn: int, bk: int, num_warps: int = 4, num_stages: int = 1) -> str:
    return compile_text(MATMUL, "cuda", file="samples/matmul.py", num_warps=num_warps, f32_default="ieee",
                        num_stages=num_stages,
                        defines={"BM": bm, "BN": bn, "BK": bk})


def test_the_64x64x32_sample_gives_each_thread_4x8_outputs_read_16_bytes_at_a_time():
    cuda = matmul_cuda(64, 64, 32)
    assert "// 4x8 outputs per thread; per k: 4 A value(s) in 16-byte reads along k, " \
           "8 B value(s) in 16-byte reads" in cuda
    # A's rows are 32 + 4 floats apart: 16 consecutive rows start in distinct bank groups.
    assert re.search(r"const unsigned a_at = \(unsigned\)__cvta_generic_to_shared\(\w+\);", cuda)
    assert '"r"(a_at + (unsigned)((L0_p0 + i * 16) * 36 + kk) * 4)' in cuda
    assert '"r"(b_at + (unsigned)((kk + q) * 64 + L0_p1 * 4' in cuda


@pytest.mark.nvcc
def test_the_64x64x32_sample_reads_shared_memory_only_in_16_byte_vectors():
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(matmul_cuda(64, 64, 32), "sm_90")
    loads = re.findall(r"ld\.shared(\.v\d)?\.f32", ptx)
    assert loads and all(vector == ".v4" for vector in loads), sorted(set(loads))


# A launch's specialisation where TMA can copy A: 16-byte aligned pointers, K (A's row stride) and N multiples of 16.
TMA_SIGNATURE = "*fp32:16, *fp32:16, *fp32:16, i32, i32:16, i32:16"


def swizzled_cuda(bk: int, arch: str = "sm_90a", tma: bool = True) -> str:
    return compile_text(MATMUL, "cuda", file="samples/matmul.py", f32_default="ieee", num_stages=3,
                        signature=TMA_SIGNATURE, arch=arch, tma=tma, defines={"BM": 64, "BN": 64, "BK": bk})


@pytest.mark.parametrize("bk,swizzle,chunks,row_bytes", [(32, 128, 8, 2048), (16, 64, 4, 1024)])
def test_an_a_buffer_tma_copies_is_swizzled_and_read_at_chunk_offsets_worked_out_before_the_loop(
        bk, swizzle, chunks, row_bytes):
    cuda = swizzled_cuda(bk)
    assert re.search(rf"shared_dot_a0 = .*row-major, {swizzle}-byte swizzle \(nvmma_shared\)", cuda)
    assert "the 64x" + str(bk) + " tile of a_ptr at (v3, 0), TMA through map 0" in cuda
    # Before the K loop, each chunk's swizzled offset; in it, the stage's address plus one of them.
    name = re.search(rf"unsigned (h\d+_a_chunk)\[{chunks}\];", cuda).group(1)
    assert cuda.index(f"unsigned {name}") < cuda.index("for (int v")
    assert f'"r"(a_at + {name}[kk % {bk} / 4] + (unsigned)(i * {row_bytes})));' in cuda


@pytest.mark.parametrize("arch,tma", [("sm_90a", False), ("sm_80", True)])
def test_an_a_buffer_cp_async_copies_stays_padded(arch, tma):
    # Swizzled but copied by cp.async, the 64x64x32 sample ran 2 % slower on the H200 than padded.
    cuda = swizzled_cuda(32, arch, tma)
    assert re.search(r"shared_dot_a0 = .*row-major, 4 padding element\(s\) per row", cuda)
    assert "_a_chunk" not in cuda


def test_an_a_buffer_tma_cannot_copy_stays_padded():
    # A's base not known to be 16-byte aligned: no tensor map can describe it.
    cuda = compile_text(MATMUL, "cuda", file="samples/matmul.py", f32_default="ieee", num_stages=3, arch="sm_90a",
                        signature="*fp32, *fp32:16, *fp32:16, i32:16, i32:16, i32:16",
                        defines={"BM": 64, "BN": 64, "BK": 32})
    assert re.search(r"shared_dot_a0 = .*row-major, 4 padding element\(s\) per row", cuda)


@pytest.mark.nvcc
@pytest.mark.parametrize("bk", [16, 32, 64])
def test_a_swizzled_a_builds_without_local_memory(bk):
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(swizzled_cuda(bk), "sm_90a")
    assert "cp.async.bulk.tensor" in ptx
    assert ".local" not in ptx


# (BM, BN, BK, num_warps): tiles from 16 to 128 on 1 to 8 warps, within 256 outputs per thread.
BUILDS = [(16, 16, 16, 1), (16, 16, 16, 8), (32, 32, 16, 2), (32, 128, 32, 4), (64, 64, 32, 1),
          (64, 64, 32, 8), (128, 64, 64, 4), (64, 16, 128, 4), (128, 128, 32, 8)]


@pytest.mark.nvcc
@pytest.mark.parametrize("config", BUILDS, ids=lambda c: "x".join(map(str, c[:3])) + f"-w{c[3]}")
def test_every_tile_and_warp_count_builds(config):
    from mytriton.backends.cuda.nvcc import compile_cubin

    bm, bn, bk, num_warps = config
    assert compile_cubin(matmul_cuda(bm, bn, bk, num_warps), "sm_90")


def ptxas_report(cuda: str) -> str:
    """nvcc's -Xptxas -v lines for ``cuda`` built for sm_90 as mytriton builds it."""
    from mytriton.backends.cuda.nvcc import find_nvcc

    with tempfile.TemporaryDirectory(prefix="mytriton-test-") as tmp:
        source = Path(tmp) / "kernel.cu"
        source.write_text(cuda)
        proc = subprocess.run([find_nvcc(), "--cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v",
                               "-o", str(Path(tmp) / "kernel.cubin"), str(source)],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.nvcc
@pytest.mark.parametrize("config, most_registers", tiered([((64, 64, 32, 4), 168), ((128, 128, 32, 4), 255)],
                                                          fast=[((64, 64, 32, 4), 168)]),
                         ids=["64x64x32-w4", "128x128x32-w4"])
def test_the_benchmark_tiles_build_without_local_memory(config, most_registers):
    # 64x64x32: 128 threads x 168 registers lets three blocks share an SM's 64 K registers.
    # 128x128x32 on 4 warps: 128 outputs per thread, which fit only because the
    # accumulator is updated in place (fold makes acc += tl.dot(a, b) a dot into acc).
    report = ptxas_report(matmul_cuda(*config))
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert int(re.search(r"Used (\d+) registers", report).group(1)) <= most_registers, report


# ---- on the GPU, against the interpreter ---------------------------------------------------------


@pytest.fixture(autouse=True)
def exact_f32_dots(monkeypatch):
    """This file is about the exact FMA path: launches take f32 dots at "ieee"."""
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee")


def run_both(config, shape, num_warps, seed):
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    kernel = load_sample("matmul").matmul_kernel
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    outs = {}
    for backend in ("cuda", "interp"):
        c = np.full((M, N), np.nan, np.float32)
        kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=num_warps, backend=backend)
        outs[backend] = c
    assert not np.isnan(outs["cuda"]).any()
    np.testing.assert_allclose(outs["cuda"], outs["interp"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs["cuda"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


TILES = [(16, 16, 16), (32, 32, 16), (64, 64, 32), (32, 128, 32), (128, 64, 16), (128, 128, 32)]
# square, ragged in each dimension, K below BK
SHAPES = [(256, 256, 256), (200, 130, 77), (97, 255, 40), (130, 70, 9)]


@pytest.mark.gpu
@pytest.mark.parametrize("config", TILES)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_register_tiled_dot_matches_the_interpreter_on_the_gpu(config, shape):
    run_both(config, shape, 4, seed=sum(config) + sum(shape))


# Every tile on every warp count that keeps within 256 outputs a thread (more is refused at compile time).
WARP_CASES = [(config, num_warps) for config in [(16, 16, 16), (32, 64, 32), (64, 64, 32), (128, 128, 32)]
              for num_warps in (1, 2, 4, 8) if config[0] * config[1] <= 256 * 32 * num_warps]


# M ragged; K and N multiples of 16, so that TMA copies A, zero-filling past M, into a swizzled buffer.
TMA_SHAPES = [(200, 144, 96), (97, 64, 48), (256, 256, 256)]


@pytest.mark.gpu
@pytest.mark.parametrize("config", [(64, 64, 32), (32, 32, 16), (128, 64, 64), (32, 128, 32)])
@pytest.mark.parametrize("shape", TMA_SHAPES)
def test_a_swizzled_a_copied_by_tma_matches_the_interpreter_on_the_gpu(config, shape):
    run_both(config, shape, 4, seed=3 * sum(config) + sum(shape))


@pytest.mark.gpu
@pytest.mark.parametrize("config,num_warps", WARP_CASES)
def test_the_register_tiled_dot_matches_the_interpreter_on_every_warp_count(config, num_warps):
    run_both(config, (150, 190, 70), num_warps, seed=num_warps)


@pytest.mark.nvcc
def test_a_general_dot_pads_its_scratch_a_tile_and_reads_it_16_bytes_at_a_time():
    from mytriton.backends.cuda.nvcc import compile_ptx
    from test_matmul import SCALED

    cuda = compile_text(kernel_source(SCALED), "cuda", defines={"BM": 32, "BN": 32, "BK": 16})
    assert re.search(r"a\d+_tile\[\(c0\) \* 20 \+ c1\] = ", cuda)  # rows of 16 + 4 floats
    assert re.search(r"__cvta_generic_to_shared\(a\d+_tile\)", cuda)
    assert '"r"(a_at + (unsigned)((L0_p0 + i * 16) * 20 + kk) * 4)' in cuda
    assert "ld.shared.v4.f32" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
def test_a_dot_of_f16_tiles_off_the_tensor_cores_reads_one_value_at_a_time_and_builds():
    from mytriton.backends.cuda.nvcc import compile_ptx

    # 16x16 on 8 warps leaves some warp without a 16x8 block: the dot stays on CUDA cores.
    cuda = compile_text(MATMUL, "cuda", file="samples/matmul.py", signature="*fp16, *fp16, *fp32, i32, i32, i32",
                        num_warps=8, defines={"BM": 16, "BN": 16, "BK": 16}, num_stages=1)
    assert "mma.sync" not in cuda
    assert "reinterpret_cast<const" not in cuda  # no vector reads (the buffers are views of smem)
    assert "__half2float(shared_dot_a0[" in cuda
    assert ".entry matmul_kernel" in compile_ptx(cuda, "sm_90")


TRANS_A = (Path(__file__).parent / "triton_style" / "matmul_trans.py").read_text()


def test_a_tf32_transposed_a_is_held_column_major_and_copied_in_16_byte_chunks():
    """a.T @ b with a [K, M] row-major, TF32 on mma.sync: the A buffer holds
    the tile column-major (its transpose's rows are a's rows, stride_am 1),
    so each thread copies 16-byte chunks of them, and the fragments are read
    down the transpose's rows from each lane's first element."""
    ints = ["i32:16"] * 4 + ["i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]  # M, N, K, then the strides
    cuda = compile_text(TRANS_A, "cuda", kernel="matmul_trans_a", file="matmul_trans.py", f32_default="tf32",
                        signature="*fp32:16, *fp32:16, *fp32:16, " + ", ".join(ints),
                        defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32})
    assert "shared_dot_a0 = reinterpret_cast<float*>(smem + 0);  // 384x32, column-major, 8 padding" in cuda
    copy = cuda.split("async_copy_strided_to_shared", 1)[1].split("async_copy_to_shared", 1)[0]
    assert "column by column (a column-major buffer)" in copy and "element by element" not in copy
    assert "cp.async.cg.shared.global [%0], [%1], 16" in copy
    assert "const float* const a_lane = &v28[(lane % 4) * 392 + warp_m * 16 + lane / 4];" in cuda
    assert "a_frag[rm][3] = __float_as_uint(a_lane[(kk + 4) * 392 + rm * 32 + 8]);" in cuda


def test_a_tf32_b_held_column_major_is_read_by_ldmatrix_four_k_to_a_matrix_row():
    """x @ w.T in TF32 on mma.sync (a 32-row tile: no wgmma): B's buffer holds
    w's rows (K contiguous); ldmatrix without .trans reads two blocks' K
    halves of 4 f32 each, from each lane's first element."""
    ints = ["i32:16"] * 4 + ["i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]
    for precision, split in (("tf32", False), ("tf32x3", True)):
        cuda = compile_text(TRANS_A, "cuda", kernel="matmul_trans_b", file="matmul_trans.py", f32_default=precision,
                            signature="*fp32:16, *fp32:16, *fp32:16, " + ", ".join(ints),
                            defines={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32})
        assert "96x32, column-major, 4 padding" in cuda
        lane_k = "(lane / 8) % 2 * 4"
        assert f"const unsigned b_lane = (unsigned)__cvta_generic_to_shared(&v29[(warp_n * 8 + lane / 16 * 16 + lane % 8) * 100 + 0 + {lane_k}]);" in cuda
        assert '"r"(b_lane + (rn * 16 * 100 + kk) * 4)' in cuda
        assert ("const float x = __uint_as_float(b_frag[rn][1]);" in cuda) == split


def load_trans_module():
    import importlib.util

    path = Path(__file__).parent / "triton_style" / "matmul_trans.py"
    spec = importlib.util.spec_from_file_location("fma_matmul_trans", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_transposed_a_of_an_exact_dot_is_held_column_major_and_copied_in_16_byte_chunks():
    """a.T @ b, exact: A's buffer is column-major (M-major), so each 16-byte
    run of a row of a [K, M] tile is one cp.async, and the dot reads A one
    value at a time down a column (a k), its threads' rows adjacent there."""
    ints = ["i32:16"] * 4 + ["i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]  # M, N, K, then the strides
    cuda = compile_text(TRANS_A, "cuda", kernel="matmul_trans_a", file="matmul_trans.py", f32_default="ieee",
                        signature="*fp32:16, *fp32:16, *fp32:16, " + ", ".join(ints),
                        defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32})
    assert "// 384x32, column-major, 49152 bytes" in cuda
    copy = cuda.split("async_copy_strided_to_shared", 1)[1].split("async_copy_to_shared", 1)[0]
    assert "column by column (a column-major buffer)" in copy and "element by element" not in copy
    assert "cp.async.cg.shared.global [%0], [%1], 16" in copy
    assert re.search(r"a_tile\[i\]\[0\] = v\d+\[kk \* 384 \+ \(\(L0_p0 \+ i \* 16\)\)\];", cuda)


def test_a_128x128_exact_k_loop_reading_a_along_k_unrolls_two_steps_not_all_eight():
    """4,096 FMAs a thread per K step, all unrolled, took NVVM and ptxas 1.4 s;
    1,024 FMAs at a time 0.54 s."""
    cuda = matmul_cuda(128, 128, 32, num_stages=3)
    assert re.search(r"#pragma unroll 2\n\s*for \(int kk = 0; kk < 32; kk \+= 4\) \{", cuda)


def test_a_k_loop_reading_a_one_value_at_a_time_stays_wholly_unrolled():
    """trans_a's A is M-major: one scalar read per row and k. Its loop rolled
    (eight k a trip) ran 20 % slower on an H100."""
    ints = ["i32:16"] * 4 + ["i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]
    cuda = compile_text(TRANS_A, "cuda", kernel="matmul_trans_a", file="matmul_trans.py", f32_default="ieee",
                        signature="*fp32:16, *fp32:16, *fp32:16, " + ", ".join(ints),
                        defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32})
    assert "#pragma unroll\n    for (int kk = 0; kk < 32; kk += 1) {" in cuda


def test_a_k_loop_reading_hoisted_chunk_offsets_stays_wholly_unrolled():
    """The chunk offsets are a register array indexed by kk: a loop left
    rolled would put them in local memory."""
    cuda = swizzled_cuda(32)
    loop = re.search(r"(#pragma unroll[^\n]*)\n\s*for \(int kk = 0; kk < 32; kk \+= 4\)", cuda)
    assert loop and loop.group(1) == "#pragma unroll" and "_a_chunk[kk % 32 / 4]" in cuda


@pytest.mark.parametrize("steps,fmas,unrolled", [(32, 128, 8), (8, 512, 2), (8, 128, 8), (32, 2048, 1), (6, 256, 3)])
def test_a_vector_fma_loop_unrolls_the_most_steps_that_divide_it_within_1024_fmas(steps, fmas, unrolled):
    from mytriton.backends.cuda.dots import _kk_unroll

    assert _kk_unroll(steps, fmas) == unrolled


@pytest.mark.gpu
@pytest.mark.parametrize("config", [(32, 32, 16), (64, 64, 32), (128, 128, 32)])
@pytest.mark.parametrize("shape", [(256, 192, 128), (200, 130, 77), (97, 255, 40)])
def test_a_transposed_a_of_an_exact_dot_matches_numpy_on_the_gpu(config, shape):
    M, N, K = shape
    rng = np.random.default_rng(sum(shape) + sum(config))
    at = rng.standard_normal((K, M)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    bm, bn, bk = config
    c = load_trans_module().matmul_at(at, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    np.testing.assert_allclose(c, at.T.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("form", ["x @ w.T", "a.T @ b"])
@pytest.mark.parametrize("config", [(32, 32, 32), (64, 64, 32), (128, 128, 32)])
@pytest.mark.parametrize("shape", [(200, 130, 77), (97, 255, 40)])
def test_a_tf32_operand_held_column_major_matches_numpy_on_the_gpu(monkeypatch, precision, form, config, shape):
    """The column-major TF32 operands on mma.sync (B by ldmatrix, A element by
    element; 128-row x @ w.T runs on wgmma), tf32x3 splitting what they read."""
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", precision)
    M, N, K = shape
    rng = np.random.default_rng(sum(shape) + sum(config))
    bm, bn, bk = config
    module = load_trans_module()
    if form == "x @ w.T":
        x, w = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
        c, exact = module.linear(x, w, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk), x.astype(np.float64) @ w.T
    else:
        at, b = rng.standard_normal((K, M)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
        c, exact = module.matmul_at(at, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk), at.T.astype(np.float64) @ b
    tol = (1e-2 if precision == "tf32" else 1e-4) * np.sqrt(K)  # TF32 keeps 10 bits of each operand
    np.testing.assert_allclose(c, exact, rtol=tol, atol=tol)
