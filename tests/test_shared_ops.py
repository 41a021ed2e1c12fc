"""The shared-memory ops the stage-dots pass writes (``shared_alloc``,
``copy_to_shared``, ``barrier``, ``dot_shared``) and the ``shared<RxC x T>``
type: how they read and print, what the verifier accepts and refuses, and
what the interpreter does with them. How the passes treat them is checked as
text in tests/lit/ (cse/, dce/, licm/ and opt/).
"""
from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.ir.text_common import format_attr, parse_type
from mytriton.passes.verify import verify
from mytriton.types import F16, F32, SharedType

# Every new op once, in printed form: a 32x16 by 16x32 product of two staged tiles.
STAGED = dedent("""\
    kernel k(a: ptr<f32>, b: ptr<f32>, c: ptr<f32>, M: i32, N: i32, K: i32) @"k.py":1:1 {
      %0 = shared_alloc name="dot_a0", shape=(32, 16), dtype=f32 : shared<32x16 x f32> @2:5
      %1 = shared_alloc name="dot_b0", shape=(16, 32), dtype=f32 : shared<16x32 x f32> @3:5
      %2 = program_id axis=0 : i32 @4:5
      %3 = mul %2, 32 : i32 @4:5
      copy_to_shared %0, a, %3, 0, K, M, K, 0.0 @5:5
      copy_to_shared %1, b, 0, 0, N, K, N, 0 @6:5
      barrier @7:5
      %4 = dot_shared %0, %1, none : block<32x32 x f32> @7:5
      barrier @7:5
      %5 = arange start=0, end=32 : vector<32 x i32> @8:5
      %6 = add %3, %5 : vector<32 x i32> @8:5
      %7 = expand_dims %6, axis=1 : block<32x1 x i32> @8:5
      %8 = mul %7, N : block<32x1 x i32> @8:5
      %9 = expand_dims %5, axis=0 : block<1x32 x i32> @8:5
      %10 = add %8, %9 : block<32x32 x i32> @8:5
      %11 = addptr c, %10 : block<32x32 x ptr<f32>> @8:5
      store %11, %4, none @8:5
    }
""")


def roundtrip(text: str) -> str:
    return print_kernel(parse_kernel(text, "<test>"))


def verify_text(text: str) -> None:
    verify(parse_kernel(text, "<test>"))


def refused(text: str) -> str:
    """The verifier's (or parser's) message for ``text``."""
    with pytest.raises(CompileError) as info:
        verify_text(text)
    return info.value.message


def edit(old: str, new: str, text: str = STAGED) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# ---- the type -------------------------------------------------------------------------------


def test_shared_type_prints_rows_columns_and_element():
    assert str(SharedType((64, 32), F32)) == "shared<64x32 x f32>"
    assert SharedType((64, 32), F16).nbytes == 64 * 32 * 2


def test_shared_type_reads_back():
    assert parse_type("shared<64x32 x f32>") == SharedType((64, 32), F32)
    assert parse_type(str(SharedType((16, 128), F16))) == SharedType((16, 128), F16)


@pytest.mark.parametrize("text,message", [
    ("shared<2x4x8 x f32>", "two dimensions"),
    ("shared<4x4 x ptr<f32>>", "holds scalars"),
    ("shared<4x4 x vector<4 x f32>>", "holds scalars"),
    ("shared<0x4 x f32>", "must be positive"),
    ("shared<4 x f32>", "dimensions (RxC)"),
])
def test_malformed_shared_types_are_refused(text, message):
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_type(text)


# ---- string attributes -------------------------------------------------------------------------


def test_string_attributes_print_in_double_quotes_with_escapes():
    assert format_attr("dot_a0") == '"dot_a0"'
    assert format_attr('say "hi"\\\n') == '"say \\"hi\\"\\\\\\n"'


def test_string_attributes_read_back_their_escapes():
    text = edit('name="dot_a0"', 'name="a\\"b\\\\c\\td"')
    kernel = parse_kernel(text, "<test>")
    assert kernel.body.ops[0].attrs["name"] == 'a"b\\c\td'
    assert print_kernel(kernel) == text


def test_unknown_escapes_are_refused():
    with pytest.raises(CompileError, match=r"unknown escape '\\q'"):
        parse_kernel(edit('name="dot_a0"', 'name="a\\qb"'), "<test>")


