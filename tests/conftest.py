"""Shared test helpers: compiling kernel source text to each stage."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from mytriton import compiler
from mytriton.compiler import Options

from sample_signatures import SAMPLE_SIGNATURES

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

# Every kernel the tests launch is verified after each pass, as compile verifies it (a launch's
# default verifies each stage's result once): a pass that breaks a test kernel's SSA fails there.
os.environ.setdefault("MYTRITON_VERIFY_EACH", "1")



def tiered(cases, *, fast=None, slow=None) -> list:
    """An exhaustive sweep's cases for ``parametrize``: those named in ``fast``
    (or all but those in ``slow``) run in every tier; the others are marked
    slow, for ``make test-slow`` and ``make test-all``. Test ids stay as
    ``parametrize`` gives them to the plain cases."""
    assert (fast is None) != (slow is None), "name the fast cases or the slow ones"
    cases = list(cases)
    named = fast if fast is not None else slow
    assert all(case in cases for case in named), f"not a case: {[c for c in named if c not in cases]}"
    in_fast_tier = (lambda case: case in fast) if fast is not None else (lambda case: case not in slow)
    return [case if in_fast_tier(case)
            else pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.slow)
            for case in cases]


def sample_names() -> list[str]:
    """Every sample kernel file in samples/ (not the demo script)."""
    return sorted(p.stem for p in SAMPLES.glob("*.py") if p.stem != "demo")


def sample_options(name: str) -> dict:
    signature = SAMPLE_SIGNATURES.get(name)
    return {"signature": signature} if signature else {}


def sample_trace_args(name: str) -> list[str]:
    signature = SAMPLE_SIGNATURES.get(name)
    return ["-s", signature] if signature else []


def kernel_source(body: str) -> str:
    """A kernel file: the standard imports followed by ``body`` (dedented)."""
    return "import mytriton\nimport mytriton.language as tl\n\n" + textwrap.dedent(body).lstrip("\n")


def compile_text(source: str, emit: str, file: str = "kernel.py", **options) -> str:
    return compiler.compile_source(source, file, emit, Options(**options))


def ssa_of(source: str, optimized: bool = False, file: str = "kernel.py", **options):
    """The SSA ``Kernel`` of a kernel source text (lowered; optimised if asked)."""
    return compiler.source_to_ssa(source, file, Options(**options), optimized=optimized)


def build(body: str, signature: str | None = None, **defines):
    """The lowered SSA of a kernel body (standard imports added)."""
    return ssa_of(kernel_source(body), defines=defines, signature=signature)


def randf(rng, *shape):
    """Random f32 data (never zeros: they hide unwritten outputs)."""
    return rng.standard_normal(shape).astype("float32")


def run_published(directory: Path, name: str, text: str) -> str:
    """Run ``text`` as a script under ``python -m mytriton.as_triton`` (``import
    triton`` is mytriton) in the interpreter; its stdout, after checking it succeeded."""
    import subprocess
    import sys

    (directory / name).write_text(text)
    result = subprocess.run([sys.executable, "-m", "mytriton.as_triton", name], cwd=directory,
                            env={"PYTHONPATH": str(ROOT), "MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty private cache (MYTRITON_CACHE_DIR) for this test."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def tmp_kernel(tmp_path):
    """Write kernel source to a file and return its path."""

    def write(body: str, name: str = "kernel.py") -> Path:
        path = tmp_path / name
        path.write_text(kernel_source(body))
        return path

    return write


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the marks this adds
def pytest_collection_modifyitems(config, items):
    """GPU tests run only where the CUDA driver sees a device; nvcc tests only where nvcc is, and
    nvrtc tests only where libnvrtc is.
    An nvcc build swept over parameters is an exhaustive case: its first case runs in every
    tier and the others are slow, unless the test chose its tiers itself (``tiered``)."""
    mark_nvcc_sweeps_slow(items)
    from mytriton.runtime.cuda_driver import cuda_available

    skip_gpu = None if cuda_available() else pytest.mark.skip(reason="no CUDA GPU (or its driver) here")
    from mytriton.backends.cuda.nvcc import find_nvcc
    from mytriton.diagnostics import CompileError

    try:
        find_nvcc()
        skip_nvcc = None
    except CompileError:
        skip_nvcc = pytest.mark.skip(reason="nvcc is not installed")
    from mytriton.backends.cuda.nvrtc import find as find_nvrtc

    found_nvrtc, why_not = find_nvrtc()
    skip_nvrtc = None if found_nvrtc else pytest.mark.skip(
        reason=f"no NVRTC: {why_not} (pip install nvidia-cuda-nvrtc)")
    skip_browser = None if find_chromium() else pytest.mark.skip(reason="no chromium or chromium-browser on PATH")
    for item in items:
        if skip_gpu and "gpu" in item.keywords:
            item.add_marker(skip_gpu)
        if skip_nvcc and "nvcc" in item.keywords:
            item.add_marker(skip_nvcc)
        if skip_nvrtc and "nvrtc" in item.keywords:
            item.add_marker(skip_nvrtc)
        if skip_browser and "browser" in item.keywords:
            item.add_marker(skip_browser)


def find_chromium() -> str | None:
    """Headless Chromium for the ``browser`` tests (Debian's chromium, Ubuntu's chromium-browser)."""
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


def mark_nvcc_sweeps_slow(items) -> None:
    sweeps: dict[tuple, list] = {}
    for item in items:
        if "nvcc" in item.keywords and "gpu" not in item.keywords and hasattr(item, "callspec"):
            sweeps.setdefault((item.path, item.cls, item.originalname), []).append(item)
    for cases in sweeps.values():
        if not any(case.get_closest_marker("slow") for case in cases):
            for case in cases[1:]:
                case.add_marker(pytest.mark.slow)


def load_sample(name: str):
    """Import a sample kernel module by file name (the samples folder is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"samples_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def kernel_module(tmp_path):
    """Write kernel source (standard imports added) to a file and import it,
    as a user's module would be; returns the module."""
    import importlib.util
    import itertools

    counter = itertools.count()

    def load(body: str):
        path = tmp_path / f"kernels_{next(counter)}.py"
        path.write_text(kernel_source(body))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
