"""`mytriton run`: launching a kernel file, SSA or CUDA file from the command
line, with generated or .npy inputs, writing outputs as .npy."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from conftest import ROOT
from mytriton_command import run

ADD_ARGS = ["--arg", "x_ptr=rand:1000", "--arg", "y_ptr=randn:1000", "--arg", "out_ptr=zeros:1000",
            "--arg", "n=1000"]


def mytriton(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return run(*args, cwd=cwd, env={"MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"}, text=True)


def test_run_writes_outputs_and_generated_inputs(tmp_path):
    result = mytriton("run", "samples/add.py", "--grid", "cdiv(n, BLOCK)", *ADD_ARGS, "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == [f"wrote {tmp_path}/x_ptr.npy", f"wrote {tmp_path}/y_ptr.npy",
                                             f"wrote {tmp_path}/out_ptr.npy"]
    x, y, out = (np.load(tmp_path / f"{name}.npy") for name in ("x_ptr", "y_ptr", "out_ptr"))
    assert x.dtype == np.float32 and x.std() > 0
    np.testing.assert_array_equal(out, x + y)


def test_run_reads_npy_inputs_and_checks_expectations(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(777).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "expected.npy", np.maximum(x, 0))
    result = mytriton("run", "samples/relu.py", "--grid", "4", "--arg", f"x_ptr={tmp_path}/x.npy",
                      "--arg", "out_ptr=zeros:777", "--arg", "n=777", "--out-dir", str(tmp_path / "out"),
                      "--expect", f"out_ptr={tmp_path}/expected.npy")
    assert result.returncode == 0, result.stderr
    assert f"out_ptr matches {tmp_path}/expected.npy" in result.stdout
    assert not (tmp_path / "out" / "x_ptr.npy").exists()  # an input read from a file is not rewritten


def test_run_fails_when_an_expectation_does_not_hold(tmp_path):
    np.save(tmp_path / "wrong.npy", np.ones(1000, np.float32))
    result = mytriton("run", "samples/add.py", "--grid", "cdiv(n, BLOCK)", *ADD_ARGS, "--out-dir",
                      str(tmp_path), "--expect", f"out_ptr={tmp_path}/wrong.npy")
    assert result.returncode == 1
    assert "out_ptr does not match" in result.stderr


def test_run_launches_ssa_text(tmp_path):
    ssa = tmp_path / "add.ssa"
    compiled = mytriton("compile", "samples/add.py", "--emit=opt", "-o", str(ssa))
    assert compiled.returncode == 0, compiled.stderr
    result = mytriton("run", str(ssa), "--grid", "cdiv(n, 256)", *ADD_ARGS, "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    x, y, out = (np.load(tmp_path / f"{name}.npy") for name in ("x_ptr", "y_ptr", "out_ptr"))
    np.testing.assert_array_equal(out, x + y)


def test_runtime_types_come_from_the_arguments_given(tmp_path):
    # slope=0.5 is a float, so leaky_relu is specialised with an f32 slope.
    result = mytriton("run", "samples/leaky_relu.py", "--grid", "cdiv(n, BLOCK)", "--arg", "x_ptr=randn:300",
                      "--arg", "out_ptr=zeros:300", "--arg", "n=300", "--arg", "slope=0.5",
                      "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    x, out = np.load(tmp_path / "x_ptr.npy"), np.load(tmp_path / "out_ptr.npy")
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.5 * x), rtol=1e-6)


def test_arguments_are_specialised_as_a_launch_from_python_would_be():
    from mytriton.runtime.arguments import signature_of
    from mytriton.runtime.launch_cli import arg_types_from_specs, hints_from_specs

    runtime = ["x_ptr", "out_ptr", "n", "m", "slope"]
    specs = {"x_ptr": "rand:1024", "out_ptr": "zeros:1024", "n": "1024", "m": "1001", "slope": "0.5"}
    types = arg_types_from_specs(runtime, specs)
    assert signature_of(types, hints_from_specs(runtime, specs, types)) == "*fp32:16, *fp32:16, i32:16, i32, fp32"
    specs["m"] = "1000"
    assert signature_of(types, hints_from_specs(runtime, specs, types)) == "*fp32:16, *fp32:16, i32:16, i32:8, fp32"


def test_a_cuda_file_needs_the_gpu(tmp_path):
    cu = tmp_path / "add.cu"
    assert mytriton("compile", "samples/add.py", "-o", str(cu)).returncode == 0
    result = mytriton("run", str(cu), "--grid", "4", *ADD_ARGS, "--backend", "interp", "--out-dir", str(tmp_path))
    assert result.returncode == 1
    assert "a .cu file runs only on the GPU" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--grid", "cdiv(n, BLOCK)", "--arg", "x_ptr=rand:10"], "missing --arg y_ptr"),
    (["--grid", "cdiv(n, BLOCK)", *ADD_ARGS, "--arg", "z=1"], "no runtime parameter of that name"),
    (["--grid", "open('x')", *ADD_ARGS], "cannot evaluate"),
    (["--grid", "4", "--arg", "x_ptr=rand:oops", *ADD_ARGS[2:]], "bad size 'oops'"),
    (["--grid", "4", "--arg", "x_ptr", *ADD_ARGS[2:]], "--arg expects NAME=SPEC"),
    (["--grid", "4", "--arg", "x_ptr=missing.npy", *ADD_ARGS[2:]], "cannot load missing.npy"),
])
def test_bad_run_arguments_are_located_errors(args, message):
    result = mytriton("run", "samples/add.py", *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_misspelt_arg_name_is_refused_with_the_nearest_parameter(tmp_path):
    result = mytriton("run", "samples/relu.py", "--grid", "4", "--arg", "x_ptr=rand:100",
                      "--arg", "out_pt=zeros:100", "--arg", "n=100", "--out-dir", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "--arg out_pt: the kernel has no runtime parameter of that name; did you mean 'out_ptr'?" \
        in result.stderr
