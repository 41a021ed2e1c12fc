"""Exit codes a Makefile can tell apart: 0 success, 1 an error in the input,
2 a usage error, 3 an internal compiler error (docs/cli.md, "Exit codes")."""
from __future__ import annotations

import os

from click.testing import CliRunner

from conftest import ROOT
from mytriton import cli, compiler

ADD = str(ROOT / "samples" / "add.py")


def invoke(*args: str, debug: str | None = None):
    return CliRunner(env={"MYTRITON_DEBUG": debug}).invoke(cli.main, list(args), catch_exceptions=False)


def broken_stage(*args, **kwargs):
    raise RuntimeError("a bug in a stage")


def test_success_exits_with_0():
    assert invoke("compile", ADD, "--emit=ssa").exit_code == 0


def test_an_error_in_the_input_exits_with_1(tmp_path):
    (tmp_path / "k.py").write_text("def k(:\n")
    result = invoke("compile", str(tmp_path / "k.py"))
    assert result.exit_code == cli.EXIT_INPUT == 1
    assert "error:" in result.stderr


def test_a_usage_error_exits_with_2():
    assert invoke("compile", ADD, "--emit=nothing").exit_code == cli.EXIT_USAGE == 2


def test_an_internal_error_exits_with_3_and_asks_for_a_bug_report(monkeypatch):
    monkeypatch.setattr(compiler, "compile_source", broken_stage)
    result = invoke("compile", ADD)
    assert result.exit_code == cli.EXIT_INTERNAL == 3
    assert "internal compiler error: RuntimeError: a bug in a stage" in result.stderr
    assert "please report it" in result.stderr


def test_an_internal_error_shows_no_traceback_by_default(monkeypatch):
    monkeypatch.setattr(compiler, "compile_source", broken_stage)
    assert "Traceback" not in invoke("compile", ADD).stderr


def test_an_internal_error_shows_the_traceback_with_mytriton_debug(monkeypatch):
    monkeypatch.setattr(compiler, "compile_source", broken_stage)
    result = invoke("compile", ADD, debug="1")
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr and "broken_stage" in result.stderr


def test_output_naming_a_directory_is_a_usage_error_naming_the_option(tmp_path):
    result = invoke("compile", ADD, "-o", str(tmp_path))
    assert result.exit_code == 2
    assert "'-o' / '--output'" in result.stderr and "is a directory" in result.stderr
    assert "internal compiler error" not in result.stderr


def test_output_ending_in_a_slash_is_a_usage_error_and_makes_nothing(tmp_path):
    result = invoke("compile", ADD, "-o", str(tmp_path / "new") + "/")
    assert result.exit_code == 2
    assert "is a directory" in result.stderr
    assert os.listdir(tmp_path) == []


def test_every_stage_command_refuses_a_directory_for_output(tmp_path):
    (tmp_path / "k.py").write_text((ROOT / "samples" / "add.py").read_text())
    for command in (["parse"], ["trace"], ["lower"], ["verify"], ["opt"], ["stage-dots"], ["layouts"],
                    ["emit-cuda"]):
        assert invoke(*command, str(tmp_path / "k.py"), "-o", str(tmp_path)).exit_code == 2, command
