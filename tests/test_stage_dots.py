"""The stage-dots pass from Python: matching the canonical tile loads of a
``tl.dot``, what is left alone and why, the shared-memory budget, and the
interpreter giving the same results before and after. The rewrite itself,
SSA text before and after, is checked in tests/lit/stage-dots/.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import ROOT, cdiv, compile_text, kernel_source, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.analysis import Definitions, NotDefinedBy
from mytriton.ir.ssa import BlockArg, Const, Param, for_index, walk
from mytriton.ir.ssa_text import print_kernel
from mytriton.ir.text_common import format_literal
from mytriton.target import DEFAULT_SHARED_LIMIT as NO_OPT_IN
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import NotCanonical, StageDotsPass, match_dot, match_operand
from mytriton.types import F32, I64

# The tiled matmul sample (samples/matmul.py).
MATMUL = kernel_source("""
    @mytriton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BM: tl.constexpr = 64, BN: tl.constexpr = 64, BK: tl.constexpr = 32):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_n = pid_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a_rows = offs_m[:, None]
            a_cols = k + offs_k[None, :]
            a = tl.load(a_ptr + a_rows * K + a_cols, mask=(a_rows < M) & (a_cols < K), other=0.0)
            b_rows = k + offs_k[:, None]
            b_cols = offs_n[None, :]
            b = tl.load(b_ptr + b_rows * N + b_cols, mask=(b_rows < K) & (b_cols < N), other=0.0)
            acc += tl.dot(a, b)
        c_rows = offs_m[:, None]
        c_cols = offs_n[None, :]
        tl.store(c_ptr + c_rows * N + c_cols, acc, mask=(c_rows < M) & (c_cols < N))
""")

# One K tile, no loop; spelled differently from the sample: the pointer as
# base + (stride * rows + cols), offsets added after expand_dims or absent,
# the mask's comparisons the other way round, an integer zero fill.
ONE_TILE = kernel_source("""
    @mytriton.jit
    def one_tile_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                        BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
        cols = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
        ks = tl.arange(0, BK)
        a = tl.load(a_ptr + (K * rows + ks[None, :]), mask=(ks[None, :] < K) & (rows < M), other=0)
        b = tl.load(b_ptr + ks[:, None] * N + cols, mask=(ks[:, None] < K) & (cols < N), other=0.0)
        tl.store(c_ptr + rows * N + cols, tl.dot(a, b), mask=(rows < M) & (cols < N))
