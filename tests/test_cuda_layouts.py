"""How tiles are spread over threads on the GPU: values read in the layout
they live in stay in registers; others go through shared memory, within a
48 KiB budget; past 512 elements a thread, loads and stores run as loops over
arrays in local memory, and tiles too large even for those are refused."""
import inspect
import re

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from conftest import compile_text, kernel_source
from mytriton.diagnostics import CompileError

# x is stored as a vector and also broadcast both ways into a matrix: it cannot
# live in one layout that suits all three uses, so the CUDA code converts it.
OUTER = '''
    @mytriton.jit
    def outer(x_ptr, vec_ptr, mat_ptr, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i, mask=i < n, other=0.0)
        tl.store(vec_ptr + i, x * 2.0, mask=i < n)
        mask = (i[:, None] < n) & (i[None, :] < n)
        tl.store(mat_ptr + i[:, None] * n + i[None, :], x[:, None] - x[None, :], mask=mask)
'''


def test_a_tile_read_in_another_layout_goes_through_shared_memory():
    cuda = compile_text(kernel_source(OUTER), "cuda", defines={"BLOCK": 128})
    assert "extern __shared__ __align__(16) unsigned char smem[];  // 512 bytes at launch" in cuda
    assert '"shared_bytes": 512' in cuda.split("\n", 1)[0]
    assert "__syncthreads();" in cuda


def test_a_load_of_fewer_elements_than_threads_is_loaded_again_in_another_layout():
    # 64 elements, 128 threads: reading them again costs less than an exchange and two barriers.
    cuda = compile_text(kernel_source(OUTER), "cuda", defines={"BLOCK": 64})
    assert "smem" not in cuda.split("\n", 1)[1] and "__syncthreads();" not in cuda
    assert cuda.count("// load @") == 3  # for the vector, the rows and the columns of the matrix


def test_a_row_reduction_read_back_against_its_rows_stays_in_registers():
    cuda = compile_text(kernel_source('''
        @mytriton.jit
        def center(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
            offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
            x = tl.load(x_ptr + offs)
            tl.store(out_ptr + offs, x - tl.sum(x, axis=1)[:, None] / BN)
    '''), "cuda", defines={"BM": 4, "BN": 128})
    assert "smem" not in cuda  # the row sum lives on the threads that hold the row
    assert "__shfl_xor_sync" in cuda


BOTH_WAYS = kernel_source('''
    @mytriton.jit
    def both_ways(x_ptr, a_ptr, b_ptr, N: tl.constexpr):
        r = tl.arange(0, 2)
        c = tl.arange(0, N)
        x = tl.load(x_ptr + c)
        tl.store(a_ptr + c[:, None] * 2 + r[None, :], x[:, None] + r[None, :])
        tl.store(b_ptr + r[:, None] * N + c[None, :], x[None, :] + r[:, None])
''')


def test_shared_memory_over_227_kib_is_refused_at_the_source_line():
    # N = 16384: a 64 KiB copy of x, within sm_90's 227 KiB; 65536: 256 KiB, past it.
    assert '"shared_bytes": 65536' in compile_text(BOTH_WAYS, "cuda", defines={"N": 16384}, num_warps=32)
    with pytest.raises(CompileError, match=r"needs 262144 bytes of shared memory.*232448-byte \(227 KiB\)") as info:
        compile_text(BOTH_WAYS, "cuda", defines={"N": 65536}, num_warps=32)
    assert info.value.loc.line == 8  # the load of x


def test_shared_memory_over_48_kib_is_refused_at_the_source_line():
    # On a GPU that cannot opt in past 48 KiB: the second store reads a 64 KiB copy of x.
    assert '"shared_bytes": 4096' in compile_text(BOTH_WAYS, "cuda", defines={"N": 1024}, num_warps=32,
                                                  shared_budget=48 * 1024)
    with pytest.raises(CompileError, match=r"needs 65536 bytes of shared memory.*48 KiB") as info:
        compile_text(BOTH_WAYS, "cuda", defines={"N": 16384}, num_warps=32, shared_budget=48 * 1024)
    assert info.value.loc.line == 8  # the load of x


INCREMENT = '''
    @mytriton.jit
    def big(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
'''


