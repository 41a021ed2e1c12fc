"""Names from the input never change the meaning of the generated CUDA.

Kernel and parameter names that C, CUDA, the headers or the emitter's own
locals already use are renamed in the C (the kernel's symbol then travels in
the JSON header, for the launcher); the source file's name, which IR headers
carry, is escaped wherever it is printed into a comment or the JSON header.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import ROOT, compile_text, kernel_source, ssa_of
from mytriton.backends.cuda.emitter import HEADER_PREFIX, c_comment
from mytriton.backends.cuda.line_directives import DIRECTIVE, file_name
from mytriton import compiler
from mytriton.backends.cuda.names import kernel_symbol, param_c_names
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.ir.text_common import format_string

ADD_SSA = (ROOT / "tests" / "snapshots" / "add.ssa").read_text()

# Parameters named after CUDA macros, built-ins, functions the generated code
# calls, C keywords, the emitter's own locals, a reserved and a non-ASCII name.
CLASHING_PARAMS = kernel_source("""
    @mytriton.jit
    def KERNEL(INFINITY, NAN, threadIdx, min, max, float, smem, L0_p0, _x, warpSize, k, v3, t1, linux, xé,
               BLOCK: tl.constexpr = 128):
        offs = tl.arange(0, BLOCK)
        mask = offs < warpSize
        a = tl.load(INFINITY + offs, mask=mask) * k + tl.load(NAN + offs, mask=mask)
        b = tl.load(threadIdx + offs, mask=mask) + tl.load(min + offs, mask=mask) * v3
        tl.store(max + offs, a + b, mask=mask)
        tl.store(float + offs, a - t1, mask=mask)
        tl.store(smem + offs, b * linux, mask=mask)
        tl.store(L0_p0 + offs, a * xé, mask=mask)
        tl.store(_x, tl.sum(tl.where(mask, a + b, 0.0), axis=0))
