"""tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack), as
Triton defines it for pack=1 and one result: the PTX ``asm`` run once per
element of the arguments broadcast together, ``$N`` its operand N, outputs
first in ``constraints``. ``inline_asm`` is pure; is_pure=False makes
``inline_asm_volatile``, an effect. The CUDA back end writes CUDA's inline
asm; the interpreter cannot run PTX and says so where it is called."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source
from mytriton.diagnostics import CompileError
from mytriton.ir import inline_asm

ASM = kernel_source("""
    @mytriton.jit
    def k(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
        bits = tl.inline_asm_elementwise("add.u32 $0, $1, $2;", "=r,r,r", [x, offs], dtype=tl.float32,
                                         is_pure=True, pack=1)
        tl.store(out_ptr + offs, y + bits)
""")
WAIT = kernel_source("""
    @mytriton.jit
    def k(x_ptr):
        tl.inline_asm_elementwise("griddepcontrol.wait; // dummy $0", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)
        tl.store(x_ptr, 1.0)
""")


def asm_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "asm" in line and not line.lstrip().startswith("//")]


def test_the_ssa_holds_the_asm_its_constraints_and_dtype():
    text = compile_text(ASM, "opt", defines={"N": 128})
    assert ('inline_asm %2, asm="tanh.approx.f32 $0, $1;", constraints="=f,f", dtype=f32 : vector<128 x f32>'
            in text)
    assert 'inline_asm %2, %0, asm="add.u32 $0, $1, $2;", constraints="=r,r,r", dtype=f32' in text


def test_a_non_pure_asm_is_kept_with_its_result_unused():
    text = compile_text(WAIT, "opt")
    assert 'inline_asm_volatile asm="griddepcontrol.wait; // dummy $0", constraints="=r", dtype=i32 : i32' in text


def test_an_unused_pure_asm_is_dropped():
    source = ASM.replace("tl.store(out_ptr + offs, y + bits)", "tl.store(out_ptr + offs, y)")
    assert "add.u32" not in compile_text(source, "opt", defines={"N": 128})


def test_the_cuda_moves_each_operand_through_its_register_kind():
    lines = asm_lines(compile_text(ASM, "cuda", defines={"N": 128}))
    assert any('asm("tanh.approx.f32 %0, %1;" : "=f"(asm_out) : "f"(' in line for line in lines)
    (add,) = [line for line in lines if "add.u32" in line]
    assert '"r"(__builtin_bit_cast(unsigned int, ' in add and '"r"(((unsigned int)(' in add
    assert add.endswith("return __builtin_bit_cast(float, asm_out); }();")


def test_a_non_pure_asm_is_volatile_in_cuda():
    (line,) = asm_lines(compile_text(WAIT, "cuda"))
    assert 'asm volatile("griddepcontrol.wait; // dummy %0" : "=r"(asm_out));' in line


@pytest.mark.nvcc
def test_ptxas_takes_the_asm():
    ptx = compile_text(ASM, "ptx", defines={"N": 128}, arch="sm_90a")
    assert "tanh.approx.f32" in ptx and "add.u32" in ptx


def test_the_ttir_is_tritons_elementwise_inline_asm():
    lines = [line.split(" loc(")[0] for line in compile_text(ASM, "ttir", defines={"N": 128}).splitlines()
             if "elementwise_inline_asm" in line]
    assert lines[0].endswith('tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", '
                             'packed_element = 1 : i32, pure = true} %3 : tensor<128xf32> -> tensor<128xf32>')


def test_the_interpreter_says_it_cannot_run_ptx_where_it_is_called(kernel_module):
    module = kernel_module(ASM.split("\n", 3)[3])
    x = np.ones(128, np.float32)
    with pytest.raises(CompileError, match="runs PTX, which the interpreter cannot") as info:
        module.k[(1,)](x, np.zeros_like(x), N=128, backend="interp")
    assert info.value.loc.line == 8  # the first asm it meets


@pytest.mark.parametrize("call, message", [
    ('"mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=4', "only pack=1"),
    ('"mov.b32 $0, $1;", "=r,r", [x], dtype=(tl.float32, tl.int32), is_pure=True, pack=1', "several results"),
    ('"mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=False, pack=1', "is_pure=False over tensors"),
    ('"mov.b32 $0, $1;", "=r,r", [x, x], dtype=tl.float32, is_pure=True, pack=1', "2 operand(s)"),
    ('"mov.b32 $0, $1;", "=q,r", [x], dtype=tl.float32, is_pure=True, pack=1', "constraint '=q' is not one of"),
    ('"mov.b64 $0, $1;", "=l,f", [x.to(tl.float64)], dtype=tl.float64, is_pure=True, pack=1',
     "a f64 does not fit the 32-bit register 'f'"),
    ('"mov.b32 $0, $1;", "=r,r", [3], dtype=tl.float32, is_pure=True, pack=1', "a tensor or a runtime scalar"),
])
def test_calls_outside_what_is_supported_are_located_errors(call, message):
    source = kernel_source(f"""
        @mytriton.jit
        def k(x_ptr, out_ptr):
            x = tl.load(x_ptr + tl.arange(0, 16))
            y = tl.inline_asm_elementwise({call})
            tl.store(out_ptr + tl.arange(0, 16), y)
    """)
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        compile_text(source, "ssa")
    assert info.value.loc.line == 7


@pytest.mark.parametrize("asm, cuda", [
    ("mov.b32 $0, $1;", "mov.b32 %0, %1;"),
    ("{ .reg .pred %p; setp.eq.s32 %p, $1, 0; selp.b32 $0, 1, 0, %p; }",
     "{ .reg .pred %%p; setp.eq.s32 %%p, %1, 0; selp.b32 %0, 1, 0, %%p; }"),
    ("add.f32 $10, $2;", "add.f32 %10, %2;"),
    ("cost $ 5", "cost $ 5"),
])
def test_placeholders_become_cudas_and_a_literal_percent_is_doubled(asm, cuda):
    assert inline_asm.placeholders(asm) == cuda


GPU_ASM = """
@mytriton.jit
def k(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    doubled = tl.inline_asm_elementwise("add.f32 $0, $1, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    bits = tl.inline_asm_elementwise("xor.b32 $0, $1, $2;", "=r,r,r", [x, offs], dtype=tl.int32, is_pure=True,
                                     pack=1)
    tl.store(out_ptr + offs, doubled + (bits & 1).to(tl.float32))
"""


@pytest.mark.nvrtc
def test_the_asm_builds_with_nvrtc_which_takes_no_statement_expression(cache):
    from mytriton.backends.cuda import nvcc
    ptx = nvcc.compile_ptx(compile_text(ASM, "cuda", defines={"N": 128}), "sm_90")
    assert "tanh.approx.f32" in ptx and "add.u32" in ptx
    assert nvcc.last_toolchain() == "nvrtc"


@pytest.mark.gpu
def test_gpu_runs_the_asm_per_element(kernel_module):
    x = np.random.default_rng(3).standard_normal(256).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel_module(GPU_ASM).k[(1,)](x, out, N=256, backend="cuda")
    bits = (x.view(np.int32) ^ np.arange(256, dtype=np.int32)) & 1
    np.testing.assert_array_equal(out, x * 2 + bits.astype(np.float32))
