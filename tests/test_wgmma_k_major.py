"""A B tile contiguous along K in memory (x @ w.T with w stored [N, K];
attention's K^T): with its row stride specialised to 1, the layouts stage
stores it column-major (``nvmma_shared<order=[0, 1]>``), the copy fills it in
16-byte cp.async chunks walking the tile column by column, and wgmma reads it
as a K-major B (``imm-trans-b`` 0). Checked here: the address rule against
the hardware's swizzle, the CUDA, ptxas's build; on the H200, the results
against NumPy and the interpreter for tiles, warps, stages, dtypes and
ragged shapes."""
import re

import numpy as np
import pytest

from conftest import ROOT, cdiv, compile_text, tiered
from test_wgmma import _compile, ptxas_notes

from mytriton.backends.cuda.dots import place
from mytriton.ir.layout_attributes import NvmmaShared
from mytriton.types import F16, SharedType

KERNEL = ROOT / "tests" / "triton_style" / "matmul_transposed_b.py"
SOURCE = KERNEL.read_text()


def signature(dtype: str = "fp16", stride_bk: str = "1") -> str:
    """A launch's specialisation: 16-byte aligned pointers and row strides, unit column strides."""
    return (f"*{dtype}:16, *{dtype}:16, *{dtype}:16, i32, i32, i32, "
            f"i32:16, i32:1, i32:16, i32:{stride_bk}, i32:16, i32:1")


def compiled(emit: str, config=(64, 64, 64), num_warps: int = 4, num_stages: int = 3, tma: bool = True,
             **sig) -> str:
    bm, bn, bk = config
    return compile_text(SOURCE, emit, signature=signature(**sig), num_warps=num_warps, num_stages=num_stages,
                        defines={"BM": bm, "BN": bn, "BK": bk}, arch="sm_90a", tma=tma)


def b_copy(cuda: str) -> str:
    """The text of the first copy into B's buffer (up to the next copy or commit)."""
    start = cuda.index("into", cuda.index("of b_ptr"))
    return cuda[start:cuda.index("cp.async.commit_group", start)]


# ---- the address rule ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,swizzle", [((64, 64), 128), ((128, 32), 128), ((32, 64), 64), ((16, 128), 32)])
def test_a_column_major_place_is_the_swizzled_address_of_the_transposed_tile(shape, swizzle):
    """Element (r, c) of a column-major [R, C] buffer is element (c, r) of the
    row-major [C, R] one: columns of R elements, swizzled as rows are."""
    rows, cols = shape
    column_major = place(SharedType(shape, F16, NvmmaShared(swizzle, (0, 1))), "r", "c")
    row_major = place(SharedType((cols, rows), F16, NvmmaShared(swizzle)), "r", "c")
    at, transposed_at = _compile(column_major), _compile(row_major)
    assert sorted(at(r, c) for r in range(rows) for c in range(cols)) == list(range(rows * cols))
    assert all(at(r, c) == transposed_at(c, r) for r in range(rows) for c in range(cols))


def test_a_column_major_buffer_needs_whole_swizzle_columns_and_8_column_groups():
    layout = NvmmaShared(128, (0, 1))
    assert layout.buffer_problem((64, 8), 2) is None
    assert "columns of whole 128-byte blocks" in layout.buffer_problem((32, 8), 2)
    assert layout.buffer_problem((64, 12), 2) is not None


# ---- the layouts stage ------------------------------------------------------------------------------------


def test_a_b_row_stride_not_known_to_be_1_keeps_b_row_major():
    text = compiled("layouts", stride_bk="16")
    assert "order=[0, 1]" not in text


@pytest.mark.parametrize("config,num_warps,instr", [((64, 64, 64), 4, "[16, 64, 16]"),
                                                    ((128, 256, 64), 8, "[16, 256, 16]"),
                                                    ((64, 32, 16), 4, "[16, 32, 16]")])
