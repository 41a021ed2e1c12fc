"""A tile whose mask tests its coordinates >= 0 where they may be negative
(a tensor descriptor's or a block pointer's boundary check, at a place of
runtime sizes) is staged all the same: its copy carries
``lower_bounds=(rows, cols)`` and reads zeros before coordinate 0, as the
masked load does (the interpreter and cp.async test it; TMA, whose
coordinates are signed, reads zeros there itself)."""
from __future__ import annotations

import numpy as np
import pytest

import mytriton.language as tl

from conftest import ROOT, kernel_source, ssa_of
from mytriton import compiler, remarks
from mytriton.backends.interp import run_kernel
from mytriton.compiler import Options
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import StageDotsPass
from mytriton.passes.verify import verify

# A's rows and B's columns start SHIFT_M and SHIFT_N before the program's
# block: negative for the first programs, and not provably otherwise.
SHIFTED = """
@mytriton.jit
def shifted(a_ptr, b_ptr, c_ptr, M, N, K, SHIFT_M, SHIFT_N,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m = tl.program_id(0) * BM - SHIFT_M
    off_n = tl.program_id(1) * BN - SHIFT_N
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc)
"""
BLOCKS = {"BM": 32, "BN": 32, "BK": 16}
WGMMA_BLOCKS = {"BM": 64, "BN": 64, "BK": 32}  # (wgmma's smallest M over 4 warps, so TMA's swizzled buffers)
SIGNATURE = "*fp16:16, *fp16:16, *fp32:16, i32, i32:16, i32:16, i32, i32"
# (M, N, K, SHIFT_M, SHIFT_N): ragged on every axis; shifts within a block and past one.
CASES = [(45, 40, 48, 3, 5), (70, 24, 16, 33, 1), (32, 32, 32, 0, 31), (9, 56, 64, 7, 40)]


def lowered():
    return ssa_of(kernel_source(SHIFTED), optimized=True, defines=BLOCKS, signature=SIGNATURE)


