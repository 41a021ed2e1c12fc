"""What README.md, docs/, CHANGELOG.md, LICENSE and the Makefile promise a new
user and a maintainer, checked against the code: the README is a short front
page whose example runs and which links every page of docs/, the set-up starts
with a virtual environment, every command and every environment variable the
package reads is documented (docs/cli.md), completion works as written, the
pages' links lead somewhere, and the README keeps to the user's own machine
(maintainers' notes live in docs/contributing.md).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT
from mytriton.cli import main

README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")


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


def test_the_readme_is_a_front_page_of_about_150_lines():
    assert len(README.splitlines()) <= 180


def test_the_readme_example_runs_as_written(tmp_path):
    """The first Python block, saved as a file and run (in the interpreter, so that it runs anywhere)."""
    example = README.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.py").write_text(example)
    env = dict(os.environ, MYTRITON_BACKEND="interp",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "example.py"], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_readme_links_every_page_of_docs():
    pages = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert {page for page in pages if f"]({page})" not in README} == set()


def test_every_relative_link_of_the_readme_and_docs_leads_to_a_file():
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        # Markdown links to pages and files ([text](docs/cli.md)), not a launch's kernel[grid](args).
        for target in re.findall(r"\]\(((?:[\w.-]+/)*(?:[\w.-]+\.md|LICENSE))(?:#[\w-]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to a missing {target}"


def test_every_environment_variable_the_package_reads_is_in_the_cli_pages_table():
    table = section(CLI, "Environment variables")
    documented = set(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE))
    assert environment_variables("mytriton") - documented == set()


def test_every_environment_variable_of_the_tests_and_tools_is_documented():
    for name in environment_variables("tests") | environment_variables("tools"):
        assert f"`{name}`" in CONTRIBUTING or f"`{name}`" in CLI, name


def test_every_command_is_in_the_cli_pages_command_table():
    table = section(CLI, "The stages")
    for name in main.commands:
        assert re.search(rf"^\| `{re.escape(name)}\b", table, re.MULTILINE), f"'{name}' is not in the table"


def test_shell_completion_is_documented_for_bash_zsh_and_fish():
    completion = section(CLI, "Shell completion")
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
    for heading in ("## Tests", "### Lint", "### lit and FileCheck", "### Snapshots", "### Fuzzing",
                    "## GPU tests on a GPU machine", "## Benchmarks", "## Packaging"):
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
