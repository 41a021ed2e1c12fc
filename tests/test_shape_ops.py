"""Triton's shape ops: tl.reshape / tl.view, tl.permute and
tl.trans with dims, tl.split, tl.join, tl.interleave, tl.cat, tl.broadcast_to,
tl.zeros_like and tl.full_like, and the tensor methods that spell them. Each
moves elements without computing on them: checked against NumPy in the
interpreter, built with nvcc, and on the GPU against the interpreter."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import build, compile_text, kernel_source, randf
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel

M, N = 8, 16


def ops_of(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def compile_error(body: str, **defines) -> str:
    with pytest.raises(CompileError) as info:
        build(body, **defines)
    return str(info.value)


def tile_2d(name: str = "x_ptr") -> str:
    return f"tl.load({name} + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])"


# Each kernel loads an [M, N] tile x (row-major), applies a shape op, and
# stores the result flattened in row-major order (out = f(x).ravel()).
RESHAPED = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = {tile_2d()}
    y = tl.reshape(x, (N, M)) * 2.0
    tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], y)
"""

PERMUTED = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.reshape({tile_2d()}, 2, M // 2, N)
    y = tl.permute(x, (2, 0, 1))
    tl.store(out_ptr + tl.arange(0, M * N), tl.reshape(y, (M * N,)))
"""

TRANS_DIMS = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.view({tile_2d()}, (2, M // 2, N))
    y = tl.trans(x, 1, 2, 0) + x.permute(1, 2, 0)
    tl.store(out_ptr + tl.arange(0, M * N), y.reshape(M * N))
"""

SPLIT_JOIN = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.reshape({tile_2d()}, (M * N // 2, 2))
    a, b = tl.split(x)
    y = tl.join(b * 3.0, a)
    tl.store(out_ptr + tl.arange(0, M * N), tl.reshape(y, (M * N,)))
"""

INTERLEAVED = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = {tile_2d()}
    y = tl.interleave(x, x + 100.0)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :], y)
"""

CONCATENATED = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = {tile_2d()}
    y = tl.cat(x, x * -1.0, can_reorder=True)
    tl.store(out_ptr + tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :], y)
"""

BROADCAST = f"""
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = {tile_2d()}
    row = tl.load(x_ptr + tl.arange(0, N))
    y = tl.broadcast_to(row[None, :], M, N) + tl.zeros_like(x) + tl.full_like(x, 0.5) \\
        + row.broadcast_to((M, N))
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], y)
"""

REFERENCES = {
    "reshape": (RESHAPED, lambda x: x.reshape(N, M) * 2),
    "permute": (PERMUTED, lambda x: x.reshape(2, M // 2, N).transpose(2, 0, 1)),
    "trans_dims": (TRANS_DIMS, lambda x: 2 * x.reshape(2, M // 2, N).transpose(1, 2, 0)),
    "split_join": (SPLIT_JOIN, lambda x: np.stack([x.reshape(-1, 2)[:, 1] * 3, x.reshape(-1, 2)[:, 0]], -1)),
    "interleave": (INTERLEAVED, lambda x: np.stack([x, x + 100], -1).reshape(M, 2 * N)),
    "cat": (CONCATENATED, lambda x: np.concatenate([x, -x])),
    "broadcast": (BROADCAST, lambda x: np.broadcast_to(x[0], (M, N)) * 2 + 0.5),
}


def run_interp(body: str, x: np.ndarray) -> np.ndarray:
    out = np.full(2 * M * N, np.nan, np.float32)
    run_kernel(build(body, M=M, N=N), (1,), [x, out])
    return out


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_shape_op_matches_numpy_in_the_interpreter(name, rng):
    body, reference = REFERENCES[name]
    x = randf(rng, M, N)
    expected = reference(x).astype(np.float32).ravel()
    out = run_interp(body, x)
    np.testing.assert_allclose(out[:expected.size], expected, rtol=1e-6)
    assert np.isnan(out[expected.size:]).all()  # nothing written past the result


@pytest.mark.parametrize("name, ops", [
    ("reshape", {"reshape"}), ("permute", {"reshape", "permute"}), ("split_join", {"split", "join"}),
    ("interleave", {"join", "reshape"}), ("cat", {"join", "permute", "reshape"}), ("broadcast", {"broadcast_to"}),
])
def test_shape_ops_are_ops_of_their_own_in_the_ssa(name, ops):
    assert ops <= set(ops_of(build(REFERENCES[name][0], M=M, N=N)))


def test_trans_of_a_rank_2_tile_stays_a_trans_op():
    kernel = build(f"""
    @mytriton.jit
    def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
        y = tl.permute({tile_2d()}, 1, 0)
        tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], y)
    """, M=M, N=N)
    assert "trans" in ops_of(kernel) and "permute" not in ops_of(kernel)


def test_an_identity_permutation_or_reshape_is_the_tile_itself():
    kernel = build(f"""
    @mytriton.jit
    def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
        x = {tile_2d()}
        y = tl.trans(tl.reshape(x, (M, N)), 0, 1)
        tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], y)
    """, M=M, N=N)
    assert not {"trans", "permute", "reshape"} & set(ops_of(kernel))


def test_split_gives_the_two_halves_of_the_last_dimension(rng):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, a_ptr, b_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 2 + tl.arange(0, 2)[None, :])
        a, b = x.split()
        tl.store(a_ptr + tl.arange(0, 4), a)
        tl.store(b_ptr + tl.arange(0, 4), b)
    """, signature="*i32, *i32, *i32")
    x = rng.integers(1, 100, (4, 2)).astype(np.int32)
    a, b = np.zeros(4, np.int32), np.zeros(4, np.int32)
    run_kernel(kernel, (1,), [x, a, b])
    np.testing.assert_array_equal(a, x[:, 0])
    np.testing.assert_array_equal(b, x[:, 1])


