"""Diagnostics quote the kernel's own source and nothing else.

An IR header names the kernel's source file. An error quotes a line of it
only from a text registered in memory (what is being compiled) or from a
regular file of bounded size whose text matches the digest the header
carries. A header that names a device, a FIFO or an unrelated file, with or
without a digest, gets the error without a quote, at once. Names from the
input are printed with their control characters escaped.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SAMPLES, compile_text, kernel_source
from mytriton import compiler
from mytriton.diagnostics import CompileError, Location, SourceTexts, source_digest
from mytriton.limits import MAX_SOURCE_LINES

ADD_SOURCE = (SAMPLES / "add.py").read_text()
ADD_SSA = (ROOT / "tests" / "snapshots" / "add.ssa").read_text()
# A declared type the verifier rejects at @9:15, line 9 of samples/add.py.
BROKEN = ("mul %0, 256 : i32 @9:15", "mul %0, 256 : f32 @9:15")
LINE_9 = ADD_SOURCE.splitlines()[8]


def ssa_naming(file: str, digest: str | None) -> str:
    """The add kernel's SSA, broken at line 9, its header naming ``file``."""
    header, rest = ADD_SSA.split("\n", 1)
    head = re.sub(r'@".*?":7:1( sha256="[0-9a-f]+")?', "", header).rstrip(" {")
    spelled = file.replace("\\", "\\\\").replace('"', '\\"')
    head += f' @"{spelled}":7:1' + (f' sha256="{digest}"' if digest else "") + " {"
    return head + "\n" + rest.replace(*BROKEN)


def cli(args: list[str], stdin: str, cwd=ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MYTRITON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "mytriton.cli", *args], input=stdin.encode(),
                          capture_output=True, cwd=cwd, env=env, timeout=60)


def verify_error(text: str) -> str:
    with pytest.raises(CompileError) as caught:
        compiler.verify(compiler.read_ssa(text, "broken.ssa"))
    return caught.value.render()


# ---- what a header may make the compiler read ----------------------------------------------


def test_header_with_the_matching_digest_quotes_the_source_file(tmp_path):
    source = tmp_path / "add.py"
    source.write_text(ADD_SOURCE)
    rendered = verify_error(ssa_naming(str(source), source_digest(ADD_SOURCE)))
    assert rendered.splitlines()[1] == LINE_9


def test_header_without_a_digest_never_reads_the_file(tmp_path):
    source = tmp_path / "add.py"
    source.write_text(ADD_SOURCE)
    rendered = verify_error(ssa_naming(str(source), None))
    assert rendered.startswith(f"{source}:9:15: error: invalid SSA")
    assert LINE_9 not in rendered


def test_header_without_a_digest_quotes_no_text_an_earlier_compile_left_in_memory(tmp_path):
    # A notebook compiles kernel.py, then verifies IR written by hand whose header names a
    # kernel.py too: which text that IR means is unknown, so neither text is quoted.
    compile_text("import mytriton.language as tl\n" + ADD_SOURCE, "ast", file="kernel.py")
    rendered = verify_error(ssa_naming("kernel.py", None))
    assert rendered.splitlines()[0].startswith("kernel.py:9:15: error: invalid SSA")
    assert rendered.splitlines()[1].startswith("note: in:")


def test_file_changed_since_the_digest_is_not_quoted(tmp_path):
    source = tmp_path / "add.py"
    source.write_text(ADD_SOURCE.replace("mask = offsets < n", "mask = offsets < n  # edited"))
    rendered = verify_error(ssa_naming(str(source), source_digest(ADD_SOURCE)))
    assert "edited" not in rendered


@pytest.mark.parametrize("digest", [None, source_digest(ADD_SOURCE)])
def test_header_naming_an_unrelated_file_quotes_nothing_of_it(digest):
    rendered = verify_error(ssa_naming("/etc/passwd", digest))
    assert [line for line in rendered.splitlines() if not line.startswith(("/etc/passwd:9:15", "note:"))] == []


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_header_naming_a_device_fails_at_once(device):
    started = time.monotonic()
    result = cli(["verify"], ssa_naming(device, source_digest(ADD_SOURCE)))
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        f"{device}:9:15: error: invalid SSA: 'mul' declares f32 but its operands give i32",
        "note: in: %1 = mul %0, 256 : f32 @9:15"]


def test_header_naming_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "kernel.py"
    os.mkfifo(fifo)
    result = cli(["verify"], ssa_naming(str(fifo), source_digest(ADD_SOURCE)))
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[1:] == ["note: in: %1 = mul %0, 256 : f32 @9:15"]


def test_nul_byte_in_the_file_name_is_a_located_error_without_a_traceback():
    result = cli(["verify"], ssa_naming("ker\0nel.py", source_digest(ADD_SOURCE)))
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    assert stderr.startswith("ker\\x00nel.py:9:15: error: invalid SSA")


