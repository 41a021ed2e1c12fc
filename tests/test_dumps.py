"""Seeing inside a compile: ``compile --dump-dir``, ``MYTRITON_DUMP_DIR``,
``--print-ir-after-all``, ``--print-ir-after/-before=PASS``, ``--time-passes``
and ``--emit=cubin`` (docs/cli.md, "Dumps, IR printing and timing")."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import ROOT
from mytriton import instrument
from mytriton.cli import main
from mytriton.passes import DEFAULT_PIPELINE

ADD = str(ROOT / "samples" / "add.py")
ADD_ARGS = [ADD, "-D", "BLOCK=256"]
PASS_FILES = [f"03-opt.{i:02d}-{name}.ssa" for i, name in enumerate(DEFAULT_PIPELINE, 1)]
# The passes the stage-dots and layouts stages run, each dumped before its stage's own file.
STAGING_PASSES = ("stage-dots", "software-pipeline")
LAYOUT_PASSES = ("layouts", "copy-widths", "tma-copies", "overlap-wgmma", "tma-stores", "read-widths", "combine-strategy", "hold-tiles",
                 "allocate-shared", "insert-barriers", "proxy-fences")
UP_TO_LAYOUTS = ["00-ast.py", "01-tree.tree", "02-ssa.ssa", *PASS_FILES, "03-opt.ssa",
                 "04-staged.01-stage-dots.ssa", "04-staged.02-software-pipeline.ssa", "04-staged.ssa",
                 *(f"05-layouts.{i:02d}-{name}.ssa" for i, name in enumerate(LAYOUT_PASSES, 1)), "05-layouts.ssa"]


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env={"MYTRITON_DEBUG": None, **(env or {})}).invoke(main, list(args), catch_exceptions=False)


def ok(result) -> str:
    assert result.exit_code == 0, result.stderr
    return result.stdout


# ---- --dump-dir ---------------------------------------------------------------------------


def test_dump_dir_writes_each_stage_up_to_emit_in_pipeline_order(tmp_path):
    ok(invoke("compile", *ADD_ARGS, "--emit=layouts", "--dump-dir", str(tmp_path / "d")))
    assert sorted(os.listdir(tmp_path / "d")) == [*UP_TO_LAYOUTS, "index.html"]


def test_dump_dir_leaves_stdout_as_the_emitted_stage(tmp_path):
    plain = ok(invoke("compile", *ADD_ARGS, "--emit=opt"))
    assert ok(invoke("compile", *ADD_ARGS, "--emit=opt", "--dump-dir", str(tmp_path / "d"))) == plain


def test_dump_dir_files_hold_what_each_stage_prints(tmp_path):
    ok(invoke("compile", *ADD_ARGS, "--emit=layouts", "--dump-dir", str(tmp_path / "d")))
    for emit, name in [("ast", "00-ast.py"), ("tree", "01-tree.tree"), ("ssa", "02-ssa.ssa"),
                       ("opt", "03-opt.ssa"), ("staged", "04-staged.ssa"), ("layouts", "05-layouts.ssa")]:
        assert (tmp_path / "d" / name).read_text() == ok(invoke("compile", *ADD_ARGS, f"--emit={emit}")), name


def test_dump_dir_keeps_the_ssa_after_each_pass_of_the_given_list(tmp_path):
    ok(invoke("compile", *ADD_ARGS, "--emit=opt", "-p", "cse,dce", "--dump-dir", str(tmp_path / "d")))
    assert sorted(p for p in os.listdir(tmp_path / "d") if p.startswith("03-opt.")) == [
        "03-opt.01-cse.ssa", "03-opt.02-dce.ssa", "03-opt.ssa"]


def test_a_dump_resumes_with_the_stage_commands(tmp_path):
    d = tmp_path / "d"
    ok(invoke("compile", *ADD_ARGS, "--emit=cuda", "--dump-dir", str(d)))
    assert ok(invoke("emit-cuda", str(d / "05-layouts.ssa"))) == (d / "06-cuda.cu").read_text()
    assert ok(invoke("trace", "-D", "BLOCK=256", str(d / "00-ast.py"))) == (d / "01-tree.tree").read_text()
    assert ok(invoke("lower", str(d / "01-tree.tree"))) == (d / "02-ssa.ssa").read_text()


@pytest.mark.nvcc
def test_dump_dir_without_emit_runs_to_cubin_and_prints_cuda(tmp_path, cache):
    d = tmp_path / "d"
    printed = ok(invoke("compile", *ADD_ARGS, "--dump-dir", str(d)))
    assert sorted(os.listdir(d)) == [*UP_TO_LAYOUTS, "06-cuda.cu", "07-ptx.ptx", "08-cubin.cubin", "index.html"]
    assert printed == (d / "06-cuda.cu").read_text()
    assert (d / "08-cubin.cubin").read_bytes()[:4] == b"\x7fELF"


def test_dump_dir_replaces_a_planted_link_instead_of_writing_through_it(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, d / "02-ssa.ssa")
    ok(invoke("compile", *ADD_ARGS, "--emit=ssa", "--dump-dir", str(d)))
    assert victim.read_text() == "keep me"
    assert not os.path.islink(d / "02-ssa.ssa") and (d / "02-ssa.ssa").read_text().startswith("kernel ")


def test_dump_dir_that_is_a_file_is_an_error(tmp_path):
    (tmp_path / "f").write_text("")
    result = invoke("compile", *ADD_ARGS, "--emit=ssa", "--dump-dir", str(tmp_path / "f"))
    assert result.exit_code == 1
    assert "--dump-dir" in result.stderr and "not a directory" in result.stderr


# ---- printing the IR --------------------------------------------------------------------


def headers(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("// -----// IR Dump")]


def test_print_ir_after_all_prints_after_every_pass_of_every_stage():
    result = invoke("compile", *ADD_ARGS, "--emit=layouts", "--print-ir-after-all")
    assert headers(ok(result) and result.stderr) == [
        f"// -----// IR Dump After {name} //----- //"
        for name in (*DEFAULT_PIPELINE, *STAGING_PASSES, *LAYOUT_PASSES)]


def test_print_ir_after_all_keeps_stdout_clean():
    assert ok(invoke("compile", *ADD_ARGS, "--emit=opt", "--print-ir-after-all")) == \
        ok(invoke("compile", *ADD_ARGS, "--emit=opt"))


def test_print_ir_after_prints_only_the_named_pass():
    result = invoke("compile", *ADD_ARGS, "--emit=opt", "--print-ir-after=cse")
    ok(result)
    assert headers(result.stderr) == ["// -----// IR Dump After cse //----- //"]


def test_print_ir_before_prints_the_input_of_the_named_pass():
    result = invoke("compile", *ADD_ARGS, "--emit=layouts", "--print-ir-before=layouts")
    ok(result)
    assert headers(result.stderr) == ["// -----// IR Dump Before layouts //----- //"]
    assert result.stderr.split("//----- //\n", 1)[1] == ok(invoke("compile", *ADD_ARGS, "--emit=staged"))


def test_print_ir_after_an_unknown_pass_is_a_usage_error_listing_the_passes():
    result = invoke("compile", *ADD_ARGS, "--print-ir-after=csee")
    assert result.exit_code == 2
    assert "unknown pass 'csee'" in result.stderr and "cse" in result.stderr


CHANGED_BY_CSE_AND_DCE = """import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    unused = tl.load(out_ptr + offs)
    tl.store(out_ptr + offs, (x + 1.0) * (x + 1.0))
