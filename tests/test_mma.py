"""tl.dot on tensor cores: which dots the layouts stage puts there, that the
CUDA builds for each operand type, warp count and tile, with mma.sync and
ldmatrix in the PTX, and (on the H200) the results against NumPy."""
import numpy as np
import pytest

import mytriton
from conftest import compile_text, kernel_source
from mytriton.backends.interp import truncate_to_tf32
from mytriton.passes.dot_layouts import mma_warps

# The tiled matmul of samples/matmul.py with the operand type, the dot's
# precision and the accumulator's type filled in.
MATMUL = '''
    @mytriton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), {acc})
        for k in range(0, K, BK):
            a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                        mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0)
            b = tl.load(b_ptr + (k + offs_k)[:, None] * N + offs_n[None, :],
                        mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0)
            acc += tl.dot(a, b{precision})
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
'''
# operand type -> (signature element, accumulator, tl.dot's extra argument)
KINDS = {
    "f16": ("fp16", "tl.float32", ""),
    "bf16": ("bf16", "tl.float32", ""),
    "tf32": ("fp32", "tl.float32", ', input_precision="tf32"'),
    "tf32x3": ("fp32", "tl.float32", ', input_precision="tf32x3"'),
    "i8": ("i8", "tl.int32", ""),
}
INSTRUCTIONS = {"f16": "m16n8k16.row.col.f32.f16.f16.f32", "bf16": "m16n8k16.row.col.f32.bf16.bf16.f32",
                "tf32": "m16n8k8.row.col.f32.tf32.tf32.f32", "tf32x3": "m16n8k8.row.col.f32.tf32.tf32.f32",
                "i8": "m16n8k32.row.col.s32.s8.s8.s32"}


def matmul_source(kind: str) -> str:
    _, acc, precision = KINDS[kind]
    return kernel_source(MATMUL.replace("{acc}", acc).replace("{precision}", precision))


def signature(kind: str) -> str:
    element, acc, _ = KINDS[kind]
    return f"*{element}, *{element}, *{'i32' if acc == 'tl.int32' else 'fp32'}, i32, i32, i32"


def compile_matmul(kind, config, num_warps, emit, num_stages=None, **options):
    """mma.sync's layouts: the choice for sm_80 (on sm_90, the default, f16 and
    bf16 dots that fit take wgmma instead: tests/test_wgmma.py)."""
    options.setdefault("arch", "sm_80")
    bm, bn, bk = config
    return compile_text(matmul_source(kind), emit, signature=signature(kind), num_warps=num_warps,
                        defines={"BM": bm, "BN": bn, "BK": bk}, num_stages=num_stages, **options)


# ---- the layouts stage's choice -----------------------------------------------------------------


@pytest.mark.parametrize("shape,num_warps,expected", [
    ((64, 64), 4, (2, 2)), ((128, 128), 8, (4, 2)), ((16, 128), 4, (1, 4)), ((128, 16), 4, (4, 1)),
    ((64, 64), 1, (1, 1)), ((16, 8), 1, (1, 1)), ((32, 32), 8, (2, 4)),
])
def test_warps_split_the_tile_as_tritons_warps_per_tile(shape, num_warps, expected):
    assert mma_warps(*shape, num_warps) == expected


def test_a_tile_with_fewer_blocks_than_warps_stays_on_cuda_cores():
    assert mma_warps(16, 16, 8) is None
    layouts = compile_matmul("f16", (16, 16, 16), 8, "layouts")
    assert "mma<" not in layouts


def test_the_accumulator_is_carried_in_the_mma_layout_and_moved_once_for_its_store():
    layouts = compile_matmul("f16", (64, 64, 32), 4, "layouts")
    assert "#mma0 = mma<version=2, warps_per_cta=[2, 2], instr_shape=[16, 8]>" in layouts
    loop, after = layouts.split(" = for ", 1)[1].split("yield", 1)
    assert "convert_layout" not in loop
    assert after.count("convert_layout") == 1  # C's rows are contiguous, their alignment unknown
    assert "padded_shared<pad=8, order=[1, 0]>" in layouts


def test_an_f32_dot_at_ieee_precision_stays_exact_on_cuda_cores():
    source = kernel_source(MATMUL.replace("{acc}", "tl.float32").replace("{precision}", ', input_precision="ieee"'))
    layouts = compile_text(source, "layouts", signature="*fp32, *fp32, *fp32, i32, i32, i32",
                           defines={"BM": 64, "BN": 64, "BK": 32})
    assert "mma<" not in layouts


def test_an_f32_dot_without_a_precision_is_tf32_on_tensor_cores_as_in_triton():
    source = kernel_source(MATMUL.replace("{acc}", "tl.float32").replace("{precision}", ""))
    layouts = compile_text(source, "layouts", signature="*fp32, *fp32, *fp32, i32, i32, i32",
                           defines={"BM": 64, "BN": 64, "BK": 32})
    assert 'input_precision="tf32"' in layouts
    assert "mma<" in layouts


