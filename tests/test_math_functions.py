"""The math-function table (ir/math_functions.py) is where every name and
spelling of a math function lives: the op table, the language and each back
end read their math names from it, and no other module spells one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import mytriton
from mytriton.backends.cuda.spelling import CUDA
from mytriton.backends.mlir import ops as mlir_ops
from mytriton.backends.ttir import ops as ttir_ops
from mytriton.frontend.tracer import TENSOR_METHODS
from mytriton.ir import math_functions, opdefs
from mytriton.language.extra import libdevice
from mytriton.types import F32, F64

ROWS = math_functions.TABLE
NAMES = [row.name for row in ROWS]
PACKAGE = Path(mytriton.__file__).resolve().parent


def test_each_function_has_one_row():
    assert len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_each_row_is_an_elementwise_op_of_the_op_table(row):
    op = opdefs.OPS[row.name]
    assert op.elementwise and op.arity == row.operands
    assert op.semantics is row.semantics and op.folds == row.folds


def test_the_math_group_is_the_rows_marked_tl():
    assert opdefs.MATH_FUNCTIONS == tuple(row.name for row in ROWS if row.tl)
    assert opdefs.LIBDEVICE_OPS == tuple(row.name for row in ROWS if not row.tl)


def test_a_plain_row_spells_every_back_end_from_its_name():
    row = math_functions.BY_NAME["cbrt"]
    assert (row.c(f64=False), row.c(f64=True)) == ("cbrtf({0})", "cbrt({0})")
    assert CUDA.libdevice("cbrt", F32) == "cbrtf({0})" and CUDA.libdevice("cbrt", F64) == "cbrt({0})"
    assert mlir_ops.LIBDEVICE["cbrt"] == "math.cbrt"
    assert ttir_ops.LIBDEVICE["cbrt"] == ("__nv_cbrtf", "__nv_cbrt")
    assert libdevice.SIGNATURES["cbrt"] == ("cbrt", ((F32,), (F64,)))


def test_a_two_operand_row_passes_both_operands():
    assert math_functions.BY_NAME["atan2"].c(f64=False) == "atan2f({0}, {1})"


@pytest.mark.parametrize("row", [row for row in ROWS if row.tl], ids=lambda row: row.name)
def test_a_tl_row_gives_the_c_tables_and_both_mlir_back_ends_a_spelling(row):
    assert CUDA.math_function(row.name, F32) == row.c(f64=False, cuda=True)
    assert CUDA.math_function(row.name, F64) == row.c(f64=True)
    assert row.name in mlir_ops.MATH and row.name in ttir_ops.MATH


def test_cuda_computes_f32_exp_and_division_with_tritons_ptx_approximations(tmp_path):
    """ex2.approx of x * log2(e) for exp, div.full.f32 for ``/``, as Triton's
    NVIDIA lowering: the C library's careful expf and IEEE division cost a
    memory-bound softmax twice its time. div_rn still rounds exactly."""
    from conftest import compile_text

    source = (
        "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\n"
        "def k(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs)\n"
        "    y = tl.load(y_ptr + offs)\n"
        "    tl.store(out_ptr + offs, tl.exp(x) / y + tl.div_rn(x, y))\n")
    cuda = compile_text(source, "cuda", "k.py", defines={"BLOCK": 128}, signature="*fp32, *fp32, *fp32")
    assert "exp2f(" in cuda and "expf(" not in cuda.replace("exp2f(", "")
    assert "__mytriton_div_full(" in cuda and "__fdiv_rn(" in cuda
    ptx = ptx_of(cuda, tmp_path)
    if ptx is None:
        return
    assert "ex2.approx.f32" in ptx and "div.full.f32" in ptx and "div.rn.f32" in ptx


def ptx_of(cuda: str, tmp_path) -> str | None:
    """nvcc's PTX of ``cuda`` for sm_90 (None where nvcc is not found)."""
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        return None
    path = tmp_path / "k.cu"
    path.write_text(cuda)
    return subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", "-", str(path)], capture_output=True, text=True,
                          check=True).stdout


def test_cuda_computes_f32_exp2_with_the_flushing_ex2_as_triton(tmp_path):
    """tl.exp2 on f32 is ex2.approx.ftz.f32, as Triton's lowering (exp2f keeps
    subnormal results, a compare and two multiplies more an element); tl.exp
    stays ex2.approx.f32 of x * log2(e), which keeps them, as Triton's."""
    from conftest import compile_text

    source = (
        "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\n"
        "def k(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs)\n"
        "    tl.store(out_ptr + offs, tl.exp2(x) + tl.exp(x))\n")
    cuda = compile_text(source, "cuda", "k.py", defines={"BLOCK": 128}, signature="*fp32, *fp32")
    assert "__mytriton_ex2_ftz(" in cuda and "exp2f(" in cuda  # exp2, then exp
    ptx = ptx_of(cuda, tmp_path)
    if ptx is None:
        return
    assert ptx.count("ex2.approx.ftz.f32") == 1 and ptx.count("ex2.approx.f32") == 1


def test_a_row_upstream_mlir_lacks_is_a_stated_refusal_there():
    refused = [row for row in ROWS if row.mlir_refused]
    assert refused
    for row in refused:
        assert mlir_ops.lowering(row.name) == "refused" and mlir_ops.REFUSED[row.name] == row.mlir_refused


def test_libdevice_reaches_each_row_by_its_name_and_aliases():
    for row in ROWS:
        for name in (row.name, *row.libdevice_aliases):
            assert (name in libdevice.SIGNATURES) == row.libdevice
            if row.libdevice:
                assert libdevice.SIGNATURES[name][0] == row.name


def test_the_rows_marked_method_are_tensor_methods():
    assert {row.name for row in ROWS if row.method} <= TENSOR_METHODS
    assert not {row.name for row in ROWS if not row.method} & TENSOR_METHODS


def _modules_naming(name: str) -> set[str]:
    quoted = re.compile(rf"['\"]{re.escape(name)}['\"]")
    return {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
            if path.name not in ("math_functions.py", "header_names.py") and quoted.search(path.read_text())}


# Modules that build a function's op rather than spell it (tl.softmax is exp of x - max).
USES = {"exp": {"frontend/builtins.py"}}


@pytest.mark.parametrize("row", [row for row in ROWS if row.answers == "float" and not row.expanded],
                         ids=lambda row: row.name)
def test_no_other_module_names_a_function_whose_lowering_is_a_call(row):
    assert _modules_naming(row.name) <= USES.get(row.name, set())
