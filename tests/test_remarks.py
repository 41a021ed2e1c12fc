"""Remarks (``compile --remarks``, ``MYTRITON_REMARKS=1``): one per tl.dot, at
its source line, saying what it got on the CUDA path and, where it fell back,
the fact that was missing or the rule that refused it (mytriton/remarks.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import kernel_source
from mytriton.diagnostics import Location, Remark
from mytriton.remarks import parse_ptxas, render
from mytriton_command import run

F16_MATMUL = "*fp16, *fp16, *fp32, i32, i32, i32"
MATMUL_DOT = "samples/matmul.py:24:16: remark: "


@pytest.fixture
def no_nvcc(monkeypatch):
    """ptxas cannot run: remarks say so (and the fast tests need no nvcc build)."""
    from mytriton.backends.cuda import nvcc

    def missing() -> str:
        raise nvcc.NvccMissing("nvcc was not found on PATH")

    monkeypatch.setattr(nvcc, "find_nvcc", missing)


def remarks_of(*args: str) -> tuple[str, list[str]]:
    """stdout of ``mytriton compile ARGS --remarks`` and its remark lines (without the quoted source)."""
    result = run("compile", *args, "--remarks", text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout, [line for line in result.stderr.splitlines() if ": remark: " in line]


def one_remark(tmp_path, body: str, signature: str = F16_MATMUL) -> tuple[str, str]:
    """A kernel file of ``body`` (the standard imports added) compiled with
    BM=BN=64, BK=32: its path and its one dot's remark."""
    kernel = tmp_path / "k.py"
    kernel.write_text(kernel_source(body))
    _, [remark] = remarks_of(str(kernel), "-s", signature, "-D", "BM=64", "-D", "BN=64", "-D", "BK=32")
    return str(kernel), remark


def test_a_staged_wgmma_dot_says_what_it_got(no_nvcc):
    _, remarks = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "--emit=ssa")
    assert remarks == [
        MATMUL_DOT + "dot 64x64x32 f16: staged (cp.async, 16-byte chunks (not TMA: its base is not proven 16-byte "
        "aligned)); 3 stages; wgmma m64n64k16, in flight "
        "over the next tiles' copies; A shared (swizzle 64B), B shared (swizzle 128B); result exchanged through "
        "shared memory, stored 4 bytes a thread at a time (not TMA: its base is not proven 16-byte aligned); "
        "24 KiB shared; ptxas not run (nvcc not found)"]


def test_a_remark_quotes_its_source_line_with_a_caret(no_nvcc):
    result = run("compile", "samples/matmul.py", "-s", F16_MATMUL, "--remarks", "--emit=ssa", text=True)
    lines = result.stderr.splitlines()
    assert lines[0].startswith(MATMUL_DOT)
    assert lines[1:] == ["        acc += tl.dot(a, b)", "               ^"]


def test_remarks_change_no_output(no_nvcc):
    for emit in ("ssa", "layouts", "cuda"):
        plain = run("compile", "samples/matmul.py", "-s", F16_MATMUL, f"--emit={emit}")
        stdout, remarks = remarks_of("samples/matmul.py", "-s", F16_MATMUL, f"--emit={emit}")
        assert plain.stderr == b""
        assert stdout == plain.stdout.decode() and len(remarks) == 1


def test_a_dot_on_mma_sync_says_why_not_wgmma(no_nvcc):
    # f32 operands run as TF32; wgmma reads a TF32 B K-major only, and this B is contiguous along N.
    _, [remark] = remarks_of("samples/matmul.py", "--emit=ttir")
    assert "dot 64x64x32 f32 (tf32): " in remark
    assert "mma.sync m16n8k8 (not wgmma: a TF32 wgmma reads B K-major only" in remark
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "--arch", "sm_80")
    assert "mma.sync m16n8k16 (not wgmma: wgmma needs sm_90 (Hopper))" in remark


def test_an_fma_fallback_names_the_rule(no_nvcc):
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "-D", "BM=16", "-D", "BN=16", "-D", "BK=16",
                             "--num-warps", "8")
    assert remark.startswith(MATMUL_DOT + "dot 16x16x16 f16: staged")
    assert "; FMA (not on tensor cores: a 16x16 tile leaves some of 8 warps without a whole 16x8 block); " \
        in remark


def test_a_dot_stage_dots_refuses_names_the_fact(no_nvcc, tmp_path):
    kernel, remark = one_remark(tmp_path, """
        @mytriton.jit
        def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            cols = tl.program_id(1) * BN + tl.arange(0, BN)
            ks = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), tl.float32)
            for k in range(0, K, BK):
                a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :],
                            mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=1.0)
                b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :],
                            mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
                acc += tl.dot(a, b)
            tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)
    """)
    assert remark.startswith(f"{kernel}:15:16: remark: dot 64x64x32 f16: not staged: operand A: the load fills "
                             "masked-off elements with 1.0, not 0 or 0.0; ")
    assert "; mma.sync m16n8k16 (not wgmma: wgmma reads its operands from staged shared buffers" in remark
    assert "; A registers, B registers; " in remark
    assert "as a tutorial form" not in remark  # the tutorial forms fail at the fill too: nothing more to say


