"""Integer literals are typed as Triton types them: one that fits i32 is a
weak int (it takes the type of what it meets), one beyond i32 but within i64
is i64, and one beyond i64 is a located error (in kernel source and in IR
text). A float literal meets an integer type only where it has a value there.
Integers in IR text are bounded before Python reads them."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, build, kernel_source, ssa_of
from mytriton import compiler
from mytriton.backends.cuda.ctypes import c_literal
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Const
from mytriton.ir.ssa_text import print_kernel
from mytriton.passes.fold import FoldPass
from mytriton.types import F32, I32, I64, U32, U64, WEAK_INT

WIDE_OFFSETS = """
@mytriton.jit
def wide(out_ptr, BLOCK: tl.constexpr = 16):
    pid = tl.program_id(0)
    offs = pid * 4294967296 + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)
"""


def mytriton(*args: str, stdin: str | None = None, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "mytriton", *args], input=stdin, capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=60)


def assert_cli_error(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 1
    assert "error: " + message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


# ---- the type of a literal ------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    (0, WEAK_INT), (2**31 - 1, WEAK_INT), (-2**31, WEAK_INT),
    (2**31, U32), (2**32 - 1, U32), (-2**31 - 1, I64), (4294967296, I64), (2**63 - 1, I64), (-2**63, I64),
    (2**63, U64), (2**64 - 1, U64),
])
def test_an_integer_literal_is_weak_within_i32_and_as_tritons_beyond(value, expected):
    # Triton: i32, then u32 for [2**31, 2**32), i64, then u64 for [2**63, 2**64).
    assert Const(value).type == expected


def test_a_product_with_a_literal_beyond_i32_computes_in_i64():
    kernel = build(WIDE_OFFSETS, signature="*i64")
    text = print_kernel(kernel)
    assert "%5 = mul %0, 4294967296 : i64 @7:12" in text
    assert "%7 = add %5, %6 : vector<16 x i64> @7:12" in text


def test_the_interpreter_computes_wide_offsets_without_wrapping():
    kernel = build(WIDE_OFFSETS, signature="*i64")
    out = np.zeros(4 * 16, dtype=np.int64)
    run_kernel(kernel, (4,), [out])
    pid = np.repeat(np.arange(4, dtype=np.int64), 16)
    np.testing.assert_array_equal(out, pid * 4294967296 + np.tile(np.arange(16), 4))


@pytest.mark.gpu
def test_the_gpu_computes_wide_offsets_as_the_interpreter_does(kernel_module):
    kernel = kernel_module(WIDE_OFFSETS).wide
    out = np.zeros(4 * 16, dtype=np.int64)
    kernel[(4,)](out, backend="cuda")
    pid = np.repeat(np.arange(4, dtype=np.int64), 16)
    np.testing.assert_array_equal(out, pid * 4294967296 + np.tile(np.arange(16), 4))


def test_cuda_multiplies_in_long_long_by_a_long_long_literal():
    cuda = compiler.compile_source(kernel_source(WIDE_OFFSETS), "kernel.py", "cuda",
                                   compiler.Options(signature="*i64"))
    assert "((long long)(v" in cuda and "* 4294967296LL)" in cuda


def test_fold_keeps_an_i64_product_of_literals_out_of_i32():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr):
        x = tl.program_id(0) + 1
        tl.store(out_ptr + tl.program_id(0), x * 4294967296 * 2)
    """, signature="*i64")
    folded = FoldPass().apply(kernel)
    out = np.zeros(3, dtype=np.int64)
    run_kernel(folded, (3,), [out])
    np.testing.assert_array_equal(out, (np.arange(3) + 1) * 2**33)


def test_a_literal_beyond_i64_in_a_kernel_is_a_located_error():
    source = kernel_source("""
    @mytriton.jit
    def k(out_ptr):
        tl.store(out_ptr, tl.program_id(0) * 18446744073709551616)
    """)
    with pytest.raises(CompileError) as err:
        ssa_of(source)
    assert "integer literal out of range" in err.value.message
    assert (err.value.loc.line, err.value.loc.col) == (6, 23)


