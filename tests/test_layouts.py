"""The layouts stage: every tile gets a layout in the SSA text, conversions are
explicit ops, the verifier checks layouts, and emit-cuda renders what the
laid-out SSA says (an edited layout changes the CUDA, nothing else decides).
What the stage writes for given SSA is tested as text in tests/lit/layouts/."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import compile_text, kernel_source, sample_names, sample_options
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.backends.cuda.emitter import HEADER_PREFIX
from mytriton.backends.cuda.thread_coordinates import tile_layout
from mytriton.ir.layout_attributes import Blocked, PaddedShared, Slice, default_blocked, fma_dot_layout
from mytriton.ir.ssa import walk
from mytriton.types import BlockType, SharedType

SAMPLES = sorted(sample_names())


def laid_out_text(name: str, **extra) -> str:
    from conftest import SAMPLES as SAMPLE_DIR

    source = (SAMPLE_DIR / f"{name}.py").read_text()
    return compile_text(source, "layouts", f"samples/{name}.py", **{**sample_options(name), **extra})


def read(text: str):
    return compiler.verify(compiler.read_ssa(text, "k.ssa"))


def cuda_of(text: str) -> str:
    return compiler.emit_cuda(read(text))


def unplanned(text: str) -> str:
    """Laid-out SSA without allocate-shared's plan (the header's
    ``shared_memory(...)`` and every buffer's ``offset``), as before that pass."""
    return re.sub(r", offset=\d+", "", re.sub(r" shared_memory\([^)]*\)", "", text))


def replanned_cuda_of(text: str) -> str:
    """CUDA for laid-out SSA whose shared buffers were edited: their copies'
    chunks, the dots' reads of them and their places decided again, as
    ``mytriton opt -p copy-widths,read-widths,allocate-shared`` decides them."""
    from mytriton.backends.cuda.allocate_shared import AllocateSharedPass
    from mytriton.backends.cuda.copy_widths import CopyWidthsPass
    from mytriton.backends.cuda.read_widths import ReadWidthsPass

    return compiler.emit_cuda(AllocateSharedPass().apply(ReadWidthsPass().apply(CopyWidthsPass().apply(read(text)))))


def reread_cuda_of(text: str) -> str:
    """CUDA for laid-out SSA whose dot layout was edited: the dots' read
    widths decided again, as ``mytriton opt -p read-widths`` decides them."""
    from mytriton.backends.cuda.read_widths import ReadWidthsPass

    return compiler.emit_cuda(ReadWidthsPass().apply(read(text)))


# ---- what the stage writes ----------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_every_tile_and_shared_buffer_of_a_sample_has_a_layout(name):
    kernel = read(laid_out_text(name))
    assert kernel.num_warps == 4
    for op in walk(kernel.body):
        for value in [*op.results, *(a for r in op.regions for a in r.args)]:
            if isinstance(value.type, (BlockType, SharedType)):
                assert value.type.layout is not None, f"{op.name} in {name}"


@pytest.mark.parametrize("name", SAMPLES)
def test_laid_out_text_prints_back_as_it_parses(name):
    text = laid_out_text(name)
    assert compiler.print_ssa(compiler.read_ssa(text, "k.ssa")) == text


def test_layouts_are_defined_once_before_the_kernel_and_named_by_alias():
    text = laid_out_text("softmax")
    head, kernel = text.split("kernel ", 1)
    assert head == ("#blocked0 = blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], "
                    "order=[0]>\n")
    assert " num_warps=4 " in kernel
    assert ": vector<1024 x f32, #blocked0> @10:9" in kernel








def test_an_index_tile_wanted_in_two_layouts_is_computed_twice_not_converted():
    text = laid_out_text("matmul")
    aranges = re.findall(r"= arange start=0, end=64 : vector<64 x i32, (#\w+)>", text)
    assert sorted(aranges) == ["#slice0", "#slice1"]
    # the one conversion is the accumulator's, exchanged before its store
    assert re.findall(r"convert_layout .* : (block<[^,]*)", text) == ["block<64x64 x f32"]


