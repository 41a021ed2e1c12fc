"""Attention's P @ V (tutorial 06, tests/triton_style/fused_attention.py):
stage-dots stages V (copied and pipelined with K) and keeps P, computed by
the softmax, in registers: ``dot_rs`` (a register tile times a shared
buffer). The interpreter gives the bits the unstaged kernel gives."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import ROOT, cdiv, kernel_source, ssa_of, tiered
from mytriton import compiler, remarks
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.stage_dots import StageDotsPass
from mytriton.passes.verify import verify
from mytriton.compiler import Options
from mytriton.types import BlockType, SharedType

SOURCE = (ROOT / "tests" / "triton_style" / "fused_attention.py").read_text()
NP_TYPES = {"fp16": np.float16, "fp32": np.float32}


def attention_options(dtype: str = "fp16", stage: int = 1, block_m: int = 64, block_n: int = 32,
                      head_dim: int = 64, **extra) -> Options:
    signature = f"*{dtype}, *{dtype}, *{dtype}, fp32, *fp32, *{dtype}, " + ", ".join(["i32"] * 19)
    return Options(kernel="_attn_fwd", signature=signature,
                   defines=dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, STAGE=stage), **extra)


def optimized(options: Options):
    return compiler.source_to_ssa(SOURCE, "fa.py", options, optimized=True)


def staged(options: Options):
    return compiler.stage_dots(optimized(options), options)


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


@pytest.mark.parametrize("config", [(64, 32, 64, 48), (64, 32, 64, 64), (64, 32, 64, 100), (128, 64, 128, None)])
def test_p_at_v_is_staged_only_beside_a_staged_q_at_k(config):
    """Where the budget keeps Q @ K^T on the general path, P @ V stays there
    too (its A would otherwise be converted from that dot's layout); the
    causal HEAD_DIM=128 kernel at 227 KiB had V alone fit before this rule."""
    block_m, block_n, head_dim, budget_kib = config
    budget = budget_kib and budget_kib * 1024
    kernel = staged(attention_options("fp16", 3, block_m, block_n, head_dim, shared_budget=budget))
    for loop in [op for op in walk(kernel.body) if op.name == "for"]:
        inside = [op.name for op in loop.regions[0].ops]
        if "dot_rs" in inside:
            assert "dot_shared" in inside and "dot" not in inside


@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_causal_kernels_two_loops_read_q_from_one_buffer_copied_once(head_dim):
    """Q is loop-invariant and loaded once: staged once, before the first
    loop, for both loops' Q @ K^T (two copies took 16 KiB more at HEAD_DIM
    64, which left one block per SM on the H200, and kept HEAD_DIM 128's dots
    unstaged)."""
    kernel = staged(attention_options("fp16", 3, 128, 64, head_dim))
    q_buffers = {op.operands[0] for op in walk(kernel.body) if op.name == "dot_shared"}
    loops = [op for op in walk(kernel.body) if op.name == "for"]
    assert len(loops) == 2 and all("dot_shared" in [o.name for o in loop.regions[0].ops] for loop in loops)
    assert len(q_buffers) == 1
    (q,) = q_buffers
    writes = [op for op in walk(kernel.body) if op.name.endswith("to_shared") and op.operands[0] is q]
    assert len(writes) == 1 and kernel.body.ops.index(writes[0]) < kernel.body.ops.index(loops[0])


def test_the_causal_head_dim_128_kernels_second_loop_takes_the_first_loops_bytes():
    """The two K loops' K and V buffers are never live at once: the second
    loop's lie over the first's, so both loops stage P @ V and keep their 3
    stages (side by side, the second P @ V found no room and ran on
    mma.sync through scratch, 196 KiB in all, and the kernel spilled)."""
    options = attention_options("fp16", 3, 128, 64, 128, num_stages=3)
    kernel = compiler.layouts(staged(options), options)
    loops = [op for op in kernel.body.ops if op.name == "for"]
    assert [loop.attrs["pipeline_stages"] for loop in loops] == [3, 3]
    assert all("dot_rs" in [o.name for o in loop.regions[0].ops] for loop in loops)
    buffers = {op.attrs["name"]: op.attrs["offset"] for op in kernel.body.ops if "offset" in op.attrs}
    assert buffers["dot_b2"] == buffers["dot_b0"] and buffers["dot_b3"] == buffers["dot_b1"]
    assert kernel.shared_memory.bytes == 128 * 1024


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
    from mytriton.passes.software_pipeline import SoftwarePipelinePass
    SoftwarePipelinePass(num_stages=3).apply(kernel)
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


def test_the_mlir_back_end_lowers_dot_rs_and_xdsl_verifies_it():
    pytest.importorskip("xdsl")
    from mlir_check import parse_and_verify
    kernel = staged(attention_options(num_stages=1))  # (pipelined loops are not in the MLIR back end yet)
    text = compiler.emit_mlir(kernel)
    parse_and_verify(text)
    assert "memref.load" in text


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
    cuda = compiler.compile_source(SOURCE, "fa.py", "cuda", options)
    assert "// dot_rs" in cuda or "dot_rs" in cuda
    assert "cp.async.wait_group" in compile_ptx(cuda, arch)


# ---- wgmma with A from registers (sm_90) --------------------------------------------------------------------

H200 = dict(block_m=128, block_n=64, head_dim=64)  # benchmarks/attention.py's tile


def laid_out(options: Options):
    return compiler.layouts(staged(options), options)


def test_on_hopper_p_at_v_is_a_warpgroup_dot_reading_p_where_q_at_k_left_it():
    kernel = laid_out(attention_options(**H200, arch="sm_90a"))
    qk, pv = the_op(kernel, "dot_shared"), the_op(kernel, "dot_rs")
    layout = qk.result.type.layout
    assert (layout.version, layout.warps_per_cta) == (3, (4, 1))
    assert pv.result.type.layout == layout
    p = pv.operands[0]
    assert p.type.layout == layout  # P, cast from exp2 of Q @ K^T's accumulator: no data moves
    assert p.op.name == "cast" and p.op.operands[0].type.layout == layout
    assert pv.operands[1].type.layout.kind == "nvmma_shared"  # V, read through a matrix descriptor
    loop = the_op(kernel, "for")
    tiles_converted = [op for op in walk(loop.regions[0]) if op.name == "convert_layout"
                       and len(op.result.type.shape) == 2]
    assert tiles_converted == []


def test_a_register_a_not_in_a_warpgroup_layout_is_asked_for_in_one_over_its_own_k():
    from mytriton.ir.layout_attributes import Blocked, Mma
    from mytriton.passes.dot_layouts import register_a_layout
    result = Mma(3, (8, 1), (16, 128, 16))
    kernel = staged(attention_options(**H200))
    a = the_op(kernel, "dot_rs").operands[0]  # [128, 64]
    held_v3 = Mma(3, (8, 1), (16, 256, 16))
    assert register_a_layout(result, a, held_v3) is held_v3  # the slots do not depend on the instruction's N
    blocked = Blocked((1, 1), (1, 32), (8, 1), (1, 0))
    assert register_a_layout(result, a, blocked) == Mma(3, (8, 1), (16, 64, 16))
    assert register_a_layout(result, a, Mma(3, (4, 1), (16, 64, 16))) == Mma(3, (8, 1), (16, 64, 16))


def test_on_sm_80_p_at_v_stays_on_mma_sync_with_v_padded_for_ldmatrix():
    kernel = laid_out(attention_options(**H200, arch="sm_80"))
    pv = the_op(kernel, "dot_rs")
    assert pv.result.type.layout.version == 2
    assert pv.operands[1].type.layout.kind == "padded_shared" and pv.operands[1].type.layout.pad == 8


@pytest.mark.parametrize("warps, shape", [((4, 1), (64, 64)), ((4, 1), (128, 64)), ((8, 1), (256, 32)),
                                          ((4, 1), (64, 128))])
def test_the_a_registers_hold_the_isa_fragment_of_each_k16_step(warps, shape):
    """PTX ISA, wgmma "Register Fragments", m64nNk16 A (f16/bf16): warp w of
    the warpgroup holds rows 16 w + g (a0, a1, a4, a5) and 16 w + g + 8 (a2,
    a3, a6, a7), columns 2 t + i % 2 (a0..a3) and 2 t + 8 + i % 2 (a4..a7),
    two to a register, the lower column in the low half."""
    from test_mma_fragments import c_eval
    from mytriton.backends.cuda.thread_coordinates import Layout, MmaLayout
    from mytriton.backends.cuda.wgmma import a_register_slots
    from mytriton.ir.layout_attributes import Mma
    layout = Layout.of(MmaLayout.of(Mma(3, warps, (16, shape[1], 16)), shape))
    parent = layout.parent
    num_warps = warps[0]
    k_digits = layout.digits("k")
    seen = set()
    for tid in range(32 * num_warps):
        lane, warp = tid % 32, tid // 32
        g, t = lane // 4, lane % 4
        positions = {d: c_eval(parent.thread_position(d, "tid"), tid=tid) for d in range(2)}
        for rm in range(shape[0] // (16 * num_warps)):
            for kk in range(0, shape[1], 16):
                for reg, pair in enumerate(a_register_slots(layout, rm, kk)):
                    for half, slot_text in enumerate(pair):
                        i = 2 * reg + half  # a0 .. a7
                        slot = c_eval(slot_text)
                        row = c_eval(parent.coordinate(0, k_digits[0], "p"), k=slot, p=positions[0])
                        col = c_eval(parent.coordinate(1, k_digits[1], "p"), k=slot, p=positions[1])
                        isa_row = rm * 16 * num_warps + 16 * warp + g + 8 * ((i // 2) % 2)
                        isa_col = kk + 2 * t + i % 2 + 8 * (i // 4)
                        assert (row, col) == (isa_row, isa_col)
                        seen.add((row, col))
    assert len(seen) == shape[0] * shape[1]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("stage", [1, 3])
def test_the_row_statistics_live_in_the_slice_of_the_accumulator_layout_and_nothing_converts(arch, stage):
    """m_i and l_i (carried), the row max and sum, alpha: in the slice of the
    mma layout of Q @ K^T, where acc * alpha[:, None] reads them."""
    from mytriton.ir.layout_attributes import Slice
    kernel = laid_out(attention_options("fp16", stage, **H200, arch=arch))
    assert "convert_layout" not in names(kernel)
    for loop in [op for op in walk(kernel.body) if op.name == "for"]:
        acc = next(arg for arg in loop.regions[0].args if len(getattr(arg.type, "shape", ())) == 2)
        rows = Slice(1, acc.type.layout)
        vectors = [arg for arg in loop.regions[0].args if len(getattr(arg.type, "shape", ())) == 1]
        assert len(vectors) == 2 and all(arg.type.layout == rows for arg in vectors)  # l_i, m_i
        for op in walk(loop.regions[0]):
            if op.name in ("max", "sum"):
                assert op.result.type.layout == rows


def cuda_of(options: Options) -> str:
    return compiler.compile_source(SOURCE, "fa.py", "cuda", options)


def test_the_cuda_packs_p_into_wgmma_a_registers_with_no_shared_memory_for_it():
    cuda = cuda_of(attention_options(**H200, arch="sm_90a"))
    assert "A from registers" in cuda
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in cuda
    assert "p, 1, 1, 1;" in cuda  # register A: scale-d, scale-a, scale-b, trans-b
    assert "dot operand a: registers to shared memory" not in cuda  # the general path's staging of P


def test_the_warpgroup_attention_synchronises_once_an_iteration():
    """Three barriers in all: after Q's copy, the pipeline's one an iteration
    (its tiles have landed, the stage it refills is free), and after the loop;
    no layout change or operand staging through shared memory adds one."""
    cuda = cuda_of(attention_options(**H200, arch="sm_90a"))
    assert cuda.count("__syncthreads()") == 3
    assert "convert_layout" not in cuda


def test_a_dot_rs_on_wgmma_whose_a_is_not_in_the_accumulator_layout_is_a_located_error():
    options = attention_options(**H200, arch="sm_90a")
    text = print_kernel(laid_out(options))
    line = next(line for line in text.splitlines() if " = dot_rs " in line)
    p = line.split("dot_rs ")[1].split(",")[0]
    indent = line[:len(line) - len(line.lstrip())]
    # P converted to a blocked layout (one the layouts stage never picks for it) for dot_rs to read.
    converted = f"{indent}%9999 = convert_layout {p} : block<128x64 x f16, #blocked_p> @56:15\n"
    broken = text.replace(line, converted + line.replace(f"dot_rs {p},", "dot_rs %9999,"), 1)
    header = "#blocked_p = blocked<size_per_thread=[1, 1], threads_per_warp=[1, 32], warps_per_cta=[4, 1], order=[1, 0]>\n"
    with pytest.raises(CompileError, match="operand 'a' of a warpgroup 'dot_rs' is read as wgmma's register "
                                           "fragment") as info:
        verify(parse_kernel(header + broken, "fa.py"))
    assert info.value.loc is not None


@pytest.mark.nvcc
@pytest.mark.parametrize("config", tiered([dict(H200), dict(H200, dtype="bf16"), dict(H200, stage=3),
                                           dict(block_m=64, block_n=64, head_dim=64),
                                           dict(block_m=128, block_n=64, head_dim=128, num_warps=8)],
                                          fast=[dict(H200)]))
def test_the_warpgroup_attention_builds_for_sm_90a_with_no_serialised_wgmma(config):
    """ptxas notes C7514/C7515 (wgmma serialised), C7517/C7519 (warpgroup
    waits or arrives injected): none, for P @ V from registers and Q @ K^T."""
    import subprocess
    import tempfile
    from mytriton.backends.cuda.nvcc import find_nvcc
    config = dict(config)
    dtype, stage = config.pop("dtype", "fp16"), config.pop("stage", 1)
    num_warps = config.pop("num_warps", 4)
    cuda = cuda_of(attention_options(dtype, stage, **config, arch="sm_90a", num_warps=num_warps))
    assert "A from registers" in cuda
    with tempfile.TemporaryDirectory() as tmp:
        source = f"{tmp}/fa.cu"
        with open(source, "w") as f:
            f.write(cuda)
        run = subprocess.run([find_nvcc(), "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-cubin",
                              "-o", f"{tmp}/fa.cubin", source], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    notes = [line for line in (run.stdout + run.stderr).splitlines() if "(C751" in line]
    assert notes == []


# ---- the GPU against the interpreter (the H200) ---------------------------------------------------------------


def load_attention_module():
    import importlib.util
    path = ROOT / "tests" / "triton_style" / "fused_attention.py"
    spec = importlib.util.spec_from_file_location("fused_attention_wgmma", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(module, backend: str, q, k, v, causal: bool, sm_scale: float, block_m: int, block_n: int,
           num_stages: int, num_warps: int):
    z, h, n_ctx, head_dim = q.shape
    o = np.zeros_like(q)
    lse = np.zeros((z, h, n_ctx), np.float32)
    strides = [s // x.itemsize for x in (q, k, v, o) for s in x.strides]
    grid = (cdiv(n_ctx, block_m), z * h, 1)
    module._attn_fwd[grid](q, k, v, sm_scale, lse, o, *strides, z, h, N_CTX=n_ctx, HEAD_DIM=head_dim,
                           BLOCK_M=block_m, BLOCK_N=block_n, STAGE=3 if causal else 1, num_warps=num_warps,
                           num_stages=num_stages, backend=backend)
    return o, lse


def attention_case(dtype, causal, n_ctx, tile, num_stages, backends=("cuda", "interp")):
    block_m, block_n, head_dim, num_warps = tile
    module = load_attention_module()
    np_type = np.float16 if dtype == "fp16" else pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(n_ctx + head_dim + causal)
    shape = (1, 2, n_ctx, head_dim)
    q, k, v = [(rng.uniform(0.25, 1.0, shape) * rng.choice([-1, 1], shape)).astype(np_type) for _ in range(3)]
    sm_scale = 0.125
    ours = launch(module, backends[0], q, k, v, causal, sm_scale, block_m, block_n, num_stages, num_warps)
    expected = launch(module, backends[1], q, k, v, causal, sm_scale, block_m, block_n, num_stages, num_warps)
    tol = 2e-2 if dtype == "fp16" else 5e-2
    np.testing.assert_allclose(ours[0].astype(np.float32), expected[0].astype(np.float32), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours[1], expected[1], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ours[0].astype(np.float64), reference(q, k, v, causal, sm_scale), rtol=tol, atol=tol)


def test_the_gpu_cases_check_the_interpreter_against_numpy_here():
    """The comparison the GPU tests make, with the interpreter on both sides
    (a small ragged case of each dtype), so that its set-up is known good."""
    for dtype in ("fp16", "bf16"):
        attention_case(dtype, True, 77, (64, 64, 64, 4), 3, backends=("interp", "interp"))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_ctx", [1024, 1000, 77])
@pytest.mark.parametrize("tile", [(128, 64, 64, 4), (64, 64, 64, 4), (128, 64, 128, 8), (128, 64, 128, 4)],
                         ids=lambda t: "x".join(map(str, t)))
def test_the_warpgroup_attention_on_the_gpu_matches_the_interpreter(dtype, causal, n_ctx, tile):
    attention_case(dtype, causal, n_ctx, tile, 3)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_the_warpgroup_attention_unpipelined_on_the_gpu_matches_the_interpreter(causal):
    attention_case("fp16", causal, 1000, (128, 64, 64, 4), 1)


# Attention's backward for dK and dV (tutorial 06's form): two register-A dots in one loop body.
DKDV = kernel_source("""
@mytriton.jit
def dkdv(Q, K, V, DO, M, D, DK, DV, stride_tok, N_CTX,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_d[None, :])
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qT_ptrs = Q + tl.arange(0, BLOCK_M)[None, :] * stride_tok + offs_d[:, None]
    do_ptrs = DO + tl.arange(0, BLOCK_M)[:, None] * stride_tok + offs_d[None, :]
    for start_m in range(0, N_CTX, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        qT = tl.load(qT_ptrs)
        pT = tl.math.exp2(tl.dot(k, qT) - tl.load(M + offs_m)[None, :])
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(tl.float16), do)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - tl.load(D + offs_m)[None, :])
        dk += tl.dot(dsT.to(tl.float16), tl.trans(qT))
        qT_ptrs += BLOCK_M * stride_tok
        do_ptrs += BLOCK_M * stride_tok
    tl.store(DV + offs_n[:, None] * stride_tok + offs_d[None, :], dv)
    tl.store(DK + offs_n[:, None] * stride_tok + offs_d[None, :], dk)
