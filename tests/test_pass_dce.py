"""dce: dead ops, dead carried lanes and dead loops, SSA text before => after."""
from __future__ import annotations

from textwrap import dedent

from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.dce import DCEPass
from mytriton.passes.verify import verify


def dce(text: str) -> str:
    kernel = verify(parse_kernel(dedent(text)))
    return print_kernel(verify(DCEPass().apply(kernel)))


def test_unread_chains_and_loads_go_and_stores_stay():
    assert dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = program_id axis=0 : i32 @2:5
          %1 = mul %0, 4 : i32 @3:5
          %2 = addptr x, %1 : ptr<f32> @4:5
          %3 = load %2, none, none : f32 @5:5
          %4 = add %3, 1.0 : f32 @6:5
          %5 = addptr x, n : ptr<f32> @7:5
          store %5, 2.0, none @8:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = addptr x, n : ptr<f32> @7:5
          store %0, 2.0, none @8:5
        }
        """)


def test_a_lane_that_only_feeds_itself_is_dropped():
    assert dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %4, %5 = for %0 in range(0, n, 1) iter_args(%1 = 0.0, %2 = 0) : f32, i32 @2:5 {
            %3 = add %1, 1.0 : f32 @3:9
            %6 = mul %2, 2 : i32 @4:9
            %7 = add %6, %0 : i32 @5:9
            yield %3, %7 @2:5
          }
          store x, %4, none @6:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %3 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @2:5 {
            %2 = add %1, 1.0 : f32 @3:9
            yield %2 @2:5
          }
          store x, %3, none @6:5
        }
        """)


def test_a_lane_read_by_a_store_in_the_body_stays_though_its_result_is_unread():
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %4 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @2:5 {
            %2 = add %1, 1.0 : f32 @3:9
            %3 = addptr x, %0 : ptr<f32> @4:9
            store %3, %1, none @5:9
            yield %2 @2:5
          }
        }
        """)
    assert dce(text) == text


def test_a_lane_feeding_a_live_lane_stays():
    # Lane 1's result is unread, but lane 0 (whose result is stored) reads it.
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %4, %5 = for %0 in range(0, n, 1) iter_args(%1 = 0.0, %2 = 1.0) : f32, f32 @2:5 {
            %3 = add %1, %2 : f32 @3:9
            yield %3, %3 @2:5
          }
          store x, %4, none @4:5
        }
        """)
    assert dce(text) == text


def test_loops_without_stores_or_read_results_go():
    assert dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = addptr x, n : ptr<f32> @2:5
          %3 = for %1 in range(0, n, 1) iter_args(%2 = 0.0) : f32 @3:5 {
            %4 = load %0, none, none : f32 @4:9
            %5 = add %2, %4 : f32 @5:9
            yield %5 @3:5
          }
          for %6 in range(0, n, 1) @6:5 {
            %7 = mul %6, 2 : i32 @7:9
            yield @6:5
          }
          store x, 1.0, none @8:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          store x, 1.0, none @8:5
        }
        """)


def test_a_loop_whose_only_effect_is_a_nested_store_stays():
    assert dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 2 : i32 @2:5
          %1 = mul n, 3 : i32 @3:5
          for %2 in range(0, %0, 1) @4:5 {
            %3 = mul %2, 5 : i32 @5:9
            for %4 in range(0, n, 1) @6:9 {
              %5 = addptr x, %4 : ptr<f32> @7:13
              %6 = load %5, none, none : f32 @8:13
              store %5, 1.0, none @9:13
              yield @6:9
            }
            yield @4:5
          }
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 2 : i32 @2:5
          for %1 in range(0, %0, 1) @4:5 {
            for %2 in range(0, n, 1) @6:9 {
              %3 = addptr x, %2 : ptr<f32> @7:13
              store %3, 1.0, none @9:13
              yield @6:9
            }
            yield @4:5
          }
        }
        """)


def test_dead_lanes_threaded_through_nested_loops_go():
    assert dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %9, %10 = for %0 in range(0, n, 1) iter_args(%1 = 0.0, %2 = 0) : f32, i32 @2:5 {
            %6, %7 = for %3 in range(0, n, 1) iter_args(%4 = %1, %5 = %2) : f32, i32 @3:9 {
              %8 = add %4, 1.0 : f32 @4:13
              %11 = add %5, %3 : i32 @5:13
              yield %8, %11 @3:9
            }
            yield %6, %7 @2:5
          }
          store x, %9, none @6:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %6 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @2:5 {
            %5 = for %2 in range(0, n, 1) iter_args(%3 = %1) : f32 @3:9 {
              %4 = add %3, 1.0 : f32 @4:13
              yield %4 @3:9
            }
            yield %5 @2:5
          }
          store x, %6, none @6:5
        }
        """)


def test_dce_is_idempotent():
    once = dce("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 7 : i32 @2:5
          %4, %5 = for %1 in range(0, n, 1) iter_args(%2 = 0.0, %3 = %0) : f32, i32 @3:5 {
            %6 = add %2, 1.0 : f32 @4:9
            %7 = add %3, 1 : i32 @5:9
            %8 = load x, none, none : f32 @6:9
            yield %6, %7 @3:5
          }
          store x, %4, none @7:5
        }
        """)
    assert dce(once) == once