def test_a_dots_a_buffer_is_padded_by_16_bytes_and_its_b_buffer_is_not():
    text = laid_out_text("matmul", f32_default="ieee", num_stages=1)
    assert "#padded_shared0 = padded_shared<pad=4, order=[1, 0]>" in text
    assert "#padded_shared1 = padded_shared<pad=0, order=[1, 0]>" in text
    assert "shared<64x32 x f32, #padded_shared0>" in text
    assert "shared<32x64 x f32, #padded_shared1>" in text


def test_the_a_buffer_stays_unpadded_where_padding_would_pass_the_shared_budget():
    # 128x64 + 64x64 f32 tiles fill 48 KiB (a GPU that cannot opt in to more) exactly.
    text = laid_out_text("matmul", f32_default="ieee", defines={"BM": 128, "BN": 64, "BK": 64},
                         num_stages=1, shared_budget=48 * 1024)
    assert "padded_shared<pad=4" not in text
    assert "shared<128x64 x f32, #padded_shared0>" in text


def test_three_stages_of_64x64x32_f32_keep_their_padding_in_sm_90s_budget():
    # 3 x (64x32 + 32x64) f32 is 48 KiB: padding A takes it past 48 KiB, within 227 KiB.
    text = laid_out_text("matmul", f32_default="ieee")
    assert "pipeline_stages=3" in text
    assert "#padded_shared0 = padded_shared<pad=4, order=[1, 0]>" in text
    assert "shared<192x32 x f32, #padded_shared0>" in text
    header = json.loads(cuda_of(text).split("\n", 1)[0][len(HEADER_PREFIX):])
    assert header["shared_bytes"] == 192 * 36 * 4 + 96 * 64 * 4


def test_the_fma_dot_layout_gives_each_thread_a_register_tile():
    # (shape, warps) -> rows x columns of outputs per thread, through lanes 16x2
    expected = {((64, 64), 4): Blocked((1, 4), (16, 2), (1, 4), (1, 0)),
                ((128, 128), 4): Blocked((1, 4), (16, 2), (1, 4), (1, 0)),
                ((128, 128), 8): Blocked((1, 4), (16, 2), (1, 8), (1, 0)),
                ((64, 64), 8): Blocked((1, 4), (16, 2), (1, 8), (1, 0))}
    for (shape, warps), layout in expected.items():
        assert fma_dot_layout(shape, warps) == layout, (shape, warps)


