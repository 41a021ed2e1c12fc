"""Atomics (tl.atomic_add, max, min, and, or, xor, xchg, cas) and tl.debug_barrier:
Triton's type rules, the interpreter's one-element-at-a-time order, the CUDA
that nvcc builds, and (on the GPU) agreement with the interpreter."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import build, compile_text, kernel_source
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk

# Which element types each kind takes (Triton's _validate_atomic_rmw_element_type).
DTYPES = {
    "add": ("i32", "u32", "i64", "u64", "f32", "f16", "bf16", "f64"),
    "max": ("i32", "u32", "i64", "u64", "f32", "f64"),
    "min": ("i32", "u32", "i64", "u64", "f32", "f64"),
    "and": ("i32", "u32", "i64", "u64"),
    "or": ("i32", "u32", "i64", "u64"),
    "xor": ("i32", "u32", "i64", "u64"),
    "xchg": ("i32", "u32", "i64", "u64", "f32", "f64"),
}
NP = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f32": np.float32, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16, "f64": np.float64}
CASES = [(kind, dtype) for kind, dtypes in DTYPES.items() for dtype in dtypes]

RMW = """
@mytriton.jit
def k(ptr, val_ptr, idx_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    idx = tl.load(idx_ptr + offs, mask=m, other=0)
    v = tl.load(val_ptr + offs, mask=m, other=0)
    old = tl.atomic_{kind}(ptr + idx, v, mask=m)
    tl.store(old_ptr + offs, old, mask=m)
"""


def _signature(dtype: str) -> str:
    return f"*{dtype}, *{dtype}, *i32, *{dtype}, i32"


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("f", "bf"))


def _values(rng, dtype: str, n: int) -> np.ndarray:
    """Random non-zero values: small integers of both signs where signed,
    normal floats (negative ones too, for the float max/min bit order)."""
    if _is_float(dtype):
        x = rng.standard_normal(n).astype(NP[dtype])
        x[x == 0] = 1
        return x
    if dtype.startswith("u"):
        return rng.integers(1, 1 << 20, n).astype(NP[dtype])
    x = rng.integers(-1000, 1000, n).astype(NP[dtype])
    x[x == 0] = 7
    return x


def _apply(kind: str, old, value):
    return {"add": lambda: old + value, "max": lambda: max(old, value), "min": lambda: min(old, value),
            "and": lambda: old & value, "or": lambda: old | value, "xor": lambda: old ^ value,
            "xchg": lambda: value}[kind]()


def _sequential(kind: str, memory: np.ndarray, idx: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The reference: elements applied one at a time in order; their old values."""
    olds = np.empty_like(values)
    with np.errstate(all="ignore"):
        for i, (j, v) in enumerate(zip(idx, values)):
            olds[i] = memory[j]
            memory[j] = _apply(kind, memory[j], v)
    return olds


def _module(kernel_module, kind: str):
    return kernel_module(RMW.format(kind=kind))


# ---- type rules -----------------------------------------------------------------------------------


def _error(body: str, signature: str) -> str:
    with pytest.raises(CompileError) as info:
        build(body, signature)
    return str(info.value)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("kind", ["max", "min", "and", "or", "xor", "xchg"])
def test_only_atomic_add_takes_16_bit_floats(kind, dtype):
    message = _error(f"""
    @mytriton.jit
    def k(p):
        tl.atomic_{kind}(p, 1.0)
    """, f"*{dtype.replace('f', 'fp', 1) if dtype == 'f16' else dtype}")
    assert f"atomic_{kind} does not support {dtype}" in message


@pytest.mark.parametrize("dtype", ["i8", "i16"])
def test_narrow_integers_take_no_atomic(dtype):
    message = _error("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1)
    """, f"*{dtype}")
    assert f"atomic_add does not support {dtype}" in message


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
def test_bitwise_atomics_need_integers(kind):
    assert f"atomic_{kind} needs integers" in _error(f"""
    @mytriton.jit
    def k(p):
        tl.atomic_{kind}(p, 1.0)
    """, "*fp32")


def test_atomic_cas_needs_32_or_64_bit_elements():
    assert "atomic_cas needs 32- or 64-bit elements" in _error("""
    @mytriton.jit
    def k(p):
        tl.atomic_cas(p, 0.0, 1.0)
    """, "*fp16")


def test_an_unknown_sem_is_a_located_error():
    message = _error("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1, sem="seq_cst")
    """, "*i32")
    assert "kernel.py:6:5: error: tl.atomic_add: sem must be one of" in message


def test_an_unknown_scope_is_a_located_error():
    assert "tl.atomic_xchg: scope must be one of" in _error("""
    @mytriton.jit
    def k(p):
        tl.atomic_xchg(p, 1, scope="grid")
    """, "*i32")


def test_an_atomic_needs_a_pointer():
    assert "tl.atomic_add needs a pointer" in _error("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(3, 1)
    """, "*i32")


def test_an_atomic_on_a_non_pointer_value_is_refused():
    assert "needs a pointer" in _error("""
    @mytriton.jit
    def k(p, n):
        tl.atomic_add(n + 1, 1)
    """, "*i32, i32")


def test_atomics_return_the_pointee_type_with_triton_defaults():
    kernel = build("""
    @mytriton.jit
    def k(p, BLOCK: tl.constexpr):
        old = tl.atomic_max(p + tl.arange(0, BLOCK), 1)
        c = tl.atomic_cas(p, 0, 1, sem="acquire", scope="cta")
        tl.debug_barrier()
    """, "*u32", BLOCK=16)
    ops = {op.name: op for op in walk(kernel.body)}
    rmw, cas = ops["atomic_rmw"], ops["atomic_cas"]
    assert (rmw.attrs, str(rmw.results[0].type)) == ({"kind": "max", "sem": "acq_rel", "scope": "gpu"},
                                                      "vector<16 x u32>")
    assert (cas.attrs, str(cas.results[0].type)) == ({"sem": "acquire", "scope": "cta"}, "u32")
    assert "barrier" in ops


# ---- the interpreter: one element at a time, programs in order -------------------------------------------


@pytest.mark.parametrize("kind,dtype", CASES)
def test_repeated_addresses_apply_in_order_with_no_lost_update(kernel_module, kind, dtype):
    rng = np.random.default_rng(len(kind) * 7 + len(dtype))
    n, bins = 300, 13  # ragged: 300 is not a multiple of BLOCK
    memory = _values(rng, dtype, bins)
    values = _values(rng, dtype, n)
    idx = rng.integers(0, bins, n).astype(np.int32)
    expected_memory = memory.copy()
    expected_olds = _sequential(kind, expected_memory, idx, values)
    olds = np.zeros(n, NP[dtype])
    _module(kernel_module, kind).k[(5,)](memory, values, idx, olds, n, BLOCK=64, backend="interp")
    np.testing.assert_array_equal(memory, expected_memory)
    np.testing.assert_array_equal(olds, expected_olds)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_float_max_and_min_order_signed_zeros_as_the_gpu_does(kernel_module, kind):
    # The bits' integer order: +0.0 is above -0.0, for max and min alike.
    module = _module(kernel_module, kind)
    memory = np.array([-0.0, 0.0, -1.5, 2.0], np.float32)
    values = np.array([0.0, -0.0, -0.5, 3.0], np.float32)
    olds = np.zeros(4, np.float32)
    module.k[(1,)](memory, values, np.arange(4, dtype=np.int32), olds, 4, BLOCK=4, backend="interp")
    expected = np.maximum(memory, values) if kind == "max" else np.minimum(memory, values)
    expected[:2] = [0.0, 0.0] if kind == "max" else [-0.0, -0.0]
    np.testing.assert_array_equal(np.signbit(memory), np.signbit(expected))
    np.testing.assert_array_equal(memory, expected)


def test_a_histogram_of_repeated_bins_matches_np_add_at(kernel_module):
    rng = np.random.default_rng(3)
    module = kernel_module("""
    @mytriton.jit
    def hist(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        tl.atomic_add(bins_ptr + x, 1, mask=m)
    """)
    x = rng.integers(0, 17, 1000).astype(np.int32)
    bins = np.zeros(17, np.int32)
    module.hist[(8,)](x, bins, 1000, BLOCK=128, backend="interp")
    expected = np.zeros(17, np.int32)
    np.add.at(expected, x, 1)
    np.testing.assert_array_equal(bins, expected)


def test_masked_off_elements_are_untouched_and_give_zero(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(p, old_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        old = tl.atomic_add(p + offs, 5.0, mask=offs % 2 == 0)
        tl.store(old_ptr + offs, old)
    """)
    memory = np.random.default_rng(1).standard_normal(16).astype(np.float32) + 10
    before = memory.copy()
    olds = np.full(16, np.nan, np.float32)
    module.k[(1,)](memory, olds, BLOCK=16, backend="interp")
    np.testing.assert_array_equal(memory[1::2], before[1::2])
    np.testing.assert_array_equal(memory[0::2], before[0::2] + np.float32(5))
    np.testing.assert_array_equal(olds[0::2], before[0::2])
    np.testing.assert_array_equal(olds[1::2], 0)


def test_atomic_cas_swaps_only_where_the_old_value_equals_cmp(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(p, cmp_ptr, old_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        old = tl.atomic_cas(p + offs, tl.load(cmp_ptr + offs), -offs - 1)
        tl.store(old_ptr + offs, old)
    """)
    rng = np.random.default_rng(2)
    memory = rng.integers(1, 50, 32).astype(np.int64)
    cmp = np.where(rng.random(32) < 0.5, memory, memory + 1).astype(np.int64)
    before = memory.copy()
    olds = np.zeros(32, np.int64)
    module.k[(1,)](memory, cmp, olds, BLOCK=32, backend="interp")
    np.testing.assert_array_equal(olds, before)
    np.testing.assert_array_equal(memory, np.where(cmp == before, -np.arange(32) - 1, before))


SCALAR_COUNTER = """
@mytriton.jit
def k(counter_ptr, old_ptr):
    pid = tl.program_id(0)
    tl.store(old_ptr + pid, tl.atomic_add(counter_ptr, 1))
"""


def test_a_scalar_atomic_counts_programs_in_order(kernel_module):
    module = kernel_module(SCALAR_COUNTER)
    counter, olds = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    module.k[(37,)](counter, olds, backend="interp")
    assert counter[0] == 37
    np.testing.assert_array_equal(olds, np.arange(37))


SPIN_LOCK = """
@mytriton.jit
def k(lock_ptr, count_ptr, x_ptr, BLOCK: tl.constexpr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    c = tl.load(count_ptr)
    tl.store(count_ptr, c + 1)
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)
"""


def test_a_spin_lock_serialises_the_programs(kernel_module):
    module = kernel_module(SPIN_LOCK)
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    expected = x.copy()
    for _ in range(23):
        expected = expected + np.float32(1)
    module.k[(23,)](lock, count, x, BLOCK=64, backend="interp")
    assert (lock[0], count[0]) == (0, 23)
    np.testing.assert_array_equal(x, expected)


def test_a_lock_held_when_the_kernel_starts_is_a_located_error_not_a_hang(kernel_module):
    module = kernel_module(SPIN_LOCK)
    lock, count = np.ones(1, np.int32), np.zeros(1, np.int32)  # no program ever releases it
    x = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    with pytest.raises(CompileError, match="while loop never ends in the interpreter") as err:
        module.k[(3,)](lock, count, x, BLOCK=64, backend="interp")
    assert err.value.loc is not None and "while tl.atomic_cas" in err.value.render()


WAITS_FOR_A_LATER_PROGRAM = """
@mytriton.jit
def k(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        while tl.load(flag_ptr) == 0:
            pass
        tl.store(out_ptr, 1)
    else:
        tl.store(flag_ptr, 1)
"""


def test_a_program_waiting_for_a_later_one_is_a_located_error_not_a_hang(kernel_module):
    module = kernel_module(WAITS_FOR_A_LATER_PROGRAM)
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(CompileError, match="a program cannot wait for a later one"):
        module.k[(2,)](flag, out, backend="interp")


COUNTS_DOWN_WITHOUT_MEMORY = """
@mytriton.jit
def k(n_ptr, out_ptr):
    n = tl.load(n_ptr)
    steps = 0
    while n > 1:
        n = tl.where(n % 2 == 0, n // 2, 3 * n + 1)
        steps += 1
    tl.store(out_ptr, steps)
"""


def test_a_while_loop_that_changes_only_its_carried_values_runs_to_its_end(kernel_module):
    module = kernel_module(COUNTS_DOWN_WITHOUT_MEMORY)
    out = np.zeros(1, np.int32)
    module.k[(1,)](np.array([27], np.int32), out, backend="interp")
    assert out[0] == 111  # the Collatz sequence of 27


def test_an_atomic_on_a_read_only_array_is_an_error(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1)
    """)
    p = np.zeros(1, np.int32)
    p.flags.writeable = False
    with pytest.raises(CompileError, match="read-only"):
        module.k[(1,)](p, backend="interp")


def test_an_out_of_bounds_atomic_is_a_located_error(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p + 4, 1)
    """)
    with pytest.raises(CompileError, match="out-of-bounds atomic_add on 'p'"):
        module.k[(1,)](np.zeros(4, np.int32), backend="interp")


def test_an_atomic_with_an_unread_result_still_runs():
    kernel = build("""
    @mytriton.jit
    def k(p):
        tl.atomic_or(p, 6)
    """, "*i32")
    p = np.full(1, 9, np.int32)
    run_kernel(kernel, (1,), [p])
    assert p[0] == 15


# ---- CUDA: what nvcc builds ---------------------------------------------------------------------------------


def _cuda(body: str, signature: str, **defines) -> str:
    return compile_text(kernel_source(body), "cuda", signature=signature, defines=defines)


def test_a_tile_atomic_is_applied_by_each_elements_owner_only():
    # 32 elements on 4 warps: three copies of each; only the owner applies it,
    # and the copies read the old value back through shared memory.
    cuda = compile_text(kernel_source(RMW.format(kind="add")), "cuda", signature=_signature("i32"),
                        defines={"BLOCK": 32}, num_warps=4)
    line = next(text for text in cuda.splitlines() if "atom.acq_rel.gpu.global.add.u32" in text)
    assert line.strip().startswith("if (") and "&&" in line
    assert "reinterpret_cast<int*>(smem)" in cuda


def test_a_scalar_atomic_runs_on_thread_0_and_is_broadcast():
    cuda = _cuda(SCALAR_COUNTER, "*i32, *i32")
    assert ('if (threadIdx.x == 0) { asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" '
            ': "=r"((*reinterpret_cast<int*>(smem)))') in cuda


def test_sem_and_scope_choose_the_atom_order_and_scope():
    """An ordered atomic on 32- or 64-bit integers (or an f32/f64 add) is
    PTX's atom with its order and scope, as Triton writes it; a relaxed one
    CUDA's function of the scope."""
    cuda = _cuda("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1, sem="relaxed", scope="cta")
        tl.atomic_max(p, 1, sem="acquire", scope="sys")
        tl.atomic_xchg(p, 1, sem="release")
    """, "*i32")
    assert "= atomicAdd_block(" in cuda and "__threadfence" not in cuda
    assert 'atom.acquire.sys.global.max.s32 %0, [%1], %2;" : "=r"(' in cuda
    assert 'atom.release.gpu.global.exch.b32 %0, [%1], %2;" : "=r"(' in cuda


def test_an_ordered_atomic_without_an_atom_form_keeps_cuda_between_fences():
    """Float max (through the integers' order) has no ordered atom here:
    CUDA's function between fences of the scope."""
    cuda = _cuda("""
    @mytriton.jit
    def k(q):
        tl.atomic_max(q, 1.0, sem="release", scope="cta")
    """, "*fp32")
    assert "{ __threadfence_block(); (*reinterpret_cast<float*>(smem)) = (!signbit(" in cuda


@pytest.mark.parametrize("element,ptx,arch", [("fp16", "f16", 700), ("bf16", "bf16", 900)])
def test_an_ordered_16_bit_add_is_one_atom_where_the_target_has_it(element, ptx, arch):
    """f16 from sm_70, bf16 from sm_90 (Triton's atom.acq_rel.gpu.global.add.noftz.bf16);
    before that, CUDA's atomicAdd between the scope's fences (the helper tests __CUDA_ARCH__)."""
    cuda = _cuda("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1.0, sem="acq_rel")
    """, f"*{element}")
    assert f"= __mytriton_atom_add_acq_rel_gpu_{ptx}(" in cuda
    assert f"#if __CUDA_ARCH__ >= {arch}\n" in cuda
    assert f'asm volatile("atom.acq_rel.gpu.global.add.noftz.{ptx} %0, [%1], %2;"' in cuda
    assert "#else\n  __threadfence(); const" in cuda


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,fences", [("sm_90", 0), ("sm_80", 2)])
def test_an_ordered_bf16_add_builds_with_nvcc_before_and_after_sm_90(arch, fences):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = _cuda("""
    @mytriton.jit
    def k(p):
        tl.atomic_add(p, 1.0, sem="acq_rel")
    """, "*bf16")
    ptx = compile_ptx(cuda, arch)
    assert ptx.count("membar.gl") == fences
    assert ("atom.acq_rel.gpu.global.add.noftz.bf16" in ptx) is (arch == "sm_90")


def test_an_f32_tile_add_is_one_ordered_atom_an_element_and_no_fence():
    """split-K's epilogue (tests/triton_style/matmul_split_k.py): with fences it ran at 0.30x of Triton."""
    cuda = compile_text(kernel_source(RMW.format(kind="add")), "cuda", signature=_signature("fp32"),
                        defines={"BLOCK": 32}, num_warps=4)
    assert "atom.acq_rel.gpu.global.add.f32" in cuda and "__threadfence" not in cuda


def _laid_out_atomic_of_a_dot(offsets: str) -> str:
    return compile_text(kernel_source(f"""
    @mytriton.jit
    def k(a_ptr, c_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
        tl.atomic_add(c_ptr + {offsets}, tl.dot(a, a))
    """), "layouts", signature="*fp16, *fp32", defines={"BLOCK": 32})


def test_an_atomic_of_an_accumulator_on_contiguous_rows_is_coalesced_first():
    # split-K's write-back: one element a thread, 32 lanes along a row, as Triton's
    laid_out = _laid_out_atomic_of_a_dot("r[:, None] * BLOCK + r[None, :]")
    assert "convert_layout" in laid_out
    line = next(text for text in laid_out.splitlines() if "atomic_rmw" in text)
    assert "#blocked" in line


def test_an_atomic_of_an_accumulator_on_strided_addresses_applies_it_where_it_is_held():
    # the accumulator's columns go down C's columns: no layout makes a warp's addresses adjacent
    laid_out = _laid_out_atomic_of_a_dot("r[:, None] + r[None, :] * BLOCK")
    assert "convert_layout" not in laid_out
    line = next(text for text in laid_out.splitlines() if "atomic_rmw" in text)
    assert "#mma0>" in line


VECTOR_ADD = """
@mytriton.jit
def k(p, x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(p + offs, tl.load(x + offs){extra})
"""


def test_an_aligned_f32_atomic_add_applies_four_elements_with_one_vector_atom():
    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra="")), "cuda", signature="*fp32:16, *fp32:16",
                        defines={"BLOCK": 512})
    assert "atom.acq_rel.gpu.global.add.v4.f32 {%0, %1, %2, %3}, [%4], {%5, %6, %7, %8};" in cuda


def test_a_vector_atom_needs_sm_90():
    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra="")), "cuda", signature="*fp32:16, *fp32:16",
                        defines={"BLOCK": 256}, arch="sm_80")
    assert ".v4.f32" not in cuda and "atom.acq_rel.gpu.global.add.f32" in cuda


def test_an_f32_atomic_add_on_addresses_not_proven_aligned_stays_one_element_an_atom():
    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra="")), "cuda", signature="*fp32, *fp32:16",
                        defines={"BLOCK": 256})
    assert ".v4.f32" not in cuda and ".v2.f32" not in cuda