def test_a_k_major_b_takes_any_n_multiple_of_8_up_to_256(config, num_warps, instr):
    """N is not cut into swizzle-wide column blocks: wgmma's N runs over B's
    rows (its swizzle is K's: 32 bytes for BK = 16)."""
    text = compiled("layouts", config, num_warps)
    assert "order=[0, 1]" in text
    assert f"instr_shape={instr}" in text


# ---- the CUDA ------------------------------------------------------------------------------------------------


def test_the_k_major_copy_moves_16_bytes_a_chunk_with_no_element_fallback():
    copy = b_copy(compiled("cuda", tma=False))  # by cp.async (TMA would make it: test_tma_copies.py)
    assert "column by column" in copy
    assert "16-byte chunks: the base, row stride and column offset are multiples (axis info)" in copy
    assert "cp.async.cg.shared.global [%0], [%1], 16" in copy
    assert "element by element" not in copy


def test_a_w_row_stride_of_unknown_alignment_is_checked_at_run_time():
    """stride_bn (w's row stride) not known to be a multiple of 8: in the
    cp.async build (the one a launch whose stride no tensor map takes runs),
    chunks where it is, element by element where it is not (K = 70)."""
    sig = "*fp16:16, *fp16:16, *fp16:16, i32, i32, i32, i32:16, i32:1, i32, i32:1, i32:16, i32:1"
    cuda = compile_text(SOURCE, "cuda", signature=sig, defines={"BM": 64, "BN": 64, "BK": 64}, arch="sm_90a",
                        tma=False)
    copy = b_copy(cuda)
    assert re.search(r"stride_bn % 8 == 0 .*\{  // 16-byte chunks", copy)
    assert "element by element" in copy


def test_wgmma_reads_the_column_major_b_k_major():
    cuda = compiled("cuda")
    products = [line for line in cuda.splitlines() if "wgmma.mma_async" in line]
    assert products and all("p, 1, 1, 0, 0;" in line for line in products)  # imm-trans-b 0
    # B's descriptor: 128-byte swizzle, no leading offset, 8-row groups 1024 bytes apart (as A's)
    assert "b_desc = (0x4000004000000000ull | " in cuda and "a_desc = (0x4000004000000000ull | " in cuda
    assert '"l"(b_desc + 2)' in cuda  # the second k16 step: 32 bytes along each 128-byte row


@pytest.mark.nvcc
@pytest.mark.parametrize("config,num_warps", tiered([((64, 64, 64), 4), ((128, 128, 32), 4), ((128, 256, 64), 8),
                                                     ((64, 64, 128), 4), ((64, 32, 16), 4)], fast=[((64, 64, 64), 4)]))
def test_the_k_major_matmul_builds_for_sm_90a_with_its_wgmma_pipelined(tmp_path, config, num_warps):
    notes = ptxas_notes(compiled("cuda", config, num_warps), tmp_path)
    assert "C7514" not in notes and "C7515" not in notes and "C7517" not in notes


ATTENTION = (ROOT / "tests" / "triton_style" / "fused_attention.py").read_text()


def test_attention_copies_k_transposed_in_chunks_into_a_k_major_buffer():
    """Tutorial 06 reads K^T ([HEAD_DIM, BLOCK_N], contiguous along HEAD_DIM):
    launched with its strides, stride_kk is 1 and K's tile is chunked."""
    ints = ["i32:16", "i32:16", "i32:16", "i32:1"] * 4 + ["i32", "i32:16", "i32:16"]
    sig = "*fp16:16, *fp16:16, *fp16:16, fp32, *fp32:16, *fp16:16, " + ", ".join(ints)
    cuda = compile_text(ATTENTION, "cuda", kernel="_attn_fwd", signature=sig, arch="sm_90a",
                        defines=dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGE=1))
    assert "column-major, 128-byte swizzle" in cuda
    assert "element by element" not in cuda
    qk = [line for line in cuda.splitlines() if "wgmma.mma_async" in line and "A from" not in line][0]
    assert "p, 1, 1, 0, 0;" in qk


