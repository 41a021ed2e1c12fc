"""Triton's math functions and dtypes: tl.clamp, tl.fma,
tl.maximum/minimum with propagate_nan, tl.div_rn, tl.fdiv, tl.umulhi,
tl.softmax, reductions with keep_dims, integer // and % as in C, and the
dtypes f64, i8, i16, u8, u16, u32, u64 and bf16: their promotion (Triton's
rules), the interpreter against NumPy, and the CUDA they give built by nvcc.
GPU tests (marker gpu) compare the device with the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, cdiv, compile_text, kernel_source, tiered
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.frontend.stages import parse_signature_type
from mytriton.ir import opdefs
from mytriton.runtime.arguments import arg_type, signature_of
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, PointerType, promote,
)

ml_dtypes = pytest.importorskip("ml_dtypes")  # the bf16 tests; everything else runs without it

# ---- kernels ---------------------------------------------------------------------------------

TERNARY = """
@mytriton.jit
def k(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)
"""


def run_ternary(expr: str, x, y, z, out_dtype=None, signature=None, block=64):
    """``expr`` of x, y, z elementwise in the interpreter."""
    n = x.size
    out = np.zeros(n, out_dtype or x.dtype)
    run_kernel(build(TERNARY.format(expr=expr), signature=signature, BLOCK=block), (cdiv(n, block),),
               [x, y, z, out, n])
    return out


def sig(*types: str) -> str:
    return ", ".join(f"*{t}" for t in types) + ", i32"


def floats(rng, n, dtype=np.float32):
    return rng.standard_normal(n).astype(dtype)


# ---- math functions --------------------------------------------------------------------------


def test_clamp_bounds_each_element_and_a_nan_gives_the_lower_bound(rng):
    x = floats(rng, 300) * 3
    x[[5, 77]] = np.nan
    lo, hi = -np.abs(floats(rng, 300)), np.abs(floats(rng, 300))
    out = run_ternary("tl.clamp(x, y, z)", x, lo, hi)
    np.testing.assert_array_equal(out, np.fmin(np.fmax(x, lo), hi))
    assert out[5] == lo[5]


def test_clamp_with_propagate_nan_all_keeps_a_nan_x(rng):
    x = floats(rng, 300) * 3
    x[[5, 77]] = np.nan
    lo, hi = -np.abs(floats(rng, 300)), np.abs(floats(rng, 300))
    out = run_ternary("tl.clamp(x, y, z, propagate_nan=tl.PropagateNan.ALL)", x, lo, hi)
    np.testing.assert_array_equal(out, np.where(np.isnan(x), np.nan, np.fmin(np.fmax(x, lo), hi)))


def test_clamp_of_integers_is_refused_as_in_triton():
    with pytest.raises(CompileError, match="'clamp' needs floating-point operands"):
        build(TERNARY.format(expr="tl.clamp(x, y, z)"), signature=sig("i32", "i32", "i32", "i32"), BLOCK=64)


def test_maximum_and_minimum_ignore_nan_by_default_as_fmaxf(rng):
    x, y = floats(rng, 200), floats(rng, 200)
    x[::7] = np.nan
    out = run_ternary("tl.maximum(x, y) + tl.minimum(x, z)", x, y, y)
    np.testing.assert_array_equal(out, np.fmax(x, y) + np.fmin(x, y))
    assert not np.isnan(out).any()


def test_maximum_and_minimum_with_propagate_nan_all_give_nan(rng):
    x, y = floats(rng, 200), floats(rng, 200)
    x[::7] = np.nan
    expr = "tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL) - tl.minimum(x, z, propagate_nan=tl.PropagateNan.ALL)"
    out = run_ternary(expr, x, y, y)
    np.testing.assert_array_equal(out, np.maximum(x, y) - np.minimum(x, y))
    assert np.isnan(out[::7]).all()


def test_propagate_nan_must_be_a_propagate_nan_value():
    with pytest.raises(CompileError, match="propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL"):
        build(TERNARY.format(expr="tl.maximum(x, y, propagate_nan=3)"), BLOCK=64)


def test_fma_rounds_once(rng):
    x, y, z = floats(rng, 500), floats(rng, 500), floats(rng, 500)
    out = run_ternary("tl.fma(x, y, z)", x, y, z)
    exact = (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(out, exact)


def test_fma_in_f64(rng):
    x, y, z = (floats(rng, 200, np.float64) for _ in range(3))
    out = run_ternary("tl.fma(x, y, z)", x, y, z, signature=sig("fp64", "fp64", "fp64", "fp64"))
    np.testing.assert_allclose(out, x * y + z, rtol=1e-15, atol=1e-15)


def test_div_rn_and_fdiv_divide_correctly_rounded(rng):
    x, y = floats(rng, 300), floats(rng, 300)
    np.testing.assert_array_equal(run_ternary("tl.div_rn(x, y)", x, y, y), x / y)
    np.testing.assert_array_equal(run_ternary("tl.fdiv(x, z, ieee_rounding=True)", x, y, y), x / y)
    np.testing.assert_array_equal(run_ternary("tl.fdiv(x, y)", x, y, y), x / y)


def test_fdiv_of_integers_is_refused_as_in_triton():
    with pytest.raises(CompileError, match="needs floating-point operands"):
        build(TERNARY.format(expr="tl.fdiv(x, y)"), signature=sig("i32", "i32", "i32", "i32"), BLOCK=64)


@pytest.mark.parametrize("dtype,name", [(np.int32, "i32"), (np.uint32, "u32"), (np.int64, "i64"),
                                        (np.uint64, "u64")])
def test_umulhi_is_the_high_half_of_the_unsigned_product(rng, dtype, name):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    out = run_ternary("tl.umulhi(x, y)", x, y, y, signature=sig(name, name, name, name))
    bits = info.bits
    expected = [((int(a) % 2**bits) * (int(b) % 2**bits)) >> bits for a, b in zip(x, y)]
    np.testing.assert_array_equal(out.astype(np.uint64 if bits == 64 else np.uint32),
                                  np.array(expected, dtype=np.uint64 if bits == 64 else np.uint32))


def test_umulhi_of_floats_is_refused():
    with pytest.raises(CompileError, match="'umulhi' needs 32- or 64-bit integer operands"):
        build(TERNARY.format(expr="tl.umulhi(x, y)"), BLOCK=64)


SOFTMAX_ROWS = """
@mytriton.jit
def k(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    idx = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + idx)
    tl.store(out_ptr + idx, tl.softmax(x, dim=DIM))
