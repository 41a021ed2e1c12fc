"""The distributions: the sdist holds the whole project, so that its tests run
from it, and the wheel built from that sdist holds every module, the grammars,
py.typed, the licence and the entry points; one version everywhere.

Both are built once per run, offline, with the environment's setuptools
(``python -m build --no-isolation``: the test extra brings build and a
setuptools new enough for PEP 639 licence metadata). The same tests pass in an
unpacked sdist, where the sdist's own list of files stands in for git's.
"""
from __future__ import annotations

import email
import fcntl
import importlib.metadata
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import mytriton
from conftest import ROOT

# Files the sdist's own test run cannot do without, whatever git says.
NEEDED = [
    "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md", "Makefile",
    "mytriton/__init__.py", "mytriton/py.typed", "grammars/__init__.py", "grammars/common.lark",
    "grammars/ssa.lark", "grammars/tree.lark", "docs/ir.md", "samples/Makefile", "samples/demo.py",
    "samples/add.py", "tests/conftest.py", "tests/sample_cases.py", "tests/sample_signatures.py",
    "tests/lit/lit.cfg.py", "tests/snapshots/add.ssa", "tests/snapshots/add.cu",
]
# Tracked files an sdist has no use for.
NOT_SHIPPED = {".gitignore"}


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel pip would build from it (build's default)."""
    out = tmp_path_factory.mktemp("dist")
    # setuptools stages the sdist in the checkout itself (mytriton-<version>/): two
    # xdist workers building at once would delete each other's, so they take turns.
    lock_path = ROOT / "build" / "packaging.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                                capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (sdist,) = out.glob("mytriton-*.tar.gz")
    (wheel,) = out.glob("mytriton-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def sdist_files(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile() and "/" in m.name}


def project_files() -> set[str]:
    """What the project is: git's tracked files in a checkout, else (in an
    unpacked sdist) the list of files that sdist was built with."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=ROOT, check=True, timeout=60)
        return {name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).is_file()}
    sources = (ROOT / "mytriton.egg-info" / "SOURCES.txt").read_text().split()
    return {name for name in sources if not name.startswith("mytriton.egg-info/")}


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_sdist_holds_every_project_file(dists):
    missing = project_files() - NOT_SHIPPED - sdist_files(dists["sdist"])
    assert not missing, f"not in the sdist (MANIFEST.in): {sorted(missing)[:20]}"


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_sdist_holds_what_its_tests_need(dists):
    files = sdist_files(dists["sdist"])
    assert [name for name in NEEDED if name not in files] == []
    lit_files = {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "lit").rglob("*") if p.is_file()
                 and p.suffix in (".ssa", ".tree", ".py")}
    assert lit_files and lit_files <= files


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_sdist_holds_no_build_or_cache_litter(dists):
    litter = [name for name in sdist_files(dists["sdist"])
              if "__pycache__" in name or name.endswith(".pyc") or name.startswith((".venv/", "samples/out/", "samples/out-sanitize/", "dist/"))
              or name.endswith(".lit_test_times.txt")]
    assert litter == []


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_wheel_holds_every_module_the_grammars_and_py_typed(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "mytriton").rglob("*.py") if "__pycache__" not in p.parts}
    grammars = {f"mytriton/grammars/{p.name}" for p in (ROOT / "grammars").iterdir()
                if p.suffix in (".py", ".lark")}
    assert sorted(modules - names) == [], "a package missing from pyproject.toml's packages?"
    assert sorted(grammars - names) == []
    assert "mytriton/py.typed" in names
    assert f"mytriton-{mytriton.__version__}.dist-info/licenses/LICENSE" in names


def wheel_text(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(f"mytriton-{mytriton.__version__}.dist-info/{name}").decode()


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_wheel_metadata_has_licence_urls_classifiers_and_extras(dists):
    metadata = email.message_from_string(wheel_text(dists["wheel"], "METADATA"))
    assert metadata["Version"] == mytriton.__version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL")} >= {"Homepage", "Repository", "Issues",
                                                                             "Changelog"}
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert set(metadata.get_all("Provides-Extra")) >= {"cuda", "bf16", "pygments", "test"}
    assert metadata.get_content_type() == "text/plain" and metadata["Description-Content-Type"] == "text/markdown"


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_wheel_registers_the_command_and_the_pygments_lexers(dists):
    entry_points = wheel_text(dists["wheel"], "entry_points.txt")
    assert "mytriton = mytriton.cli:main" in entry_points
    assert "[pygments.lexers]" in entry_points
    assert "mytriton-ssa = mytriton.ir.pygments_lexer:MytritonSSALexer" in entry_points
    assert "mytriton-tree = mytriton.ir.pygments_lexer:MytritonTreeLexer" in entry_points


def test_the_version_is_written_once():
    pyproject = (ROOT / "pyproject.toml").read_text()
    project_table = pyproject.split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert 'dynamic = ["version"]' in project_table
    assert not any(line.startswith("version") for line in project_table.splitlines())
    assert 'version = { attr = "mytriton.__version__" }' in pyproject  # [tool.setuptools.dynamic]


def test_the_command_the_package_and_the_metadata_give_one_version():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-m", "mytriton.cli", "--version"], capture_output=True, text=True,
                            cwd=ROOT, env=env, timeout=60)
    assert result.stdout.endswith(f", version {mytriton.__version__}\n")
    assert importlib.metadata.version("mytriton") == mytriton.__version__


@pytest.mark.slow  # builds the sdist and the wheel
def test_the_wheel_carries_the_samples_the_readme_uses(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
    samples = {f"mytriton/samples/{p.name}" for p in (ROOT / "samples").glob("*.py")}
    assert "mytriton/samples/add.py" in samples and sorted(samples - names) == []