""")


@pytest.mark.nvcc
def test_two_register_a_dots_in_one_loop_body_each_hold_their_own_a():
    """dV from P and dK from dS: each dot_rs's A elements in an array of its own (one name for both did not build)."""
    from mytriton.backends.cuda.nvcc import compile_ptx

    options = Options(kernel="dkdv", signature="*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, "
                      "*fp16:16, *fp16:16, i32:16, i32:16", defines=dict(BLOCK_M=32, BLOCK_N=128, HEAD_DIM=64))
    cuda = compiler.compile_source(DKDV, "dkdv.py", "cuda", options)
    arrays = set(re.findall(r"__half (t\d+_a)\[", cuda))
    assert len(arrays) == 2
    assert ".entry dkdv(" in compile_ptx(cuda, "sm_90a")


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_the_block_pointer_attention_pipelines_both_dots_with_q_scaled_in_registers(causal, head_dim):
    """Triton 2.x's spelling (tests/triton_style/attention_block_ptr.py): Q @ K^T
    multiplies a register Q, and the loop body opens with the copies of K^T
    and V, which go ahead together. (At HEAD_DIM 128 the budget leaves room
    for Q's scratch alone, not for Q and K^T's as if Q @ K^T stayed unstaged.)"""
    from mytriton import remarks

    path = ROOT / "tests" / "triton_style" / "attention_block_ptr.py"
    options = Options(kernel="attn_fwd_block_ptr", num_warps=8, arch="sm_90a",
                      signature="*fp16:16, *fp16:16, *fp16:16, *fp16:16, fp32, " + ", ".join(["i32:16"] * 9),
                      defines={"BLOCK_M": 128, "HEAD_DIM": head_dim, "BLOCK_N": 64, "IS_CAUSAL": causal})
    kernel = compiler.run_stages(path.read_text(), str(path), "layouts", options)
    messages = [remark.message for remark in remarks.dot_remarks(kernel)]
    assert len(messages) == 2, messages
    assert all("B staged (cp.async" in m and "3 stages" in m and "wgmma" in m for m in messages), messages


def test_p_at_v_rescales_the_carried_accumulator_in_place():
    """acc * alpha is written over the carried registers, which the wgmma then
    accumulates into: no copy in or out of the loop's accumulator."""
    cuda = cuda_of(attention_options(**H200, arch="sm_90a"))
    dot_rs = cuda[cuda.index("// dot_rs @"):]
    assert "the carried accumulator, in place" in dot_rs.splitlines()[1]


def test_p_at_v_waits_where_the_loop_refills_its_stages_by_cp_async():
    """Left in flight into the next iteration, P @ V would hold its registers
    beside every thread's cp.async addresses (the transposed-K form spilled at
    HEAD_DIM 128): overlap-wgmma says so and leaves it."""
    kernel = laid_out(attention_options(**H200, arch="sm_90a"))
    pv = the_op(kernel, "dot_rs")
    assert not pv.attrs.get("in_flight")
    assert "its loop's refills are cp.async copies (not TMA)" in remarks.dot_remarks(kernel)[-1].message
