"""Block pointers and tensor descriptors: tl.make_block_ptr,
tl.advance, tl.load/tl.store with boundary_check and padding_option,
tl.make_tensor_descriptor with desc.load/desc.store, as Triton 3.x defines
them; lowered in the frontend to masked tile accesses, carried by loops as
their offsets, staged by stage-dots in a matmul's K loop. The interpreter
against NumPy (random non-zero data, ragged sizes), the located errors, the
CUDA that nvcc builds and, on the GPU, agreement with the interpreter."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import cdiv, compile_text, kernel_source, ssa_of
from mytriton import compiler, remarks
from mytriton.compiler import Options
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk

# A block of a (M, N) matrix at (pid_m * BM + SHIFT_M, pid_n * BN + SHIFT_N),
# loaded through a block pointer and written whole (padding included) into a
# (grid_m * BM, grid_n * BN) output by plain pointers: the padding shows.
BLOCK_LOAD = """
@mytriton.jit
def k(x_ptr, out_ptr, M, N, stride_m, stride_n, SHIFT_M: tl.constexpr, SHIFT_N: tl.constexpr,
      BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    block = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, stride_n),
                              offsets=(pid_m * BM + SHIFT_M, pid_n * BN + SHIFT_N), block_shape=(BM, BN),
                              order=(1, 0))
    x = tl.load(block, boundary_check={CHECK}, padding_option="{PADDING}")
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(out_ptr + rows[:, None] * (tl.num_programs(1) * BN) + cols[None, :], x)
"""


def block_load(kernel_module, check: str = "(0, 1)", padding: str = "zero"):
    return kernel_module(BLOCK_LOAD.replace("{CHECK}", check).replace("{PADDING}", padding)).k


def expected_blocks(x: np.ndarray, grid: tuple[int, int], block: tuple[int, int], shift: tuple[int, int],
                    checked: tuple[int, ...], fill: float) -> np.ndarray:
    """What each program's block holds: x where every checked coordinate is in
    [0, size) (unchecked ones must be in bounds in the test), else ``fill``."""
    (gm, gn), (bm, bn) = grid, block
    out = np.full((gm * bm, gn * bn), fill, x.dtype)
    for i in range(gm * bm):
        for j in range(gn * bn):
            r = (i // bm) * bm + i % bm + shift[0]
            c = (j // bn) * bn + j % bn + shift[1]
            inside = [0 <= r < x.shape[0], 0 <= c < x.shape[1]]
            if all(inside[d] for d in checked):
                out[i, j] = x[r, c]
    return out


def launch_block_load(kernel, x, block=(16, 32), shift=(0, 0), backend="interp", transposed=False):
    M, N = x.shape
    bm, bn = block
    grid = (cdiv(M, bm), cdiv(N, bn))
    out = np.full((grid[0] * bm, grid[1] * bn), 12345.0, x.dtype)
    memory = np.asfortranarray(x) if transposed else x
    strides = [s // x.itemsize for s in memory.strides]
    kernel[grid](memory.ravel(order="K"), out, M, N, *strides, SHIFT_M=shift[0], SHIFT_N=shift[1], BM=bm, BN=bn,
                 backend=backend)
    return out, grid


# ---- loads -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("padding,fill", [("zero", 0.0), ("nan", np.nan)])
def test_a_ragged_block_reads_its_padding_outside_the_tensor(kernel_module, padding, fill):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 70)).astype(np.float32)  # neither size a multiple of its block
    out, grid = launch_block_load(block_load(kernel_module, padding=padding), x)
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (0, 0), (0, 1), fill))
    assert np.isnan(out).any() == (padding == "nan")


def test_negative_coordinates_are_outside_the_tensor_too(kernel_module):
    """Triton's boundary_check tests 0 <= coordinate < size."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 64)).astype(np.float32)
    out, grid = launch_block_load(block_load(kernel_module), x, shift=(-5, -9))
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (-5, -9), (0, 1), 0.0))
    assert out[0, 0] == 0.0 and out[5, 9] == x[0, 0]