"""


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_along_a_dim_of_a_tile(rng, dim):
    x = floats(rng, 8 * 32).reshape(8, 32)
    out = np.zeros_like(x)
    run_kernel(build(SOFTMAX_ROWS, R=8, C=32, DIM=dim), (1,), [x, out])
    np.testing.assert_allclose(out, _softmax(x, dim), rtol=1e-5, atol=1e-7)


def test_softmax_of_a_vector_defaults_to_its_only_axis(rng):
    x = floats(rng, 128) * 4
    y = np.zeros_like(x)
    out = run_ternary("tl.softmax(x)", x, y, y, block=128)
    np.testing.assert_allclose(out, _softmax(x, 0), rtol=1e-5, atol=1e-7)


KEEP_DIMS = """
@mytriton.jit
def k(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    idx = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + idx)
    y = x - tl.max(x, axis=1, keep_dims=True) + tl.sum(x, axis=0, keep_dims=True) * tl.min(x, 1, keep_dims=True)
    tl.store(out_ptr + idx, y)
"""


def test_reductions_with_keep_dims_broadcast_back(rng):
    x = floats(rng, 16 * 32).reshape(16, 32)
    out = np.zeros_like(x)
    run_kernel(build(KEEP_DIMS, R=16, C=32), (1,), [x, out])
    expected = x - x.max(1, keepdims=True) + x.sum(0, keepdims=True) * x.min(1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


KEEP_ALL_DIMS = """
@mytriton.jit
def add(a, b):
    return a + b


@mytriton.jit
def k(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    idx = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + idx)
    total = tl.sum(x, keep_dims=True)
    tl.static_assert(total.shape == (1, 1))
    y = x - total + tl.max(x, keep_dims=True) * tl.reduce(x, None, add, keep_dims=True)
    tl.store(out_ptr + idx, y)
