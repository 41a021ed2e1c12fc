"""``mytriton samples DIR`` writes the sample kernels the README's commands
use (the wheel carries them as mytriton.samples), byte for byte."""
from __future__ import annotations

import os

from click.testing import CliRunner

from conftest import SAMPLES
from mytriton.cli import main


def test_samples_writes_every_sample_kernel_as_the_checkout_has_it(tmp_path):
    result = CliRunner().invoke(main, ["samples", str(tmp_path / "here")])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "here").iterdir())
    assert written == sorted(p.name for p in SAMPLES.glob("*.py"))
    assert (tmp_path / "here" / "add.py").read_bytes() == (SAMPLES / "add.py").read_bytes()
    assert f"wrote {tmp_path / 'here' / 'add.py'}" in result.output


def test_samples_replaces_a_planted_link_instead_of_writing_through_it(tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_text("keep")
    target = tmp_path / "here"
    target.mkdir()
    os.symlink(victim, target / "add.py")
    assert CliRunner().invoke(main, ["samples", str(target)]).exit_code == 0
    assert victim.read_text() == "keep" and not (target / "add.py").is_symlink()


def test_samples_into_a_file_is_an_error(tmp_path):
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(main, ["samples", str(tmp_path / "file")])
    assert result.exit_code != 0 and "Traceback" not in result.output