def test_an_f32_x_at_w_transposed_is_a_tf32_wgmma_with_both_operands_k_major():
    """wgmma reads tf32 operands K-major only: with B's copy contiguous along
    K, a TF32 dot (f32's default precision) takes m64nNk8, whose PTX has no
    transpose operands."""
    layouts = compiled("layouts", (64, 64, 32), dtype="fp32")
    assert "mma<version=3, warps_per_cta=[4, 1], instr_shape=[16, 64, 8]>" in layouts
    cuda = compiled("cuda", (64, 64, 32), dtype="fp32")
    products = [line for line in cuda.splitlines() if "wgmma.mma_async" in line]
    assert products and all("m64n64k8.f32.tf32.tf32" in line and "p, 1, 1;" in line for line in products)


def test_an_f32_matmul_with_b_contiguous_along_n_keeps_tf32_on_mma_sync():
    """A tf32 B contiguous along N would be copied 4 bytes at a time into a
    K-major buffer; that copy was slower on the H200 than mma.sync."""
    text = compile_text(SOURCE, "layouts", signature=signature("fp32", stride_bk="16").replace(
        "i32:16, i32:1, i32:16, i32:16", "i32:16, i32:1, i32:1, i32:16"), defines={"BM": 64, "BN": 64, "BK": 32},
        arch="sm_90a")
    assert "mma<version=2" in text and "nvmma_shared" not in text


def test_an_exact_f32_x_at_w_transposed_stays_on_cuda_cores():
    source = SOURCE.replace("acc = tl.dot(a, b, acc)", 'acc = tl.dot(a, b, acc, input_precision="ieee")')
    text = compile_text(source, "layouts", signature=signature("fp32"), defines={"BM": 64, "BN": 64, "BK": 32},
                        arch="sm_90a")
    assert "mma<" not in text and "order=[0, 1]" not in text


@pytest.mark.nvcc
def test_the_tf32_wgmma_builds_for_sm_90a(tmp_path):
    notes = ptxas_notes(compiled("cuda", (128, 128, 32), dtype="fp32"), tmp_path)
    assert "C7514" not in notes and "C7515" not in notes and "C7517" not in notes


# ---- edited IR the back end refuses ----------------------------------------------------------------------


def emitted(text: str):
    from mytriton.ir.ssa_text import parse_kernel
    from mytriton.compiler import emit_cuda
    return emit_cuda(parse_kernel(text, "k.ssa"))


def test_a_column_major_a_of_a_tf32_wgmma_dot_is_a_located_error():
    """wgmma transposes 16-bit operands only (tests/test_wgmma_m_major.py: an
    f16 A may be column-major)."""
    from mytriton.diagnostics import CompileError
    text = compiled("layouts", (64, 64, 32), dtype="fp32")
    rows, cols = "nvmma_shared<swizzle=128, order=[1, 0]>", "nvmma_shared<swizzle=128, order=[0, 1]>"
    edited = text.replace(rows, "\0").replace(cols, rows).replace("\0", cols)  # A and B swap orders
    assert edited != text
    with pytest.raises(CompileError, match=r"TF32 wgmma dot reads A K-major: its buffer needs order=\[1, 0\]") \
            as info:
        emitted(edited)
    assert info.value.loc is not None


def test_a_tf32_wgmma_dot_of_a_row_major_b_is_a_located_error():
    from mytriton.diagnostics import CompileError
    text = compiled("layouts", (64, 64, 32), dtype="fp32")
    edited = text.replace("order=[0, 1]", "order=[1, 0]")
    with pytest.raises(CompileError, match=r"TF32 wgmma dot reads B K-major"):
        emitted(edited)


def test_an_mma_sync_dot_of_swizzled_buffers_is_a_located_error():
    from mytriton.diagnostics import CompileError
    text = compile_text(SOURCE, "layouts", signature=signature(), defines={"BM": 64, "BN": 64, "BK": 64},
                        arch="sm_80")
    edited = text.replace("padded_shared<pad=8, order=[1, 0]>", "nvmma_shared<swizzle=128, order=[1, 0]>")
    assert edited != text
    with pytest.raises(CompileError, match="only a dot in a version-3 .wgmma. mma layout reads nvmma_shared"):
        emitted(edited)


