"""The software-pipeline pass: a staged dot's K loop multi-buffered over num_stages
shared buffers, its next tiles copied asynchronously (cp.async on the GPU)
while the current ones are multiplied. The rewrite's shape is in
tests/lit/software-pipeline/; here: where the number of stages comes from, the
shared-memory budget, the loops left alone, the interpreter computing the
same bits before and after, nvcc building it, and the GPU against the
interpreter."""
from __future__ import annotations

import re

import numpy as np
import pytest

import mytriton
from conftest import cdiv, compile_text, kernel_source, load_sample, ssa_of
from mytriton.backends.cuda.dots import vector_width
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.software_pipeline import DEFAULT_NUM_STAGES, SoftwarePipelinePass, choose_stages
from mytriton.passes.stage_dots import StageDotsPass
from mytriton.passes.verify import verify
from mytriton.target import DEFAULT_SHARED_LIMIT as NO_OPT_IN, SHARED_MEMORY_BUDGET
from mytriton.types import F16, F32, SharedType
from test_stage_dots import MATMUL, variant

# The matmul sample with 32x32x16 tiles (8 KiB a stage: four stages fit).
SMALL = variant("BM: tl.constexpr = 64, BN: tl.constexpr = 64, BK: tl.constexpr = 32",
                "BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16")

# Triton's 128x128x64 f16 config (f32 accumulation).
F16_BIG = variant("BM: tl.constexpr = 64, BN: tl.constexpr = 64, BK: tl.constexpr = 32",
                  "BM: tl.constexpr = 128, BN: tl.constexpr = 128, BK: tl.constexpr = 64")
F16_SIGNATURE = "*fp16, *fp16, *fp32, i32, i32, i32"


def staged(source: str = SMALL):
    # Exact f32 products, so that results compare to float64 NumPy at 1e-4.
    return StageDotsPass().apply(ssa_of(source, optimized=True, file="matmul.py", f32_default="ieee"))


def pipelined(source: str = SMALL, num_stages: int | None = None, budget: int = SHARED_MEMORY_BUDGET):
    return verify(SoftwarePipelinePass(num_stages=num_stages, shared_budget=budget).apply(staged(source)))


def the_loop(kernel):
    (loop,) = [op for op in walk(kernel.body) if op.name == "for"]
    return loop


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


# ---- how many stages ------------------------------------------------------------------------------


def test_without_a_count_the_loop_gets_tritons_default_of_three_stages():
    assert DEFAULT_NUM_STAGES == 3
    assert the_loop(pipelined()).attrs["pipeline_stages"] == 3


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_pass_count_gives_the_stages_and_the_wait_depth(stages):
    kernel = pipelined(num_stages=stages)
    assert the_loop(kernel).attrs["pipeline_stages"] == stages
    waits = [op.attrs["pending"] for op in walk(kernel.body) if op.name == "async_wait"]
    assert waits == [stages - 2, 0]  # in the loop; after it
    allocations = [op for op in walk(kernel.body) if op.name == "shared_alloc_stages"]
    assert [op.result.type.shape for op in allocations] == [(32 * stages, 16), (16 * stages, 32)]


def test_one_stage_leaves_the_staged_loop_as_it_was():
    before = print_kernel(staged())
    assert print_kernel(pipelined(num_stages=1)) == before


def test_a_loops_own_num_stages_wins_over_the_pass_count():
    source = variant("for k in range(0, K, BK):", "for k in tl.range(0, K, BK, num_stages=2):", SMALL)
    loop = the_loop(pipelined(source, num_stages=4))
    assert (loop.attrs["num_stages"], loop.attrs["pipeline_stages"]) == (2, 2)


def test_fewer_stages_when_the_budget_holds_fewer_and_the_loop_says_so():
    loop = the_loop(pipelined(MATMUL, num_stages=4, budget=NO_OPT_IN))  # 16 KiB a stage: three fit in 48 KiB
    assert loop.attrs["pipeline_stages"] == 3
    text = compile_text(MATMUL, "staged", num_stages=4, shared_budget=NO_OPT_IN)
    assert "range(0, K, 32, pipeline_stages=3)" in text


