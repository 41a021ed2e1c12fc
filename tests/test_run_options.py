"""`mytriton run` rejects what it cannot do with one clear error (exit 1, an
`error:` line, no traceback, no file written): grids that divide by zero or
exceed CUDA's limits, generated arrays of negative or absurd sizes, seeds
numpy refuses, scalars their parameter type cannot hold, and `.cu` headers
whose fields have the wrong types."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import ROOT
from mytriton_command import run
from mytriton.limits import MAX_GENERATED_ELEMENTS
from mytriton.runtime.launch_cli import eval_grid

INPUTS = {"x_ptr": "rand:100", "y_ptr": "rand:100", "out_ptr": "zeros:100", "n": "100"}


def mytriton(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return run(*args, cwd=cwd, env={"MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"}, text=True)


def run_add(tmp_path, *extra: str, grid: str = "cdiv(n, BLOCK)", file: str = "samples/add.py",
            **changed: str) -> subprocess.CompletedProcess:
    specs = {**INPUTS, **changed}
    args = [a for name, spec in specs.items() for a in ("--arg", f"{name}={spec}")]
    return mytriton("run", file, "--grid", grid, *args, "--out-dir", str(tmp_path / "out"), *extra)


def assert_refused(result: subprocess.CompletedProcess, tmp_path, message: str) -> None:
    assert result.returncode == 1
    assert "error: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr and "internal compiler error" not in result.stderr
    assert not (tmp_path / "out").exists()


# ---- --grid ---------------------------------------------------------------------------------


@pytest.mark.parametrize("grid", ["cdiv(n, 0)", "n // 0", "n % (n - n)"])
def test_a_grid_that_divides_by_zero_is_an_error(tmp_path, grid):
    assert_refused(run_add(tmp_path, grid=grid), tmp_path, f"--grid '{grid}': division by zero")


@pytest.mark.parametrize("grid, axis, limit", [
    ("1000000000000", 0, 2**31 - 1), ("1, 65536", 1, 65535), ("1, 1, 70000", 2, 65535),
])
def test_a_grid_beyond_cudas_limits_is_an_error(tmp_path, grid, axis, limit):
    result = run_add(tmp_path, grid=grid)
    assert_refused(result, tmp_path, f"--grid '{grid}': grid axis {axis} has")
    assert f"over CUDA's limit of {limit} (MAX_GRID)" in result.stderr


def test_a_negative_grid_is_an_error(tmp_path):
    result = run_add(tmp_path, grid="n - 1000")
    assert_refused(result, tmp_path, "--grid 'n - 1000': axis 0 has -")


@pytest.mark.parametrize("grid, message", [
    ("cdiv(n)", "cdiv takes 2 arguments, got 1"),
    ("max(n)", "max takes 2 to 8 arguments, got 1"),
    ("cdiv(n, b=2)", "cannot evaluate"),
    ("*".join(["99999"] * 100), "is far beyond any grid size"),
])
def test_a_grid_function_misused_is_an_error(tmp_path, grid, message):
    result = run_add(tmp_path, grid=grid)
    assert_refused(result, tmp_path, message)
    assert f"error: --grid '{grid}': " in result.stderr


def test_a_grid_expression_of_huge_length_is_an_error(tmp_path):
    grid = "9" * 5000
    assert_refused(run_add(tmp_path, grid=grid), tmp_path, "--grid: the expression is 5000 characters long")


def test_a_grid_with_largest_allowed_sizes_evaluates():
    assert eval_grid("2147483647, 65535, 65535", {}) == (2**31 - 1, 65535, 65535)
    assert eval_grid("cdiv(n, 256), 0", {"n": 1000}) == (4, 0)


def test_an_error_in_a_one_dimensional_grid_names_the_program_by_one_index(tmp_path):
    result = run_add(tmp_path, grid="2", n="300", x_ptr="rand:100")
    assert_refused(result, tmp_path, "out-of-bounds load from 'x_ptr'")
    assert "(in program 0 at tile element [100])" in result.stderr


# ---- --arg and --seed -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec, message", [
    ("rand:-5", "--arg x_ptr: bad size '-5'"),
    ("rand:5x-1", "--arg x_ptr: bad size '5x-1'"),
    ("rand:" + "9" * 5000, "--arg x_ptr: bad size"),
    ("rand:100000x100000x100000", f"'run' generates at most {MAX_GENERATED_ELEMENTS}"),
    ("zeros:5:f32:extra", "has too many parts"),
])
def test_a_bad_generated_size_is_an_error(tmp_path, spec, message):
    assert_refused(run_add(tmp_path, x_ptr=spec), tmp_path, message)


def test_an_empty_generated_array_is_accepted(tmp_path):
    result = run_add(tmp_path, x_ptr="rand:0", y_ptr="rand:0", out_ptr="zeros:0", n="0")
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "out" / "out_ptr.npy").shape == (0,)


def test_a_negative_seed_is_an_error(tmp_path):
    assert_refused(run_add(tmp_path, "--seed", "-1"), tmp_path, "--seed must be from 0 to")


@pytest.mark.parametrize("value, message", [
    ("2.5", "--arg n: the parameter is i32, which takes an integer, got 2.5"),
    ("4294967296", "--arg n: 4294967296 is out of range for i32"),
])
def test_a_scalar_its_declared_type_cannot_hold_is_an_error(tmp_path, value, message):
    result = run_add(tmp_path, "-s", "*fp32, *fp32, *fp32, i32", n=value)
    assert_refused(result, tmp_path, message)


def test_an_integer_beyond_i32_specialises_an_i64_parameter(tmp_path):
    result = run_add(tmp_path, grid="1", n="4294967296", x_ptr="rand:256", y_ptr="rand:256",
                     out_ptr="zeros:256")
    assert result.returncode == 0, result.stderr
    x, y, out = (np.load(tmp_path / "out" / f"{name}.npy") for name in ("x_ptr", "y_ptr", "out_ptr"))
    np.testing.assert_array_equal(out, x + y)


# ---- .cu headers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def add_cu(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("cu") / "add.cu"
    assert mytriton("compile", "samples/add.py", "-o", str(path)).returncode == 0
    return path.read_text()


def with_header(text: str, **changes) -> str:
    first, rest = text.split("\n", 1)
    prefix = "// mytriton-kernel: "
    header = json.loads(first[len(prefix):])
    header.update(changes)
    return prefix + json.dumps(header) + "\n" + rest


@pytest.mark.parametrize("changes, message", [
    ({"params": "x_ptr"}, "'params' must be a list of [name, type] pairs"),
    ({"params": [["x_ptr"]]}, "'params' must be a list of [name, type] pairs"),
    ({"params": [["x_ptr", 3]]}, "'params' must be a list of [name, type] pairs"),
    ({"params": [["x_ptr", "ptr<f99>"]]}, "parameter 'x_ptr' has type \"ptr<f99>\""),
    ({"params": [["x_ptr", "vector<4 x f32>"]]}, "not a scalar or pointer type"),
    ({"params": [["x ptr", "i32"]]}, "is not a new C identifier"),
    ({"threads": "128"}, "'threads' must be an integer from 1 to 1024"),
    ({"threads": 0}, "'threads' must be an integer from 1 to 1024"),
    ({"threads": 4096}, "'threads' must be an integer from 1 to 1024"),
    ({"threads": True}, "'threads' must be an integer from 1 to 1024"),
    ({"stores": "out_ptr"}, "'stores' must be a list of parameter names"),
    ({"stores": [1]}, "'stores' must be a list of parameter names"),
    ({"stores": ["nowhere"]}, "'stores' names \"nowhere\", which is not a parameter"),
    ({"kernel": 7}, "'kernel' must be a C identifier"),
    ({"kernel": "add(); evil"}, "'kernel' must be a C identifier"),
    ({"constexprs": [1]}, "'constexprs' must map names to numbers, dtype names or null"),
])
def test_a_cu_header_with_a_wrongly_typed_field_is_an_error(tmp_path, add_cu, changes, message):
    cu = tmp_path / "add.cu"
    cu.write_text(with_header(add_cu, **changes))
    result = run_add(tmp_path, "--backend", "interp", grid="4", file=str(cu))
    assert_refused(result, tmp_path, message)
    assert result.stderr.startswith(f"{cu}:1:1: error: malformed mytriton-kernel header: ")


@pytest.mark.parametrize("first_line", [
    "// mytriton-kernel: [1, 2]",
    "// mytriton-kernel: {\"threads\": " + "9" * 5000 + "}",
    "// mytriton-kernel: " + "[" * 100000,
])
def test_a_cu_header_that_is_no_object_or_unreadable_is_an_error(tmp_path, add_cu, first_line):
    cu = tmp_path / "add.cu"
    cu.write_text(first_line + "\n" + add_cu.split("\n", 1)[1])
    result = run_add(tmp_path, "--backend", "interp", grid="4", file=str(cu))
    assert_refused(result, tmp_path, "malformed mytriton-kernel header")


def test_an_out_dir_that_is_a_file_is_an_error_before_the_run(tmp_path):
    target = tmp_path / "out"
    target.write_text("not a directory")
    result = run_add(tmp_path)
    assert result.returncode == 1
    assert f"error: --out-dir {target}: exists and is not a directory" in result.stderr
    assert "Traceback" not in result.stderr and "internal compiler error" not in result.stderr
    assert target.read_text() == "not a directory"
