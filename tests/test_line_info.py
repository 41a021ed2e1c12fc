"""Profilers see the Python source: the CUDA carries ``#line`` directives to
the kernel's file, and nvcc's ``-lineinfo`` records them, so Nsight Compute's
source view and ``nvdisasm -g`` map instructions to Python lines.

The emitted text names the file as given and writes a directive only where
the Python line changes (one holds until the next); the build repeats each
before every line and makes a relative name absolute (line_directives.py).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import ROOT, SAMPLES, compile_text, kernel_source, sample_options
from dwarf_lines import line_rows
from mytriton import compiler
from mytriton.backends.cuda import nvcc
from mytriton.backends.cuda.line_directives import DIRECTIVE, file_name, for_nvcc
from mytriton.compiler import Options

ADD = SAMPLES / "add.py"
# samples/add.py: the def, program_id, offsets, mask, the two loads, the store.
ADD_LINES = {"def": 7, "program_id": 8, "offsets": 9, "mask": 10, "load x": 11, "load y": 12, "store": 13}


def sample_cuda(name: str, file: str | None = None) -> str:
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, file or f"samples/{name}.py", "cuda", Options(**sample_options(name)))


def python_lines(cuda: str) -> list[tuple[str, tuple[str, int] | None]]:
    """Each line of emitted CUDA that is not a directive, with the (file,
    line) it comes from: the last directive's (None before the first)."""
    out = []
    current = None
    for text in cuda.split("\n"):
        found = DIRECTIVE.match(text)
        if found:
            current = (unquote(found.group(2)), int(found.group(1)))
        else:
            out.append((text, current))
    return out


def line_of(cuda: str, fragment: str) -> int:
    (found,) = {at for text, at in python_lines(cuda) if fragment in text}
    assert found is not None and found[0] == "samples/add.py"
    return found[1]


# ---- the emitted text ------------------------------------------------------------------------------


def test_each_statement_maps_to_the_python_line_of_its_op():
    cuda = sample_cuda("add")
    assert line_of(cuda, "__global__") == ADD_LINES["def"]
    assert line_of(cuda, "blockIdx.x") == ADD_LINES["program_id"]
    assert line_of(cuda, "(v0 * 256)") == ADD_LINES["offsets"]
    assert line_of(cuda, "(v3 < n)") == ADD_LINES["mask"]
    assert line_of(cuda, "*v4 :") == ADD_LINES["load x"]
    assert line_of(cuda, "*v7 :") == ADD_LINES["load y"]
    assert line_of(cuda, "*v9 = v10") == ADD_LINES["store"]
    # Index arithmetic goes with the op it is worked out for: the first load's, then the store's.
    coordinates = [at for text, at in python_lines(cuda) if "const int c0 =" in text]
    assert coordinates == [("samples/add.py", ADD_LINES["load x"]), ("samples/add.py", ADD_LINES["store"])]
    assert python_lines(cuda)[-2] == ("}", ("samples/add.py", ADD_LINES["def"]))


def test_nothing_before_the_kernel_needs_a_line_and_the_header_stays_first():
    cuda = sample_cuda("add")
    assert cuda.startswith("// mytriton-kernel: {")
    first = next(i for i, text in enumerate(cuda.split("\n")) if DIRECTIVE.match(text))
    assert "__global__" in cuda.split("\n")[first + 1]


@pytest.mark.parametrize("name", ["add", "softmax", "matmul"])
def test_a_directive_is_written_only_where_the_python_line_changes(name):
    cuda = sample_cuda(name)
    lines = cuda.split("\n")
    directives = [(i, DIRECTIVE.match(text)) for i, text in enumerate(lines)]
    found = [(i, m.groups()) for i, m in directives if m]
    assert found
    for (i, before), (j, after) in zip(found, found[1:]):
        assert before != after, f"line {j + 1} repeats the directive of line {i + 1}"
        assert j > i + 1, "two directives in a row"
    kernel_lines = {int(line) for _, (line, _) in found}
    source_lines = len((SAMPLES / f"{name}.py").read_text().split("\n"))
    assert all(1 <= line <= source_lines for line in kernel_lines)
    # A comment goes with the statement below it, a closing brace with the
    # one above (but the kernel's own, which goes with the def line).
    for i, _ in found[:-1]:
        assert lines[i + 1].strip() != "}"
    assert found[-1] == (len(lines) - 3, (str(ADD_LINES["def"]) if name == "add" else found[0][1][0],
                                          f"samples/{name}.py"))