def test_sm_90s_budget_holds_every_stage_asked_for_past_48_kib():
    assert SHARED_MEMORY_BUDGET == 232448  # 227 KiB, what an H100/H200 block may opt in to
    assert the_loop(pipelined(MATMUL, num_stages=4)).attrs["pipeline_stages"] == 4  # 64 KiB
    assert "pipeline_stages=4" in compile_text(MATMUL, "staged", num_stages=4)


def test_the_arch_sets_the_budget_and_shared_budget_overrides_it():
    assert "pipeline_stages=4" in compile_text(MATMUL, "staged", num_stages=5, arch="sm_75")  # 64 KiB
    assert "pipeline_stages=5" in compile_text(MATMUL, "staged", num_stages=5, arch="sm_80")  # 163 KiB
    assert "pipeline_stages=3" in compile_text(MATMUL, "staged", num_stages=5, arch="sm_50")  # 48 KiB
    assert "pipeline_stages=2" in compile_text(MATMUL, "staged", num_stages=4, shared_budget=40000)


def test_a_stage_that_fits_once_only_is_not_pipelined_and_the_loop_says_so():
    big = variant("BM: tl.constexpr = 64, BN: tl.constexpr = 64, BK: tl.constexpr = 32",
                  "BM: tl.constexpr = 128, BN: tl.constexpr = 128, BK: tl.constexpr = 32")
    kernel = pipelined(big, budget=NO_OPT_IN)  # 32 KiB a stage
    assert the_loop(kernel).attrs["pipeline_stages"] == 1
    assert "async_copy_to_shared" not in names(kernel) and "copy_to_shared" in names(kernel)


def test_tritons_128x128x64_f16_config_gets_its_three_stages():
    f16 = StageDotsPass().apply(ssa_of(F16_BIG, optimized=True, file="matmul.py", signature=F16_SIGNATURE))
    kernel = verify(SoftwarePipelinePass().apply(f16))  # 32 KiB a stage, 96 KiB in all
    assert the_loop(kernel).attrs["pipeline_stages"] == 3
    allocations = [op for op in walk(kernel.body) if op.name == "shared_alloc_stages"]
    assert sum(op.result.type.nbytes for op in allocations) == 3 * 32768


def test_choose_stages_takes_the_most_that_fit_the_budget():
    beside = SHARED_MEMORY_BUDGET - 3 * 8192
    assert choose_stages(4, lambda stages: stages * 8192) == 4
    assert choose_stages(4, lambda stages: beside + stages * 8192) == 3
    assert choose_stages(3, lambda stages: SHARED_MEMORY_BUDGET + stages * 8192) == 1
    assert choose_stages(4, lambda stages: NO_OPT_IN - 3 * 8192 + stages * 8192, NO_OPT_IN) == 3


def test_a_second_run_changes_nothing():
    once = print_kernel(pipelined())
    again = verify(SoftwarePipelinePass().apply(parse_kernel(once, "matmul.py")))
    assert print_kernel(again) == once


def test_compile_and_the_stage_dots_command_take_num_stages():
    text = compile_text(SMALL, "staged", num_stages=2)
    assert "pipeline_stages=2" in text and "async_wait pending=0" in text


# ---- loops left alone -----------------------------------------------------------------------------


def test_a_loop_carried_pointer_is_left_alone():
    # Triton's tutorial spelling: the copy's offsets come from a carried value.
    source = variant("for k in range(0, K, BK):", "kk = 0\n    for k in range(0, K, BK):", SMALL)
    source = variant("a_cols = k + offs_k[None, :]", "a_cols = kk + offs_k[None, :]\n        kk += BK", source)
    kernel = pipelined(source)
    assert "pipeline_stages" not in the_loop(kernel).attrs
    assert "async_copy_to_shared" not in names(kernel)


def test_a_dot_outside_any_loop_is_left_alone():
    source = kernel_source("""
        @mytriton.jit
        def one_tile(a_ptr, b_ptr, c_ptr, M, N, K):
            rows = tl.arange(0, 16)[:, None]
            cols = tl.arange(0, 16)[None, :]
            a = tl.load(a_ptr + rows * K + cols, mask=(rows < M) & (cols < K), other=0.0)
            b = tl.load(b_ptr + rows * N + cols, mask=(rows < K) & (cols < N), other=0.0)
            tl.store(c_ptr + rows * N + cols, tl.dot(a, b), mask=(rows < M) & (cols < N))
    """)
    before = print_kernel(staged(source))
    assert print_kernel(verify(SoftwarePipelinePass().apply(staged(source)))) == before