def test_a_file_name_with_quotes_and_backslashes_roundtrips():
    text = edit('@"k.py":1:1', '@"dir\\\\my \\"k\\".py":1:1')
    assert parse_kernel(text, "<test>").loc.file == 'dir\\my "k".py'
    assert roundtrip(text) == text


# ---- reading, printing, verifying ----------------------------------------------------------------


def test_staged_ssa_roundtrips():
    assert roundtrip(STAGED) == STAGED


def test_staged_ssa_verifies():
    verify_text(STAGED)


def test_the_ops_read_back_with_their_operands_attributes_and_types():
    ops = parse_kernel(STAGED, "<test>").body.ops
    alloc, copy, barrier, dot = ops[0], ops[4], ops[6], ops[7]
    assert alloc.attrs == {"name": "dot_a0", "shape": (32, 16), "dtype": F32}
    assert alloc.result.type == SharedType((32, 16), F32)
    assert len(copy.operands) == 8 and copy.operands[0] is alloc.result and not copy.results
    assert barrier.name == "barrier" and not barrier.operands and not barrier.results
    assert dot.operands[:2] == [alloc.result, ops[1].result] and dot.operands[2] is None


@pytest.mark.parametrize("old,new,message", [
    # copy_to_shared
    ("copy_to_shared %0, a,", "copy_to_shared %3, a,", "copies into a shared buffer, got i32"),
    ("copy_to_shared %0, a,", "copy_to_shared %0, M,", "must be a scalar pointer, got i32"),
    ("copy_to_shared %0, a, %3, 0, K, M, K", "copy_to_shared %0, a, %3, 0, K, M, 2.0",
     "the column bound of 'copy_to_shared' must be an i32 scalar, got literal float"),
    ("copy_to_shared %0, a, %3, 0, K", "copy_to_shared %0, a, %3, 0, true", "the row stride"),
    ("K, M, K, 0.0 @5:5", "K, M, K, a @5:5", "fill value of 'copy_to_shared' must be a scalar number"),
    # shared_alloc
    ("shape=(32, 16), dtype=f32 : shared<32x16 x f32>", "shape=(32, 16), dtype=f32 : shared<16x32 x f32>",
     "declares shared<16x32 x f32> but its operands give shared<32x16 x f32>"),
    ("shape=(32, 16), dtype=f32 : shared<32x16 x f32>", "shape=(24, 16), dtype=f32 : shared<24x16 x f32>",
     "shared buffer dimensions must be powers of two"),
    ("shape=(32, 16), dtype=f32 : shared<32x16 x f32>", "shape=(32,), dtype=f32 : shared<32x16 x f32>",
     "a shared buffer has two dimensions"),
    ('name="dot_b0"', 'name="dot_a0"', "two shared buffers are named 'dot_a0'"),
    ('name="dot_b0"', 'name="dot b0"', "must be an identifier"),
    ('name="dot_b0"', "name=3", "the attribute name of 'shared_alloc' must be a string"),
    # dot_shared
    ("dot_shared %0, %1, none", "dot_shared %1, %0, none",
     "declares block<32x32 x f32> but its operands give block<16x16 x f32>"),
    ("dot_shared %0, %1, none", "dot_shared %0, %0, none", "'dot_shared' inner dimensions differ"),
    ("dot_shared %0, %1, none", "dot_shared %0, %1, 0.0", "the accumulator of 'dot_shared'"),
    ("dot_shared %0, %1, none", "dot_shared %0, %3, none", "multiplies two shared buffers"),
    # shared buffers only where an op expects one
    ("store %11, %4, none", "store %11, %0, none", "operand 'value' of 'store' cannot be a shared buffer"),
    ("%3 = mul %2, 32 : i32", "%3 = mul %2, 32 : i32 @4:5\n  %99 = add %0, 1 : i32", "operand 'lhs' of 'add' cannot"),
])
def test_the_verifier_refuses(old, new, message):
    assert message in refused(edit(old, new))


def test_a_pointee_other_than_the_buffer_element_is_refused():
    text = edit("kernel k(a: ptr<f32>", "kernel k(a: ptr<f16>")
    assert "cannot copy from ptr<f16> into shared<32x16 x f32>: the element types differ" in refused(text)


def test_a_bound_of_another_integer_type_is_refused():
    text = edit("M: i32", "M: i64")
    assert "the row bound of 'copy_to_shared' must be an i32 scalar, got i64" in refused(text)