TF32_MATMUL = """
    @mytriton.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ks = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :],
                        mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :],
                        mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc += tl.dot(a, b{precision})
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)
"""


def test_copies_zero_filled_by_source_size_say_so(no_nvcc, tmp_path):
    # TF32 on mma.sync: copy-widths gives its whole chunks zero_fill="src_size".
    _, remark = one_remark(tmp_path, TF32_MATMUL.format(precision=""),
                           signature="*fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16")
    assert "staged (cp.async, 16-byte chunks, zero-filled by source size (not TMA: " in remark
    assert "; mma.sync m16n8k8 " in remark


def test_copies_zero_filled_by_their_predicate_say_nothing_of_it(no_nvcc, tmp_path):
    # Exact f32 on FMA: its whole chunks keep cp.async's ignore-src predicate.
    _, remark = one_remark(tmp_path, TF32_MATMUL.format(precision=', input_precision="ieee"'),
                           signature="*fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16")
    assert "B cp.async, 16-byte chunks (not TMA: " in remark
    assert "zero-filled" not in remark


def test_gathered_rows_are_staged(no_nvcc, tmp_path):
    # Liger's fused MoE spelling: each row of A is the token an index array names.
    _, remark = one_remark(tmp_path, GATHERED.format(a="x_ptr + token[:, None] * H + ks[None, :]"),
                           signature="*fp16, *fp16, *i32, *fp32, i32, i32")
    assert "remark: dot 64x64x32 f16: staged (A cp.async, 16-byte chunks (not TMA: its rows are gathered), " in remark


def test_gathered_columns_say_which_load_they_come_from(no_nvcc, tmp_path):
    # Each column of A is the one an index array names, loaded in the loop.
    source = GATHERED.format(a="x_ptr + pos[:, None] * H + tl.load(idx_ptr + ks, mask=ks < H, other=0)[None, :]")
    kernel, remark = one_remark(tmp_path, source, signature="*fp16, *fp16, *i32, *fp32, i32, i32")
    assert remark.startswith(f"{kernel}:15:16: remark: dot 64x64x32 f16: not staged: operand A: ")
    assert "its columns are gathered; a gathered tile is copied by rows; mma.sync" in remark


GATHERED = """
    @mytriton.jit
    def gathered(x_ptr, w_ptr, idx_ptr, out_ptr, n, H, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pos = tl.program_id(0) * BM + tl.arange(0, BM)
        token = tl.load(idx_ptr + pos, mask=pos < n, other=0).to(tl.int64)
        cols = tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, H, BK):
            ks = k + tl.arange(0, BK)
            a = tl.load({a}, mask=(pos[:, None] < n) & (ks[None, :] < H),
                        other=0.0)
            b = tl.load(w_ptr + ks[:, None] * BN + cols[None, :], mask=ks[:, None] < H, other=0.0)
            acc += tl.dot(a, b)
        tl.store(out_ptr + pos[:, None] * BN + cols[None, :], acc, mask=pos[:, None] < n)
"""


def test_an_operand_with_64_bit_coordinates_is_staged(no_nvcc, tmp_path):
    # Liger's fused MoE down-projection: the rows cast to int64 against overflow
    # in their product with the stride, which the copy then computes in 64 bits.
    _, remark = one_remark(tmp_path, WIDE_ROWS.format(rows="(tl.program_id(0) * BM + tl.arange(0, BM)).to(tl.int64)"))
    assert "remark: dot 64x64x32 f16: staged (cp.async" in remark


def test_an_operand_with_a_64_bit_offset_says_where_it_widens(no_nvcc, tmp_path):
    _, remark = one_remark(tmp_path, WIDE_ROWS.format(rows="tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)"))
    assert ("as a tutorial form: its offsets are 64-bit integers (the cast at 6:12) before tl.arange is added; the "
            "staged copies take i32 coordinates, widened as a whole ((offset + tl.arange(0, n)).to(tl.int64)) or not "
            "at all; mma.sync") in remark


WIDE_ROWS = """
    @mytriton.jit
    def wide(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rows = {rows}
        cols = tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            ks = k + tl.arange(0, BK)
            a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                        other=0.0)
            b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=ks[:, None] < K, other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=rows[:, None] < M)
"""


def test_a_loop_left_unpipelined_says_why(no_nvcc):
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "--num-stages", "1")
    assert "staged (synchronous copies); not pipelined: num_stages is 1; wgmma m64n64k16, " in remark


def test_a_wgmma_dot_after_plain_stores_says_it_waits_for_a_proxy_fence(no_nvcc):
    """Unpipelined, the buffers are written by plain stores: the async proxy sees them past a fence."""
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "--num-stages", "1")
    assert "wgmma m64n64k16, after a proxy fence at each issue (plain stores wrote its buffers); " in remark


