"""`mytriton viz`: pictures of layouts, shared buffers and memory accesses,
checked on the data each picture is drawn from and on the files written."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

from conftest import ROOT
from mytriton import compiler
from mytriton.cli import make_options
from mytriton.ir.layout_attributes import Blocked, Mma, PaddedShared, Slice
from mytriton.types import F16, F32, SharedType
from mytriton.viz import access_svgs, layout_svgs, picture_file_names, record_accesses
from mytriton.viz.layout_pictures import MAX_SIDE, layout_picture, thread_map
from mytriton.viz.shared_pictures import bank_map, conflict_ways
from mytriton_command import run

MATMUL_SIG = "*fp16, *fp16, *fp32, i32, i32, i32"


def laid_out(sample: str, **options):
    text = (ROOT / "samples" / sample).read_text()
    return compiler.run_stages(text, f"samples/{sample}", "layouts", make_options(**options))


def test_a_blocked_layout_puts_each_element_on_the_right_warp_lane_and_slot():
    # 4 contiguous columns per thread, 8 lanes along a row, 4 lanes down, 4 warps down.
    tmap = thread_map(Blocked((1, 4), (4, 8), (4, 1), (1, 0)), (16, 32), 4)
    assert tmap.at(0, 0) == (0, 0, 0)
    assert tmap.at(0, 3) == (0, 0, 3)  # the same thread, its fourth register
    assert tmap.at(0, 4) == (0, 1, 0)
    assert tmap.at(1, 0) == (0, 8, 0)
    assert tmap.at(4, 0) == (1, 0, 0)
    assert tmap.at(15, 31) == (3, 31, 3)
    assert (tmap.holders == 1).all()


def test_a_slice_layout_is_held_by_every_thread_of_the_removed_dimension():
    tmap = thread_map(Slice(1, Blocked((1, 4), (4, 8), (4, 1), (1, 0))), (16,), 4)
    assert tmap.at(5) == (1, 8, 0)  # row 5: warp 1, lane 8 (row 1 of its warp), owned by column 0's lane
    assert (tmap.holders == 8).all()  # the 8 lanes along the columns hold copies


def test_mma_and_wgmma_accumulators_follow_the_ptx_fragment():
    tmap = thread_map(Mma(2, (2, 2)), (32, 16), 4)
    # lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and the next: c0..c3
    assert [tmap.at(0, 0), tmap.at(0, 1), tmap.at(8, 0), tmap.at(8, 1)] == [(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3)]
    assert tmap.at(1, 2) == (0, 5, 0)
    assert tmap.at(16, 0) == (2, 0, 0) and tmap.at(0, 8) == (1, 0, 0)
    wgmma = thread_map(Mma(3, (4, 1), (16, 64, 16)), (64, 64), 4)
    assert wgmma.at(16, 0) == (1, 0, 0) and wgmma.at(0, 8) == (0, 0, 2)


def test_padded_shared_banks_and_conflicts_computed_by_hand():
    plain = bank_map(SharedType((32, 32), F32, PaddedShared(0)))
    padded = bank_map(SharedType((32, 32), F32, PaddedShared(1)))
    assert plain.bank[1, 0] == 0 and padded.bank[1, 0] == 1 and padded.bank[3, 5] == (3 * 33 + 5) % 32
    # A warp reading column 0: every row in bank 0 without padding (32-way), one bank each with it.
    assert conflict_ways(plain.address[:, 0], 4) == [32]
    assert conflict_ways(padded.address[:, 0], 4) == [1]
    # 16-byte chunks of a 32x32 f16 buffer with rows padded by 8 elements (80-byte pitch): the first
    # 8 lanes cover row 0 (banks 0-15) and row 1 (bytes 80-143: banks 20-31 and 0-3): 2 ways.
    f16 = bank_map(SharedType((32, 32), F16, PaddedShared(8)))
    lanes = np.arange(8)
    addresses = f16.address[lanes // 4, lanes % 4 * 8]
    assert list(addresses) == [0, 16, 32, 48, 80, 96, 112, 128]
    assert conflict_ways(addresses, 16) == [2]


def test_a_kernel_gets_one_picture_per_layout_and_per_shared_buffer_with_its_conflicts():
    kernel = laid_out("matmul.py", signature=MATMUL_SIG, arch="sm_80")
    pictures = dict(layout_svgs(kernel))
    titles = list(pictures)
    assert "matmul_kernel: #mma0 over a 64x64 tile" in titles
    buffer = pictures["matmul_kernel: shared buffer dot_a0 (64x32 f16)"]
    assert "read of A by ldmatrix.x4 @24:16" in buffer and "conflict-free" in buffer
    cell = re.search(r"<title>\[17, 2\]: warp (\d+), lane (\d+), slot (\d+)", pictures[titles[2]])
    # row 17 is row 1 of warp row 1 (warps 2 and 3), column 2 is thread-in-group 1 of warp column 0: lane 4 + 1
    assert cell and cell.groups() == ("2", "5", "0")


def test_the_recorder_counts_accesses_and_marks_masked_lanes_of_a_ragged_kernel():
    text = (ROOT / "samples" / "add.py").read_text()
    kernel = compiler.source_to_ssa(text, "samples/add.py", make_options(defines=("BLOCK=64",)))
    n = 100
    x, y, out = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    log = record_accesses(kernel, (2,), [x, y, out, n], programs=[1])
    xs = log.tensors["x_ptr"]
    assert (xs.loads == 1).all() and not xs.stores.any()
    assert (log.tensors["out_ptr"].stores == 1).all() and (out == 2).all()
    assert xs.ghost[:28].tolist() == [1] * 28 and not xs.ghost[28:].any()  # 128 lanes, 28 masked past the end
    mine = log.per_program[1]["x_ptr"]
    assert mine.loads[64:].sum() == 36 and not mine.loads[:64].any() and mine.ghost.sum() == 28
    svg = dict(access_svgs(log, [1]))["add_kernel: accesses to x_ptr by program 1"]
    assert svg.count(">OOB<") == 28


def mytriton(*args: str):
    return run(*args, cwd=ROOT, env={"MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"}, text=True)


def test_the_cli_writes_layout_and_access_pictures(tmp_path):
    result = mytriton("viz", "layouts", "samples/add.py", "-D", "BLOCK=128", "-o", str(tmp_path / "l"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {tmp_path}/l/000-add_kernel-blocked0-over-a-128-tile.svg\n"
    result = mytriton("viz", "accesses", "samples/add.py", "--grid", "cdiv(n, BLOCK)", "--arg", "x_ptr=rand:300",
                      "--arg", "y_ptr=rand:300", "--arg", "out_ptr=zeros:300", "--arg", "n=300",
                      "--program", "1", "-o", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "a").iterdir())[-1] == "005-add_kernel-accesses-to-out_ptr-by-program-1.svg"
    bad = mytriton("viz", "layouts", "-", "-o", str(tmp_path / "bad"))
    assert bad.returncode == 1 and "error:" in bad.stderr and not (tmp_path / "bad").exists()


HOSTILE = "../../x</text><script>alert(1)</script>"


def test_a_hostile_buffer_name_neither_escapes_the_directory_nor_the_svg_text(tmp_path):
    kernel = laid_out("matmul.py", signature=MATMUL_SIG, arch="sm_80")
    dump = tmp_path / "k.ssa"
    dump.write_text(compiler.print_ssa(kernel).replace('name="dot_a0"', f'name="{HOSTILE}"'))
    result = mytriton("viz", "layouts", str(dump), "-o", str(tmp_path / "out"))
    assert result.returncode == 1 and "error:" in result.stderr and not (tmp_path / "out").exists()
    # Past the reader (a kernel object built in Python): escaped in the SVG, never part of a path.
    alloc = next(op for op in kernel.body.ops if op.name == "shared_alloc_stages")
    alloc.attrs["name"] = HOSTILE
    pictures = layout_svgs(kernel)
    assert not any("<script" in svg for _, svg in pictures)
    assert any("&lt;script&gt;" in svg for _, svg in pictures)
    for name in picture_file_names([title for title, _ in pictures]):
        assert re.fullmatch(r"[0-9]{3}-[a-z0-9_-]+\.svg", name)


def test_an_over_large_tile_is_drawn_as_a_clipped_corner_in_bounded_time():
    start = time.perf_counter()
    tmap = thread_map(Blocked((1, 4), (2, 16), (4, 1), (1, 0)), (1024, 1024), 4)
    svg = layout_picture("big", [], tmap)
    assert time.perf_counter() - start < 20
    assert tmap.at(1023, 1023)[0] == 3
    assert svg.count("<rect") <= MAX_SIDE * MAX_SIDE * 2 + 40 and "clipped: showing rows 0-63 of 1024" in svg
    assert len(svg) < 2_000_000


def test_a_kernel_that_is_not_laid_out_is_refused():
    text = (ROOT / "samples" / "add.py").read_text()
    with pytest.raises(ValueError, match="not laid out"):
        layout_svgs(compiler.source_to_ssa(text, "samples/add.py", make_options()))
