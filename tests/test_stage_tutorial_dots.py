"""stage-dots and the software-pipeline pass on Triton's tutorial forms:
pointer tiles carried by the K loop and advanced each step, runtime strides
on both axes, rows and columns taken modulo the matrix size, masks on K
only. The rewrite itself, SSA before and after, is in
tests/lit/stage-dots/tutorial-matmul.ssa and tests/lit/software-pipeline/."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import cdiv, compile_text, kernel_source, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.ir.analysis import Definitions
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import NotCanonical, StageDotsPass, StridedPlan, match_dot
from mytriton.passes.verify import verify

# Tutorial 03's K loop (tests/triton_style/matmul.py), without the grouped ordering.
TUTORIAL = kernel_source("""
    @mytriton.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_am = (pid_m * BM + tl.arange(0, BM)) % M
        offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BM), BM)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BN), BN)
        offs_k = tl.arange(0, BK)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
""")

# The K loop as attention writes it: a loop over a range with a step, the mask
# a 1-D test of another offset than the pointer's, expanded.
SHIFTED_MASK = kernel_source("""
    @mytriton.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_am = pid_m * BM + tl.arange(0, BM)
        offs_bn = pid_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for start in range(0, K, BK):
            k_mask = (start + offs_k) < K
            a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & k_mask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_bn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