def test_a_wgmma_dot_fed_by_cp_async_alone_has_no_proxy_fence(no_nvcc):
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL)
    assert "wgmma m64n64k16" in remark and "proxy fence" not in remark


def test_fewer_stages_than_asked_say_why(no_nvcc):
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL, "--num-stages", "4", "--shared-budget", "30000")
    assert re.search(r"; 3 stages \(of 4 asked: a stage of its buffers takes 8192 bytes, beside \d+ bytes of other "
                     r"buffers and scratch reserve in the .* budget\); ", remark), remark


def test_bad_input_with_remarks_is_still_an_error(no_nvcc):
    result = run("compile", "samples/matmul.py", "-D", "BM=8", "--remarks", text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("samples/matmul.py:24:16: error: 'dot' dimensions must be at least 16")
    assert "remark:" not in result.stderr


def test_remarks_are_sorted_by_location():
    # (a file no test compiles: a source registered under its name would be quoted)
    name = "sorted-remarks-nowhere.py"
    late, early = Remark(Location(name, 30, 9), "second"), Remark(Location(name, 24, 13), "first")
    assert render([late, early]) == f"{name}:24:13: remark: first\n{name}:30:9: remark: second\n"


def test_ptxas_report_gives_registers_and_spills():
    report = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90a'
ptxas info    : Used 12 registers
ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
ptxas info    : Function properties for matmul_kernel
    48 bytes stack frame, 48 bytes spill stores, 40 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers
"""
    assert str(parse_ptxas(report, "matmul_kernel")) == \
        "ptxas: 255 registers, 48 bytes spill stores, 40 bytes spill loads, 48 bytes stack"
    assert str(parse_ptxas(report.replace("48 bytes stack frame, 48", "0 bytes stack frame, 0")
                           .replace("40 bytes spill loads", "0 bytes spill loads"), "matmul_kernel")) == \
        "ptxas: 255 registers, no spills"


def test_the_help_names_remarks():
    assert "--remarks" in run("compile", "--help", text=True).stdout


def test_remarks_env_prints_at_a_launchs_compile(monkeypatch, capfd):
    from conftest import load_sample

    monkeypatch.setenv("MYTRITON_REMARKS", "1")
    kernel = load_sample("matmul").matmul_kernel
    a, b = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel[(1, 1)](a, b, c, 64, 64, 32, backend="interp")
    assert np.all(c == 32)
    err = capfd.readouterr().err
    assert re.search(r"matmul\.py:24:16: remark: dot 64x64x32 f16: staged \(TMA\); 3 stages; "
                     r"wgmma m64n64k16.*; ptxas not run \(the launch runs in the interpreter\)\n", err), err
    kernel[(1, 1)](a, b, c, 64, 64, 32, backend="interp")  # compiled once: no second remark
    assert "remark:" not in capfd.readouterr().err


def test_no_remarks_without_the_env(monkeypatch, capfd):
    from conftest import load_sample

    monkeypatch.delenv("MYTRITON_REMARKS", raising=False)
    kernel = load_sample("matmul").matmul_kernel
    c = np.zeros((64, 64), np.float32)
    kernel[(1, 1)](np.ones((64, 32), np.float16), np.ones((32, 64), np.float16), c, 64, 64, 32, backend="interp")
    assert "remark:" not in capfd.readouterr().err


@pytest.mark.nvcc
def test_ptxas_gives_registers_and_spills():
    _, [remark] = remarks_of("samples/matmul.py", "-s", F16_MATMUL)
    assert re.search(r"; ptxas: \d+ registers, no spills$", remark), remark


WEIGHT_GRAD = "tests/triton_style/weight_grad.py"
ALIGNED_GRAD = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1"


def test_a_result_stored_column_major_says_it_goes_down_its_columns(no_nvcc):
    # dW[h, i] with i contiguous: exchanged, then 16 bytes a thread down each column
    _, [remark] = remarks_of(WEIGHT_GRAD, "-s", ALIGNED_GRAD, "-D", "BM=64", "-D", "BN=64", "-D", "BK=32",
                             "--emit=ssa")
    assert "; result exchanged through shared memory, stored 16 bytes a thread at a time down its columns (not TMA: " \
        "its columns are not contiguous); " in remark


def test_a_result_stored_from_its_fragments_says_how_narrow(no_nvcc):
    # the bounds unaligned, the mask is no constant over a run: each fragment element alone, 2 bytes
    ragged = ALIGNED_GRAD.replace("i32:16, i32:16, i32:16, i32:16,", "i32, i32, i32, i32:16,", 1)
    _, [remark] = remarks_of(WEIGHT_GRAD, "-s", ragged, "-D", "BM=64", "-D", "BN=64", "-D", "BK=32", "--emit=ssa")
    assert "; result stored from its fragments, 2 bytes a thread at a time (not TMA: " in remark
