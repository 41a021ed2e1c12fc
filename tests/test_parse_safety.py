"""Compiling a kernel file never runs it, yet understands its module level.

The file is read with ``ast`` only: top-level code (writing a file, opening a
socket) does not happen under ``parse``, ``trace`` or ``compile``. What the
kernel needs from the module level is worked out statically: constants built
from literals and other constants, the spellings of the mytriton imports, and
@jit helpers, which are inlined. A module-level value that only running the
file could compute is an error only where a kernel uses it.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from textwrap import dedent

import pytest

from conftest import ROOT, compile_text, kernel_source
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.compiler import Options

# ---- top-level code does not run ----------------------------------------------------------

SIDE_EFFECTS = dedent("""\
    import socket

    import mytriton
    import mytriton.language as tl

    open(MARKER, "w").write("ran")
    socket.create_connection(("127.0.0.1", PORT)).sendall(b"ran")
    raise SystemExit("the kernel file was executed")


    @mytriton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
""")

COMMANDS = {
    "parse": ["parse", "kernel.py"],
    "trace": ["trace", "kernel.py"],
    "compile": ["compile", "kernel.py", "--emit=cuda"],
}


@pytest.fixture(scope="module")
def listener():
    """A local port that records whether anything connected to it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, listener):
    """Each command run once on the file: {command: (directory, result)}."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    runs = {}
    for name, args in COMMANDS.items():
        cwd = tmp_path_factory.mktemp(name)
        marker = cwd / "marker.txt"
        source = SIDE_EFFECTS.replace("MARKER", repr(str(marker))).replace("PORT", str(listener.getsockname()[1]))
        (cwd / "kernel.py").write_text(source)
        result = subprocess.run([sys.executable, "-m", "mytriton.cli", *args], capture_output=True, cwd=cwd,
                                env=env, timeout=60)
        runs[name] = (cwd, result)
    return runs


@pytest.mark.parametrize("command", COMMANDS)
def test_kernel_file_with_top_level_code_compiles(compiled, command):
    _, result = compiled[command]
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""


@pytest.mark.parametrize("command", COMMANDS)
def test_top_level_code_does_not_write_files(compiled, command):
    cwd, _ = compiled[command]
    assert not (cwd / "marker.txt").exists()


def test_top_level_code_opens_no_socket(compiled, listener):
    assert compiled  # every command has run
    with pytest.raises(BlockingIOError):
        listener.accept()


def test_bundle_leaves_top_level_code_behind(compiled):
    _, result = compiled["parse"]
    bundle = result.stdout.decode()
    assert "import socket" not in bundle
    assert "open(" not in bundle
    assert "SystemExit" not in bundle


# ---- module-level constants ---------------------------------------------------------------

CONSTANTS = kernel_source("""
    WIDTH = 2 * 128
    HALF = WIDTH // 2
    BLOCK = tl.constexpr(HALF * 4)
    DTYPE = tl.float16
    SHAPE = (BLOCK,)


    @mytriton.jit
    def k(out_ptr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.zeros(SHAPE, DTYPE) + WIDTH)