def test_malformed_digest_is_a_located_error():
    text = ssa_naming("samples/add.py", None).replace('7:1 {', '7:1 sha256="not-a-digest" {', 1)
    with pytest.raises(CompileError, match=r'a source digest is 16 lowercase hex digits, got "not-a-digest"') as caught:
        compiler.read_ssa(text, "broken.ssa")
    assert str(caught.value.loc).startswith("broken.ssa:1:")


# ---- kernel bundles --------------------------------------------------------------------------

TYPE_ERROR = kernel_source("""
    @mytriton.jit
    def k(x_ptr, n):
        y = tl.load(n)
        tl.store(x_ptr, y)
""")


def bundle_with_line(line: object) -> str:
    bundle = compile_text(TYPE_ERROR, "ast")
    return re.sub(r"'lines': \{'k': \d+\}", f"'lines': {{'k': {line!r}}}", bundle)


@pytest.mark.parametrize("line", [300_000_000, MAX_SOURCE_LINES + 1, 0, -5, True, "7", 7.0])
def test_bundle_line_outside_the_limit_or_not_an_integer_is_a_header_error(line):
    with pytest.raises(CompileError, match="malformed __mytriton_bundle__ header") as caught:
        compiler.trace(bundle_with_line(line), "k.bundle", compiler.Options())
    assert caught.value.loc.file == "k.bundle"


def test_bundle_function_ending_past_the_limit_is_a_header_error():
    with pytest.raises(CompileError, match=f"would end past line {MAX_SOURCE_LINES}"):
        compiler.trace(bundle_with_line(MAX_SOURCE_LINES - 1), "k.bundle", compiler.Options())


def test_bundle_at_a_high_line_quotes_its_own_copy(tmp_path):
    # Line 999,990 of a file nobody has: registered sparsely, quoted from the bundle.
    bundle = bundle_with_line(999_990).replace("'source': 'kernel.py'", "'source': 'far.py'")
    with pytest.raises(CompileError) as caught:
        compiler.lower(compiler.trace(bundle, "k.bundle", compiler.Options(signature="*fp32, i32")))
    rendered = caught.value.render().splitlines()
    assert rendered[0].startswith("far.py:999992:")
    assert rendered[1] == "    y = tl.load(n)"


def test_registered_lines_are_stored_sparsely():
    texts = SourceTexts()
    texts.register_lines("far.py", MAX_SOURCE_LINES - 1, ["a", "b"])
    assert texts.line("far.py", MAX_SOURCE_LINES) == "b"
    assert len(texts._texts["far.py"].lines) == 2


# ---- names from the input, printed in messages ---------------------------------------------


def test_control_characters_in_a_file_name_are_escaped_in_diagnostics():
    error = CompileError("bad thing in '\x1b]0;title\x07'", Location("evil\x1b[2J\nname.py", 3, 1))
    rendered = error.render(SourceTexts())
    assert "\x1b" not in rendered and "\x07" not in rendered
    assert rendered == "evil\\x1b[2J\\x0aname.py:3:1: error: bad thing in '\\x1b]0;title\\x07'"


def test_quoted_source_line_escapes_control_characters_and_keeps_the_caret_under_the_column():
    texts = SourceTexts()
    texts.register("k.py", "x = 1\n\ty = \x1b[31m + z\n")
    rendered = CompileError("here", Location("k.py", 2, 14)).render(texts).splitlines()
    assert rendered[1] == "\ty = \\x1b[31m + z"
    assert rendered[2].index("^") == rendered[1].index("z")


def test_lines_are_counted_at_newlines_only_as_python_and_the_ir_count_them():
    texts = SourceTexts()
    texts.register("k.py", "# page\x0cbreak \u2028 here\nx = 1\n")
    assert texts.line("k.py", 2) == "x = 1"


def test_a_long_source_line_is_quoted_in_a_window_around_the_column():
    texts = SourceTexts()
    texts.register("long.tree", "a" * 100_000 + "BAD" + "b" * 100_000)
    head, line, caret = CompileError("oops", Location("long.tree", 1, 100_001)).render(texts).splitlines()
    assert head == "long.tree:1:100001: error: oops"
    assert len(line) <= 170 and line.startswith("...") and line.endswith("...")
    assert line[len(caret) - 1:].startswith("BAD")


def test_a_huge_unexpected_token_is_shortened_in_the_message():
    from mytriton.ir.ssa_text import parse_kernel

    with pytest.raises(CompileError) as err:
        parse_kernel('kernel k() @"k.py":1:1 {\n  ' + "x" * 50_000 + " y\n}\n", "k.ssa")
    assert len(err.value.message) < 200
