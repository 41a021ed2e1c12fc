"""A ``tl.trans`` that a dot reads, where the dot's operands are written from
registers to scratch (the dot is not staged): the transpose is laid out in
its operand's registers with the axes swapped, so it moves no data, and the
dot writes that operand to scratch column-major, each thread's run down the
columns at once, for ldmatrix to read in the other orientation (Liger's mHC
backward: ``tl.dot(grad_z, tl.trans(phi))`` and ``tl.dot(tl.trans(x), grad_z)``).
On the GPU the results match the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source
from mytriton import compiler
from mytriton.diagnostics import CompileError

# MODE 0: A is the transpose (x held [K, M]); 1: B is (w held [N, K]); 2: both.
# g, the other operand, is computed in registers, as are the transposes of
# modes 1 and 2 (a transposed load alone is staged, read from its buffer).
# The masks cut K and the stored rows and columns short (ragged), each along
# the dimension a tile's runs do not follow, so its loads stay 16 bytes wide.
TRANSPOSED = """
@mytriton.jit
def k(x_ptr, w_ptr, g_ptr, out_ptr, R, C, KR,
      M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, MODE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    if MODE == 1:
        g = (tl.load(g_ptr + rm[:, None] * K + rk[None, :], mask=rk[None, :] < KR, other=0.0) * 2.0).to(x_ptr.dtype.element_ty)
        w = tl.load(w_ptr + rn[:, None] * K + rk[None, :], mask=rn[:, None] < C, other=0.0)
        c = tl.dot(g, tl.trans(w * 0.5))
    else:
        x = tl.load(x_ptr + rk[:, None] * M + rm[None, :], mask=rk[:, None] < KR, other=0.0)
        if MODE == 0:
            g = (tl.load(g_ptr + rk[:, None] * N + rn[None, :], mask=rk[:, None] < KR, other=0.0) * 2.0).to(x_ptr.dtype.element_ty)
            c = tl.dot(tl.trans(x), g)
        else:
            w = tl.load(w_ptr + rn[:, None] * K + rk[None, :], mask=rn[:, None] < C, other=0.0)
            c = tl.dot(tl.trans(x * 1.5), tl.trans(w * 0.5))
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < R) & (rn[None, :] < C))
"""
SIGNATURE = "*{t}:16, *{t}:16, *fp32:16, *fp32:16, i32, i32, i32"


def compiled(stage: str, mode: int, dtype: str = "fp16", shape=(32, 64, 32), num_warps: int = 4) -> str:
    m, n, k = shape
    return compile_text(kernel_source(TRANSPOSED), stage, signature=SIGNATURE.format(t=dtype),
                        defines={"M": m, "N": n, "K": k, "MODE": mode}, num_warps=num_warps)


def trans_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " = trans " in line]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_a_transpose_a_dot_reads_is_laid_out_in_its_operand_s_registers(mode):
    text = compiled("layouts", mode)
    layouts = dict(line.split(" = ", 1) for line in text.splitlines() if line.startswith("#"))
    for line in trans_lines(text):
        result = line.rsplit(", ", 1)[1].split(">")[0]
        assert "order=[0, 1]" in layouts[result], line  # the operand's order, axes swapped
        assert "scratch_barrier" not in line  # no copy in scratch, no barrier of its own


@pytest.mark.parametrize("mode, columns", [(0, ["a_columns=true"]), (1, ["b_columns=true", "b_pad=8"]),
                                           (2, ["a_columns=true", "b_columns=true", "b_pad=8"])])
def test_the_dot_writes_a_transposed_operand_column_major(mode, columns):
    dot = next(line for line in compiled("layouts", mode).splitlines() if " = dot " in line)
    for attr in columns:
        assert attr in dot
    assert ("a_columns" in dot) == (mode != 1) and ("b_columns" in dot) == (mode != 0)


def test_the_column_major_write_moves_each_thread_s_run_at_once():
    cuda = compiled("cuda", 2)
    assert "// dot operand a: registers to shared memory column-major" in cuda
    assert "// dot operand b: registers to shared memory column-major" in cuda
    writes = [line for line in cuda.splitlines() if "*reinterpret_cast<uint4*>(&" in line and "_tile[" in line]
    assert len(writes) == 2, writes  # one 16-byte write a run, A's and B's
    # A^T row-major: ldmatrix.trans gives A's fragment; B^T row-major: ldmatrix without .trans
    assert cuda.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 1
    assert cuda.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 1


def test_a_transpose_of_a_tile_in_another_layout_still_moves_through_scratch():
    # f32 operands: no ldmatrix, the tile is written row-major as before
    text = compiled("layouts", 1, dtype="fp32")
    dot = next(line for line in text.splitlines() if " = dot " in line)
    assert "b_columns" not in dot


def test_the_laid_out_text_reads_back_the_same():
    text = compiled("layouts", 2)
    assert compiler.print_ssa(compiler.verify(compiler.read_ssa(text, "k.ssa"))) == text


def test_the_verifier_refuses_columns_on_an_operand_that_cannot_be_written_so():
    text = compiled("layouts", 0).replace("a_columns=true", "a_columns=true, b_columns=true")
    with pytest.raises(CompileError, match="b_columns"):
        compiler.verify(compiler.read_ssa(text, "k.ssa"))


SHAPES = [(32, 64, 32), (64, 32, 16), (16, 128, 64), (128, 64, 32)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_transposed_operands_match_the_interpreter(kernel_module, shape, mode, dtype, num_warps):
    import ml_dtypes
    import torch

    m, n, k = shape
    kernel = kernel_module(TRANSPOSED).k
    rng = np.random.default_rng(m * n + k + mode)
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    x = rng.standard_normal((k, m)).astype(np_dtype)
    w = rng.standard_normal((n, k)).astype(np_dtype)
    g = rng.standard_normal((max(m, k), max(n, k))).astype(np.float32)[: (k if mode == 0 else m), : (n if mode == 0 else k)]
    g = np.ascontiguousarray(g)
    rows, cols, k_run = m - 3, n - 5, k - 1  # ragged
    expected = np.full((m, n), np.nan, np.float32)
    kernel[(1,)](x, w, g, expected, rows, cols, k_run, M=m, N=n, K=k, MODE=mode, num_warps=num_warps,
                 backend="interp")

    def on_gpu(a: np.ndarray):
        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
        return torch.from_numpy(a).cuda()

    out = torch.full((m, n), float("nan"), device="cuda")
    handle = kernel[(1,)](on_gpu(x), on_gpu(w), on_gpu(g), out, rows, cols, k_run, M=m, N=n, K=k, MODE=mode,
                          num_warps=num_warps, backend="cuda")
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    np.testing.assert_allclose(got[:rows, :cols], expected[:rows, :cols], rtol=2e-2, atol=2e-2)
    assert np.isnan(got[rows:, :]).all() and np.isnan(got[:, cols:]).all()
    assert "_columns=true" in handle.asm["layouts"]