def test_tf32x3_issues_three_products_per_block():
    cuda = compile_matmul("tf32x3", (64, 64, 32), 4, "cuda")
    assert cuda.count("mma.sync.aligned.m16n8k8") == 3
    assert "a_small" in cuda and "b_small" in cuda
    assert "a_small" not in compile_matmul("tf32", (64, 64, 32), 4, "cuda")


def test_a_tf32_a_is_read_by_ldmatrix_eight_rows_of_four_from_each_lane_s_first_element():
    """An 8x8 matrix of b16 pairs is 8 rows of 4 f32: ldmatrix gives lane l
    row l / 4, element l % 4, the TF32 A fragment's (g, t). B, row-major,
    is read element by element (ldmatrix cannot transpose 32-bit elements)."""
    for kind in ("tf32", "tf32x3"):
        cuda = compile_matmul(kind, (64, 64, 32), 4, "cuda")
        assert "const unsigned a_lane = (unsigned)__cvta_generic_to_shared(" in cuda
        assert '"r"(a_lane + (rm * 32 * 36 + kk) * 4)' in cuda
        assert cuda.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 1
        assert "b_frag[rn][1] = __float_as_uint(" in cuda or "b_small[rn][1]" in cuda
    # tf32x3 splits what ldmatrix read into the TF32 rounding and the rest
    assert "const float x = __uint_as_float(a_frag[rm][3]);" in compile_matmul("tf32x3", (64, 64, 32), 4, "cuda")


def test_tf32_pads_b_rows_by_8_and_a_rows_by_4():
    layouts = compile_matmul("tf32", (64, 64, 32), 4, "layouts", num_stages=1)
    assert "shared<64x32 x f32, #padded_shared0>" in layouts
    assert "#padded_shared0 = padded_shared<pad=4, order=[1, 0]>" in layouts
    assert "#padded_shared1 = padded_shared<pad=8, order=[1, 0]>" in layouts


def test_padding_is_dropped_where_the_padded_buffers_would_not_fit_48_kib():
    # 128x64 + 64x64 f32 buffers fill 48 KiB exactly (a GPU that cannot opt in
    # to more); their TF32 padding would not fit
    layouts = compile_matmul("tf32", (128, 64, 64), 4, "layouts", shared_budget=48 * 1024)
    assert "#padded_shared0 = padded_shared<pad=0, order=[1, 0]>" in layouts and "#mma0" in layouts
    assert "padded_shared<pad=4, order=[1, 0]>" in compile_matmul("tf32", (64, 64, 64), 4, "layouts")


def test_an_unknown_input_precision_is_a_located_error():
    from mytriton.diagnostics import CompileError

    source = kernel_source(MATMUL.replace("{acc}", "tl.float32").replace("{precision}", ', input_precision="tf16"'))
    with pytest.raises(CompileError, match="input_precision must be one of 'tf32', 'tf32x3', 'ieee'"):
        compile_text(source, "ssa", defines={"BM": 64, "BN": 64, "BK": 32})


# ---- nvcc builds ----------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("config,num_warps", [((16, 16, 32), 1), ((32, 64, 32), 2), ((64, 64, 32), 4),
                                              ((128, 128, 32), 8), ((128, 32, 64), 4)])
def test_each_operand_type_builds_with_mma_sync(kind, config, num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(compile_matmul(kind, config, num_warps, "cuda"), "sm_90")
    assert f"mma.sync.aligned.{INSTRUCTIONS[kind]}" in ptx
    if kind in ("f16", "bf16"):
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx or \
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in ptx
    if kind in ("i8", "tf32", "tf32x3"):
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    if kind == "tf32x3":
        assert "cvt.rna.tf32.f32" in ptx  # the big/small split rounds
    if kind == "tf32":
        assert "cvt.rna.tf32.f32" not in ptx  # the f32 bits as they are, as Triton gives them
    assert ".local" not in ptx  # fragments and accumulators stay in registers


# ---- on the GPU ------------------------------------------------------------------------------------


def operands(kind, M, N, K, rng):
    if kind == "i8":
        return (rng.integers(-128, 128, (M, K)).astype(np.int8), rng.integers(-128, 128, (K, N)).astype(np.int8))
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    if kind == "f16":
        return a.astype(np.float16), b.astype(np.float16)
    if kind == "bf16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    return a, b


def reference(kind, a, b):
    if kind == "i8":
        return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    if kind == "tf32":  # the tensor cores read the top 19 bits of the f32 operands
        a, b = truncate_to_tf32(a), truncate_to_tf32(b)
    return a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)


def run_mma_matmul(kernel_module, kind, config, shape, num_warps=4, seed=0):
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a, b = operands(kind, M, N, K, rng)
    c = np.full((M, N), -7 if kind == "i8" else np.nan, np.int32 if kind == "i8" else np.float32)
    _, acc, precision = KINDS[kind]
    kernel = kernel_module(MATMUL.replace("{acc}", acc).replace("{precision}", precision)).matmul_kernel
    kernel[(mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk,
                                                         num_warps=num_warps, backend="cuda")
    expected = reference(kind, a, b)
    if kind == "i8":
        np.testing.assert_array_equal(c, expected)
    elif kind == "tf32x3":  # near f32: three TF32 products carry about 21 bits of each operand
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4 * np.sqrt(K))
    else:
        # f32 accumulation of exact products: the order of the sums differs
        np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3 * np.sqrt(K))