def run(kernel, case, rng) -> tuple[np.ndarray, np.ndarray]:
    M, N, K, shift_m, shift_n = case
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    grid = (-(-(M + shift_m) // 32), -(-(N + shift_n) // 32))
    run_kernel(kernel, grid, [a, b, c, M, N, K, shift_m, shift_n])
    return c, a.astype(np.float64) @ b.astype(np.float64)


def copies(kernel) -> list:
    return [op for op in walk(kernel.body) if "copy_strided_to_shared" in op.name]


def test_the_copies_test_the_axes_that_may_be_negative_from_0():
    kernel = lowered()
    StageDotsPass().apply(kernel)
    assert "dot_shared" in [op.name for op in walk(kernel.body)]
    assert [op.attrs.get("lower_bounds") for op in copies(kernel)] == [(1, 0), (0, 1)]  # A's rows, B's columns


def test_the_pipelined_copies_keep_their_lower_bounds():
    kernel = lowered()
    StageDotsPass().apply(kernel)
    SoftwarePipelinePass(num_stages=3).apply(kernel)
    bounds = {op.attrs.get("lower_bounds") for op in copies(kernel)}
    assert bounds == {(1, 0), (0, 1)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_staged_and_pipelined_kernels_read_zeros_before_0_as_the_masked_loads_do(case):
    unstaged = print_kernel(lowered())
    rng = np.random.default_rng(sum(case))
    reference, expected = run(parse_kernel(unstaged, "k.py"), case, rng)
    np.testing.assert_allclose(reference, expected, rtol=1e-3, atol=1e-3)  # every element written
    for stages in (1, 3):
        kernel = lowered()
        StageDotsPass().apply(kernel)
        SoftwarePipelinePass(num_stages=stages).apply(kernel)
        staged, _ = run(kernel, case, np.random.default_rng(sum(case)))
        np.testing.assert_array_equal(staged, reference)


def test_a_lower_bound_on_coordinates_other_than_the_pointers_is_not_staged():
    source = kernel_source("""
        @mytriton.jit
        def k(a_ptr, b_ptr, c_ptr, S):
            rows = tl.arange(0, 32) - S
            cols = tl.arange(0, 16)
            a = tl.load(a_ptr + (rows[:, None] + 1) * 16 + cols[None, :],
                        mask=(rows[:, None] >= 0) & (rows[:, None] < 31), other=0.0)
            b = tl.load(b_ptr + cols[:, None] * 32 + tl.arange(0, 32)[None, :])
            c = tl.dot(a, b)
            tl.store(c_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)
    """)
    kernel = ssa_of(source, optimized=True)
    StageDotsPass().apply(kernel)
    (remark,) = remarks.dot_remarks(kernel)
    assert "not staged" in remark.message or "dot_shared" not in [op.name for op in walk(kernel.body)]


@pytest.mark.parametrize("attribute", ["(2, 0)", "(1,)", "1"])
def test_a_lower_bounds_attribute_other_than_a_pair_of_flags_is_a_located_error(attribute):
    kernel = lowered()
    StageDotsPass().apply(kernel)
    text = print_kernel(kernel).replace("lower_bounds=(1, 0)", f"lower_bounds={attribute}")
    with pytest.raises(CompileError, match="lower_bounds of 'copy_strided_to_shared' must be a "):
        verify(parse_kernel(text, "k.ssa"))


def cuda_of(arch: str = "sm_80") -> str:
    return compiler.compile_source(kernel_source(SHIFTED), "k.py", "cuda",
                                   Options(signature=SIGNATURE, defines=BLOCKS, arch=arch))


def test_cp_async_tests_rows_and_columns_from_0_where_the_copy_says_so():
    cuda = cuda_of("sm_80")
    assert "row >= 0 && row < M" in cuda  # A's rows
    assert "col >= 0" in cuda  # B's columns


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,blocks", [("sm_80", BLOCKS), ("sm_90a", WGMMA_BLOCKS)], ids=["cp.async", "tma"])
def test_the_lower_bounded_copies_build(arch, blocks):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compiler.compile_source(kernel_source(SHIFTED), "k.py", "cuda",
                                   Options(signature=SIGNATURE, defines=blocks, arch=arch))
    assert ".entry" in compile_ptx(cuda, arch)


def test_the_mlir_back_end_tests_the_copies_from_0_too():
    mlir = compiler.compile_source(kernel_source(SHIFTED), "k.py", "mlir",
                                   Options(signature=SIGNATURE, defines=BLOCKS, num_stages=1))
    # Two for the copies (A's rows, B's columns), two for the store's rows and columns.
    assert mlir.count("arith.cmpi sge") == 4


def test_tma_copies_the_tiles_that_may_start_before_0():
    source = kernel_source(SHIFTED)
    kernel = compiler.run_stages(source, "k.py", "layouts", Options(signature=SIGNATURE, defines=WGMMA_BLOCKS,
                                                                    arch="sm_90a", num_warps=4))
    (remark,) = remarks.dot_remarks(kernel)
    assert "staged (A TMA," in remark.message, remark.message


def test_a_tile_whose_first_column_may_be_no_multiple_of_16_bytes_is_not_tmas():
    """B's columns start SHIFT_N before the block: a TMA box starting there
    stops the kernel (an illegal instruction on the H100), so B keeps cp.async."""
    source = kernel_source(SHIFTED)
    kernel = compiler.run_stages(source, "k.py", "layouts", Options(signature=SIGNATURE, defines=WGMMA_BLOCKS,
                                                                    arch="sm_90a", num_warps=4))
    (remark,) = remarks.dot_remarks(kernel)
    assert "B cp.async, 16-byte chunks (not TMA: its column offset is not proven a multiple of 16 bytes)" \
        in remark.message, remark.message


def test_tutorial_09s_descriptor_form_is_staged_on_tma():
    path = ROOT / "tests" / "triton_style" / "persistent_matmul_descriptors.py"
    options = Options(kernel="matmul_descriptor_persistent", signature="*fp16:16, *fp16:16, *fp16:16, "
                      "i32:16, i32:16, i32:16", num_warps=8, arch="sm_90a",
                      defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8,
                               "EPILOGUE_SUBTILE": False, "NUM_SMS": 132, "WARP_SPECIALIZE": False})
    kernel = compiler.run_stages(path.read_text(), str(path), "layouts", options)
    (remark,) = remarks.dot_remarks(kernel)
    assert remark.message.startswith("dot 128x128x64 f16: staged (TMA)"), remark.message


HOST_DESCRIPTORS = "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, " \
    "tensordesc<fp16[128, 64]>"
# Made in the kernel, of rows Z * H * N_CTX: the launch multiplies them for K's and V's tensor maps.
DEVICE_DESCRIPTORS = "*fp16:16, *fp16:16, *fp16:16, *fp16:16"


@pytest.mark.parametrize("stage", [1, 3])
@pytest.mark.parametrize("descriptors", [HOST_DESCRIPTORS, DEVICE_DESCRIPTORS], ids=["host", "device"])
def test_the_attention_on_descriptors_stages_both_dots_on_tma(stage, descriptors):
    path = ROOT / "tests" / "triton_style" / "attention_descriptors.py"
    options = Options(kernel="_attn_fwd", signature=f"fp32, *fp32:16, i32, i32, {descriptors}, i32:16", num_warps=8,
                      arch="sm_90a", defines={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "FP8_OUTPUT": False,
                                              "STAGE": stage, "warp_specialize": False,
                                              "default_dtype": tl.float16})
    kernel = compiler.run_stages(path.read_text(), str(path), "layouts", options)
    messages = [remark.message for remark in remarks.dot_remarks(kernel)]
    # Q @ K^T and P @ V in each of the stage's loops: K and V copied by TMA, on wgmma.
    assert len(messages) == (2 if stage == 1 else 4), messages
    assert all(("B TMA)" in m or "B staged (TMA)" in m) and "wgmma" in m for m in messages), messages
    # P @ V runs into the next iteration, until Q @ K^T's wait (overlap-wgmma)
    assert all("in flight into the next iteration" in m for m in messages[1::2]), messages
    # Q: one TMA box before the loop
    assert "A copied once before the loop by TMA" in messages[0], messages


def attention_on_host_descriptors():
    path = ROOT / "tests" / "triton_style" / "attention_descriptors.py"
    options = Options(kernel="_attn_fwd", signature=f"fp32, *fp32:16, i32, i32, {HOST_DESCRIPTORS}, i32:16",
                      arch="sm_90a", defines={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "FP8_OUTPUT": False,
                                              "STAGE": 1, "warp_specialize": False, "default_dtype": tl.float16})
    return compiler.run_stages(path.read_text(), str(path), "layouts", options), options


def test_the_kernel_without_tma_copies_q_by_its_threads_again():
    """Where the ring's mbarriers would not fit the budget, allocate-shared
    takes every copy back from TMA (without_tma): Q's once-only TMA copy, its
    group and its wait become the threads' own copy again."""
    from mytriton.backends.cuda.tma_copies import without_tma

    kernel, options = attention_on_host_descriptors()
    q_copy = next(op for op in walk(kernel.body) if op.name.endswith("copy_strided_to_shared"))
    assert (q_copy.name, q_copy.attrs["engine"]) == ("async_copy_strided_to_shared", "tma")
    kernel = without_tma(kernel)
    verify(kernel)
    names = [op.name for op in kernel.body.ops]
    at = names.index("copy_strided_to_shared")
    assert names[at + 1] == "barrier" and "async_wait" not in names[:at]
    assert "cp.async.bulk" not in compiler.to_cuda(kernel, options)


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [BLOCKS, WGMMA_BLOCKS], ids=["cp.async", "tma"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_gpu_shifted_descriptor_matmul_matches_the_interpreter(kernel_module, case, blocks):
    module = kernel_module(SHIFTED)
    M, N, K, shift_m, shift_n = case
    rng = np.random.default_rng(sum(case))
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    grid = (-(-(M + shift_m) // blocks["BM"]), -(-(N + shift_n) // blocks["BN"]))
    results = []
    for backend in ("cuda", "interp"):
        c = np.full((M, N), np.nan, np.float32)
        module.shifted[grid](a, b, c, M, N, K, shift_m, shift_n, **blocks, backend=backend)
        results.append(c)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-3, atol=1e-3)


def test_a_launch_s_cp_async_build_is_the_kernel_compiled_without_tma():
    """A launch whose values give no tensor map runs the kernel built with
    cp.async (runtime/jit.py's cuda_without_tma): the optimised SSA through the
    back end with TMA off, whose barriers and proxy fences are cp.async's (the
    laid-out SSA's rest on TMA's copies: no barrier after the loop's wait)."""
    import dataclasses
    from types import SimpleNamespace

    from mytriton.runtime.jit import cuda_without_tma

    path = ROOT / "tests" / "triton_style" / "attention_descriptors.py"
    _, options = attention_on_host_descriptors()
    ssa = compiler.print_ssa(compiler.run_stages(path.read_text(), str(path), "opt", options))
    compiled = SimpleNamespace(asm={"ssa": ssa}, kernel=SimpleNamespace(loc=SimpleNamespace(file=str(path))))
    cuda = cuda_without_tma(compiled, options)
    assert "cp.async.bulk" not in cuda and "cp.async.wait_group" in cuda
    assert cuda == compiler.compile_source(path.read_text(), str(path), "cuda", dataclasses.replace(options, tma=False))