@pytest.mark.parametrize("warps", [1, 2, 4, 8])
@pytest.mark.parametrize("shape", [(16, 16), (32, 128), (64, 64), (128, 64), (128, 128), (16, 64)])
def test_the_fma_dot_layout_fits_and_holds_the_fewest_outputs_per_thread(shape, warps):
    layout = fma_dot_layout(shape, warps)
    assert layout.problem(warps) is None
    parent = tile_layout(layout, shape).parent
    outputs = parent.slots_per_dim(0) * parent.slots_per_dim(1)
    assert outputs == max(4, shape[0] * shape[1] // (32 * warps))  # 4: one 16-byte run of columns
    assert parent.size_per_thread[1] == 4


def test_an_fma_dot_anchors_the_accumulator_the_loop_carries_and_the_store():
    text = laid_out_text("matmul", f32_default="ieee", num_stages=1)
    fma = "#blocked0 = blocked<size_per_thread=[1, 4], threads_per_warp=[16, 2], warps_per_cta=[1, 4], order=[1, 0]>"
    assert fma in text
    assert re.search(r"= for .* : block<64x64 x f32, #blocked0>", text)
    assert re.search(r"= dot_shared %0, %1, %\d+, .* : block<64x64 x f32, #blocked0>", text)
    assert "convert_layout" not in text


def test_default_layouts_spread_rows_over_warps_and_columns_over_lanes():
    assert default_blocked((64, 64), 4) == Blocked((1, 1), (1, 32), (4, 1), (1, 0))
    assert default_blocked((4, 256), 4) == Blocked((1, 1), (1, 32), (4, 1), (1, 0))
    assert default_blocked((16,), 4) == Blocked((1,), (32,), (4,), (0,))






# ---- the verifier ---------------------------------------------------------------------------




def test_a_layout_of_another_rank_than_its_tile_is_refused():
    text = laid_out_text("add").replace(
        "blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0]>",
        "blocked<size_per_thread=[1, 1], threads_per_warp=[1, 32], warps_per_cta=[4, 1], order=[1, 0]>")
    with pytest.raises(CompileError, match="has 2 dimension\\(s\\) but the tile has 1"):
        read(text)




def test_a_layout_in_ssa_that_is_not_laid_out_is_refused():
    text = laid_out_text("add").replace(" num_warps=4", "")
    with pytest.raises(CompileError, match="the kernel is not laid out"):
        read(text)


def test_a_tile_without_a_layout_in_laid_out_ssa_is_refused():
    text = laid_out_text("add").replace(", #blocked0>", ">", 1)
    with pytest.raises(CompileError, match="has none"):
        read(text)


def test_a_shared_layout_on_a_tile_is_refused():
    text = laid_out_text("matmul", f32_default="ieee").replace("block<64x64 x f32, #blocked0>", "block<64x64 x f32, #padded_shared0>")
    with pytest.raises(CompileError, match="is not a layout for a tile"):
        read(text)


@pytest.mark.parametrize("edit,message", [
    (("= blocked<", "= striped<"), "unknown layout 'striped'"),
    (("order=[0]>", "order=[0], swizzle=[1]>"), "'blocked' has no field 'swizzle'"),
    ((", order=[0]>", ">"), "'blocked' needs the field 'order'"),
    ((", #blocked0>", ", #blocked7>"), "layout #blocked7 is not defined"),
    (("kernel ", "#blocked0 = slice<dim=0, parent=#blocked0>\nkernel "), "layout #blocked0 is defined twice"),
])
def test_malformed_layout_text_is_a_located_error(edit, message):
    text = laid_out_text("add").replace(*edit, 1)
    with pytest.raises(CompileError, match=re.escape(message)) as err:
        read(text)
    assert err.value.loc is not None and err.value.loc.line >= 1


# ---- emit-cuda renders the layouts ------------------------------------------------------------


def test_emit_cuda_refuses_ssa_that_is_not_laid_out():
    kernel = compiler.read_ssa(compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 1.0, mask=offs < n)
    """), "staged"), "k.ssa")
    with pytest.raises(CompileError, match="run the layouts stage before emit-cuda"):
        compiler.emit_cuda(kernel)


def test_an_edited_blocked_layout_changes_the_cuda_slots():
    text = laid_out_text("add")
    wider = text.replace("size_per_thread=[1]", "size_per_thread=[4]")
    assert "2 slot(s) per thread" in cuda_of(text)  # 256 elements over 128 threads
    assert "4 slot(s) per thread" in cuda_of(wider) and "2 slot(s)" not in cuda_of(wider)


def test_an_edited_shared_padding_changes_the_buffers():
    text = laid_out_text("matmul", f32_default="ieee", num_stages=1).replace("pad=4", "pad=1")
    cuda = replanned_cuda_of(text)
    assert "// 64x32, row-major, 1 padding element(s) per row, 8448 bytes" in cuda  # 64 rows of 32 + 1
    # rows of 33 floats are not whole 16-byte units: A is read one value at a time
    assert "* 33 + kk]" in cuda and "a_at" not in cuda
    # the 16-byte reads of A that read-widths chose for rows of 36 floats do not fit rows of 33
    assert "read_widths=(4, 4)" in text
    with pytest.raises(CompileError, match=r"this dot_shared cannot read A 4 elements at a time .* run read-widths"):
        cuda_of(text)


def test_a_buffer_edited_past_its_place_in_the_plan_is_refused():
    text = laid_out_text("matmul", f32_default="ieee", num_stages=1).replace("pad=4", "pad=12")
    # dot_a0 grows to 64 rows of 44 f32 (11264 bytes), over dot_b0's place at 9216.
    with pytest.raises(CompileError, match=r"the buffer takes bytes 9216 to 17408, which overlap 'dot_a0' "
                                           r"\(0 to 11264\)"):
        compiler.verify(read(text))


def test_an_edited_dot_layout_changes_the_register_tile_and_its_reads():
    text = laid_out_text("matmul", f32_default="ieee", num_stages=1)
    cuda = cuda_of(text)
    assert "// 4x8 outputs per thread" in cuda
    assert "const unsigned b_at = (unsigned)__cvta_generic_to_shared(shared_dot_b0);" in cuda
    # one column per thread and run: B is read one value at a time, once read-widths has decided again
    edited = text.replace("size_per_thread=[1, 4], threads_per_warp=[16, 2]",
                          "size_per_thread=[1, 1], threads_per_warp=[16, 2]")
    narrow = reread_cuda_of(edited)
    assert "// 4x8 outputs per thread" in narrow
    # A still 16 bytes at a time beside B's reads one by one: as C++ vector reads (no ld.shared)
    assert "b_at" not in narrow and "reinterpret_cast<const float4*>(&shared_dot_a0" in narrow
    # the widths chosen for the layout before the edit are refused, not followed
    with pytest.raises(CompileError, match=r"this dot_shared cannot read B 4 elements at a time .* run read-widths"):
        cuda_of(edited)


def test_a_dot_without_read_widths_is_refused_by_the_printer_and_decided_before_it():
    from mytriton.backends.cuda.emitter import emit_cuda

    text = laid_out_text("matmul", f32_default="ieee", num_stages=1)
    bare = text.replace(", read_widths=(4, 4)", "")
    assert bare != text
    with pytest.raises(CompileError, match=r"this dot_shared on CUDA cores has no read_widths decision: "
                                           r"run read-widths \(the layouts stage\) again"):
        emit_cuda(read(bare))
    # laid-out SSA with no widths at all (from before the pass) gets the pass's before printing
    assert cuda_of(bare) == cuda_of(text)


def test_a_convert_layout_goes_through_shared_memory():
    cuda = cuda_of(laid_out_text("outer"))
    before, after = cuda.split("// convert_layout", 1)
    copy = re.search(r"float\* const (s\d+) = reinterpret_cast<float\*>\(smem \+ 0\);", before)
    assert copy and before.rstrip().endswith("__syncthreads();")
    assert f"const float* const {copy.group(1)}_read = &{copy.group(1)}[L1_p0];" in before
    assert re.search(rf"t\d+\[k\] = {copy.group(1)}_read\[k \* 4\];", after.split("}", 1)[0])


@pytest.mark.nvcc
@pytest.mark.parametrize("edit", [("size_per_thread=[1]", "size_per_thread=[4]"),
                                  ("size_per_thread=[1]", "size_per_thread=[8]")])
def test_edited_layouts_build_with_nvcc(edit):
    from mytriton.backends.cuda.nvcc import compile_ptx

    assert ".entry add_kernel" in compile_ptx(cuda_of(laid_out_text("add").replace(*edit)), "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("layout", [
    "blocked<size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[4], order=[0]>",
    "blocked<size_per_thread=[2], threads_per_warp=[32], warps_per_cta=[4], order=[0]>",
])
def test_an_edited_layout_runs_correctly_on_the_gpu(layout):
    from mytriton.runtime.cuda_driver import CudaKernel

    text = re.sub(r"#blocked0 = blocked<[^\n]*>", f"#blocked0 = {layout}", laid_out_text("add"))
    n = 10_007
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.full(n, np.nan, np.float32)
    CudaKernel(cuda_of(text), "sm_90").launch((-(-n // 256),), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.gpu
def test_padded_shared_buffers_give_the_same_matmul_on_the_gpu():
    from mytriton.runtime.cuda_driver import CudaKernel

    # the padding grows dot_b0 past the place the plan gave it: planned again
    text = unplanned(laid_out_text("matmul", f32_default="ieee", num_stages=1)).replace("pad=0", "pad=1")
    M, N, K = 70, 50, 77
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    CudaKernel(replanned_cuda_of(text), "sm_90").launch((-(-M // 64), -(-N // 64)), [a, b, c, M, N, K])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_layout_objects_print_as_the_grammar_reads_them():
    parent = Blocked((1, 4), (4, 8), (4, 1), (1, 0))
    assert parent.text() == ("blocked<size_per_thread=[1, 4], threads_per_warp=[4, 8], warps_per_cta=[4, 1], "
                             "order=[1, 0]>")
    assert Slice(1, parent).text(lambda p: "#blocked0") == "slice<dim=1, parent=#blocked0>"
    assert PaddedShared(2).text() == "padded_shared<pad=2, order=[1, 0]>"