def test_join_broadcasts_its_operands(rng):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
        y = tl.join(x, tl.load(x_ptr + tl.arange(0, 8))[None, :])
        tl.store(out_ptr + tl.arange(0, 64), tl.reshape(y, 64))
    """)
    x = randf(rng, 4, 8)
    out = np.zeros(64, np.float32)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, np.stack([x, np.broadcast_to(x[0], (4, 8))], -1).ravel())


def test_full_like_takes_a_dtype(rng):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        x = tl.load(x_ptr + tl.arange(0, 8))
        tl.store(out_ptr + tl.arange(0, 8), tl.full_like(x, 7, dtype=tl.int16).to(tl.int32) + x.to(tl.int32))
    """, signature="*fp32, *i32")
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(8, np.int32)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, np.arange(1, 9) + 7)


def test_stores_through_reshaped_or_joined_pointers_are_found():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, out_ptr, y_ptr):
        p = tl.reshape(out_ptr + tl.arange(0, 16), (8, 2))
        q = tl.split(tl.join(y_ptr + tl.arange(0, 8), y_ptr + tl.arange(0, 8)))[0]
        tl.store(p, tl.load(x_ptr + tl.zeros((8, 2), tl.int32)))
        tl.store(q, tl.load(x_ptr + tl.arange(0, 8)))
    """)
    header = json.loads(compile_text(source, "cuda").splitlines()[0].split(": ", 1)[1])
    assert header["stores"] == ["out_ptr", "y_ptr"]


def test_the_rope_kernel_with_split_and_join_matches_numpy(rng, kernel_module):
    from pathlib import Path

    import importlib.util

    path = Path(__file__).parent / "triton_style" / "rope.py"
    spec = importlib.util.spec_from_file_location("rope_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = randf(rng, 3, 2, 16)
    angle = rng.uniform(0, 6, (3, 8)).astype(np.float32)
    cos, sin = np.cos(angle), np.sin(angle)
    out = module.rope(x, cos, sin)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    expected = np.stack([x1 * cos[:, None] - x2 * sin[:, None], x1 * sin[:, None] + x2 * cos[:, None]], -1)
    np.testing.assert_allclose(out, expected.reshape(x.shape), rtol=1e-5, atol=1e-6)


# ---- the SSA text and its stages ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("stage", ["ssa", "opt", "layouts"])
def test_shape_ops_round_trip_through_the_ssa_text(name, stage):
    text = compile_text(kernel_source(REFERENCES[name][0]), stage, defines={"M": M, "N": N})
    assert print_kernel(parse_kernel(text)) == text


# ---- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, words", [
    ("tl.reshape(x, (3, 5))", "cannot be reshaped to (3, 5)"),
    ("tl.reshape(x, (N, M, 0))", "cannot be reshaped"),
    ("tl.reshape(x, (N, M.x))", "has no attribute"),
    ("tl.permute(x, (0, 0))", "permutation of (0, 1), got (0, 0)"),
    ("tl.permute(x, 1, 0, 2)", "permutation of (0, 1)"),
    ("tl.trans(x, 0, 0)", "permutation of (0, 1), got (0, 0)"),
    ("tl.split(x)", "last dimension is 2"),
    ("tl.split(tl.arange(0, 2))", "rank-1"),
    ("tl.join(x, x.to(tl.int32))", "one dtype"),
    ("tl.join(x, tl.zeros((4, 2), tl.float32))", "do not broadcast"),
    ("tl.cat(x, tl.zeros((M, 2 * N), tl.float32))", "one shape"),
    ("tl.cat(x, x, dim=1)", "along dimension 0"),
    ("tl.broadcast_to(x, (M,))", "does not broadcast"),
    ("tl.broadcast_to(x, (2, M, 4))", "do not broadcast"),
    ("tl.reshape(1.0, (1,))", "needs a tile"),
    ("tl.zeros_like(x, dtype=3)", "dtype"),
    ("tl.reshape(x, (N, M), can_reorder=1)", "can_reorder must be True or False"),
])
def test_a_bad_shape_op_is_a_located_error(call, words):
    message = compile_error(f"""
    @mytriton.jit
    def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
        x = {tile_2d()}
        y = {call}
        tl.store(out_ptr, 0.0)
    """, M=M, N=N)
    assert "kernel.py:7:" in message and words in message, message


@pytest.mark.parametrize("text, words", [
    ("reshape {x}, shape=(4, 4) : block<4x4 x f32>", "keeps the number of elements"),
    ("permute {x}, dims=(0, 0) : block<8x8 x f32>", "permutation"),
    ("split {x}, index=0 : vector<8 x f32>", "last dimension is 2"),
    ("join {x}, {x} : block<8x16 x f32>", "block<8x16x2 x f32>"),  # the type its rule gives
])
def test_malformed_shape_ops_in_ssa_text_are_located_errors(text, words):
    from mytriton.passes.verify import verify

    lines = compile_text(kernel_source(RESHAPED), "ssa", defines={"M": M, "N": N}).splitlines()
    # The reshape's line, with the bad op on the same operand in its place.
    index = next(i for i, line in enumerate(lines) if " = reshape " in line)
    result, rest = lines[index].split(" = reshape ")
    operand = rest.split(",")[0]
    location = rest[rest.rindex(" @"):]
    lines[index] = f"{result} = {text.format(x=operand)}{location}"
    with pytest.raises(CompileError) as info:
        verify(parse_kernel("\n".join(lines) + "\n"))
    assert words in str(info.value) and info.value.loc is not None, str(info.value)


@pytest.mark.parametrize("index", [2, -1])
def test_the_index_of_split_is_0_or_1(index):
    from mytriton.ir import opdefs
    from mytriton.types import F32, BlockType, TypeRuleError

    with pytest.raises(TypeRuleError, match="index of 'split' is 0 or 1"):
        opdefs.OPS["split"].infer([BlockType((8, 2), F32)], {"index": index})


def test_the_index_of_split_is_an_integer_not_a_bool():
    from mytriton.ir import opdefs
    from mytriton.types import F32, BlockType, TypeRuleError

    with pytest.raises(TypeRuleError, match="the attribute index of 'split' must be an integer, got true"):
        opdefs.OPS["split"].infer([BlockType((8, 2), F32)], {"index": True})


# ---- CUDA ------------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_cuda_of_the_shape_ops_builds_with_nvcc(name):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(REFERENCES[name][0]), "cuda", defines={"M": M, "N": N})
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


POINTERS_MOVED = """
@mytriton.jit
def k(x_ptr, out_ptr):
    p = tl.reshape(out_ptr + tl.arange(0, 16), (8, 2))
    a, b = tl.split(p)
    tl.store(tl.join(b, a), tl.load(x_ptr + tl.arange(0, 8)[:, None] * 2 + tl.arange(0, 2)[None, :]))
