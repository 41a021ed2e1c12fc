"""libdevice: ``tl.extra.libdevice`` and its import
paths, Triton's dtype dispatch (f32 and f64; located errors otherwise),
each function in the interpreter against NumPy (f32 and f64, random
non-zero data), the CUDA math-library calls they become, built by nvcc,
and (marker gpu) the device against the interpreter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import build, cdiv, compile_text, kernel_source
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.types import BOOL, F32, F64, I64, BlockType

LIBDEVICE_IMPORT = "from mytriton.language.extra import libdevice\n"

UNARY = LIBDEVICE_IMPORT + """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)
"""

BINARY = LIBDEVICE_IMPORT + """
@mytriton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)
"""

NP_NAMES = {np.float32: "fp32", np.float64: "fp64"}


def run_unary(expr, x, out_dtype=None, block=64):
    out = np.zeros(x.size, out_dtype or x.dtype)
    t = NP_NAMES[x.dtype.type]
    out_t = {np.bool_: "i1", np.int64: "i64"}.get(out.dtype.type, NP_NAMES.get(out.dtype.type))
    kernel = build(UNARY.format(expr=expr), signature=f"*{t}, *{out_t}, i32", BLOCK=block)
    run_kernel(kernel, (cdiv(x.size, block),), [x, out, x.size])
    return out


def run_binary(expr, x, y, block=64):
    out = np.zeros(x.size, x.dtype)
    t = NP_NAMES[x.dtype.type]
    kernel = build(BINARY.format(expr=expr), signature=f"*{t}, *{t}, *{t}, i32", BLOCK=block)
    run_kernel(kernel, (cdiv(x.size, block),), [x, y, out, x.size])
    return out


def result_type(source: str, signature: str):
    kernel = build(source, signature=signature, BLOCK=64)
    stores = [op for op in kernel.body.ops if op.name == "store"]
    return stores[-1].operands[1].type


# ---- import paths ------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling,imports", [
    ("libdevice.tanh(x)", "from mytriton.language.extra import libdevice\n"),
    ("libdevice.tanh(x)", "from mytriton.language.extra.cuda import libdevice\n"),
    ("ld.tanh(x)", "import mytriton.language.extra.libdevice as ld\n"),
    ("tl.extra.libdevice.tanh(x)", ""),
    ("tl.extra.cuda.libdevice.tanh(x)", ""),
    ("tanh(x)", "from mytriton.language.extra.libdevice import tanh\n"),
])
def test_every_import_path_triton_kernels_use_reaches_libdevice(spelling, imports):
    source = imports + UNARY.removeprefix(LIBDEVICE_IMPORT).format(expr=spelling)
    kernel = build(source, signature="*fp32, *fp32, i32", BLOCK=64)
    assert [op.name for op in kernel.body.ops if op.name == "tanh"] == ["tanh"]


def test_the_host_modules_import_as_in_triton():
    import mytriton.language as tl
    from mytriton.language.extra import libdevice
    from mytriton.language.extra.cuda import libdevice as cuda_libdevice

    assert tl.extra.libdevice is libdevice
    assert set(cuda_libdevice.FUNCTIONS) == set(libdevice.FUNCTIONS)
    with pytest.raises(RuntimeError, match="only be used inside a @mytriton.jit kernel"):
        libdevice.erfinv(0.5)


def test_a_name_libdevice_lacks_is_a_located_error():
    with pytest.raises(CompileError, match="'no_such' is not part of libdevice") as info:
        build(UNARY.format(expr="libdevice.no_such(x)"), signature="*fp32, *fp32, i32", BLOCK=64)
    assert info.value.loc.line == 11


# ---- types -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["isnan", "isinf", "signbit"])
def test_predicates_give_bool(name):
    t = result_type(UNARY.format(expr=f"libdevice.{name}(x)"), "*fp32, *i1, i32")
    assert t == BlockType((64,), BOOL)


def test_llrint_gives_i64():
    assert result_type(UNARY.format(expr="libdevice.llrint(x)"), "*fp64, *i64, i32") == BlockType((64,), I64)


@pytest.mark.parametrize("t,expected", [("fp32", F32), ("fp64", F64)])
def test_functions_keep_f32_and_f64(t, expected):
    assert result_type(UNARY.format(expr="libdevice.erfinv(x)"), f"*{t}, *{t}, i32") == BlockType((64,), expected)


def test_pow_takes_an_i32_exponent_and_an_f64_base_promotes_a_float_literal():
    assert result_type(UNARY.format(expr="libdevice.pow(x, 3)"), "*fp32, *fp32, i32") == BlockType((64,), F32)
    assert result_type(UNARY.format(expr="libdevice.pow(x, 0.5)"), "*fp64, *fp64, i32") == BlockType((64,), F64)


@pytest.mark.parametrize("expr,t", [("libdevice.tanh(x)", "fp16"), ("libdevice.erfinv(x)", "i32"),
                                    ("libdevice.fast_expf(x)", "fp64"), ("libdevice.isnan(x)", "bf16")])
def test_a_dtype_libdevice_has_no_function_for_is_a_located_error(expr, t):
    with pytest.raises(CompileError, match="libdevice has no function of") as info:
        build(UNARY.format(expr=expr), signature=f"*{t}, *{t}, i32", BLOCK=64)
    assert info.value.loc.line == 11


def test_a_wrong_argument_count_is_a_located_error():
    with pytest.raises(CompileError, match=r"libdevice.pow\(\) takes 2 argument\(s\), got 1"):
        build(UNARY.format(expr="libdevice.pow(x)"), signature="*fp32, *fp32, i32", BLOCK=64)


# ---- the interpreter against NumPy --------------------------------------------------------------

def _erfinv_reference(y):
    import statistics

    return np.array([statistics.NormalDist().inv_cdf((v + 1) / 2) / math.sqrt(2) for v in y])


UNARY_CASES = {
    "tanh": (np.tanh, 3), "erf": (np.vectorize(math.erf), 2), "log1p": (np.log1p, None),
    "expm1": (np.expm1, 1), "rsqrt": (lambda x: 1 / np.sqrt(x), None), "trunc": (np.trunc, 9),
    "floor": (np.floor, 9), "ceil": (np.ceil, 9), "exp2": (np.exp2, 4), "log2": (np.log2, None),
    "log10": (np.log10, None), "sqrt": (np.sqrt, None), "sinh": (np.sinh, 3), "cosh": (np.cosh, 3),
    "tan": (np.tan, 1), "asin": (np.arcsin, 0.9), "acos": (np.arccos, 0.9), "atan": (np.arctan, 5),
    "asinh": (np.arcsinh, 5), "atanh": (np.arctanh, 0.9), "cbrt": (np.cbrt, 5), "rint": (np.rint, 9),
    "nearbyint": (np.rint, 9), "fabs": (np.abs, 5), "abs": (np.abs, 5), "exp": (np.exp, 3),
}


def _inputs(rng, scale, dtype, n=300):
    """Random non-zero data: symmetric times ``scale``, or positive where None."""
    if scale is None:
        return (rng.uniform(0.05, 20, n)).astype(dtype)
    x = rng.uniform(-1, 1, n) * scale
    x[x == 0] = 0.25
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY_CASES))
def test_each_unary_function_matches_numpy(rng, name, dtype):
    reference, scale = UNARY_CASES[name]
    x = _inputs(rng, scale, dtype)
    out = run_unary(f"libdevice.{name}(x)", x)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out, reference(x.astype(np.float64)), rtol=tol, atol=tol)


def test_acosh_matches_numpy(rng):
    x = rng.uniform(1.01, 30, 300).astype(np.float32)
    np.testing.assert_allclose(run_unary("libdevice.acosh(x)", x), np.arccosh(x.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_inverts_erf(rng, dtype):
    y = rng.uniform(-0.999, 0.999, 300).astype(dtype)
    y[:3] = [1e-7, -0.9999, 0.5]
    out = run_unary("libdevice.erfinv(x)", y)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    # the normal quantile loses digits of (y + 1) / 2 for tiny y: there, erfinv(y) = y * sqrt(pi) / 2 (1 + O(y^2))
    np.testing.assert_allclose(out[1:], _erfinv_reference(y[1:].astype(np.float64)), rtol=tol, atol=1e-30)
    assert out[0] == pytest.approx(1e-7 * math.sqrt(math.pi) / 2, rel=tol)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(erf(out.astype(np.float64)), y, rtol=tol * 10)


def test_erfinv_at_and_beyond_the_ends():
    y = np.array([1, -1, 0, -0.0, 1.5, np.nan], np.float32)
    out = run_unary("libdevice.erfinv(x)", y)
    assert out[0] == np.inf and out[1] == -np.inf and out[2] == 0 and np.signbit(out[3])
    assert np.isnan(out[4]) and np.isnan(out[5])


def test_round_takes_halves_away_from_zero_unlike_numpy():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.49999997, 3.7, -3.2], np.float32)
    out = run_unary("libdevice.round(x)", x)
    np.testing.assert_array_equal(out, np.array([1, 2, 3, -1, -3, 0, -0.0, 4, -3], np.float32))


def test_round_of_f64_halves(rng):
    x = (rng.integers(-1000, 1000, 300) + 0.5).astype(np.float64)
    np.testing.assert_array_equal(run_unary("libdevice.round(x)", x), np.trunc(x) + np.sign(x))


def test_llrint_rounds_halves_to_even_into_i64(rng):
    x = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3e12]), rng.uniform(-1e6, 1e6, 200)])
    out = run_unary("libdevice.llrint(x)", x, out_dtype=np.int64)
    np.testing.assert_array_equal(out, np.rint(x).astype(np.int64))
    assert list(out[:6]) == [0, 2, 2, 0, -2, 3_000_000_000_000]


def test_llrint_saturates_and_gives_i64_min_for_nan_as_the_device_does():
    x = np.array([1e30, -1e30, np.inf, -np.inf, np.nan], np.float32)
    out = run_unary("libdevice.llrint(x)", x, out_dtype=np.int64)
    assert list(out) == [2**63 - 1, -2**63, 2**63 - 1, -2**63, -2**63]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isnan_isinf_and_signbit(rng, dtype):
    x = rng.standard_normal(300).astype(dtype)
    x[[1, 2, 3, 4, 5]] = [np.nan, np.inf, -np.inf, -0.0, -np.nan]
    for name, reference in (("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)):
        out = run_unary(f"libdevice.{name}(x)", x, out_dtype=np.bool_)
        np.testing.assert_array_equal(out, reference(x), err_msg=name)


def test_isinf_of_f64_beyond_f32_range_is_false():
    x = np.array([1e300, -1e300, np.inf], np.float64)
    np.testing.assert_array_equal(run_unary("libdevice.isinf(x)", x, out_dtype=np.bool_), [False, False, True])


BINARY_CASES = {
    "pow": (np.power, True), "atan2": (np.arctan2, False), "fmod": (np.fmod, False), "hypot": (np.hypot, False),
    "copysign": (np.copysign, False), "fmax": (np.fmax, False), "fmin": (np.fmin, False),
    "div_rn": (np.divide, False),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY_CASES))
def test_each_binary_function_matches_numpy(rng, name, dtype):
    reference, positive_base = BINARY_CASES[name]
    x = _inputs(rng, None if positive_base else 4, dtype)
    y = _inputs(rng, 3, dtype)
    out = run_binary(f"libdevice.{name}(x, y)", x, y)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    expected = reference(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=tol, atol=tol)


def test_pow_with_an_integer_exponent(rng):
    x = _inputs(rng, 3, np.float32)
    np.testing.assert_allclose(run_unary("libdevice.pow(x, 3)", x), x.astype(np.float64) ** 3, rtol=1e-6)


def test_fast_expf_and_fast_dividef_compute_exp_and_division(rng):
    x = _inputs(rng, 5, np.float32)
    y = _inputs(rng, 3, np.float32)
    np.testing.assert_allclose(run_unary("libdevice.fast_expf(x)", x), np.exp(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(run_binary("libdevice.fast_dividef(x, y)", x, y), x / y, rtol=1e-6)


def test_exact_functions_fold_and_inexact_ones_stay():
    from conftest import ssa_of

    source = kernel_source(LIBDEVICE_IMPORT + """
    @mytriton.jit
    def k(out_ptr):
        tl.store(out_ptr, libdevice.round(2.5) + libdevice.trunc(-1.5) + libdevice.fmod(7.5, 2.0))
        tl.store(out_ptr + 1, libdevice.erfinv(0.5))
    """.replace("\n    ", "\n"))
    ops = [op.name for op in ssa_of(source, optimized=True).body.ops]
    assert "round" not in ops and "trunc" not in ops and "fmod" not in ops
    assert "erfinv" in ops


# ---- CUDA ----------------------------------------------------------------------------------------

EVERY_UNARY = " + ".join(f"libdevice.{name}(x)" for name in sorted(UNARY_CASES) if name != "abs") + \
    " + libdevice.erfinv(x * 0.5) + libdevice.round(x) + libdevice.acosh(x + 2.0) + libdevice.pow(x, 2)" \
    " + libdevice.pow(x, x) + libdevice.atan2(x, 2.0) + libdevice.fmod(x, 3.0) + libdevice.hypot(x, x)" \
    " + libdevice.copysign(x, -1.0) + libdevice.llrint(x) + tl.where(libdevice.isnan(x) | libdevice.isinf(x)" \
    " | libdevice.signbit(x), 1.0, 0.0)"
FAST = " + libdevice.fast_expf(x) + libdevice.fast_dividef(x, 3.0)"


def test_cuda_calls_the_cuda_math_library():
    cuda = compile_text(kernel_source(UNARY.format(expr=EVERY_UNARY + FAST)), "cuda", signature="*fp32, *fp32, i32",
                        defines={"BLOCK": 128})
    for call in ("erfinvf(", "log1pf(", "expm1f(", "roundf(", "truncf(", "powf(", "llrintf(", "__expf(",
                 "__fdividef(", "isnan(", "isinf(", "signbit(", "atan2f(", "fmodf("):
        assert call in cuda, call


def test_cuda_of_f64_calls_the_double_functions():
    cuda = compile_text(kernel_source(UNARY.format(expr=EVERY_UNARY)), "cuda", signature="*fp64, *fp64, i32",
                        defines={"BLOCK": 128})
    assert "erfinv(" in cuda and "erfinvf(" not in cuda and "llrint(" in cuda and "llrintf(" not in cuda


@pytest.mark.nvcc
@pytest.mark.parametrize("t,expr", [("fp32", EVERY_UNARY + FAST), ("fp64", EVERY_UNARY)])
def test_cuda_of_every_function_builds(cache, t, expr):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(UNARY.format(expr=expr)), "cuda", signature=f"*{t}, *{t}, i32",
                        defines={"BLOCK": 128})
    ptx = compile_ptx(cuda, "sm_90")
    assert ".entry k" in ptx
    if t == "fp32":
        assert "ex2.approx" in ptx  # __expf: the hardware's exp2


# ---- GPU against the interpreter -----------------------------------------------------------------

GPU_UNARY = [f"libdevice.{name}(x)" for name in sorted(UNARY_CASES)] + [
    "libdevice.erfinv(x * 0.5)", "libdevice.round(x * 4.0)", "libdevice.pow(x, 3)", "libdevice.pow(x * x, 0.5)",
    "libdevice.atan2(x, 0.5)", "libdevice.fmod(x * 7.0, 2.0)", "libdevice.hypot(x, 2.0)",
    "libdevice.copysign(2.0, x)", "libdevice.fast_expf(x)", "libdevice.fast_dividef(x, 3.0)",
]


# libdevice has fast_expf and fast_dividef in f32 only.
GPU_CASES = [(t, expr) for t in ("fp32", "fp64") for expr in GPU_UNARY if t == "fp32" or "fast_" not in expr]


@pytest.mark.gpu
@pytest.mark.parametrize("t,expr", GPU_CASES)
def test_gpu_matches_the_interpreter(kernel_module, t, expr):
    module = kernel_module(UNARY.format(expr=expr))
    dtype = np.float32 if t == "fp32" else np.float64
    name = expr.split("(")[0].split(".")[1]
    scale = UNARY_CASES.get(name, (None, 0.9))[1]
    x = _inputs(np.random.default_rng(7), scale, dtype, n=1000)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros_like(x)
        module.k[(cdiv(x.size, 128),)](x, out, x.size, BLOCK=128, backend=backend)
        outs.append(out)
    tol = 1e-5 if t == "fp32" else 1e-13
    np.testing.assert_allclose(outs[0], outs[1], rtol=tol, atol=tol, err_msg=expr)


@pytest.mark.gpu
@pytest.mark.parametrize("name,out_dtype", [("isnan", np.bool_), ("isinf", np.bool_), ("signbit", np.bool_),
                                             ("llrint", np.int64)])
def test_gpu_predicates_and_llrint_match_the_interpreter(kernel_module, name, out_dtype):
    module = kernel_module(UNARY.format(expr=f"libdevice.{name}(x)"))
    x = (np.random.default_rng(8).standard_normal(1000) * 1000).astype(np.float32)
    x[[1, 2, 3, 4, 5]] = [np.nan, np.inf, -np.inf, -0.0, 2.5]
    if name == "llrint":
        x[[6, 7]] = [1e30, -1e30]  # saturated, as NaN (0) and the infinities are
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros(x.size, out_dtype)
        module.k[(cdiv(x.size, 128),)](x, out, x.size, BLOCK=128, backend=backend)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