""")

def opt_kernel(source: str = MATMUL, **defines):
    return ssa_of(source, optimized=True, file="matmul.py", defines=defines)


def variant(old: str, new: str, source: str = MATMUL) -> str:
    assert old in source, old
    return source.replace(old, new)


def the_dot(kernel):
    (dot,) = [op for op in walk(kernel.body) if op.name == "dot"]
    return dot


def spelled(value) -> str:
    """An operand as a short expression: parameters by name, the loop index
    as k, program ids as pid0/pid1."""
    if isinstance(value, Param):
        return value.name
    if isinstance(value, Const):
        return format_literal(value.value)
    if isinstance(value, BlockArg):
        return "k" if value.index == 0 else f"carried{value.index}"
    op = value.op
    if op.name == "program_id":
        return f"pid{op.attrs['axis']}"
    if op.name in ("mul", "add"):
        lhs, rhs = op.operands
        return f"{spelled(lhs)} {'*' if op.name == 'mul' else '+'} {spelled(rhs)}"
    return op.name


def plan_fields(tile) -> tuple[str, ...]:
    return tuple(spelled(v) for v in (tile.base, tile.row_offset, tile.col_offset, tile.row_stride,
                                      tile.row_bound, tile.col_bound, tile.fill))


# ---- the use-def index ---------------------------------------------------------------------------


def test_definitions_find_ops_inside_and_outside_the_loop():
    kernel = opt_kernel()
    defs = Definitions(kernel)
    dot = the_dot(kernel)
    load_a = defs.require(dot.operands[0], "load")
    row_pointer = defs.require(defs.require(load_a.operands[0], "addptr").operands[0], "addptr")
    assert row_pointer.parent is kernel.body  # hoisted by licm, found all the same
    assert defs.defined_by(dot.operands[0], "add", "mul") is None


def test_require_says_what_it_found_instead():
    kernel = opt_kernel()
    defs = Definitions(kernel)
    loop = next(op for op in kernel.body.ops if op.name == "for")
    cases = [(loop.operands[3], "one defined by 'full'"), (kernel.params[3], "the parameter 'M'"),
             (for_index(loop), "a loop's induction variable"), (Const(0.0), "the literal 0.0")]
    for value, found in cases:
        with pytest.raises(NotDefinedBy) as info:
            defs.require(value, "load")
        assert str(info.value) == f"expected a value defined by 'load', got {found}"


# ---- matching ------------------------------------------------------------------------------------

#            base     row offset     column offset  stride row bound column bound fill
A_PLAN = ("a_ptr", "pid0 * 64", "k", "K", "M", "K", "0.0")
B_PLAN = ("b_ptr", "k", "pid1 * 64", "N", "K", "N", "0.0")


def test_the_matmul_plan_for_a_and_for_b():
    kernel = opt_kernel()
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert plan_fields(plan.a) == A_PLAN
    assert plan_fields(plan.b) == B_PLAN
    assert (plan.a.shape, plan.b.shape, plan.a.element, plan.b.element) == ((64, 32), (32, 64), F32, F32)
    assert plan.nbytes == 2 * 64 * 32 * 4


def test_the_loop_index_is_the_column_offset_of_a_and_the_row_offset_of_b():
    kernel = opt_kernel()
    loop = next(op for op in kernel.body.ops if op.name == "for")
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert plan.a.col_offset is for_index(loop)
    assert plan.b.row_offset is for_index(loop)
    assert plan.a.base is kernel.params[0] and plan.b.base is kernel.params[1]
    assert plan.a.row_stride is kernel.params[5]  # K


def test_the_unoptimised_ssa_matches_too():
    kernel = ssa_of(MATMUL, file="matmul.py")  # nothing hoisted or shared yet
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert (plan_fields(plan.a), plan_fields(plan.b)) == (A_PLAN, B_PLAN)


A_LOAD = "a = tl.load(a_ptr + a_rows * K + a_cols, mask=(a_rows < M) & (a_cols < K), other=0.0)"
SPELLINGS = {
    "pointer additions nested the other way": (A_LOAD, A_LOAD.replace("a_rows * K + a_cols", "(a_rows * K + a_cols)")),
    "stride before the rows": (A_LOAD, A_LOAD.replace("a_rows * K", "K * a_rows")),
    "columns before rows in the pointer": (A_LOAD, A_LOAD.replace("a_rows * K + a_cols", "a_cols + a_rows * K")),
    "mask in the other order": (A_LOAD, A_LOAD.replace("(a_rows < M) & (a_cols < K)", "(a_cols < K) & (a_rows < M)")),
    "integer zero fill": (A_LOAD, A_LOAD.replace("other=0.0", "other=0")),
    "offset after the expanded arange": ("a_cols = k + offs_k[None, :]", "a_cols = offs_k[None, :] + k"),
    "offset added before expand_dims": ("a_cols = k + offs_k[None, :]", "a_cols = (k + offs_k)[None, :]"),
    "arange before the offset, then expanded": ("a_rows = offs_m[:, None]",
                                                "a_rows = (tl.arange(0, BM) + pid_m * BM)[:, None]"),
    "rows expanded, then offset": ("a_rows = offs_m[:, None]", "a_rows = pid_m * BM + tl.arange(0, BM)[:, None]"),
}


@pytest.mark.parametrize("name", SPELLINGS)
def test_spellings_of_the_canonical_load_match(name):
    kernel = opt_kernel(variant(*SPELLINGS[name]))
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert not isinstance(plan, NotCanonical), plan
    expected = A_PLAN if name != "integer zero fill" else A_PLAN[:-1] + ("0",)
    assert plan_fields(plan.a) == expected
    assert plan_fields(plan.b) == B_PLAN


def test_an_operand_without_an_offset_has_offset_zero():
    kernel = opt_kernel(ONE_TILE)
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert plan_fields(plan.a) == ("a_ptr", "pid0 * 32", "0", "K", "M", "K", "0")
    assert plan_fields(plan.b) == ("b_ptr", "0", "pid1 * 32", "N", "K", "N", "0.0")


NOT_CANONICAL = {
    "other=1.0": (
        (A_LOAD, A_LOAD.replace("other=0.0", "other=1.0")),
        "operand A: the load fills masked-off elements with 1.0, not 0 or 0.0"),
    "no other": (
        (A_LOAD, A_LOAD.replace(", other=0.0", "")),
        "operand A: the load fills masked-off elements with no value (other=none), not 0 or 0.0"),
    "an arange not from 0": (
        ("b_rows = k + offs_k[:, None]", "b_rows = k + tl.arange(32, 64)[:, None]"),
        "operand B: arange(32, 64) does not start at 0"),
    "a store between the load and the dot": (
        ("acc += tl.dot(a, b)", "tl.store(a_ptr + k, 1.0)\n        acc += tl.dot(a, b)"),
        "operand A: a store may run between the load and the dot"),
}


# Not copy_to_shared's form, but copy_strided_to_shared's (the tutorial forms,
# tests/test_stage_tutorial_dots.py): staged through it.
STRIDED = {
    "a mask missing the column bound": (A_LOAD, A_LOAD.replace("mask=(a_rows < M) & (a_cols < K)",
                                                               "mask=a_rows < M")),
    "a mask on other coordinates": (A_LOAD, A_LOAD.replace("(a_cols < K)", "(offs_k[None, :] < K - k)")),
    "strided columns": (A_LOAD, A_LOAD.replace("a_ptr + a_rows * K + a_cols,", "a_ptr + a_rows * K + a_cols * 2,")),
    "a pointer with a third term": (A_LOAD, A_LOAD.replace("a_ptr + a_rows", "a_ptr + 0 + a_rows")),
}


@pytest.mark.parametrize("name", STRIDED)
def test_other_forms_are_staged_through_the_strided_copy(name):
    kernel = opt_kernel(variant(*STRIDED[name]))
    plan = match_dot(Definitions(kernel), the_dot(kernel))
    assert type(plan.a).__name__ == "StridedPlan" and type(plan.b).__name__ == "TilePlan"
    staged = [op.name for op in walk(StageDotsPass().apply(kernel).body)]
    assert staged.count("copy_strided_to_shared") == 1 and staged.count("copy_to_shared") == 1


def test_a_row_mask_alone_leaves_the_columns_unbounded():
    kernel = opt_kernel(variant(A_LOAD, A_LOAD.replace("mask=(a_rows < M) & (a_cols < K)", "mask=a_rows < M")))
    (copy,) = [op for op in walk(StageDotsPass().apply(kernel).body) if op.name == "copy_strided_to_shared"]
    assert copy.operands[7] == Const(2147483647)


# (The other two read past the matrix: their loads had no column mask or twice its columns.)
@pytest.mark.parametrize("name", ["a mask on other coordinates", "a pointer with a third term"])
@pytest.mark.parametrize("shape", [(70, 50, 77), (33, 17, 9)], ids=lambda s: "x".join(map(str, s)))
def test_the_strided_copy_computes_what_the_load_did(name, shape):
    M, N, K = shape
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    outputs = []
    for kernel in (opt_kernel(variant(*STRIDED[name])), StageDotsPass().apply(opt_kernel(variant(*STRIDED[name])))):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(M, 64), cdiv(N, 64)), [a, b, c, M, N, K])
        outputs.append(c)
    np.testing.assert_array_equal(outputs[1], outputs[0])


@pytest.mark.parametrize("name", NOT_CANONICAL)
def test_non_canonical_operands_are_left_alone_with_a_reason(name):
    (old, new), reason = NOT_CANONICAL[name]
    kernel = opt_kernel(variant(old, new))
    assert str(match_dot(Definitions(kernel), the_dot(kernel))) == reason
    before = print_kernel(kernel)
    assert print_kernel(StageDotsPass().apply(kernel)) == before


def test_a_dot_of_zeros_tiles_is_left_alone():
    kernel = ssa_of(kernel_source("""
        @mytriton.jit
        def zeros_dot(out_ptr):
            offs = tl.arange(0, 16)
            c = tl.dot(tl.zeros((16, 16), tl.float32), tl.zeros((16, 16), tl.float32))
            tl.store(out_ptr + offs[:, None] * 16 + offs[None, :], c)
    """), optimized=True)
    defs = Definitions(kernel)
    dot = the_dot(kernel)
    assert str(match_operand(defs, dot.operands[1])) == "the operand is not a load but one defined by 'full'"
    assert str(match_dot(defs, dot)) == "operand A: the operand is not a load but one defined by 'full'"
    before = print_kernel(kernel)
    assert print_kernel(StageDotsPass().apply(kernel)) == before


def test_a_bound_that_is_not_i32_is_not_canonical():
    kernel = ssa_of(MATMUL, optimized=True, signature="*fp32, *fp32, *fp32, i64, i32, i32")
    assert str(match_dot(Definitions(kernel), the_dot(kernel))) == \
        "operand A: the row bound of the mask is not an i32 scalar (i64)"


def test_a_store_later_in_the_loop_runs_before_the_next_dot():
    # A is loaded once before the loop; the store after the dot runs before
    # the dot's next iteration, where the copy would read memory again.
    kernel = opt_kernel(variant("    for k in range(0, K, BK):\n        a_rows",
                                "    a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :], "
                                "mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)\n"
                                "    for k in range(0, K, BK):\n        a_rows")
                        .replace("        a = tl.load(a_ptr + a_rows", "        a2 = tl.load(a_ptr + a_rows")
                        .replace("acc += tl.dot(a, b)", "acc += tl.dot(a, b)\n        tl.store(b_ptr, 0.0)"))
    assert str(match_dot(Definitions(kernel), the_dot(kernel))) == \
        "operand A: a store may run between the load and the dot"


def test_a_load_outside_the_loop_is_staged_where_the_dot_is():
    kernel = opt_kernel(variant("    for k in range(0, K, BK):\n        a_rows",
                                "    a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :], "
                                "mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)\n"
                                "    for k in range(0, K, BK):\n        a_rows")
                        .replace("        a = tl.load(a_ptr + a_rows", "        a2 = tl.load(a_ptr + a_rows"))
    text = print_kernel(StageDotsPass().apply(kernel))
    assert "    copy_to_shared %0, a_ptr, %3, 0, K, M, K, 0.0" in text  # inside the loop
    assert " load " not in text


# ---- the rewrite -----------------------------------------------------------------------------------


LIT = ROOT / "tests" / "lit" / "stage-dots"


def lit_input(name: str) -> str:
    """The SSA a lit test feeds stage-dots: its file without comments."""
    lines = (LIT / name).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if line.strip() and not line.startswith("//"))


def test_the_lit_tests_stage_what_opt_makes_of_these_kernels():
    # tests/lit/stage-dots/ checks the rewrite on hand-kept SSA: this keeps it
    # the opt stage's output for the kernels above (the header without its digest).
    for source, file, name in ((MATMUL, "matmul.py", "matmul-loop.ssa"),
                               (ONE_TILE, "one_tile.py", "dot-outside-any-loop.ssa")):
        opt = re.sub(r' sha256="[0-9a-f]+"', "", compile_text(source, "opt", file=file))
        assert opt == lit_input(name)


def test_a_load_also_used_elsewhere_stays():
    source = variant("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.sum(a, axis=1)[:, None]")
    kernel = StageDotsPass().apply(opt_kernel(source))
    loads = [op for op in walk(kernel.body) if op.name == "load"]
    assert [op.result.type.shape for op in loads] == [(64, 32)]  # A's, read by the sum; B's is gone
    assert len([op for op in walk(kernel.body) if op.name == "copy_to_shared"]) == 2


def test_a_dot_with_an_accumulator_keeps_it():
    kernel = StageDotsPass().apply(opt_kernel(variant("acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)")))
    text = print_kernel(kernel)
    assert ('    %16 = dot_shared %0, %1, %15, input_precision="tf32", out_dtype=f32 : block<64x64 x f32> @20:15\n'
            '    barrier @20:15\n    yield %16') in text


# A second dot of the same tiles, loaded again (cse would merge a second dot of the same loads).
TWO_DOTS = ("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.dot(a, tl.load(b_ptr + b_rows * N + b_cols, "
            "mask=(b_rows < K) & (b_cols < N), other=0.0))")


# The second dot loads its own A tile too (the same addresses, another load).
OWN_TILES = ("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.dot(tl.load(a_ptr + a_rows * K + a_cols, "
             "mask=(a_rows < M) & (a_cols < K), other=0.0), tl.load(b_ptr + b_rows * N + b_cols, "
             "mask=(b_rows < K) & (b_cols < N), other=0.0))")


def test_each_dot_gets_its_own_buffers_in_dot_order():
    kernel = StageDotsPass().apply(opt_kernel(variant(*OWN_TILES)))
    allocations = [op.attrs["name"] for op in kernel.body.ops if op.name == "shared_alloc"]
    assert allocations == ["dot_a0", "dot_b0", "dot_a1", "dot_b1"]
    assert kernel.body.ops[4].name != "shared_alloc"  # all four first in the kernel


def test_a_tile_two_dots_of_a_loop_body_read_is_copied_once():
    # Liger's MoE up-projection: one x tile times the gate weights and times the up weights.
    kernel = StageDotsPass().apply(opt_kernel(variant(*TWO_DOTS)))
    assert [op.attrs["name"] for op in kernel.body.ops if op.name == "shared_alloc"] == ["dot_a0", "dot_b0", "dot_b1"]
    body = [op.name for op in walk(kernel.body)]
    assert body.count("copy_to_shared") == 3
    # all three copies before one barrier, then each dot with a barrier after it
    at = body.index("dot_shared")
    assert body[at - 1] == "barrier" and body[at - 4:at - 1] == ["copy_to_shared"] * 3
    assert body[at + 1:at + 4] == ["barrier", "dot_shared", "barrier"]


@pytest.mark.parametrize("stages", [1, 3], ids=["waited-for", "pipelined"])
@pytest.mark.parametrize("shape", [(70, 50, 77), (33, 17, 9)], ids=lambda s: "x".join(map(str, s)))
def test_two_dots_of_one_shared_tile_compute_what_the_unstaged_dots_did(stages, shape):
    M, N, K = shape
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    source = variant(*TWO_DOTS)
    staged = SoftwarePipelinePass(num_stages=stages).apply(StageDotsPass().apply(opt_kernel(source)))
    assert [op.name for op in walk(staged.body)].count("dot_shared") == 2
    outputs = []
    for kernel in (opt_kernel(source), staged):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(M, 64), cdiv(N, 64)), [a, b, c, M, N, K])
        outputs.append(c)
    np.testing.assert_array_equal(outputs[1], outputs[0])


# ---- the shared-memory budget ------------------------------------------------------------------------


def test_a_pair_over_the_budget_is_an_error_at_the_dot_and_changes_nothing():
    kernel = opt_kernel(BM=128, BN=128, BK=64)
    before = print_kernel(kernel)
    with pytest.raises(CompileError) as info:
        StageDotsPass(shared_budget=NO_OPT_IN).apply(kernel)
    assert info.value.message == ("tl.dot needs 65536 bytes of shared memory to stage block<128x64 x f32> and "
                                  "block<64x128 x f32>, over the 49152-byte (48 KiB) budget")
    assert (info.value.loc.line, info.value.loc.col) == (20, 16)  # acc += tl.dot(a, b)
    assert print_kernel(kernel) == before


def test_the_budget_counts_earlier_dots_and_nothing_is_staged_when_one_does_not_fit():
    # Each pair takes 32 KiB: the first fits, the second does not.
    kernel = opt_kernel(variant(*TWO_DOTS), BK=64)
    before = print_kernel(kernel)
    with pytest.raises(CompileError, match="tl.dot needs 32768 bytes of shared memory to stage block<64x64 x f32> "
                                           "and block<64x64 x f32>, and 32768 bytes are already allocated, over the "
                                           r"49152-byte \(48 KiB\) budget"):
        StageDotsPass(shared_budget=NO_OPT_IN).apply(kernel)
    assert print_kernel(kernel) == before


def test_a_pair_of_exactly_the_budget_fits():
    kernel = opt_kernel(BM=128, BN=64, BK=64)  # 32 KiB + 16 KiB
    StageDotsPass(shared_budget=NO_OPT_IN).apply(kernel)
    assert sum(op.result.type.nbytes for op in kernel.body.ops if op.name == "shared_alloc") == 49152


def test_sm_90s_227_kib_stage_a_pair_past_48_kib():
    kernel = StageDotsPass().apply(opt_kernel(BM=128, BN=128, BK=64))  # 64 KiB
    assert sum(op.result.type.nbytes for op in kernel.body.ops if op.name == "shared_alloc") == 65536


def test_a_pair_over_227_kib_is_an_error_at_the_dot():
    with pytest.raises(CompileError) as info:
        StageDotsPass().apply(opt_kernel(BM=256, BN=256, BK=128))  # 2 x 128 KiB
    assert info.value.message == ("tl.dot needs 262144 bytes of shared memory to stage block<256x128 x f32> and "
                                  "block<128x256 x f32>, over the 232448-byte (227 KiB) budget")
    assert (info.value.loc.line, info.value.loc.col) == (20, 16)


# ---- the interpreter: staged and unstaged give the same bits --------------------------------------------

SHAPES = [(70, 50, 77), (65, 130, 20), (33, 17, 9), (64, 64, 0)]  # ragged; K < BK; no K step at all


# Liger's fused MoE: rows widened to int64 against overflow in their product with the stride.
WIDE_ROWS = variant("offs_m = pid_m * BM + tl.arange(0, BM)", "offs_m = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)")


@pytest.mark.parametrize("source", [MATMUL, variant("acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)"),
                                    variant("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.sum(a, axis=1)[:, None]"),
                                    WIDE_ROWS],
                         ids=["sample", "accumulator", "load-also-summed", "int64-rows"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_staged_and_unstaged_ssa_compute_the_same(source, shape):
    M, N, K = shape
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    unstaged = opt_kernel(source)
    staged = StageDotsPass().apply(opt_kernel(source))
    outputs = []
    for kernel in (unstaged, staged):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(M, 64), cdiv(N, 64)), [a, b, c, M, N, K])
        outputs.append(c)
    np.testing.assert_array_equal(outputs[1], outputs[0])
    if source is MATMUL:
        # tl.dot's default precision for f32 is TF32: each operand truncated to 10 mantissa bits.
        bound = (2.0**-9 + K * 2.0**-23) * (np.abs(a).astype(np.float64) @ np.abs(b)) + 1e-6
        assert (np.abs(outputs[1] - a.astype(np.float64) @ b) <= bound).all()


def test_int64_rows_are_copied_with_a_stride_cast_to_i64_once_before_the_loop():
    staged = StageDotsPass().apply(opt_kernel(WIDE_ROWS))
    (copy,) = [op for op in walk(staged.body) if op.name == "copy_strided_to_shared"]
    stride = copy.operands[4]
    assert stride.type == I64 and stride.op.name == "cast" and stride.op.operands[0].name == "K"
    assert stride.op in staged.body.ops  # where K is defined: once, out of the loop
    assert copy.operands[5] == Const(1)  # the columns: i32, scaled by 1


def test_int32_rows_keep_an_i32_stride():
    staged = StageDotsPass().apply(opt_kernel())
    assert not [op for op in walk(staged.body) if op.name == "cast"]


def _hypothetical_atomic_add(types, attrs):
    (ptr, value, mask) = types
    return [ptr.pointee]


@pytest.mark.parametrize("effect", ["writes_global", "writes_shared", "synchronises"])
def test_a_load_is_not_moved_across_any_op_that_writes_memory_or_synchronises(monkeypatch, effect):
    # A hypothetical op (an atomic add, returning the old value) that is not a
    # store: stage-dots asks the op's traits, not its name.
    from mytriton.ir import opdefs
    from mytriton.ir.ssa import Op, insert_before

    atomic = opdefs.OpDef("atomic_add", ("ptr", "value", "mask?"), _hypothetical_atomic_add,
                          reads_global=True, address_operand="ptr", **{effect: True})
    monkeypatch.setitem(opdefs.OPS, "atomic_add", atomic)
    kernel = opt_kernel()
    dot = the_dot(kernel)
    a_ptr = kernel.params[0]
    insert_before(dot, Op("atomic_add", [a_ptr, Const(1.0), None], [F32]))
    assert str(match_dot(Definitions(kernel), dot)) == \
        "operand A: a atomic_add may run between the load and the dot"
    before = print_kernel(kernel)
    assert print_kernel(StageDotsPass().apply(kernel)) == before


def test_an_op_that_only_reads_memory_between_the_load_and_the_dot_does_not_stop_staging():
    kernel = opt_kernel(variant("acc += tl.dot(a, b)", "first = tl.load(b_ptr)\n        acc += tl.dot(a, b) + first"))
    assert not isinstance(match_dot(Definitions(kernel), the_dot(kernel)), NotCanonical)
    assert "dot_shared" in print_kernel(StageDotsPass().apply(kernel))


# ---- top-level dots share one pair of buffers ----------------------------------------------------

# An unrolled K loop (Liger's mhc forward spells its K loop so): every step a
# top-level dot of the same tiles.
UNROLLED = kernel_source("""
    @mytriton.jit
    def unrolled_kernel(a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr,
                        BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 64):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in tl.static_range(0, K, BK):
            ks = k0 + tl.arange(0, BK)
            a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                        other=0.0)
            b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N),
                        other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
