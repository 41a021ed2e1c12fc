"""The stage-dots pass: matching the canonical tile loads of a ``tl.dot``,
the rewrite into shared_alloc / copy_to_shared / barrier / dot_shared (exact
SSA before and after), what is left alone and why, the shared-memory budget,
and the interpreter giving the same results before and after.
"""
from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from conftest import cdiv, compile_text, kernel_source, ssa_of
from mytriton import pipeline
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError, source_digest
from mytriton.ir.analysis import Definitions, NotDefinedBy
from mytriton.ir.ssa import BlockArg, Const, Param, for_index, walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.ir.text_common import format_literal
from mytriton.passes.stage_dots import NotCanonical, StageDotsPass, match_dot, match_operand
from mytriton.types import F32
from test_cli_chain import cli, ok

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

# What opt makes of it: licm has hoisted a_ptr + a_rows * K and the row mask
# out of the loop, and cse shares a_rows < M and b_cols < N with the output mask.
MATMUL_OPT = dedent("""\
    kernel matmul_kernel(a_ptr: ptr<f32>, b_ptr: ptr<f32>, c_ptr: ptr<f32>, M: i32, N: i32, K: i32) constexpr(BM = 64, BN = 64, BK = 32) @"matmul.py":5:1 {
      %0 = program_id axis=0 : i32 @7:13
      %1 = mul %0, 64 : i32 @9:14
      %2 = arange start=0, end=64 : vector<64 x i32> @9:27
      %3 = add %1, %2 : vector<64 x i32> @9:14
      %4 = arange start=0, end=32 : vector<32 x i32> @11:14
      %5 = program_id axis=1 : i32 @8:13
      %6 = mul %5, 64 : i32 @10:14
      %7 = add %6, %2 : vector<64 x i32> @10:14
      %8 = full 0.0, shape=(64, 64), dtype=f32 : block<64x64 x f32> @12:11
      %9 = expand_dims %3, axis=1 : block<64x1 x i32> @14:18
      %10 = mul %9, K : block<64x1 x i32> @16:29
      %11 = addptr a_ptr, %10 : block<64x1 x ptr<f32>> @16:21
      %12 = expand_dims %4, axis=0 : block<1x32 x i32> @15:22
      %13 = cmp_lt %9, M : block<64x1 x bool> @16:56
      %14 = expand_dims %4, axis=1 : block<32x1 x i32> @17:22
      %15 = expand_dims %7, axis=0 : block<1x64 x i32> @18:18
      %16 = cmp_lt %15, N : block<1x64 x bool> @19:71
      %33 = for %17 in range(0, K, 32) iter_args(%18 = %8) : block<64x64 x f32> @13:5 {
        %19 = add %17, %12 : block<1x32 x i32> @15:18
        %20 = addptr %11, %19 : block<64x32 x ptr<f32>> @16:21
        %21 = cmp_lt %19, K : block<1x32 x bool> @16:71
        %22 = and %13, %21 : block<64x32 x bool> @16:55
        %23 = load %20, %22, 0.0 : block<64x32 x f32> @16:13
        %24 = add %17, %14 : block<32x1 x i32> @17:18
        %25 = mul %24, N : block<32x1 x i32> @19:29
        %26 = addptr b_ptr, %25 : block<32x1 x ptr<f32>> @19:21
        %27 = addptr %26, %15 : block<32x64 x ptr<f32>> @19:21
        %28 = cmp_lt %24, K : block<32x1 x bool> @19:56
        %29 = and %28, %16 : block<32x64 x bool> @19:55
        %30 = load %27, %29, 0.0 : block<32x64 x f32> @19:13
        %31 = dot %23, %30, none : block<64x64 x f32> @20:16
        %32 = add %18, %31 : block<64x64 x f32> @20:9
        yield %32 @13:5
      }
      %34 = mul %9, N : block<64x1 x i32> @23:22
      %35 = addptr c_ptr, %34 : block<64x1 x ptr<f32>> @23:14
      %36 = addptr %35, %15 : block<64x64 x ptr<f32>> @23:14
      %37 = and %13, %16 : block<64x64 x bool> @23:53
      store %36, %33, %37 @23:5
    }
""")

