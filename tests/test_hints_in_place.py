"""Triton's hints mark their operand itself (``semantic.multiple_of`` sets the
attribute on x and returns x): a hint written as a statement, its result
unused, is a fact about the name it hints. Tutorial 08's grouped GEMM relies on
it for its loop-carried pointers, whose base and leading dimensions come from
memory: with the fact, its copies move 16-byte chunks with no run-time test."""
from pathlib import Path

from conftest import compile_text, kernel_source

ROOT = Path(__file__).resolve().parents[1]
GROUPED = (ROOT / "tests" / "triton_style" / "grouped_gemm.py").read_text()


def test_a_hint_statement_makes_the_name_mean_the_hinted_value():
    ssa = compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr, y_ptr, n):
            offs = tl.arange(0, 64)
            tl.multiple_of(n, 16)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    """), "ssa")
    hinted = next(line for line in ssa.splitlines() if "= hint n, kind=\"multiple_of\"" in line).split("=")[0].strip()
    masks = [line for line in ssa.splitlines() if "= cmp_lt " in line]
    assert len(masks) == 2 and all(line.split(" : ")[0].endswith(f", {hinted}") for line in masks)


def test_tutorial_08s_hinted_carried_pointers_are_staged_in_proven_chunks():
    cuda = compile_text(GROUPED, "cuda", "grouped_gemm.py", kernel="grouped_matmul_kernel",
                        signature="*i64:16, *i64:16, *i64:16, *i32:16, *i32:16, i32", arch="sm_90a",
                        defines={"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64})
    assert "async_copy_strided_to_shared" in cuda and "wgmma.mma_async" in cuda
    assert "element by element" not in cuda  # no run-time alignment test with its slow path


def test_without_the_hint_the_copies_test_alignment_at_run_time():
    unhinted = GROUPED.replace("tl.multiple_of(a_ptrs, [16, 16])", "pass").replace(
        "tl.multiple_of(b_ptrs, [16, 16])", "pass")
    assert unhinted != GROUPED
    cuda = compile_text(unhinted, "cuda", "grouped_gemm.py", kernel="grouped_matmul_kernel",
                        signature="*i64:16, *i64:16, *i64:16, *i32:16, *i32:16, i32", arch="sm_90a",
                        defines={"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64})
    assert "element by element" in cuda
