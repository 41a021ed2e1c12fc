"""Random numbers: tl.rand, tl.randn, tl.randint,
tl.randint4x, tl.philox and the rest of Triton's random.py, written in the
kernel language (mytriton/language/random.py) and traced as helpers.

Checked against a NumPy Philox written from the published algorithm
(tests/philox_reference.py, itself checked against Random123's known-answer
vectors): the integers bit for bit, tl.rand bit for bit, tl.randn within a
few ulps (its log, cos and sqrt are the backend's: NumPy's f32 log in the
interpreter is within 3 ulps, CUDA's logf within 1). On the GPU (the lead
runs these on the H200) against the same reference and the interpreter.
"""
from __future__ import annotations

import numpy as np
import pytest

import mytriton
import philox_reference as ref
from conftest import cdiv, compile_text, kernel_source
from mytriton.diagnostics import CompileError

RANDN_ULPS = 4  # NumPy's f32 log is within 3 ulps; each later step rounds once more

ONE_D = """
@mytriton.jit
def k(ints_ptr, uniform_ptr, normal_ptr, seed, base, n, BLOCK: tl.constexpr):
    offs = base + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(ints_ptr + i, tl.randint(seed, offs), mask=m)
    tl.store(uniform_ptr + i, tl.rand(seed, offs), mask=m)
    tl.store(normal_ptr + i, tl.randn(seed, offs), mask=m)
"""

TWO_D = """
@mytriton.jit
def k(w0_ptr, w1_ptr, w2_ptr, w3_ptr, seed, stride, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    offs = rows * stride + cols
    m = (rows < M) & (cols < N)
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(w0_ptr + offs, r0, mask=m)
    tl.store(w1_ptr + offs, r1, mask=m)
    tl.store(w2_ptr + offs, r2, mask=m)
    tl.store(w3_ptr + offs, r3, mask=m)
"""


@pytest.fixture(scope="module")
def one_d(tmp_path_factory):
    return _load(tmp_path_factory, ONE_D, "one_d")


@pytest.fixture(scope="module")
def two_d(tmp_path_factory):
    return _load(tmp_path_factory, TWO_D, "two_d")