def test_a_loop_carried_literal_beyond_u64_is_a_located_error():
    source = kernel_source("""
    @mytriton.jit
    def k(out_ptr, n):
        acc = 18446744073709551616
        for i in range(0, n):
            acc = acc + i
        tl.store(out_ptr, acc)
    """)
    with pytest.raises(CompileError) as err:
        ssa_of(source)
    assert "integer literal out of range" in err.value.message
    assert err.value.loc.line == 8


# ---- literals in IR text ----------------------------------------------------------------------

LOAD_WITH_OTHER = """kernel k(x: ptr<i64>) @"a.py":1:1 {{
  %0 = addptr x, 1 : ptr<i64> @2:3
  %1 = load %0, none, {other} : i64 @3:5
}}
"""


def test_an_ssa_literal_beyond_u64_is_a_located_error():
    # IR text reads integer literals of i64's and u64's ranges (a u64 constant prints as itself).
    result = mytriton("verify", "-", stdin=LOAD_WITH_OTHER.format(other=2**64))
    assert_cli_error(result, "integer literal out of range: 18446744073709551616")
    assert "<stdin>:3:23:" in result.stderr


@pytest.mark.parametrize("where", ["literal", "dimension", "line", "column", "header line"])
def test_an_integer_of_thousands_of_digits_in_ir_is_an_error_not_a_crash(where):
    huge = "9" * 4300
    text = LOAD_WITH_OTHER.format(other=1)
    text = {
        "literal": text.replace("none, 1", f"none, {huge}"),
        "dimension": text.replace("addptr x, 1 : ptr<i64>", f"addptr x, 1 : vector<{huge} x ptr<i64>>"),
        "line": text.replace("@3:5", f"@{huge}:5"),
        "column": text.replace("@3:5", f"@3:{huge}"),
        "header line": text.replace(":1:1 {", f":{huge}:1 {{"),
    }[where]
    result = mytriton("verify", "-", stdin=text)
    assert_cli_error(result, "")
    assert "out of range: an integer of 4300 digits" in result.stderr


# ---- float literals converted to integers ---------------------------------------------------------


@pytest.mark.parametrize("other", ["-inf", "inf", "nan", "1e30"])
def test_verify_rejects_a_float_literal_with_no_integer_value(other):
    result = mytriton("emit-cuda", "-", stdin=LOAD_WITH_OTHER.format(other=other))
    assert_cli_error(result, f"invalid SSA: the literal {other if other != '1e30' else '1e+30'} has no i64 value")


@pytest.mark.parametrize("other", ["2.0", "2.5", "-2.5"])
def test_verify_accepts_a_finite_float_literal_in_range_as_an_integer(other):
    # A fraction truncates toward zero, as Triton's conversion to the pointee does.
    result = mytriton("verify", "-", stdin=LOAD_WITH_OTHER.format(other=other))
    assert result.returncode == 0, result.stderr


def test_a_cast_of_a_float_literal_truncates_but_needs_a_finite_value_in_range():
    ok = 'kernel k() @"a.py":1:1 {\n  %0 = cast 2.5, dtype=i32 : i32 @1:1\n}\n'
    assert mytriton("verify", "-", stdin=ok).returncode == 0
    result = mytriton("verify", "-", stdin=ok.replace("2.5", "3000000000.0"))
    assert_cli_error(result, "invalid SSA: the literal 3000000000.0 has no i32 value")


def test_a_softmax_on_integer_input_reports_its_minus_inf_fill(tmp_path):
    out = tmp_path / "softmax.cu"
    result = mytriton("compile", "samples/softmax.py", "-s", "*fp32, *i64, i32, i32, i32", "-o", str(out))
    assert_cli_error(result, "the literal -inf has no i64 value")
    assert result.stderr.startswith("samples/softmax.py:10:9: error:")
    assert not out.exists()