# ---- the interpreter runs pipelined SSA: the same bits as unstaged ------------------------------------

SHAPES = [(70, 50, 77), (65, 130, 20), (33, 17, 9), (64, 64, 0), (96, 40, 160)]  # ragged; K < BK; K = 0


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_pipelined_and_unstaged_ssa_compute_the_same(stages, shape):
    M, N, K = shape
    rng = np.random.default_rng(M * N + K + stages)
    a = rng.uniform(0.5, 2.0, (M, K)).astype(np.float32) * rng.choice([-1, 1], (M, K)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (K, N)).astype(np.float32)
    outputs = []
    for kernel in (ssa_of(SMALL, optimized=True, file="matmul.py", f32_default="ieee"), pipelined(num_stages=stages)):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(M, 32), cdiv(N, 32)), [a, b, c, M, N, K])
        outputs.append(c)
    np.testing.assert_array_equal(outputs[1], outputs[0])


def test_the_interpreter_runs_a_pipelined_loop_counting_down():
    source = variant("for k in range(0, K, BK):", "for k in range(K - BK, -BK, -BK):", SMALL)
    M, N, K = 40, 36, 48  # K a multiple of BK: each step's tile starts at k >= 0
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    kernel = pipelined(source, num_stages=3)
    assert the_loop(kernel).attrs["pipeline_stages"] == 3
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(kernel, (cdiv(M, 32), cdiv(N, 32)), [a, b, c, M, N, K])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_a_stage_view_out_of_range_is_an_error_in_the_interpreter():
    text = print_kernel(pipelined(num_stages=2)).replace("%0, 0, stages=2", "%0, 2, stages=2", 1)
    assert "%0, 2, stages=2" in text
    with pytest.raises(CompileError, match="stage 2 of a buffer of 2 stages"):
        run_kernel(parse_kernel(text, "matmul.py"), (1, 1), [np.ones((32, 32), np.float32)] * 3 + [32, 32, 32])


# ---- CUDA ------------------------------------------------------------------------------------------


def test_copies_are_16_bytes_where_rows_allow_and_elementwise_otherwise():
    from mytriton.ir.layout_attributes import PaddedShared
    from mytriton.ir.ssa import Const

    def buffer(cols, element=F32, pad=0):
        return SharedType((32, cols), element, PaddedShared(pad, (1, 0)))

    assert vector_width(buffer(16), Const(0.0)) == 4
    assert vector_width(buffer(16, F16), Const(0.0)) == 8
    assert vector_width(buffer(16, pad=2), Const(0.0)) == 2  # rows 18 floats apart: 8-byte chunks
    assert vector_width(buffer(16, pad=1), Const(0.0)) == 1
    assert vector_width(buffer(16), Const(1.0)) == 1  # cp.async fills with zeros only
    assert vector_width(buffer(16), Const(-0.0)) == 1


def test_the_cuda_waits_and_copies_asynchronously():
    cuda = compile_text(MATMUL, "cuda")
    assert cuda.count("cp.async.commit_group") == 3  # two prologue stages, one per K step
    assert "cp.async.wait_group 1;" in cuda and "cp.async.wait_group 0;" in cuda
    assert "cp.async.cg.shared.global" in cuda and "cp.async.ca.shared.global" in cuda
    assert "extern __shared__ __align__(16) unsigned char smem[];" in cuda
    # 3 stages of 64x32 A, rows padded by 4 for TF32's fragment reads; B after it.
    assert "float* const shared_dot_a0 = reinterpret_cast<float*>(smem + 0);" in cuda
    assert f"float* const shared_dot_b0 = reinterpret_cast<float*>(smem + {192 * 36 * 4});" in cuda


def test_a_prefetch_of_whole_chunks_is_guarded_not_branched_around():
    # The loop's prefetch for an iteration past the end is predicated off in each cp.async
    # zero-filled by its ignore-src predicate (zero_fill="ignore_src": an exact-f32 dot, on FMA).
    source = SMALL.replace("acc += tl.dot(a, b)", 'acc += tl.dot(a, b, input_precision="ieee")')
    cuda = compile_text(source, "cuda", signature="*fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16")
    loop = cuda.split("for (int v", 1)[1]
    assert "@go cp.async.cg.shared.global" in loop
    assert not re.search(r"^\s*if \(v\d+\) \{", loop, re.M)


