"""Ways Triton kernels are commonly written that mytriton reads as Triton
does: an early return in a helper, string annotations, long if/elif chains,
and @jit's options checked alike by the CLI and the Python API."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import mytriton
from conftest import kernel_source
from mytriton import compiler
from mytriton.diagnostics import CompileError


def import_file(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_helper_returns_early_inside_an_if_on_a_constexpr(kernel_module, rng):
    module = kernel_module("""
        @mytriton.jit
        def power(x, N: tl.constexpr):
            if N == 0:
                return x * 0.0 + 1.0
            return x * power(x, N - 1)

        @mytriton.jit
        def k(x_ptr, out_ptr, N: tl.constexpr):
            offs = tl.arange(0, 16)
            tl.store(out_ptr + offs, power(tl.load(x_ptr + offs), N))
        """)
    x = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    out = np.zeros_like(x)
    module.k[(1,)](x, out, N=3, backend="interp")
    np.testing.assert_allclose(out, x * x * x, rtol=1e-6)


def test_a_helper_returning_inside_an_if_on_a_runtime_value_is_a_located_error():
    source = kernel_source("""
        @mytriton.jit
        def pick(x, n):
            if n > 0:
                return x
            return x + 1.0

        @mytriton.jit
        def k(x_ptr, n):
            offs = tl.arange(0, 16)
            tl.store(x_ptr + offs, pick(tl.load(x_ptr + offs), n))
        """)
    with pytest.raises(CompileError, match="only when its condition is a compile-time constant") as info:
        compiler.compile_source(source, "k.py", "ssa", compiler.Options(signature="*fp32, i32"))
    assert (info.value.loc.line, info.value.loc.col) == (6, 5)


def test_a_constexpr_annotation_may_be_a_string(tmp_path, rng):
    # Under `from __future__ import annotations` every annotation is a string
    # to Python; Triton reads 'tl.constexpr' as tl.constexpr.
    path = tmp_path / "string_annotations.py"
    path.write_text("from __future__ import annotations\n\n" + kernel_source("""
        @mytriton.jit
        def scale(x, FACTOR: 'tl.constexpr'):
            return x * FACTOR

        @mytriton.jit
        def k(x_ptr, out_ptr, BLOCK: 'tl.constexpr', FACTOR: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, scale(tl.load(x_ptr + offs), FACTOR))
        """))
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros_like(x)
    import_file(path).k[(1,)](x, out, BLOCK=32, FACTOR=3.0, backend="interp")
    np.testing.assert_allclose(out, x * 3.0, rtol=1e-6)


def test_an_if_elif_chain_of_200_branches_compiles_and_runs(tmp_path, rng):
    branches = "".join(f"    {'if' if i == 0 else 'elif'} n == {i}:\n        y = x + {i}.0\n" for i in range(200))
    path = tmp_path / "dispatch.py"
    path.write_text(kernel_source("@mytriton.jit\ndef k(x_ptr, n):\n    offs = tl.arange(0, 16)\n"
                                  "    x = tl.load(x_ptr + offs)\n" + branches +
                                  "    else:\n        y = x\n    tl.store(x_ptr + offs, y)\n"))
    k = import_file(path).k
    for n in (0, 150, 199, 500):
        x = rng.standard_normal(16).astype(np.float32)
        expected = x + (n if n < 200 else 0)
        k[(1,)](x, n, backend="interp")
        np.testing.assert_allclose(x, expected, rtol=1e-6)


def test_an_unknown_jit_option_is_refused_by_the_cli_as_by_the_python_api(tmp_path):
    source = kernel_source("""
        @mytriton.jit(num_warps=8)
        def k(x_ptr):
            tl.store(x_ptr, 1.0)
        """)
    (tmp_path / "k.py").write_text(source)
    result = subprocess.run([sys.executable, "-m", "mytriton", "compile", "k.py", "-s", "*fp32"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("k.py:4:15: error: @jit of 'k': unknown option 'num_warps'")
    with pytest.raises(CompileError, match="unknown option 'num_warps'"):
        mytriton.jit(num_warps=8)(lambda x_ptr: None)