def test_a_check_on_one_dimension_masks_that_dimension_only(kernel_module):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((48, 70)).astype(np.float32)  # rows whole blocks: only the columns need the check
    out, grid = launch_block_load(block_load(kernel_module, check="(1,)"), x)
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (0, 0), (1,), 0.0))
    check = "1"  # one dimension may be given as a number, as Triton allows
    out, grid = launch_block_load(block_load(kernel_module, check=check), x)
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (0, 0), (1,), 0.0))


def test_strides_are_the_parent_tensors_a_column_major_one_too(kernel_module):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 50)).astype(np.float32)
    out, grid = launch_block_load(block_load(kernel_module), x, transposed=True)
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (0, 0), (0, 1), 0.0))


def test_an_integer_block_pads_with_zero(kernel_module):
    rng = np.random.default_rng(5)
    x = rng.integers(1, 1000, (20, 40)).astype(np.int32)
    out, grid = launch_block_load(block_load(kernel_module), x)
    np.testing.assert_array_equal(out, expected_blocks(x, grid, (16, 32), (0, 0), (0, 1), 0))


def test_without_boundary_check_there_is_no_mask():
    kernel = ssa_of(kernel_source(BLOCK_LOAD.replace("boundary_check={CHECK}, ", "").replace("{PADDING}", "zero")),
                    defines=dict(SHIFT_M=0, SHIFT_N=0, BM=16, BN=32))
    (load,) = [op for op in walk(kernel.body) if op.name == "load"]
    assert load.operands[1] is None and load.operands[2] is None


def test_a_one_dimensional_block_pointer(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offset = tl.program_id(0) * BLOCK
        src = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(offset,), block_shape=(BLOCK,), order=(0,))
        dst = tl.make_block_ptr(y_ptr, (n,), (1,), (offset,), (BLOCK,), (0,))
        tl.store(dst, tl.load(src, boundary_check=(0,)) * 3.0, boundary_check=(0,))
    """)
    rng = np.random.default_rng(6)
    x = rng.standard_normal(1000).astype(np.float32)
    y = np.full(1000, 7.0, np.float32)
    module.k[(cdiv(1000, 128),)](x, y, 1000, BLOCK=128, backend="interp")
    np.testing.assert_array_equal(y, x * np.float32(3.0))


# ---- stores ------------------------------------------------------------------------------------------

STORE = """
@mytriton.jit
def k(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    x = tl.load(src, boundary_check=(0, 1))
    tl.store(dst, x + 1.0, boundary_check={CHECK})
"""


def test_a_store_with_boundary_check_drops_what_falls_outside(kernel_module):
    """The output buffer has room past the tensor's (M, N): those elements stay as they were."""
    rng = np.random.default_rng(7)
    M, N = 37, 45
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M + 16) * N + 64, -3.0, np.float32)  # rows past M (and past the end) must stay untouched
    kernel = kernel_module(STORE.replace("{CHECK}", "(0, 1)")).k
    kernel[(cdiv(M, 16), cdiv(N, 16))](x, y, M, N, BM=16, BN=16, backend="interp")
    np.testing.assert_array_equal(y[:M * N].reshape(M, N), x + np.float32(1.0))
    assert (y[M * N:] == -3.0).all()


def test_a_store_checked_on_rows_only_writes_past_the_columns(kernel_module):
    """boundary_check=(0,): columns past N land in the next row's memory (as in Triton); the last row's beyond."""
    M, N = 20, 24
    x = np.arange(1, M * N + 1, dtype=np.float32).reshape(M, N)
    y = np.full(M * N + 64, -3.0, np.float32)
    kernel = kernel_module(STORE.replace("{CHECK}", "(0,)")).k
    kernel[(cdiv(M, 16), 1)](x, y, M, N, BM=16, BN=32, backend="interp")
    np.testing.assert_array_equal(y[:M * N].reshape(M, N), x + np.float32(1.0))
    assert (y[M * N:M * N + 8] == 1.0).all()  # row M-1's columns N..N+7: read as padding 0, written + 1


