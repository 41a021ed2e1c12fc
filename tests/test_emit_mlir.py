"""The MLIR back end: ``--emit=mlir`` and ``mytriton emit-mlir``
write upstream MLIR that xDSL parses and verifies, for every sample, the
control-flow and shape-op kernels, generated kernels and a kernel calling
every tl function; each op keeps its source location; what the back end
does not cover is a located error. The mapping of single ops is checked as
text by the lit tests in tests/lit/emit-mlir/."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT, SAMPLES, compile_text, kernel_source, sample_names, sample_options
from control_flow_kernels import CASES
from fuzz_kernels import FAMILIES, generate_kernel
from mlir_check import op_names, parse_and_verify
from mytriton import compiler
from mytriton.backends.mlir import ops as mlir_ops
from mytriton.backends.mlir.text import float_literal, int_literal, mlir_string
from mytriton.diagnostics import CompileError
from mytriton.ir import math_functions, opdefs
from mytriton.language.extra import libdevice
from mytriton.compiler import Options
from test_cli_chain import cli, ok
from test_op_registry import EVERY_FUNCTION
from test_shape_ops import M, N, REFERENCES
from xdsl.utils.exceptions import VerifyException

pytest.importorskip("xdsl")


def sample_mlir(name: str) -> str:
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, f"samples/{name}.py", "mlir", Options(**sample_options(name)))


# ---- xDSL reads and verifies every output -----------------------------------------------------


@pytest.mark.parametrize("name", sample_names())
def test_xdsl_verifies_every_sample(name):
    module = parse_and_verify(sample_mlir(name))
    assert {"gpu.module", "gpu.func", "gpu.return"} <= op_names(module)


@pytest.mark.parametrize("name", sorted(CASES))
def test_xdsl_verifies_every_control_flow_kernel(name):
    case = CASES[name]
    text = compile_text(kernel_source(case.source), "mlir", defines=case.defines, signature=case.signature)
    parse_and_verify(text)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_xdsl_verifies_every_shape_op_kernel(name):
    text = compile_text(kernel_source(REFERENCES[name][0]), "mlir", defines={"M": M, "N": N})
    parse_and_verify(text)


# The MLIR back end refuses a reduce or scan with a combine region (docs/backends.md), which scan kernels are made of.
@pytest.mark.parametrize("family", [family for family in FAMILIES if family != "scan"])
@pytest.mark.parametrize("seed", range(3))
def test_xdsl_verifies_generated_kernels(family, seed):
    kernel = generate_kernel(seed, family)
    text = compile_text(kernel.source, "mlir", file=kernel.file, defines=kernel.defines,
                        signature=kernel.signature)
    parse_and_verify(text)


def without_host_talk(source: str) -> str:
    """The kernel without what the MLIR back end refuses: device prints and assertions, histograms, gathers,
    inline asm."""
    refused = ("device_assert", "device_print", "tl.histogram", "tl.gather", "inline_asm")
    return "\n".join(line for line in source.splitlines() if not any(name in line for name in refused))


def test_xdsl_verifies_a_kernel_calling_every_tl_function_but_the_device_prints():
    math = " + ".join(f"tl.{name}(x)" for name in opdefs.MATH_FUNCTIONS
                      if not math_functions.BY_NAME[name].mlir_refused)
    source = kernel_source(without_host_talk(EVERY_FUNCTION.format(math=math)))
    text = compile_text(source, "mlir", defines={"BLOCK": 16}, signature="*fp32, *fp32, i32, *i32")
    module = parse_and_verify(text)
    assert {"math.exp", "math.erf", "math.fma", "math.rsqrt", "scf.for", "memref.atomic_rmw",
            "memref.generic_atomic_rmw", "memref.atomic_yield", "gpu.barrier"} <= op_names(module)


LIBDEVICE_KERNEL = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.5)
    y = {calls}
    tl.store(out_ptr + i, y, mask=m)
"""
MLIR_REFUSED_LIBDEVICE = tuple(row.name for row in math_functions.TABLE if row.mlir_refused)


