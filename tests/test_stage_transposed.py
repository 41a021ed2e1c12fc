"""stage-dots stages an operand that is the transpose of a tile load
(``tl.dot(q, tl.trans(k))``, ``x @ w.T`` spelled with ``tl.trans``): the
load's tile is copied with its axes swapped, so K loaded as it is stored,
[N, K] row-major, becomes a [K, N] buffer contiguous down its columns
(column-major, K-major for wgmma), as a tile loaded K-major already is.
The interpreter gives the bits the unstaged kernel gives."""
from __future__ import annotations

import numpy as np

from conftest import ROOT, kernel_source, ssa_of
from mytriton import compiler
from mytriton.backends.interp import run_kernel
from mytriton.compiler import Options
from mytriton.ir.ssa import Const, walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.software_pipeline import SoftwarePipelinePass
from mytriton.passes.stage_dots import StageDotsPass, match_dot
from mytriton.ir.analysis import Definitions

X_AT_W_T = kernel_source("""
    @mytriton.jit
    def linear(x_ptr, w_ptr, c_ptr, M, N, K, stride_wn):
        rm = tl.arange(0, 32)
        rn = tl.arange(0, 32)
        acc = tl.zeros((32, 32), dtype=tl.float32)
        for k in range(0, K, 16):
            rk = k + tl.arange(0, 16)
            x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            w = tl.load(w_ptr + rn[:, None] * stride_wn + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K),
                        other=0.0)
            acc += tl.dot(x, tl.trans(w), input_precision="ieee")
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
""")


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def test_the_transpose_of_a_loaded_tile_is_copied_with_its_axes_swapped():
    kernel = ssa_of(X_AT_W_T, optimized=True)
    StageDotsPass().apply(kernel)
    assert "dot_shared" in names(kernel) and "trans" not in names(kernel) and "load" not in names(kernel)
    copies = [op for op in walk(kernel.body) if op.name == "copy_strided_to_shared"]
    b_copy = next(op for op in copies if op.operands[0].type.shape == (16, 32))  # B: [K, N], from w's [N, K]
    row_stride, col_stride = b_copy.operands[4], b_copy.operands[5]
    assert row_stride == Const(1) and col_stride.name == "stride_wn"  # down the columns: K-major


def test_the_staged_transpose_gives_the_unstaged_kernels_bits_in_the_interpreter():
    kernel = ssa_of(X_AT_W_T, optimized=True)
    unstaged = print_kernel(kernel)
    StageDotsPass().apply(kernel)
    SoftwarePipelinePass(num_stages=3).apply(kernel)
    rng = np.random.default_rng(11)
    M, N, K, stride_wn = 29, 27, 45, 48  # ragged, w's rows padded
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, stride_wn)).astype(np.float32)
    results = []
    for k in (parse_kernel(unstaged, "k.py"), kernel):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(k, (1,), [x, w, c, M, N, K, stride_wn])
        results.append(c)
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[0], x.astype(np.float64) @ w[:, :K].T.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_attention_with_k_transposed_in_a_helper_loop_stages_both_dots_on_wgmma():
    """tests/triton_style/attention_trans.py: Q @ tl.trans(K) and P @ V both
    staged, both on wgmma (K^T K-major), in the helper's loop."""
    source = (ROOT / "tests" / "triton_style" / "attention_trans.py").read_text()
    options = Options(kernel="attention_fwd", signature="*fp16:16, *fp16:16, *fp16:16, *fp16:16, " + ", ".join(
        ["i32:16"] * 8) + ", i32, fp32", defines=dict(CAUSAL=False, BLOCK_M=128, BLOCK_N=64, HEAD_DIM=64))
    text = compiler.compile_source(source, "attention_trans.py", "layouts", options)
    assert "dot_shared" in text and "dot_rs" in text and " trans " not in text
    dots = [line for line in text.splitlines() if " = dot_shared " in line or " = dot_rs " in line]
    assert len(dots) == 2
    wgmma = {line.split(" = ")[0] for line in text.splitlines() if "mma<version=3" in line}
    assert wgmma and all(any(name in dot.split(" : ")[-1] for name in wgmma) for dot in dots)
    assert "nvmma_shared<swizzle=128, order=[0, 1]>" in text  # K^T stored column-major


def test_the_transpose_of_a_load_that_does_not_match_says_why():
    source = X_AT_W_T.replace("                    other=0.0)", "                    other=1.0)")
    assert "other=1.0" in source
    kernel = ssa_of(source, optimized=True)
    (dot,) = [op for op in walk(kernel.body) if op.name == "dot"]
    reason = str(match_dot(Definitions(kernel), dot))
    assert reason.startswith("operand B: the operand is the transpose of a tile whose load does not match")
    assert "0 or 0.0" in reason


def _canonical_cuda(source: str, signature: str, arch: str) -> str:
    """The kernel's CUDA without what only names or places differ by:
    source locations, #line directives, the digest, value numbers (a scratch copy's sN too)."""
    import re

    cuda = compiler.compile_source(source, "k.py", "cuda", Options(signature=signature, arch=arch))
    cuda = re.sub(r"@\d+:\d+", "@L", cuda)
    cuda = "\n".join(line for line in cuda.splitlines() if not line.strip().startswith("#line"))
    cuda = re.sub(r'"source_sha256": "[0-9a-f]+"', "", cuda)
    names: dict[str, int] = {}
    return re.sub(r"\b([vtwrs])(\d+)(?!\d)", lambda m: m.group(1) + str(names.setdefault(m.group(0), len(names))), cuda)


LINEAR_64 = kernel_source("""
    @mytriton.jit
    def linear(x_ptr, w_ptr, c_ptr, M, N, K, stride_wn):
        rm = tl.program_id(0) * 64 + tl.arange(0, 64)
        rn = tl.program_id(1) * 64 + tl.arange(0, 64)
        acc = tl.zeros((64, 64), dtype=tl.float32)
        for k in range(0, K, 32):
            rk = k + tl.arange(0, 32)
            x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            W_LOAD
            acc += PRODUCT
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
""")


def test_the_transposed_operand_is_the_cuda_of_the_tile_loaded_k_major():
    """x @ tl.trans(w), w loaded [N, K] as stored, gives the CUDA of the same
    product with w loaded K-major ([K, N], rows contiguous) on every path:
    wgmma and mma.sync, f16 and f32 (the K-major form is the GPU-tested one)."""
    trans = LINEAR_64.replace("W_LOAD", "w = tl.load(w_ptr + rn[:, None] * stride_wn + rk[None, :], "
                                        "mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)"
                              ).replace("PRODUCT", "tl.dot(x, tl.trans(w))")
    k_major = LINEAR_64.replace("W_LOAD", "w = tl.load(w_ptr + rk[:, None] + rn[None, :] * stride_wn, "
                                          "mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)"
                                ).replace("PRODUCT", "tl.dot(x, w)")
    for signature in ("*fp16:16, *fp16:16, *fp32:16, i32, i32, i32:16, i32:16",
                      "*fp32:16, *fp32:16, *fp32:16, i32, i32, i32:16, i32:16"):
        for arch in ("sm_90", "sm_80"):
            assert _canonical_cuda(trans, signature, arch) == _canonical_cuda(k_major, signature, arch), \
                (signature, arch)
