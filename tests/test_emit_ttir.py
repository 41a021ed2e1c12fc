"""The TTIR back end: ``--emit=ttir`` and ``mytriton
emit-ttir`` write optimised SSA in Triton's ``tt`` dialect. Where Triton is
installed, ``triton.compile`` of the text builds a cubin for sm_90 (no GPU
needed) for every sample, the control-flow and shape-op kernels, generated
kernels and a kernel calling every tl function; those tests skip without
Triton (``tests/ttir_check.py``). The text-level tests run everywhere; the
mapping of single ops is checked as text by the lit tests in tests/lit/emit-ttir/."""
from __future__ import annotations

import re

import pytest

from conftest import SAMPLES, compile_text, kernel_source, sample_names, sample_options
from control_flow_kernels import CASES
from fuzz_kernels import FAMILIES, generate_kernel
from mytriton import compiler
from mytriton.backends.ttir import ops as ttir_ops
from mytriton.ir import opdefs
from mytriton.language.extra import libdevice
from mytriton.compiler import Options
from test_cli_chain import cli, ok
from test_op_registry import EVERY_FUNCTION
from test_shape_ops import M, N, REFERENCES
from ttir_check import triton_compile


def sample_ttir(name: str, **options) -> str:
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, f"samples/{name}.py", "ttir",
                                   Options(**{**sample_options(name), **options}))


# ---- real Triton builds a cubin from every output (skipped without Triton) ------------------


