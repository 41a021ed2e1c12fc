"""The pipeline as data: ``compiler.STAGES`` is the one list of stages that
``compile``, the CLI's subcommands, ``--dump-dir`` and the pass hooks read,
and every pass a stage runs goes through the pass manager."""
from __future__ import annotations

from pathlib import Path

import pytest

from mytriton import compiler
from mytriton.cli import main
from mytriton.diagnostics import CompileError
from mytriton.passes import DEFAULT_PIPELINE

ADD = Path(__file__).resolve().parents[1] / "samples" / "add.py"


def compile_add(emit: str, **hooks) -> str | bytes:
    options = compiler.Options(defines={"BLOCK": 256}, **hooks)
    return compiler.compile_source(ADD.read_text(), "samples/add.py", emit, options)


def test_each_stage_follows_one_listed_before_it():
    seen: set[str | None] = {None}
    for stage in compiler.STAGES:
        assert stage.after in seen and (stage.reads is None or stage.reads in seen)
        seen.add(stage.name)


def test_emit_names_the_stages_in_pipeline_order():
    assert compiler.EMITS == tuple(stage.name for stage in compiler.STAGES)


def test_compile_runs_the_stages_on_the_way_to_the_one_asked_for():
    assert [stage.name for stage in compiler.path_to("cubin")] == [
        "ast", "tree", "ssa", "opt", "staged", "layouts", "cuda", "ptx", "cubin"]
    assert [stage.name for stage in compiler.path_to("ttir")] == ["ast", "tree", "ssa", "opt", "ttir"]


def test_every_stage_run_by_a_subcommand_of_its_own_is_one():
    for stage in compiler.STAGES:
        if not stage.command.startswith("nvcc"):
            assert stage.command in main.commands


def test_each_stage_reports_its_result_once_in_order():
    reached: list[str] = []
    compile_add("cuda", on_stage=lambda name, value: reached.append(name))
    assert reached == ["ast", "tree", "ssa", "opt", "staged", "layouts", "cuda"]


def test_every_pass_of_every_stage_runs_under_the_pass_hooks():
    before: list[str] = []
    after: list[str] = []
    compile_add("layouts", before_each=lambda name, kernel: before.append(name),
                after_each=lambda name, kernel: after.append(name))
    assert before == after == [*DEFAULT_PIPELINE, "stage-dots", "software-pipeline", "layouts", "copy-widths",
                               "tma-copies", "overlap-wgmma", "tma-stores", "read-widths", "combine-strategy", "hold-tiles", "allocate-shared",
                               "insert-barriers", "proxy-fences"]


def test_a_stage_pass_that_breaks_the_ssa_is_named_in_the_error(monkeypatch):
    from mytriton.passes.overlap_wgmma import OverlapWgmmaPass

    def breaks(self, kernel):
        kernel.num_warps = 3
        return kernel

    monkeypatch.setattr(OverlapWgmmaPass, "apply", breaks)
    with pytest.raises(CompileError, match="after pass 'overlap-wgmma'"):
        compile_add("layouts")


def test_without_verify_each_a_stage_is_verified_once_after_its_passes(monkeypatch):
    from mytriton.passes import manager

    checked: list[int] = []
    real = manager.verify
    monkeypatch.setattr(manager, "verify", lambda kernel: checked.append(1) or real(kernel))
    compile_add("layouts", verify_each=False)
    assert len(checked) == 3  # opt, staged, layouts: one verifier run each
    checked.clear()
    compile_add("layouts")
    assert len(checked) > 3 * 3


def test_without_verify_each_a_broken_stage_names_its_passes_and_the_switch(monkeypatch):
    from mytriton.passes.overlap_wgmma import OverlapWgmmaPass

    def breaks(self, kernel):
        kernel.num_warps = 3
        return kernel

    monkeypatch.setattr(OverlapWgmmaPass, "apply", breaks)
    with pytest.raises(CompileError, match=r"after passes layouts, copy-widths, tma-copies, overlap-wgmma, .* \(MYTRITON_VERIFY_EACH=1 names"):
        compile_add("layouts", verify_each=False)


@pytest.mark.parametrize("value, each", [(None, False), ("0", False), ("", False), ("1", True)])
def test_the_jit_verifies_each_pass_only_under_mytriton_verify_each(monkeypatch, value, each):
    if value is None:
        monkeypatch.delenv("MYTRITON_VERIFY_EACH", raising=False)
    else:
        monkeypatch.setenv("MYTRITON_VERIFY_EACH", value)
    assert compiler.verify_each_from_env() is each