""")

CLASHING_KERNEL_NAMES = ["sqrt", "exp", "main", "__syncthreads", "float", "threadIdx", "min", "printf", "ké"]


def header(cuda: str) -> dict:
    first, _ = cuda.split("\n", 1)
    assert first.startswith(HEADER_PREFIX)
    return json.loads(first[len(HEADER_PREFIX):])


def signature(cuda: str) -> str:
    return next(line for line in cuda.splitlines() if line.startswith('extern "C"'))


# ---- the renaming rules ---------------------------------------------------------------------


def test_ordinary_names_are_kept():
    assert param_c_names(["x_ptr", "out_ptr", "n", "M", "stride_am"]) == ["x_ptr", "out_ptr", "n", "M", "stride_am"]
    assert kernel_symbol("add_kernel") == "add_kernel"


def test_clashing_parameter_names_get_distinct_positional_names():
    names = ["INFINITY", "k", "smem", "v3", "L0_p0", "_x", "__y", "float", "xé", "p0_INFINITY"]
    renamed = param_c_names(names)
    assert renamed == ["p0_INFINITY", "p1_k", "p2_smem", "p3_v3", "p4_L0_p0", "p5_x", "p6_y", "p7_float",
                       "p8_x_u00e9", "p9_p0_INFINITY"]
    assert len(set(renamed)) == len(renamed)


@pytest.mark.parametrize("name", CLASHING_KERNEL_NAMES)
def test_clashing_kernel_name_gets_a_prefixed_symbol(name):
    symbol = kernel_symbol(name)
    assert symbol.startswith("mytriton_") and re.fullmatch(r"[A-Za-z0-9_]+", symbol) and "__" not in symbol


# ---- generated CUDA ---------------------------------------------------------------------------


def test_renamed_symbol_is_in_the_header_and_the_definition():
    cuda = compile_text(CLASHING_PARAMS.replace("KERNEL", "sqrt"), "cuda")
    assert header(cuda)["kernel"] == "sqrt"
    assert header(cuda)["symbol"] == "mytriton_sqrt"
    assert " mytriton_sqrt(float* p0_INFINITY, " in signature(cuda)


def test_kept_symbol_is_not_repeated_in_the_header():
    assert "symbol" not in header(compile_text(CLASHING_PARAMS.replace("KERNEL", "kern"), "cuda"))


def clashing_args(seed: int) -> list:
    """Arguments of CLASHING_PARAMS in order: four inputs, five outputs, six scalars."""
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-1, 1, 128).astype(np.float32) for _ in range(4)]
    outputs = [np.zeros(128, np.float32) for _ in range(4)] + [np.zeros(1, np.float32)]
    return [*inputs, *outputs, 100, 3, 2, 5, 7, -4]


def check_clashing_results(args: list) -> None:
    x0, x1, x2, x3, out0, out1, out2, out3, total, n, k, v3, t1, linux, xe = args
    a = x0[:n] * k + x1[:n]
    b = x2[:n] + x3[:n] * v3
    np.testing.assert_allclose(out0[:n], a + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out1[:n], a - t1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out2[:n], b * linux, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out3[:n], a * xe, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total[0], np.sum(a + b), rtol=1e-5)


def test_kernel_with_clashing_parameter_names_computes_the_same():
    # The renaming is only in the C: the kernel still means what it says.
    args = clashing_args(7)
    run_kernel(ssa_of(CLASHING_PARAMS.replace("KERNEL", "kern"), optimized=True), (1, 1, 1), args)
    check_clashing_results(args)


@pytest.mark.gpu
def test_kernel_with_a_renamed_symbol_launches_on_the_gpu():
    from mytriton.runtime.cuda_driver import CudaKernel

    args = clashing_args(11)
    CudaKernel(compile_text(CLASHING_PARAMS.replace("KERNEL", "sqrt"), "cuda")).launch((1,), args)
    check_clashing_results(args)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", CLASHING_KERNEL_NAMES)
def test_kernel_named_after_a_cuda_name_builds(name):
    ptx = compile_text(CLASHING_PARAMS.replace("KERNEL", name), "ptx")
    assert re.findall(r"\.entry (\w+)\(", ptx) == [kernel_symbol(name)]


# ---- the source file's name in comments and the JSON header --------------------------------

HOSTILE_FILES = [
    'k.py\n}\nextern "C" __global__ void injected(float* p) { *p = 1.0f; }\n//',
    "k.py\r#include </etc/passwd>\r",
    "dir\\",
    "k.py\\\n",
    "k.py??/",
    "k\u2028.py\x1b[2J\u00e9\U0001F600",
]


def ssa_from_file(file: str) -> str:
    return ADD_SSA.replace('@"samples/add.py":', f"@{format_string(file)}:", 1)


@pytest.mark.parametrize("file", HOSTILE_FILES)
def test_file_name_in_the_ir_header_round_trips(file):
    text = ssa_from_file(file)
    kernel = parse_kernel(text, "k.ssa")
    assert kernel.loc.file == file
    assert print_kernel(kernel) == text


def emit_cuda(kernel):
    return compiler.to_cuda(kernel, compiler.Options())


@pytest.mark.parametrize("file", HOSTILE_FILES)
def test_file_name_adds_no_line_and_no_code_to_the_cuda(file):
    cuda = emit_cuda(parse_kernel(ssa_from_file(file), "k.ssa"))
    normal = emit_cuda(parse_kernel(ADD_SSA, "k.ssa"))
    assert len(cuda.splitlines()) == len(normal.splitlines())
    # The #line directives name it percent-encoded (line_directives.py); nothing else changes.
    assert cuda.split("\n", 2)[2] == normal.split("\n", 2)[2].replace('"samples/add.py"', f'"{file_name(file)}"')
    assert header(cuda)["source"] == file
    comment = cuda.splitlines()[1]
    assert comment.isascii() and not comment.endswith("\\") and "??" not in comment
    directives = [text for text in cuda.splitlines() if text.lstrip().startswith("#line")]
    assert directives and all(DIRECTIVE.match(text) and text.isascii() for text in directives)


@pytest.mark.nvcc
def test_file_name_with_code_builds_to_one_kernel():
    cuda = emit_cuda(parse_kernel(ssa_from_file(HOSTILE_FILES[0]), "k.ssa"))
    from mytriton.backends.cuda.nvcc import compile_ptx

    assert re.findall(r"\.entry (\w+)\(", compile_ptx(cuda, "sm_90")) == ["add_kernel"]


def test_comment_text_keeps_plain_names_and_escapes_the_rest():
    assert c_comment("samples/add.py") == "samples/add.py"
    assert c_comment("a\\\nb?\u00e9") == "a\\x5c\\x0ab\\x3f\\xe9"


def test_control_characters_in_a_file_name_are_printed_as_escapes_in_the_ir():
    text = ssa_from_file("k\x1b[2J\u2028\x00.py")
    assert text.split("\n", 1)[0].endswith('@"k\\u001b[2J\\u2028\\u0000.py":7:1 sha256="90bec116c5a1bfe7" {')
    assert parse_kernel(text, "k.ssa").loc.file == "k\x1b[2J\u2028\x00.py"


@pytest.mark.parametrize("escape", ["\\u12", "\\u12g4", "\\U00110000", "\\u+123"])
def test_malformed_unicode_escape_in_a_string_is_a_located_error(escape):
    text = ADD_SSA.replace('@"samples/add.py":', f'@"k{escape}.py":', 1)
    with pytest.raises(CompileError, match="bad escape") as caught:
        parse_kernel(text, "k.ssa")
    assert str(caught.value.loc).startswith("k.ssa:1:")


NON_ASCII = kernel_source("""
    @mytriton.jit
    def ké(x_ptr, ñ, BLOCK: tl.constexpr = 128):
        offs = tl.arange(0, BLOCK)
        é = tl.load(x_ptr + offs, mask=offs < ñ)
        tl.store(x_ptr + offs, é + é, mask=offs < ñ)
""")


def test_non_ascii_names_survive_every_text_stage():
    from mytriton.ir.tree_text import parse_tree, print_tree

    tree_text = compile_text(NON_ASCII, "tree")
    assert "let $é = " in tree_text
    assert print_tree(parse_tree(tree_text)) == tree_text
    ssa_text = compile_text(NON_ASCII, "ssa")
    assert ssa_text.startswith("kernel ké(x_ptr: ptr<f32>, ñ: i32)")
    assert print_kernel(parse_kernel(ssa_text)) == ssa_text
    assert " mytriton_k_u00e9(float* x_ptr, int p1_u00f1) {" in signature(compile_text(NON_ASCII, "cuda"))
