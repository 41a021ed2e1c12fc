"""The lit suite (tests/lit/: pass and stage tests as IR text, checked by
FileCheck) inside pytest, so that every run of the test suite runs it too.

Each lit file is one test twice over. In the fast tier (`test_lit`) its RUN
lines run in this process (tests/lit_in_process.py: lit's shell parser,
`mytriton` and `filecheck` called in-process, the rest as processes), a few
milliseconds a file instead of a quarter of a second a process. In the slow
tier (`test_lit_through_lit`) lit itself runs the file, each command a
process as `make lit` runs it: the same files pass both ways, or CI says which
does not. A failure reports the commands run and what FileCheck said.

Under pytest-xdist every worker collects every file, but lit runs once: the
first worker to need the results runs it and leaves them in the run's shared
temporary folder, and the others read them there (a worker that needs them
meanwhile waits; lit runs its files in parallel, so the cores stay busy)."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import ROOT
from lit_in_process import run_file

LIT_DIR = ROOT / "tests" / "lit"
SUFFIXES = (".ssa", ".tree", ".py")  # as lit.cfg.py has them
SUITE = "mytriton"  # lit.cfg.py's config.name: lit reports a file as SUITE.folder / name
LIT_SECONDS = 900


def lit_files() -> list[str]:
    return sorted(path.relative_to(LIT_DIR).as_posix() for path in LIT_DIR.rglob("*")
                  if path.suffix in SUFFIXES and path.name != "lit.cfg.py" and "Output" not in path.parts)


@pytest.fixture(scope="session")
def lit_reports(request, tmp_path_factory) -> dict[str, str | None]:
    """Each file lit ran: None when it passed, else lit's report. lit runs
    the files this run selected (all of them unless `-k` chose fewer), once
    for all xdist workers."""
    base = tmp_path_factory.getbasetemp()
    # An xdist worker's folder lies in the run's own, beside the other workers'.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    results = shared / "lit-reports.json"
    with open(shared / "lit-reports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held while the first worker runs lit
        if not results.exists():
            reports = run_lit(request, tmp_path_factory)
            results.write_text(json.dumps(reports))
    return json.loads(results.read_text())


def run_lit(request, tmp_path_factory) -> dict[str, str | None]:
    selected = [item.callspec.params["name"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_lit_through_lit"]
    xml = tmp_path_factory.mktemp("lit") / "results.xml"
    # This run's own %t folder: another run of the suite in the same checkout may run lit at once.
    env = {**os.environ, "MYTRITON_LIT_EXEC_ROOT": str(tmp_path_factory.mktemp("lit-exec"))}
    run = subprocess.run([sys.executable, "-c", "import lit.main; lit.main.main()", "-q",
                          "--xunit-xml-output", str(xml), *(str(LIT_DIR / name) for name in selected)],
                         capture_output=True, text=True, timeout=LIT_SECONDS, env=env)
    assert xml.exists(), f"lit wrote no results (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"
    reports: dict[str, str | None] = {}
    for case in ElementTree.parse(xml).iter("testcase"):
        folder = case.get("classname").removeprefix(SUITE).lstrip(".").replace(".", "/")
        problem = case.find("failure")
        if problem is None:
            problem = case.find("skipped")
        name = f"{folder}/{case.get('name')}" if folder else case.get("name")
        reports[name] = None if problem is None else (problem.text or problem.get("message") or "failed")
    return reports


def test_the_lit_suite_has_a_file_per_pass_and_stage():
    folders = {name.split("/")[0] for name in lit_files()}
    assert folders >= {"cse", "dce", "fold", "licm", "opt", "stage-dots", "verify", "lower", "trace"}


@pytest.mark.parametrize("name", lit_files())
def test_lit(name, tmp_path):
    report = run_file(LIT_DIR / name, tmp_path)
    if report is not None:
        pytest.fail(f"tests/lit/{name} failed:\n{report}", pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", lit_files())
def test_lit_through_lit(name, lit_reports):
    assert name in lit_reports, f"lit did not run tests/lit/{name}"
    report = lit_reports[name]
    if report is not None:
        pytest.fail(f"tests/lit/{name} failed:\n{report}", pytrace=False)


def write_lit_file(folder, body: str):
    path = folder / "case.ssa"
    source = sorted((LIT_DIR / "cse").glob("*.ssa"))[0].read_text()
    kernel = "\n".join(line for line in source.splitlines() if not line.startswith("//"))
    path.write_text(body + "\n" + kernel + "\n")
    return path


def test_in_process_a_check_that_does_not_match_fails_with_filechecks_report(tmp_path):
    path = write_lit_file(tmp_path, "// RUN: mytriton verify %s | filecheck %s\n// CHECK: no-such-{{op}}")
    report = run_file(path, tmp_path)
    assert report is not None and "# filecheck" in report and "error: Couldn't match" in report


def test_in_process_not_fails_a_command_that_succeeds(tmp_path):
    path = write_lit_file(tmp_path, "// RUN: not mytriton verify %s")
    assert run_file(path, tmp_path) is not None
    assert run_file(write_lit_file(tmp_path, "// RUN: mytriton verify %s"), tmp_path) is None


def test_in_process_an_error_is_read_from_stderr_through_2_and_1(tmp_path):
    path = write_lit_file(tmp_path, "// RUN: not mytriton opt -p no-such-pass %s 2>&1 | filecheck %s\n"
                                    "// CHECK: no-such-pass")
    assert run_file(path, tmp_path) is None


def test_in_process_leaves_the_signal_handlers_as_they_were(tmp_path):
    import signal
    before = signal.getsignal(signal.SIGTERM)
    assert run_file(write_lit_file(tmp_path, "// RUN: mytriton verify %s"), tmp_path) is None
    assert signal.getsignal(signal.SIGTERM) is before
