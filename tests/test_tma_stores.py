"""The tma-stores pass's decisions beyond one store's facts (the lit tests in
tests/lit/tma-stores have those): what the dot's remark says, --no-tma, a
store in a loop, the occupancy rule, the build without TMA, and what the
interpreter makes of the op."""
from pathlib import Path

import numpy as np
import pytest

from conftest import load_sample
from mytriton import compiler, remarks
from mytriton.backends.interp import run_kernel
from mytriton.backends.cuda.tma_copies import tensor_maps, without_tma
from mytriton.ir.ssa import walk

ROOT = Path(__file__).resolve().parent
DESCRIPTOR = ROOT / "triton_style" / "descriptor_matmul.py"
PERSISTENT = ROOT / "triton_style" / "persistent_matmul.py"
ALIGNED = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16"
TILES = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64}


def laid_out(path: Path = DESCRIPTOR, signature: str = ALIGNED, defines=None, **options):
    options = compiler.Options(signature=signature, num_warps=options.pop("num_warps", 4),
                               defines=defines or TILES, **options)
    return compiler.run_stages(path.read_text(), str(path), "layouts", options)


def said(kernel) -> str:
    return remarks.render(remarks.dot_remarks(kernel))


def stores(kernel, name="store_tile"):
    return [op for op in walk(kernel.body) if op.name == name]


def test_the_descriptor_s_store_is_a_tma_store_and_the_remark_says_so():
    kernel = laid_out()
    (store,) = stores(kernel)
    assert store.attrs["engine"] == "tma" and not stores(kernel, "store")
    assert "result stored by TMA from shared memory (128x128, tma-stores)" in said(kernel)
    assert [(m.base, m.box_cols, m.box_rows) for m in tensor_maps(kernel)][-1] == ("c_ptr", 64, 128)


def test_an_unaligned_base_keeps_the_store_and_the_remark_says_why():
    kernel = laid_out(signature="*fp16:16, *fp16:16, *fp16, i32:16, i32:16, i32:16")
    assert not stores(kernel) and stores(kernel, "store")
    assert "(not TMA: its base is not proven 16-byte aligned)" in said(kernel)


def test_no_tma_keeps_the_store_exchanged_through_shared_memory():
    kernel = laid_out(tma=False)
    assert not stores(kernel)
    assert "result exchanged through shared memory, stored 16 bytes a thread at a time (not TMA: TMA is off " \
           "(--no-tma))" in said(kernel)


def test_a_store_inside_the_tile_loop_of_a_persistent_kernel_keeps_the_store():
    kernel = laid_out(PERSISTENT, "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, "
                                  "i32:16, 1",
                      {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                       "NUM_SMS": 132}, kernel="matmul_kernel_persistent")
    assert not stores(kernel)
    assert "(not TMA: it is inside a loop or a branch)" in said(kernel)


def test_a_stage_that_alone_would_make_the_launch_opt_in_keeps_the_store():
    # A 128x256 f32 tile (128 KiB) over 2 stages of 16-deep tiles (24 KiB): staged, it
    # would be the only reason for more than 48 KiB (the exchange's rule, layouts.exchange_fits).
    kernel = laid_out(Path(load_sample("matmul").__file__), "*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16",
                      {"BM": 128, "BN": 256, "BK": 16}, num_warps=8, num_stages=2)
    assert not stores(kernel)
    assert "would be the only reason for the launch to opt into more than 49152 bytes" in said(kernel)


def test_the_build_without_tma_stores_each_thread_s_elements_where_in_bounds():
    cuda = compiler.emit_cuda(without_tma(laid_out()))
    assert "store_tile @49:5 element by element" in cuda
    assert "cp.async.bulk" not in cuda and "tensor_maps" not in cuda.splitlines()[0]


def test_the_interpreter_stores_the_tile_where_in_bounds():
    text = compiler.print_ssa(laid_out(defines={"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}))
    assert "store_tile" in text
    M, N, K = 80, 96, 48
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    whole = np.full((M + 2, N), 7, dtype=np.float16)
    run_kernel(compiler.read_ssa(text, str(DESCRIPTOR)), (2, 2, 1), [a, b, whole, M, N, K])
    np.testing.assert_allclose(whole[:M].astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=2e-1)
    assert (whole[M:] == 7).all()


def staged_byte(row, col, rows: int, nbytes: int, swizzle: int):
    """Where tile_stores.py stages element (row, col): its box, row and byte, the 16-byte chunk swizzled as TMA's."""
    box_cols = swizzle // nbytes
    byte = col // box_cols * (box_cols * rows * nbytes) + row * swizzle + col % box_cols * nbytes
    return byte ^ (((byte >> 7) & (swizzle // 16 - 1)) << 4)


@pytest.mark.parametrize("shape,warps,instr,nbytes", [
    ((128, 128), (4, 1), (16, 128, 16), 2), ((64, 64), (4, 1), (16, 64, 16), 2), ((128, 256), (8, 1), (16, 256, 16), 2),
    ((128, 256), (4, 2), (16, 128, 16), 2), ((64, 16), (4, 1), (16, 16, 16), 2), ((64, 32), (4, 1), (16, 32, 16), 2),
    ((128, 128), (4, 1), (16, 128, 8), 4), ((64, 128), (4, 1), (16, 128, 8), 4), ((256, 128), (8, 1), (16, 128, 16), 4),
])
def test_each_thread_stages_its_fragments_at_its_part_of_the_address_xor_the_slot_s(shape, warps, instr, nbytes):
    # The lowering writes slot k of a thread at (the thread's part) ^ (the slot's part): exact only
    # where the two parts of every coordinate fall in different bits. Evaluated for every thread and
    # slot (the expressions the CUDA holds), it must equal the whole coordinate's place, and the tile
    # must land on its bytes once each.
    from mytriton.backends.cuda.thread_coordinates import tile_layout
    from mytriton.backends.cuda.tma_copies import swizzle_of
    from mytriton.ir.layout_attributes import Mma
    from mytriton.viz.cexpr import evaluate

    layout = tile_layout(Mma(version=3, warps_per_cta=warps, instr_shape=instr), shape)
    parent, digits = layout.parent, layout.digits("k")
    positions = {p: f"({parent.thread_position(p, 'threadIdx.x')})" for p in range(parent.rank)}
    grid = (32 * warps[0] * warps[1], layout.slots)
    env = {"threadIdx.x": np.arange(grid[0])[:, None], "k": np.arange(grid[1])[None, :]}

    def values(texts):
        return [np.broadcast_to(np.asarray(evaluate(text, env), dtype=np.int64), grid) for text in texts]

    whole = values(layout.coordinates("k", positions))
    thread = values(parent.coordinate(p, "0", positions[p]) for p in range(2))
    slot = values(parent.coordinate(p, digits[p], "0") for p in range(2))
    swizzle = swizzle_of(shape[1], nbytes)
    at = staged_byte(*whole, shape[0], nbytes, swizzle)
    assert (at == staged_byte(*thread, shape[0], nbytes, swizzle) ^ staged_byte(*slot, shape[0], nbytes, swizzle)).all()
    assert sorted(set(at.reshape(-1).tolist())) == list(range(0, shape[0] * shape[1] * nbytes, nbytes))