# ---- loops and branches carry the offsets ----------------------------------------------------------------

ROW_SUMS = """
@mytriton.jit
def k(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    block = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    {LOOP}
    rows = pid * BM + tl.arange(0, BM)
    tl.store(out_ptr + rows, acc, mask=rows < M)
"""

FOR_LOOP = """for start in range(0, N, BN):
        acc += tl.sum(tl.load(block, boundary_check=(0, 1)), axis=1)
        block = tl.advance(block, (0, BN))"""

WHILE_LOOP = """start = 0
    while start < N:
        acc += tl.sum(tl.load(block, boundary_check=(0, 1)), axis=1)
        block = tl.advance(block, (0, BN))
        start += BN"""


@pytest.mark.parametrize("loop", [FOR_LOOP, WHILE_LOOP], ids=["for", "while"])
def test_a_loop_carries_a_block_pointer_that_advance_moves(kernel_module, loop):
    rng = np.random.default_rng(8)
    M, N = 45, 150
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros(M, np.float32)
    kernel = kernel_module(ROW_SUMS.replace("{LOOP}", loop)).k
    kernel[(cdiv(M, 16),)](x, out, M, N, N, BM=16, BN=32, backend="interp")
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_the_loop_carries_the_offsets_only():
    kernel = ssa_of(kernel_source(ROW_SUMS.replace("{LOOP}", FOR_LOOP)), defines=dict(BM=16, BN=32))
    (loop,) = [op for op in walk(kernel.body) if op.name == "for"]
    assert [str(v.type) for v in loop.results] == ["vector<16 x f32>", "i32", "i32"]  # acc, the two offsets


def test_a_runtime_if_yields_the_offsets_its_branches_leave(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, flag, BLOCK: tl.constexpr):
        block = tl.make_block_ptr(x_ptr, (4 * BLOCK,), (1,), (0,), (BLOCK,), (0,))
        if flag > 0:
            block = tl.advance(block, (2 * BLOCK,))
        else:
            block = tl.advance(block, (BLOCK,))
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(block))
    """)
    rng = np.random.default_rng(9)
    x = rng.standard_normal(4 * 32).astype(np.float32)
    for flag, start in ((1, 64), (0, 32)):
        out = np.zeros(32, np.float32)
        module.k[(1,)](x, out, flag, BLOCK=32, backend="interp")
        np.testing.assert_array_equal(out, x[start:start + 32])


# ---- tensor descriptors ------------------------------------------------------------------------------

DESCRIPTOR_COPY = """
@mytriton.jit
def k(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    offs = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    {BODY}
"""


def test_a_descriptor_reads_zeros_out_of_bounds_and_drops_writes_there(kernel_module):
    rng = np.random.default_rng(10)
    M, N = 37, 70
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full(M * N + 128, 5.0, np.float32)
    kernel = kernel_module(DESCRIPTOR_COPY.replace("{BODY}", "dst.store(offs, src.load(offs) * 2.0)")).k
    kernel[(cdiv(M, 16), cdiv(N, 32))](x, y, M, N, BM=16, BN=32, backend="interp")
    np.testing.assert_array_equal(y[:M * N].reshape(M, N), x * np.float32(2.0))
    assert (y[M * N:] == 5.0).all()


def test_the_descriptor_functions_are_the_methods(kernel_module):
    rng = np.random.default_rng(11)
    M, N = 20, 40
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, N), np.float32)
    body = "tl.store_tensor_descriptor(dst, offs, tl.load_tensor_descriptor(src, offs) - 1.0)"
    kernel = kernel_module(DESCRIPTOR_COPY.replace("{BODY}", body)).k
    kernel[(cdiv(M, 16), cdiv(N, 32))](x, y, M, N, BM=16, BN=32, backend="interp")
    np.testing.assert_array_equal(y, x - np.float32(1.0))


def test_a_descriptor_load_sees_zeros_where_the_block_starts_before_the_tensor(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
        tl.store(out_ptr + tl.arange(0, BLOCK), desc.load([n - BLOCK - 5]))
    """)
    x = np.arange(1, 11, dtype=np.float32)  # n = 10 < BLOCK: the block starts at -11
    out = np.full(16, 9.0, np.float32)
    module.k[(1,)](x, out, 10, BLOCK=16, backend="interp")
    np.testing.assert_array_equal(out, np.concatenate([np.zeros(11, np.float32), x[:5]]))


