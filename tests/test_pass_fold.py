"""fold: literal arithmetic, identities and zero-trip loops, SSA text before => after."""
from __future__ import annotations

from textwrap import dedent

from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.fold import FoldPass
from mytriton.passes.verify import verify


def fold(text: str) -> str:
    kernel = verify(parse_kernel(dedent(text)))
    return print_kernel(verify(FoldPass().apply(kernel)))


def test_folds_a_chain_of_integer_literals():
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = mul 4, 8 : i32 @2:5
          %1 = add %0, 1 : i32 @3:5
          %2 = addptr x, %1 : ptr<f32> @4:5
          store %2, 1.0, none @5:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = addptr x, 33 : ptr<f32> @4:5
          store %0, 1.0, none @5:5
        }
        """)


def test_i32_wraps_and_divides_toward_zero_as_c_does():
    assert fold("""\
        kernel k(x: ptr<i32>) @"k.py":1:1 {
          %0 = mul 65537, 65536 : i32 @2:5
          %1 = add 2147483647, 1 : i32 @3:5
          %2 = floordiv -7, 2 : i32 @4:5
          %3 = mod -7, 2 : i32 @5:5
          %4 = mod 7, -2 : i32 @6:5
          store x, %0, none @7:5
          store x, %1, none @8:5
          store x, %2, none @9:5
          store x, %3, none @10:5
          store x, %4, none @11:5
        }
        """) == dedent("""\
        kernel k(x: ptr<i32>) @"k.py":1:1 {
          store x, 65536, none @7:5
          store x, -2147483648, none @8:5
          store x, -3, none @9:5
          store x, -1, none @10:5
          store x, 1, none @11:5
        }
        """)


def test_division_by_zero_and_int_min_by_minus_one_stay():
    text = dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = floordiv 1, 0 : i32 @2:5
          %1 = mod 1, 0 : i32 @3:5
          %2 = floordiv -2147483648, -1 : i32 @4:5
          %3 = div 1.0, 0.0 : f32 @5:5
          %4 = add %0, %1 : i32 @6:5
          %5 = add %4, %2 : i32 @7:5
          %6 = addptr x, %5 : ptr<f32> @8:5
          store %6, %3, none @9:5
        }
        """)
    assert fold(text) == text


def test_float_results_round_to_f32():
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = add 0.1, 0.2 : f32 @2:5
          %1 = div 1, 3 : f32 @3:5
          store x, %0, none @4:5
          store x, %1, none @5:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          store x, 0.30000001192092896, none @4:5
          store x, 0.3333333432674408, none @5:5
        }
        """)


def test_comparisons_fold_to_bool_in_the_operands_common_type():
    # 16777217 is not an f32: compared with a float it rounds to 16777216.0.
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = cmp_eq 16777217, 16777216.0 : bool @2:5
          %1 = cmp_lt 3, -1 : bool @3:5
          store x, 1.0, %0 @4:5
          store x, 2.0, %1 @5:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          store x, 1.0, true @4:5
          store x, 2.0, false @5:5
        }
        """)


def test_unary_ops_fold_but_math_functions_stay():
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = neg 5 : i32 @2:5
          %1 = not 5 : i32 @3:5
          %2 = maximum %0, %1 : i32 @4:5
          %3 = exp 0.0 : f32 @5:5
          %4 = addptr x, %2 : ptr<f32> @6:5
          store %4, %3, none @7:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = exp 0.0 : f32 @5:5
          %1 = addptr x, -5 : ptr<f32> @6:5
          store %1, %0, none @7:5
        }
        """)


def test_identities_of_matching_type_read_the_operand():
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @2:5
          %1 = add %0, 0 : vector<4 x i32> @3:5
          %2 = add 0, %1 : vector<4 x i32> @4:5
          %3 = sub %2, 0 : vector<4 x i32> @5:5
          %4 = mul %3, 1 : vector<4 x i32> @6:5
          %5 = mul 1, %4 : vector<4 x i32> @7:5
          %6 = addptr x, %5 : vector<4 x ptr<f32>> @8:5
          store %6, 1.0, none @9:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @2:5
          %1 = addptr x, %0 : vector<4 x ptr<f32>> @8:5
          store %1, 1.0, none @9:5
        }
        """)


