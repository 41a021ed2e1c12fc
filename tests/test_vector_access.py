"""16-byte accesses: the layouts stage gives proven loads and stores
vector=N and N elements per thread; CUDA renders them as one wide access;
without the facts everything stays scalar."""
from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, SAMPLES, compile_text, kernel_source
from test_stage_dots import HELD_A  # x loaded, its row sums taken, and x @ w: a dot_rs
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.compiler import Options

ADD = (SAMPLES / "add.py").read_text()
ALIGNED = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
PLAIN = "*fp32, *fp32, *fp32, i32, 1024"


def add_at(stage: str, signature: str, **options) -> str:
    return compile_text(ADD, stage, file="samples/add.py", signature=signature, **options)


def test_aligned_accesses_get_four_elements_per_thread_and_vector_4():
    text = add_at("layouts", ALIGNED)
    assert text.startswith("#blocked0 = blocked<size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[4]")
    assert text.count(", vector=4, hold=true :") == 2 and "store %9, %10, %5, vector=4 @13:5" in text


def test_without_facts_the_layout_and_accesses_stay_scalar():
    text = add_at("layouts", PLAIN)
    assert "size_per_thread=[1]" in text and "vector=" not in text


def test_the_laid_out_text_reads_back_the_same():
    text = add_at("layouts", ALIGNED)
    assert compiler.print_ssa(compiler.verify(compiler.read_ssa(text, "add.ssa"))) == text


def test_cuda_reads_and_writes_16_bytes_at_once():
    cuda = add_at("cuda", ALIGNED)
    assert cuda.count("*reinterpret_cast<const uint4*>(") == 2
    assert "*reinterpret_cast<uint4*>((v9) - 3) = *reinterpret_cast<uint4*>(w1_st);" in cuda


def test_a_masked_run_is_loaded_or_filled_once_and_its_slots_read_what_is_staged():
    # The run is under one mask value: the first slot tests it, the others read the staged
    # element. A fill of zero bits is the run's word zeroed, then loaded over where the mask holds.
    cuda = add_at("cuda", ALIGNED)
    assert "if (k % 4 == 0) { uint4 w6_z{}; if (v5) w6_z = *reinterpret_cast<const uint4*>(v4); " \
           "*reinterpret_cast<uint4*>(&w6[k]) = w6_z; }" in cuda
    assert cuda.count("_z{}; if (v5)") == 2


@pytest.mark.parametrize("other", ["float('-inf')", "-0.0", "2.5"])
def test_a_masked_run_with_another_fill_fills_its_elements_one_by_one(other):
    source = ADD.replace("tl.load(x_ptr + offsets, mask=mask)", f"tl.load(x_ptr + offsets, mask=mask, other={other})")
    cuda = compile_text(source, "cuda", file="samples/add.py", signature=ALIGNED)
    assert "if (k % 4 == 0) { if (v5) *reinterpret_cast<uint4*>(&w6[k])" in cuda
    assert "else for (int j = 0; j < 4; ++j) w6[k + j] = " in cuda
    assert "? w6[k] :" not in cuda and "const float v6 = w6[k];" in cuda


def test_the_verifier_refuses_a_vector_the_layout_cannot_hold():
    text = add_at("layouts", ALIGNED).replace("size_per_thread=[4]", "size_per_thread=[2]")
    with pytest.raises(CompileError, match=r"vector=4 needs a multiple of 4 elements per thread along "
                                           r"the layout's fastest dimension \(0\)"):
        compiler.verify(compiler.read_ssa(text, "add.ssa"))


def test_the_verifier_refuses_more_than_16_bytes():
    text = add_at("layouts", ALIGNED).replace("size_per_thread=[4]", "size_per_thread=[8]").replace(
        "vector=4", "vector=8")
    with pytest.raises(CompileError, match=r"vector=8 is not a power of two from 2 to 4"):
        compiler.verify(compiler.read_ssa(text, "add.ssa"))


