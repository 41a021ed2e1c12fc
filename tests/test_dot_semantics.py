"""tl.dot with Triton's semantics: input precisions (tf32, tf32x3, ieee;
allow_tf32; MYTRITON_F32_DEFAULT), out dtypes, operand dtypes (f32, f16,
bf16, i8, f64), through the IR text, the type rule, the interpreter against
float64 NumPy, nvcc builds of the CUDA, and the GPU against the interpreter."""
import struct

import numpy as np
import pytest

import mytriton
from conftest import compile_text, kernel_source
from mytriton.backends.interp import round_to_tf32
from mytriton.diagnostics import CompileError
from mytriton.types import F16, F32, F64, I32

# One program per (BM, BN) tile of C = A @ B (+ C's initial zeros), walking K
# in BK steps: the canonical loads stage-dots stages through shared memory.
DOT_KERNEL = '''
@mytriton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               PRECISION: tl.constexpr, OUT: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), OUT)
    for k in range(0, K, BK):
        a_rows = offs_m[:, None]
        a_cols = k + offs_k[None, :]
        a = tl.load(a_ptr + a_rows * K + a_cols, mask=(a_rows < M) & (a_cols < K), other=0)
        b_rows = k + offs_k[:, None]
        b_cols = offs_n[None, :]
        b = tl.load(b_ptr + b_rows * N + b_cols, mask=(b_rows < K) & (b_cols < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT)
    c_rows = offs_m[:, None]
    c_cols = offs_n[None, :]
    tl.store(c_ptr + c_rows * N + c_cols, acc, mask=(c_rows < M) & (c_cols < N))
'''

# (operand dtype, signature name, precision, out dtype)
PAIRS = [
    ("float32", "fp32", "tf32", F32), ("float32", "fp32", "tf32x3", F32), ("float32", "fp32", "ieee", F32),
    ("float16", "fp16", "ieee", F32), ("float16", "fp16", "ieee", F16), ("bfloat16", "bf16", "ieee", F32),
    ("int8", "i8", "ieee", I32), ("float64", "fp64", "ieee", F64),
]
PAIR_IDS = [f"{p[1]}-{p[2]}-{p[3]}" for p in PAIRS]
OUT_SIG = {F32: "fp32", F16: "fp16", I32: "i32", F64: "fp64"}
SHAPES = [(64, 64, 64), (70, 50, 77), (33, 17, 9)]  # square, ragged, K < BK


def operands(dtype, shape, seed):
    M, N, K = shape
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return (rng.integers(-128, 128, (M, K)).astype(np.int8), rng.integers(-128, 128, (K, N)).astype(np.int8))
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return (rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16),
                rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16))
    return rng.standard_normal((M, K)).astype(dtype), rng.standard_normal((K, N)).astype(dtype)


def run_dot(module, backend, dtype, precision, out, shape, config=(32, 32, 16), seed=0, num_warps=4):
    M, N, K = shape
    a, b = operands(dtype, shape, seed)
    out_np = {F32: np.float32, F16: np.float16, I32: np.int32, F64: np.float64}[out]
    c = np.zeros((M, N), out_np) + 7  # no output left unwritten
    bm, bn, bk = config
    grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
    module.dot_kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, PRECISION=precision, OUT=out,
                            num_warps=num_warps, backend=backend)
    return a, b, c


def tolerance(a, b, precision, out, bk=16):
    """Per element: each product's operand rounding, f32 accumulation over K,
    and an f16 result's rounding at each of the kernel's K steps, times
    |a| @ |b| (exact for i8)."""
    K = a.shape[1]
    if a.dtype == np.int8:
        return 0
    if a.dtype == np.float64:
        per = K * 2.0**-52
    else:
        # tf32: each operand truncated to 10 mantissa bits (2**-10 each, one way: the errors add up)
        per = {"ieee": 0.0, "tf32": 2.0**-9, "tf32x3": 2.0**-19}[precision] + K * 2.0**-23
    if out == F16:
        per += -(-K // bk) * 2.0**-11
    return per * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-6


def exact(a, b):
    if a.dtype == np.int8:
        return a.astype(np.int64) @ b.astype(np.int64)
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.fixture
def dot_module(kernel_module):
    return kernel_module(DOT_KERNEL)


# ---- the interpreter against float64 NumPy ---------------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_interpreter_matches_float64_numpy_within_the_precision(dot_module, pair, shape):
    dtype, _, precision, out = pair
    a, b, c = run_dot(dot_module, "interp", dtype, precision, out, shape)
    assert (np.abs(c.astype(np.float64) - exact(a, b)) <= tolerance(a, b, precision, out, bk=16)).all()


def test_tf32_truncates_the_operands_before_multiplying(dot_module):
    from mytriton.backends.interp import truncate_to_tf32

    a, b, c = run_dot(dot_module, "interp", "float32", "tf32", F32, (64, 64, 64))
    reference = truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64)
    np.testing.assert_allclose(c, reference, rtol=0, atol=64 * 2.0**-23 * 64)
    assert np.abs(c - exact(a, b)).max() > 1e-3  # far from the exact product: the truncation is there