def _load(tmp_path_factory, body: str, name: str):
    import importlib.util

    path = tmp_path_factory.mktemp("random") / f"{name}.py"
    path.write_text(kernel_source(body))
    spec = importlib.util.spec_from_file_location(f"random_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_one_d(module, seed: int, base: int, n: int, backend: str = "interp", block: int = 128):
    ints, uniform, normal = np.zeros(n, np.uint32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    module.k[(cdiv(n, block),)](ints, uniform, normal, seed, base, n, BLOCK=block, backend=backend)
    return ints, uniform, normal


def offsets_of(base: int, n: int) -> np.ndarray:
    """The offsets ONE_D draws for: i32 when ``base`` is an i32 argument, i64 when it is wider."""
    dtype = np.int32 if -2**31 <= base < 2**31 - n else np.int64
    return (np.arange(n, dtype=np.int64) + base).astype(dtype)


def run_two_d(module, seed: int, M: int, N: int, backend: str = "interp"):
    words = [np.zeros((M, N), np.uint32) for _ in range(4)]
    module.k[(cdiv(M, 16), cdiv(N, 32))](*words, seed, N, M, N, BM=16, BN=32, backend=backend)
    return words


# ---- the reference itself -------------------------------------------------------------------


@pytest.mark.parametrize("bits, vectors", [(32, ref.KAT_4X32_10), (64, ref.KAT_4X64_10)])
def test_the_numpy_philox_gives_random123s_known_answers(bits, vectors):
    dtype = np.uint32 if bits == 32 else np.uint64
    for counter, key, expected in vectors:
        got = ref.philox([np.array(c, dtype) for c in counter], key, bits=bits)
        assert [int(w) for w in got] == list(expected)


# ---- the interpreter against the reference ----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 123, -7, 2**31 - 1, 2**40 + 5])
def test_randint_and_rand_equal_the_reference_for_i32_offsets(one_d, seed):
    """Seeds: zero, 1 (compiled in as a constant), negative (sign-extended
    into the key's high word), an i64 seed (both key words)."""
    n = 1000
    ints, uniform, normal = run_one_d(one_d, seed, 0, n)
    offsets = offsets_of(0, n)
    np.testing.assert_array_equal(ints, ref.randint(seed, offsets))
    np.testing.assert_array_equal(uniform, ref.rand(seed, offsets))
    assert ref.ulps_apart(normal, ref.randn(seed, offsets)).max() <= RANDN_ULPS


@pytest.mark.parametrize("base", [2**32 - 300, -(2**33) - 77])
def test_i64_offsets_put_their_high_word_in_the_second_counter(one_d, base):
    """Offsets past 2**32 (and negative i64 ones) draw from the counter
    (low word, high word, 0, 0), as Triton 3's randint4x."""
    n = 600
    ints, uniform, normal = run_one_d(one_d, 42, base, n)
    offsets = offsets_of(base, n)
    assert offsets.dtype == np.int64
    np.testing.assert_array_equal(ints, ref.randint(42, offsets))
    np.testing.assert_array_equal(uniform, ref.rand(42, offsets))
    assert ref.ulps_apart(normal, ref.randn(42, offsets)).max() <= RANDN_ULPS
    high = (offsets >> 32) != 0
    assert high.any()
    low_words_only = ref.randint(42, offsets.astype(np.uint32))
    assert (ints[high] != low_words_only[high]).all()
    np.testing.assert_array_equal(ints[~high], low_words_only[~high])


def test_negative_i32_offsets_are_their_bits_read_unsigned(one_d):
    n = 300
    ints, _, _ = run_one_d(one_d, 9, -150, n)
    offsets = offsets_of(-150, n)
    np.testing.assert_array_equal(ints, ref.randint(9, offsets.view(np.uint32)))


@pytest.mark.parametrize("seed", [5, -1])
def test_randint4x_on_a_rank_2_tile_gives_the_four_philox_words(two_d, seed):
    M, N = 37, 70  # ragged: masked rows and columns
    words = run_two_d(two_d, seed, M, N)
    offsets = (np.arange(M)[:, None] * N + np.arange(N)[None, :]).astype(np.int32)
    for got, expected in zip(words, ref.randint4x(seed, offsets)):
        np.testing.assert_array_equal(got, expected)


def test_rand4x_randn4x_and_n_rounds(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def k(u_ptr, g_ptr, r7_ptr, seed, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            u0, u1, u2, u3 = tl.rand4x(seed, offs)
            g0, g1, g2, g3 = tl.random.randn4x(seed, offs)
            tl.store(u_ptr + offs, u0)
            tl.store(u_ptr + BLOCK + offs, u1)
            tl.store(u_ptr + 2 * BLOCK + offs, u2)
            tl.store(u_ptr + 3 * BLOCK + offs, u3)
            tl.store(g_ptr + offs, g0)
            tl.store(g_ptr + BLOCK + offs, g1)
            tl.store(g_ptr + 2 * BLOCK + offs, g2)
            tl.store(g_ptr + 3 * BLOCK + offs, g3)
            tl.store(r7_ptr + offs, tl.randint(seed, offs, n_rounds=7))
    """)
    block, seed = 256, 31337
    u, g, r7 = np.zeros(4 * block, np.float32), np.zeros(4 * block, np.float32), np.zeros(block, np.uint32)
    module.k[(1,)](u, g, r7, seed, BLOCK=block, backend="interp")
    offsets = np.arange(block, dtype=np.int32)
    words = ref.randint4x(seed, offsets)
    uniforms = [ref.uniform(w) for w in words]
    np.testing.assert_array_equal(u, np.concatenate(uniforms))
    normals = [*ref.box_muller(uniforms[0], uniforms[1]), *ref.box_muller(uniforms[2], uniforms[3])]
    assert ref.ulps_apart(g, np.concatenate(normals)).max() <= RANDN_ULPS
    np.testing.assert_array_equal(r7, ref.randint(seed, offsets, rounds=7))


KAT_KERNEL = """
@mytriton.jit
def k(c32_ptr, k32_ptr, out32_ptr, c64_ptr, k64_ptr, out64_ptr):
    i = tl.arange(0, 4)
    c = tl.load(c32_ptr + i * 4)
    d = tl.philox_impl(c, tl.load(c32_ptr + i * 4 + 1), tl.load(c32_ptr + i * 4 + 2),
                       tl.load(c32_ptr + i * 4 + 3), tl.load(k32_ptr + i * 2), tl.load(k32_ptr + i * 2 + 1))
    tl.store(out32_ptr + i * 4, d[0])
    tl.store(out32_ptr + i * 4 + 1, d[1])
    tl.store(out32_ptr + i * 4 + 2, d[2])
    tl.store(out32_ptr + i * 4 + 3, d[3])
    j = tl.arange(0, 2)
    e = tl.philox_impl(tl.load(c64_ptr + j * 4), tl.load(c64_ptr + j * 4 + 1), tl.load(c64_ptr + j * 4 + 2),
                       tl.load(c64_ptr + j * 4 + 3), tl.load(k64_ptr + j * 2), tl.load(k64_ptr + j * 2 + 1))
    tl.store(out64_ptr + j * 4, e[0])
    tl.store(out64_ptr + j * 4 + 1, e[1])
    tl.store(out64_ptr + j * 4 + 2, e[2])
    tl.store(out64_ptr + j * 4 + 3, e[3])
"""


def run_known_answers(kernel_module, backend: str) -> None:
    module = kernel_module(KAT_KERNEL)
    kat32 = ref.KAT_4X32_10 + [ref.KAT_4X32_10[0]]  # four lanes
    c32 = np.array([c for c, _, _ in kat32], np.uint32).ravel()
    k32 = np.array([k for _, k, _ in kat32], np.uint32).ravel()
    c64 = np.array([c for c, _, _ in ref.KAT_4X64_10], np.uint64).ravel()
    k64 = np.array([k for _, k, _ in ref.KAT_4X64_10], np.uint64).ravel()
    out32, out64 = np.zeros(16, np.uint32), np.zeros(8, np.uint64)
    module.k[(1,)](c32, k32, out32, c64, k64, out64, backend=backend)
    assert out32.reshape(4, 4).tolist() == [list(o) for _, _, o in kat32]
    assert out64.reshape(2, 4).tolist() == [list(o) for _, _, o in ref.KAT_4X64_10]


def test_philox_impl_gives_random123s_known_answers_for_32_and_64_bit_words(kernel_module):
    run_known_answers(kernel_module, "interp")


def test_philox_on_64_bit_counters_keys_with_the_whole_seed(kernel_module):
    """tl.philox with u64 counters is Philox-4x64-10 keyed by (seed, 0):
    seed 0 and counter 0 give Random123's first 4x64 answer."""
    module = kernel_module("""
        @mytriton.jit
        def k(out_ptr, seed):
            c = tl.zeros((2,), tl.uint64)
            w0, w1, w2, w3 = tl.philox(seed, c, c, c, c)
            tl.store(out_ptr + tl.arange(0, 2), w0)
            tl.store(out_ptr + 2 + tl.arange(0, 2), w1)
            tl.store(out_ptr + 4 + tl.arange(0, 2), w2)
            tl.store(out_ptr + 6 + tl.arange(0, 2), w3)
    """)
    out = np.zeros(8, np.uint64)
    module.k[(1,)](out, 0, backend="interp")
    assert out.reshape(4, 2)[:, 0].tolist() == list(ref.KAT_4X64_10[0][2])
    module.k[(1,)](out, 2**40 + 3, backend="interp")
    zero = np.zeros(2, np.uint64)
    expected = ref.philox((zero, zero, zero, zero), (2**40 + 3, 0), bits=64)
    np.testing.assert_array_equal(out.reshape(4, 2), np.stack(expected))


EDGE_BITS = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF, 0x3F800000, 12345],
                     np.uint32)


def uniform_at_the_ends(kernel_module, backend: str) -> None:
    module = kernel_module("""
        @mytriton.jit
        def k(bits_ptr, out_ptr, wide_ptr, wide_out_ptr):
            i = tl.arange(0, 16)
            m = i < 10
            tl.store(out_ptr + i, tl.uint_to_uniform_float(tl.load(bits_ptr + i, mask=m)), mask=m)
            tl.store(wide_out_ptr + i, tl.uint_to_uniform_float(tl.load(wide_ptr + i, mask=m)), mask=m)
    """)
    wide = (EDGE_BITS.astype(np.uint64) << np.uint64(32)) | EDGE_BITS.astype(np.uint64)
    out, wide_out = np.zeros(10, np.float32), np.zeros(10, np.float32)
    module.k[(1,)](EDGE_BITS, out, wide, wide_out, backend=backend)
    np.testing.assert_array_equal(out, ref.uniform(EDGE_BITS))
    assert out.max() < 1.0 and out.min() == 0.0
    signed = wide.view(np.int64)
    folded = np.where(signed < 0, -(signed + 1), signed)  # -x - 1 without overflow
    np.testing.assert_array_equal(wide_out, folded.astype(np.float32) * np.float32(1.0842020432385337e-19))
    assert wide_out.max() < 1.0


def test_uint_to_uniform_float_at_the_ends_of_the_range(kernel_module):
    """Both signs fold onto [0, 2**31 - 1] (0x80000000 included: -x - 1
    wraps to 2**31 - 1); the largest stays below 1.0; 0 and 0xFFFFFFFF both
    give 0; 64-bit integers likewise."""
    uniform_at_the_ends(kernel_module, "interp")


# ---- statistics and determinism ------------------------------------------------------------------


def test_rand_is_uniform_and_randn_standard_normal(one_d):
    n = 1 << 16
    ints, uniform, normal = run_one_d(one_d, 2024, 0, n, block=1024)
    assert 0.0 <= uniform.min() and uniform.max() < 1.0
    assert abs(uniform.mean() - 0.5) < 0.01 and abs(uniform.var() - 1 / 12) < 0.005
    assert abs(normal.mean()) < 0.02 and abs(normal.var() - 1.0) < 0.03
    assert abs((np.abs(normal) < 1).mean() - 0.6827) < 0.01  # one sigma
    counts = np.histogram(uniform, bins=16, range=(0, 1))[0]
    assert counts.min() > 0.9 * n / 16 and counts.max() < 1.1 * n / 16
    bits = np.unpackbits(ints.view(np.uint8))
    assert abs(bits.mean() - 0.5) < 0.005


def test_the_same_seed_and_offsets_give_the_same_numbers_and_others_differ(one_d):
    first = run_one_d(one_d, 77, 0, 500)
    again = run_one_d(one_d, 77, 0, 500, block=64)  # another tiling of the same offsets
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    other_seed = run_one_d(one_d, 78, 0, 500)
    shifted = run_one_d(one_d, 77, 1, 500)
    assert (first[0] != other_seed[0]).mean() > 0.99
    np.testing.assert_array_equal(shifted[0][:-1], first[0][1:])  # the numbers follow the offsets


# ---- the language surface and errors --------------------------------------------------------------


def test_random_functions_are_also_tl_random_names_and_give_uint32(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def k(out_ptr, seed):
            offs = tl.arange(0, 64)
            r = tl.randint(seed, offs)
            tl.static_assert(r.dtype == tl.uint32)
            tl.static_assert(tl.rand(seed, offs).dtype == tl.float32)
            same = (tl.random.randint(seed, offs) == r) & (tl.random.rand(seed, offs) == tl.rand(seed, offs))
            tl.store(out_ptr + offs, same.to(tl.int32))
    """)
    out = np.zeros(64, np.int32)
    module.k[(1,)](out, 3, backend="interp")
    assert out.all()


def test_tl_random_names_work_outside_kernels_as_python_modules():
    import mytriton.language as tl

    with pytest.raises(RuntimeError, match="inside a @mytriton.jit kernel"):
        tl.rand(0, 0)
    assert isinstance(tl.random.rand, mytriton.JITFunction)


def _error(body: str, **defines) -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(body), "ssa", file="k.py", defines=defines)
    return info.value


def test_an_error_inside_a_random_helper_points_at_the_call():
    err = _error("""
    @mytriton.jit
    def k(out_ptr, seed):
        offs = out_ptr + tl.arange(0, 16)
        tl.store(offs, tl.rand(seed, offs))
    """)
    assert "the offsets must be integers, not pointers" in str(err)
    assert (err.loc.file, err.loc.line, err.loc.col) == ("k.py", 7, 20), str(err)


def test_philox_refuses_counters_of_other_widths_at_the_call():
    err = _error("""
    @mytriton.jit
    def k(out_ptr, seed):
        c = tl.arange(0, 16).to(tl.int16)
        tl.store(out_ptr + tl.arange(0, 16), tl.philox(seed, c, c, c, c)[0])
    """)
    assert "the counters must be 32- or 64-bit integers" in str(err)
    assert (err.loc.file, err.loc.line) == ("k.py", 7)


def test_an_unknown_tl_random_name_is_a_located_error():
    err = _error("""
    @mytriton.jit
    def k(out_ptr, seed):
        tl.store(out_ptr, tl.random.shuffle(seed, 0))
    """)
    assert "'shuffle' is not part of mytriton.language.random" in str(err)
    assert (err.loc.file, err.loc.line) == ("k.py", 6)


def test_a_wrong_argument_to_a_random_function_is_a_located_error():
    err = _error("""
    @mytriton.jit
    def k(out_ptr, seed):
        tl.store(out_ptr, tl.rand(seed, tl.arange(0, 4), rounds=3))
    """)
    assert "'rand' has no parameter 'rounds'" in str(err)
    assert (err.loc.file, err.loc.line) == ("k.py", 6)


# ---- CUDA ---------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("body, defines, signature", [
    (ONE_D, {"BLOCK": 128}, "*u32, *fp32, *fp32, i32, i32, i32"),
    (ONE_D, {"BLOCK": 128}, "*u32, *fp32, *fp32, i64, i64, i32"),
    (TWO_D, {"BM": 16, "BN": 32}, "*u32, *u32, *u32, *u32, i32, i32, i32, i32"),
])
def test_the_cuda_of_random_kernels_builds_with_nvcc_to_32_bit_multiplies(body, defines, signature):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(body), "cuda", defines=defines, signature=signature)
    ptx = compile_ptx(cuda, "sm_90")
    assert ".entry k(" in ptx
    assert "mul.hi.u32" in ptx and "mul.lo" in ptx
    assert "mul.hi.u64" not in ptx  # Philox-4x32: no 64-bit products


@pytest.mark.nvcc
def test_the_cuda_of_philox_on_64_bit_words_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(KAT_KERNEL), "cuda", signature="*u32, *u32, *u32, *u64, *u64, *u64")
    ptx = compile_ptx(cuda, "sm_90")
    assert "mul.hi.u32" in ptx and "mul.hi.u64" in ptx


# ---- GPU (the lead runs these on the H200) ------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("seed, base", [(0, 0), (123, 5), (-7, -1000), (2**40 + 5, 0), (42, 2**32 - 300)])
def test_gpu_random_numbers_equal_the_reference_and_the_interpreter(one_d, seed, base):
    n = 3000  # ragged: the last program is masked
    gpu = run_one_d(one_d, seed, base, n, backend="cuda")
    interp = run_one_d(one_d, seed, base, n, backend="interp")
    offsets = offsets_of(base, n)
    np.testing.assert_array_equal(gpu[0], ref.randint(seed, offsets))
    np.testing.assert_array_equal(gpu[1], ref.rand(seed, offsets))
    np.testing.assert_array_equal(gpu[0], interp[0])
    np.testing.assert_array_equal(gpu[1], interp[1])
    # randn: CUDA's logf, cosf, sqrtf (within 1, 2 and 0 ulps) against NumPy's (log within 3).
    assert ref.ulps_apart(gpu[2], ref.randn(seed, offsets)).max() <= RANDN_ULPS
    assert ref.ulps_apart(gpu[2], interp[2]).max() <= 2 * RANDN_ULPS


@pytest.mark.gpu
def test_gpu_uint_to_uniform_float_at_the_ends_of_the_range(kernel_module):
    uniform_at_the_ends(kernel_module, "cuda")


@pytest.mark.gpu
def test_gpu_philox_impl_gives_random123s_known_answers_for_32_and_64_bit_words(kernel_module):
    run_known_answers(kernel_module, "cuda")


@pytest.mark.gpu
def test_gpu_randint4x_on_a_rank_2_tile_equals_the_interpreter(two_d):
    M, N = 45, 100
    gpu = run_two_d(two_d, -3, M, N, backend="cuda")
    interp = run_two_d(two_d, -3, M, N, backend="interp")
    offsets = (np.arange(M)[:, None] * N + np.arange(N)[None, :]).astype(np.int32)
    for g, i, expected in zip(gpu, interp, ref.randint4x(-3, offsets)):
        np.testing.assert_array_equal(g, expected)
        np.testing.assert_array_equal(g, i)