""")

SOURCES = {"tutorial": TUTORIAL, "shifted-mask": SHIFTED_MASK}


def unstaged(source: str):
    # Exact f32 products, so that results compare to float64 NumPy at 1e-4.
    return ssa_of(source, optimized=True, file="mm.py", f32_default="ieee")


def staged(source: str):
    return verify(StageDotsPass().apply(unstaged(source)))


def pipelined(source: str, num_stages: int | None = None):
    return verify(SoftwarePipelinePass(num_stages=num_stages).apply(staged(source)))


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


# ---- matching ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", SOURCES)
def test_a_tutorial_dot_is_matched_as_strided_copies(form):
    kernel = unstaged(SOURCES[form])
    (dot,) = [op for op in walk(kernel.body) if op.name == "dot"]
    plan = match_dot(Definitions(kernel), dot)
    assert not isinstance(plan, NotCanonical), plan
    assert isinstance(plan.a, StridedPlan) and isinstance(plan.b, StridedPlan)
    assert plan.a.advance is not None and plan.b.advance is not None


def test_the_tutorial_loop_copies_through_both_strides_and_the_wraps():
    kernel = staged(TUTORIAL)
    assert names(kernel).count("copy_strided_to_shared") == 2
    assert "load" not in names(kernel) and "dot" not in names(kernel)
    copies = [op for op in walk(kernel.body) if op.name == "copy_strided_to_shared"]
    a, b = copies
    assert [str(getattr(x, "name", "")) for x in a.operands[4:6]] == ["stride_am", "stride_ak"]
    assert getattr(a.operands[8], "name", None) == "M"  # rows wrap at M, as (... ) % M does
    assert getattr(b.operands[9], "name", None) == "N"


def test_the_carried_pointer_tiles_are_dropped_from_the_loop():
    (loop,) = [op for op in walk(staged(TUTORIAL).body) if op.name == "for"]
    assert len(loop.results) == 1  # the accumulator alone: a_ptrs and b_ptrs fed only the loads


def test_a_store_through_the_carried_pointer_keeps_the_dot_unstaged():
    source = TUTORIAL.replace("a_ptrs += BK * stride_ak", "tl.store(a_ptrs, a)\n        a_ptrs += BK * stride_ak")
    assert "dot" in names(staged(source))


def test_a_pointer_advanced_by_a_value_of_the_loop_is_not_staged():
    source = TUTORIAL.replace("a_ptrs += BK * stride_ak", "a_ptrs += k * stride_ak")
    kernel = staged(source)
    assert "dot" in names(kernel) and "copy_strided_to_shared" not in names(kernel)


def test_a_mask_on_a_wrapped_axis_with_another_offset_is_not_staged():
    source = TUTORIAL.replace("a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK,",
                              "a = tl.load(a_ptrs, mask=(offs_am[:, None] + 1 < M) & (offs_k[None, :] < K - k * BK),")
    assert "dot" in names(staged(source))


# ---- pipelining -------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", SOURCES)
def test_the_tutorial_loop_is_pipelined(form):
    kernel = pipelined(SOURCES[form], num_stages=3)
    (loop,) = [op for op in walk(kernel.body) if op.name == "for"]
    assert loop.attrs["pipeline_stages"] == 3
    assert names(kernel).count("async_copy_strided_to_shared") == 2 * 3  # two in the prologue per stage - 1, two a step
    assert "copy_strided_to_shared" not in names(kernel)


def test_the_staged_and_pipelined_text_reads_back():
    for kernel in (staged(TUTORIAL), pipelined(TUTORIAL)):
        text = print_kernel(kernel)
        assert print_kernel(verify(parse_kernel(text, "mm.py"))) == text


# ---- the interpreter: the same bits before and after --------------------------------------------------

SHAPES = [(70, 50, 77), (65, 130, 20), (33, 17, 9), (64, 64, 0), (96, 40, 160)]  # ragged; K < BK; K = 0


def operands(shape, transposed: bool, seed: int):
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, (M, K)).astype(np.float32) * rng.choice([-1, 1], (M, K)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (K, N)).astype(np.float32)
    if transposed:  # column strides != 1: A read from a column-major copy
        a = np.asfortranarray(a)
    return a, b


def run(kernel, shape, a, b):
    M, N, K = shape
    c = np.full((M, N), np.nan, np.float32)
    flat_a = a.ravel(order="K")  # the memory as it is laid out
    sa = [s // a.itemsize for s in a.strides]
    sb = [s // b.itemsize for s in b.strides]
    run_kernel(kernel, (cdiv(M, 32), cdiv(N, 32)), [flat_a, b, c, M, N, K, *sa, *sb, N, 1])
    return c


@pytest.mark.parametrize("form", SOURCES)
@pytest.mark.parametrize("transposed", [False, True], ids=["row-major", "column-major-a"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_staged_pipelined_and_unstaged_tutorial_loops_compute_the_same(form, transposed, shape):
    a, b = operands(shape, transposed, sum(shape) + transposed)
    source = SOURCES[form]
    reference = run(unstaged(source), shape, a, b)
    np.testing.assert_allclose(reference, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    for kernel in (staged(source), pipelined(source, 2), pipelined(source, 4)):
        np.testing.assert_array_equal(run(kernel, shape, a, b), reference)


# ---- CUDA ------------------------------------------------------------------------------------------


def tutorial_cuda(signature: str = "*fp16, *fp16, *fp32, i32, i32, i32, i32, i32, i32, i32, i32, i32",
                  **options) -> str:
    return compile_text(TUTORIAL, "cuda", "mm.py", signature=signature, **options)


def test_the_cuda_copies_whole_rows_only_where_the_column_stride_is_1():
    cuda = tutorial_cuda()
    assert "stride_ak == 1) {  // 16-byte chunks" in cuda
    assert "stride_bn == 1 && N % 8 == 0) {  // 16-byte chunks" in cuda  # B's columns wrap at N
    assert "% (M != 0 ? M : 2147483647)" in cuda  # the rows wrap as % M does (a wrap of 0: none)
    assert "col * stride_bn" in cuda  # the element path reads through the column stride


def test_a_bound_the_loop_moves_is_tested_in_the_loop_though_the_offset_stays():
    # B's rows start at 0 every iteration (the pointer moves) and its K bound, K - start, moves:
    # the N test is worked out before the loop, the K test stays in it. An exact-f32 dot, on FMA:
    # its whole chunks take cp.async's ignore-src predicate, which the two tests make.
    source = SHIFTED_MASK.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="ieee")')
    cuda = compile_text(source, "cuda", "mm.py", kernel="mm", num_warps=4, num_stages=2,
                        signature="*fp32:16, *fp32:16, *fp32:16, i32, i32:16, i32, i32, i32:1, i32:16, i32:1, "
                                  "i32:16, i32:1")
    assert re.search(r"h(\d+)_inside \|= \(unsigned\)\(\(v8 \+ \(threadIdx.x % 8 \* 4\)\) < N\) << s;", cuda)
    assert re.search(r'"r"\(\(unsigned\)\(\(h\d+_inside >> s & 1u\) && row < v\d+\)\)', cuda)


@pytest.mark.nvcc
@pytest.mark.parametrize("signature", ["*fp16, *fp16, *fp32, i32, i32, i32, i32, i32, i32, i32, i32, i32",
                                       "*fp32, *fp32, *fp32, i32, i32, i32, i32, i32, i32, i32, i32, i32"])
@pytest.mark.parametrize("stages", [1, 3])
def test_the_tutorial_loop_builds_with_nvcc(signature, stages):
    from mytriton.backends.cuda.nvcc import compile_ptx
    ptx = compile_ptx(tutorial_cuda(signature, num_stages=stages), "sm_90")
    if stages > 1:
        assert "cp.async.wait_group" in ptx


def test_the_mlir_back_end_lowers_the_strided_copy_and_xdsl_verifies_it():
    pytest.importorskip("xdsl")
    from mlir_check import op_names, parse_and_verify
    text = compile_text(TUTORIAL, "mlir", "mm.py")
    module = parse_and_verify(text)
    assert {"memref.global", "gpu.barrier", "arith.remsi"} <= op_names(module)


# ---- the GPU against the interpreter -------------------------------------------------------------------

GPU_SHAPES = [(128, 128, 128), (70, 50, 77), (33, 17, 9), (64, 64, 0), (100, 96, 260)]


def run_on(backend: str, kernel, shape, a, b, num_stages, num_warps):
    M, N, K = shape
    c = np.full((M, N), np.nan, np.float32)
    sa = [s // a.itemsize for s in a.strides]
    sb = [s // b.itemsize for s in b.strides]
    kernel[(cdiv(M, 32), cdiv(N, 32))](a.ravel(order="K"), b, c, M, N, K, *sa, *sb, N, 1,
                                       num_stages=num_stages, num_warps=num_warps, backend=backend)
    return c


def load_tutorial(tmp_path, form: str):
    import importlib.util
    path = tmp_path / f"{form.replace('-', '_')}.py"
    path.write_text(SOURCES[form])
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.mm


@pytest.mark.gpu
@pytest.mark.parametrize("form", SOURCES)
@pytest.mark.parametrize("transposed", [False, True], ids=["row-major", "column-major-a"])
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_tutorial_loop_on_the_gpu_matches_the_interpreter(tmp_path, monkeypatch, form, transposed, num_stages,
                                                              shape):
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee")  # exact products on both sides
    kernel = load_tutorial(tmp_path, form)
    a, b = operands(shape, transposed, sum(shape) + num_stages)
    ours = run_on("cuda", kernel, shape, a, b, num_stages, 4)
    expected = run_on("interp", kernel, shape, a, b, num_stages, 4)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-4)


# ---- attention (tests/triton_style/fused_attention.py) ---------------------------------------------------


def attention_staged(dtype: str = "fp16", stage: int = 1, block_m: int = 64, block_n: int = 32,
                     shared_budget: int | None = None):
    from conftest import ROOT
    from mytriton import compiler
    from mytriton.compiler import Options
    source = (ROOT / "tests" / "triton_style" / "fused_attention.py").read_text()
    signature = f"*{dtype}, *{dtype}, *{dtype}, fp32, *fp32, *{dtype}, " + ", ".join(["i32"] * 19)
    options = Options(kernel="_attn_fwd", signature=signature,
                      defines=dict(HEAD_DIM=64, BLOCK_M=block_m, BLOCK_N=block_n, STAGE=stage),
                      shared_budget=shared_budget)
    return source, options, compiler.stage_dots(compiler.source_to_ssa(source, "fa.py", options, optimized=True),
                                                options)


def test_attention_copies_q_once_before_the_loop_and_pipelines_k_and_v():
    _, _, kernel = attention_staged()
    (loop,) = [op for op in kernel.body.ops if op.name == "for"]
    before = [op.name for op in kernel.body.ops[:kernel.body.ops.index(loop)]]
    assert before.count("copy_strided_to_shared") == 1  # Q, loop-invariant
    assert loop.attrs["pipeline_stages"] > 1
    inside = [op.name for op in walk(loop.regions[0])]
    assert inside.count("async_copy_strided_to_shared") == 2  # K and V, issued together
    # P @ V: P stays in registers, V is read from its pipelined buffer.
    assert inside.count("dot_shared") == 1 and inside.count("dot_rs") == 1 and inside.count("dot") == 0


def test_attention_leaves_its_dots_unstaged_where_the_buffers_leave_no_room_for_the_scratch():
    _, _, kernel = attention_staged("fp32", 3, 64, 32, shared_budget=48 * 1024)
    assert "dot_shared" not in names(kernel)


@pytest.mark.nvcc
@pytest.mark.parametrize("config", [("fp16", 1, 64, 32), ("fp32", 1, 32, 16), ("fp32", 3, 32, 16)])
def test_staged_attention_builds_with_nvcc(config):
    from mytriton import compiler
    from mytriton.backends.cuda.nvcc import compile_ptx
    source, options, _ = attention_staged(*config)
    cuda = compiler.compile_source(source, "fa.py", "cuda", options)
    assert "async_copy_strided_to_shared" in cuda
    assert "cp.async.wait_group" in compile_ptx(cuda, "sm_90")


# ---- the op's type rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, message", [
    ("stride_am, stride_ak, 2147483647", "stride_am, 1.5, 2147483647",
     "the column stride of 'copy_strided_to_shared' must be an i32 scalar"),
    (", M, 0, 0.0 @", ", M, 0.5, 0.0 @", "the column wrap of 'copy_strided_to_shared' must be an i32 scalar"),
])
def test_a_malformed_strided_copy_is_a_located_error(old, new, message):
    from mytriton.diagnostics import CompileError
    text = print_kernel(staged(TUTORIAL))
    assert old in text
    with pytest.raises(CompileError, match=message) as info:
        verify(parse_kernel(text.replace(old, new, 1), "mm.py"))
    assert info.value.loc is not None
