"""What the CLI does with bad input: one diagnostic, exit code 1, no output.

A located error prints, on stderr, ``file:line:col: error: message``, the
source line, and a caret under the column; no Python traceback; nothing on
stdout; and with ``-o FILE``, no file (an earlier file at that path is left
as it was). Kernel errors point at the kernel source line whichever stage
finds them, also when the IR reached that stage through a pipe.

Every case is one CLI process (run once, cached by a module fixture) that
several tests look at, one behaviour each.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from textwrap import dedent
from typing import Callable

import pytest

from conftest import kernel_source
from mytriton_command import run
from mytriton import compiler
from mytriton.diagnostics import source_digest

# ---- running the CLI ----------------------------------------------------------------------


def cli(args: list[str], cwd, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return run(*args, stdin=stdin, cwd=cwd)


def kernel(lines: str, params: str = "x_ptr, out_ptr, n, BLOCK: tl.constexpr = 64") -> str:
    """A kernel file whose body starts with ``offs`` and goes on with ``lines``."""
    body = "@mytriton.jit\ndef k(" + params + "):\n    offs = tl.arange(0, BLOCK)\n"
    return kernel_source(body + dedent(lines).strip("\n").replace("\n", "\n    ").join(["    ", "\n"]))


END = "<end of line>"


@dataclass
class Case:
    """A CLI run that fails. ``args`` may name {out}, the -o path; ``before``
    are commands whose stdout, each fed to the next, is the run's stdin.
    The error is expected at the first line of ``where`` (a file) that holds
    ``line_has``, its column where ``caret_at`` starts in that line (END: just
    past its end)."""

    files: dict[str, str]
    args: list[str]
    message: str
    where: str = "kernel.py"
    line_has: str = ""
    caret_at: str = ""
    before: list[list[str]] = field(default_factory=list)
    edit: Callable[[bytes], bytes] | None = None  # applied to the run's stdin

    def position(self, cwd) -> tuple[int, int, str]:
        lines = (cwd / self.where).read_text().splitlines()
        number = next(i for i, text in enumerate(lines, 1) if self.line_has in text)
        text = lines[number - 1]
        if self.caret_at == END:
            return number, len(text) + 1, text
        return number, text.index(self.caret_at or self.line_has) + 1, text


COMPILE = ["compile", "kernel.py", "-o", "{out}"]
TYPED = ["-s", "*fp32, *fp32, i32"]

# ---- SSA and tree texts -------------------------------------------------------------------

# A kernel and the SSA it lowers to, written so that each op's location is
# the kernel line it came from: verifier errors then quote kernel.py.
LOOP_KERNEL = kernel_source("""
    @mytriton.jit
    def k(out_ptr, n):
        total = 0.0
        for i in range(n):
            total = total + 1.0
        tl.store(out_ptr, total)
""")

GOOD_LOOP_SSA = dedent("""\
    kernel k(out_ptr: ptr<f32>, n: i32) @"kernel.py":5:1 sha256="DIGEST" {
      %3 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @7:5 {
        %2 = add %1, 1.0 : f32 @8:17
        yield %2 @7:5
      }
      store out_ptr, %3, none @9:5
    }