def test_a_tile_too_large_for_the_threads_is_refused():
    with pytest.raises(CompileError, match=r"puts 16384 elements on each of 32 threads, over the limit of 8192"):
        compile_text(kernel_source(INCREMENT), "cuda", defines={"BLOCK": 2 ** 19}, num_warps=1)


def test_past_512_elements_a_thread_loads_and_stores_run_as_a_loop_over_local_arrays():
    # Liger-Kernel's multi-token attention masks a 512x512 tile on 4 warps: 2048 a thread.
    cuda = compile_text(kernel_source(INCREMENT), "cuda", defines={"BLOCK": 262144})
    assert re.search(r"float t\d+\[2048\];", cuda)  # the load, held for the store: local memory
    assert cuda.count("#pragma unroll 4\n") == 2 and cuda.count("for (int k = 0; k < 2048; ++k)") == 2


@mytriton.jit
def causal_mask(scores_ptr, out_ptr, L, BLOCK: tl.constexpr):
    """Liger-Kernel's multi-token attention mask, in small: the future and
    the outside masked to -1e9 on the load, the inside stored."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = (rows[:, None] < L) & (cols[None, :] < L)
    offs = rows[:, None] * L + cols[None, :]
    future = cols[None, :] > rows[:, None]
    x = tl.load(scores_ptr + offs, mask=inside & ~future, other=-1e9)
    tl.store(out_ptr + offs, x, mask=inside)


def masked(scores: np.ndarray) -> np.ndarray:
    n = scores.shape[0]
    return np.where(np.arange(n)[None, :] > np.arange(n)[:, None], np.float32(-1e9), scores)


def test_a_2048_element_a_thread_mask_matches_numpy_in_the_interpreter():
    L = 700
    scores = np.random.default_rng(L).standard_normal((L, L)).astype(np.float32)
    out = np.full((L, L), np.nan, np.float32)
    causal_mask[(2, 2)](scores, out, L, BLOCK=512, num_warps=4, backend="interp")
    np.testing.assert_array_equal(out, masked(scores))


@pytest.mark.nvcc
def test_a_2048_element_a_thread_mask_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(inspect.getsource(causal_mask.fn)), "cuda",
                        signature="*fp32:16, *fp32:16, i32", defines={"BLOCK": 512}, num_warps=4)
    assert "2048 slot(s) per thread" in cuda
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
def test_gpu_a_2048_element_a_thread_mask_matches_numpy():
    import torch

    L = 700  # ragged: the second block of rows and columns is mostly outside
    scores = np.random.default_rng(L).standard_normal((L, L)).astype(np.float32)
    out = torch.full((L, L), float("nan"), device="cuda")
    causal_mask[(2, 2)](torch.from_numpy(scores).cuda(), out, L, BLOCK=512, num_warps=4, backend="cuda")
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), masked(scores))


def test_a_reduction_past_512_elements_a_thread_is_refused():
    with pytest.raises(CompileError, match=r"puts 1024 elements on each of 128 threads, over the limit of 512 "
                                           r"per thread for a sum"):
        compile_text(kernel_source('''
            @mytriton.jit
            def total(x_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs)))
        '''), "cuda", defines={"BLOCK": 131072})


def test_a_65536_element_row_on_four_warps_compiles():
    # 512 elements per thread, as Liger-Kernel's group norm launches it.
    cuda = compile_text(kernel_source('''
        @mytriton.jit
        def row(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    '''), "cuda", defines={"BLOCK": 65536})
    assert "512 slot(s) per thread" in cuda


@pytest.mark.parametrize("block", [64, 128])
def test_layout_conversions_match_numpy_in_the_interpreter(kernel_module, block):
    module = kernel_module(OUTER)
    n = block - 14
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    vec, mat = np.full(n, np.nan, np.float32), np.full((n, n), np.nan, np.float32)
    module.outer[(1,)](x, vec, mat, n, BLOCK=block, backend="interp")
    np.testing.assert_allclose(vec, 2 * x)
    np.testing.assert_allclose(mat, x[:, None] - x[None, :])


@pytest.mark.gpu
@pytest.mark.parametrize("block", [64, 128])  # loaded again, converted
def test_layout_conversions_match_numpy_on_the_gpu(kernel_module, block):
    module = kernel_module(OUTER)
    n = block - 14
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    vec, mat = np.full(n, np.nan, np.float32), np.full((n, n), np.nan, np.float32)
    module.outer[(1,)](x, vec, mat, n, BLOCK=block, backend="cuda")
    np.testing.assert_allclose(vec, 2 * x)
    np.testing.assert_allclose(mat, x[:, None] - x[None, :])


@mytriton.jit
def pick_and_total(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    # A tile smaller than a warp, reduced whole and picked from element by element
    # (Liger's attn_res: tl.sum(tl.where(arange == i, alpha, 0)) for each i).
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    total = tl.sum(x, axis=0)
    for i in tl.static_range(0, BLOCK):
        picked = tl.sum(tl.where(offs == i, x, 0.0))
        tl.store(out_ptr + i, picked / total, mask=i < N)


TOTAL = '''
@mytriton.jit
def total(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs)))
'''


def test_a_reduction_of_a_tile_each_warp_holds_whole_needs_no_other_warp():
    cuda = compile_text(kernel_source(TOTAL), "cuda", defines={"BLOCK": 8}, num_warps=8)
    assert "each warp's lanes hold the whole of the reduced dimension" in cuda
    assert '"shared_bytes": 0' in cuda and "_warps = reinterpret_cast" not in cuda


def test_a_reduction_warps_split_still_meets_in_shared_memory():
    cuda = compile_text(kernel_source(TOTAL), "cuda", defines={"BLOCK": 1024}, num_warps=8)
    assert "_warps = reinterpret_cast" in cuda


@pytest.mark.parametrize("backend", ["interp", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("n", [8, 5])
def test_a_small_tile_picked_and_totalled_on_8_warps_matches_numpy(n, backend):
    x = np.random.default_rng(n).uniform(0.5, 2.0, 8).astype(np.float32)
    out = np.full(8, np.nan, np.float32)
    pick_and_total[(1,)](x, out, n, BLOCK=8, num_warps=8, backend=backend)
    np.testing.assert_allclose(out[:n], x[:n] / x[:n].sum(), rtol=1e-6)


# ---- warpgroups splitting N (8 warps over 64 rows) ---------------------------------------------------

def _value(expr: str, **names) -> int:
    """A C integer expression of the layouts (/, %, +, *) evaluated for ``names``."""
    for name, number in names.items():
        expr = re.sub(rf"\b{name}\b", str(number), expr)
    return eval(expr.replace("/", "//"), {"__builtins__": {}})


@pytest.mark.parametrize("shape,groups,instr_n", [((64, 128), 2, 64), ((64, 64), 2, 32), ((64, 256), 4, 64),
                                                  ((128, 128), 2, 64)])
def test_a_warpgroup_split_holds_each_element_once_where_wgmma_writes_it(shape, groups, instr_n):
    from mytriton.backends.cuda.thread_coordinates import Layout, MmaLayout
    from mytriton.ir.layout_attributes import Mma

    M, N = shape
    layout = Layout.of(MmaLayout.of(Mma(3, (4, groups), (16, instr_n, 16)), shape))
    rows_dim, cols_dim = layout.dims
    holder = {}
    for tid in range(128 * groups):
        position = {d: str(_value(layout.parent.thread_position(d, "tid"), tid=tid)) for d in (0, 1)}
        for k in range(layout.slots):
            at = tuple(_value(c) for c in layout.coordinates(str(k), position))
            assert at not in holder
            holder[at] = (tid, k)
    assert len(holder) == M * N
    # m64nNk16's accumulator: warp w % 4 of warpgroup g, lane l, register i of its instruction nb
    n_group = N // groups
    for tid in range(128 * groups):
        group, warp, lane = tid // 128, tid // 32 % 4, tid % 32
        for rm in range(M // 64):
            for nb in range(n_group // instr_n):
                for i in range(instr_n // 2):
                    digits = {rows_dim: str(2 * rm + i % 4 // 2), cols_dim: str(2 * (nb * instr_n // 8 + i // 4) + i % 2)}
                    row = rm * 64 + warp * 16 + lane // 4 + 8 * (i % 4 // 2)
                    col = group * n_group + nb * instr_n + i // 4 * 8 + lane % 4 * 2 + i % 2
                    assert holder[(row, col)] == (tid, _value(layout.slot_of(digits)))