@pytest.mark.parametrize("bits,signature", [(32, "*fp32, *fp32, i32"), (64, "*fp64, *fp64, i32")])
def test_xdsl_verifies_every_libdevice_function_upstream_mlir_has(bits, signature):
    calls = []
    for name, (op, signatures) in sorted(libdevice.SIGNATURES.items()):
        if op in MLIR_REFUSED_LIBDEVICE or not any(s[0].is_float and s[0].bits == bits for s in signatures):
            continue
        call = f"libdevice.{name}({', '.join(['x'] * len(signatures[0]))})"
        answers_float = op not in math_functions.BY_NAME or math_functions.BY_NAME[op].answers == "float"
        calls.append(call if answers_float else f"{call}.to(tl.float{bits})")
    source = "from mytriton.language.extra import libdevice\n" + kernel_source(
        LIBDEVICE_KERNEL.format(calls=" + ".join(calls)))
    module = parse_and_verify(compile_text(source, "mlir", defines={"BLOCK": 8}, signature=signature))
    assert {"math.log1p", "math.powf", "math.roundeven", "math.atan2", "math.copysign", "arith.remf",
            "arith.cmpf", "arith.fptosi"} <= op_names(module)


@pytest.mark.parametrize("name", MLIR_REFUSED_LIBDEVICE)
def test_a_libdevice_function_without_an_upstream_op_is_a_stated_refusal(name):
    call = f"libdevice.{name}({', '.join(['x'] * len(libdevice.SIGNATURES[name][1][0]))})"
    source = "from mytriton.language.extra import libdevice\n" + kernel_source(LIBDEVICE_KERNEL.format(calls=call))
    with pytest.raises(CompileError, match=rf"libdevice's {name} has no upstream MLIR op"):
        compile_text(source, "mlir", file="k.py", defines={"BLOCK": 8}, signature="*fp32, *fp32, i32")


@pytest.mark.parametrize("name", ("int_to_ptr", "ptr_to_int"))
def test_pointers_from_memory_are_a_stated_refusal(name):
    assert "pointers from memory" in mlir_ops.REFUSED[name]


ATOMICS = """
@mytriton.jit
def k(f_ptr, d_ptr, i_ptr, u_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(f_ptr + i, mask=m, other=0.0)
    a = tl.atomic_max(f_ptr + i, x, mask=m) + tl.atomic_min(f_ptr + i, x) + tl.atomic_cas(f_ptr + i, x, 1.0)
    b = tl.atomic_add(d_ptr + i, 1.0, mask=m) + tl.atomic_xchg(d_ptr + i, 0.5) + tl.atomic_cas(d_ptr, 0.0, 1.0)
    c = tl.atomic_max(u_ptr + i, 3) + tl.atomic_min(u_ptr + i, 1) + tl.atomic_xor(u_ptr + i, 7)
    e = tl.atomic_add(i_ptr + i, 1) + tl.atomic_max(i_ptr + i, 2) + tl.atomic_and(i_ptr + i, 3)
    e += tl.atomic_or(i_ptr + i, 4) + tl.atomic_cas(i_ptr + i, 1, 2)
    tl.store(f_ptr + i, a + b.to(tl.float32) + c.to(tl.float32) + e.to(tl.float32), mask=m)
"""


def test_xdsl_verifies_atomics_of_every_kind_and_dtype():
    text = compile_text(kernel_source(ATOMICS), "mlir", defines={"BLOCK": 4},
                        signature="*fp32, *fp64, *i32, *u32, i32")
    module = parse_and_verify(text)
    kinds = {int(k) for k in re.findall(r'"memref.atomic_rmw"\([^)]*\) <\{kind = (\d+) : i64\}>', text)}
    spelled = {name for name, number in mlir_ops.ATOMIC_RMW_KINDS.items() if number in kinds}
    assert spelled == {"maxnumf", "minnumf", "addf", "assign", "maxu", "minu", "xori", "addi", "maxs", "andi", "ori"}
    assert "memref.generic_atomic_rmw" in op_names(module)


def test_a_float_atomic_cas_compares_bits():
    text = compile_text(kernel_source(ATOMICS), "mlir", defines={"BLOCK": 4},
                        signature="*fp32, *fp64, *i32, *u32, i32")
    body = text[text.index('"memref.generic_atomic_rmw"'):]
    body = body[:body.index('"memref.atomic_yield"')]
    assert re.search(r"arith.bitcast %\d+ : f32 to i32", body)
    assert re.search(r"arith.cmpi eq, %\d+, %\d+ : i32", body)