"""


def test_tiles_of_pointers_move_like_any_tile(rng):
    x = randf(rng, 16)
    out = np.zeros(16, np.float32)
    run_kernel(build(POINTERS_MOVED), (1,), [x, out])
    np.testing.assert_array_equal(out, x.reshape(8, 2)[:, ::-1].ravel())


@pytest.mark.nvcc
def test_cuda_stages_tiles_of_pointers_in_shared_memory_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(POINTERS_MOVED), "cuda")
    header = json.loads(cuda.splitlines()[0].split(": ", 1)[1])
    assert header["shared_bytes"] >= 16 * 8  # eight bytes a pointer
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


def test_broadcast_to_of_a_literal_is_a_tile():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr):
        tl.store(out_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :], tl.broadcast_to(2.5, (8, 4)))
    """)
    out = np.zeros(32, np.float32)
    run_kernel(kernel, (1,), [out])
    np.testing.assert_array_equal(out, np.full(32, 2.5, np.float32))


# ---- GPU (the lead runs these on the H200) -------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_shape_ops_match_the_interpreter(kernel_module, name, num_warps):
    # num_warps=1 keeps most elements on their own thread; 4 spreads them (reads through shared memory)
    module = kernel_module(REFERENCES[name][0])
    x = np.random.default_rng(len(name)).standard_normal((M, N)).astype(np.float32)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.full(2 * M * N, np.nan, np.float32)
        module.k[(1,)](x, out, M=M, N=N, num_warps=num_warps, backend=backend)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.gpu
def test_gpu_tiles_of_pointers_move_like_any_tile(kernel_module):
    module = kernel_module(POINTERS_MOVED)
    x = np.random.default_rng(7).standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    module.k[(1,)](x, out, backend="cuda")
    np.testing.assert_array_equal(out, x.reshape(8, 2)[:, ::-1].ravel())