"""


def test_reductions_over_every_axis_keep_them_as_ones_as_in_triton(rng):
    x = floats(rng, 8 * 16).reshape(8, 16)
    out = np.zeros_like(x)
    run_kernel(build(KEEP_ALL_DIMS, R=8, C=16), (1,), [x, out])
    expected = x - x.sum(keepdims=True) + x.max(keepdims=True) * x.sum(keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.nvcc
def test_cuda_of_reductions_over_every_axis_with_kept_dims_builds(cache):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(KEEP_ALL_DIMS), "cuda", signature="*fp32, *fp32", defines={"R": 8, "C": 16})
    assert "ld.global" in compile_ptx(cuda, "sm_90")


# ---- integer // and % ------------------------------------------------------------------------


def _c_div(a, b):
    return np.trunc(a.astype(np.float64) / b).astype(a.dtype)


@pytest.mark.parametrize("dtype,name", [(np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"),
                                        (np.int64, "i64")])
def test_integer_floordiv_truncates_and_mod_takes_the_dividends_sign_as_in_c(rng, dtype, name):
    # Triton: // is sdiv (toward zero) and % is srem on signed integers, not Python's floor.
    x = rng.integers(-100, 100, 400).astype(dtype)
    y = rng.integers(1, 20, 400).astype(dtype) * rng.choice(np.array([-1, 1], dtype=dtype), 400)
    out = run_ternary("x // y * 1000 + x % z", x, y, y, signature=sig(name, name, name, name))
    expected = (_c_div(x, y).astype(np.int64) * 1000 + np.fmod(x, y)).astype(dtype)
    np.testing.assert_array_equal(out, expected)
    assert (-7 // 2, -7 % 2) == (-4, 1)  # what Python would have given


def test_floordiv_of_signed_and_unsigned_is_refused_as_in_triton():
    with pytest.raises(CompileError, match="'floordiv' cannot mix signed and unsigned integers"):
        build(TERNARY.format(expr="x // y"), signature=sig("i32", "u32", "i32", "i32"), BLOCK=64)


def test_unsigned_division_and_comparison_use_the_unsigned_value(rng):
    x = rng.integers(2**31, 2**32, 200, dtype=np.uint32)  # the top bit set: negative if read as signed
    y = rng.integers(1, 2**31, 200, dtype=np.uint32)
    out = run_ternary("(x // y) * 1000 + x % y + (x > y)", x, y, y, signature=sig("u32", "u32", "u32", "u32"))
    expected = ((x // y) * 1000 + x % y + (x > y)).astype(np.uint32)
    np.testing.assert_array_equal(out, expected)


# ---- dtypes -----------------------------------------------------------------------------------


def test_promotion_follows_triton():
    assert promote(I8, I8) == I8  # no C promotion to int
    assert promote(I8, U8) == U8  # same width: unsigned wins
    assert promote(I16, U8) == I16  # the signed type is wider
    assert promote(I32, U32) == U32
    assert promote(U32, I64) == I64
    assert promote(U64, I64) == U64
    assert promote(F32, F64) == F64 and promote(F64, I64) == F64
    assert promote(F16, BF16) == F16 and promote(BF16, I64) == F32  # computation_type_impl: f16 first, bf16 only with bf16
    assert promote(BOOL, U8) == U8


def test_dtype_names_are_trittons():
    import mytriton.language as tl

    assert (tl.float64, tl.int8, tl.int16, tl.uint8, tl.uint16, tl.uint32, tl.uint64) == \
        (F64, I8, I16, U8, U16, U32, U64)
    assert (tl.float16, tl.bfloat16, tl.float32, tl.int1) == (F16, BF16, F32, BOOL)


def test_signatures_take_tritons_aot_names():
    assert [parse_signature_type(t) for t in ("*fp64", "*i8", "*u8", "u32", "i16", "*u16", "u64", "*bf16")] == \
        [PointerType(F64), PointerType(I8), PointerType(U8), U32, I16, PointerType(U16), U64, PointerType(BF16)]


@pytest.mark.parametrize("dtype,t", [(np.float64, F64), (np.int8, I8), (np.int16, I16), (np.uint8, U8),
                                     (np.uint16, U16), (np.uint32, U32), (np.uint64, U64)])
def test_numpy_arrays_become_pointers_to_their_dtype(dtype, t):
    assert arg_type(np.zeros(3, dtype), "x") == PointerType(t)
    assert signature_of([PointerType(t)]).startswith("*")


def test_bf16_arrays_are_ml_dtypes_bfloat16():
    assert arg_type(np.zeros(3, ml_dtypes.bfloat16), "x") == PointerType(BF16)


def test_python_ints_beyond_i64_are_u64_as_in_triton():
    assert (arg_type(2**31, "n"), arg_type(2**63, "n"), arg_type(-2**40, "n")) == (I64, U64, I64)


@pytest.mark.parametrize("dtype,name", [(np.int8, "i8"), (np.uint8, "u8"), (np.int16, "i16"),
                                        (np.uint16, "u16"), (np.uint32, "u32"), (np.uint64, "u64")])
def test_narrow_and_unsigned_integers_wrap_at_their_width(rng, dtype, name):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    out = run_ternary("(x + y) * 3 - y", x, y, y, signature=sig(name, name, name, name))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, ((x + y) * dtype(3) - y).astype(dtype))


def test_f64_keeps_double_precision(rng):
    x = floats(rng, 200, np.float64)
    y = x * (1 + 1e-12)  # differences f32 cannot see
    out = run_ternary("(x - y) * 1e12 + tl.exp(z)", x, y, x, signature=sig("fp64", "fp64", "fp64", "fp64"))
    np.testing.assert_allclose(out, (x - y) * 1e12 + np.exp(x), rtol=1e-9)


def test_bf16_computes_in_f32_and_rounds_to_bf16(rng):
    bf16 = ml_dtypes.bfloat16
    x, y = floats(rng, 200).astype(bf16), floats(rng, 200).astype(bf16)
    out = run_ternary("x * y + tl.exp(z)", x, y, y, signature=sig("bf16", "bf16", "bf16", "bf16"))
    f = np.float32
    expected = ((x.astype(f) * y.astype(f)).astype(bf16).astype(f) + np.exp(y.astype(f)).astype(bf16).astype(f))
    np.testing.assert_array_equal(out, expected.astype(bf16))


REDUCE = """
@mytriton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(x, axis=0))
    tl.store(out_ptr + 2, tl.min(x, axis=0))