def test_an_fma_dot_of_swizzled_buffers_is_a_located_error():
    from mytriton.diagnostics import CompileError
    source = SOURCE.replace("acc = tl.dot(a, b, acc)", 'acc = tl.dot(a, b, acc, input_precision="ieee")')
    text = compile_text(source, "layouts", signature=signature("fp32"), defines={"BM": 64, "BN": 64, "BK": 32},
                        arch="sm_90a")
    edited = re.sub(r"(#padded_shared\d+ = )padded_shared<pad=\d+, order=\[1, 0\]>",
                    r"\1nvmma_shared<swizzle=128, order=[1, 0]>", text)
    assert edited != text
    with pytest.raises(CompileError, match="only a dot in a version-3 .wgmma. mma layout reads nvmma_shared"):
        emitted(edited)


# ---- the H200 ------------------------------------------------------------------------------------------------


def load_kernel():
    import importlib.util
    spec = importlib.util.spec_from_file_location("matmul_transposed_b_k_major", KERNEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def linear_case(dtype: str, shape, config, num_warps: int, num_stages: int, backend: str = "cuda"):
    M, N, K = shape
    np_type = {"f16": np.float16, "f32": np.float32}.get(dtype) or pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(M * N + K)
    x = rng.standard_normal((M, K)).astype(np_type)
    w = rng.standard_normal((N, K)).astype(np_type)
    module = load_kernel()
    bm, bn, bk = config
    c = np.full((M, N), np.nan, np_type)
    strides = [s // t.itemsize for t in (x, w, c) for s in t.strides]
    module.matmul_transposed_b[(cdiv(M, bm), cdiv(N, bn))](x, w, c, M, N, K, *strides, BM=bm, BN=bn, BK=bk,
                                                           num_warps=num_warps, num_stages=num_stages,
                                                           backend=backend)
    exact = x.astype(np.float64) @ w.astype(np.float64).T
    tol = {"f16": 2e-2, "f32": 3e-2}.get(dtype, 6e-2) * max(1.0, np.sqrt(K) / 8)  # f32: TF32 products
    np.testing.assert_allclose(c.astype(np.float64), exact, rtol=tol, atol=tol)
    return c


def test_the_gpu_case_checks_the_interpreter_against_numpy_here():
    linear_case("f16", (37, 24, 40), (64, 64, 32), 4, 3, backend="interp")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("config,num_warps,num_stages", [((64, 64, 64), 4, 3), ((128, 128, 32), 4, 4),
                                                         ((128, 256, 64), 8, 3), ((64, 64, 128), 4, 1),
                                                         ((64, 32, 16), 4, 2)])
@pytest.mark.parametrize("shape", [(300, 260, 200), (77, 50, 24), (256, 256, 72), (83, 95, 70)])
def test_x_at_w_transposed_on_the_gpu_matches_numpy(dtype, config, num_warps, num_stages, shape):
    linear_case(dtype, shape, config, num_warps, num_stages)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,tol", [("f16", 2e-3), ("f32", 2e-2)])
def test_x_at_w_transposed_on_the_gpu_matches_the_interpreter(dtype, tol):
    """f16: the same products, summed in another order. f32: the interpreter
    rounds each operand to TF32 (as mma.sync's cvt.rna does); wgmma reads the
    f32 bits from shared memory and drops the low 13, so results differ by up
    to an operand ulp of TF32 a product."""
    ours = linear_case(dtype, (150, 70, 96), (64, 64, 32), 4, 3)
    theirs = linear_case(dtype, (150, 70, 96), (64, 64, 32), 4, 3, backend="interp")
    np.testing.assert_allclose(ours.astype(np.float32), theirs.astype(np.float32), rtol=tol, atol=tol)
