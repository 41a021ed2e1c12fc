"""stage-dots stages an operand whose rows or columns are clamped with
``tl.where`` under a contiguity hint, as Triton's tutorial 09 (persistent
matmul) writes them instead of a mask:

    offs_am = tl.where(offs_am < M, offs_am, 0)
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_M), BLOCK_M)

The hint promises the clamped coordinates are contiguous, so the copy
starts at the clamped offset and takes the clamp's bound as the axis's
bound (zeros past it). Without the hint the coordinates are not a tile's,
and the dot is not staged."""
from __future__ import annotations

import numpy as np

from conftest import ROOT, kernel_source, ssa_of
from mytriton import remarks
from mytriton.backends.interp import run_kernel
from mytriton.ir.analysis import Definitions
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import NotCanonical, StageDotsPass, match_dot

TEMPLATE = """
    @mytriton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_am = pid_m * 32 + tl.arange(0, 32)
        offs_bn = pid_n * 32 + tl.arange(0, 32)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = HINT_M
        offs_bn = HINT_N
        acc = tl.zeros((32, 32), dtype=tl.float32)
        for ki in range(tl.cdiv(K, 16)):
            offs_k = ki * 16 + tl.arange(0, 16)
            a = tl.load(a_ptr + offs_am[:, None] * K + offs_k[None, :], mask=A_MASK, other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * N + offs_bn[None, :], mask=offs_k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
        offs_cm = pid_m * 32 + tl.arange(0, 32)
        offs_cn = pid_n * 32 + tl.arange(0, 32)
        tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc,
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
"""
HINTED = ("tl.max_contiguous(tl.multiple_of(offs_am, 32), 32)", "tl.max_contiguous(tl.multiple_of(offs_bn, 32), 32)")


def source(hint_m: str = HINTED[0], hint_n: str = HINTED[1], a_mask: str = "offs_k[None, :] < K") -> str:
    return kernel_source(TEMPLATE.replace("HINT_M", hint_m).replace("HINT_N", hint_n).replace("A_MASK", a_mask))


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def refusal(text: str) -> str:
    kernel = ssa_of(text, optimized=True)
    dot = next(op for op in walk(kernel.body) if op.name == "dot")
    found = match_dot(Definitions(kernel), dot)
    assert isinstance(found, NotCanonical)
    return f"{found.reason}; {found.tutorial}"  # the canonical form's reason, then the tutorial form's


def test_clamped_hinted_rows_and_columns_are_staged():
    kernel = ssa_of(source(), optimized=True)
    StageDotsPass().apply(kernel)
    assert "dot_shared" in names(kernel) and "load" not in names(kernel)


def test_the_copy_starts_at_the_clamped_offset_and_is_bounded_by_the_clamp():
    kernel = ssa_of(source(), optimized=True)
    StageDotsPass().apply(kernel)
    text = print_kernel(kernel)
    a_copy = next(line for line in text.splitlines() if "copy_strided_to_shared" in line and "M," in line)
    # The row offset is a where of the program's offset; M is the row bound.
    assert "where" in text and "cmp_lt" in text
    offset_name = a_copy.split(",")[2].strip()
    assert any(line.strip().startswith(f"{offset_name} = where") for line in text.splitlines())


def test_without_the_contiguity_hint_the_clamped_rows_are_not_a_tile():
    reason = refusal(source(hint_m="offs_am", hint_n="offs_bn"))
    assert "rows" in reason or "pointer" in reason


def test_a_hint_shorter_than_the_tile_does_not_make_it_contiguous():
    reason = refusal(source(hint_m="tl.max_contiguous(offs_am, 16)"))
    assert reason


def test_a_mask_that_also_tests_the_clamped_rows_is_refused():
    reason = refusal(source(a_mask="(offs_am[:, None] < M) & (offs_k[None, :] < K)"))
    assert "clamped" in reason


def test_the_staged_kernel_stores_what_the_unstaged_one_stores_on_ragged_sizes():
    kernel = ssa_of(source(), optimized=True)
    unstaged = print_kernel(kernel)
    StageDotsPass().apply(kernel)
    SoftwarePipelinePass(num_stages=3).apply(kernel)
    rng = np.random.default_rng(5)
    M, N, K = 45, 37, 40  # partial tiles on every axis: the clamp is taken at the edges
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    grid = ((M + 31) // 32, (N + 31) // 32)
    results = []
    for k in (parse_kernel(unstaged, "k.py"), kernel):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(k, grid, [a, b, c, M, N, K])
        results.append(c)
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_tutorial_09s_persistent_matmul_is_staged_on_wgmma():
    from mytriton import compiler
    from mytriton.compiler import Options

    path = ROOT / "tests" / "triton_style" / "persistent_matmul.py"
    options = Options(kernel="matmul_kernel_persistent", signature="*fp16, *fp16, *fp16, " + ", ".join(["i32"] * 9),
                      defines={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                               "NUM_SMS": 132},
                      num_warps=8, arch="sm_90")
    kernel = compiler.run_stages(path.read_text(), str(path), "layouts", options)
    (remark,) = remarks.dot_remarks(kernel)
    assert remark.message.startswith("dot 128x128x64 f16: staged"), remark.message
    assert "wgmma" in remark.message


def test_tutorial_09s_clamped_column_start_is_known_aligned_so_b_is_copied_without_a_fallback():
    """The clamped column start (``start_n`` or 0) is a multiple of 128, so
    B's copy takes 16-byte chunks without a run-time test and an element by
    element copy beside them."""
    from mytriton import compiler
    from mytriton.compiler import Options

    path = ROOT / "tests" / "triton_style" / "persistent_matmul.py"
    ints = ["i32:16"] * 3 + ["i32:16", "i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]  # M, N, K, the strides
    options = Options(kernel="matmul_kernel_persistent", signature="*fp16:16, *fp16:16, *fp16:16, " + ", ".join(ints),
                      defines={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                               "NUM_SMS": 132}, arch="sm_90a")
    cuda = compiler.run_stages(path.read_text(), str(path), "cuda", options)
    assert cuda.count("async_copy_strided_to_shared") >= 2
    assert "element by element" not in cuda