"""


@pytest.mark.parametrize("dtype,name,out_dtype,out_name", [
    (np.int8, "i8", np.int32, "i32"), (np.uint8, "u8", np.uint32, "u32"), (np.int16, "i16", np.int32, "i32"),
    (np.uint32, "u32", np.uint64, "u64"), (np.float64, "fp64", np.float64, "fp64"),
])
def test_reductions_of_each_dtype(rng, dtype, name, out_dtype, out_name):
    if np.dtype(dtype).kind == "f":
        x = floats(rng, 128, dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 128, dtype=dtype, endpoint=True)
    out = np.zeros(3, out_dtype)
    run_kernel(build(REDUCE, signature=f"*{name}, *{out_name}", BLOCK=128), (1,), [x, out])
    total = x.sum(dtype=np.float64) if x.dtype.kind == "f" else int(x.astype(np.int64).sum())
    if name in ("u32",):
        total %= 2**32  # u32 sums in u32, as in Triton
    np.testing.assert_allclose(out, [total, x.max(), x.min()], rtol=1e-12)


def test_sum_of_narrow_integers_is_32_bit():
    kernel = build(REDUCE, signature="*u8, *u32", BLOCK=128)
    sums = [op for op in kernel.body.ops if op.name == "sum"]
    assert sums[0].results[0].type == U32
    kernel = build(REDUCE, signature="*i16, *i32", BLOCK=128)
    assert [op for op in kernel.body.ops if op.name == "sum"][0].results[0].type == I32


@pytest.mark.parametrize("name,widened", [("fp16", "f32"), ("bf16", "f32"), ("i8", "i32"), ("u8", "i32"),
                                          ("i16", "i32"), ("fp32", "f32"), ("fp64", "f64"), ("i64", "i64"),
                                          ("u32", "u32")])
def test_max_and_min_of_a_type_narrower_than_32_bits_are_32_bit(name, widened):
    # Triton's tl.max / tl.min (language/standard.py): narrow floats reduce in f32, narrow integers in
    # i32, and the result has that type (softmax's x - tl.max(x) of a bf16 row is then f32).
    out = {"f32": "fp32", "f64": "fp64"}.get(widened, widened)
    kernel = build(REDUCE, signature=f"*{name}, *{out}", BLOCK=128)
    for reduction in ("max", "min"):
        (op,) = [op for op in kernel.body.ops if op.name == reduction]
        assert str(op.results[0].type) == widened


def test_x_minus_its_max_is_f32_for_a_bf16_row():
    kernel = build("""