def test_a_masked_atomic_is_guarded_and_gives_zero_where_the_mask_is_off():
    text = compile_text(kernel_source(ATOMICS), "mlir", defines={"BLOCK": 4},
                        signature="*fp32, *fp64, *i32, *u32, i32")
    guarded = re.search(r"scf.if %\d+ -> \(f64\) \{\n(.*\n){1,2}.*\"memref.atomic_rmw\".*<\{kind = 0 : i64\}>.*\n"
                        r".*scf.yield.*\n.*\} else \{\n.*arith.constant 0.0 : f64", text)
    assert guarded, text


def test_xdsl_verifies_unsigned_narrow_and_half_precision_types():
    source = kernel_source("""
    @mytriton.jit
    def k(a_ptr, b_ptr, h_ptr, out_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + i)
        b = tl.load(b_ptr + i)
        h = tl.load(h_ptr + i)
        q = (a // (b | 1)) % 7 + (a >> 2) + tl.where(a < b, a, b) + tl.sum(b.to(tl.uint8), axis=0)
        f = tl.exp(h) + h.to(tl.bfloat16).to(tl.float16) + tl.max(h, axis=0)
        tl.store(out_ptr + i, q.to(tl.float32) + f.to(tl.float32) + (~(a > 3)).to(tl.float32))
    """)
    text = compile_text(source, "mlir", defines={"BLOCK": 32}, signature="*u32, *u32, *fp16, *fp32")
    module = parse_and_verify(text)
    assert {"arith.divui", "arith.remui", "arith.shrui", "arith.extui", "arith.truncf"} <= op_names(module)


# ---- what the text shows -------------------------------------------------------------------


def test_matmul_runtime_k_shows_its_k_loop_as_scf_for_with_iter_args():
    text = sample_mlir("matmul_runtime_k")
    assert re.search(r"scf\.for %\d+ = %\d+ to %K step %\d+ iter_args\(%\d+ = %\d+\) -> \(vector<32x32xf32>\) : i32",
                     text), text


def test_staged_matmul_keeps_its_shared_buffers_and_barriers():
    module = parse_and_verify(sample_mlir("matmul"))
    assert {"memref.global", "memref.get_global", "gpu.barrier", "math.fma"} <= op_names(module)


def test_gathered_rows_read_their_index_then_scale_it_in_64_bits():
    # Liger's fused MoE spelling (tests/triton_style/matmul_gathered_rows.py): a gathered, int64 row.
    path = ROOT / "tests" / "triton_style" / "matmul_gathered_rows.py"
    text = compiler.compile_source(path.read_text(), "matmul_gathered_rows.py", "mlir", Options(
        kernel="moe_up_proj", signature="*fp16, *fp16, *i32, *i32, *i32, *i32, *fp16, i32, i32, i32, i32, i32, i32",
        defines={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}))
    parse_and_verify(text)
    index = re.search(r"(%\d+) = memref\.load %token_ptr\[%\d+\] : memref<\?xi32>", text)
    assert index, text
    widened = re.search(rf"(%\d+) = arith\.extsi {index.group(1)} : i32 to i64", text)
    assert widened and re.search(rf"arith\.muli {widened.group(1)}, %\d+ : i64", text)


def test_every_op_carries_its_source_location():
    for line in sample_mlir("softmax").splitlines():
        stripped = line.strip()
        if stripped.startswith(("//", "^bb0")) or stripped.endswith("{"):
            continue  # comments, block headers and region openers (their op's loc follows its '}')
        assert re.search(r'loc\("samples/softmax\.py":\d+:\d+\)$', stripped), line


@pytest.mark.parametrize("name, spelled", [
    ('dir "quoted"\\ tab\tx.py', r'"dir \"quoted\"\\ tab\09x.py"'),
    ("dossier/né.py", '"dossier/né.py"'),
])
def test_a_file_name_is_escaped_in_mlir_string_syntax(name, spelled):
    # (xDSL reads a string holding both an escape and a non-ASCII character as
    # bytes, which no location takes: hence two names.)
    source = (SAMPLES / "add.py").read_text()
    text = compiler.compile_source(source, name, "mlir", Options())
    assert f"loc({spelled}:9:15)" in text
    parse_and_verify(text)