def test_a_descriptor_knows_its_block_shape(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
        tl.store(out_ptr + tl.arange(0, desc.block_shape[0]), desc.load([0]).to(desc.dtype))
    """)
    x = np.arange(1, 33, dtype=np.float32)
    out = np.zeros(32, np.float32)
    module.k[(1,)](x, out, 32, BLOCK=32, backend="interp")
    np.testing.assert_array_equal(out, x)


# ---- matmuls: staged by stage-dots ------------------------------------------------------------------------

BLOCK_PTR_MATMUL = kernel_source("""
@mytriton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
       BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_block = tl.advance(a_block, (0, BK))
        b_block = tl.advance(b_block, (BK, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_block, acc, boundary_check=(0, 1))
""")

DESCRIPTOR_MATMUL = kernel_source("""
@mytriton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr = 32, BN: tl.constexpr = 32, BK: tl.constexpr = 16):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc)
""")

MATMULS = {"block-pointer": BLOCK_PTR_MATMUL, "descriptor": DESCRIPTOR_MATMUL}
SHAPES = [(70, 50, 77), (33, 17, 9), (64, 64, 0), (96, 40, 160)]  # ragged; K < BK; K = 0


def unstaged(source: str):
    return ssa_of(source, optimized=True, file="mm.py", f32_default="ieee")


def staged(source: str):
    from mytriton.passes.stage_dots import StageDotsPass
    from mytriton.passes.verify import verify

    return verify(StageDotsPass().apply(unstaged(source)))


def pipelined(source: str, num_stages: int):
    from mytriton.passes.software_pipeline import SoftwarePipelinePass
    from mytriton.passes.verify import verify

    return verify(SoftwarePipelinePass(num_stages=num_stages).apply(staged(source)))


def names(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def run_matmul(form: str, kernel, shape, a, b):
    from mytriton.backends.interp import run_kernel

    M, N, K = shape
    c = np.full((M, N), np.nan, np.float32)
    strides = [*(s // 4 for s in a.strides), *(s // 4 for s in b.strides), N, 1] if form == "block-pointer" else []
    run_kernel(kernel, (cdiv(M, 32), cdiv(N, 32)), [a, b, c, M, N, K, *strides])
    return c


def matmul_operands(shape, seed: int):
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, (M, K)).astype(np.float32) * rng.choice([-1, 1], (M, K)).astype(np.float32)
    return a, rng.uniform(0.5, 2.0, (K, N)).astype(np.float32)


@pytest.mark.parametrize("form", MATMULS)
def test_the_matmul_is_staged_and_pipelined(form):
    kernel = pipelined(MATMULS[form], 3)
    (loop,) = [op for op in walk(kernel.body) if op.name == "for"]
    assert loop.attrs["pipeline_stages"] == 3
    assert "dot" not in names(kernel) and "load" not in names(kernel)
    assert names(kernel).count("dot_shared") == 1
    assert names(kernel).count("async_copy_strided_to_shared") == 2 * 3
    assert len(loop.results) == 2  # the accumulator and the stage index: the carried offsets are gone


@pytest.mark.parametrize("form", MATMULS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_staged_pipelined_and_unstaged_matmuls_compute_the_same(form, shape):
    a, b = matmul_operands(shape, sum(shape))
    source = MATMULS[form]
    reference = run_matmul(form, unstaged(source), shape, a, b)
    np.testing.assert_allclose(reference, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    for kernel in (staged(source), pipelined(source, 2), pipelined(source, 4)):
        np.testing.assert_array_equal(run_matmul(form, kernel, shape, a, b), reference)


def test_a_block_that_may_start_before_the_matrix_is_staged_with_its_rows_tested_from_0():
    """Where a block may start before the matrix (here pid_m * BM - 1), the
    boundary check's coordinate >= 0 test becomes the copy's: it reads zeros
    before row 0, as the unstaged load does."""
    source = BLOCK_PTR_MATMUL.replace("(pid_m * BM, 0), (BM, BK)", "(pid_m * BM - 1, 0), (BM, BK)")
    kernel = pipelined(source, 3)
    copies = [op for op in walk(kernel.body) if op.name == "async_copy_strided_to_shared"]
    assert [op.attrs.get("lower_bounds") for op in copies[:2]] == [(1, 0), None]  # A, then B
    shape = (40, 30, 20)
    a, b = matmul_operands(shape, 3)
    c = run_matmul("block-pointer", unstaged(source), shape, a, b)
    expected = np.vstack([np.zeros((1, 20), np.float32), a[:-1]]).astype(np.float64) @ b  # C[r] = A[r - 1] @ B
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    for staged_kernel in (staged(source), kernel):
        np.testing.assert_array_equal(run_matmul("block-pointer", staged_kernel, shape, a, b), c)


def test_a_block_pointer_matmul_in_the_cli_emits_dot_shared(tmp_path):
    path = tmp_path / "mm.py"
    path.write_text(BLOCK_PTR_MATMUL)
    staged_text = subprocess.run([sys.executable, "-m", "mytriton", "compile", str(path), "--emit=staged", "-s",
                                  "*fp16, *fp16, *fp32, " + ", ".join(["i32"] * 9)],
                                 capture_output=True, text=True, check=True).stdout
    assert "dot_shared" in staged_text and "pipeline_stages=3" in staged_text and " dot " not in staged_text


@pytest.mark.parametrize("name,signature", [
    ("block_ptr_matmul", "*fp16, *fp16, *fp16, " + ", ".join(["i32"] * 9) + ", 64, 64, 32"),
    ("descriptor_matmul", "*fp16, *fp16, *fp16, i32, i32, i32, 64, 64, 32"),
])
def test_the_triton_style_matmuls_are_staged_and_pipelined(name, signature):
    from conftest import ROOT

    path = ROOT / "tests" / "triton_style" / f"{name}.py"
    staged_text = compile_text(path.read_text(), "staged", str(path), signature=signature)
    assert "dot_shared" in staged_text and "pipeline_stages=3" in staged_text
    assert " = dot " not in staged_text and " = load " not in staged_text


# ---- errors ----------------------------------------------------------------------------------------------

ERRORS = {
    "a shape of the wrong rank": (
        "tl.make_block_ptr(x_ptr, (M,), (N, 1), (0, 0), (16, 16), (1, 0))",
        "block_shape has 2 dimension(s) but shape has 1"),
    "a block_shape that is not constant": (
        "tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (M, 16), (1, 0))",
        "block_shape must be integer constants"),
    "a block_shape that is not a power of two": (
        "tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (12, 16), (1, 0))",
        "must be a power of two"),
    "an order that is not a permutation": (
        "tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 1))",
        "order must be a permutation of (0, 1)"),
    "offsets that are a tile": (
        "tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.arange(0, 16), 0), (16, 16), (1, 0))",
        "each entry of offsets must be an integer scalar, got vector<16 x i32>"),
    "a float stride": (
        "tl.make_block_ptr(x_ptr, (M, N), (N, M * 0.5), (0, 0), (16, 16), (1, 0))",
        "each entry of strides must be an integer scalar, got f32"),
    "a base that is not a pointer": (
        "tl.make_block_ptr(M, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))",
        "needs a scalar pointer as its base"),
}

LOAD_ERRORS = {
    "a bad padding_option": ('tl.load(p, boundary_check=(0, 1), padding_option="one")',
                             "padding_option must be 'zero', 'nan' or ''"),
    "a boundary_check dimension out of range": ("tl.load(p, boundary_check=(0, 2))",
                                                "boundary_check dimension 2 is out of range for a block of rank 2"),
    "a boundary_check dimension twice": ("tl.load(p, boundary_check=(1, 1))", "names a dimension twice"),
    "a mask": ("tl.load(p, mask=M > 0)", "a block pointer takes no mask= or other="),
    "other": ("tl.load(p, other=0.0)", "a block pointer takes no mask= or other="),
    "a store with a mask": ("tl.store(p, tl.zeros((16, 16), tl.float32), mask=M > 0)",
                            "a block pointer takes no mask="),
    "a store of another shape": ("tl.store(p, tl.zeros((16, 32), tl.float32))",
                                 "the value's shape (16, 32) is not the block's (16, 16)"),
    "a store of another dtype": ("tl.store(p, tl.zeros((16, 16), tl.float16))",
                                 "the value's elements are f16 but the block's are f32"),
    "advance with the wrong rank": ("tl.advance(p, (16,))", "the block pointer has 2 dimension(s)"),
    "advance of a plain pointer": ("tl.advance(x_ptr, (0, 16))", "tl.advance needs a block pointer"),
    "arithmetic on a block pointer": ("p + 1", "a block pointer cannot be an operand of 'add'"),
    "nan padding of integers": ('tl.load(q, boundary_check=(0,), padding_option="nan")',
                                "padding_option 'nan' needs floating-point elements"),
}

DESCRIPTOR_ERRORS = {
    "a last stride that is not 1": (
        "tl.make_tensor_descriptor(x_ptr, [M, N], [N, N], [16, 16])", "the last dimension must be contiguous"),
    "a block row under 16 bytes": (
        "tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 2])", "must span at least 16 bytes"),
    "offsets of the wrong rank": (
        "tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16]).load([0])",
        "the descriptor has 2 dimension(s) but the offsets have 1"),
    "a bad padding": (
        "tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16], padding_option='inf')",
        "padding_option must be 'zero' or 'nan'"),
    "tl.load of a descriptor": (
        "tl.load(tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16]))",
        "tl.load needs a pointer, got a tensor descriptor (use desc.load(offsets))"),
    "a constant leading stride off 16 bytes": (
        "tl.make_tensor_descriptor(x_ptr, [M, 6], [6, 1], [16, 8])",
        "a leading stride must be a multiple of 16 bytes, got 6 x f32"),
    "a descriptor method that does not exist": (
        "tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16]).gather([0])",
        "a tensor descriptor has no attribute 'gather'"),
}

ERROR_KERNEL = """
@mytriton.jit
def k(x_ptr, i_ptr, M, N):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
    q = tl.make_block_ptr(i_ptr, (M,), (1,), (0,), (16,), (0,))
    r = {EXPR}