def test_vector_is_a_layout_decision():
    text = add_at("opt", ALIGNED).replace("%5, none :", "%5, none, vector=4 :", 1)
    with pytest.raises(CompileError, match="has vector=4, a layout decision, but the kernel is not laid out"):
        compiler.verify(compiler.read_ssa(text, "add.ssa"))


@pytest.mark.nvcc
def test_ptx_has_v4_global_accesses_with_aligned_arguments(cache):
    ptx = add_at("ptx", ALIGNED)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


@pytest.mark.nvcc
def test_ptx_has_no_vector_accesses_without_them(cache):
    ptx = add_at("ptx", PLAIN)
    assert "ld.global.v4" not in ptx and "st.global.v4" not in ptx and "ld.global.f32" in ptx


@pytest.mark.nvcc
def test_half_precision_moves_eight_halves_per_access(cache):
    ptx = add_at("ptx", ALIGNED.replace("fp32", "fp16"))
    assert "ld.global.v4.u32" in ptx or "ld.global.v4.b32" in ptx


def test_the_verifier_refuses_a_vector_width_on_a_scalar_access():
    text = add_at("layouts", ALIGNED).replace("store %9, %10, %5, vector=4 @13:5",
                                               "store x_ptr, 1.0, none, vector=4 @13:5")
    with pytest.raises(CompileError, match="'store' of a scalar has no vector width"):
        compiler.verify(compiler.read_ssa(text, "add.ssa"))


# ---- a dot's accumulator (mma layouts) ------------------------------------------------------------
MATMUL = (SAMPLES / "matmul.py").read_text()


def matmul_at(stage: str, signature: str, arch: str = "sm_90") -> str:
    """The matmul sample, its epilogue as laid out (TMA would store an aligned one: test_tma_stores.py)."""
    return compile_text(MATMUL, stage, file="samples/matmul.py", signature=signature,
                        defines={"BM": 128, "BN": 128, "BK": 64}, arch=arch, tma=False)


ALIGNED_MATMUL = "*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16"


def store_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith("store "))


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])  # wgmma and mma.sync accumulators
def test_an_aligned_epilogue_is_exchanged_through_shared_memory_and_stored_16_bytes_a_thread(arch):
    text = matmul_at("layouts", ALIGNED_MATMUL, arch)
    lines = text.splitlines()
    store = next(i for i, line in enumerate(lines) if line.strip().startswith("store "))
    assert " = convert_layout " in lines[store - 1] and "#blocked" in lines[store - 1]
    assert ", vector=4 @" in lines[store]
    cuda = matmul_at("cuda", ALIGNED_MATMUL, arch)
    # 16 bytes: four f32, stored as the exchange reads them (the store is written in its loop)
    assert re.search(r"\*reinterpret_cast<uint4\*>\(v\d+\) = \*reinterpret_cast<const uint4\*>\(&t\d+_run\);", cuda)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_the_exchange_writes_each_fragment_pair_and_reads_each_run_at_once(arch):
    cuda = matmul_at("cuda", ALIGNED_MATMUL, arch)
    # f32: a pair of adjacent columns is 8 bytes; a thread's run of 4 along a row 16. Each loop
    # visits the slots it moves from: every second, every fourth (NVVM unrolls no slot between).
    # Both by st.shared / ld.shared at the 32-bit shared address of the thread's first element;
    # each run read into one word, which the store the exchange feeds then writes.
    assert re.search(r"for \(int k = 0; k < \d+; k \+= 2\) \{\n\s*asm volatile\(\"st\.shared\.v2\.f32 \[%0\], \{%1, %2\};\" "
                     r":: \"r\"\(s\d+_write_at \+ .*\"f\"\(t\d+\[k\]\), \"f\"\(t\d+\[k \+ 1\]\) : \"memory\"\);", cuda)
    assert re.search(r"for \(int k = 0; k < \d+; k \+= 4\) \{\n(?:.*\n)*?\s*uint4 t\d+_run;\n\s*\{ uint4 w; asm volatile\(\"ld\.shared\.v4\.b32 "
                     r"\{%0, %1, %2, %3\}, \[%4\];\" .* : \"r\"\(s\d+_read_at \+ .*\*reinterpret_cast<uint4\*>\(&t\d+_run\) = w; \}", cuda)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_an_f32_accumulator_stored_to_f16_is_exchanged_as_f16(arch):
    # The sample stores acc (f32) to an f16 pointer without .to(): the store's conversion is a
    # cast before the exchange, which moves halves (half the shared memory, 16-byte runs of 8).
    text = matmul_at("layouts", "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16", arch)
    lines = text.splitlines()
    store = next(i for i, line in enumerate(lines) if line.strip().startswith("store "))
    assert " = convert_layout " in lines[store - 1] and "x f16, #blocked" in lines[store - 1]
    assert ", vector=8 @" in lines[store]
    assert any(" = cast " in line and "dtype=f16" in line and "#mma" in line for line in lines[:store])


