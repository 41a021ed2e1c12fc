"""``mytriton doctor`` and why the GPU is or is not used: the report, the
backend ``auto`` picks and its reason, and a clear error (never a raw
OSError) when ``cuda`` is asked for where the CUDA driver is missing."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import ROOT
from mytriton.cli import main
from mytriton.diagnostics import CompileError
from mytriton.runtime import cuda_driver
from mytriton.runtime.jit import BackendUnavailable, explain_backend, select_backend
from mytriton.user_cache import write_private

ADD = str(ROOT / "samples" / "add.py")
MISSING = "libcuda-absent.so.1: cannot open shared object file"  # what the loader says of a missing library
# The code that makes the driver missing in a fresh process, on any machine.
NO_DRIVER = "import mytriton.runtime.driver_api as d; d._LIBRARY_NAMES = ('libcuda-absent.so.1',); "


@pytest.fixture
def no_driver(monkeypatch):
    """The CUDA driver library cannot be loaded, on any machine (as on one without it)."""
    from mytriton.runtime import driver_api

    monkeypatch.setattr(driver_api, "_LIBRARY_NAMES", ("libcuda-absent.so.1",))
    monkeypatch.setattr(driver_api, "_driver", None)
    monkeypatch.setattr(driver_api, "_failure", None)
    monkeypatch.delenv("MYTRITON_BACKEND", raising=False)
    cuda_driver.cuda_status.cache_clear()
    yield
    cuda_driver.cuda_status.cache_clear()


def doctor() -> dict[str, str]:
    result = CliRunner().invoke(main, ["doctor"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return dict(line.split(None, 1) if not line.startswith("GPU ") else ("GPU " + line.split()[1],
                line.split(None, 2)[2]) for line in result.stdout.splitlines())


def test_doctor_reports_every_component():
    assert {"Python", "mytriton", "NumPy", "Lark", "click", "driver", "nvcc", "cache", "backend"} <= set(doctor())


def test_doctor_reports_the_versions_of_the_python_packages():
    from importlib import metadata

    rows = doctor()
    assert rows["NumPy"] == metadata.version("numpy") and rows["Lark"] == metadata.version("lark")
    assert rows["click"] == metadata.version("click")
    assert rows["Python"].startswith(sys.version.split()[0])


def test_doctor_gives_the_loaders_exact_error_for_the_driver(no_driver):
    assert MISSING in doctor()["driver"]


def test_doctor_says_auto_picks_the_interpreter_and_why(no_driver):
    backend = doctor()["backend"]
    assert backend.startswith("interp (auto: the CUDA driver library cannot be loaded") and MISSING in backend


def test_doctor_honours_the_backend_variable(monkeypatch):
    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    assert doctor()["backend"] == "interp (MYTRITON_BACKEND=interp chooses the NumPy interpreter)"


def test_doctor_reports_the_cache_directory_and_its_size(cache):
    assert write_private(cache / ("ab" * 32 + ".ptx"), b"x" * 2048)
    assert doctor()["cache"] == f"{cache} (1 entries, 2.0 KiB)"


@pytest.mark.nvcc
def test_doctor_reports_nvccs_path_and_release():
    from mytriton.backends.cuda.nvcc import find_nvcc

    nvcc = doctor()["nvcc"]
    assert nvcc.startswith(find_nvcc()) and "release" in nvcc


@pytest.mark.nvcc
def test_doctor_says_generated_code_includes_no_header_and_checks_nvccs_own():
    assert doctor()["headers"] == "generated code includes none; nvcc finds its cuda_runtime.h, host compiler runs"


def test_doctor_builds_nothing_unless_asked():
    assert "build" not in doctor()


@pytest.mark.nvcc
def test_doctor_build_times_a_new_kernels_stages_and_compile_and_caches_nothing(cache):
    result = CliRunner().invoke(main, ["doctor", "--build"], catch_exceptions=False)
    [row] = [line for line in result.stdout.splitlines() if line.startswith("build ")]
    assert re.fullmatch(r"build +a 128x128x64 f16 matmul for sm_90: mytriton's stages \d+\.\d\d s, "
                        r"(nvrtc|nvcc) \d+\.\d\d s \(caches bypassed\)", row), row
    assert not list(cache.glob("*.cubin"))


def test_doctor_build_keeps_nvrtc_out_of_the_drivers_compute_cache(monkeypatch):
    from mytriton import doctor as doctor_module
    from mytriton.backends.cuda import nvcc

    seen = []
    monkeypatch.setattr(nvcc, "build", lambda *args, **kwargs: seen.append(os.environ.get("CUDA_CACHE_DISABLE")))
    monkeypatch.delenv("CUDA_CACHE_DISABLE", raising=False)
    doctor_module.build_row()
    assert seen == ["1"] and "CUDA_CACHE_DISABLE" not in os.environ  # set for the build alone


def test_doctor_names_the_header_a_toolkit_lacks(tmp_path, monkeypatch):
    """A slim toolkit (nvcc without the runtime headers): the preprocessor's
    own error, and what to install."""
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\ncat > /dev/null\n"
                    "echo '<command-line>: fatal error: cuda_runtime.h: No such file or directory' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    headers = doctor()["headers"]
    assert "fatal error: cuda_runtime.h: No such file or directory" in headers
    assert "cuda-cudart-dev" in headers


def test_doctor_without_nvcc_still_says_generated_code_includes_no_header(monkeypatch):
    from mytriton.backends.cuda import nvcc

    def missing():
        raise CompileError("nvcc not found")

    monkeypatch.setattr(nvcc, "find_nvcc", missing)
    assert doctor()["headers"] == "generated code includes none; no nvcc to check"


@pytest.mark.gpu
def test_doctor_lists_each_gpu_with_its_compute_capability():
    rows = doctor()
    assert "GPU 0" in rows and "compute capability" in rows["GPU 0"]
    assert rows["backend"].startswith("cuda (auto: the CUDA driver sees")


# ---- asking for cuda without the driver -----------------------------------------------------------


def test_auto_falls_back_to_the_interpreter_without_the_driver(no_driver):
    assert select_backend() == "interp"


def test_cuda_without_the_driver_is_a_mytriton_error_saying_what_is_missing(no_driver):
    with pytest.raises(BackendUnavailable, match=r"the CUDA driver library cannot be loaded") as err:
        explain_backend("cuda")
    assert isinstance(err.value, CompileError) and MISSING in err.value.message


def test_a_launch_on_cuda_without_the_driver_raises_backend_unavailable(no_driver, kernel_module):
    import numpy as np

    module = kernel_module("""