def test_a_prefetch_zero_filled_by_source_size_is_branched_around():
    # Copies into buffers that only mma.sync reads (f16 32x32x16 before sm_90) take cp.async's
    # source size (zero_fill="src_size"): the prefetch past the end is skipped by a branch.
    cuda = compile_text(SMALL, "cuda", signature="*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16")
    loop = cuda.split("for (int v", 1)[1]
    assert "@go cp.async" not in loop
    assert re.search(r"^\s*if \(v\d+\) \{", loop, re.M)
    assert "const int n = " in loop


@pytest.mark.nvcc
@pytest.mark.parametrize("stages", [2, 4])
def test_the_pipelined_matmul_builds_with_cp_async_in_its_ptx(stages):
    from mytriton.backends.cuda.nvcc import compile_ptx
    ptx = compile_ptx(compile_text(SMALL, "cuda", num_stages=stages), "sm_90")
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    assert f"cp.async.wait_group {stages - 2};" in ptx


@pytest.mark.nvcc
def test_a_pipelined_f16_matmul_builds():
    from mytriton.backends.cuda.nvcc import compile_ptx
    cuda = compile_text(SMALL, "cuda", signature="*fp16, *fp16, *fp32, i32, i32, i32")
    assert "cp.async.cg.shared.global [%0], [%1], 16" in cuda
    assert "cp.async.cg.shared.global" in compile_ptx(cuda, "sm_90")


# ---- the GPU against the interpreter --------------------------------------------------------------

GPU_SHAPES = [(128, 128, 128), (70, 50, 77), (65, 130, 20), (33, 17, 9), (64, 64, 0), (100, 96, 260)]


@pytest.fixture(autouse=True)
def exact_f32_dots(monkeypatch):
    """Results here compare to float64 at 1e-4: launches take f32 dots at "ieee"
    (tests/test_mma.py runs the pipelined loop on tensor cores)."""
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee")