def test_a_transpose_reads_its_copy_in_scratch_one_element_at_a_time():
    # A run of tl.trans(x)'s result goes down a column of x's row-major copy: no vector read
    # (one was, misaligned, and the H200 refused the launch).
    cuda = compile_text(kernel_source("""
    @mytriton.jit
    def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
        rm = tl.arange(0, M)
        rn = tl.arange(0, N)
        x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
        tl.store(out_ptr + rn[:, None] * M + rm[None, :], tl.trans(x))
    """), "cuda", defines={"M": 16, "N": 64}, signature="*fp32:16, *fp32:16")
    assert "// trans @" in cuda and "reinterpret_cast<const uint4*>(&s" not in cuda


@pytest.mark.nvcc
def test_the_exchange_moves_through_shared_memory_in_vectors(cache):
    ptx = matmul_at("ptx", ALIGNED_MATMUL)
    shared = re.findall(r"\b(?:st|ld)\.shared\.[a-z0-9.]+", ptx)
    # 128 f32 a thread: 64 pair writes and 32 run reads (nvcc may split a pair), not 256 accesses
    assert 0 < len(shared) <= 100 and all(op.startswith("ld.shared.v4") for op in shared if op.startswith("ld"))


def test_the_epilogue_exchange_reuses_the_staged_buffers_memory():
    cuda = matmul_at("cuda", ALIGNED_MATMUL)
    header = json.loads(cuda.splitlines()[0].split(":", 1)[1])
    # The three stages, not + 64 KiB (cp.async's copies: no mbarriers)
    assert header["shared_bytes"] == 3 * (128 * 64 + 64 * 128) * 2
    # 128x128 f32, each row padded by 8 (scratch_pad: the fragments' rows in distinct banks)
    assert "the staged buffers, then 69632 of scratch from 0 after their last use" in cuda


def two_wide_epilogue() -> str:
    """The matmul laid out with C's rows proven contiguous but only 8 bytes
    aligned, without TMA (a launch whose N no tensor map takes runs this
    build; the TMA build's epilogue is a ``store_tile``)."""
    ssa = matmul_at("ssa", ALIGNED_MATMUL)
    two_wide = ssa.replace("N: i32 {divisibility=16}", "N: i32 {divisibility=2}", 1)
    options = Options(tma=False)
    return compiler.print_ssa(compiler.layouts(compiler.stage_dots(compiler.read_ssa(two_wide, "matmul.ssa"),
                                                                   options), options))


def test_an_epilogue_proven_only_two_wide_is_exchanged_into_rows_of_two_a_thread():
    # The fragments would store their pairs 8 rows apart; a warp's lanes along a row store one run.
    text = two_wide_epilogue()
    assert "blocked<size_per_thread=[1, 2], threads_per_warp=[1, 32]" in text
    assert ", vector=2 @" in store_line(text) and "convert_layout" in text.split(" = for ")[-1]


def test_an_epilogue_without_alignment_facts_stores_element_by_element_along_its_rows():
    text = matmul_at("layouts", "*fp16, *fp16, *fp32, i32, i32, i32")
    assert "vector=" not in store_line(text)
    assert "blocked<size_per_thread=[1, 1], threads_per_warp=[1, 32]" in text
    assert "convert_layout" in text.split(" = for ")[-1]


