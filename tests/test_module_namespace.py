"""A kernel launched from Python resolves its global names as Python does,
in its module's namespace (mytriton still runs no kernel code: it reads
what Python bound there): imports chosen at run time under ``if`` and
``try``, ``tl.constexpr`` constants and ``@jit`` helpers imported from
other modules (each helper traced with its own module's names), module
aliases. Its source comes from wherever Python keeps it: a file, or a
notebook cell, whose text only linecache holds."""
from __future__ import annotations

import itertools
import linecache
from pathlib import Path

import numpy as np
import pytest

from conftest import kernel_source, randf
from mytriton.diagnostics import CompileError

_cells = itertools.count()

CONSTS = '''
import mytriton.language as tl

SCALE: tl.constexpr = tl.constexpr(3.0)
'''

HELPERS = '''
import mytriton
import mytriton.language as lang

OFFSET = 0.5


@mytriton.jit
def _shift(x):
    return x + OFFSET


@mytriton.jit
def twice_plus(x):
    return _shift(x * 2)


@mytriton.jit
def broken(x):
    return x + lang.no_such_function(x)
'''


@pytest.fixture
def library(tmp_path, monkeypatch):
    """Modules beside the kernel's, importable by it."""
    (tmp_path / "ns_consts.py").write_text(CONSTS.lstrip("\n"))
    (tmp_path / "ns_helpers.py").write_text(HELPERS.lstrip("\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    import sys

    for name in ("ns_consts", "ns_helpers"):
        sys.modules.pop(name, None)


def run(k, x, **meta):
    out = np.zeros_like(x)
    k[(1,)](x, out, x.size, BLOCK=32, backend="interp", **meta)
    return out


def test_imports_chosen_at_run_time_resolve_as_python_bound_them(kernel_module, rng):
    k = kernel_module("""
    import os

    if os.environ.get("NEVER_SET_BY_ANYONE") is None:
        try:
            from mytriton.language.extra.libdevice import rsqrt as root
        except ImportError:
            root = None
    else:
        from mytriton.language import sqrt as root

    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        tl.store(out_ptr + offs, root(x), mask=offs < n)
    """).k
    x = np.abs(randf(rng, 20)) + 0.1
    np.testing.assert_allclose(run(k, x), 1 / np.sqrt(x), rtol=1e-5)


@pytest.mark.parametrize("fast", ["0", "1"])
def test_a_helper_defined_in_each_branch_of_a_run_time_if_is_the_one_python_ran(kernel_module, rng, monkeypatch,
                                                                                 fast):
    """flash-linear-attention picks its ``exp`` and ``div`` this way (an
    environment variable, read when the module is imported)."""
    monkeypatch.setenv("KERNEL_FAST_OPS_FOR_THIS_TEST", fast)
    k = kernel_module("""
    import os

    if os.environ.get("KERNEL_FAST_OPS_FOR_THIS_TEST", "0") == "1":
        @mytriton.jit
        def exp(x):
            return tl.exp2(x * 1.4426950408889634) * 2.0

        @mytriton.jit
        def div_fast(x, y):
            return x / y + 1.0
        div = div_fast
    else:
        @mytriton.jit
        def exp(x):
            return tl.exp(x)

        @mytriton.jit
        def div_normal(x, y):
            return x / y
        div = div_normal

    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, div(exp(x), 4.0), mask=offs < n)
    """).k
    x = randf(rng, 20)
    expected = np.exp(x) * 2 / 4 + 1 if fast == "1" else np.exp(x) / 4
    np.testing.assert_allclose(run(k, x), expected, rtol=1e-5)


def test_constants_and_jit_helpers_come_from_the_modules_that_define_them(kernel_module, library, rng):
    k = kernel_module("""
    from ns_consts import SCALE
    from ns_helpers import twice_plus
    import ns_helpers as helpers

    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, twice_plus(x) * SCALE + helpers.twice_plus(x) + helpers.OFFSET, mask=offs < n)
    """).k
    x = randf(rng, 20)
    np.testing.assert_allclose(run(k, x), (2 * x + 0.5) * 3.0 + (2 * x + 0.5) + 0.5, rtol=1e-5)


def test_an_error_in_a_helper_of_another_module_is_located_there_and_noted_at_the_call(kernel_module, library,
                                                                                      tmp_path):
    k = kernel_module("""
    from ns_helpers import broken

    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, broken(tl.load(x_ptr + offs)))
    """).k
    with pytest.raises(CompileError) as info:
        run(k, np.ones(32, np.float32))
    err = info.value
    assert err.loc.file == str(tmp_path / "ns_helpers.py")
    assert err.loc.line == HELPERS.lstrip("\n").splitlines().index("    return x + lang.no_such_function(x)") + 1
    ((note_loc, note),) = err.notes
    assert note == f"in the call of 'broken' ({tmp_path / 'ns_helpers.py'}) from here"
    assert note_loc.line == 9


def test_a_name_that_is_not_a_kernel_value_says_what_it_is(kernel_module):
    k = kernel_module("""
    import collections

    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        tl.store(out_ptr, collections.OrderedDict)
    """).k
    with pytest.raises(CompileError, match="'collections.OrderedDict' cannot be used in a kernel: "
                                           "'OrderedDict' is a class"):
        run(k, np.ones(4, np.float32))


def notebook_cell(text: str) -> dict:
    """Run ``text`` as IPython runs a cell: compiled under a name that names
    no file, its lines kept in linecache, executed in the user's namespace."""
    name = f"<ipython-input-{next(_cells)}-0123456789ab>"
    text = kernel_source(text)
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace = {"__name__": "__main__"}
    exec(compile(text, name, "exec"), namespace)  # what IPython does with a cell
    return namespace


def test_a_kernel_defined_in_a_notebook_cell_launches(rng):
    cell = notebook_cell("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
    """)
    x = randf(rng, 20)
    np.testing.assert_array_equal(run(cell["k"], x), x * 2)


def test_a_kernel_whose_source_python_does_not_keep_is_a_clear_error():
    namespace = {"__name__": "__main__"}
    exec(compile(kernel_source("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        tl.store(out_ptr, 1.0)
    """), "<string>", "exec"), namespace)
    with pytest.raises(CompileError, match="the source of @jit function 'k' is not available: Python keeps no "
                                           "text for '<string>'"):
        run(namespace["k"], np.ones(4, np.float32))