def test_dot_shared_needs_buffers_of_a_dot_dtype():
    text = edit('%1 = shared_alloc name="dot_b0", shape=(16, 32), dtype=f32 : shared<16x32 x f32>',
                '%1 = shared_alloc name="dot_b0", shape=(16, 32), dtype=i32 : shared<16x32 x i32>')
    text = edit("kernel k(a: ptr<f32>, b: ptr<f32>", "kernel k(a: ptr<f32>, b: ptr<i32>", text)
    assert "'dot_shared' takes f32, f16, bf16, f64 or i8 shared buffers" in refused(text)


def test_shared_alloc_inside_a_loop_is_refused():
    text = edit("  barrier @7:5\n", "  for %20 in range(0, K, 1) @7:5 {\n"
                '    %21 = shared_alloc name="scratch", shape=(16, 16), dtype=f32 : shared<16x16 x f32> @7:5\n'
                "    yield @7:5\n"
                "  }\n"
                "  barrier @7:5\n")
    assert "'shared_alloc' must be at the kernel's top level, not inside a loop" in refused(text)


def test_a_loop_cannot_carry_a_shared_buffer():
    text = edit("  barrier @7:5\n",
                "  %22 = for %20 in range(0, K, 1) iter_args(%21 = %0) : shared<32x16 x f32> @7:5 {\n"
                "    yield %21 @7:5\n"
                "  }\n"
                "  barrier @7:5\n")
    assert "carried value 0 is a shared buffer (shared<32x16 x f32>); a loop cannot carry one" in refused(text)


def test_a_parameter_cannot_be_a_shared_buffer():
    text = edit("K: i32)", "K: i32, s: shared<16x16 x f32>)")
    assert "parameter 's' cannot be a shared buffer" in refused(text)


@pytest.mark.parametrize("old,new,message", [
    ("barrier @7:5\n  %4", "barrier %0 @7:5\n  %4", "'barrier' takes 0 operand(s)"),
    ("copy_to_shared %0, a, %3, 0, K, M, K, 0.0", "copy_to_shared %0, a, %3, 0, K, M, K",
     "'copy_to_shared' takes 8 operand(s) (buffer, base, row_offset, col_offset, row_stride, row_bound, "
     "col_bound, fill), got 7"),
    ("copy_to_shared %0, a, %3, 0, K, M, K, 0.0", "copy_to_shared none, a, %3, 0, K, M, K, 0.0",
     "operand 'buffer' of 'copy_to_shared' cannot be none"),
    ('shared_alloc name="dot_a0", ', "shared_alloc ", "'shared_alloc' needs the attribute 'name'"),
])
def test_the_parser_checks_arities_and_attributes(old, new, message):
    with pytest.raises(CompileError) as info:
        parse_kernel(edit(old, new), "<test>")
    assert message in info.value.message


# ---- the interpreter -----------------------------------------------------------------------------

# Copies a window of `a` into a 16x16 buffer and writes the buffer out through
# a product with the identity (dot_shared is the one op that reads buffers).
WINDOW = dedent("""\
    kernel window(a: ptr<f32>, eye: ptr<f32>, out: ptr<f32>, r0: i32, c0: i32, stride: i32, rb: i32, cb: i32) @"w.py":1:1 {
      %0 = shared_alloc name="tile", shape=(16, 16), dtype=f32 : shared<16x16 x f32> @2:5
      %1 = shared_alloc name="eye", shape=(16, 16), dtype=f32 : shared<16x16 x f32> @3:5
      copy_to_shared %0, a, r0, c0, stride, rb, cb, -1.0 @4:5
      copy_to_shared %1, eye, 0, 0, 16, 16, 16, 0.0 @5:5
      barrier @6:5
      %2 = dot_shared %0, %1, none : block<16x16 x f32> @7:5
      %3 = arange start=0, end=16 : vector<16 x i32> @8:5
      %4 = expand_dims %3, axis=1 : block<16x1 x i32> @8:5
      %5 = mul %4, 16 : block<16x1 x i32> @8:5
      %6 = expand_dims %3, axis=0 : block<1x16 x i32> @8:5
      %7 = add %5, %6 : block<16x16 x i32> @8:5
      %8 = addptr out, %7 : block<16x16 x ptr<f32>> @8:5
      store %8, %2, none @9:5
    }
""")


