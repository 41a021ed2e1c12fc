"""tools/gpu_differential.py: the GPU against the interpreter on generated
kernels. Here (nvcc, no GPU) its --build-only mode fills the build cache; on
the H200 a short run must find no mismatch."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "gpu_differential.py"


@pytest.mark.nvcc
def test_build_only_compiles_and_caches_every_kernel_without_a_gpu(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "-n", "3", "--seed", "40", "--build-only", "--jobs", "2",
                           "--cache-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kernels, 0 mismatches" in proc.stdout
    assert len(list(tmp_path.glob("*.cubin"))) == 3


@pytest.mark.gpu
def test_generated_kernels_give_on_the_gpu_what_they_give_in_the_interpreter(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "-n", "40", "--cache-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "40 kernels, 0 mismatches" in proc.stdout