def run_both(shape, config=(32, 32, 16), num_stages=None, num_warps=4, source=None):
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(sum(shape) + (num_stages or 0) * 7 + num_warps)
    a = rng.uniform(0.5, 2.0, (M, K)).astype(np.float32) * rng.choice([-1, 1], (M, K)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (K, N)).astype(np.float32)
    kernel = load_sample("matmul").matmul_kernel
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    outputs = []
    for backend in ("interp", "cuda"):
        c = np.full((M, N), np.nan, np.float32)
        kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=num_warps, num_stages=num_stages,
                     backend=backend)
        outputs.append(c)
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(outputs[1], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_pipelined_matmul_on_the_gpu_matches_the_interpreter(num_stages, shape):
    run_both(shape, num_stages=num_stages)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_pipelined_matmul_on_any_warp_count(num_warps, num_stages):
    run_both((100, 90, 70), num_stages=num_stages, num_warps=num_warps)
    run_both((96, 64, 128), config=(64, 64, 32), num_stages=num_stages, num_warps=num_warps)


@pytest.mark.gpu
@pytest.mark.parametrize("config", [(16, 16, 16), (64, 64, 32), (32, 128, 32), (64, 16, 128)])
def test_pipelined_matmul_tile_configs_on_the_gpu(config):
    run_both((130, 150, 200), config=config, num_stages=3)
    run_both((128, 128, 256), config=config, num_stages=3)


def test_a_reduction_in_the_kernel_keeps_room_for_its_scratch():
    summed = variant("tl.store(c_ptr + c_rows * N + c_cols, acc,",
                     "tl.store(c_ptr + c_rows * N + c_cols, acc - tl.max(acc, axis=1)[:, None],", MATMUL)
    loop = the_loop(pipelined(summed, num_stages=3, budget=NO_OPT_IN))
    assert loop.attrs["pipeline_stages"] == 2  # 3 x 16 KiB would leave nothing for the reduction
    compile_text(summed, "cuda", num_stages=3, shared_budget=NO_OPT_IN)  # and the CUDA fits the budget


def test_a_transposed_tile_of_pointers_beside_the_loop_is_counted_at_8_bytes_an_element():
    from mytriton.passes.software_pipeline import scratch_reserve
    transposed = variant("tl.store(c_ptr + c_rows * N + c_cols, acc,",
                         "tl.store(tl.trans(tl.trans(c_ptr + c_rows * N + c_cols)), acc,", SMALL)
    assert scratch_reserve(staged(transposed)) == 32 * 32 * 8
    assert the_loop(pipelined(transposed)).attrs["pipeline_stages"] == 3


def padded_pipelined_cuda(pad: int, num_stages: int = 3) -> str:
    from mytriton.backends.cuda.allocate_shared import AllocateSharedPass
    from mytriton.backends.cuda.copy_widths import CopyWidthsPass
    from mytriton.backends.cuda.read_widths import ReadWidthsPass
    from mytriton.ir.ssa_text import parse_kernel as read
    from mytriton import compiler
    text = compile_text(SMALL, "layouts", "matmul.py", num_stages=num_stages, f32_default="ieee")
    text = re.sub(r"pad=\d+", f"pad={pad}", text)
    # The edit changes the buffers' rows: the copies' chunks, the dot's reads and the buffers' places
    # are decided again.
    decided = ReadWidthsPass().apply(CopyWidthsPass().apply(read(text, "matmul.py")))
    return compiler.emit_cuda(AllocateSharedPass().apply(decided))


def test_padded_rows_narrow_the_chunks_to_what_the_pitch_allows():
    assert "cp.async.cg.shared.global" in padded_pipelined_cuda(4)  # pitches 20 and 36: 16-byte chunks
    assert "cp.async.cg.shared.global" not in padded_pipelined_cuda(2)  # 18 and 34: 8-byte chunks
    assert ", 8, %2;" in padded_pipelined_cuda(2)
    assert "cp.async.ca.shared.global [%0], [%1], 8" not in padded_pipelined_cuda(1)  # one element at a time


@pytest.mark.nvcc
@pytest.mark.parametrize("pad", [1, 2, 4])
def test_padded_pipelined_buffers_build(pad):
    from mytriton.backends.cuda.nvcc import compile_ptx
    assert "cp.async.wait_group 1;" in compile_ptx(padded_pipelined_cuda(pad), "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("pad", [1, 2, 4])
def test_padded_pipelined_buffers_give_the_same_matmul_on_the_gpu(pad):
    from mytriton.runtime.cuda_driver import CudaKernel
    M, N, K = 70, 50, 84
    rng = np.random.default_rng(pad)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    CudaKernel(padded_pipelined_cuda(pad), "sm_90").launch((cdiv(M, 32), cdiv(N, 32)), [a, b, c, M, N, K])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_padding_never_takes_the_scratch_the_pipeline_left_room_for():
    summed = variant("acc += tl.dot(a, b)", "acc += tl.dot(a, b)\n        acc = acc - tl.max(acc, axis=1)[:, None]",
                     MATMUL)
    # 2 stages (32 KiB) + 16 KiB kept for the loop's reduction fill 48 KiB: A stays unpadded.
    tight = compile_text(summed, "layouts", num_stages=3, shared_budget=NO_OPT_IN, f32_default="ieee")
    assert "pipeline_stages=2" in tight and "pad=4" not in tight
    roomy = compile_text(summed, "layouts", num_stages=3, f32_default="ieee")  # sm_90's 227 KiB
    assert "pipeline_stages=3" in roomy and "padded_shared<pad=4" in roomy


def test_an_epilogue_s_scratch_overlays_the_buffers_so_padding_fits_beside_it():
    """A reduction after the loop uses its scratch over the staged buffers
    (late_scratch), never beside them: the buffers are padded all the same."""
    summed = variant("tl.store(c_ptr + c_rows * N + c_cols, acc,",
                     "tl.store(c_ptr + c_rows * N + c_cols, acc - tl.max(acc, axis=1)[:, None],", MATMUL)
    tight = compile_text(summed, "layouts", num_stages=3, shared_budget=NO_OPT_IN, f32_default="ieee")
    assert "pipeline_stages=2" in tight and "padded_shared<pad=4" in tight
    assert "shared_memory(bytes=34816, scratch=0, late_scratch=1024)" in tight