def test_statements_with_no_op_of_their_own_map_to_the_op_they_serve():
    cuda = sample_cuda("softmax")
    # The reduction's shuffles (5 over the lanes, 2 over the 4 warps' partials) and
    # barriers: tl.max on line 11, tl.sum on line 13.
    shuffles = [at[1] for text, at in python_lines(cuda) if "__shfl_xor_sync" in text]
    assert shuffles == [11] * 7 + [13] * 7
    barriers = {at[1] for text, at in python_lines(cuda) if "__syncthreads" in text}
    assert barriers == {11, 13}


def test_the_directives_name_the_file_as_given():
    for given in ("samples/add.py", "/somewhere/else/add.py", "./add.py"):
        cuda = sample_cuda("add", given)
        names = {m.group(2) for m in map(DIRECTIVE.match, cuda.split("\n")) if m}
        assert names == {given}


WEIRD_NAMES = [
    'a"b.py',
    "back\\slash.py",
    'x.py"\n#include "/etc/passwd"\nint evil;//',
    "trigraph??/.py",
    "caf\u00e9 \U0001f600.py",
    "tab\tand%percent.py",
    "line\\\ncontinued.py",
]


@pytest.mark.parametrize("name", WEIRD_NAMES)
def test_a_file_name_cannot_break_out_of_its_directive(name):
    cuda = compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    """), "cuda", file=name)
    assert cuda.isascii()
    directives = [text for text in cuda.split("\n") if "#line" in text and not text.startswith("//")]
    assert directives and all(DIRECTIVE.match(text) for text in directives)
    assert all(unquote(DIRECTIVE.match(text).group(2)) == name for text in directives)
    assert not any(text.startswith(("#include \"", "int evil")) for text in cuda.split("\n"))
    assert not any(text.endswith("\\") for text in cuda.split("\n"))


def test_file_names_are_percent_encoded_where_they_must_be():
    assert file_name("samples/add.py") == "samples/add.py"
    assert file_name("my kernels/a-b_c.py") == "my kernels/a-b_c.py"
    assert file_name('a"b\\c?d%e\n\u00e9') == "a%22b%5Cc%3Fd%25e%0A%C3%A9"


# ---- what nvcc is given ----------------------------------------------------------------------------


def test_the_build_repeats_each_directive_before_every_line_and_makes_names_absolute():
    source = "\n".join([
        "// mytriton-kernel: {}",
        "#include <x.h>",
        '#line 7 "samples/add.py"',
        "void f() {",
        "",
        '  #line 11 "samples/add.py"',
        "  int a = 1;",
        "  int b = 2;",
        '#line 3 "/abs/helper.py"',
        "  int c = 3;",
        "}",
    ])
    assert for_nvcc(source, "/home/u/my project%").split("\n") == [
        "// mytriton-kernel: {}",
        "#include <x.h>",
        '#line 7 "/home/u/my project%25/samples/add.py"',
        "void f() {",
        "",
        '#line 11 "/home/u/my project%25/samples/add.py"',
        "  int a = 1;",
        '#line 11 "/home/u/my project%25/samples/add.py"',
        "  int b = 2;",
        '#line 3 "/abs/helper.py"',
        "  int c = 3;",
        '#line 3 "/abs/helper.py"',
        "}",
    ]
    assert for_nvcc(source, "/").split("\n")[2] == '#line 7 "/samples/add.py"'


def test_the_build_leaves_a_continued_line_and_a_text_without_directives_alone():
    assert for_nvcc("int a;\nint b;\n", "/w") == "int a;\nint b;\n"
    continued = '#line 2 "k.py"\n#define M(x) \\\n  (x)\nint a = M(1);'
    assert for_nvcc(continued, "/w").split("\n") == [
        '#line 2 "/w/k.py"', "#define M(x) \\", "  (x)", '#line 2 "/w/k.py"', "int a = M(1);",
    ]


# ---- nvcc's line info --------------------------------------------------------------------------------


def ptx_files(ptx: str) -> dict[str, str]:
    return dict(re.findall(r'^\s*\.file\s+(\d+) "([^"]*)"', ptx, re.M))


@pytest.mark.nvcc
def test_the_ptx_names_the_python_file_and_its_lines(cache, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)  # where `mytriton compile samples/add.py` runs from
    scratch = tmp_path / "scratch"  # where nvcc runs
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    ptx = nvcc.compile_ptx(sample_cuda("add"))
    files = ptx_files(ptx)
    (number,) = [n for n, name in files.items() if name == str(ADD)]
    lines = {int(line) for line in re.findall(rf"^\s*\.loc\s+{number} (\d+) ", ptx, re.M)}
    assert {ADD_LINES["load x"], ADD_LINES["load y"], ADD_LINES["store"]} <= lines
    assert lines - {0} <= set(ADD_LINES.values())  # line 0: code cicc made up (LLVM's "no line")
    assert str(scratch) not in ptx and nvcc.SOURCE_NAME not in files.values()


@pytest.mark.nvcc
def test_the_cubins_line_table_maps_instructions_to_python_lines(cache, monkeypatch):
    monkeypatch.chdir(ROOT)
    rows = line_rows(nvcc.compile_cubin(sample_cuda("add")))
    assert {file for _, file, _ in rows} == {str(ADD)}
    lines = {line for _, _, line in rows}
    assert set(ADD_LINES.values()) - {ADD_LINES["def"]} <= lines <= set(ADD_LINES.values())


def disassembler() -> str | None:
    """nvdisasm, on PATH or beside nvcc (some toolkits ship without it)."""
    found = shutil.which("nvdisasm")
    if found is None:
        try:
            beside = Path(nvcc.find_nvcc()).resolve().parent / "nvdisasm"
        except Exception:
            return None
        found = str(beside) if beside.exists() else None
    return found


@pytest.mark.nvcc
def test_nvdisasm_shows_the_loads_and_the_store_on_their_python_lines(cache, monkeypatch, tmp_path):
    tool = disassembler()
    if tool is None:
        pytest.skip("nvdisasm is not installed (the DWARF test above reads the same table)")
    monkeypatch.chdir(ROOT)
    cubin = tmp_path / "add.cubin"
    cubin.write_bytes(nvcc.compile_cubin(sample_cuda("add")))
    listing = subprocess.run([tool, "-g", str(cubin)], capture_output=True, text=True, check=True).stdout
    at: dict[str, set[int]] = {"LDG": set(), "STG": set()}
    current = None
    for text in listing.split("\n"):
        found = re.search(r'//## File "([^"]*)", line (\d+)', text)
        if found:
            assert found.group(1) == str(ADD)
            current = int(found.group(2))
        for opcode in at:
            if re.search(rf"\b{opcode}\b", text):
                at[opcode].add(current)
    assert at == {"LDG": {ADD_LINES["load x"], ADD_LINES["load y"]}, "STG": {ADD_LINES["store"]}}


def without_line_info(ptx: str) -> str:
    body = ptx.split("\t.section\t.debug_str")[0]
    return "\n".join(text for text in body.split("\n")
                     if not re.match(r"\s*(\.loc|\.file|\$L__tmp|// (begin|end) inline)", text))


@pytest.mark.nvcc
def test_the_directives_change_no_instruction(cache):
    # softmax: unrolled slot loops (a directive between `#pragma unroll` and
    # its loop), shuffles, barriers; the same PTX but for the line info.
    cuda = sample_cuda("softmax")
    plain = "\n".join(text for text in cuda.split("\n") if not DIRECTIVE.match(text))
    assert plain != cuda
    with_lines, without = (nvcc.compile_ptx(text) for text in (cuda, plain))
    assert ".loc" in with_lines and "softmax.py" in with_lines
    assert without_line_info(with_lines) == without_line_info(without)


@pytest.mark.nvcc
def test_one_kernel_from_two_files_builds_twice_each_naming_its_own(cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = ADD.read_text()
    first = compiler.compile_source(source, "one/add.py", "cuda", Options())
    second = compiler.compile_source(source, "two/add.py", "cuda", Options())
    ptx = [nvcc.compile_ptx(text) for text in (first, second, first)]
    assert str(tmp_path / "one/add.py") in ptx_files(ptx[0]).values()
    assert str(tmp_path / "two/add.py") in ptx_files(ptx[1]).values()
    assert ptx[2] == ptx[0]
    assert len(list(cache.glob("*.ptx"))) == 2  # (an NVRTC build also keeps its cubins)
    # One relative name from another directory is another file: another entry.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert str(elsewhere / "one/add.py") in ptx_files(nvcc.compile_ptx(first)).values()
    assert len(list(cache.glob("*.ptx"))) == 3