HELPER_UNDER_AN_IF = """
import os

BLACKWELL = os.environ.get("FLA_STYLE_ON_BLACKWELL", "0") == "1"

if BLACKWELL:
    \"\"\"fla's safe_dot: a workaround on one GPU, a plain product elsewhere.\"\"\"
    @mytriton.jit
    def scaled(a, b):
        return a * b * 2.0
else:
    @mytriton.jit
    def scaled(a, b):
        return a * {RIGHT}


@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, scaled(x, x), mask=offs < n)
"""


def test_a_helper_under_an_if_called_by_a_kernel_after_it_is_bundled_at_the_top_level(kernel_module, rng):
    """The bundle a launch compiles copies each function's lines: one indented
    under an if (fla's chunk_precond_wy_bwd.py) is dedented there, or it would
    sit inside the kernel before it."""
    k = kernel_module(HELPER_UNDER_AN_IF.replace("{RIGHT}", "b")).k
    x = randf(rng, 20)
    np.testing.assert_allclose(run(k, x), x * x, rtol=1e-6)


def test_an_error_in_a_helper_under_an_if_is_located_at_its_own_line_and_column(kernel_module, rng):
    k = kernel_module(HELPER_UNDER_AN_IF.replace("{RIGHT}", "undefined_name")).k
    with pytest.raises(CompileError) as info:
        run(k, randf(rng, 20))
    lines = (Path(k.file).read_text()).splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "undefined_name" in text)
    assert (info.value.loc.line, info.value.loc.col) == (line, lines[line - 1].index("undefined_name") + 1)