SHAPES = [(128, 128, 128), (70, 50, 77), (33, 17, 9), (200, 136, 96)]


@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("config", [(16, 16, 32), (64, 64, 32), (128, 128, 32), (32, 128, 64), (128, 32, 64)])
@pytest.mark.parametrize("shape", SHAPES)
def test_tensor_core_matmul_matches_numpy_on_the_gpu(kernel_module, kind, config, shape):
    run_mma_matmul(kernel_module, kind, config, shape, seed=sum(config) + sum(shape))


@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_tensor_core_matmul_runs_on_1_to_8_warps(kernel_module, kind, num_warps):
    run_mma_matmul(kernel_module, kind, (64, 128, 32), (150, 260, 100), num_warps=num_warps, seed=num_warps)


# The epilogue works on the accumulator where it is: a row reduction, a scale
# and a cast to f16 read the mma layout's slots (the f16 store converts).
EPILOGUE = '''
    @mytriton.jit
    def dot_epilogue(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_n = tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                        mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k + offs_k)[:, None] * N + offs_n[None, :],
                        mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        row_max = tl.max(acc, axis=1)
        tl.store(s_ptr + offs_m, tl.sum(acc - row_max[:, None], axis=1), mask=offs_m < M)
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], (acc * 0.5).to(tl.float16),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
'''
EPILOGUE_SIGNATURE = "*fp16, *fp16, *fp16, *fp32, i32, i32, i32"


def test_an_epilogue_reads_the_accumulator_in_its_mma_layout():
    layouts = compile_text(kernel_source(EPILOGUE), "layouts", signature=EPILOGUE_SIGNATURE,
                           defines={"BM": 64, "BN": 64, "BK": 32}, num_stages=1)
    assert "max %" in layouts and "#slice" in layouts
    assert "dot_shared %0, %1, %" in layouts and "#mma0" in layouts.split("dot_shared")[1].split("\n")[0]


@pytest.mark.nvcc
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_an_epilogue_on_the_mma_accumulator_builds(num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(EPILOGUE), "cuda", signature=EPILOGUE_SIGNATURE, num_warps=num_warps,
                        defines={"BM": 64, "BN": 64, "BK": 32}, arch="sm_80")
    assert "mma.sync" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_an_epilogue_on_the_mma_accumulator_matches_numpy_on_the_gpu(kernel_module, num_warps):
    M, N, K = 100, 64, 80
    rng = np.random.default_rng(num_warps)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    s = np.full(M, np.nan, np.float32)
    kernel = kernel_module(EPILOGUE).dot_epilogue
    kernel[(mytriton.cdiv(M, 64),)](a, b, c, s, M, N, K, BM=64, BN=64, BK=32, num_warps=num_warps, backend="cuda")
    full = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), full * 0.5, rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(s, (full - full.max(axis=1, keepdims=True)).sum(axis=1), rtol=1e-3, atol=1e-1)


# A dot of computed tiles (not the canonical loads stage-dots stages) runs on
# tensor cores too: its operands go from registers to scratch shared memory.
SCALED = '''
    @mytriton.jit
    def scaled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ks = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :],
                        mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :],
                        mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a * 2.0, b, acc)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
'''


@pytest.mark.nvcc
def test_a_dot_of_computed_f16_tiles_builds_on_tensor_cores():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(SCALED), "cuda", signature="*fp16, *fp16, *fp32, i32, i32, i32",
                        defines={"BM": 32, "BN": 32, "BK": 16})
    assert "dot operand a: registers to shared memory" in cuda
    assert "ldmatrix" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
def test_a_dot_of_computed_f16_tiles_matches_numpy_on_the_gpu(kernel_module):
    M, N, K = 50, 70, 45
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    kernel = kernel_module(SCALED).scaled_matmul
    kernel[(mytriton.cdiv(M, 32), mytriton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16, backend="cuda")
    np.testing.assert_allclose(c, 2 * a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-2)


def test_emit_cuda_refuses_an_mma_layout_its_dot_cannot_take():
    """Hand-edited laid-out SSA: an mma layout on a dot of f64 operands, and
    on an int8 dot whose K is not a multiple of m16n8k32's, are located errors."""
    from mytriton import compiler
    from mytriton.diagnostics import CompileError

    f16 = compile_matmul("f16", (64, 64, 32), 4, "layouts")
    with pytest.raises(CompileError, match="a dot of f64 operands cannot run on tensor cores") as caught:
        compiler.emit_cuda(compiler.read_ssa(f16.replace("f16", "f64"), "k.ssa"))
    assert caught.value.loc is not None
    i8 = compile_matmul("i8", (64, 64, 32), 4, "layouts").replace("32)", "16)").replace("64x32", "64x16")
    i8 = i8.replace("32x64", "16x64").replace(", 32)", ", 16)")
    with pytest.raises(CompileError, match="steps K by 32 for i8 operands; K = 16"):
        compiler.emit_cuda(compiler.read_ssa(i8, "k.ssa"))