"""


def compile_error(expression: str) -> CompileError:
    source = kernel_source(ERROR_KERNEL.replace("{EXPR}", expression))
    with pytest.raises(CompileError) as info:
        compile_text(source, "ssa", signature="*fp32, *i32, i32, i32")
    return info.value


@pytest.mark.parametrize("case", [*ERRORS, *LOAD_ERRORS, *DESCRIPTOR_ERRORS])
def test_misuse_is_a_located_error(case):
    expression, message = {**ERRORS, **LOAD_ERRORS, **DESCRIPTOR_ERRORS}[case]
    err = compile_error(expression)
    assert message in str(err)
    assert err.loc is not None and err.loc.line == 8  # the line of the misuse (r = ...)


def test_a_descriptors_runtime_stride_is_tested_at_each_launch():
    """Triton's rule for tl.make_tensor_descriptor (leading strides multiples
    of 16 bytes) is not a fact the copies rely on: with K not known a multiple
    of 16 (3000x2000x1000), A's copy is TMA's all the same, and the launcher
    tests K: a launch that breaks the rule runs the cp.async build and
    computes the right tiles (test_tma_gpu.py, K = 1001)."""
    from conftest import ROOT

    path = ROOT / "tests" / "triton_style" / "descriptor_matmul.py"
    kernel = compiler.run_stages(path.read_text(), str(path), "layouts", Options(
        signature="*fp16:16, *fp16:16, *fp16:16, i32, i32:16, i32", num_warps=8, arch="sm_90a",
        defines={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64}))
    (remark,) = remarks.dot_remarks(kernel)
    assert "staged (A TMA (row stride K is tested at each launch: the cp.async build where not a multiple of 16 " \
        "bytes), B TMA)" in remark.message, remark.message


def test_a_loop_that_makes_a_block_pointer_of_a_number_is_an_error():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, M, N):
        p = 0
        for i in range(0, N, 16):
            p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, i), (16, 16), (1, 0))
    """)
    with pytest.raises(CompileError, match="'p' holds the constant 0 on entry and a block pointer at the end"):
        compile_text(source, "ssa", signature="*fp32, i32, i32")


