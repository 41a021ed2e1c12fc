"""An A tile contiguous along M in memory (``tl.dot(tl.trans(a), b)`` with a
stored [K, M]; a.T @ b): with its stride along M specialised to 1, the
layouts stage stores it column-major (``nvmma_shared<order=[0, 1]>``), the
copy fills it in 16-byte cp.async chunks walking the tile column by column,
and wgmma reads it M-major (``imm-trans-a`` 1), as an N-major B is read.
wgmma transposes 16-bit operands only: a TF32 dot of such an A stays on
mma.sync. Checked here: the IR, the CUDA, the remark, ptxas's build; on the
H200, the results against NumPy for tiles, warps, stages, dtypes and ragged
shapes."""
import re

import numpy as np
import pytest

from conftest import ROOT, cdiv, compile_text
from test_wgmma import ptxas_notes

KERNEL = ROOT / "tests" / "triton_style" / "matmul_trans.py"
SOURCE = KERNEL.read_text()
M_MAJOR = "nvmma_shared<swizzle=128, order=[0, 1]>"


def signature(dtype: str = "fp16", stride_am: str = "1") -> str:
    """a [K, M], b [K, N], c [M, N]: 16-byte aligned pointers and leading strides, unit inner strides."""
    return (f"*{dtype}:16, *{dtype}:16, *{dtype}:16, i32, i32, i32, "
            f"i32:16, i32:{stride_am}, i32:16, i32:1, i32:16, i32:1")


def compiled(emit: str, config=(128, 128, 64), num_warps: int = 4, num_stages: int = 3, arch: str = "sm_90a",
             tma: bool = True, **sig) -> str:
    bm, bn, bk = config
    return compile_text(SOURCE, emit, signature=signature(**sig), num_warps=num_warps, num_stages=num_stages,
                        defines={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, arch=arch, kernel="matmul_trans_a",
                        tma=tma)


def wgmma_lines(cuda: str) -> list[str]:
    return [line for line in cuda.splitlines() if "wgmma.mma_async" in line]


def test_an_a_contiguous_along_m_is_stored_column_major():
    text = compiled("layouts")
    a_alloc = next(line for line in text.splitlines() if "shared_alloc" in line and '"dot_a' in line)
    assert "order=[0, 1]" in a_alloc or M_MAJOR in text


def test_wgmma_reads_the_column_major_a_m_major():
    cuda = compiled("cuda")
    lines = wgmma_lines(cuda)
    assert lines and all(re.search(r"p, 1, 1, 1, 1;", line) for line in lines)  # imm-trans-a 1, imm-trans-b 1


def test_the_m_major_copy_moves_16_bytes_a_chunk_column_by_column():
    cuda = compiled("cuda", tma=False)  # by cp.async (TMA would make it: test_tma_copies.py)
    start = cuda.index("of a_ptr")
    copy = cuda[start:cuda.index("cp.async.commit_group", start)]
    assert "column by column (a column-major buffer)" in copy
    assert "cp.async.cg.shared.global [%0], [%1], 16" in copy


def test_the_remark_says_a_is_m_major():
    from mytriton import compiler, remarks
    from mytriton.compiler import Options

    options = Options(kernel="matmul_trans_a", signature=signature(),
                      defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, arch="sm_90a")
    kernel = compiler.run_stages(SOURCE, str(KERNEL), "layouts", options)
    (remark,) = remarks.dot_remarks(kernel)
    assert "wgmma" in remark.message and "A shared (swizzle 128B, M-major)" in remark.message, remark.message


def test_an_a_stride_not_known_to_be_1_keeps_a_row_major():
    text = compiled("layouts", stride_am="")
    assert "order=[0, 1]" not in next(line for line in text.splitlines() if '"dot_a' in line)


def test_a_tf32_dot_of_an_m_major_a_stays_on_mma_sync_and_says_why():
    from mytriton import compiler, remarks
    from mytriton.compiler import Options

    options = Options(kernel="matmul_trans_a", signature=signature("fp32"),
                      defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, arch="sm_90a", f32_default="tf32")
    kernel = compiler.run_stages(SOURCE, str(KERNEL), "layouts", options)
    (remark,) = remarks.dot_remarks(kernel)
    assert "mma.sync" in remark.message and "reads A K-major only" in remark.message, remark.message


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("config,num_warps", [((128, 128, 64), 4), ((64, 64, 32), 4), ((128, 256, 64), 8)])
def test_the_m_major_matmul_builds_for_sm_90a(tmp_path, config, num_warps):
    notes = ptxas_notes(compiled("cuda", config, num_warps), tmp_path)
    assert "spill" not in notes.lower() or "0 bytes spill" in notes


# ---- the H200 ------------------------------------------------------------------------------------------------


def load_kernel():
    import importlib.util
    spec = importlib.util.spec_from_file_location("matmul_trans_m_major", KERNEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def at_b_case(dtype: str, shape, config, num_warps: int, num_stages: int, backend: str = "cuda"):
    M, N, K = shape
    np_type = {"f16": np.float16, "f32": np.float32}.get(dtype) or pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(M * N + K)
    at = rng.standard_normal((K, M)).astype(np_type)
    b = rng.standard_normal((K, N)).astype(np_type)
    module = load_kernel()
    bm, bn, bk = config
    c = np.full((M, N), np.nan, np_type)
    strides = [s // t.itemsize for t in (at, b, c) for s in t.strides]
    module.matmul_trans_a[(cdiv(M, bm), cdiv(N, bn))](at, b, c, M, N, K, *strides, BLOCK_M=bm, BLOCK_N=bn,
                                                      BLOCK_K=bk, num_warps=num_warps, num_stages=num_stages,
                                                      backend=backend)
    exact = at.astype(np.float64).T @ b.astype(np.float64)
    tol = {"f16": 2e-2, "f32": 1e-2}.get(dtype, 6e-2) * max(1.0, np.sqrt(K) / 8)  # f32: TF32 products
    np.testing.assert_allclose(c.astype(np.float64), exact, rtol=tol, atol=tol)
    return c


def test_the_gpu_case_checks_the_interpreter_against_numpy_here():
    at_b_case("f16", (37, 24, 40), (64, 64, 32), 4, 3, backend="interp")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])  # f32: TF32 on mma.sync, A held column-major
@pytest.mark.parametrize("config,num_warps,num_stages", [((128, 128, 64), 4, 3), ((64, 64, 64), 4, 3),
                                                         ((128, 256, 64), 8, 3), ((64, 128, 32), 4, 1),
                                                         ((128, 64, 16), 4, 4)])
@pytest.mark.parametrize("shape", [(300, 260, 200), (77, 50, 24), (256, 256, 72), (128, 64, 96)])
def test_a_transposed_at_b_on_the_gpu_matches_numpy(dtype, config, num_warps, num_stages, shape):
    at_b_case(dtype, shape, config, num_warps, num_stages)