def test_identities_that_change_the_type_stay():
    # * 1.0 turns i32 into f32; + 0 then keeps the f32 type but is applied to
    # that converted value; a scalar chosen into a vector is a broadcast.
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @2:5
          %1 = mul %0, 1.0 : vector<4 x f32> @3:5
          %2 = add n, 0.0 : f32 @4:5
          %3 = where true, %2, %1 : vector<4 x f32> @5:5
          %4 = addptr x, %0 : vector<4 x ptr<f32>> @6:5
          store %4, %3, none @7:5
        }
        """)
    assert fold(text) == text


def test_float_identities_respect_signed_zero():
    # -0.0 + 0.0 is +0.0, so only x + -0.0 and x - 0.0 are x.
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1 = add %0, 0.0 : f32 @3:5
          %2 = add %0, -0.0 : f32 @4:5
          %3 = sub %0, 0.0 : f32 @5:5
          %4 = mul %0, 1 : f32 @6:5
          store x, %1, none @7:5
          store x, %2, none @8:5
          store x, %3, none @9:5
          store x, %4, none @10:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1 = add %0, 0.0 : f32 @3:5
          store x, %1, none @7:5
          store x, %0, none @8:5
          store x, %0, none @9:5
          store x, %0, none @10:5
        }
        """)


def test_times_zero_folds_only_for_scalar_integers():
    assert fold("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = mul n, 0 : i32 @2:5
          %1 = arange start=0, end=4 : vector<4 x i32> @3:5
          %2 = mul %1, 0 : vector<4 x i32> @4:5
          %3 = load x, none, none : f32 @5:5
          %4 = mul %3, 0.0 : f32 @6:5
          %5 = addptr x, %0 : ptr<f32> @7:5
          %6 = addptr %5, %2 : vector<4 x ptr<f32>> @8:5
          store %6, %4, none @9:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %0 = arange start=0, end=4 : vector<4 x i32> @3:5
          %1 = mul %0, 0 : vector<4 x i32> @4:5
          %2 = load x, none, none : f32 @5:5
          %3 = mul %2, 0.0 : f32 @6:5
          %4 = addptr x, 0 : ptr<f32> @7:5
          %5 = addptr %4, %1 : vector<4 x ptr<f32>> @8:5
          store %5, %3, none @9:5
        }
        """)


def test_where_with_a_literal_condition_picks_a_side():
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1 = load x, none, none : f32 @3:5
          %2 = where true, %0, %1 : f32 @4:5
          %3 = where false, %0, %1 : f32 @5:5
          store x, %2, none @6:5
          store x, %3, none @7:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1 = load x, none, none : f32 @3:5
          store x, %0, none @6:5
          store x, %1, none @7:5
        }
        """)


def test_pointers_are_not_folded():
    text = dedent("""\
        kernel k(x: ptr<f32>, y: ptr<f32>) @"k.py":1:1 {
          %0 = where true, x, y : ptr<f32> @2:5
          %1 = addptr %0, 0 : ptr<f32> @3:5
          store %1, 1.0, none @4:5
        }
        """)
    assert fold(text) == text


def test_a_literal_replaces_a_value_only_where_types_stay():
    # Against f16 a float literal would compute in f16; the f32 value in f32.
    assert fold("""\
        kernel k(x: ptr<f32>, h: ptr<f16>) @"k.py":1:1 {
          %0 = load h, none, none : f16 @2:5
          %1 = add 1.0, 2.0 : f32 @3:5
          %2 = add %0, %1 : f32 @4:5
          %3 = mul %1, 2.0 : f32 @5:5
          %4 = add %2, %3 : f32 @6:5
          store x, %4, none @7:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>, h: ptr<f16>) @"k.py":1:1 {
          %0 = load h, none, none : f16 @2:5
          %1 = add 1.0, 2.0 : f32 @3:5
          %2 = add %0, %1 : f32 @4:5
          %3 = add %2, 6.0 : f32 @6:5
          store x, %3, none @7:5
        }
        """)


