"""The emitted CUDA is real CUDA: nvcc builds it, and a build is cached.

Needs nvcc (the ``nvcc`` marker skips these tests where it is missing); every
test gets its own empty cache directory through ``MYTRITON_CACHE_DIR``. The
samples build with the default toolchain (NVRTC where it is found:
test_nvrtc.py); the tests that count nvcc's processes turn NVRTC off.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES, sample_names, sample_options, tiered
from mytriton import compiler
from mytriton.backends.cuda import nvcc
from mytriton.compiler import Options

pytestmark = pytest.mark.nvcc

SAMPLE_OPTIONS = {name: sample_options(name) for name in sample_names()}

ELF_MAGIC = b"\x7fELF"


def cuda_of(name: str) -> str:
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, f"samples/{name}.py", "cuda", Options(**SAMPLE_OPTIONS[name]))


@pytest.fixture
def nvcc_runs(monkeypatch):
    """Count the processes the nvcc module starts from now on (each still runs);
    builds use nvcc, not NVRTC, where both are found."""
    monkeypatch.setenv("MYTRITON_NVRTC", "0")
    calls: list[list[str]] = []
    real_run, real_scratch_run = subprocess.run, nvcc.scratch.run

    def counting(real):
        def run(cmd, *args, **kwargs):
            calls.append(list(cmd))
            return real(cmd, *args, **kwargs)
        return run

    monkeypatch.setattr(nvcc.subprocess, "run", counting(real_run))
    monkeypatch.setattr(nvcc.scratch, "run", counting(real_scratch_run))
    return calls


@pytest.mark.parametrize("name", tiered(SAMPLE_OPTIONS, fast=("add", "matmul")))
def test_sample_cuda_builds_a_cubin_for_sm_90(cache, name):
    cubin = nvcc.compile_cubin(cuda_of(name), "sm_90")
    assert cubin.startswith(ELF_MAGIC)


def test_compile_emit_ptx_prints_ptx_with_the_kernel_entry(tmp_path):
    env = dict(os.environ)
    env["MYTRITON_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run([sys.executable, "-m", "mytriton.cli", "compile", "samples/relu.py", "--emit=ptx"],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert ".version " in result.stdout and ".target sm_90" in result.stdout
    assert ".entry relu_kernel(" in result.stdout


def test_second_build_of_the_same_source_does_not_run_nvcc(cache, nvcc_runs):
    source = cuda_of("add")
    first = nvcc.compile_cubin(source, "sm_90")  # nvcc_version is cached from here on too
    builds_before = len(nvcc_runs)
    assert nvcc.compile_cubin(source, "sm_90") == first
    assert len(nvcc_runs) == builds_before


def test_changed_source_runs_nvcc_again(cache, nvcc_runs):
    source = cuda_of("add")
    nvcc.compile_cubin(source, "sm_90")
    builds_before = len(nvcc_runs)
    cubin = nvcc.compile_cubin(source + "// changed\n", "sm_90")
    assert cubin.startswith(ELF_MAGIC)
    assert len(nvcc_runs) == builds_before + 1
    assert "--cubin" in nvcc_runs[-1]


def test_cache_lives_in_the_cache_directory(cache):
    nvcc.compile_cubin(cuda_of("vector_copy"), "sm_90")
    assert [p.suffix for p in cache.iterdir()] == [".cubin"]


def test_emit_cubin_compiles_the_cuda_once_and_gives_the_jits_bytes(cache, nvcc_runs):
    """--emit=cubin runs nvcc -ptx on the CUDA and then ptxas alone on that
    PTX (no second cicc), and the cubin is the one the JIT builds from the CUDA."""
    name = "matmul"
    source = (SAMPLES / f"{name}.py").read_text()
    options = Options(**SAMPLE_OPTIONS[name])
    cubin = compiler.compile_source(source, f"samples/{name}.py", "cubin", options)
    builds = [cmd for cmd in nvcc_runs if "--version" not in cmd]
    assert [cmd[1] for cmd in builds] == ["--ptx", "--cubin"]
    assert builds[1][-1].endswith("kernel.ptx")
    assert cubin == nvcc.compile_cubin(cuda_of(name), options.arch)
