"""Triton code as it is published runs on mytriton after one step:
``mytriton.install_as_triton()``, ``python -m mytriton.as_triton``, or
``pytest -p mytriton.as_triton``. ``import triton`` and the submodules
libraries import are then mytriton's; a name mytriton lacks is an error
naming it; ``TRITON_INTERPRET=1`` selects the interpreter; PyTorch is told
there is no Triton for its own compiler. Each in a fresh process: installing
changes ``sys.modules`` for good."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

# A library module as published: Triton's imports, a @triton.jit kernel, host code.
LIBRARY = '''
import triton
import triton.language as tl

try:
    from triton.language.extra.libdevice import rsqrt
except ModuleNotFoundError:
    from triton.language.extra.cuda.libdevice import rsqrt


@triton.jit
def _norm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    r = rsqrt(tl.sum(x * x, axis=0) / n)
    tl.store(out_ptr + offs, x * r, mask=offs < n)


def norm(x):
    import numpy as np

    out = np.zeros_like(x)
    _norm_kernel[(1,)](x, out, x.size, BLOCK=triton.next_power_of_2(x.size))
    return out
'''

USE = '''
import sys
import numpy as np
import mylib

x = np.arange(1, 11, dtype=np.float32)
np.testing.assert_allclose(mylib.norm(x), x / np.sqrt((x * x).mean()), rtol=1e-5)
print("ok", sys.argv[1:])
'''


def python(*args: str, cwd, env: dict | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(cwd)]), "MYTRITON_BACKEND": "interp"}
    environ.update(env or {})
    command = [sys.executable, *(["-c", code] if code is not None else []), *args]
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "mylib.py").write_text(LIBRARY)
    (tmp_path / "use.py").write_text(USE)
    return tmp_path


def test_install_as_triton_makes_a_library_written_for_triton_run(project):
    result = python(cwd=project, code="import mytriton; mytriton.install_as_triton(); "
                                      "import runpy; runpy.run_path('use.py', run_name='__main__')")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok []\n"


def test_the_runner_runs_a_script_with_its_arguments(project):
    result = python("-m", "mytriton.as_triton", "use.py", "--flag", "value", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok ['--flag', 'value']\n"


def test_the_runner_runs_a_module(project):
    result = python("-m", "mytriton.as_triton", "-m", "use", "a", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok ['a']\n"


def test_the_runner_without_a_script_prints_its_usage(project):
    result = python("-m", "mytriton.as_triton", cwd=project)
    assert result.returncode == 2 and result.stderr.startswith("usage: python -m mytriton.as_triton")
    missing = python("-m", "mytriton.as_triton", "nope.py", cwd=project)
    assert missing.returncode == 2 and "can't open file 'nope.py'" in missing.stderr


def test_the_pytest_plugin_installs_before_conftest_files_are_read(project):
    (project / "conftest.py").write_text("import mylib  # imports triton\n")
    (project / "test_mylib.py").write_text(textwrap.dedent('''
        import numpy as np
        import triton
        import mylib

        def test_norm():
            assert triton.__version__.startswith("3.")
            x = np.arange(1, 5, dtype=np.float32)
            np.testing.assert_allclose(mylib.norm(x), x / np.sqrt((x * x).mean()), rtol=1e-5)
    '''))
    result = python("-m", "pytest", "-q", "-p", "mytriton.as_triton", "-p", "no:cacheprovider", "test_mylib.py",
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


CHECKS = '''
import importlib, sys
import mytriton
mytriton.install_as_triton()
import triton, triton.language as tl
from triton.language.extra.cuda import libdevice
import triton.language.extra.libdevice, triton.language.math, triton.language.core
import triton.runtime.jit, triton.runtime.autotuner, triton.runtime.driver, triton.testing
assert tl is mytriton.language and tl.core.load is tl.load and libdevice.rsqrt is triton.language.extra.libdevice.rsqrt
assert triton.jit is mytriton.jit and triton.Config is mytriton.Config
assert triton.autotune is triton.runtime.autotuner.autotune  # its kernels are triton.runtime.Autotuner's
assert triton.heuristics is mytriton.heuristics and triton.cdiv(7, 2) == 4 and triton.next_power_of_2(5) == 8
assert triton.runtime.jit.JITFunction is mytriton.JITFunction
assert triton.runtime.autotuner.Autotuner is triton.runtime.Autotuner
assert callable(triton.testing.do_bench) and callable(triton.testing.perf_report)
from packaging.version import Version
assert Version(triton.__version__) >= Version("3.0.0"), triton.__version__
assert triton.__version__.endswith("+mytriton." + mytriton.__version__)
mytriton.install_as_triton()  # twice is once
'''


def test_triton_and_the_submodules_libraries_import_are_mytriton(tmp_path):
    pytest.importorskip("packaging")
    result = python(cwd=tmp_path, code=CHECKS)
    assert result.returncode == 0, result.stderr


SUBCLASSED_AUTOTUNER = '''
import numpy as np
import mytriton
mytriton.install_as_triton()
import triton, triton.language as tl


class Autotuner(triton.runtime.Autotuner):
    """As flash-linear-attention and protenix subclass Triton's: its constructor, its attributes."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=None, post_hook=None,
                 prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph)
        assert self.keys == ["n"] and not self.user_defined_pre_hook and self.restore_copies == []
        self.launches = 0

    def run(self, *args, **kwargs):
        self.launches += 1
        return super().run(*args, **kwargs)


