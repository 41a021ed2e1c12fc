"""licm: hoisting loop-invariant pure ops, SSA text before => after."""
from __future__ import annotations

from textwrap import dedent

from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.licm import LICMPass
from mytriton.passes.verify import verify


def licm(text: str) -> str:
    kernel = verify(parse_kernel(dedent(text)))
    return print_kernel(verify(LICMPass().apply(kernel)))


def test_hoists_an_invariant_chain_in_order_with_its_locations():
    assert licm("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %3 = for %1 in range(0, n, 1) iter_args(%2 = 0) : i32 @3:5 {
            %4 = mul %0, 4 : i32 @4:9
            %5 = arange start=0, end=4 : vector<4 x i32> @5:9
            %6 = add %4, %5 : vector<4 x i32> @6:9
            %7 = add %2, %1 : i32 @7:9
            %8 = addptr x, %6 : vector<4 x ptr<f32>> @8:9
            store %8, 1.0, none @9:9
            yield %7 @3:5
          }
          %9 = addptr x, %3 : ptr<f32> @10:5
          store %9, 2.0, none @11:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %1 = mul %0, 4 : i32 @4:9
          %2 = arange start=0, end=4 : vector<4 x i32> @5:9
          %3 = add %1, %2 : vector<4 x i32> @6:9
          %4 = addptr x, %3 : vector<4 x ptr<f32>> @8:9
          %8 = for %5 in range(0, n, 1) iter_args(%6 = 0) : i32 @3:5 {
            %7 = add %6, %5 : i32 @7:9
            store %4, 1.0, none @9:9
            yield %7 @3:5
          }
          %9 = addptr x, %8 : ptr<f32> @10:5
          store %9, 2.0, none @11:5
        }
        """)


def test_loads_and_what_reads_them_or_the_loop_state_stay():
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %6 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @2:5 {
            %2 = load x, none, none : f32 @3:9
            %3 = mul %2, 2.0 : f32 @4:9
            %4 = mul %1, 2.0 : f32 @5:9
            %5 = add %3, %4 : f32 @6:9
            store x, %5, none @7:9
            yield %5 @2:5
          }
        }
        """)
    assert licm(text) == text


def test_integer_division_is_hoisted_only_by_a_safe_literal():
    assert licm("""\
        kernel k(x: ptr<f32>, n: i32, d: i32) @"k.py":1:1 {
          for %0 in range(0, n, 1) @2:5 {
            %1 = floordiv n, d : i32 @3:9
            %2 = mod n, 4 : i32 @4:9
            %3 = add %1, %2 : i32 @5:9
            %4 = addptr x, %3 : ptr<f32> @6:9
            store %4, 1.0, none @7:9
            yield @2:5
          }
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32, d: i32) @"k.py":1:1 {
          %0 = mod n, 4 : i32 @4:9
          for %1 in range(0, n, 1) @2:5 {
            %2 = floordiv n, d : i32 @3:9
            %3 = add %2, %0 : i32 @5:9
            %4 = addptr x, %3 : ptr<f32> @6:9
            store %4, 1.0, none @7:9
            yield @2:5
          }
        }
        """)


def test_nested_loops_hoist_out_of_every_loop_an_op_is_invariant_in():
    assert licm("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          for %0 in range(0, n, 1) @2:5 {
            for %1 in range(0, n, 1) @3:9 {
              %2 = mul n, 4 : i32 @4:13
              %3 = mul %0, 8 : i32 @5:13
              %4 = add %3, %1 : i32 @6:13
              %5 = add %4, %2 : i32 @7:13
              %6 = addptr x, %5 : ptr<f32> @8:13
              store %6, 1.0, none @9:13
              yield @3:9
            }
            yield @2:5
          }
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 4 : i32 @4:13
          for %1 in range(0, n, 1) @2:5 {
            %2 = mul %1, 8 : i32 @5:13
            for %3 in range(0, n, 1) @3:9 {
              %4 = add %2, %3 : i32 @6:13
              %5 = add %4, %0 : i32 @7:13
              %6 = addptr x, %5 : ptr<f32> @8:13
              store %6, 1.0, none @9:13
              yield @3:9
            }
            yield @2:5
          }
        }
        """)


def test_licm_is_idempotent():
    once = licm("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %4 = for %0 in range(0, n, 1) iter_args(%1 = 0) : i32 @2:5 {
            %5 = for %2 in range(0, n, 1) iter_args(%3 = %1) : i32 @3:9 {
              %6 = mul n, %0 : i32 @4:13
              %7 = mul n, 3 : i32 @5:13
              %8 = add %6, %7 : i32 @6:13
              %9 = add %3, %8 : i32 @7:13
              yield %9 @3:9
            }
            yield %5 @2:5
          }
          %10 = addptr x, %4 : ptr<f32> @8:5
          store %10, 1.0, none @9:5
        }
        """)
    assert licm(once) == once