def test_a_loop_that_changes_a_block_pointers_base_is_an_error():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, y_ptr, M, N):
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
        for i in range(0, N, 16):
            p = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (0, i), (16, 16), (1, 0))
    """)
    with pytest.raises(CompileError, match="only its offsets may change") as info:
        compile_text(source, "ssa", signature="*fp32, *fp32, i32, i32")
    assert info.value.loc.line == 8


def test_branches_that_leave_a_block_pointer_and_a_number_are_an_error():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, M, N):
        p = 0
        if M > N:
            p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
    """)
    with pytest.raises(CompileError, match="'p' holds a block pointer after one branch and the constant 0 after the other"):
        compile_text(source, "ssa", signature="*fp32, i32, i32")


def test_the_cli_reports_the_error_with_exit_code_1_and_writes_nothing(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(kernel_source(ERROR_KERNEL.replace("{EXPR}", LOAD_ERRORS["a bad padding_option"][0])))
    out = tmp_path / "k.ssa"
    result = subprocess.run([sys.executable, "-m", "mytriton", "compile", str(path), "--emit=ssa", "-o", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert f"{path}:8:9: error: tl.load: padding_option must be" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


# ---- CUDA --------------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("form,signature", [
    ("block-pointer", "*fp16, *fp16, *fp32, " + ", ".join(["i32"] * 9)),
    ("block-pointer", "*fp32, *fp32, *fp32, " + ", ".join(["i32"] * 9)),
    ("descriptor", "*fp16, *fp16, *fp32, i32, i32, i32"),
])
def test_the_matmuls_build_with_nvcc(form, signature):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(MATMULS[form], "cuda", "mm.py", signature=signature)
    ptx = compile_ptx(cuda, "sm_90")
    assert "cp.async" in ptx  # the pipelined copies


@pytest.mark.nvcc
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_a_padded_block_load_builds_with_nvcc(padding):
    from mytriton.backends.cuda.nvcc import compile_ptx

    source = kernel_source(BLOCK_LOAD.replace("{CHECK}", "(0, 1)").replace("{PADDING}", padding))
    cuda = compile_text(source, "cuda", signature="*fp32, *fp32, i32, i32, i32, i32, 0, 0, 16, 32")
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("source,signature", [
    (STORE.replace("{CHECK}", "(0, 1)"), "*fp32, *fp32, i32, i32, 16, 16"),
    (DESCRIPTOR_COPY.replace("{BODY}", "dst.store(offs, src.load(offs) * 2.0)"), "*fp32, *fp32, i32, i32, 16, 32"),
    (ROW_SUMS.replace("{LOOP}", FOR_LOOP), "*fp32, *fp32, i32, i32, i32, 16, 32"),
    (ROW_SUMS.replace("{LOOP}", WHILE_LOOP), "*fp32, *fp32, i32, i32, i32, 16, 32"),
], ids=["store", "descriptor", "for", "while"])
def test_the_gpu_tests_kernels_build_with_nvcc(source, signature):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(source), "cuda", signature=signature)
    assert ".entry" in compile_ptx(cuda, "sm_90")