def autotune(configs, key):
    return lambda fn: Autotuner(fn, fn.arg_names, configs, key, None, None)


@autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def double(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


x = np.arange(100, dtype=np.float32)
out = np.zeros_like(x)
double[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100, backend="interp")
assert (out == 2 * x).all() and double.launches == 1 and double.best_config is not None


@triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def plain(x, BLOCK: tl.constexpr):
    pass


assert isinstance(plain, triton.runtime.Autotuner) and isinstance(double, triton.runtime.autotuner.Autotuner)
'''


def test_a_library_subclasses_the_autotuner_with_tritons_constructor(tmp_path):
    (tmp_path / "subclassed.py").write_text(SUBCLASSED_AUTOTUNER)
    result = python("subclassed.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("code, message", [
    ("triton.compile", "AttributeError: mytriton does not provide triton.compile (it implements Triton 3."),
    ("triton.runtime.cache", "AttributeError: mytriton does not provide triton.runtime.cache"),
    ("triton.testing.get_dram_gbps", "AttributeError: mytriton does not provide triton.testing.get_dram_gbps"),
    ("__import__('triton.compiler.compiler')", "ModuleNotFoundError: No module named 'triton.compiler': triton "
                                               "is mytriton here"),
])
def test_a_name_mytriton_lacks_is_an_error_naming_it(tmp_path, code, message):
    result = python(cwd=tmp_path, code=f"import mytriton; mytriton.install_as_triton(); import triton; {code}")
    assert result.returncode == 1
    assert message in result.stderr.splitlines()[-1]


def test_installing_after_triton_was_imported_is_an_error(tmp_path):
    (tmp_path / "triton.py").write_text("__version__ = '3.0.0'\n")  # stands for an installed Triton
    result = python(cwd=tmp_path, code="import triton, mytriton; mytriton.install_as_triton()")
    assert result.returncode == 1
    assert "RuntimeError: triton is already imported (from " in result.stderr
    assert "call mytriton.install_as_triton() before anything imports triton" in result.stderr


@pytest.mark.parametrize("value, backend", [("1", "interp"), ("0", "auto")])
def test_triton_interpret_selects_the_interpreter(tmp_path, value, backend):
    code = ("import mytriton.runtime.jit as jit; name, why = jit.explain_backend(); "
            "print(name if 'TRITON_INTERPRET' in why else 'auto')")
    environ = {"TRITON_INTERPRET": value, "MYTRITON_BACKEND": ""}
    result = python(cwd=tmp_path, code=code, env=environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == backend


def test_the_driver_without_a_gpu_says_so(tmp_path):
    code = ("import mytriton; mytriton.install_as_triton(); import triton; "
            "triton.runtime.driver.active.get_current_device()")
    result = python(cwd=tmp_path, code=code, env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 1
    assert "RuntimeError: 0 active drivers" in result.stderr.splitlines()[-1]


def test_torch_is_told_there_is_no_triton(tmp_path):
    pytest.importorskip("torch")
    code = ("import mytriton; mytriton.install_as_triton(); import torch.utils._triton as t; "
            "import triton; assert triton.jit is mytriton.jit; print(t.has_triton_package())")
    result = python(cwd=tmp_path, code=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_torch_compiles_module_of_triton_imports_loads_as_if_there_were_no_triton(tmp_path):
    """torch.compile's compiler imports Triton's internals outside its
    ``try`` (torch/_inductor/runtime/triton_compat.py, as fla's module-level
    ``@torch.compile`` loads it): loaded with Triton hidden, it takes
    PyTorch's stand-ins, and ``import triton`` still gives mytriton after."""
    runtime = tmp_path / "torch" / "_inductor" / "runtime"
    runtime.mkdir(parents=True)
    for folder in (tmp_path / "torch", tmp_path / "torch" / "_inductor", runtime):
        (folder / "__init__.py").write_text("")
    (runtime / "triton_compat.py").write_text(textwrap.dedent("""
        try:
            import triton
        except ImportError:
            triton = None
        if triton is not None:
            from triton.compiler import CompiledKernel
    """))
    code = ("import mytriton; mytriton.install_as_triton(); import torch._inductor.runtime.triton_compat as c; "
            "import triton; assert triton.jit is mytriton.jit; print(c.triton)")
    result = python(cwd=tmp_path, code=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"


def test_perf_report_runs_a_benchmark_over_its_values_and_lines(tmp_path):
    code = textwrap.dedent('''
        import mytriton; mytriton.install_as_triton()
        import triton.testing as tt

        @tt.perf_report(tt.Benchmark(x_names=["n"], x_vals=[1, 2], line_arg="p", line_vals=[10, 20],
                                     line_names=["ten", "twenty"], plot_name="toy", args={"k": 3}))
        def bench(n, p, k):
            return n * p + k

        bench.run(print_data=True, save_path=".")
        print(open("toy.csv").read().strip())
    ''')
    result = python(cwd=tmp_path, code=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["toy:", "n", "ten", "twenty", "0", "1", "13", "23", "1", "2", "23", "43",
                                     "n,ten,twenty", "1,13,23", "2,23,43"]