def test_a_zero_trip_loop_becomes_its_initial_values():
    # The store in the body never runs, so the loop goes entirely.
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1, %2 = for %3 in range(8, 2, 1) iter_args(%4 = %0, %5 = 0) : f32, f32 @3:5 {
            store x, %4, none @4:9
            %6 = add %4, 1.0 : f32 @5:9
            yield %6, %5 @3:5
          }
          %7 = add %1, %2 : f32 @6:5
          store x, %7, none @7:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = load x, none, none : f32 @2:5
          %1 = add %0, 0.0 : f32 @6:5
          store x, %1, none @7:5
        }
        """)


def test_loops_that_may_run_stay():
    text = dedent("""\
        kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
          %2 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @2:5 {
            yield %1 @2:5
          }
          %5 = for %3 in range(2, 3, 1) iter_args(%4 = %2) : f32 @3:5 {
            yield %4 @3:5
          }
          store x, %5, none @4:5
        }
        """)
    assert fold(text) == text


def test_folds_inside_nested_loops_and_their_bounds_and_yields():
    assert fold("""\
        kernel k(x: ptr<i32>, n: i32) @"k.py":1:1 {
          %0 = add 2, 2 : i32 @2:5
          %7 = for %1 in range(0, %0, 1) iter_args(%2 = 0) : i32 @3:5 {
            %6 = for %3 in range(0, n, 1) iter_args(%4 = %2) : i32 @4:9 {
              %8 = mul 2, 3 : i32 @5:13
              %9 = add %4, %8 : i32 @6:13
              %10 = mul %9, 1 : i32 @7:13
              yield %10 @4:9
            }
            %11 = sub 1, 1 : i32 @8:9
            yield %11 @3:5
          }
          store x, %7, none @9:5
        }
        """) == dedent("""\
        kernel k(x: ptr<i32>, n: i32) @"k.py":1:1 {
          %6 = for %0 in range(0, 4, 1) iter_args(%1 = 0) : i32 @3:5 {
            %5 = for %2 in range(0, n, 1) iter_args(%3 = %1) : i32 @4:9 {
              %4 = add %3, 6 : i32 @6:13
              yield %4 @4:9
            }
            yield 0 @3:5
          }
          store x, %6, none @9:5
        }
        """)


def test_fold_is_idempotent():
    once = fold("""\
        kernel k(x: ptr<f32>, h: ptr<f16>, n: i32) @"k.py":1:1 {
          %0 = load h, none, none : f16 @2:5
          %1 = add 1.0, 2.0 : f32 @3:5
          %2 = add %0, %1 : f32 @4:5
          %5 = for %3 in range(0, n, 1) iter_args(%4 = %2) : f32 @5:5 {
            %6 = mul %4, 1.0 : f32 @6:9
            %7 = add %6, %1 : f32 @7:9
            yield %7 @5:5
          }
          store x, %5, none @8:5
        }
        """)
    assert fold(once) == once


def test_exact_math_functions_fold_and_inexact_ones_stay():
    # floor and ceil are exact in f32; the device's erff and tanhf may differ
    # from NumPy's by an ulp, so only the interpreter computes those.
    assert fold("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = floor -2.5 : f32 @2:5
          %1 = ceil 7 : f32 @3:5
          %2 = erf 0.5 : f32 @4:5
          %3 = tanh 1.0 : f32 @5:5
          %4 = add %0, %1 : f32 @6:5
          %5 = add %2, %3 : f32 @7:5
          %6 = add %4, %5 : f32 @8:5
          store x, %6, none @9:5
        }
        """) == dedent("""\
        kernel k(x: ptr<f32>) @"k.py":1:1 {
          %0 = erf 0.5 : f32 @4:5
          %1 = tanh 1.0 : f32 @5:5
          %2 = add %0, %1 : f32 @7:5
          %3 = add 4.0, %2 : f32 @8:5
          store x, %3, none @9:5
        }
        """)


def test_folding_evaluates_the_interpreters_semantics():
    from mytriton.ir import opdefs
    from mytriton.passes.fold import evaluate
    from mytriton.types import F32, I32

    assert evaluate(opdefs.OPS["floordiv"], [-7, 2], I32) == -3  # toward zero, as C
    assert evaluate(opdefs.OPS["mod"], [-7, 2], I32) == -1
    assert evaluate(opdefs.OPS["add"], [2**31 - 1, 1], I32) == -2**31  # wraps
    assert evaluate(opdefs.OPS["div"], [1.0, 3.0], F32) == 0.3333333432674408  # f32 rounding