# ---- the GPU ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("shift", [(0, 0), (-5, 7)])
def test_gpu_block_loads_match_the_interpreter(kernel_module, padding, shift):
    rng = np.random.default_rng(20)
    x = rng.standard_normal((37, 70)).astype(np.float32)
    kernel = block_load(kernel_module, padding=padding)
    ours, _ = launch_block_load(kernel, x, shift=shift, backend="cuda")
    expected, _ = launch_block_load(kernel, x, shift=shift, backend="interp")
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.gpu
def test_gpu_block_stores_and_descriptors_match_the_interpreter(kernel_module):
    rng = np.random.default_rng(21)
    M, N = 37, 70
    x = rng.standard_normal((M, N)).astype(np.float32)
    store = kernel_module(STORE.replace("{CHECK}", "(0, 1)")).k
    descriptor = kernel_module(DESCRIPTOR_COPY.replace("{BODY}", "dst.store(offs, src.load(offs) * 2.0)")).k
    for kernel, block in ((store, (16, 16)), (descriptor, (16, 32))):
        results = []
        for backend in ("cuda", "interp"):
            y = np.full(M * N + 128, 5.0, np.float32)
            kernel[(cdiv(M, block[0]), cdiv(N, block[1]))](x, y, M, N, BM=block[0], BN=block[1], backend=backend)
            results.append(y)
        np.testing.assert_array_equal(*results)