def run_window(a: np.ndarray, r0: int, c0: int, rb: int, cb: int) -> np.ndarray:
    out = np.full((16, 16), np.nan, np.float32)
    eye = np.eye(16, dtype=np.float32)
    run_kernel(parse_kernel(WINDOW, "w.ssa"), (1,), [a, eye, out, r0, c0, a.shape[1], rb, cb])
    return out


def test_copy_to_shared_copies_the_window_and_fills_outside_the_bounds():
    a = np.random.default_rng(0).standard_normal((20, 24)).astype(np.float32)
    out = run_window(a, 10, 12, 20, 24)  # rows 10..25 and columns 12..27: partly outside
    expected = np.full((16, 16), -1.0, np.float32)
    expected[:10, :12] = a[10:, 12:]
    np.testing.assert_array_equal(out, expected)


def test_copy_to_shared_reads_nothing_outside_the_bounds():
    # Bounds tighter than the array: the elements beyond them are not read (the
    # fill shows), though they exist.
    a = np.arange(20 * 24, dtype=np.float32).reshape(20, 24)
    out = run_window(a, 0, 0, 3, 5)
    expected = np.full((16, 16), -1.0, np.float32)
    expected[:3, :5] = a[:3, :5]
    np.testing.assert_array_equal(out, expected)


def test_copy_to_shared_checks_its_reads_like_a_load():
    a = np.zeros((20, 24), np.float32)
    with pytest.raises(CompileError, match="out-of-bounds copy from 'a'"):
        run_window(a, 10, 0, 30, 24)  # the bounds claim rows the array does not have


# Program p copies rows p-1 .. p+14 on its loop's last trip, which runs p
# times: program 0 never copies, so its buffer keeps the allocation's zeros.
PER_PROGRAM_TRIPS = dedent("""\
    kernel trips(a: ptr<f32>, eye: ptr<f32>, out: ptr<f32>) @"t.py":1:1 {
      %0 = shared_alloc name="tile", shape=(16, 16), dtype=f32 : shared<16x16 x f32> @2:5
      %1 = shared_alloc name="eye", shape=(16, 16), dtype=f32 : shared<16x16 x f32> @3:5
      %2 = program_id axis=0 : i32 @4:5
      copy_to_shared %1, eye, 0, 0, 16, 16, 16, 0.0 @5:5
      for %3 in range(0, %2, 1) @6:5 {
        copy_to_shared %0, a, %3, 0, 16, 64, 16, 0.0 @7:9
        yield @6:5
      }
      barrier @8:5
      %4 = dot_shared %0, %1, none : block<16x16 x f32> @9:5
      %5 = arange start=0, end=16 : vector<16 x i32> @10:5
      %6 = expand_dims %5, axis=1 : block<16x1 x i32> @10:5
      %7 = mul %6, 16 : block<16x1 x i32> @10:5
      %8 = expand_dims %5, axis=0 : block<1x16 x i32> @10:5
      %9 = add %7, %8 : block<16x16 x i32> @10:5
      %10 = mul %2, 256 : i32 @10:5
      %11 = add %9, %10 : block<16x16 x i32> @10:5
      %12 = addptr out, %11 : block<16x16 x ptr<f32>> @10:5
      store %12, %4, none @11:5
    }
""")


def test_programs_outside_their_loop_do_not_copy():
    a = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    out = np.full((3, 16, 16), np.nan, np.float32)
    run_kernel(parse_kernel(PER_PROGRAM_TRIPS, "t.ssa"), (3,), [a, np.eye(16, dtype=np.float32), out])
    np.testing.assert_array_equal(out[0], np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(out[1], a[0:16])
    np.testing.assert_array_equal(out[2], a[1:17])


def test_dot_shared_adds_the_accumulator():
    text = WINDOW.replace("  %2 = dot_shared %0, %1, none",
                          "  %20 = full 1.5, shape=(16, 16), dtype=f32 : block<16x16 x f32> @7:5\n"
                          "  %2 = dot_shared %0, %1, %20")
    a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    out = np.full((16, 16), np.nan, np.float32)
    run_kernel(parse_kernel(text, "w.ssa"), (1,), [a, np.eye(16, dtype=np.float32), out, 0, 0, 16, 16, 16])
    np.testing.assert_array_equal(out, a + 1.5)