""")


def unrolled(**defines):
    return ssa_of(UNROLLED, optimized=True, file="unrolled.py", defines=defines)


def test_an_unrolled_run_of_dots_shares_one_pair_of_buffers():
    kernel = StageDotsPass().apply(unrolled(K=256))
    allocations = [op for op in kernel.body.ops if op.name == "shared_alloc"]
    assert [op.attrs["name"] for op in allocations] == ["dot_a0", "dot_b0"]
    staged = [op for op in kernel.body.ops if op.name == "dot_shared"]
    assert len(staged) == 4 and all(op.operands[:2] == [allocations[0].result, allocations[1].result]
                                    for op in staged)


def test_each_shared_dot_is_fenced_by_barriers_before_the_next_copy():
    kernel = StageDotsPass().apply(unrolled(K=128))
    names = [op.name for op in kernel.body.ops if op.name in ("copy_to_shared", "barrier", "dot_shared")]
    assert names == ["copy_to_shared", "copy_to_shared", "barrier", "dot_shared", "barrier"] * 2


def test_sixty_four_unrolled_dots_fit_the_budget_of_one_pair():
    # 64 pairs of 32x256 by 256x32 f32 tiles would take 4 MiB; one pair takes 64 KiB.
    kernel = StageDotsPass().apply(unrolled(K=16384, BK=256))
    assert sum(op.result.type.nbytes for op in kernel.body.ops if op.name == "shared_alloc") == 65536
    assert sum(op.name == "dot_shared" for op in kernel.body.ops) == 64


def test_dots_of_other_tiles_or_precisions_keep_pairs_of_their_own():
    source = variant("    tl.store(", "    acc += tl.dot(a, b, input_precision=\"ieee\")\n    tl.store(", UNROLLED)
    kernel = StageDotsPass().apply(ssa_of(source, optimized=True, file="unrolled.py", defines={"K": 128}))
    names = [op.attrs["name"] for op in kernel.body.ops if op.name == "shared_alloc"]
    assert names == ["dot_a0", "dot_b0", "dot_a1", "dot_b1"]


def test_dots_in_a_loop_keep_a_pair_each():
    kernel = StageDotsPass().apply(opt_kernel(variant(*OWN_TILES)))
    assert sum(op.name == "shared_alloc" for op in kernel.body.ops) == 4


@pytest.mark.parametrize("shape", [(70, 32), (33, 17)], ids=lambda s: "x".join(map(str, s)))  # N <= BN
def test_the_shared_pair_computes_what_the_unstaged_dots_did(shape):
    M, N = shape
    K = 192
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    outputs = []
    for kernel in (unrolled(K=K), StageDotsPass().apply(unrolled(K=K))):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(M, 32),), [a, b, c, M, N])
        outputs.append(c)
    np.testing.assert_array_equal(outputs[1], outputs[0])
    np.testing.assert_allclose(outputs[1], a.astype(np.float64) @ b, rtol=2e-2, atol=2e-2)


UNROLLED_SIGNATURE = "*bf16:16,*bf16:16,*fp32:16,i32,i32:16"


def unrolled_cuda(**defines) -> str:
    return compile_text(UNROLLED, "cuda", file="unrolled.py", signature=UNROLLED_SIGNATURE,
                        defines={"BK": 256, **defines})


def test_a_waited_for_copy_of_whole_chunks_moves_16_bytes_a_load():
    cuda = unrolled_cuda(K=512)
    assert cuda.count("uint4 shared_dot_a0_staging[8];") == 2  # each run of copies in a scope of its own
    assert "*reinterpret_cast<const uint4*>(a_ptr + (row * 512 + col))" in cuda


@pytest.mark.nvcc
def test_an_unrolled_run_of_dots_sharing_buffers_builds():
    from mytriton.backends.cuda.nvcc import compile_cubin

    assert compile_cubin(unrolled_cuda(K=1024), "sm_90")[:4] == b"\x7fELF"


@pytest.mark.gpu
@pytest.mark.parametrize("shape, BM", [((96, 64), 32), ((70, 50), 32), ((130, 64), 64)],
                         ids=["96x64-mma", "70x50-mma", "130x64-wgmma"])  # N <= BN; 64 rows on 4 warps: wgmma
def test_gpu_an_unrolled_run_of_dots_sharing_buffers_matches_numpy(shape, BM, kernel_module):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kernel = kernel_module(UNROLLED.split("\n\n", 1)[1]).unrolled_kernel
    M, N = shape
    K = 2048
    rng = np.random.default_rng(K + M)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    results = {}
    for backend in ("interp", "cuda"):
        c = np.full((M, N), np.nan, np.float32)  # an unwritten output shows
        kernel[(cdiv(M, BM),)](a, b, c, M, N, K=K, BM=BM, BN=64, BK=128 if BM == 64 else 256, backend=backend)
        results[backend] = c
    np.testing.assert_allclose(results["cuda"], results["interp"], rtol=1e-3, atol=1e-3)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(results["cuda"], exact, rtol=1e-2, atol=1e-2)


# ---- gathered rows (Liger's fused MoE: each row of A is the token an index array names) ------------

GATHERED = kernel_source("""
    @mytriton.jit
    def gathered_kernel(x_ptr, w_ptr, idx_ptr, out_ptr, n, H, N, BM: tl.constexpr = 32, BN: tl.constexpr = 32,
                        BK: tl.constexpr = 16):
        pos = tl.program_id(0) * BM + tl.arange(0, BM)
        token = tl.load(idx_ptr + pos, mask=pos < n, other=0).to(tl.int64)
        cols = tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, H, BK):
            ks = k + tl.arange(0, BK)
            a = tl.load(x_ptr + token[:, None] * H + ks[None, :], mask=(pos[:, None] < n) & (ks[None, :] < H),
                        other=0.0)
            b = tl.load(w_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < H) & (cols[None, :] < N),
                        other=0.0)
            acc += tl.dot(a, b)
        tl.store(out_ptr + pos[:, None] * N + cols[None, :], acc, mask=(pos[:, None] < n) & (cols[None, :] < N))