@pytest.mark.parametrize("element,ptx", [("fp16", "f16"), ("bf16", "bf16")])
def test_an_aligned_16_bit_atomic_add_applies_eight_elements_with_one_vector_atom(element, ptx):
    """Triton's atom.add.noftz.v8 for f16 and bf16 (sm_90): no fences, one atom for 16 bytes."""
    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra="")), "cuda", signature=f"*{element}:16, *{element}:16",
                        defines={"BLOCK": 1024})
    assert f"atom.acq_rel.gpu.global.add.noftz.v8.{ptx} {{%0, %1, %2, %3, %4, %5, %6, %7}}, [%8]" in cuda
    assert "__threadfence" not in cuda


def test_a_16_bit_vector_atom_needs_sm_90():
    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra="")), "cuda", signature="*bf16:16, *bf16:16",
                        defines={"BLOCK": 1024}, arch="sm_80")
    assert ".v8.bf16" not in cuda and "atomicAdd" in cuda


@pytest.mark.nvcc
@pytest.mark.parametrize("element", ["fp16", "bf16"])
@pytest.mark.parametrize("sem", ["acq_rel", "relaxed"])
@pytest.mark.parametrize("scope", ["gpu", "cta"])
def test_a_16_bit_vector_atom_builds_with_nvcc(element, sem, scope):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra=f', sem="{sem}", scope="{scope}"')), "cuda",
                        signature=f"*{element}:16, *{element}:16", defines={"BLOCK": 1024})
    assert ".global.add.noftz.v8." in cuda
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("sem", ["acquire", "release", "acq_rel", "relaxed"])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys"])
def test_every_sem_and_scope_of_a_vector_atom_builds_with_nvcc(sem, scope):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(VECTOR_ADD.format(extra=f', sem="{sem}", scope="{scope}"')), "cuda",
                        signature="*fp32:16, *fp32:16", defines={"BLOCK": 512})
    assert ".global.add.v4.f32" in cuda
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("kind,dtype", CASES)
def test_every_kind_and_dtype_builds_with_nvcc(kind, dtype):
    from mytriton.backends.cuda.nvcc import compile_ptx

    for warps in (1, 4):
        cuda = compile_text(kernel_source(RMW.format(kind=kind)), "cuda", signature=_signature(dtype),
                            defines={"BLOCK": 64}, num_warps=warps)
        assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("sem", ["acquire", "release", "acq_rel", "relaxed"])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys"])