""").replace("DIGEST", source_digest(LOOP_KERNEL))  # what lets errors quote kernel.py

SSA_CASES = {
    "ssa_missing_comma": Case(
        {"bad.ssa": GOOD_LOOP_SSA.replace("add %1, 1.0", "add %1 1.0")}, ["verify", "bad.ssa", "-o", "{out}"],
        "unexpected '1.0'; expected ')', ',', ':', '@'", where="bad.ssa", line_has="add %1 1.0",
        caret_at="1.0"),
    "ssa_unexpected_end": Case(
        {"bad.ssa": GOOD_LOOP_SSA.rsplit("}", 1)[0]}, ["opt", "bad.ssa", "-o", "{out}"],
        "unexpected end of input; expected", where="bad.ssa", line_has="store out_ptr", caret_at=END),
    "ssa_undefined_value": Case(
        {"bad.ssa": GOOD_LOOP_SSA.replace("store out_ptr, %3", "store out_ptr, %9")},
        ["verify", "bad.ssa", "-o", "{out}"],
        "use of undefined value %9", where="bad.ssa", line_has="store out_ptr", caret_at="%9"),
    "ssa_body_value_used_after_loop": Case(
        {"kernel.py": LOOP_KERNEL, "bad.ssa": GOOD_LOOP_SSA.replace("store out_ptr, %3", "store out_ptr, %2")},
        ["verify", "bad.ssa", "-o", "{out}"],
        "invalid SSA: a value defined inside a loop body is used outside it", line_has="tl.store("),
    "ssa_wrong_declared_type": Case(
        {"kernel.py": LOOP_KERNEL, "bad.ssa": GOOD_LOOP_SSA.replace("add %1, 1.0 : f32", "add %1, 1.0 : i32")},
        ["emit-cuda", "bad.ssa", "-o", "{out}"],
        "invalid SSA: 'add' declares i32 but its operands give f32", line_has="total + 1.0",
        caret_at="total + 1.0"),
    "ssa_unknown_op": Case(
        {"bad.ssa": GOOD_LOOP_SSA.replace("add %1", "plus %1")}, ["opt", "bad.ssa", "-o", "{out}"],
        "unknown op 'plus'", where="bad.ssa", line_has="plus %1", caret_at="plus"),
    "ssa_given_to_the_tree_reader": Case(
        {"bad.tree": GOOD_LOOP_SSA}, ["lower", "bad.tree", "-o", "{out}"],
        "unexpected 'kernel'; expected 'tree'", where="bad.tree", line_has="kernel k(", caret_at="kernel"),
    "tree_syntax_error": Case(
        {"bad.tree": dedent("""\
            tree k(x: ptr<f32>) @"kernel.py":1:1 {
              let $a = program_id(axis=0)@2:3
              store(x $a, 1.0, none)@3:3
            }
        """)}, ["lower", "bad.tree", "-o", "{out}"],
        "unexpected '$a'; expected", where="bad.tree", line_has="store(x $a", caret_at="$a"),
    "tree_unbound_name": Case(
        {"bad.tree": dedent("""\
            tree k(x: ptr<f32>) @"kernel.py":1:1 {
              store(add(x, $b)@2:9, 1.0, none)@2:3
            }
        """)}, ["lower", "bad.tree", "-o", "{out}"],
        "$b is not bound", where="bad.tree", line_has="store(", caret_at="$b"),
    "tree_loop_carrying_values_with_an_empty_body": Case(
        {"bad.tree": dedent("""\
            tree k(n: i32) @"kernel.py":1:1 {
              for $i in range(0, n, 1) iter_args($a = 0) -> ($b) @2:5 {
              }
            }
        """)}, ["lower", "bad.tree", "-o", "{out}"],
        "a loop that carries values must end with 'yield'", where="bad.tree", line_has="for $i",
        caret_at="for $i"),
    "tree_absent_operand_an_op_needs": Case(
        {"bad.tree": dedent("""\
            tree k(y: ptr<f32>) @"bad.tree":1:1 {
              store(y, abs(none)@2:12, none)@2:3
            }
        """)}, ["lower", "bad.tree", "-o", "{out}"],
        "operand 'x' of 'abs' cannot be none", where="bad.tree", line_has="store(y", caret_at="abs("),
    "tree_shared_buffer_in_arithmetic": Case(
        {"bad.tree": dedent("""\
            tree k(x: shared<16x16 x f32>, y: ptr<f32>) @"bad.tree":1:1 {
              store(y, add(x, 1)@2:12, none)@2:3
            }
        """)}, ["lower", "bad.tree", "-o", "{out}"],
        "operand 'lhs' of 'add' cannot be a shared buffer (shared<16x16 x f32>)", where="bad.tree",
        line_has="store(y", caret_at="add("),
}

# ---- kernel sources ----------------------------------------------------------------------

SOURCE_CASES = {
    "while_true": Case({"kernel.py": kernel("""
        while True:
            n = n - 1
        """)}, COMPILE, "this 'while' condition is always true, so the loop would never end", line_has="while",
        caret_at="True"),
    "if_on_tile": Case({"kernel.py": kernel("""
        if offs > 0:
            tl.store(out_ptr + offs, 1.0)
        """)}, COMPILE, "the condition of an 'if' must be a scalar, got a tile (vector<64 x bool>); "
        "use tl.where", line_has="if offs", caret_at="offs > 0"),
    "while_on_tile": Case({"kernel.py": kernel("""
        while offs > n:
            n = n + 1
        """)}, COMPILE, "the condition of a 'while' must be a scalar, got a tile", line_has="while offs",
        caret_at="offs > n"),
    "return_in_kernel": Case({"kernel.py": kernel("""
        return offs
        """)}, COMPILE, "a kernel cannot return a value; store results through pointers", line_has="return"),
    "return_inside_a_loop": Case({"kernel.py": kernel("""
        for i in range(n):
            if i > 2:
                return
        """)}, COMPILE, "'return' inside a loop is not supported in kernels", line_has="return"),
    "continue": Case({"kernel.py": kernel("""
        for i in range(n):
            continue
        """)}, COMPILE, "'continue' is not supported in kernels (as in Triton)", line_has="continue"),
    "unknown_language_function": Case({"kernel.py": kernel("""
        y = tl.foo(offs)
        """)}, COMPILE, "'foo' is not part of mytriton.language", line_has="tl.foo"),
    "misspelt_language_function": Case({"kernel.py": kernel("""
        y = tl.lod(x_ptr + offs)
        """)}, COMPILE, "'lod' is not part of mytriton.language; did you mean 'load'?", line_has="tl.lod"),
    "misspelt_name": Case({"kernel.py": kernel("""
        y = tl.load(x_ptr + ofs)
        """)}, COMPILE, "'ofs' is not defined; did you mean 'offs'?", line_has="ofs)", caret_at="ofs)"),
    "break": Case({"kernel.py": kernel("""
        for i in range(n):
            break
        """)}, COMPILE, "'break' is not supported in kernels", line_has="break"),
    "for_else": Case({"kernel.py": kernel("""
        for i in range(n):
            pass
        else:
            tl.store(out_ptr, 1.0)
        """)}, COMPILE, "'for/else' is not supported in kernels", line_has="tl.store(out_ptr, 1.0)",
        caret_at="tl.store"),
    "static_range_with_runtime_bound": Case({"kernel.py": kernel("""
        for i in tl.static_range(n):
            pass
        """)}, COMPILE, "tl.static_range needs compile-time integer bounds", line_has="static_range",
        caret_at="n)"),
    "float_step": Case({"kernel.py": kernel("""
        for i in range(0, n, 0.5):
            pass
        """)}, COMPILE, "the loop step must be an integer, got the constant 0.5", line_has="range(0, n, 0.5)",
        caret_at="0.5)"),
    "zero_step": Case({"kernel.py": kernel("""
        for i in range(0, n, 0):
            pass
        """)}, COMPILE, "range step cannot be zero", line_has="range(0, n, 0)",
        caret_at="0)"),
    "carried_value_changes_shape": Case({"kernel.py": kernel("""
        acc = 0.0
        for i in range(n):
            acc += tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, acc)
        """)}, COMPILE,
        "loop-carried 'acc' changes type in the loop: it enters as f32 and the body makes it vector<64 x f32>",
        line_has="acc +="),
    "carried_value_changes_dtype": Case({"kernel.py": kernel("""
        acc = 0
        for i in range(n):
            acc += tl.load(x_ptr + i)
        tl.store(out_ptr, acc)
        """)}, COMPILE, "loop-carried 'acc' changes type in the loop: it enters as i32 and the body makes it f32",
        line_has="acc +="),
    "shapes_do_not_broadcast": Case({"kernel.py": kernel("""
        y = tl.arange(0, 64) + tl.arange(0, 128)
        tl.store(out_ptr + y, 1.0)
        """)}, COMPILE, "shapes [64], [128] do not broadcast", line_has="tl.arange(0, 128)",
        caret_at="tl.arange(0, 64)"),
    "load_from_an_integer": Case({"kernel.py": kernel("""
        y = tl.load(n)
        tl.store(out_ptr + offs, y)
        """)}, COMPILE + TYPED, "'load' needs a pointer, got i32", line_has="tl.load(n)"),
    "pointer_plus_pointer": Case({"kernel.py": kernel("""
        y = x_ptr + out_ptr
        tl.store(y + offs, 1.0)
        """)}, COMPILE + TYPED, "a pointer offset must be an integer, got ptr<f32>", line_has="x_ptr + out_ptr"),
    "python_syntax_error": Case({"kernel.py": kernel("""
        y = (offs +
        """)}, ["parse", "kernel.py", "-o", "{out}"], "invalid Python syntax: '(' was never closed",
        line_has="y = (", caret_at="("),
    "two_kernels_and_no_k": Case({"kernel.py": kernel("""
        tl.store(out_ptr + offs, 1.0)
        """) + "\n\n" + dedent("""\
        @mytriton.jit
        def other(x_ptr):
            tl.store(x_ptr, 2.0)
        """)}, ["trace", "kernel.py", "-o", "{out}"], "kernel.py has several kernels (k, other); choose one with -k NAME",
        line_has="import mytriton"),
    "unknown_kernel_name": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        ["parse", "kernel.py", "-k", "nope", "-o", "{out}"], "no @jit kernel named 'nope' in kernel.py (kernels: k)",
        line_has="import mytriton"),
    "unknown_define": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        COMPILE + ["-D", "SIZE=3"], "-D SIZE: kernel 'k' has no constexpr parameter 'SIZE'", line_has="def k("),
    "misspelt_define": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        COMPILE + ["-D", "BLCK=32"], "-D BLCK: kernel 'k' has no constexpr parameter 'BLCK'; did you mean 'BLOCK'?",
        line_has="def k("),
    "define_of_a_runtime_parameter": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        ["trace", "kernel.py", "-D", "n=3", "-o", "{out}"], "-D n: 'n' is a runtime parameter, not a tl.constexpr",
        line_has="def k("),
    "missing_constexpr": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)",
                                                  params="x_ptr, out_ptr, n, BLOCK: tl.constexpr")},
        COMPILE, "constexpr 'BLOCK' has no value; give one with -D BLOCK=VALUE", line_has="def k(",
        caret_at="BLOCK"),
    "unknown_signature_type": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        COMPILE + ["-s", "*fp32, *fp99, i32"], "unknown type '*fp99' for 'out_ptr' in the signature",
        line_has="def k(", caret_at="out_ptr"),
    "signature_of_the_wrong_length": Case({"kernel.py": kernel("tl.store(out_ptr + offs, 1.0)")},
        ["trace", "kernel.py", "-s", "*fp32, i32", "-o", "{out}"],
        "the signature gives 2 entries but 'k' has 3 runtime parameter(s) (x_ptr, out_ptr, n)", line_has="def k("),
}

# ---- errors found by a later stage, the IR coming through a pipe ---------------------------

TYPE_ERROR_KERNEL = kernel("""
    y = tl.load(n)
    tl.store(out_ptr + offs, y)
""")

PIPE_CASES = {
    # `lower` infers types; the tree text it reads names kernel.py and its lines.
    "type_error_found_by_lower": Case(
        {"kernel.py": TYPE_ERROR_KERNEL}, ["lower", "-o", "{out}"], "'load' needs a pointer, got i32",
        line_has="tl.load(n)", before=[["parse", "kernel.py"], ["trace", *TYPED]]),
    # `trace` reads the bundle `parse` printed.
    "while_true_found_by_trace": Case(
        {"kernel.py": SOURCE_CASES["while_true"].files["kernel.py"]}, ["trace", "-o", "{out}"],
        "this 'while' condition is always true", line_has="while True", caret_at="True",
        before=[["parse", "kernel.py"]]),
    # `verify` checks the SSA `lower` printed; a hand-broken type points at the kernel line.
    "verifier_error_after_lower": Case(
        {"kernel.py": LOOP_KERNEL}, ["verify", "-o", "{out}"],
        "invalid SSA: 'add' declares i32 but its operands give f32", line_has="total + 1.0",
        caret_at="total + 1.0", before=[["parse", "kernel.py"], ["trace"], ["lower"]],
        edit=lambda ssa: ssa.replace(b"add %1, 1.0 : f32", b"add %1, 1.0 : i32")),
}


LOCATED = {**SSA_CASES, **SOURCE_CASES, **PIPE_CASES}


def run_case(case: Case, cwd, out: str) -> subprocess.CompletedProcess:
    for name, text in case.files.items():
        (cwd / name).write_text(text)
    (cwd / "out").mkdir(exist_ok=True)
    stdin = None
    for args in case.before:
        previous = cli(args, cwd, stdin)
        assert previous.returncode == 0, previous.stderr.decode()
        stdin = previous.stdout
    if case.edit is not None:
        stdin = case.edit(stdin)
    return cli([a.replace("{out}", out) for a in case.args], cwd, stdin)


def test_hand_written_ssa_is_what_the_loop_kernel_lowers_to():
    assert compiler.compile_source(LOOP_KERNEL, "kernel.py", "ssa", compiler.Options()) == GOOD_LOOP_SSA


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run every case once, lazily: {case name: (directory, result)}."""
    cache: dict[str, tuple] = {}

    def get(name: str):
        if name not in cache:
            cwd = tmp_path_factory.mktemp(name)
            cache[name] = (cwd, run_case(LOCATED[name], cwd, f"out/{name}.out"))
        return cache[name]

    return get


@pytest.mark.parametrize("name", LOCATED)
def test_error_exits_with_1(results, name):
    _, result = results(name)
    assert result.returncode == 1, result.stderr.decode()


@pytest.mark.parametrize("name", LOCATED)
def test_error_prints_no_traceback_and_nothing_on_stdout(results, name):
    _, result = results(name)
    assert "Traceback" not in result.stderr.decode()
    assert "internal compiler error" not in result.stderr.decode()
    assert result.stdout == b""


@pytest.mark.parametrize("name", LOCATED)
def test_error_names_file_line_and_column(results, name):
    cwd, result = results(name)
    case = LOCATED[name]
    line, col, _ = case.position(cwd)
    first = result.stderr.decode().splitlines()[0]
    assert first.startswith(f"{case.where}:{line}:{col}: error: "), first
    assert case.message in first


@pytest.mark.parametrize("name", LOCATED)
def test_error_quotes_the_source_line_with_a_caret(results, name):
    cwd, result = results(name)
    line, col, text = LOCATED[name].position(cwd)
    stderr_lines = result.stderr.decode().splitlines()
    assert stderr_lines[1:3] == [text, " " * (col - 1) + "^"]


@pytest.mark.parametrize("name", LOCATED)
def test_error_leaves_no_output_file(results, name):
    cwd, _ = results(name)
    assert list((cwd / "out").iterdir()) == []  # neither the file nor a partial one


def test_verifier_error_notes_the_offending_op(results):
    _, result = results("ssa_wrong_declared_type")
    assert "note: in: %2 = add %1, 1.0 : i32 @8:17" in result.stderr.decode().splitlines()


@pytest.mark.parametrize("name", ["while_true", "ssa_missing_comma", "type_error_found_by_lower"])
def test_error_leaves_an_existing_output_file_untouched(tmp_path, name):
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "result.txt"
    target.write_text("from an earlier run\n")
    result = run_case(LOCATED[name], tmp_path, "out/result.txt")
    assert result.returncode == 1
    assert target.read_text() == "from an earlier run\n"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["result.txt"]


def test_trace_of_a_bundle_quotes_the_source_from_the_bundle(tmp_path):
    """The bundle carries the kernel's lines: the caret line shows even when
    the source file is gone by the time `trace` reads it."""
    source = tmp_path / "kernel.py"
    source.write_text(SOURCE_CASES["while_true"].files["kernel.py"])
    bundle = cli(["parse", "kernel.py"], tmp_path)
    assert bundle.returncode == 0, bundle.stderr.decode()
    text = next(line for line in source.read_text().splitlines() if "while True" in line)
    source.unlink()
    result = cli(["trace"], tmp_path, bundle.stdout)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[1:3] == [text, " " * text.index("True") + "^"]


# ---- errors with no place in a file ---------------------------------------------------------


def test_missing_input_file_is_an_error_without_location(tmp_path):
    (tmp_path / "out").mkdir()
    result = cli(["compile", "missing.py", "-o", "out/missing.cu"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode() == "error: cannot read missing.py: No such file or directory\n"
    assert list((tmp_path / "out").iterdir()) == []


def test_malformed_define_is_an_error_without_location(tmp_path):
    (tmp_path / "kernel.py").write_text(kernel("tl.store(out_ptr + offs, 1.0)"))
    result = cli(["trace", "kernel.py", "-D", "BLOCK=abc"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode() == "error: -D BLOCK: 'abc' is not a number, boolean, quoted string or dtype\n"
    assert result.stdout == b""


def test_unknown_pass_is_an_error_listing_the_passes(tmp_path):
    (tmp_path / "good.ssa").write_text(GOOD_LOOP_SSA)
    result = cli(["opt", "good.ssa", "-p", "fold,nope"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode().startswith("error: unknown pass 'nope' (passes: verify, fold, cse, dce")
    assert result.stdout == b""
