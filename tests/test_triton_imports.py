"""A kernel file written for Triton compiles as it is, through the CLI too:
``import triton``, ``import triton.language as tl``, ``from triton import
language as tl``, ``from triton.language.extra.libdevice import rsqrt``
read as mytriton's names. The CLI runs nothing, so imports a library
chooses at run time are resolved statically: a ``try`` takes its first
alternative whose Triton imports mytriton provides; an ``if`` on a constant
takes its branch; an ``if`` on anything else binds a name only where its
branches agree (or import one function of the language under two paths,
as Triton's versions moved libdevice); a name that needs the file run says
so where a kernel uses it."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from conftest import compile_text
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.compiler import Options, source_to_ssa
from test_cli_chain import cli, ok

NORM = '''
@triton.jit
def norm(x_ptr, out_ptr, n, eps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    r = rsqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(out_ptr + offs, x * r * SCALE, mask=offs < n)
'''

# How Liger-Kernel imports rsqrt: the newest path first, under a version check.
LIBRARY_IMPORTS = '''
import operator

import triton
import triton.language as tl

from mylib.utils import compare_version

if compare_version("triton", operator.ge, "3.0.0"):
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
else:
    from triton.language.math import rsqrt

SCALE: tl.constexpr = tl.constexpr(2.0)
'''


def source(imports: str, body: str = NORM) -> str:
    return textwrap.dedent(imports).lstrip("\n") + "\n" + textwrap.dedent(body)


def norm_of(text: str) -> np.ndarray:
    kernel = source_to_ssa(text, "norm.py", Options(defines={"BLOCK": 16}, signature="*fp32, *fp32, i32, fp32"))
    x = np.linspace(-1.0, 2.0, 10, dtype=np.float32)
    out = np.zeros(16, np.float32)
    run_kernel(kernel, (1,), [x, out, 10, 1e-6])
    np.testing.assert_allclose(out[:10], x / np.sqrt((x * x).mean() + 1e-6) * 2.0, rtol=1e-5)
    return out


@pytest.mark.parametrize("imports", [
    "import triton\nimport triton.language as tl\nfrom triton.language.extra.libdevice import rsqrt\n"
    "SCALE = 2.0\n",
    "import triton\nfrom triton import language as tl\nfrom triton.language.math import rsqrt\nSCALE = 2.0\n",
    "import triton\nimport triton.language as tl\nfrom triton.language.extra.cuda import libdevice\n"
    "rsqrt = libdevice.rsqrt\nSCALE = 2.0\n",
])
def test_a_triton_file_compiles_as_it_is(imports):
    norm_of(source(imports))


def test_a_library_file_with_imports_chosen_at_run_time_compiles():
    norm_of(source(LIBRARY_IMPORTS))


def test_the_cli_compiles_a_triton_file_to_cuda(tmp_path):
    path = tmp_path / "norm.py"
    path.write_text(source(LIBRARY_IMPORTS))
    cuda = ok(cli("compile", str(path), "-k", "norm", "-s", "*fp32, *fp32, i32, fp32, 16", "--emit=cuda"))
    assert b"__global__" in cuda and b"rsqrtf" in cuda


def test_a_try_takes_its_first_alternative_that_mytriton_provides():
    imports = '''
    import triton
    import triton.language as tl
    try:
        from triton.language.extra.intel.libdevice import rsqrt
    except ImportError:
        from triton.language.math import rsqrt
    SCALE = 2.0
    '''
    norm_of(source(imports))


def test_a_try_whose_alternatives_mytriton_lacks_leaves_the_name_unresolved():
    imports = '''
    import triton
    import triton.language as tl
    try:
        from triton.language.extra.intel import rsqrt
    except ImportError:
        from triton.language.extra.hip import rsqrt
    SCALE = 2.0
    '''
    with pytest.raises(CompileError, match="'rsqrt' cannot be used in a kernel: 'rsqrt' is imported at line 3 "
                                           "by imports of which mytriton provides none"):
        compile_text(source(imports), "ssa", defines={"BLOCK": 16})


def test_an_if_on_a_constant_takes_its_branch():
    imports = '''
    import triton
    import triton.language as tl
    FAST = False
    if FAST:
        SCALE = 1.0
    else:
        from triton.language.math import rsqrt
        SCALE = 2.0
    '''
    norm_of(source(imports))


def test_names_the_branches_of_a_run_time_if_bind_differently_need_the_module_imported():
    imports = '''
    import triton
    import triton.language as tl
    from triton.language.math import rsqrt
    from mylib import on_gpu
    if on_gpu():
        SCALE = 2.0
    else:
        SCALE = 4.0
    '''
    with pytest.raises(CompileError) as info:
        compile_text(source(imports), "ssa", defines={"BLOCK": 16})
    assert info.value.message == (
        "'SCALE' cannot be used in a kernel: 'SCALE' is bound by the branches of the 'if' at line 5, whose "
        "condition is computed when the file runs (mytriton reads the file without running it); launch the "
        "kernel from Python, where its module is imported")
    assert (info.value.loc.file, info.value.loc.line) == ("kernel.py", 16)


def test_a_name_imported_from_another_module_says_the_module():
    imports = '''
    import triton
    import triton.language as tl
    from triton.language.math import rsqrt
    from mylib.constants import SCALE
    '''
    with pytest.raises(CompileError, match="'SCALE' comes from mylib.constants, which is imported only when the "
                                           "file runs"):
        compile_text(source(imports), "ssa", defines={"BLOCK": 16})


def test_the_cli_reports_an_unresolved_name_as_a_located_error(tmp_path):
    path = tmp_path / "norm.py"
    path.write_text(source("import triton\nimport triton.language as tl\nfrom mylib import rsqrt\nSCALE = 2.0\n"))
    result = cli("compile", str(path), "-D", "BLOCK=16", "--emit=ssa")
    assert result.returncode == 1 and result.stdout == b""
    assert f"{path}:11:9: error: 'rsqrt' cannot be used in a kernel: 'rsqrt' comes from mylib".encode() \
        in result.stderr
    assert b"Traceback" not in result.stderr


def test_an_unknown_triton_attribute_in_a_kernel_is_a_located_error():
    body = NORM.replace("rsqrt(", "tl.fast_rsqrt(")
    with pytest.raises(CompileError, match="'fast_rsqrt' is not part of mytriton.language"):
        compile_text(source("import triton\nimport triton.language as tl\nSCALE = 2.0\n", body), "ssa",
                     defines={"BLOCK": 16})


def test_tl_core_names_are_the_languages():
    body = NORM.replace("tl.arange", "tl.core.arange").replace("rsqrt(", "tl.core.rsqrt(")
    norm_of(source("import triton\nimport triton.language as tl\nSCALE = 2.0\n", body))