def test_an_epilogue_whose_rows_are_not_proven_contiguous_stores_from_its_fragments():
    # C's columns a runtime stride apart: no run along a row for a warp's lanes to store
    strided = MATMUL.replace("c_rows * N + c_cols,", "c_rows * N + c_cols * stride_cn,").replace(
        "c_ptr, M, N, K,", "c_ptr, M, N, K, stride_cn,")
    assert strided != MATMUL
    text = compile_text(strided, "layouts", file="samples/matmul.py", signature=ALIGNED_MATMUL + ", i32",
                        defines={"BM": 128, "BN": 128, "BK": 64})
    assert "convert_layout" not in text.split(" = for ")[-1]


def test_the_verifier_refuses_a_wider_vector_in_an_mma_layout(monkeypatch):
    from mytriton.passes import layouts
    monkeypatch.setattr(layouts, "UNALIGNED_ROW_RUN", 1 << 30)  # the fragments store the tile
    text = two_wide_epilogue()
    assert ", vector=2 @" in store_line(text) and "convert_layout" not in text.split(" = for ")[-1]
    with pytest.raises(CompileError, match="vector=4 in an mma layout must be 2"):
        compiler.verify(compiler.read_ssa(text.replace("vector=2 @", "vector=4 @"), "matmul.ssa"))


COLUMN_SUMS = '''
import mytriton
import mytriton.language as tl


@mytriton.jit
def column_sums(x_ptr, out_ptr, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in tl.static_range(0, 2 * BLOCK_M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :]).to(tl.float32), axis=0)
    tl.store(out_ptr + cols, acc.to(tl.float16))
'''


def test_a_row_of_sums_is_stored_from_its_slice_16_bytes_at_once():
    # The sums stay in the slice of the loads' layout (8 f16 a thread along the
    # columns), and the store of that slice moves each thread's 8 at once.
    text = compile_text(COLUMN_SUMS, "layouts", file="column_sums.py", signature="*fp16:16, *fp16:16, i32:16",
                        defines={"BLOCK_M": 4, "BLOCK_N": 256})
    assert "size_per_thread=[1, 8]" in text and "convert_layout" not in text
    store = next(line for line in text.splitlines() if line.strip().startswith("store"))
    assert ", vector=8 @" in store and ": vector<" not in store


GROUPED = ROOT / "tests" / "triton_style" / "grouped_gemm.py"


@pytest.mark.parametrize("block_n,stages,exchanged", [(128, 3, True), (256, 4, False)])
def test_a_store_in_a_loop_is_exchanged_only_where_its_copy_fits_beside_the_live_buffers(block_n, stages,
                                                                                          exchanged):
    # Tutorial 08's C store sits in the tile loop, where the K loop's buffers stay live: 128x256 f16
    # (64 KiB, rows padded) beside 192 KiB of buffers would pass the 227 KiB budget.
    text = compile_text(GROUPED.read_text(), "layouts", file=str(GROUPED), kernel="grouped_matmul_kernel",
                        signature="*i64, *i64, *i64, *i32, *i32, i32", num_stages=stages,
                        defines={"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": block_n, "BLOCK_SIZE_K": 64})
    assert ("convert_layout" in text) == exchanged


@pytest.mark.parametrize("signature, run", [("*fp16:16, *fp16:16, *fp32:16, *fp32:16", 8),
                                            ("*fp16, *fp16, *fp32, *fp32", 1)])
def test_a_dot_operand_written_to_scratch_from_registers_moves_its_thread_runs_at_once(signature, run):
    # A held in registers (a dot_rs on mma.sync): each thread's 8 consecutive f16 of a row, one
    # 16-byte write; without the alignment facts the layout holds one element a thread, written alone.
    cuda = compile_text(kernel_source(HELD_A), "cuda", signature=signature)
    assert "// dot operand a: registers to shared memory" in cuda
    wide = re.search(r"if \(k % 8 == 7\) \*reinterpret_cast<uint4\*>\(&a\d+_tile\[.*\] - 7\) = ", cuda)
    assert (wide is not None) == (run == 8)