@mytriton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.exp(x - tl.max(x, axis=0)))
""", signature="*bf16, *bf16", BLOCK=128)
    (sub,) = [op for op in kernel.body.ops if op.name == "sub"]
    assert str(sub.results[0].type.element) == "f32"


FULL = """
@mytriton.jit
def k(out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), 200, {dtype}) + tl.zeros((BLOCK,), {dtype}))
"""


@pytest.mark.parametrize("dtype,name", [("tl.uint8", "u8"), ("tl.int16", "i16"), ("tl.float64", "fp64"),
                                        ("tl.uint32", "u32"), ("tl.int8", "i8")])
def test_full_and_zeros_take_every_dtype(dtype, name):
    np_type = {"u8": np.uint8, "i16": np.int16, "fp64": np.float64, "u32": np.uint32, "i8": np.int8}[name]
    out = np.ones(16, np_type)
    run_kernel(build(FULL.format(dtype=dtype), signature=f"*{name}", BLOCK=16), (1,), [out])
    np.testing.assert_array_equal(out, np.full(16, np.array(200).astype(np_type)))


def test_casts_between_new_dtypes_convert_as_c(rng):
    x = (floats(rng, 100) * 300).astype(np.float64)
    out = run_ternary("x.to(tl.int16).to(tl.uint8).to(tl.float64)", x, x, x, signature=sig("fp64", "fp64", "fp64",
                                                                                          "fp64"))
    np.testing.assert_array_equal(out, x.astype(np.int16).astype(np.uint8).astype(np.float64))


def test_jit_launch_types_arrays_of_new_dtypes(rng, kernel_module):
    kernel = kernel_module(TERNARY.format(expr="x + y * z")).k
    x, y, z = (rng.integers(0, 255, 100, dtype=np.uint8) for _ in range(3))
    out = np.zeros(100, np.uint8)
    kernel[(2,)](x, y, z, out, 100, BLOCK=64, backend="interp")
    np.testing.assert_array_equal(out, x + y * z)


# ---- CUDA: the code each gives builds ---------------------------------------------------------

EVERY = """
@mytriton.jit
def k(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m, other=1)  # masked lanes feed the reductions: never divide by 0 there
    r = {expr}
    tl.store(out_ptr + offs, r, mask=m)
    tl.store(out_ptr + offs, tl.sum(r, axis=0) + tl.max(r, axis=0) + tl.min(r, axis=0) + r, mask=m)