def test_tf32x3_is_nearly_exact_and_ieee_is_f32_accurate(dot_module):
    for precision, bound in (("tf32x3", 1e-4), ("ieee", 1e-4)):
        a, b, c = run_dot(dot_module, "interp", "float32", precision, F32, (64, 64, 64))
        assert np.abs(c - exact(a, b)).max() < bound


def test_int8_accumulates_exactly_in_int32(dot_module):
    a, b, c = run_dot(dot_module, "interp", "int8", "ieee", I32, (40, 40, 200))
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, exact(a, b))


# ---- TF32 rounding: cvt.rna.tf32.f32, bit for bit --------------------------------------------


def cvt_rna_tf32(x: float) -> float:
    """One f32 rounded to TF32 as PTX's cvt.rna does: keep 10 mantissa
    bits, round to nearest with ties away from zero; NaN stays NaN."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    if x != x:
        return x
    sign, magnitude = bits & 0x80000000, bits & 0x7FFFFFFF
    dropped = magnitude & 0x1FFF
    kept = magnitude - dropped
    if dropped >= 0x1000:  # half or more of the last kept bit: away from zero
        kept += 0x2000
    return struct.unpack("<f", struct.pack("<I", sign | kept))[0]


def test_tf32_rounding_matches_cvt_rna_bit_for_bit(rng):
    values = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * 10.0 ** rng.integers(-30, 30, 2000),
        # ties in both directions, the largest finite value, subnormals, zeros, infinities, NaN
        np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 3.4028235e38, 1e-40, -1e-42, 0.0, -0.0,
                  np.inf, -np.inf, np.nan], np.float32),
    ]).astype(np.float32)
    got = round_to_tf32(values)
    want = np.array([cvt_rna_tf32(float(v)) for v in values], np.float32)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()
    assert round_to_tf32(np.float32([1 + 2**-11]))[0] == 1 + 2**-10  # a tie goes away from zero


def test_a_tf32_operand_is_truncated_to_19_bits_as_the_tensor_cores_read_it():
    from mytriton.backends.interp import truncate_to_tf32

    values = np.float32([1 + 2**-11, -(1 + 3 * 2**-11), 1 + 2**-10 + 2**-12, 3.4028235e38, 1e-40, 0.0, -0.0,
                         np.inf, -np.inf, np.nan])
    got = truncate_to_tf32(values)
    assert got.view(np.uint32).tolist()[:9] == (values.view(np.uint32) & 0xFFFFE000).tolist()[:9]
    assert got[0] == 1 and got[1] == -(1 + 2**-10) and got[2] == 1 + 2**-10  # toward zero, no ties
    assert np.isnan(got[-1])


def test_a_tf32_dot_multiplies_the_truncated_operands():
    from mytriton.backends.interp import dot_product, truncate_to_tf32

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 4)).astype(np.float32)
    want = truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64)
    np.testing.assert_allclose(dot_product(a, b, None, "tf32", np.dtype(np.float32)), want, rtol=1e-6, atol=1e-6)


# ---- the precision's default -----------------------------------------------------------------


def dot_line(body, **options):
    ssa = compile_text(kernel_source(body), "ssa", **options)
    return next(line for line in ssa.splitlines() if " = dot " in line)


F32_DOT = '''
@mytriton.jit
def k(a_ptr, c_ptr):
    i = tl.arange(0, 16)
    x = tl.load(a_ptr + i[:, None] * 16 + i[None, :])
    tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(x, x{args}))
'''


@pytest.mark.parametrize("args, precision", [
    ("", "tf32"), (", allow_tf32=True", "tf32"), (", allow_tf32=False", "ieee"),
    (", input_precision='ieee'", "ieee"), (", input_precision='TF32x3'", "tf32x3"),
])
def test_the_resolved_precision_is_in_the_ir(args, precision):
    assert f'input_precision="{precision}", out_dtype=f32' in dot_line(F32_DOT.format(args=args))


def test_the_f32_default_option_sets_the_precision_where_the_call_names_none():
    assert 'input_precision="ieee"' in dot_line(F32_DOT.format(args=""), f32_default="ieee")
    assert 'input_precision="tf32x3"' in dot_line(F32_DOT.format(args=", allow_tf32=False"), f32_default="tf32x3")
    assert 'input_precision="tf32"' in dot_line(F32_DOT.format(args=", input_precision='tf32'"), f32_default="ieee")


def test_mytriton_f32_default_is_read_into_the_cli_options(monkeypatch):
    from mytriton.cli import make_options

    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "IEEE")
    assert make_options().f32_default == "ieee"
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "fast")
    with pytest.raises(CompileError, match="MYTRITON_F32_DEFAULT must be one of tf32, tf32x3, ieee, got 'fast'"):
        make_options()


def test_the_jit_compiles_again_when_mytriton_f32_default_changes(dot_module, monkeypatch):
    results = []
    for precision in ("ieee", "tf32"):
        monkeypatch.setenv("MYTRITON_F32_DEFAULT", precision)
        results.append(run_dot(dot_module, "interp", "float32", None, F32, (32, 32, 32))[2])
    assert not np.array_equal(results[0], results[1])


def test_other_dtypes_are_ieee_whatever_the_call_says():
    text = dot_line('''
    @mytriton.jit
    def k(a_ptr, c_ptr):
        i = tl.arange(0, 16)
        x = tl.load(a_ptr + i[:, None] * 16 + i[None, :])
        tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(x, x, input_precision="tf32", out_dtype=tl.float16))
    ''', signature="*fp16, *fp16")
    assert 'input_precision="ieee", out_dtype=f16 : block<16x16 x f16>' in text


# ---- the IR text round trip and the type rule ------------------------------------------------


def test_the_attributes_survive_the_tree_and_ssa_text():
    from mytriton import compiler

    source = kernel_source(F32_DOT.format(args=", input_precision='tf32x3'"))
    tree = compile_text(source, "tree")
    assert 'input_precision="tf32x3", out_dtype=f32' in tree
    assert compiler.print_tree(compiler.read_tree(tree, "t")) == tree
    ssa = compiler.print_ssa(compiler.lower(compiler.read_tree(tree, "t")))
    assert 'input_precision="tf32x3", out_dtype=f32 : block<16x16 x f32>' in ssa
    assert compiler.print_ssa(compiler.verify(compiler.read_ssa(ssa, "s"))) == ssa


def test_stage_dots_carries_the_attributes_to_dot_shared():
    staged = compile_text(kernel_source(DOT_KERNEL), "staged", signature="*fp16, *fp16, *fp16, i32, i32, i32",
                          defines={"BM": 32, "BN": 32, "BK": 16, "PRECISION": None, "OUT": F16}, num_stages=1)
    assert 'dot_shared %0, %1, %' in staged
    assert 'input_precision="ieee", out_dtype=f16 : block<32x32 x f16>' in staged


def test_ir_without_the_attributes_means_ieee():
    from mytriton import compiler

    ssa = compile_text(kernel_source(F32_DOT.format(args="")), "ssa")
    bare = ssa.replace(', input_precision="tf32", out_dtype=f32', "")
    kernel = compiler.verify(compiler.read_ssa(bare, "s"))
    dot = next(op for op in kernel.body.ops if op.name == "dot")
    assert dot.attrs == {}
    from mytriton.ir.opdefs import dot_input_precision

    assert dot_input_precision(dot.attrs) == "ieee"


def refused_ssa(edit_from, edit_to):
    from mytriton import compiler

    ssa = compile_text(kernel_source(F32_DOT.format(args="")), "ssa")
    assert edit_from in ssa
    with pytest.raises(CompileError) as info:
        compiler.verify(compiler.read_ssa(ssa.replace(edit_from, edit_to), "s"))
    return str(info.value)


def test_the_verifier_refuses_an_unknown_precision():
    assert "input_precision must be one of tf32, tf32x3, ieee, got 'fast'" in \
        refused_ssa('input_precision="tf32"', 'input_precision="fast"')


def test_the_verifier_refuses_an_out_dtype_the_operands_cannot_give():
    assert "of f32 operands gives f32, not out_dtype=f16" in refused_ssa("out_dtype=f32", "out_dtype=f16")


TYPED_DOT = '''
@mytriton.jit
def k(a_ptr, b_ptr, c_ptr):
    i = tl.arange(0, 16)
    x = tl.load(a_ptr + i[:, None] * 16 + i[None, :])
    y = tl.load(b_ptr + i[:, None] * 16 + i[None, :])
    tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(x, y{args}))
'''


@pytest.mark.parametrize("signature, args, message", [
    ("*fp16, *bf16, *fp32", "", "operands must have one element type"),
    ("*fp32, *fp64, *fp32", "", "operands must have one element type"),
    ("*u8, *u8, *i32", "", "takes f32, f16, bf16, f64 or i8 blocks"),
    ("*i32, *i32, *i32", "", "takes f32, f16, bf16, f64 or i8 blocks"),
    ("*fp16, *fp16, *fp32", ", out_dtype=tl.bfloat16", "out_dtype=bfloat16 is unsupported"),
    ("*fp16, *fp16, *fp32", ", out_dtype=tl.int32", "out_dtype of f16 operands must be float32 or float16"),
    ("*fp32, *fp32, *fp32", ", input_precision='fast'", "input_precision must be one of"),
    ("*fp32, *fp32, *fp32", ", input_precision='tf32', allow_tf32=True", "only one of input_precision and allow_tf32"),
    ("*fp32, *fp32, *fp32", ", allow_tf32=1", "allow_tf32 must be True or False"),
    ("*fp32, *fp32, *fp32", ", max_num_imprecise_acc=-1", "max_num_imprecise_acc must be a non-negative"),
    ("*fp32, *fp32, *fp32", ", tl.zeros((16, 16), tl.float16)", "the accumulator of 'dot' must be block<16x16 x f32>"),
    ("*i8, *i8, *i32", ", tl.zeros((16, 16), tl.float32)", "the accumulator of 'dot' must be block<16x16 x i32>"),
])
def test_wrong_combinations_are_located_errors(signature, args, message):
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(TYPED_DOT.format(args=args)), "ssa", file="k.py", signature=signature)
    assert message in info.value.message
    assert info.value.loc is not None and info.value.loc.line == 9


def test_a_dot_needs_dimensions_of_at_least_16():
    body = TYPED_DOT.replace("tl.arange(0, 16)", "tl.arange(0, 8)").format(args="")
    with pytest.raises(CompileError, match="dimensions must be at least 16"):
        compile_text(kernel_source(body), "ssa", file="k.py")


def test_the_cli_reports_a_bad_dot_with_its_source_line(tmp_kernel, capsys):
    from mytriton.cli import main

    path = tmp_kernel(TYPED_DOT.format(args=", out_dtype=tl.bfloat16"))
    with pytest.raises(SystemExit) as info:
        main(["compile", str(path), "-s", "*fp16, *fp16, *fp32", "--emit=ssa"], standalone_mode=True)
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert ":9:" in err and "error: tl.dot: out_dtype=bfloat16 is unsupported" in err and "Traceback" not in err


# ---- CUDA: every pair builds with nvcc -------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_the_cuda_of_each_pair_builds(pair):
    from mytriton.backends.cuda.nvcc import compile_ptx

    _, sig, precision, out = pair
    cuda = compile_text(kernel_source(DOT_KERNEL), "cuda", signature=f"*{sig}, *{sig}, *{OUT_SIG[out]}, i32, i32, i32",
                        defines={"BM": 32, "BN": 32, "BK": 16, "PRECISION": precision, "OUT": out})
    ptx = compile_ptx(cuda, "sm_90")
    # tf32x3 rounds its big/small split; tf32 gives the tensor cores the f32 bits (they read 19)
    assert ("cvt.rna.tf32.f32" in ptx) == (precision == "tf32x3")
    if out == F16:
        assert "cvt.rn.f16.f32" in ptx  # accumulated in f32, rounded once


@pytest.mark.nvcc
def test_the_general_path_converts_operands_too():
    from mytriton.backends.cuda.nvcc import compile_ptx

    body = DOT_KERNEL.replace("tl.dot(a, b,", "tl.dot(a * 2.0, b,")
    cuda = compile_text(kernel_source(body), "cuda", signature="*fp32, *fp32, *fp32, i32, i32, i32",
                        defines={"BM": 32, "BN": 32, "BK": 16, "PRECISION": "tf32x3", "OUT": F32})
    assert "registers to shared memory" in cuda
    assert "cvt.rna.tf32.f32" in compile_ptx(cuda, "sm_90")


# ---- the GPU against the interpreter ---------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config, num_warps", [((32, 32, 16), 4), ((64, 64, 32), 8), ((16, 16, 16), 1)])
def test_the_gpu_matches_the_interpreter(dot_module, pair, shape, config, num_warps):
    dtype, _, precision, out = pair
    a, b, gpu = run_dot(dot_module, "cuda", dtype, precision, out, shape, config, num_warps=num_warps)
    _, _, interp = run_dot(dot_module, "interp", dtype, precision, out, shape, config)
    if dtype == "int8":
        np.testing.assert_array_equal(gpu, interp)
    else:
        # the same rounded operands, summed in another order (an f16 result rounded at each K step)
        K = shape[2]
        bound = (2 * K * 2.0**-23 + (-(-K // config[2]) * 2.0**-10 if out == F16 else 0)) * (
            np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-6
        assert (np.abs(gpu.astype(np.float64) - interp.astype(np.float64)) <= bound).all()
    assert (np.abs(gpu.astype(np.float64) - exact(a, b)) <= tolerance(a, b, precision, out, config[2])).all()