"""


def test_print_ir_after_change_prints_only_the_passes_that_changed_the_ssa(tmp_path):
    # A repeated sum (cse merges it) and an unused load (dce drops it); fold and licm change nothing.
    (tmp_path / "k.py").write_text(CHANGED_BY_CSE_AND_DCE)
    ssa = tmp_path / "k.ssa"
    ssa.write_text(ok(invoke("compile", str(tmp_path / "k.py"), "-D", "BLOCK=16", "--emit=ssa")))
    result = invoke("opt", str(ssa), "--print-ir-after-change")
    assert ok(result) == ok(invoke("opt", str(ssa)))
    assert headers(result.stderr) == ["// -----// IR Dump After cse //----- //",
                                      "// -----// IR Dump After dce //----- //"]


def test_opt_prints_and_times_its_passes_as_compile_does(tmp_path):
    ssa = tmp_path / "add.ssa"
    ssa.write_text(ok(invoke("compile", *ADD_ARGS, "--emit=ssa")))
    result = invoke("opt", str(ssa), "--print-ir-after=cse", "--print-ir-before=fold", "--time-passes")
    assert ok(result) == ok(invoke("opt", str(ssa)))
    assert headers(result.stderr) == ["// -----// IR Dump Before fold //----- //",
                                      "// -----// IR Dump After cse //----- //"]
    names = [line.split(")", 1)[1].strip() for line in result.stderr.splitlines() if "%)" in line]
    assert names == ["opt", *DEFAULT_PIPELINE, "Total"]


# ---- --time-passes ------------------------------------------------------------------------


def test_time_passes_reports_every_stage_and_pass_to_stderr():
    result = invoke("compile", *ADD_ARGS, "--emit=cuda", "--time-passes")
    assert ok(result) == ok(invoke("compile", *ADD_ARGS, "--emit=cuda"))
    names = [line.split(")", 1)[1].strip() for line in result.stderr.splitlines() if "%)" in line]
    assert names == ["parse", "trace", "lower", "opt", *DEFAULT_PIPELINE, "stage-dots", *STAGING_PASSES,
                     "layouts", *LAYOUT_PASSES, "emit-cuda", "Total"]
    assert "Execution time report" in result.stderr


# ---- --emit=cubin -------------------------------------------------------------------------


def test_emit_cubin_refuses_to_write_to_a_terminal(tmp_path):
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "mytriton.cli", "compile", *ADD_ARGS, "--emit=cubin"],
                              stdout=follower, stderr=subprocess.PIPE, cwd=tmp_path, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    assert b"binary" in proc.stderr and b"-o" in proc.stderr


@pytest.mark.nvcc
def test_emit_cubin_writes_an_elf_file(tmp_path, cache):
    ok(invoke("compile", *ADD_ARGS, "--emit=cubin", "-o", str(tmp_path / "k.cubin")))
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


# ---- MYTRITON_DUMP_DIR ------------------------------------------------------------------------

ADD_KERNEL = """
@mytriton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
"""


def test_dump_dir_variable_dumps_each_jit_specialisation_in_its_own_folder(kernel_module, tmp_path,
                                                                             monkeypatch, rng):
    import numpy as np

    monkeypatch.setenv("MYTRITON_DUMP_DIR", str(tmp_path / "dumps"))
    add = kernel_module(ADD_KERNEL).add_kernel
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    for block in (64, 128):
        add[(2,)](x, out, 100, BLOCK=block, backend="interp")
    np.testing.assert_array_equal(out, x + 1.0)
    folders = sorted(os.listdir(tmp_path / "dumps"))
    assert len(folders) == 2 and all(f.startswith("add_kernel-") for f in folders)
    for folder in folders:
        assert sorted(os.listdir(tmp_path / "dumps" / folder)) == [*UP_TO_LAYOUTS, "06-cuda.cu", "index.html"]


def test_dump_dir_variable_names_folders_safely(tmp_path):
    dumper = instrument.jit_dump_dir(str(tmp_path), "../../étrange\nname", ("key",))
    folder = os.path.basename(dumper.directory)
    assert os.path.dirname(dumper.directory) == str(tmp_path)
    assert set(folder) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def test_dump_dir_variable_refuses_a_planted_link_for_a_folder(tmp_path):
    from mytriton.diagnostics import CompileError

    first = instrument.jit_dump_dir(str(tmp_path), "k", ("key",))
    os.rmdir(first.directory)
    os.symlink(tmp_path / "elsewhere", first.directory)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(CompileError, match="not a directory"):
        instrument.jit_dump_dir(str(tmp_path), "k", ("key",))