def test_c_literal_wraps_integers_to_the_width_of_the_type():
    assert c_literal(2**32 + 5, I32) == "5"
    assert c_literal(-2**31, I32) == "(-2147483647 - 1)"
    assert c_literal(-2**63, I64) == "(-9223372036854775807LL - 1)"
    assert c_literal(2.9, I64) == "2LL"
    assert c_literal(4294967296, F32) == "4294967296.0f"


def test_c_literal_refuses_a_float_with_no_integer_value():
    with pytest.raises(CompileError, match="has no i32 value"):
        c_literal(float("-inf"), I32)


def test_a_tree_ir_literal_of_thousands_of_digits_is_an_error_not_a_crash():
    tree = mytriton("compile", "samples/add.py", "--emit=tree").stdout
    assert ", 256)@9:15" in tree
    result = mytriton("lower", "-", stdin=tree.replace(", 256)@9:15", ", " + "9" * 4300 + ")@9:15"))
    assert_cli_error(result, "integer literal out of range: an integer of 4300 digits")


def test_a_runtime_loop_step_beyond_i32_makes_the_loop_count_in_i64():
    source = kernel_source("""
    @mytriton.jit
    def k(out_ptr, n):
        acc = tl.zeros((), tl.int64)
        for i in range(0, n, 4294967296):
            acc = acc + i
        tl.store(out_ptr, acc)
    """)
    kernel = ssa_of(source, signature="*i64, i64")
    loop = next(op for op in kernel.body.ops if op.name == "for")
    assert loop.regions[0].args[0].type == I64
    out = np.zeros(1, np.int64)
    run_kernel(kernel, (1, 1, 1), [out, 3 * 2**32 + 5])
    assert out[0] == 0 + 2**32 + 2 * 2**32 + 3 * 2**32


def test_verify_accepts_a_loop_step_beyond_i32_as_an_i64_loop():
    text = ('kernel k(n: i64) @"a.py":1:1 {\n'
            '  for %0 in range(0, n, 4294967296) @2:3 {\n'
            '    yield @2:3\n  }\n}\n')
    result = mytriton("verify", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text


def test_verify_rejects_an_i32_bound_of_an_i64_loop():
    text = ('kernel k(n: i32) @"a.py":1:1 {\n'
            '  for %0 in range(0, n, 4294967296) @2:3 {\n'
            '    yield @2:3\n  }\n}\n')
    result = mytriton("verify", "-", stdin=text)
    assert_cli_error(result, "invalid SSA: the loop stop is i32, but the loop counts in i64 (cast it)")


HALF_VALUES = [0.0, -0.0, 1.0, 0.1, -2.5, 3.14159, 1e-8, 6e-5, 65504.0, 65520.0, 1e38, 3.4e38, 1e39]


@pytest.mark.parametrize("value", HALF_VALUES)
def test_a_half_literal_is_written_as_the_bits_numpy_rounds_the_f32_literal_to(value):
    # cuda_bf16.h converts a float with inline asm nvcc cannot fold; the bits are rounded here
    # as cvt.rn rounds (ties to even), past f16's or f32's range the conversion is left to CUDA.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from mytriton.types import BF16, F16

    with np.errstate(over="ignore"):
        single = np.array([value], np.float64).astype(np.float32)
        halves = {BF16: single.astype(ml_dtypes.bfloat16), F16: single.astype(np.float16)}
    for t, function in ((BF16, "__ushort_as_bfloat16"), (F16, "__ushort_as_half")):
        text = c_literal(value, t)
        # bf16 shares f32's exponent: a finite f32 past bf16's largest rounds to its infinity's bits
        if np.isfinite(single[0]) and (t == BF16 or np.isfinite(halves[t][0].astype(np.float32))):
            assert text == f"{function}((unsigned short){int(halves[t].view(np.uint16)[0]):#06x}u)"
        else:
            assert text.startswith("__float2half(" if t == F16 else "__float2bfloat16(")