def test_every_sem_and_scope_builds_with_nvcc(sem, scope):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = _cuda(f"""
    @mytriton.jit
    def k(p, q, h, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.atomic_min(p + offs, 2.5, sem="{sem}", scope="{scope}")
        b = tl.atomic_cas(q + offs, offs, a.to(tl.int64), sem="{sem}", scope="{scope}")
        tl.atomic_add(h + offs, a.to(tl.float16), sem="{sem}", scope="{scope}")
        tl.atomic_xor(q, tl.sum(b), sem="{sem}", scope="{scope}")
    """, "*fp32, *i64, *fp16", BLOCK=128)
    ptx = compile_ptx(cuda, "sm_90")
    assert "atom" in ptx


@pytest.mark.nvcc
def test_parameters_named_like_the_atomic_functions_build():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = _cuda("""
    @mytriton.jit
    def k(atomicAdd, atomicMax_block, signbit, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.atomic_add(atomicAdd + offs, 1.0, scope="cta")
        tl.atomic_max(atomicMax_block + offs, tl.load(signbit + offs), scope="cta")
    """, "*fp32, *fp32, *fp32", BLOCK=64)
    assert ".entry" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
def test_the_spin_lock_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    ptx = compile_ptx(_cuda(SPIN_LOCK, "*i32, *i32, *fp32", BLOCK=64), "sm_90")
    assert "atom.acq_rel.gpu.global.cas.b32" in ptx


