"""docs/adding_an_op.md, the one recipe for a new op, stays true: its math
function row, added to a copy of the package and nothing else, gives a
working function in every back end; and every file and name its table of
places gives exists there."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mytriton

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "adding_an_op.md"
PACKAGE = Path(mytriton.__file__).resolve().parent

# Runs in the copy: the scratch function through each stage and back end.
PROBE = r'''
import json, sys
import numpy as np
from mytriton import compiler
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError

SOURCE = """
import mytriton
import mytriton.language as tl
from mytriton.language.extra import libdevice

@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, libdevice.exp10(tl.load(x_ptr + i, mask=m)), mask=m)
"""

def emit(stage):
    options = compiler.Options(defines={"BLOCK": 8}, signature="*fp32, *fp32, i32")
    try:
        return compiler.compile_source(SOURCE, "k.py", stage, options)
    except CompileError as err:
        return "error: " + err.message

x = np.linspace(-2, 2, 8, dtype=np.float32)
out = np.zeros_like(x)
kernel = compiler.source_to_ssa(SOURCE, "k.py", compiler.Options(defines={"BLOCK": 8},
                                signature="*fp32, *fp32, i32"))
run_kernel(kernel, (1,), [x, out, 8])
json.dump({"cuda": emit("cuda"), "ttir": emit("ttir"), "mlir": emit("mlir"),
           "interpreted": out.tolist(), "expected": (10.0 ** x.astype(np.float64)).tolist()}, sys.stdout)
'''


def page_row() -> str:
    """The row the page's first section shows, as written there."""
    (block,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    return block


@pytest.fixture(scope="module")
def scratch_function(tmp_path_factory) -> dict:
    copy = tmp_path_factory.mktemp("adding_an_op")
    shutil.copytree(PACKAGE, copy / "mytriton", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "grammars", copy / "grammars")
    table = copy / "mytriton" / "ir" / "math_functions.py"
    text = table.read_text()
    end = text.index("\n)\n", text.index("TABLE: tuple[MathFunction, ...] = ("))
    table.write_text(text[:end] + "\n" + page_row().rstrip("\n") + text[end:])
    env = {"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "MYTRITON_CACHE_DIR": str(copy / "cache")}
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=copy, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_page_shows_one_row_for_a_scratch_function_the_tree_lacks():
    assert '"exp10"' in page_row()
    assert "exp10" not in (PACKAGE / "ir" / "math_functions.py").read_text()


def test_the_row_alone_gives_cuda_its_call(scratch_function):
    assert "exp10f(" in scratch_function["cuda"]


def test_the_row_alone_gives_ttir_its_libdevice_symbol(scratch_function):
    assert '"__nv_exp10f"' in scratch_function["ttir"]


def test_the_row_alone_gives_mlir_its_stated_refusal(scratch_function):
    assert scratch_function["mlir"] == "error: libdevice's exp10 has no upstream MLIR op (math has exp and exp2)"


def test_the_row_alone_gives_the_interpreter_its_semantics(scratch_function):
    assert scratch_function["interpreted"] == pytest.approx(scratch_function["expected"], rel=1e-6)


def places() -> list[tuple[str, list[str]]]:
    """(file, the names in its row) for each row of the page's table."""
    rows = []
    for line in PAGE.read_text().splitlines():
        cells = line.split(" | ")
        if line.startswith("| `mytriton/") and len(cells) == 2:
            path = cells[0].strip("| `")
            names = re.findall(r"`@?(\w+)", cells[1])
            rows.append((path, names))
    return rows


def test_the_page_names_a_place_in_every_back_end_and_the_op_table():
    named = {path for path, _ in places()}
    assert {"mytriton/ir/opdefs.py", "mytriton/backends/interp.py", "mytriton/backends/mlir/emitter.py",
            "mytriton/backends/ttir/emitter.py", "mytriton/backends/cuda/expressions.py"} <= named


@pytest.mark.parametrize("path,names", places(), ids=[path for path, _ in places()])
def test_each_place_the_page_names_exists_with_the_names_it_gives(path, names):
    text = (ROOT / path).read_text()
    for name in names:
        if name in ("name", "doc", "semantics", "layout_rule") or name.startswith("tl"):
            continue  # what the entry holds, not a name in the file
        assert re.search(rf"\b{name}\b", text), f"{path} has no {name}"
