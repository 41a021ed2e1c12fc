"""The axis analysis (ir/axis_info.py): contiguity, divisibility and
constancy per dimension, from parameter facts, arange, broadcasting,
arithmetic, comparisons and hints, and the vector width of each access."""
from __future__ import annotations

import pytest

from conftest import build
from mytriton.ir.axis_info import AxisAnalysis, contiguous_dim, vector_width
from mytriton.ir.ssa import walk

VECTOR_ADD = """
    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def analysed(body: str, signature: str, **defines):
    kernel = build(body, signature=signature, **defines)
    return kernel, AxisAnalysis(kernel)


def widths(body: str, signature: str, **defines) -> list[tuple[str, int]]:
    kernel, analysis = analysed(body, signature, **defines)
    return [(op.name, vector_width(analysis, op)) for op in walk(kernel.body) if op.name in ("load", "store")]


def info_of(body: str, signature: str, op_name: str, **defines):
    kernel, analysis = analysed(body, signature, **defines)
    op = next(op for op in walk(kernel.body) if op.name == op_name)
    return analysis.info[op.results[0]]


def test_aligned_pointers_and_a_multiple_of_16_give_16_byte_accesses():
    assert widths(VECTOR_ADD, "*fp32:16, *fp32:16, i32:16", BLOCK=1024) == [("load", 4), ("store", 4)]


def test_without_facts_every_access_is_scalar():
    assert widths(VECTOR_ADD, "*fp32, *fp32, i32", BLOCK=1024) == [("load", 1), ("store", 1)]


def test_a_ragged_bound_keeps_the_mask_from_being_constant_over_a_run():
    assert widths(VECTOR_ADD, "*fp32:16, *fp32:16, i32", BLOCK=1024) == [("load", 1), ("store", 1)]


def test_an_unaligned_pointer_is_scalar_and_the_aligned_one_is_not():
    assert widths(VECTOR_ADD, "*fp32, *fp32:16, i32:16", BLOCK=1024) == [("load", 1), ("store", 4)]


def test_half_precision_moves_eight_elements():
    assert widths(VECTOR_ADD, "*fp16:16, *fp16:16, i32:16", BLOCK=1024) == [("load", 8), ("store", 8)]


def test_an_offset_of_one_element_breaks_alignment():
    body = VECTOR_ADD.replace("x_ptr + offs", "x_ptr + 1 + offs")
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=1024)[0] == ("load", 1)


def test_an_offset_of_four_elements_keeps_it():
    body = VECTOR_ADD.replace("x_ptr + offs", "x_ptr + 4 + offs")
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=1024)[0] == ("load", 4)


def test_x_le_n_is_not_constant_over_a_run():
    body = VECTOR_ADD.replace("mask=offs < n), mask=offs < n)", "mask=offs <= n), mask=offs < n)")
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=1024) == [("load", 1), ("store", 4)]


def test_a_strided_index_is_not_contiguous():
    body = VECTOR_ADD.replace("tl.arange(0, BLOCK)", "tl.arange(0, BLOCK) * 2")
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=1024) == [("load", 1), ("store", 1)]


def test_arange_is_contiguous_and_divisible_by_its_start():
    info = info_of("""
        @mytriton.jit
        def k(x_ptr):
            tl.store(x_ptr + tl.arange(8, 24), 1.0)
    """, "*fp32", "arange")
    assert (info.contiguity, info.divisibility, info.constancy) == ((16,), (8,), (1,))


def test_comparison_with_a_multiple_of_16_is_constant_over_16():
    info = info_of(VECTOR_ADD, "*fp32, *fp32, i32:16", "cmp_lt", BLOCK=256)
    assert info.constancy == (16,)


def test_rows_times_a_stride_plus_columns_is_contiguous_along_the_columns():
    body = """
        @mytriton.jit
        def k(x_ptr, out_ptr, stride, BM: tl.constexpr, BN: tl.constexpr):
            rows = tl.arange(0, BM)[:, None]
            cols = tl.arange(0, BN)[None, :]
            tl.store(out_ptr + rows * stride + cols, tl.load(x_ptr + rows * stride + cols))
    """
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BM=16, BN=64) == [("load", 4), ("store", 4)]
    assert widths(body, "*fp32:16, *fp32:16, i32", BM=16, BN=64) == [("load", 1), ("store", 1)]


def test_a_tile_stored_column_major_runs_down_its_rows():
    # rows + cols * stride: contiguous along dimension 0, where the access's
    # runs then go (Triton's coalescing orders an access by its contiguity)
    body = """
        @mytriton.jit
        def k(x_ptr, out_ptr, stride, BM: tl.constexpr, BN: tl.constexpr):
            rows = tl.arange(0, BM)[:, None]
            cols = tl.arange(0, BN)[None, :]
            tl.store(out_ptr + rows + cols * stride, tl.load(x_ptr + rows * stride + cols))
    """
    kernel, analysis = analysed(body, "*fp32:16, *fp32:16, i32:16", BM=16, BN=64)
    load, store = (op for op in walk(kernel.body) if op.name in ("load", "store"))
    assert contiguous_dim(analysis, load) == 1 and vector_width(analysis, load) == 4
    assert contiguous_dim(analysis, store) == 0
    assert vector_width(analysis, store) == 1 and vector_width(analysis, store, 0) == 4


def test_multiple_of_and_max_contiguous_hints_are_facts():
    body = """
        @mytriton.jit
        def k(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
            offs = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, BLOCK), BLOCK), BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    """
    assert widths(body, "*fp32:16, *fp32:16, i32", BLOCK=256) == [("load", 4), ("store", 4)]


def test_a_loop_index_is_divisible_by_its_start_and_step():
    body = """
        @mytriton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            for off in range(0, n, BLOCK):
                cols = off + tl.arange(0, BLOCK)
                tl.store(out_ptr + cols, tl.load(x_ptr + cols, mask=cols < n, other=0.0), mask=cols < n)
    """
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=256) == [("load", 4), ("store", 4)]
    assert widths(body.replace("range(0, n, BLOCK)", "range(1, n, BLOCK)"), "*fp32:16, *fp32:16, i32:16",
                  BLOCK=256) == [("load", 1), ("store", 1)]


def test_a_scalar_where_is_a_multiple_of_what_both_choices_are():
    """A scalar choice between multiples of 128 and of 0 (persistent
    matmul's clamped column start, once stage-dots takes it as a scalar)."""
    body = """
        @mytriton.jit
        def k(out_ptr, n, BLOCK: tl.constexpr):
            start = tl.program_id(0) * BLOCK
            tl.store(out_ptr, tl.where(start < n, start, 0))
    """
    assert info_of(body, "*i32:16, i32", "where", BLOCK=128).scalar_divisibility == 128
    assert info_of(body.replace("start, 0))", "start, 3))"), "*i32:16, i32", "where",
                   BLOCK=128).scalar_divisibility == 1


@pytest.mark.parametrize("expr", ["tl.where(offs < n, offs, 0)", "offs // 2", "offs % 64"])
def test_ops_without_rules_know_nothing(expr):
    body = VECTOR_ADD.replace("tl.arange(0, BLOCK)\n", "tl.arange(0, BLOCK)\n        offs = " + expr + "\n")
    assert widths(body, "*fp32:16, *fp32:16, i32:16", BLOCK=1024) == [("load", 1), ("store", 1)]