# ---- on the GPU, against the interpreter --------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("kind,dtype", CASES)
def test_gpu_atomics_on_distinct_addresses_match_the_interpreter(kernel_module, kind, dtype, num_warps):
    """Distinct addresses: the old values and the memory do not depend on order.
    BLOCK=32 on 4 warps leaves copies of each element on spare threads."""
    module = _module(kernel_module, kind)
    rng = np.random.default_rng(11)
    n = 1000
    memory, values = _values(rng, dtype, n), _values(rng, dtype, n)
    idx = rng.permutation(n).astype(np.int32)
    results = []
    for backend in ("cuda", "interp"):
        m, olds = memory.copy(), np.zeros(n, NP[dtype])
        module.k[(-(-n // 32),)](m, values, idx, olds, n, BLOCK=32, num_warps=num_warps, backend=backend)
        results.append((m, olds))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.gpu
@pytest.mark.parametrize("kind,dtype", [c for c in CASES if c[0] != "xchg"])
def test_gpu_atomics_on_repeated_addresses_lose_no_update(kernel_module, kind, dtype):
    """Repeated addresses: the final memory of an order-free op (integer and
    bitwise exactly, float sums within rounding)."""
    module = _module(kernel_module, kind)
    rng = np.random.default_rng(12)
    n, bins = 5000, 7
    memory, values = _values(rng, dtype, bins), _values(rng, dtype, n)
    idx = rng.integers(0, bins, n).astype(np.int32)
    results = []
    for backend in ("cuda", "interp"):
        m, olds = memory.copy(), np.zeros(n, NP[dtype])
        module.k[(-(-n // 256),)](m, values, idx, olds, n, BLOCK=256, backend=backend)
        results.append(m)
    if _is_float(dtype) and kind == "add":
        # ~700 roundings per bin, in another order: f16 keeps 11 bits, bf16 8.
        tol = {"f16": 2.0, "bf16": 8.0}.get(dtype, 1e-3)
        np.testing.assert_allclose(results[0].astype(np.float64), results[1].astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.gpu
def test_gpu_a_scalar_counter_gives_each_program_a_distinct_old_value(kernel_module):
    module = kernel_module(SCALAR_COUNTER)
    counter, olds = np.zeros(1, np.int32), np.full(500, -1, np.int32)
    module.k[(500,)](counter, olds, backend="cuda")
    assert counter[0] == 500
    np.testing.assert_array_equal(np.sort(olds), np.arange(500))


@pytest.mark.gpu
def test_gpu_the_spin_lock_serialises_the_programs(kernel_module):
    module = kernel_module(SPIN_LOCK)
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    x = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    expected = x.copy()
    for _ in range(300):
        expected = expected + np.float32(1)
    module.k[(300,)](lock, count, x, BLOCK=64, backend="cuda")
    assert (lock[0], count[0]) == (0, 300)
    np.testing.assert_allclose(x, expected, rtol=1e-5)


@pytest.mark.gpu
def test_gpu_atomic_cas_matches_the_interpreter(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(p, cmp_ptr, old_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        old = tl.atomic_cas(p + offs, tl.load(cmp_ptr + offs), -offs - 1.5)
        tl.store(old_ptr + offs, old)
    """)
    rng = np.random.default_rng(6)
    n = 320
    memory = rng.standard_normal(n).astype(np.float32)
    cmp = np.where(rng.random(n) < 0.5, memory, memory + 1).astype(np.float32)
    results = []
    for backend in ("cuda", "interp"):
        m, olds = memory.copy(), np.zeros(n, np.float32)
        module.k[(n // 64,)](m, cmp, olds, BLOCK=64, backend=backend)
        results.append((m, olds))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["max", "min"])
def test_gpu_float_max_and_min_of_signed_zeros_match_the_interpreter(kernel_module, kind):
    module = _module(kernel_module, kind)
    memory = np.array([-0.0, 0.0, -1.5, 2.0, 0.0, -0.0, 7.0, -7.0], np.float32)
    values = np.array([0.0, -0.0, -0.5, 3.0, 0.0, -0.0, -7.0, 7.0], np.float32)
    results = []
    for backend in ("cuda", "interp"):
        m, olds = memory.copy(), np.zeros(8, np.float32)
        module.k[(1,)](m, values, np.arange(8, dtype=np.int32), olds, 8, BLOCK=8, backend=backend)
        results.append(m)
    np.testing.assert_array_equal(np.signbit(results[0]), np.signbit(results[1]))
    np.testing.assert_array_equal(results[0], results[1])


VECTOR_ADD_RAGGED = """
@mytriton.jit
def k(p, x, old, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    o = tl.atomic_add(p + offs, tl.load(x + offs, mask=m, other=0.0), mask=m)
    tl.store(old + offs, o, mask=m)
"""


@pytest.mark.gpu
def test_gpu_vector_atomic_adds_accumulate_and_return_the_old_values(kernel_module):
    """n a multiple of 4 (the launch proves it divisible by 16): each thread
    adds 4 f32 with one vector atom; three launches on the same memory."""
    module = kernel_module(VECTOR_ADD_RAGGED)
    rng = np.random.default_rng(13)
    n = 4000
    start, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    p, olds = start.copy(), np.zeros(n, np.float32)
    for _ in range(3):
        module.k[(-(-n // 512),)](p, x, olds, n, BLOCK=512)
    np.testing.assert_allclose(p, start + 3 * x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(olds, start + 2 * x, rtol=1e-5, atol=1e-5)
    cuda = compile_text(kernel_source(VECTOR_ADD_RAGGED), "cuda", signature="*fp32:16, *fp32:16, *fp32:16, i32:16",
                        defines={"BLOCK": 512})
    assert ".add.v4.f32" in cuda


@pytest.mark.gpu
@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_gpu_16_bit_vector_atomic_adds_accumulate_and_return_the_old_values(kernel_module, element):
    """8 halves a thread with one vector atom, rounded as the element type
    rounds each add (n ragged: the last run masked off whole)."""
    dtype = np.float16 if element == "f16" else ml_dtypes.bfloat16
    module = kernel_module(VECTOR_ADD_RAGGED)
    rng = np.random.default_rng(14)
    n = 4000
    start, x = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    p, olds = start.copy(), np.zeros(n, dtype)
    for _ in range(3):
        module.k[(-(-n // 1024),)](p, x, olds, n, BLOCK=1024)
    expected = start
    for _ in range(2):
        expected = (expected.astype(np.float32) + x.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(olds.astype(np.float32), expected.astype(np.float32))
    expected = (expected.astype(np.float32) + x.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(p.astype(np.float32), expected.astype(np.float32))
    cuda = compile_text(kernel_source(VECTOR_ADD_RAGGED), "cuda",
                        signature=f"*{'fp16' if element == 'f16' else 'bf16'}:16, " * 3 + "i32:16",
                        defines={"BLOCK": 1024})
    assert ".noftz.v8." in cuda


SCATTER_ADD = """
@mytriton.jit
def k(p, x, index, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    o = tl.atomic_add(p + tl.load(index + offs), tl.load(x + offs))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_gpu_16_bit_atomic_adds_at_scattered_addresses_add_each_element_once(kernel_module, element):
    """Addresses the axis analysis cannot prove contiguous: one ordered atom an element (sm_90)."""
    dtype = np.float16 if element == "f16" else ml_dtypes.bfloat16
    module = kernel_module(SCATTER_ADD)
    rng = np.random.default_rng(15)
    index = rng.permutation(1024).astype(np.int32)
    start, x = rng.standard_normal(1024).astype(dtype), rng.standard_normal(1024).astype(dtype)
    p = start.copy()
    module.k[(1,)](p, x, index, BLOCK=1024)
    expected = start.copy()
    expected[index] = (start[index].astype(np.float32) + x.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(p.astype(np.float32), expected.astype(np.float32))


@pytest.mark.parametrize("arch,vectors", [("sm_80", False), ("sm_89", False), ("sm_90", True), ("sm_90a", True),
                                          ("sm_100", True), ("sm_120a", True)])
def test_vector_atomics_are_for_sm_90_and_later(arch, vectors):
    from mytriton.target import has_vector_atomics

    assert has_vector_atomics(arch) is vectors