"""

FLOAT_EXPR = ("tl.clamp(a, b, 1.0) + tl.clamp(a, -1.0, b, propagate_nan=tl.PropagateNan.ALL) + tl.fma(a, b, a)"
              " + tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL) + tl.minimum(a, b) + tl.div_rn(a, b)"
              " + tl.fdiv(a, b) + tl.softmax(a) + tl.exp(a) + tl.rsqrt(b) + tl.abs(a) + 0.5")
INT_EXPR = "(a + b) // 3 - a % b + (a < b) + tl.maximum(a, b) + tl.abs(a) + (-a) + (~b) + 7"


@pytest.mark.nvcc
@pytest.mark.parametrize("t", tiered(["fp64", "fp32", "fp16", "bf16"], fast=("bf16",)))
def test_cuda_of_the_float_functions_builds(cache, t):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(EVERY.format(expr=FLOAT_EXPR)), "cuda", signature=f"*{t}, *{t}, *{t}, i32",
                        defines={"BLOCK": 128})
    assert ".entry k" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("t", tiered(["i8", "i16", "u8", "u16", "u32", "u64", "i64"], fast=("i8", "u64")))
def test_cuda_of_integer_arithmetic_builds(cache, t):
    from mytriton.backends.cuda.nvcc import compile_ptx

    expr = INT_EXPR + (" + tl.umulhi(a, b)" if t in ("u32", "u64", "i64") else "")
    cuda = compile_text(kernel_source(EVERY.format(expr=expr)), "cuda", signature=f"*{t}, *{t}, *{t}, i32",
                        defines={"BLOCK": 128})
    assert ".entry k" in compile_ptx(cuda, "sm_90")


def test_cuda_spells_the_new_types_and_wraps_narrow_integers():
    cuda = compile_text(kernel_source(TERNARY.format(expr="x + y * z")), "cuda", signature=sig("u8", "u8", "u8", "u8"),
                        defines={"BLOCK": 64})
    assert "unsigned char* x_ptr" in cuda
    assert "((unsigned char)(" in cuda  # each result wrapped to 8 bits, as the interpreter does


def test_cuda_f64_math_calls_the_double_functions():
    cuda = compile_text(kernel_source(TERNARY.format(expr="tl.exp(x) + tl.fma(x, y, z) + tl.maximum(x, 1.5)")),
                        "cuda", signature=sig("fp64", "fp64", "fp64", "fp64"), defines={"BLOCK": 64})
    assert "exp(" in cuda and "expf(" not in cuda
    assert "fma(" in cuda and "fmaf(" not in cuda
    assert "fmax(" in cuda and "1.5)" in cuda and "1.5f" not in cuda


def test_cuda_u32_and_u64_literals_carry_unsigned_suffixes():
    from mytriton.backends.cuda.ctypes import c_literal

    assert (c_literal(4_000_000_000, U32), c_literal(2**64 - 1, U64), c_literal(-1, U8)) == \
        ("4000000000u", "18446744073709551615ull", "((unsigned char)255)")


# ---- GPU against the interpreter ----------------------------------------------------------------

GPU_CASES = [
    ("fp32", FLOAT_EXPR), ("fp64", FLOAT_EXPR), ("fp16", FLOAT_EXPR), ("bf16", FLOAT_EXPR),
    ("i8", INT_EXPR), ("u8", INT_EXPR), ("i16", INT_EXPR), ("u16", INT_EXPR),
    ("u32", INT_EXPR + " + tl.umulhi(a, b)"), ("i64", INT_EXPR + " + tl.umulhi(a, b)"),
    ("u64", INT_EXPR + " + tl.umulhi(a, b)"), ("i32", INT_EXPR + " + tl.umulhi(a, b)"),
    ("u32", "(a >> (b % 32)) ^ (a << 3)"), ("i16", "(a >> (b % 16)) ^ (a << 3)"),
]


def _gpu_inputs(rng, t: str, n: int):
    dtype = {"fp32": np.float32, "fp64": np.float64, "fp16": np.float16, "bf16": ml_dtypes.bfloat16,
             "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "u32": np.uint32,
             "i64": np.int64, "u64": np.uint64, "i32": np.int32}[t]
    if t.startswith(("fp", "bf")):
        a, b = floats(rng, n).astype(dtype), (np.abs(floats(rng, n)) + 0.5).astype(dtype)
        return a, b, dtype
    info = np.iinfo(dtype)
    # i32 and i64 stay small enough that sums never overflow (undefined in C);
    # narrower and unsigned types wrap, in C as in the interpreter.
    low, high = {"i32": (-2**20, 2**20), "i64": (-2**40, 2**40)}.get(t, (info.min, info.max))
    a = rng.integers(low, high, n, dtype=dtype, endpoint=True)
    b = rng.integers(1, min(info.max, 1000), n, dtype=dtype)  # no division by zero
    return a, b, dtype


@pytest.mark.gpu
@pytest.mark.parametrize("t,expr", GPU_CASES)
def test_gpu_matches_the_interpreter(kernel_module, t, expr):
    kernel = kernel_module(EVERY.format(expr=expr)).k
    rng = np.random.default_rng(5)
    n = 1000
    a, b, dtype = _gpu_inputs(rng, t, n)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros(n, dtype)
        kernel[(cdiv(n, 128),)](a, b, out, n, BLOCK=128, backend=backend)
        outs.append(out)
    if np.dtype(dtype).kind == "f" or dtype == ml_dtypes.bfloat16:
        tol = {"fp64": 1e-12, "fp32": 1e-5}.get(t, 2e-2)
        np.testing.assert_allclose(outs[0].astype(np.float64), outs[1].astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(outs[0], outs[1])


# ---- shifts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,name", [(np.int32, "i32"), (np.uint32, "u32"), (np.int8, "i8"), (np.uint8, "u8"),
                                        (np.int64, "i64")])
def test_right_shift_is_arithmetic_when_signed_and_logical_when_unsigned(rng, dtype, name):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    s = rng.integers(0, info.bits, 300).astype(dtype)
    out = run_ternary("(x >> y) ^ (x << z)", x, s, s, signature=sig(name, name, name, name))
    np.testing.assert_array_equal(out, np.right_shift(x, s) ^ np.left_shift(x, s))
    if info.min < 0:
        assert (out[x < 0] < 0).any() or not (x < 0).any()  # the sign shifted in


def test_shift_of_floats_is_refused():
    with pytest.raises(CompileError, match="'shl' needs integer operands"):
        build(TERNARY.format(expr="x << 2"), BLOCK=64)


@pytest.mark.nvcc
def test_cuda_of_shifts_builds(cache):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(TERNARY.format(expr="(x >> y) ^ (x << 3)")), "cuda",
                        signature=sig("u8", "u8", "u8", "u8"), defines={"BLOCK": 64})
    assert ">>" in cuda and "<<" in cuda
    assert ".entry k" in compile_ptx(cuda, "sm_90")


# ---- mytriton run --------------------------------------------------------------------------------


def test_run_generates_unsigned_arrays_and_types_them(tmp_path):
    import subprocess
    import sys

    kernel = tmp_path / "k.py"
    kernel.write_text(kernel_source(TERNARY.format(expr="x + y * z")))
    result = subprocess.run(
        [sys.executable, "-m", "mytriton", "run", str(kernel), "--grid", "2", "-D", "BLOCK=64",
         "--arg", "x_ptr=rand:100:u8", "--arg", "y_ptr=rand:100:u8", "--arg", "z_ptr=ones:100:u8",
         "--arg", "out_ptr=zeros:100:u8", "--arg", "n=100", "--out-dir", str(tmp_path / "out"), "--backend", "interp"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    x, y, out = (np.load(tmp_path / "out" / f"{name}.npy") for name in ("x_ptr", "y_ptr", "out_ptr"))
    assert x.dtype == np.uint8 and x.min() >= 0
    np.testing.assert_array_equal(out, x + y)


def test_bf16_scalar_arguments_are_packed_as_rounded_bf16_bits():
    from mytriton.runtime.cuda_driver import bf16_bits

    values = np.array([1.0, -2.5, 3.14159, 1e-3, 65504.0, np.inf, -np.inf, 1.00390625, 1.01171875],
                      dtype=np.float32)
    expected = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert [bf16_bits(v) for v in values] == expected.tolist()
    assert np.isnan(np.array([bf16_bits(float("nan"))], np.uint16).view(ml_dtypes.bfloat16)[0])
    assert bf16_bits(1e300) == bf16_bits(float("inf"))  # beyond f32, as a cast to bf16 gives


@pytest.mark.nvcc
@pytest.mark.parametrize("t", tiered(["fp64", "fp16", "bf16"], fast=("fp16",)))
def test_cuda_of_a_2d_softmax_builds(cache, t):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(SOFTMAX_ROWS), "cuda", signature=f"*{t}, *{t}",
                        defines={"R": 16, "C": 64, "DIM": 1})
    assert ".entry k" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("t,dim", [("fp64", 0), ("fp64", 1), ("fp32", 1), ("bf16", 1)])
def test_gpu_softmax_of_a_tile_matches_the_interpreter(kernel_module, t, dim):
    kernel = kernel_module(SOFTMAX_ROWS).k
    dtype = {"fp64": np.float64, "fp32": np.float32, "bf16": ml_dtypes.bfloat16}[t]
    x = (np.random.default_rng(3).standard_normal((16, 64)) * 3).astype(dtype)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros_like(x)
        kernel[(1,)](x, out, R=16, C=64, DIM=dim, backend=backend)
        outs.append(out.astype(np.float64))
    tol = {"fp64": 1e-13, "fp32": 1e-6}.get(t, 1e-2)
    np.testing.assert_allclose(outs[0], outs[1], rtol=tol, atol=tol)
    np.testing.assert_allclose(outs[1], _softmax(x.astype(np.float64), dim), rtol=max(tol, 1e-6), atol=1e-2)


@pytest.mark.parametrize("name", sorted(opdefs.MATH_FUNCTIONS))
def test_every_math_function_has_an_f64_spelling(name):
    from mytriton.backends.cuda.spelling import CUDA

    spelling = CUDA.math_function(name, F64)
    assert spelling is not None and spelling.format("x") != spelling
    assert spelling != CUDA.math_function(name, F32)  # the double function, not the float one


def test_bf16_reductions_accumulate_in_f32_and_max_min_skip_nan(rng):
    # ml_dtypes' bfloat16 is not a NumPy float kind ("V"): the interpreter must still treat it as one.
    bf16 = ml_dtypes.bfloat16
    x = (floats(rng, 128) * 10).astype(bf16)
    x[5] = np.nan
    out = np.zeros(3, bf16)
    run_kernel(build(REDUCE, signature="*bf16, *bf16", BLOCK=128), (1,), [x, out])
    finite = np.delete(x, 5).astype(np.float32)
    assert np.isnan(out[0].astype(np.float32))
    assert (out[1], out[2]) == (finite.max().astype(bf16), finite.min().astype(bf16))
    y = np.full(128, 0.1, bf16)
    y[::2] = bf16(0.3)  # summed in bf16 this gives 25.75; in f32, then rounded, 25.625
    run_kernel(build(REDUCE, signature="*bf16, *bf16", BLOCK=128), (1,), [y, out])
    assert out[0] == y.astype(np.float32).sum().astype(bf16) == bf16(25.625)


# ---- literals beyond i32 --------------------------------------------------------------------------


def test_a_literal_in_u32_range_keeps_u32_arithmetic_wrapping_as_in_triton(rng):
    # Triton types 2654435761 as u32, so a multiplicative hash wraps at 32 bits before the shift.
    x = rng.integers(0, 2**32, 300, dtype=np.uint32)
    out = run_ternary("(x * 2654435761) >> 16", x, x, x, signature=sig("u32", "u32", "u32", "u32"))
    np.testing.assert_array_equal(out, (x * np.uint32(2654435761)) >> np.uint32(16))


def test_a_literal_in_u64_range_fills_a_u64_tile():
    out = np.zeros(16, np.uint64)
    run_kernel(build(FULL.format(dtype="tl.uint64").replace("200", "18446744073709551615"), signature="*u64",
                     BLOCK=16), (1,), [out])
    np.testing.assert_array_equal(out, np.full(16, 2**64 - 1, np.uint64))


HALF_ARITHMETIC = """
@mytriton.jit
def k(x, y, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(out + i, (a * b + a) - b)
"""


@pytest.mark.parametrize("element,ctype", [("fp16", "__half"), ("bf16", "__nv_bfloat16")])
def test_a_16_bit_add_sub_or_mul_is_one_half_instruction(element, ctype):
    """Triton's HMUL2/HADD2: no widening to f32 and rounding back (the same
    result: f32 holds the exact product, and rounding a sum twice through
    f32 gives the once-rounded one for 11- and 8-bit significands)."""
    cuda = compile_text(kernel_source(HALF_ARITHMETIC), "cuda", signature=f"*{element}, *{element}, *{element}",
                        defines={"BLOCK": 64})
    assert "__hmul_rn(" in cuda and "__hadd_rn(" in cuda and "__hsub_rn(" in cuda  # _rn: never fused into an fma
    assert "(float)" not in cuda


@pytest.mark.gpu
@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_gpu_16_bit_arithmetic_matches_the_interpreter_bit_for_bit(kernel_module, element):
    import ml_dtypes

    dtype = np.float16 if element == "f16" else ml_dtypes.bfloat16
    module = kernel_module(HALF_ARITHMETIC)
    rng = np.random.default_rng(21)
    x, y = (rng.standard_normal(1024) * 100).astype(dtype), rng.standard_normal(1024).astype(dtype)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros(1024, dtype)
        module.k[(1,)](x, y, out, BLOCK=1024, backend=backend)
        outs.append(out.view(np.uint16))
    np.testing.assert_array_equal(outs[0], outs[1])
