"""Pointers from memory: an address loaded as an i64 and
cast to a pointer (``x.to(tl.pointer_type(T))``, a scalar or a tile of
them), a pointer cast to i64/u64 and to a pointer of another element type;
the interpreter maps addresses into the arrays of the launch (and those
``addressable`` names) and refuses any other address at the access; the CUDA
casts, built by nvcc; ``and``/``or`` on runtime values (grouped GEMM's
``while``); GPU tests (marker gpu) against the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, compile_text, kernel_source, tiered
from mytriton.backends.interp import addressable_arrays, run_kernel
from mytriton.diagnostics import CompileError
from mytriton.types import I64, U64, BlockType, PointerType, F32, F16

GATHER = """
@mytriton.jit
def k(ptrs, sizes, out_ptr, a, b, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    base = tl.load(ptrs + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes + g)
    offs = tl.arange(0, BLOCK)
    x = tl.load(base + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + g * BLOCK + offs, x * 2, mask=offs < n)
"""
GATHER_SIG = "*i64, *i32, *fp32, *fp32, *fp32"


def _gather_inputs(rng):
    a = rng.standard_normal(5).astype(np.float32) + 4
    b = rng.standard_normal(9).astype(np.float32) - 4
    ptrs = np.array([a.ctypes.data, b.ctypes.data + 2 * 4], dtype=np.int64)  # b from its third element
    sizes = np.array([5, 7], dtype=np.int32)
    return a, b, ptrs, sizes


def test_a_loaded_address_reads_the_launch_array_it_points_into(rng):
    a, b, ptrs, sizes = _gather_inputs(rng)
    out = np.zeros(16, np.float32)
    run_kernel(build(GATHER, signature=GATHER_SIG, BLOCK=8), (2,), [ptrs, sizes, out, a, b])
    np.testing.assert_array_equal(out[:5], a * 2)
    np.testing.assert_array_equal(out[8:15], b[2:] * 2)
    assert not out[5:8].any() and not out[15:].any()


def test_an_address_in_no_launch_array_is_a_located_error_at_the_access(rng):
    a, b, ptrs, sizes = _gather_inputs(rng)
    ptrs[1] = np.zeros(4, np.float32).ctypes.data  # a live array, but not the launch's
    with pytest.raises(CompileError, match="addresses no buffer .*passed to the launch.*program 1") as info:
        run_kernel(build(GATHER, signature=GATHER_SIG, BLOCK=8), (2,), [ptrs, sizes, np.zeros(16, np.float32), a, b])
    assert info.value.loc.line == 10


def test_reading_past_the_array_an_address_points_into_is_out_of_bounds(rng):
    a, b, ptrs, sizes = _gather_inputs(rng)
    sizes[1] = 8  # b has 7 elements from its third
    with pytest.raises(CompileError, match="out-of-bounds load from 'b'"):
        run_kernel(build(GATHER, signature=GATHER_SIG, BLOCK=8), (2,), [ptrs, sizes, np.zeros(16, np.float32), a, b])


def test_masked_off_lanes_of_a_bad_address_are_never_looked_at(rng):
    a, b, ptrs, sizes = _gather_inputs(rng)
    ptrs[1], sizes[1] = 12345, 0
    out = np.zeros(16, np.float32)
    run_kernel(build(GATHER, signature=GATHER_SIG, BLOCK=8), (2,), [ptrs, sizes, out, a, b])
    np.testing.assert_array_equal(out[:5], a * 2)


def test_addressable_arrays_are_recognised_without_being_parameters(rng):
    a, b, ptrs, sizes = _gather_inputs(rng)
    c = rng.standard_normal(6).astype(np.float32)
    ptrs[1], sizes[1] = c.ctypes.data, 6
    out = np.zeros(16, np.float32)
    kernel = build(GATHER, signature=GATHER_SIG, BLOCK=8)
    with addressable_arrays(c):
        run_kernel(kernel, (2,), [ptrs, sizes, out, a, b])
    np.testing.assert_array_equal(out[8:14], c * 2)
    with pytest.raises(CompileError, match="addresses no buffer"):  # only inside the block
        run_kernel(kernel, (2,), [ptrs, sizes, out, a, b])


TILE_OF_POINTERS = """
@mytriton.jit
def k(ptrs, out_ptr, a, b, G: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.arange(0, G)
    bases = tl.load(ptrs + rows).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(bases[:, None] + offs[None, :])
    tl.store(out_ptr + rows[:, None] * BLOCK + offs[None, :], x + 1.0)
"""


def test_a_tile_of_loaded_addresses_gathers_rows_of_different_arrays(rng):
    a = rng.standard_normal(32).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    ptrs = np.array([b.ctypes.data, a.ctypes.data + 16 * 4], dtype=np.int64)
    out = np.zeros((2, 16), np.float32)
    run_kernel(build(TILE_OF_POINTERS, signature="*i64, *fp32, *fp32, *fp32", G=2, BLOCK=16), (1,),
               [ptrs, out, a, b])
    np.testing.assert_array_equal(out, np.stack([b[:16], a[16:]]) + 1)


ROUND_TRIP = """
@mytriton.jit
def k(x_ptr, addr_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    addr = p.to(tl.int64)
    tl.store(addr_ptr + offs, addr)
    q = (addr + 4).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + offs, tl.load(q, mask=offs < BLOCK - 1, other=-1.0))
"""


def test_a_pointer_as_an_integer_is_its_address_and_converts_back(rng):
    x = rng.standard_normal(16).astype(np.float32)
    addrs, out = np.zeros(16, np.int64), np.zeros(16, np.float32)
    run_kernel(build(ROUND_TRIP, signature="*fp32, *i64, *fp32", BLOCK=16), (1,), [x, addrs, out])
    np.testing.assert_array_equal(addrs, x.ctypes.data + 4 * np.arange(16))
    np.testing.assert_array_equal(out, np.append(x[1:], -1.0))


POINTER_TO_POINTER = """
@mytriton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    halves = x_ptr.to(tl.pointer_type(tl.int16))
    tl.store(out_ptr + offs, tl.load(halves + offs))
"""


def test_a_pointer_to_another_element_type_is_refused_by_the_interpreter_at_the_access():
    x = np.arange(16, dtype=np.int32) + 70000
    out = np.zeros(16, np.int16)
    kernel = build(POINTER_TO_POINTER, signature="*i32, *i16", BLOCK=16)
    assert [op.name for op in kernel.body.ops if op.name in ("ptr_to_int", "int_to_ptr")] == \
        ["ptr_to_int", "int_to_ptr"]
    with pytest.raises(CompileError, match="load of int16 from 'x_ptr', an array of int32: the interpreter "
                                           "reads an array only as its own element type") as info:
        run_kernel(kernel, (1,), [x, out])
    assert info.value.loc.line == 8


@pytest.mark.gpu
def test_gpu_a_pointer_to_another_element_type_reads_the_same_bytes(kernel_module):
    module = kernel_module(POINTER_TO_POINTER)
    x = np.arange(16, dtype=np.int32) + 70000
    out = np.zeros(16, np.int16)
    module.k[(1,)](x, out, BLOCK=16, backend="cuda")
    np.testing.assert_array_equal(out, x.view(np.int16)[:16])


# ---- types -----------------------------------------------------------------------------------------

CAST = """
@mytriton.jit
def k(x_ptr, out_ptr):
    v = tl.load(x_ptr)
    tl.store(out_ptr, {expr})
"""


def test_int_to_ptr_and_ptr_to_int_types():
    kernel = build(GATHER, signature=GATHER_SIG, BLOCK=8)
    op = next(op for op in kernel.body.ops if op.name == "int_to_ptr")
    assert op.result.type == PointerType(F32) and op.attrs["dtype"] == F32
    kernel = build(TILE_OF_POINTERS, signature="*i64, *fp32, *fp32, *fp32", G=2, BLOCK=16)
    op = next(op for op in kernel.body.ops if op.name == "int_to_ptr")
    assert op.result.type == BlockType((2,), PointerType(F32))
    kernel = build(ROUND_TRIP, signature="*fp32, *i64, *fp32", BLOCK=16)
    op = next(op for op in kernel.body.ops if op.name == "ptr_to_int")
    assert op.result.type == BlockType((16,), I64)


@pytest.mark.parametrize("sig,expr,message", [
    ("*i32, *i32", "v.to(tl.pointer_type(tl.float32))", "only a 64-bit integer .* converts to a pointer, got i32"),
    ("*fp32, *fp32", "v.to(tl.pointer_type(tl.float32))", "only a 64-bit integer .* converts to a pointer, got f32"),
    ("*i64, *i32", "x_ptr.to(tl.int32)", "a pointer converts to i64 or u64 .*not i32"),
    ("*i64, *fp32", "x_ptr.to(tl.float32)", "a pointer converts to i64 or u64"),
])
def test_casts_a_pointer_cannot_take_are_located_errors(sig, expr, message):
    with pytest.raises(CompileError, match=message) as info:
        build(CAST.format(expr=expr), signature=sig)
    assert info.value.loc.line == 7


def test_u64_addresses_and_u64_results_are_allowed():
    from mytriton.ir import opdefs

    assert opdefs.OPS["int_to_ptr"].infer([U64], {"dtype": F16}) == [PointerType(F16)]
    assert opdefs.OPS["ptr_to_int"].infer([PointerType(F16)], {"dtype": U64}) == [U64]


def test_the_ops_print_and_parse_back():
    from mytriton import compiler

    text = compiler.print_ssa(build(ROUND_TRIP, signature="*fp32, *i64, *fp32", BLOCK=16))
    assert "ptr_to_int" in text and "int_to_ptr" in text and "dtype=f32 : vector<16 x ptr<f32>>" in text
    assert compiler.print_ssa(compiler.read_ssa(text, "k.ssa")) == text


# ---- and / or on runtime values -----------------------------------------------------------------------

WHILE_AND = """
@mytriton.jit
def k(out_ptr, lo, hi, STEP: tl.constexpr):
    i = lo
    count = 0
    while i >= lo and i < hi:
        i += STEP
        count += 1
    tl.store(out_ptr, count)
    tl.store(out_ptr + 1, (lo > 3) or (hi < 0) or 0)
"""


@pytest.mark.parametrize("lo,hi", [(0, 10), (5, 5), (4, 9)])
def test_and_and_or_on_runtime_scalars_are_logical(lo, hi):
    out = np.zeros(2, np.int32)
    run_kernel(build(WHILE_AND, signature="*i32, i32, i32", STEP=3), (1,), [out, lo, hi])
    assert list(out) == [len(range(lo, hi, 3)), int(lo > 3 or hi < 0)]


def test_a_constant_that_decides_and_still_decides():
    source = WHILE_AND.replace("(lo > 3) or (hi < 0) or 0", "(lo > 3) and False")
    out = np.zeros(2, np.int32)
    run_kernel(build(source, signature="*i32, i32, i32", STEP=3), (1,), [out, 5, 9])
    assert out[1] == 0


# ---- CUDA ---------------------------------------------------------------------------------------------

def test_cuda_casts_the_address_to_a_global_pointer():
    cuda = compile_text(kernel_source(GATHER), "cuda", signature=GATHER_SIG, defines={"BLOCK": 8})
    # Triton's pointers are global: said so, the accesses through it are LDG/STG, not generic
    assert "__mytriton_global((float*)(" in cuda
    assert "__builtin_assume(__isGlobal(p))" in cuda
    cuda = compile_text(kernel_source(ROUND_TRIP), "cuda", signature="*fp32, *i64, *fp32", defines={"BLOCK": 16})
    assert "((long long)(" in cuda


@pytest.mark.nvcc
@pytest.mark.parametrize("source,sig,defines", tiered([
    (GATHER, GATHER_SIG, {"BLOCK": 8}), (TILE_OF_POINTERS, "*i64, *fp32, *fp32, *fp32", {"G": 2, "BLOCK": 16}),
    (ROUND_TRIP, "*fp32, *i64, *fp32", {"BLOCK": 16}), (POINTER_TO_POINTER, "*i32, *i16", {"BLOCK": 16}),
], fast=[(TILE_OF_POINTERS, "*i64, *fp32, *fp32, *fp32", {"G": 2, "BLOCK": 16})]))
def test_cuda_of_pointers_from_memory_builds(cache, source, sig, defines):
    from mytriton.backends.cuda.nvcc import compile_ptx

    assert ".entry k" in compile_ptx(compile_text(kernel_source(source), "cuda", signature=sig, defines=defines),
                                     "sm_90")


@pytest.mark.nvcc
def test_accesses_through_a_loaded_address_are_global_in_the_ptx(cache):
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(compile_text(kernel_source(GATHER), "cuda", signature=GATHER_SIG, defines={"BLOCK": 8}),
                      "sm_90")
    loads = [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("ld.")]
    assert loads and all(op.startswith(("ld.global", "ld.param")) for op in loads), loads


# ---- GPU against the interpreter ------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "interp"])
def test_gpu_gathers_through_device_addresses(kernel_module, backend):
    from mytriton.runtime.memory import addressable

    module = kernel_module(GATHER)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (5, 9, 8)]
    dummy = np.zeros(1, np.float32)
    out = np.zeros(24, np.float32)
    with addressable(*arrays, backend=backend) as memory:
        ptrs = np.array([memory.address(arrays[0]), memory.address(arrays[1]) + 8, memory.address(arrays[2])],
                        dtype=np.int64)
        sizes = np.array([5, 7, 8], dtype=np.int32)
        module.k[(3,)](ptrs, sizes, out, dummy, dummy, BLOCK=8, backend=backend)
    np.testing.assert_array_equal(out[:5], arrays[0] * 2)
    np.testing.assert_array_equal(out[8:15], arrays[1][2:] * 2)
    np.testing.assert_array_equal(out[16:24], arrays[2] * 2)


@pytest.mark.gpu
def test_gpu_writes_through_loaded_addresses_come_back_to_the_host(kernel_module):
    from mytriton.runtime.memory import addressable

    module = kernel_module("""
    @mytriton.jit
    def k(ptrs, BLOCK: tl.constexpr):
        base = tl.load(ptrs + tl.program_id(0)).to(tl.pointer_type(tl.float32))
        offs = tl.arange(0, BLOCK)
        tl.store(base + offs, tl.load(base + offs) * 3.0)
    """)
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(32).astype(np.float32) for _ in range(3)]
    expected = [a * 3 for a in arrays]
    with addressable(*arrays, backend="cuda") as memory:
        ptrs = np.array([memory.address(a) for a in arrays], dtype=np.int64)
        module.k[(3,)](ptrs, BLOCK=32, backend="cuda")
    for got, want in zip(arrays, expected):
        np.testing.assert_array_equal(got, want)