# After stage-dots: the buffers at the top, the copies and barriers around the
# dot in the loop; the loads and the ops only they needed are gone, the output
# mask's comparisons and offsets stay.
MATMUL_STAGED = dedent("""\
    kernel matmul_kernel(a_ptr: ptr<f32>, b_ptr: ptr<f32>, c_ptr: ptr<f32>, M: i32, N: i32, K: i32) constexpr(BM = 64, BN = 64, BK = 32) @"matmul.py":5:1 {
      %0 = shared_alloc name="dot_a0", shape=(64, 32), dtype=f32 : shared<64x32 x f32> @16:13
      %1 = shared_alloc name="dot_b0", shape=(32, 64), dtype=f32 : shared<32x64 x f32> @19:13
      %2 = program_id axis=0 : i32 @7:13
      %3 = mul %2, 64 : i32 @9:14
      %4 = arange start=0, end=64 : vector<64 x i32> @9:27
      %5 = add %3, %4 : vector<64 x i32> @9:14
      %6 = program_id axis=1 : i32 @8:13
      %7 = mul %6, 64 : i32 @10:14
      %8 = add %7, %4 : vector<64 x i32> @10:14
      %9 = full 0.0, shape=(64, 64), dtype=f32 : block<64x64 x f32> @12:11
      %10 = expand_dims %5, axis=1 : block<64x1 x i32> @14:18
      %11 = cmp_lt %10, M : block<64x1 x bool> @16:56
      %12 = expand_dims %8, axis=0 : block<1x64 x i32> @18:18
      %13 = cmp_lt %12, N : block<1x64 x bool> @19:71
      %18 = for %14 in range(0, K, 32) iter_args(%15 = %9) : block<64x64 x f32> @13:5 {
        copy_to_shared %0, a_ptr, %3, %14, K, M, K, 0.0 @16:13
        copy_to_shared %1, b_ptr, %14, %7, N, K, N, 0.0 @19:13
        barrier @20:16
        %16 = dot_shared %0, %1, none : block<64x64 x f32> @20:16
        barrier @20:16
        %17 = add %15, %16 : block<64x64 x f32> @20:9
        yield %17 @13:5
      }
      %19 = mul %10, N : block<64x1 x i32> @23:22
      %20 = addptr c_ptr, %19 : block<64x1 x ptr<f32>> @23:14
      %21 = addptr %20, %12 : block<64x64 x ptr<f32>> @23:14
      %22 = and %11, %13 : block<64x64 x bool> @23:53
      store %21, %18, %22 @23:5
    }
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

ONE_TILE_OPT = dedent("""\
    kernel one_tile_kernel(a_ptr: ptr<f32>, b_ptr: ptr<f32>, c_ptr: ptr<f32>, M: i32, N: i32, K: i32) constexpr(BM = 32, BN = 32, BK = 16) @"one_tile.py":5:1 {
      %0 = program_id axis=0 : i32 @7:12
      %1 = mul %0, 32 : i32 @7:12
      %2 = arange start=0, end=32 : vector<32 x i32> @7:36
      %3 = expand_dims %2, axis=1 : block<32x1 x i32> @7:36
      %4 = add %1, %3 : block<32x1 x i32> @7:12
      %5 = mul K, %4 : block<32x1 x i32> @10:26
      %6 = arange start=0, end=16 : vector<16 x i32> @9:10
      %7 = expand_dims %6, axis=0 : block<1x16 x i32> @10:37
      %8 = add %5, %7 : block<32x16 x i32> @10:26
      %9 = addptr a_ptr, %8 : block<32x16 x ptr<f32>> @10:17
      %10 = cmp_lt %7, K : block<1x16 x bool> @10:57
      %11 = cmp_lt %4, M : block<32x1 x bool> @10:77
      %12 = and %10, %11 : block<32x16 x bool> @10:56
      %13 = load %9, %12, 0 : block<32x16 x f32> @10:9
      %14 = expand_dims %6, axis=1 : block<16x1 x i32> @11:25
      %15 = mul %14, N : block<16x1 x i32> @11:25
      %16 = addptr b_ptr, %15 : block<16x1 x ptr<f32>> @11:17
      %17 = program_id axis=1 : i32 @8:12
      %18 = mul %17, 32 : i32 @8:12
      %19 = expand_dims %2, axis=0 : block<1x32 x i32> @8:36
      %20 = add %18, %19 : block<1x32 x i32> @8:12
      %21 = addptr %16, %20 : block<16x32 x ptr<f32>> @11:17
      %22 = cmp_lt %14, K : block<16x1 x bool> @11:55
      %23 = cmp_lt %20, N : block<1x32 x bool> @11:75
      %24 = and %22, %23 : block<16x32 x bool> @11:54
      %25 = load %21, %24, 0.0 : block<16x32 x f32> @11:9
      %26 = mul %4, N : block<32x1 x i32> @12:22
      %27 = addptr c_ptr, %26 : block<32x1 x ptr<f32>> @12:14
      %28 = addptr %27, %20 : block<32x32 x ptr<f32>> @12:14
      %29 = dot %13, %25, none : block<32x32 x f32> @12:39
      %30 = and %11, %23 : block<32x32 x bool> @12:58
      store %28, %29, %30 @12:5
    }
""")

ONE_TILE_STAGED = dedent("""\
    kernel one_tile_kernel(a_ptr: ptr<f32>, b_ptr: ptr<f32>, c_ptr: ptr<f32>, M: i32, N: i32, K: i32) constexpr(BM = 32, BN = 32, BK = 16) @"one_tile.py":5:1 {
      %0 = shared_alloc name="dot_a0", shape=(32, 16), dtype=f32 : shared<32x16 x f32> @10:9
      %1 = shared_alloc name="dot_b0", shape=(16, 32), dtype=f32 : shared<16x32 x f32> @11:9
      %2 = program_id axis=0 : i32 @7:12
      %3 = mul %2, 32 : i32 @7:12
      %4 = arange start=0, end=32 : vector<32 x i32> @7:36
      %5 = expand_dims %4, axis=1 : block<32x1 x i32> @7:36
      %6 = add %3, %5 : block<32x1 x i32> @7:12
      %7 = cmp_lt %6, M : block<32x1 x bool> @10:77
      %8 = program_id axis=1 : i32 @8:12
      %9 = mul %8, 32 : i32 @8:12
      %10 = expand_dims %4, axis=0 : block<1x32 x i32> @8:36
      %11 = add %9, %10 : block<1x32 x i32> @8:12
      %12 = cmp_lt %11, N : block<1x32 x bool> @11:75
      %13 = mul %6, N : block<32x1 x i32> @12:22
      %14 = addptr c_ptr, %13 : block<32x1 x ptr<f32>> @12:14
      %15 = addptr %14, %11 : block<32x32 x ptr<f32>> @12:14
      copy_to_shared %0, a_ptr, %3, 0, K, M, K, 0 @10:9
      copy_to_shared %1, b_ptr, 0, %9, N, K, N, 0.0 @11:9
      barrier @12:39
      %16 = dot_shared %0, %1, none : block<32x32 x f32> @12:39
      barrier @12:39
      %17 = and %7, %12 : block<32x32 x bool> @12:58
      store %15, %16, %17 @12:5
    }
""")


def staged_text(text: str) -> str:
    return print_kernel(StageDotsPass().apply(parse_kernel(text, "<test>")))


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
    kernel = parse_kernel(MATMUL_OPT, "<test>")
    defs = Definitions(kernel)
    dot = the_dot(kernel)
    load_a = defs.require(dot.operands[0], "load")
    row_pointer = defs.require(defs.require(load_a.operands[0], "addptr").operands[0], "addptr")
    assert row_pointer.parent is kernel.body  # hoisted by licm, found all the same
    assert defs.defined_by(dot.operands[0], "add", "mul") is None


def test_require_says_what_it_found_instead():
    kernel = parse_kernel(MATMUL_OPT, "<test>")
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
    kernel = parse_kernel(ONE_TILE_OPT, "<test>")
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
    "a mask missing the column bound": (
        (A_LOAD, A_LOAD.replace("mask=(a_rows < M) & (a_cols < K)", "mask=a_rows < M")),
        "operand A: the mask of the load is not (rows < bound) & (cols < bound)"),
    "a mask on other coordinates": (
        (A_LOAD, A_LOAD.replace("(a_cols < K)", "(offs_k[None, :] < K)")),
        "operand A: the mask of the load is not (rows < bound) & (cols < bound)"),
    "an arange not from 0": (
        ("b_rows = k + offs_k[:, None]", "b_rows = k + tl.arange(32, 64)[:, None]"),
        "operand B: arange(32, 64) does not start at 0"),
    "strided columns": (
        (A_LOAD, A_LOAD.replace("a_ptr + a_rows * K + a_cols,", "a_ptr + a_rows * K + a_cols * 2,")),
        "operand A: the columns are not offset + expand_dims(arange(0, n), axis=0)"),
    "a pointer with a third term": (
        (A_LOAD, A_LOAD.replace("a_ptr + a_rows", "a_ptr + 1 + a_rows")),
        "operand A: the pointer is not base + rows * row_stride + cols"),
    "a store between the load and the dot": (
        ("acc += tl.dot(a, b)", "tl.store(a_ptr + k, 1.0)\n        acc += tl.dot(a, b)"),
        "operand A: a store may run between the load and the dot"),
}


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


def with_digest(ssa: str, source: str) -> str:
    """``ssa`` with the digest of ``source`` in its header, as lowering prints it."""
    header, rest = ssa.split("\n", 1)
    return header.removesuffix(" {") + f' sha256="{source_digest(source)}" {{\n' + rest


def test_the_opt_text_is_the_matmul_kernel():
    assert compile_text(MATMUL, "opt", file="matmul.py") == with_digest(MATMUL_OPT, MATMUL)
    assert compile_text(ONE_TILE, "opt", file="one_tile.py") == with_digest(ONE_TILE_OPT, ONE_TILE)


def test_stage_dots_on_the_matmul_loop():
    assert staged_text(MATMUL_OPT) == MATMUL_STAGED


def test_stage_dots_on_a_dot_outside_any_loop():
    assert staged_text(ONE_TILE_OPT) == ONE_TILE_STAGED


def test_ops_only_the_loads_needed_go_and_shared_ones_stay():
    kernel = StageDotsPass().apply(parse_kernel(MATMUL_OPT, "<test>"))
    ops = list(walk(kernel.body))
    assert not [op for op in ops if op.name == "load"]
    # The 32-wide arange only made K coordinates for the loads; the 64-wide one
    # also makes the output's.
    assert [op.attrs["end"] for op in ops if op.name == "arange"] == [64]
    # a_rows < M and b_cols < N survive for the output mask, hoisted where licm put them.
    compares = [(op.operands[1].name, op.parent is kernel.body) for op in ops if op.name == "cmp_lt"]
    assert compares == [("M", True), ("N", True)]
    assert [op.name for op in ops if op.name in ("addptr", "and")] == ["addptr", "addptr", "and"]


def test_a_load_also_used_elsewhere_stays():
    source = variant("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.sum(a, axis=1)[:, None]")
    kernel = StageDotsPass().apply(opt_kernel(source))
    loads = [op for op in walk(kernel.body) if op.name == "load"]
    assert [op.result.type.shape for op in loads] == [(64, 32)]  # A's, read by the sum; B's is gone
    assert len([op for op in walk(kernel.body) if op.name == "copy_to_shared"]) == 2


def test_a_dot_with_an_accumulator_keeps_it():
    kernel = StageDotsPass().apply(opt_kernel(variant("acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)")))
    text = print_kernel(kernel)
    assert "    %16 = dot_shared %0, %1, %15 : block<64x64 x f32> @20:15\n    barrier @20:15\n    yield %16" in text


# A second dot of the same tiles, loaded again (cse would merge a second dot of the same loads).
TWO_DOTS = ("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.dot(a, tl.load(b_ptr + b_rows * N + b_cols, "
            "mask=(b_rows < K) & (b_cols < N), other=0.0))")


def test_each_dot_gets_its_own_buffers_in_dot_order():
    kernel = StageDotsPass().apply(opt_kernel(variant(*TWO_DOTS)))
    allocations = [op.attrs["name"] for op in kernel.body.ops if op.name == "shared_alloc"]
    assert allocations == ["dot_a0", "dot_b0", "dot_a1", "dot_b1"]
    assert kernel.body.ops[4].name != "shared_alloc"  # all four first in the kernel


def test_stage_dots_is_idempotent():
    assert staged_text(MATMUL_STAGED) == MATMUL_STAGED
    assert staged_text(ONE_TILE_STAGED) == ONE_TILE_STAGED


def test_staged_ssa_roundtrips():
    for text in (MATMUL_STAGED, ONE_TILE_STAGED):
        assert print_kernel(parse_kernel(text, "<test>")) == text


# ---- the shared-memory budget ------------------------------------------------------------------------


def test_a_pair_over_the_budget_is_an_error_at_the_dot_and_changes_nothing():
    kernel = opt_kernel(BM=128, BN=128, BK=64)
    before = print_kernel(kernel)
    with pytest.raises(CompileError) as info:
        StageDotsPass().apply(kernel)
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
        StageDotsPass().apply(kernel)
    assert print_kernel(kernel) == before


def test_a_pair_of_exactly_the_budget_fits():
    kernel = opt_kernel(BM=128, BN=64, BK=64)  # 32 KiB + 16 KiB
    StageDotsPass().apply(kernel)
    assert sum(op.result.type.nbytes for op in kernel.body.ops if op.name == "shared_alloc") == 49152


# ---- the pipeline and the command ---------------------------------------------------------------------


def test_compile_emit_staged_prints_the_staged_ssa():
    assert compile_text(MATMUL, "staged", file="matmul.py") == with_digest(MATMUL_STAGED, MATMUL)


def test_pipeline_stage_dots_verifies_and_stages():
    kernel = pipeline.stage_dots(parse_kernel(MATMUL_OPT, "<test>"))
    assert print_kernel(kernel) == MATMUL_STAGED


def test_the_stage_dots_command_reads_and_prints_ssa():
    assert ok(cli("stage-dots", stdin=MATMUL_OPT.encode())).decode() == MATMUL_STAGED


def test_the_stage_dots_command_reports_the_budget_error(tmp_path):
    target = tmp_path / "out.ssa"
    text = print_kernel(opt_kernel(BM=128, BN=128, BK=64))
    result = cli("stage-dots", "-o", str(target), stdin=text.encode())
    assert result.returncode == 1
    assert result.stderr.decode().startswith("matmul.py:20:16: error: tl.dot needs 65536 bytes of shared memory")
    assert not target.exists()


# ---- the interpreter: staged and unstaged give the same bits --------------------------------------------

SHAPES = [(70, 50, 77), (65, 130, 20), (33, 17, 9), (64, 64, 0)]  # ragged; K < BK; no K step at all


@pytest.mark.parametrize("source", [MATMUL, variant("acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)"),
                                    variant("acc += tl.dot(a, b)", "acc += tl.dot(a, b) + tl.sum(a, axis=1)[:, None]")],
                         ids=["sample", "accumulator", "load-also-summed"])
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
        np.testing.assert_allclose(outputs[1], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


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