@pytest.mark.gpu
@pytest.mark.parametrize("loop", [FOR_LOOP, WHILE_LOOP], ids=["for", "while"])
def test_gpu_loops_over_block_pointers_match_the_interpreter(kernel_module, loop):
    rng = np.random.default_rng(22)
    M, N = 45, 150
    x = rng.standard_normal((M, N)).astype(np.float32)
    kernel = kernel_module(ROW_SUMS.replace("{LOOP}", loop)).k
    results = []
    for backend in ("cuda", "interp"):
        out = np.zeros(M, np.float32)
        kernel[(cdiv(M, 16),)](x, out, M, N, N, BM=16, BN=32, backend=backend)
        results.append(out)
    np.testing.assert_allclose(*results, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("form", MATMULS)
@pytest.mark.parametrize("num_stages", [1, 3])
@pytest.mark.parametrize("shape", [(70, 50, 77), (128, 96, 200), (33, 17, 9)], ids=lambda s: "x".join(map(str, s)))
def test_gpu_matmuls_match_the_interpreter(tmp_path, monkeypatch, form, num_stages, shape):
    import importlib.util

    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee")  # exact products on both sides
    path = tmp_path / f"mm_{form}.py"
    path.write_text(MATMULS[form])
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    M, N, K = shape
    a, b = matmul_operands(shape, sum(shape))
    results = []
    for backend in ("cuda", "interp"):
        c = np.full((M, N), np.nan, np.float32)
        strides = [K, 1, N, 1, N, 1] if form == "block-pointer" else []
        module.mm[(cdiv(M, 32), cdiv(N, 32))](a, b, c, M, N, K, *strides, num_stages=num_stages, backend=backend)
        results.append(c)
    np.testing.assert_allclose(*results, rtol=1e-5, atol=1e-4)
