"""What README.md, CONTRIBUTING.md, CHANGELOG.md, LICENSE and the Makefile
promise a new user and a maintainer, checked against the code: the set-up
starts with a virtual environment, every command and every environment
variable the package reads is documented, completion works as written, and
the README keeps to the user's own machine (maintainers' notes live in
CONTRIBUTING.md).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys


from conftest import ROOT
from mytriton.cli import main

README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under a ``## heading`` up to the next heading of that level."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def environment_variables(folder: str) -> set[str]:
    """Every MYTRITON_* name a module in ``folder`` mentions in a string."""
    names = set()
    for path in (ROOT / folder).rglob("*.py"):
        names |= set(re.findall(r"[\"'](MYTRITON_[A-Z0-9_]+)[\"']", path.read_text(encoding="utf-8")))
    return names


def test_set_up_starts_by_making_a_virtual_environment():
    setup = section(README, "Set-up")
    first_block = setup.split("```sh\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines()[0].startswith("python3 -m venv .venv && . .venv/bin/activate")
    assert "make demo" in setup and "make test" in setup


def test_set_up_says_the_gpu_needs_a_driver_and_nvcc_and_no_python_package():
    setup = section(README, "Set-up")
    assert "libcuda.so.1" in setup and "nvcc" in setup and "no Python package" in setup


def test_the_readme_has_no_section_about_machines_outside_the_users_own():
    headings = [line for line in README.splitlines() if line.startswith("#") and not line.startswith("#blocked")
                and not line.startswith("#slice")]
    assert not [h for h in headings if re.search(r"H200|device machine|GPU machine", h)]
    assert "../shared" not in README and ".whl/" not in README


def test_every_environment_variable_the_package_reads_is_in_the_readme_table():
    table = section(README, "Environment variables")
    documented = set(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE))
    assert environment_variables("mytriton") - documented == set()


def test_every_environment_variable_of_the_tests_and_tools_is_documented():
    for name in environment_variables("tests") | environment_variables("tools"):
        assert f"`{name}`" in CONTRIBUTING or f"`{name}`" in README, name


def test_every_command_is_in_the_readme_command_table():
    table = section(README, "The stages")
    for name in main.commands:
        assert re.search(rf"^\| `{re.escape(name)}\b", table, re.MULTILINE), f"'{name}' is not in the table"


def test_shell_completion_is_documented_for_bash_zsh_and_fish():
    completion = section(README, "Shell completion")
    for shell in ("bash", "zsh", "fish"):
        assert f"_MYTRITON_COMPLETE={shell}_source mytriton" in completion


def test_the_documented_bash_completion_command_prints_a_completion_function():
    code = "from mytriton.cli import main; main(prog_name='mytriton')"
    env = dict(os.environ, _MYTRITON_COMPLETE="bash_source",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0
    assert "_mytriton_completion()" in result.stdout and "complete -o nosort -F _mytriton_completion mytriton" \
        in result.stdout


def test_make_demo_on_a_fresh_checkout_makes_a_virtual_environment_first(tmp_path):
    venv = tmp_path / "venv"
    result = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", f"VENV={venv}"], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})
    commands = [line for line in result.stdout.splitlines() if not line.startswith("make")]
    assert commands[0] == f"python3 -m venv {venv}"
    assert commands[1].startswith(f"{venv}/bin/python -m pip install") and "-e '.[test]'" in commands[1]
    assert not venv.exists()  # -n only prints


def test_contributing_holds_the_maintainers_notes():
    for heading in ("## Tests", "### lit and FileCheck", "### Snapshots", "### Fuzzing", "## GPU tests on a GPU machine",
                    "## Benchmarks", "## Packaging"):
        assert heading in CONTRIBUTING
    assert "UPDATE_SNAPSHOTS=1" in CONTRIBUTING and "python -m pytest -m gpu" in CONTRIBUTING


def test_the_changelog_keeps_a_changelog():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n")
    assert "https://keepachangelog.com/" in changelog and "\n## [Unreleased]\n" in changelog
    assert "\n### Added\n" in changelog


def test_the_licence_is_mit():
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in licence