@mytriton.jit
def k(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), 1.0)
""")
    with pytest.raises(BackendUnavailable, match="backend='cuda' asks for the GPU"):
        module.k[(1,)](np.zeros(4, np.float32), backend="cuda")


def test_run_backend_cuda_without_the_driver_is_a_usage_error_naming_the_option(no_driver):
    result = CliRunner().invoke(main, ["run", ADD, "--grid", "1", "--backend", "cuda"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "Invalid value for '--backend'" in result.stderr and MISSING in result.stderr


def test_the_backend_variable_asking_for_cuda_without_the_driver_is_an_error(no_driver, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_BACKEND", "cuda")
    result = CliRunner().invoke(main, ["run", ADD, "--grid", "1", "-D", "BLOCK=4", "--arg", "x_ptr=rand:4",
                                       "--arg", "y_ptr=rand:4", "--arg", "out_ptr=zeros:4", "--arg", "n=4",
                                       "--out-dir", str(tmp_path)],
                                catch_exceptions=False)
    assert result.exit_code == 1
    assert "error: MYTRITON_BACKEND=cuda asks for the GPU, but the CUDA driver library cannot be loaded" in result.stderr
    assert "internal compiler error" not in result.stderr


def test_the_demo_says_why_it_runs_in_the_interpreter():
    code = (NO_DRIVER + "import runpy; "
            f"runpy.run_path({str(ROOT / 'samples' / 'demo.py')!r}, run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path[1:]]), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "running in the NumPy interpreter: auto: the CUDA driver library cannot be loaded" in result.stdout
