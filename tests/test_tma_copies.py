"""The tma-copies pass's decisions beyond one copy's facts (the lit tests in
tests/lit/tma-copies have those): how many copy groups a ring of mbarriers
must hold, where the pass leaves every copy to cp.async, and the budget."""
from pathlib import Path

from conftest import compile_text
from mytriton import compiler, remarks
from mytriton.backends.cuda.allocate_shared import AllocateSharedPass
from mytriton.backends.cuda.tma import ring_of
from mytriton.backends.cuda.tma_copies import TmaCopiesPass, is_tma, ring_size
from mytriton.ir.ssa import walk

ROOT = Path(__file__).resolve().parent
PIPELINED = (ROOT / "lit" / "tma-copies" / "copies-a-tensor-map-can-describe-are-made-by-tma.ssa").read_text()
OFFSETS = ROOT / "triton_style" / "matmul_offsets.py"
SIGNATURE = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1"


def kernel_of(text: str = PIPELINED):
    return compiler.read_ssa(text, "matmul.ssa")


def copies(kernel):
    return [op for op in walk(kernel.body) if op.name == "async_copy_to_shared"]


def test_a_two_stage_loop_has_one_group_in_flight_and_a_ring_of_two():
    kernel = TmaCopiesPass().apply(kernel_of())
    assert ring_size(kernel) == 1 and ring_of(kernel) == 2


def test_a_loop_that_commits_without_waiting_leaves_every_copy_to_cp_async():
    kernel = TmaCopiesPass().apply(kernel_of(PIPELINED.replace("    async_wait pending=0 @24:16\n", "")))
    assert ring_size(kernel) is None
    assert not any(is_tma(op) for op in walk(kernel.body))
    assert remarks.facts_of(kernel, copies(kernel)[0])[remarks.TMA] == \
        "a loop commits copy groups without waiting for them"


def test_no_tma_copies_everything_with_cp_async_and_the_remark_says_so():
    options = compiler.Options(kernel="matmul_offsets", signature=SIGNATURE, num_warps=4,
                               defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, tma=False)
    laid = compiler.run_stages(OFFSETS.read_text(), str(OFFSETS), "layouts", options)
    assert not any(is_tma(op) for op in walk(laid.body))
    assert "(not TMA: TMA is off (--no-tma))" in remarks.render(remarks.dot_remarks(laid))
    with_tma = compile_text(OFFSETS.read_text(), "cuda", file=str(OFFSETS), kernel="matmul_offsets",
                            signature=SIGNATURE, num_warps=4, defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    assert "cp.async.bulk.tensor.2d" in with_tma


def test_mbarriers_that_would_pass_the_budget_leave_the_copies_to_cp_async():
    kernel = TmaCopiesPass().apply(kernel_of())
    fitted = AllocateSharedPass(shared_budget=10**6).apply(kernel_of(compiler.print_ssa(kernel)))
    needed = fitted.shared_memory.bytes
    assert ring_of(fitted) == 2 and needed % 8 == 0
    tight = AllocateSharedPass(shared_budget=needed - 1).apply(kernel_of(compiler.print_ssa(kernel)))
    assert tight.shared_memory.bytes == needed - 16  # the buffers and scratch alone
    assert not any(is_tma(op) for op in walk(tight.body))


def test_an_arch_before_hopper_leaves_every_copy_to_cp_async():
    kernel = TmaCopiesPass(arch="sm_80").apply(kernel_of())
    assert not any(is_tma(op) for op in walk(kernel.body))
    assert remarks.facts_of(kernel, copies(kernel)[0])[remarks.TMA] == "sm_80 has no TMA (sm_90 has)"