def test_the_printing_helpers_spell_literals_as_mlir_reads_them():
    assert mlir_string('a"b\\c\n') == r'"a\"b\\c\0A"'
    assert float_literal(1e-5, "f32") == "9.999999747378752e-06"  # the f32 nearest 1e-5, exactly
    assert float_literal(2.0, "f64") == "2.0"
    assert float_literal(1e300, "f32") == "0x7F800000"
    assert float_literal(float("-inf"), "f16") == "0xFC00"
    assert float_literal(float("nan"), "bf16") == "0x7FC0"
    assert float_literal(1e-20, "f64") == "1.0e-20"
    assert int_literal(4294967295, 32) == "-1"
    assert int_literal(-129, 8) == "127"


def test_emit_mlir_reads_staged_ssa_as_compile_does(tmp_path):
    staged = ok(cli("compile", "samples/matmul.py", "--emit=staged", "--num-stages", "1"))
    chained = ok(cli("emit-mlir", stdin=staged))
    assert chained == ok(cli("compile", "samples/matmul.py", "--emit=mlir"))


def test_a_pipelined_k_loop_is_a_located_error_in_emit_mlir():
    staged = ok(cli("compile", "samples/matmul.py", "--emit=staged"))
    assert b"async_copy_to_shared" in staged
    result = cli("emit-mlir", stdin=staged)
    assert result.returncode == 1 and b"pipelined K loops are not covered" in result.stderr


def test_emit_mlir_reads_laid_out_ssa_ignoring_its_layouts():
    laid_out = ok(cli("compile", "samples/outer.py", "--emit=layouts"))
    assert b"convert_layout" in laid_out
    parse_and_verify(ok(cli("emit-mlir", stdin=laid_out)).decode())


# ---- what the back end does not cover ------------------------------------------------------


@pytest.mark.parametrize("name", opdefs.OPS)
def test_every_op_has_an_mlir_lowering_or_a_stated_refusal(name):
    assert mlir_ops.lowering(name) is not None
    if mlir_ops.lowering(name) == "refused":
        assert mlir_ops.REFUSED[name]


def test_a_refused_op_is_a_located_error_and_writes_nothing(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(kernel_source("""
    @mytriton.jit
    def k(x_ptr):
        x = tl.load(x_ptr)
        tl.device_print("x", x)
    """))
    out = tmp_path / "k.mlir"
    result = cli("compile", str(kernel), "--emit=mlir", "-o", str(out))
    assert result.returncode == 1
    assert f"{kernel}:7:5: error: printing from the device is not covered".encode() in result.stderr
    assert b"Traceback" not in result.stderr
    assert not out.exists()


def test_a_pointer_from_two_parameters_is_a_located_error():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, y_ptr, out_ptr, n):
        p = tl.where(n > 0, x_ptr, y_ptr)
        tl.store(out_ptr, tl.load(p))
    """)
    with pytest.raises(CompileError) as info:
        compile_text(source, "mlir", file="k.py")
    assert str(info.value).startswith("k.py:7:23: error: the MLIR back end needs each pointer to come from one "
                                      "pointer parameter; this one may come from: x_ptr, y_ptr")


LIT = SAMPLES.parent / "tests" / "lit" / "emit-mlir"


@pytest.mark.parametrize("path", sorted(p.name for p in LIT.glob("*.ssa") if "refused" not in p.name))
def test_xdsl_verifies_what_the_lit_tests_check(path):
    text = (LIT / path).read_text()
    parse_and_verify(compiler.emit_mlir(compiler.verify(compiler.read_ssa(text, path))))


def test_the_checker_rejects_a_generic_atomic_rmw_whose_body_does_not_yield_the_element_type():
    bad = '''
    func.func @f(%m: memref<?xi32>, %i: index) -> i32 {
      %r = "memref.generic_atomic_rmw"(%m, %i) ({
      ^bb0(%cur: i32):
        %w = arith.extsi %cur : i32 to i64
        "memref.atomic_yield"(%w) : (i64) -> ()
      }) : (memref<?xi32>, index) -> i32
      func.return %r : i32
    }
    '''
    with pytest.raises(VerifyException, match="atomic_yield of the element type"):
        parse_and_verify(bad)
