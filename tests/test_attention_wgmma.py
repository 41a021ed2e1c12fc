"""Attention's P @ V (tutorial 06, tests/triton_style/fused_attention.py):
stage-dots stages V (copied and pipelined with K) and keeps P, computed by
the softmax, in registers: ``dot_rs`` (a register tile times a shared
buffer). The interpreter gives the bits the unstaged kernel gives."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT, cdiv, kernel_source, ssa_of
from mytriton import pipeline
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.stage_dots import StageDotsPass
from mytriton.passes.verify import verify
from mytriton.pipeline import Options
from mytriton.types import BlockType, SharedType

SOURCE = (ROOT / "tests" / "triton_style" / "fused_attention.py").read_text()
NP_TYPES = {"fp16": np.float16, "fp32": np.float32}


def attention_options(dtype: str = "fp16", stage: int = 1, block_m: int = 64, block_n: int = 32,
                      head_dim: int = 64, **extra) -> Options:
    signature = f"*{dtype}, *{dtype}, *{dtype}, fp32, *fp32, *{dtype}, " + ", ".join(["i32"] * 19)
    return Options(kernel="_attn_fwd", signature=signature,
                   defines=dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, STAGE=stage), **extra)


def optimized(options: Options):
    return pipeline.source_to_ssa(SOURCE, "fa.py", options, optimized=True)


def staged(options: Options):
    return pipeline.stage_dots(optimized(options), options)


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def the_op(kernel, name: str):
    (op,) = [op for op in walk(kernel.body) if op.name == name]
    return op


# ---- the staged IR ------------------------------------------------------------------------------------------


def test_p_at_v_keeps_p_in_registers_and_reads_v_from_shared_memory():
    kernel = staged(attention_options())
    dot = the_op(kernel, "dot_rs")
    a, b, acc = dot.operands
    assert isinstance(a.type, BlockType) and a.type.shape == (64, 32)  # P, the softmax's f16 tile
    assert isinstance(b.type, SharedType) and b.type.shape == (32, 64)  # V
    assert a.op.name == "cast"  # p.to(v.dtype), in registers
    assert b.op.name == "stage_view"  # a stage of V's pipelined buffer
    assert "dot" not in names(kernel) and "load" not in names(kernel)


def test_v_is_copied_with_k_before_the_first_barrier_of_the_iteration():
    kernel = staged(attention_options())
    loop = the_op(kernel, "for")
    body = [op.name for op in loop.regions[0].ops]
    commit = body.index("async_commit")
    copies = [i for i, name in enumerate(body) if name == "async_copy_strided_to_shared"]
    assert len(copies) == 2 and all(body.index("barrier") < i < commit for i in copies)
    # One wait and one barrier an iteration serve both: the one after P @ V is gone.
    assert body.count("barrier") == 1 and body.count("async_wait") == 1
    assert body.index("dot_shared") < body.index("dot_rs")


def test_without_pipelining_a_barrier_follows_p_at_v():
    kernel = staged(attention_options(num_stages=1))
    loop = the_op(kernel, "for")
    body = [op.name for op in loop.regions[0].ops]
    assert body.count("copy_strided_to_shared") == 2
    at = body.index("dot_rs")
    assert body[at + 1] == "barrier"  # the next iteration's copy of V waits for every reader


def test_the_staged_attention_reads_back_and_verifies():
    for options in (attention_options(), attention_options(num_stages=1)):
        text = print_kernel(staged(options))
        assert "dot_rs %" in text
        assert print_kernel(verify(parse_kernel(text, "fa.py"))) == text


def test_a_dot_rs_of_two_shared_buffers_is_a_located_error():
    text = print_kernel(staged(attention_options(num_stages=1)))
    line = next(line for line in text.splitlines() if "dot_rs %" in line)
    register_a = line.split("dot_rs ")[1].split(",")[0]
    broken = text.replace(f"dot_rs {register_a},", "dot_rs %0,", 1)  # %0: Q's buffer
    with pytest.raises(CompileError, match="operand 'a' of 'dot_rs' cannot be a shared buffer") as info:
        verify(parse_kernel(broken, "fa.py"))
    assert info.value.loc is not None


def test_a_dot_rs_with_a_register_b_is_a_located_error():
    text = print_kernel(staged(attention_options(num_stages=1)))
    line = next(line for line in text.splitlines() if "dot_rs %" in line)
    a, b = line.split("dot_rs ")[1].split(",")[:2]
    broken = text.replace(f"dot_rs {a},{b},", f"dot_rs {a}, {a},", 1)
    with pytest.raises(CompileError, match="'dot_rs' multiplies a register tile by a shared buffer"):
        verify(parse_kernel(broken, "fa.py"))


def test_a_dot_rs_whose_inner_dimensions_differ_is_a_located_error():
    text = print_kernel(staged(attention_options(num_stages=1)))
    # V's buffer is [32, 64]; a [64, 64] stand-in for it does not match P's 32 columns.
    broken = text.replace('shape=(32, 64), dtype=f16 : shared<32x64 x f16>', 'shape=(64, 64), dtype=f16 : '
                          'shared<64x64 x f16>', 1)
    assert broken != text
    with pytest.raises(CompileError, match="'dot_rs' inner dimensions differ") as info:
        verify(parse_kernel(broken, "fa.py"))
    assert info.value.loc is not None


def test_a_dot_of_a_register_tile_and_a_loaded_tile_alone_in_its_loop_is_staged_and_pipelined():
    kernel = ssa_of(kernel_source("""
        @mytriton.jit
        def scaled_a(a_ptr, b_ptr, c_ptr, M, N, K):
            rm = tl.arange(0, 32)
            rn = tl.arange(0, 32)
            acc = tl.zeros((32, 32), dtype=tl.float32)
            for k in range(0, K, 16):
                rk = k + tl.arange(0, 16)
                a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc += tl.dot(tl.exp(a), b, input_precision="ieee")
            tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
    """), optimized=True)
    unstaged = print_kernel(kernel)
    StageDotsPass().apply(kernel)
    from mytriton.passes.pipeline import PipelinePass
    PipelinePass(num_stages=3).apply(kernel)
    assert names(kernel).count("dot_rs") == 1 and "dot" not in names(kernel)
    loop = the_op(kernel, "for")
    assert loop.attrs["pipeline_stages"] == 3
    assert "async_copy_to_shared" in names(kernel)
    rng = np.random.default_rng(7)
    M, N, K = 29, 31, 45  # ragged
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(0.5, 2, (K, N)).astype(np.float32) * rng.choice([-1, 1], (K, N)).astype(np.float32)
    results = []
    for k in (parse_kernel(unstaged, "k.py"), kernel):
        c = np.full((M, N), np.nan, np.float32)
        run_kernel(k, (1,), [a, b, c, M, N, K])
        results.append(c)
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[0], np.exp(a.astype(np.float64)) @ b, rtol=1e-4, atol=1e-4)


# ---- the interpreter: the same bits before and after staging ------------------------------------------------


def reference(q, k, v, causal: bool, sm_scale: float):
    scores = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float64), k.astype(np.float64)) * sm_scale
    if causal:
        n = q.shape[2]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.einsum("zhmn,zhnd->zhmd", probs, v.astype(np.float64))


def inputs(dtype: str, n_ctx: int, head_dim: int, seed: int):
    rng = np.random.default_rng(seed)
    shape = (2, 2, n_ctx, head_dim)
    return [(rng.uniform(0.25, 1.0, shape) * rng.choice([-1, 1], shape)).astype(NP_TYPES[dtype]) for _ in range(3)]


def run_attention(kernel, q, k, v, sm_scale: float, block_m: int):
    z, h, n_ctx, _ = q.shape
    o = np.full_like(q, np.nan)
    lse = np.full((z, h, n_ctx), np.nan, np.float32)
    strides = [s // x.itemsize for x in (q, k, v, o) for s in x.strides]
    run_kernel(kernel, (cdiv(n_ctx, block_m), z * h), [q, k, v, np.float32(sm_scale), lse, o, *strides, z, h, n_ctx])
    return o, lse


@pytest.mark.parametrize("dtype, stage, n_ctx", [
    ("fp16", 1, 100), ("fp16", 3, 77), ("fp32", 1, 64), ("fp32", 3, 50), ("fp16", 1, 5),
])
@pytest.mark.parametrize("num_stages", [1, 3])
def test_the_staged_attention_computes_the_bits_of_the_unstaged_one(dtype, stage, n_ctx, num_stages):
    block_m, block_n, head_dim = 32, 16, 32
    options = attention_options(dtype, stage, block_m, block_n, head_dim, num_stages=num_stages)
    kernel = staged(options)
    assert "dot_rs" in names(kernel)
    q, k, v = inputs(dtype, n_ctx, head_dim, n_ctx + stage)
    sm_scale = 0.3
    expected_o, expected_lse = run_attention(optimized(options), q, k, v, sm_scale, block_m)
    o, lse = run_attention(kernel, q, k, v, sm_scale, block_m)
    np.testing.assert_array_equal(o, expected_o)
    np.testing.assert_array_equal(lse, expected_lse)
    tol = 2e-2 if dtype == "fp16" else 5e-3  # f32 dots default to TF32, as in Triton
    np.testing.assert_allclose(o.astype(np.float64), reference(q, k, v, stage == 3, sm_scale), rtol=tol, atol=tol)


# ---- CUDA ---------------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("config", [("fp16", 1, 64, 32), ("fp16", 3, 64, 32), ("fp32", 1, 32, 16)])
def test_the_attention_with_dot_rs_builds_with_nvcc(arch, config):
    from mytriton.backends.cuda.nvcc import compile_ptx
    dtype, stage, block_m, block_n = config
    options = attention_options(dtype, stage, block_m, block_n, arch=arch)
    cuda = pipeline.compile_source(SOURCE, "fa.py", "cuda", options)
    assert "// dot_rs" in cuda or "dot_rs" in cuda
    assert "cp.async.wait_group" in compile_ptx(cuda, arch)