""")
INDEX_LOAD = "token = tl.load(idx_ptr + pos, mask=pos < n, other=0).to(tl.int64)"
GATHERED_SIGNATURE = "*fp32, *fp32, *i32, *fp32, i32, i32, i32"


def gathered_ssa(source: str = GATHERED):
    return ssa_of(source, optimized=True, file="gathered.py", f32_default="ieee", signature=GATHERED_SIGNATURE)


def gathered(source: str = GATHERED, pipeline: int = 0):
    kernel = StageDotsPass().apply(gathered_ssa(source))
    return SoftwarePipelinePass(num_stages=pipeline).apply(kernel) if pipeline else kernel


def test_gathered_rows_are_copied_through_the_index_array():
    kernel = gathered()
    (copy,) = [op for op in walk(kernel.body) if op.name == "copy_gathered_to_shared"]
    assert copy.operands[2].name == "idx_ptr"
    assert copy.operands[5].type == I64  # the token's .to(tl.int64): rows times the stride in 64 bits
    assert [op.name for op in walk(kernel.body) if op.name.startswith("load")] == []  # the index load went too


@pytest.mark.parametrize("pipeline", [0, 3], ids=["waited-for", "pipelined"])
@pytest.mark.parametrize("source", ["masked index", "unmasked index", "int32 index"])
@pytest.mark.parametrize("shape", [(45, 70, 30), (33, 17, 9)], ids=lambda s: "x".join(map(str, s)))  # N <= BN
def test_gathered_copies_compute_what_the_loads_did(pipeline, source, shape):
    text = {"masked index": GATHERED,
            "unmasked index": variant(INDEX_LOAD, "token = tl.load(idx_ptr + pos).to(tl.int64)", GATHERED),
            "int32 index": variant(INDEX_LOAD, "token = tl.load(idx_ptr + pos, mask=pos < n, other=0)",
                                   GATHERED)}[source]
    n, H, N = shape
    rng = np.random.default_rng(n + H)
    tokens = 23
    x = rng.standard_normal((tokens, H)).astype(np.float32)
    w = rng.standard_normal((H, N)).astype(np.float32)
    # Past n the index array holds tokens too, for the unmasked index load to read.
    idx = rng.integers(0, tokens, cdiv(n, 32) * 32).astype(np.int32)
    outputs = []
    for kernel in (gathered_ssa(text), gathered(text, pipeline)):
        out = np.full((n, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(n, 32),), [x, w, idx, out, n, H, N])
        outputs.append(out)
    np.testing.assert_array_equal(outputs[1], outputs[0])
    np.testing.assert_allclose(outputs[1], x[idx[:n]].astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_a_pipelined_gathered_copy_is_asynchronous():
    names = [op.name for op in walk(gathered(pipeline=3).body)]
    assert "async_copy_gathered_to_shared" in names and "copy_gathered_to_shared" not in names


GATHERED_LEFT_ALONE = {
    "an index mask of another bound": (INDEX_LOAD, "token = tl.load(idx_ptr + pos, mask=pos < H, other=0).to(tl.int64)",
                                       "the load's mask does not test their positions against the bound of the "
                                       "index load's mask"),
    "a mask on the gathered rows": ("mask=(pos[:, None] < n) & (ks[None, :] < H)",
                                    "mask=(token[:, None] < n) & (ks[None, :] < H)",
                                    "the mask tests gathered coordinates, not their positions"),
    "a store after the index load": ("acc = tl.zeros((BM, BN), tl.float32)",
                                     "acc = tl.zeros((BM, BN), tl.float32)\n    tl.store(idx_ptr + pos, pos)",
                                     "a store may run between the load of its row indices and the dot"),
}


@pytest.mark.parametrize("name", GATHERED_LEFT_ALONE)
def test_gathered_rows_the_copy_cannot_reproduce_are_left_alone(name):
    old, new, reason = GATHERED_LEFT_ALONE[name]
    kernel = gathered_ssa(variant(old, new, GATHERED))
    (dot,) = [op for op in walk(kernel.body) if op.name == "dot"]
    found = match_dot(Definitions(kernel), dot)
    assert isinstance(found, NotCanonical) and reason in found.remark, found.remark


# Liger's weight gradients: positions expert_start + (k + arange), the index
# load's mask and the tile's testing k + arange against the expert's count.
NESTED = variant("pos = tl.program_id(0) * BM + tl.arange(0, BM)\n    token = tl.load(idx_ptr + pos, mask=pos < n, other=0)",
                 "local = tl.program_id(0) * BM + tl.arange(0, BM)\n    pos = N // 2 + local\n"
                 "    token = tl.load(idx_ptr + pos, mask=local < n, other=0)", GATHERED)
NESTED = variant("mask=(pos[:, None] < n) & (ks[None, :] < H)", "mask=(local[:, None] < n) & (ks[None, :] < H)", NESTED)
NESTED = variant("tl.store(out_ptr + pos[:, None] * N + cols[None, :], acc, mask=(pos[:, None] < n)",
                 "tl.store(out_ptr + local[:, None] * N + cols[None, :], acc, mask=(local[:, None] < n)", NESTED)


@pytest.mark.parametrize("pipeline", [0, 3], ids=["waited-for", "pipelined"])
def test_nested_offsets_and_a_shifted_index_mask_are_staged(pipeline):
    n, H, N = 45, 70, 30
    rng = np.random.default_rng(7)
    x = rng.standard_normal((23, H)).astype(np.float32)
    w = rng.standard_normal((H, N)).astype(np.float32)
    idx = rng.integers(0, 23, 64 + N // 2).astype(np.int32)
    staged = gathered(NESTED, pipeline)
    assert [op.name for op in walk(staged.body)].count("dot") == 0
    outputs = []
    for kernel in (gathered_ssa(NESTED), staged):
        out = np.full((n, N), np.nan, np.float32)
        run_kernel(kernel, (cdiv(n, 32),), [x, w, idx, out, n, H, N])
        outputs.append(out)
    np.testing.assert_array_equal(outputs[1], outputs[0])
    np.testing.assert_allclose(outputs[1], x[idx[N // 2:N // 2 + n]].astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_rows_gathered_from_an_i64_array_take_64_bit_offsets_even_with_an_i32_stride():
    # Staged SSA edited by hand: the copy scales an i64 index by the i32 stride H itself.
    from test_cli_chain import cli, ok

    source = variant(INDEX_LOAD, "token = tl.load(idx_ptr + pos, mask=pos < n, other=0)", GATHERED)
    staged = compile_text(source, "staged", file="gathered.py", signature="*fp16:16, *fp16:16, *i64:16, *fp32:16, "
                          "i32:16, i32:16, i32:16", defines={"BM": 64, "BN": 64, "BK": 32}, f32_default="ieee")
    cast = re.search(r"(%\d+) = cast H, dtype=i64", staged).group(1)
    edited = re.sub(rf"(copy_gathered_to_shared .*?), {cast}, 1,", r"\1, H, 1,", staged)
    assert edited != staged and "i64" in edited
    cuda = ok(cli("emit-cuda", stdin=ok(cli("layouts", stdin=edited.encode())))).decode()
    assert re.search(r"long long h\d+_offset\[\d+\];", cuda), cuda


HELD_A = """
@mytriton.jit
def k(x_ptr, w_ptr, out_ptr, s_ptr):
    r = tl.arange(0, 32)
    c = tl.arange(0, 64)
    x = tl.load(x_ptr + r[:, None] * 64 + c[None, :])
    sums = tl.sum(x * x, axis=1)
    w = tl.load(w_ptr + c[:, None] * 32 + r[None, :])
    tl.store(out_ptr + r[:, None] * 32 + r[None, :], tl.dot(x, w))
    tl.store(s_ptr + r, sums)
"""


@pytest.mark.parametrize("dtype, held", [("fp16", True), ("bf16", True), ("fp32", False)])
def test_a_loaded_a_tile_other_ops_read_stays_in_registers_for_16_bit_elements(dtype, held):
    staged = compile_text(kernel_source(HELD_A), "staged", signature=f"*{dtype}, *{dtype}, *fp32, *fp32")
    # 16-bit: x is written to shared memory from the registers the sum reads (dot_rs);
    # f32 (TF32 on wgmma from registers is not a form the GPU tests exercise): both copied.
    assert (" dot_rs " in staged, 'name="dot_a0"' in staged) == (held, not held)