""")


@pytest.fixture(scope="module")
def constants_tree() -> str:
    return compile_text(CONSTANTS, "tree")


def test_constant_arithmetic_is_folded(constants_tree):
    assert "add(zeros" not in constants_tree
    assert ", 256)@" in constants_tree  # WIDTH = 2 * 128


def test_constants_referring_to_constants_are_resolved(constants_tree):
    assert "arange(start=0, end=512)" in constants_tree  # BLOCK = tl.constexpr(HALF * 4)
    assert "shape=(512,)" in constants_tree  # SHAPE = (BLOCK,)


def test_dtype_constants_are_resolved(constants_tree):
    assert "dtype=f16" in constants_tree


def test_bundle_spells_resolved_constants_as_values():
    bundle = compile_text(CONSTANTS, "ast")
    for line in ("WIDTH = 256", "BLOCK = 512", "DTYPE = tl.float16", "SHAPE = (512,)"):
        assert line in bundle.splitlines()


def test_dtype_constants_are_spelled_with_the_files_own_imports():
    source = dedent("""\
        from mytriton import jit
        from mytriton import language as lang
        from mytriton.language import float16 as half

        SPEC = (lang.float32, 64)
        HALF = half


        @jit
        def k(out_ptr):
            offs = lang.arange(0, SPEC[1])
            lang.store(out_ptr + offs, lang.zeros((SPEC[1],), SPEC[0]) + lang.zeros((SPEC[1],), HALF))
    """)
    bundle = compile_text(source, "ast").splitlines()
    assert "SPEC = (lang.float32, 64)" in bundle
    assert "HALF = half" in bundle
    tree = compile_text(source, "tree")
    assert "dtype=f32" in tree and "dtype=f16" in tree


def test_kernel_built_on_constants_lowers():
    assert "kernel k(out_ptr: ptr<f32>)" in compile_text(CONSTANTS, "ssa")


def test_tracing_the_file_and_its_bundle_agree():
    direct = compiler.print_tree(compiler.trace(CONSTANTS, "kernel.py", Options()))
    assert compile_text(CONSTANTS, "tree") == direct


# ---- import spellings ------------------------------------------------------------------------

KERNEL_BODY = """
    def k(x_ptr, out_ptr, n, BLOCK: {tl}.constexpr = 64):
        offs = {tl}.program_id(0) * BLOCK + {tl}.arange(0, BLOCK)
        x = {tl}.load(x_ptr + offs, mask=offs < n)
        {tl}.store(out_ptr + offs, {tl}.exp(x), mask=offs < n)
"""


def spelled(imports: str, decorator: str, tl: str) -> str:
    return dedent(imports) + "\n\n" + decorator + dedent(KERNEL_BODY.format(tl=tl))


CANONICAL = spelled("import mytriton\nimport mytriton.language as tl\n", "@mytriton.jit", "tl")

SPELLINGS = {
    "import_mytriton_as_triton": spelled("import mytriton as triton\nimport mytriton.language as tl\n",
                                         "@triton.jit", "tl"),
    "language_under_another_name": spelled("import mytriton\nimport mytriton.language as tt\n",
                                           "@mytriton.jit", "tt"),
    "from_mytriton_import_jit": spelled("from mytriton import jit\nimport mytriton.language as tl\n",
                                        "@jit", "tl"),
    "from_mytriton_import_language": spelled("import mytriton\nfrom mytriton import language as tl\n",
                                             "@mytriton.jit", "tl"),
}


@pytest.mark.parametrize("name", SPELLINGS)
def test_import_spelling_gives_the_same_tree(name):
    # The kernel's lines are spelled as long as CANONICAL's: the same locations too
    # (only the digest of the source text in the header differs).
    def tree(source: str) -> str:
        return re.sub(r' sha256="[0-9a-f]+"', "", compile_text(source, "tree"))

    assert tree(SPELLINGS[name]) == tree(CANONICAL)


def test_language_spelled_through_the_package_is_understood():
    source = spelled("import mytriton\n\n", "@mytriton.jit", "mytriton.language")
    tree = compile_text(source, "tree")
    assert "arange(start=0, end=64)" in tree
    assert "exp($x)" in tree


def test_a_jit_decorator_from_elsewhere_is_not_a_kernel():
    source = "import mytriton.language as tl\nfrom other import jit\n\n" + "@jit" + dedent(
        KERNEL_BODY.format(tl="tl"))
    with pytest.raises(CompileError, match="no @jit kernel in kernel.py"):
        compile_text(source, "tree")


# ---- @jit helpers ----------------------------------------------------------------------------

WITH_HELPER = kernel_source("""
    @mytriton.jit
    def scale_shift(x, factor):
        y = x * factor
        return y + 1.0


    @mytriton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 64):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, scale_shift(x, 2.0), mask=offs < n)