@pytest.mark.parametrize("name", sample_names())
def test_triton_compiles_every_sample_to_a_cubin(name, tmp_path):
    compiled = triton_compile(sample_ttir(name), tmp_path)
    assert compiled.asm["cubin"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_compiles_every_control_flow_kernel(name, tmp_path):
    case = CASES[name]
    text = compile_text(kernel_source(case.source), "ttir", defines=case.defines, signature=case.signature)
    assert triton_compile(text, tmp_path).asm["cubin"]


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_triton_compiles_every_shape_op_kernel(name, tmp_path):
    text = compile_text(kernel_source(REFERENCES[name][0]), "ttir", defines={"M": M, "N": N})
    assert triton_compile(text, tmp_path).asm["cubin"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", range(2))
def test_triton_compiles_generated_kernels(family, seed, tmp_path):
    kernel = generate_kernel(seed, family)
    text = compile_text(kernel.source, "ttir", file=kernel.file, defines=kernel.defines,
                        signature=kernel.signature)
    assert triton_compile(text, tmp_path).asm["cubin"]


def test_triton_compiles_a_kernel_calling_every_tl_function(tmp_path):
    math = " + ".join(f"tl.{name}(x)" for name in opdefs.MATH_FUNCTIONS)
    source = kernel_source(EVERY_FUNCTION.format(math=math))
    text = compile_text(source, "ttir", defines={"BLOCK": 16}, signature="*fp32, *fp32, i32, *i32")
    spelled = set(re.findall(r"[a-z_]+\.[a-z_.]+(?= )", text))
    assert {"math.exp", "math.erf", "math.fma", "tt.extern_elementwise", "scf.for", "tt.print", "tt.assert",
            "tt.atomic_rmw", "tt.atomic_cas", "gpu.barrier"} <= spelled
    assert triton_compile(text, tmp_path).asm["cubin"]


LIBDEVICE_KERNEL = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.5)
    y = {calls}
    tl.store(out_ptr + i, y, mask=m)
"""


def libdevice_calls(dtype: str) -> str:
    bits = 64 if dtype == "float64" else 32
    calls = []
    for name, (_, signatures) in sorted(libdevice.SIGNATURES.items()):
        arity = len(signatures[0])
        if name in ("abs", "fma", "div_rn", "fmax", "fmin"):  # tl's own ops, covered elsewhere
            continue
        if not any(s[0].is_float and s[0].bits == bits for s in signatures):
            continue
        call = f"libdevice.{name}({', '.join(['x'] * arity)})"
        if name in ("isnan", "isinf", "signbit", "llrint"):
            call = f"{call}.to(tl.{dtype})"
        calls.append(call)
    return " + ".join(calls)


@pytest.mark.parametrize("dtype,signature", [("float32", "*fp32, *fp32, i32"), ("float64", "*fp64, *fp64, i32")])
def test_triton_compiles_every_libdevice_function_as_extern_elementwise(dtype, signature, tmp_path):
    calls = libdevice_calls(dtype)
    source = "from mytriton.language.extra import libdevice\n" + kernel_source(LIBDEVICE_KERNEL.format(calls=calls))
    text = compile_text(source, "ttir", defines={"BLOCK": 64}, signature=signature)
    symbols = {"float32": ("erfinvf", "log1pf", "powf", "isnanf", "signbitf", "llrintf", "fast_fdividef"),
               "float64": ("erfinv", "log1p", "pow", "isnand", "signbitd", "llrint")}[dtype]
    for symbol in symbols:
        assert f'symbol = "__nv_{symbol}"' in text
    assert triton_compile(text, tmp_path).asm["cubin"]


def test_a_libdevice_predicate_is_its_i32_answer_compared_with_zero():
    source = "from mytriton.language.extra import libdevice\n" + kernel_source(
        LIBDEVICE_KERNEL.format(calls="tl.where(libdevice.isnan(x), 1.0, x)"))
    text = compile_text(source, "ttir", defines={"BLOCK": 64}, signature="*fp32, *fp32, i32")
    answer = re.search(r'(%\d+) = tt.extern_elementwise %\d+ \{[^}]*symbol = "__nv_isnanf"\} : '
                       r'\(tensor<64xf32>\) -> tensor<64xi32>', text)
    assert answer, text
    assert re.search(rf"arith.cmpi ne, {answer.group(1)}, %\d+ : tensor<64xi32>", text)


POINTERS_FROM_MEMORY = """
@mytriton.jit
def k(table_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    base = tl.load(table_ptr + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    x = tl.load(base + i)
    tl.store(out_ptr + i, x + (base + 1).to(tl.int64).to(tl.float32))
"""


def test_pointers_from_memory_are_tt_int_to_ptr_and_tt_ptr_to_int(tmp_path):
    text = compile_text(kernel_source(POINTERS_FROM_MEMORY), "ttir", defines={"BLOCK": 64},
                        signature="*i64, *fp32")
    assert re.search(r"tt.int_to_ptr %\d+ : i64 -> !tt.ptr<f32>", text)
    assert re.search(r"tt.ptr_to_int %\d+ : !tt.ptr<f32> -> i64", text)
    assert triton_compile(text, tmp_path).asm["cubin"]


ATOMICS = """
@mytriton.jit
def k(f_ptr, d_ptr, i_ptr, u_ptr, h_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(f_ptr + i, mask=m, other=0.0)
    a = tl.atomic_max(f_ptr + i, x, mask=m) + tl.atomic_min(f_ptr + i, x, mask=m, sem="relaxed", scope="cta")
    b = tl.atomic_add(d_ptr + i, 1.0, mask=m) + tl.atomic_max(d_ptr + i, 2.0) + tl.atomic_xchg(d_ptr + i, 0.5)
    c = tl.atomic_max(u_ptr + i, 3, mask=m) + tl.atomic_min(u_ptr + i, 1) + tl.atomic_cas(u_ptr, 0, 1)
    e = tl.atomic_add(i_ptr + i, 1, sem="release", scope="sys") + tl.atomic_cas(i_ptr + i, 1, 2, sem="acquire")
    h = tl.atomic_add(h_ptr + i, x.to(tl.float16), mask=m)
    tl.store(f_ptr + i, a + b.to(tl.float32) + c.to(tl.float32) + e.to(tl.float32) + h.to(tl.float32), mask=m)
"""


def test_triton_compiles_atomics_of_every_kind_dtype_sem_and_scope(tmp_path):
    text = compile_text(kernel_source(ATOMICS), "ttir", defines={"BLOCK": 64},
                        signature="*fp32, *fp64, *i32, *u32, *fp16, i32")
    assert "tt.atomic_rmw umax, acq_rel, gpu" in text  # u32 max is unsigned
    assert "tt.atomic_rmw min, relaxed, cta" in text   # the f32 min's non-negative half
    assert "tt.atomic_rmw add, release, sys" in text
    assert "tt.atomic_rmw fadd, acq_rel, gpu" in text
    assert "tt.atomic_rmw exch, acq_rel, gpu" in text
    assert re.search(r"tt.atomic_cas acquire, gpu, %\d+, %\d+, %\d+ : \(tensor<64x!tt.ptr<i32>>", text)
    assert triton_compile(text, tmp_path).asm["cubin"]


def test_a_float_atomic_max_is_tritons_signed_max_and_unsigned_min_on_the_bits():
    text = compile_text(kernel_source(ATOMICS), "ttir", defines={"BLOCK": 64},
                        signature="*fp32, *fp64, *i32, *u32, *fp16, i32")
    line = next(i for i, row in enumerate(text.splitlines()) if "tt.atomic_rmw max, acq_rel, gpu" in row)
    pair = text.splitlines()[line:line + 2]
    assert "tensor<64x!tt.ptr<i32>>" in pair[0]
    assert "tt.atomic_rmw umin, acq_rel, gpu" in pair[1]


def test_a_masked_atomic_gives_zero_where_the_mask_is_off():
    text = compile_text(kernel_source(ATOMICS), "ttir", defines={"BLOCK": 64},
                        signature="*fp32, *fp64, *i32, *u32, *fp16, i32")
    old = re.search(r"(%\d+) = tt.atomic_rmw fadd, acq_rel, gpu, %\d+, %\d+, (%\d+) : \(tensor<64x!tt.ptr<f16>>", text)
    assert old, text
    assert re.search(rf"arith.select {old.group(2)}, {old.group(1)}, %\d+ : tensor<64xi1>, tensor<64xf16>", text)


def test_triton_compiles_half_precision_and_integer_dots(tmp_path):
    source = kernel_source("""
    @mytriton.jit
    def k(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + i[:, None] * BLOCK + i[None, :])
        b = tl.load(b_ptr + i[:, None] * BLOCK + i[None, :])
        tl.store(c_ptr + i[:, None] * BLOCK + i[None, :], tl.dot(a, b, out_dtype=tl.float16))
    """)
    text = compile_text(source, "ttir", defines={"BLOCK": 32}, signature="*fp16, *fp16, *fp16")
    assert "tt.dot" in text and "-> tensor<32x32xf32>" in text and "arith.truncf" in text
    assert triton_compile(text, tmp_path).asm["cubin"]
    ints = compile_text(source.replace(", out_dtype=tl.float16", ""), "ttir", defines={"BLOCK": 32},
                        signature="*i8, *i8, *i32")
    assert "tensor<32x32xi8> * tensor<32x32xi8> -> tensor<32x32xi32>" in ints
    assert triton_compile(ints, tmp_path).asm["cubin"]


# ---- what the text shows (everywhere) ------------------------------------------------------


def test_a_kernel_is_a_public_tt_func_with_pointer_and_scalar_arguments():
    text = sample_ttir("add")
    assert ("tt.func public @add_kernel(%arg0: !tt.ptr<f32> loc(\"samples/add.py\":7:1), "
            "%arg1: !tt.ptr<f32> loc(\"samples/add.py\":7:1)") in text
    assert "%arg3: i32 loc(" in text
    assert re.search(r"tt\.get_program_id x : i32", text)
    assert "tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>" in text
    assert re.search(r"tt\.splat %arg0 : !tt\.ptr<f32> -> tensor<256x!tt\.ptr<f32>>", text)
    assert re.search(r"tt\.addptr %\d+, %\d+ : tensor<256x!tt\.ptr<f32>>, tensor<256xi32>", text)
    assert re.search(r"tt\.load %\d+, %\d+ : tensor<256x!tt\.ptr<f32>>", text)
    assert re.search(r"tt\.store %\d+, %\d+, %\d+ : tensor<256x!tt\.ptr<f32>>", text)
    assert text.rstrip().endswith('} loc("samples/add.py":7:1)')


def test_a_divisibility_hint_becomes_the_tt_divisibility_argument_attribute():
    text = sample_ttir("add", signature="*fp32:16, *fp32:16, *fp32:16, i32:16")
    assert "%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc(" in text
    assert "%arg3: i32 {tt.divisibility = 16 : i32} loc(" in text


def test_matmul_is_a_tt_dot_on_register_tiles_in_an_scf_for_with_iter_args():
    text = sample_ttir("matmul")
    assert re.search(r"scf\.for %\d+ = %\d+ to %arg5 step %\d+ iter_args\(%\d+ = %\d+\) -> "
                     r"\(tensor<64x64xf32>\) : i32 \{", text), text
    assert re.search(r"tt\.dot %\d+, %\d+, %\d+, inputPrecision = tf32 : tensor<64x32xf32> \* "
                     r"tensor<32x64xf32> -> tensor<64x64xf32>", text), text
    assert "tt.expand_dims" in text and "tt.broadcast" in text
    assert re.search(r"tt\.load %\d+, %\d+, %\d+ : tensor<64x32x!tt\.ptr<f32>>", text)  # mask and other
    assert "shared" not in text and "barrier" not in text  # Triton stages its own dots


def test_a_dot_keeps_its_input_precision():
    source = (SAMPLES / "matmul.py").read_text().replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")')
    assert "inputPrecision = tf32x3" in compiler.compile_source(source, "m.py", "ttir", Options())
    source = (SAMPLES / "matmul.py").read_text().replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="ieee")')
    assert "inputPrecision = ieee" in compiler.compile_source(source, "m.py", "ttir", Options())


def test_a_reduction_is_a_tt_reduce_with_a_combining_region():
    text = sample_ttir("row_max")
    assert re.search(r'= "tt\.reduce"\(%\d+\) <\{axis = 1 : i32\}> \(\{\n'
                     r'\s+\^bb0\(%\d+: f32 loc\([^)]*\), %\d+: f32 loc\([^)]*\)\):\n'
                     r'\s+%\d+ = arith\.maxnumf %\d+, %\d+ : f32 loc\([^)]*\)\n'
                     r'\s+tt\.reduce\.return %\d+ : f32 loc\([^)]*\)\n'
                     r'\s+\}\) : \(tensor<8x128xf32>\) -> tensor<8xf32>', text), text


def test_every_op_carries_its_source_location():
    for line in sample_ttir("softmax").splitlines():
        stripped = line.strip()
        if stripped.startswith(("//", "^bb0", "module", "tt.func")) or stripped.endswith("{"):
            continue  # comments, block headers and region openers (their op's loc follows its '}')
        assert re.search(r'loc\("samples/softmax\.py":\d+:\d+\)$', stripped), line


def test_a_non_ascii_kernel_name_is_renamed_in_the_symbol(tmp_path):
    # (LLVM's NVPTX back end aborts the process on a symbol with other characters.)
    source = (SAMPLES / "add.py").read_text().replace("add_kernel", "k\u00e9rnel")
    text = compiler.compile_source(source, "k.py", "ttir", Options())
    assert "tt.func public @mytriton_k_u00e9_rnel(" in text
    assert triton_compile(text, tmp_path).asm["cubin"]


def test_a_kernel_named_as_a_cuda_builtin_keeps_its_name(tmp_path):
    source = (SAMPLES / "add.py").read_text().replace("add_kernel", "threadIdx")
    text = compiler.compile_source(source, "k.py", "ttir", Options())
    assert "tt.func public @threadIdx(" in text
    assert triton_compile(text, tmp_path).asm["cubin"]


def test_a_file_name_is_escaped_in_its_locations():
    source = (SAMPLES / "add.py").read_text()
    text = compiler.compile_source(source, 'dir "q"\tx.py', "ttir", Options())
    assert 'loc("dir \\"q\\"\\09x.py":9:15)' in text


def test_emit_ttir_reads_opt_ssa_as_compile_does():
    opt = ok(cli("compile", "samples/matmul.py", "--emit=opt"))
    assert ok(cli("emit-ttir", stdin=opt)) == ok(cli("compile", "samples/matmul.py", "--emit=ttir"))


# ---- what the back end does not take -------------------------------------------------------


@pytest.mark.parametrize("name", opdefs.OPS)
def test_every_op_has_a_ttir_lowering_or_a_stated_refusal(name):
    assert ttir_ops.lowering(name) is not None
    if ttir_ops.lowering(name) == "refused":
        assert ttir_ops.REFUSED[name]


def test_staged_ssa_is_a_located_error_naming_opt():
    staged = ok(cli("compile", "samples/matmul.py", "--emit=staged"))
    result = cli("emit-ttir", stdin=staged)
    assert result.returncode == 1
    assert b"the TTIR back end reads SSA before stage-dots" in result.stderr
    assert b"Traceback" not in result.stderr and not result.stdout


def test_laid_out_ssa_is_an_error_naming_opt():
    laid_out = ok(cli("compile", "samples/add.py", "--emit=layouts"))
    result = cli("emit-ttir", stdin=laid_out)
    assert result.returncode == 1 and b"before the layouts stage" in result.stderr


def test_a_refused_op_is_a_located_error_and_writes_nothing(tmp_path):
    staged = tmp_path / "k.ssa"
    staged.write_bytes(ok(cli("compile", "samples/matmul.py", "--emit=staged")))
    out = tmp_path / "k.ttir"
    result = cli("emit-ttir", str(staged), "-o", str(out))
    assert result.returncode == 1
    assert b"samples/matmul.py:20:13: error: the TTIR back end reads SSA before stage-dots" in result.stderr
    assert b"Traceback" not in result.stderr
    assert not out.exists()


def test_device_print_and_assert_are_tt_print_and_tt_assert_as_tritons_front_end_writes_them(tmp_path):
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        tl.device_print("x", x)
        tl.device_print("n", n, hex=True)
        tl.device_print("here")
        tl.device_assert(x == x, "not nan", mask=i < n)
    """)
    text = compile_text(source, "ttir", file="k.py", defines={"BLOCK": 16})
    assert re.search(r'tt\.print " x: " \{hex = false, isSigned = array<i32: 0>\} : %\d+ : tensor<16xf32> '
                     r'loc\("k\.py":8:5\)', text), text
    assert 'tt.print " n: " {hex = true, isSigned = array<i32: 1>} : %arg1 : i32' in text
    assert 'tt.print " here" {hex = false, isSigned = array<i32>} loc(' in text
    assert re.search(r'tt\.assert %\d+, "not nan" : tensor<16xi1> loc\("k\.py":11:5\)', text), text
    assert triton_compile(text, tmp_path).asm["cubin"]


LIT = SAMPLES.parent / "tests" / "lit" / "emit-ttir"


@pytest.mark.parametrize("path", sorted(p.name for p in LIT.glob("*.ssa") if "refused" not in p.name))
def test_triton_compiles_what_the_lit_tests_check(path, tmp_path):
    text = (LIT / path).read_text()
    assert triton_compile(compiler.emit_ttir(compiler.verify(compiler.read_ssa(text, path))), tmp_path).asm["cubin"]


def test_bools_are_loaded_and_stored_as_bytes_as_tritons_front_end_does(tmp_path):
    # LLVM cannot store a tensor of i1: Triton reads and writes a bool through an i8 pointer.
    source = kernel_source("""
    @mytriton.jit
    def k(flags_ptr, out_ptr, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        m = i < n
        f = tl.load(flags_ptr + i, mask=m, other=True)
        tl.store(out_ptr + i, f == False, mask=m)
    """)
    text = compile_text(source, "ttir", defines={"BLOCK": 64}, signature="*i1, *i1, i32")
    assert re.search(r"tt.bitcast %\d+ : tensor<64x!tt.ptr<i1>> -> tensor<64x!tt.ptr<i8>>", text)
    assert re.search(r"tt.load %\d+, %\d+, %\d+ : tensor<64x!tt.ptr<i8>>", text)
    assert re.search(r"arith.extui %\d+ : tensor<64xi1> to tensor<64xi8>", text)
    assert re.search(r"tt.store %\d+, %\d+, %\d+ : tensor<64x!tt.ptr<i8>>", text)
    assert triton_compile(text, tmp_path).asm["cubin"]
