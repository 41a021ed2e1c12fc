"""cse: merging equal pure ops that dominate, SSA text before => after."""
from __future__ import annotations

from textwrap import dedent

from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.cse import CSEPass
from mytriton.passes.verify import verify


def cse(text: str) -> str:
    kernel = verify(parse_kernel(dedent(text)))
    return print_kernel(verify(CSEPass().apply(kernel)))


def test_merges_equal_ops_and_commuted_operands():
    assert cse("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @2:5
          %1 = mul 4, n : i32 @3:5
          %2 = sub n, 4 : i32 @4:5
          %3 = sub 4, n : i32 @5:5
          %4 = add %0, %2 : i32 @6:5
          %5 = add %3, %1 : i32 @7:5
          %6 = add %4, %5 : i32 @8:5
          %7 = addptr x, %6 : ptr<f32> @9:5
          store %7, 1.0, none @10:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @2:5
          %1 = sub n, 4 : i32 @4:5
          %2 = sub 4, n : i32 @5:5
          %3 = add %0, %1 : i32 @6:5
          %4 = add %2, %0 : i32 @7:5
          %5 = add %3, %4 : i32 @8:5
          %6 = addptr x, %5 : ptr<f32> @9:5
          store %6, 1.0, none @10:5
        }
        """)


def test_merges_in_chains_because_operands_are_renamed_first():
    assert cse("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %1 = program_id axis=0 : i32 @3:5
          %2 = mul %0, 8 : i32 @4:5
          %3 = mul %1, 8 : i32 @5:5
          %4 = addptr x, %2 : ptr<f32> @6:5
          %5 = addptr x, %3 : ptr<f32> @7:5
          store %4, 1.0, none @8:5
          store %5, 2.0, none @9:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %1 = mul %0, 8 : i32 @4:5
          %2 = addptr x, %1 : ptr<f32> @6:5
          store %2, 1.0, none @8:5
          store %2, 2.0, none @9:5
        }
        """)


def test_attributes_literal_types_and_signed_zeros_keep_ops_apart():
    text = dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %1 = program_id axis=1 : i32 @3:5
          %2 = load x, none, none : f32 @4:5
          %3 = mul %2, 0.0 : f32 @5:5
          %4 = mul %2, -0.0 : f32 @6:5
          %5 = add %0, %1 : i32 @7:5
          %6 = addptr x, %5 : ptr<f32> @8:5
          %7 = add %3, %4 : f32 @9:5
          store %6, %7, none @10:5
        }
        """)
    assert cse(text) == text


def test_loads_are_never_merged():
    text = dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          store x, 2.0, none @3:5
          %1 = load x, none, none : f32 @4:5
          %2 = add %0, %1 : f32 @5:5
          store x, %2, none @6:5
        }
        """)
    assert cse(text) == text


def test_a_loop_body_reuses_values_from_before_the_loop():
    assert cse("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @2:5
          %3 = for %1 in range(0, n, 1) iter_args(%2 = %0) : i32 @3:5 {
            %4 = mul n, 4 : i32 @4:9
            %5 = add %2, %4 : i32 @5:9
            yield %5 @3:5
          }
          %6 = addptr x, %3 : ptr<f32> @6:5
          store %6, 1.0, none @7:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @2:5
          %4 = for %1 in range(0, n, 1) iter_args(%2 = %0) : i32 @3:5 {
            %3 = add %2, %0 : i32 @5:9
            yield %3 @3:5
          }
          %5 = addptr x, %4 : ptr<f32> @6:5
          store %5, 1.0, none @7:5
        }
        """)


def test_values_of_a_loop_body_are_not_reused_after_it_or_in_a_sibling_loop():
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %3 = for %0 in range(0, n, 1) iter_args(%1 = 0) : i32 @2:5 {
            %2 = mul n, 4 : i32 @3:9
            yield %2 @2:5
          }
          %7 = for %4 in range(0, n, 1) iter_args(%5 = %3) : i32 @4:5 {
            %6 = mul n, 4 : i32 @5:9
            yield %6 @4:5
          }
          %8 = mul n, 4 : i32 @6:5
          %9 = add %7, %8 : i32 @7:5
          %10 = addptr x, %9 : ptr<f32> @8:5
          store %10, 1.0, none @9:5
        }
        """)
    assert cse(text) == text


def test_nested_loops_reuse_enclosing_body_values_but_not_inner_ones():
    assert cse("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %9 = for %0 in range(0, n, 1) iter_args(%1 = 0) : i32 @2:5 {
            %2 = mul %0, n : i32 @3:9
            %5 = for %3 in range(0, n, 1) iter_args(%4 = %1) : i32 @4:9 {
              %6 = mul n, %0 : i32 @5:13
              %7 = mul n, 8 : i32 @6:13
              %8 = add %6, %7 : i32 @7:13
              yield %8 @4:9
            }
            %10 = mul n, 8 : i32 @8:9
            %11 = add %5, %10 : i32 @9:9
            yield %11 @2:5
          }
          %12 = addptr x, %9 : ptr<f32> @10:5
          store %12, 1.0, none @11:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %10 = for %0 in range(0, n, 1) iter_args(%1 = 0) : i32 @2:5 {
            %2 = mul %0, n : i32 @3:9
            %7 = for %3 in range(0, n, 1) iter_args(%4 = %1) : i32 @4:9 {
              %5 = mul n, 8 : i32 @6:13
              %6 = add %2, %5 : i32 @7:13
              yield %6 @4:9
            }
            %8 = mul n, 8 : i32 @8:9
            %9 = add %7, %8 : i32 @9:9
            yield %9 @2:5
          }
          %11 = addptr x, %10 : ptr<f32> @10:5
          store %11, 1.0, none @11:5
        }
        """)


def test_cse_is_idempotent():
    once = cse("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @2:5
          %3 = for %1 in range(0, n, 1) iter_args(%2 = %0) : i32 @3:5 {
            %4 = mul 4, n : i32 @4:9
            %5 = add %1, %4 : i32 @5:9
            %6 = add %4, %1 : i32 @6:9
            %7 = add %5, %6 : i32 @7:9
            yield %7 @3:5
          }
          %8 = mul n, 4 : i32 @8:5
          %9 = add %3, %8 : i32 @9:5
          %10 = addptr x, %9 : ptr<f32> @10:5
          store %10, 1.0, none @11:5
        }
        """)
    assert cse(once) == once