""")


def test_jit_helper_is_chosen_as_callee_not_kernel():
    assert "def k(" in compile_text(WITH_HELPER, "ast")
    assert "tree k(" in compile_text(WITH_HELPER, "tree")


def test_jit_helper_is_inlined_at_its_own_lines():
    tree = compile_text(WITH_HELPER, "tree")
    assert "scale_shift" not in tree
    # y = x * factor is line 6, return y + 1.0 line 7 of the file.
    assert "add(mul($x, 2.0)@6:9, 1.0)@7:12" in tree


def test_bundle_carries_the_helper():
    bundle = compile_text(WITH_HELPER, "ast")
    assert "def scale_shift(x, factor):" in bundle
    assert "'lines': {'k': 10, 'scale_shift': 4}" in bundle


# ---- values only running the file could give -------------------------------------------------

COMPUTED = kernel_source("""
    import os

    SCALE = int(os.environ.get("SCALE", "2"))
    OTHER = SCALE + 1


    @mytriton.jit
    def k(out_ptr, BLOCK: tl.constexpr = 64):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0)


    @mytriton.jit
    def uses_it(out_ptr, BLOCK: tl.constexpr = 64):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs * SCALE, 1.0)


    @mytriton.jit
    def uses_a_constant_built_on_it(out_ptr, BLOCK: tl.constexpr = 64):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs * OTHER, 1.0)
""")

NOT_CONSTANT = "its value is computed when the file runs, which mytriton never does"


def test_computed_value_the_kernel_does_not_use_is_no_error():
    assert "tree k(" in compile_text(COMPUTED, "tree", kernel="k")


def test_computed_value_the_kernel_uses_is_an_error_where_it_is_used():
    with pytest.raises(CompileError) as info:
        compile_text(COMPUTED, "tree", kernel="uses_it")
    err = info.value
    assert err.message == f"'SCALE' cannot be used in a kernel: {NOT_CONSTANT}"
    text = "    tl.store(out_ptr + offs * SCALE, 1.0)"
    line = COMPUTED.splitlines().index(text) + 1
    assert (err.loc.file, err.loc.line, err.loc.col) == ("kernel.py", line, text.index("SCALE") + 1)


def test_constant_built_on_a_computed_value_is_an_error_too():
    with pytest.raises(CompileError, match=f"'OTHER' cannot be used in a kernel: {NOT_CONSTANT}"):
        compile_text(COMPUTED, "tree", kernel="uses_a_constant_built_on_it")


def test_tracing_the_file_and_its_bundle_give_the_same_error():
    with pytest.raises(CompileError) as direct:
        compiler.trace(COMPUTED, "kernel.py", Options(kernel="uses_it"))
    with pytest.raises(CompileError) as bundled:
        compiler.trace(compiler.parse(COMPUTED, "kernel.py", "uses_it"), "<bundle>", Options())
    assert bundled.value.render() == direct.value.render()


def test_plain_python_function_called_in_a_kernel_is_an_error():
    source = kernel_source("""
        def helper(x):
            return x


        @mytriton.jit
        def k(out_ptr):
            tl.store(out_ptr, helper(1.0))
    """)
    with pytest.raises(CompileError, match="'helper' is not a @jit function"):
        compile_text(source, "ast")


def test_pythons_own_warnings_about_the_file_are_not_printed(tmp_path):
    source = tmp_path / "warn.py"
    source.write_text(kernel_source('''
        X = "\\d"

        @mytriton.jit
        def k(x_ptr):
            tl.store(x_ptr, 1.0)
    '''))
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="default")
    result = subprocess.run([sys.executable, "-m", "mytriton.cli", "parse", str(source)], capture_output=True,
                            env=env, timeout=60)
    assert result.returncode == 0
    assert result.stderr == b""
