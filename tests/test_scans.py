"""Scans and index reductions: tl.reduce and
tl.associative_scan with a @jit combine function over a tile or a tuple of
tiles, and the library over them (tl.cumsum, tl.cumprod, tl.argmax,
tl.argmin, tl.max/tl.min with return_indices): the interpreter against
NumPy, the IR ops they make, and the located errors of bad calls."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source, randf, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel
from mytriton.passes.verify import verify

M, N = 8, 16  # tile sizes; the data is ragged: R x C inside them
R, C = 5, 11


def build(body: str, signature: str | None = None, **defines):
    """The lowered SSA of kernel ``k`` of a file (standard imports added)."""
    return ssa_of(kernel_source(body), defines=defines, signature=signature, kernel="k")


def run(body: str, inputs: list[np.ndarray], outputs: list[np.ndarray], **defines) -> None:
    run_kernel(build(body, **defines), (1,), [*inputs, *outputs, R, C])


TILE = """
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < R) & (cols < C)
    offs = rows * C + cols
"""


def kernel(params: str, body: str) -> str:
    return f"""
@mytriton.jit
def k({params}, R, C, BM: tl.constexpr, BN: tl.constexpr):
{TILE}
{body}
"""


# ---- cumsum and cumprod ---------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_matches_numpy_along_either_axis(axis, reverse, rng):
    x = randf(rng, R, C)
    out = np.zeros((R, C), np.float32)
    other = "0.0"
    run(kernel("x_ptr, out_ptr", f"""
    x = tl.load(x_ptr + offs, mask=mask, other={other})
    tl.store(out_ptr + offs, tl.cumsum(x, axis={axis}, reverse={reverse}), mask=mask)
"""), [x], [out], BM=M, BN=N)
    flipped = np.flip(x, axis) if reverse else x
    expected = np.cumsum(flipped, axis=axis)
    expected = np.flip(expected, axis) if reverse else expected
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_cumsum_of_narrow_integers_sums_in_32_bits(rng):
    x = rng.integers(1, 100, (R, C)).astype(np.int8)
    out = np.zeros((R, C), np.int32)
    kernel_ = build(kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=1), mask=mask)
"""), BM=M, BN=N, signature="*i8, *i32, i32, i32")
    scan = next(op for op in walk(kernel_.body) if op.name == "scan")
    assert str(scan.results[0].type) == f"block<{M}x{N} x i32>"
    run_kernel(kernel_, (1,), [x, out, R, C])
    np.testing.assert_array_equal(out, np.cumsum(x.astype(np.int32), axis=1))


def test_cumsum_dtype_converts_before_summing(rng):
    x = rng.integers(-50, 50, (R, C)).astype(np.int32)
    out = np.zeros((R, C), np.float32)
    run_kernel(build(kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, 0, dtype=tl.float32), mask=mask)
"""), BM=M, BN=N, signature="*i32, *fp32, i32, i32"), (1,), [x, out, R, C])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0).astype(np.float32))


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_matches_numpy(reverse, rng):
    x = (1.0 + 0.1 * randf(rng, R, C)).astype(np.float32)
    out = np.zeros((R, C), np.float32)
    run(kernel("x_ptr, out_ptr", f"""
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    tl.store(out_ptr + offs, tl.cumprod(x, 1, reverse={reverse}), mask=mask)
"""), [x], [out], BM=M, BN=N)
    expected = np.flip(np.cumprod(np.flip(x, 1), axis=1), 1) if reverse else np.cumprod(x, axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_tensor_method_spellings_are_the_functions(rng):
    x = rng.integers(0, 4, (R, C)).astype(np.int32)
    sums = np.zeros((R, C), np.int32)
    arg = np.zeros(C, np.int32)
    run_kernel(build(kernel("x_ptr, s_ptr, a_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=-1)
    tl.store(s_ptr + offs, x.cumsum(1), mask=mask)
    c = tl.arange(0, BN)
    tl.store(a_ptr + c, x.argmax(0), mask=c < C)
"""), BM=M, BN=N, signature="*i32, *i32, *i32, i32, i32"), (1,), [x, sums, arg, R, C])
    np.testing.assert_array_equal(sums, np.cumsum(np.where(x >= 0, x, 0), axis=1))
    np.testing.assert_array_equal(arg, np.argmax(x, axis=0))


# ---- argmax, argmin, max/min with indices -------------------------------------------------


@pytest.mark.parametrize("fn, reference", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_and_argmin_resolve_ties_to_the_lowest_index(fn, reference, axis, rng):
    x = rng.integers(0, 3, (R, C)).astype(np.float32)  # many ties
    length = C if axis == 0 else R
    out = np.full(length, -7, np.int32)
    fill = "-float('inf')" if fn == "argmax" else "float('inf')"
    run_kernel(build(kernel("x_ptr, out_ptr", f"""
    x = tl.load(x_ptr + offs, mask=mask, other={fill})
    i = tl.arange(0, {'BN' if axis == 0 else 'BM'})
    tl.store(out_ptr + i, tl.{fn}(x, {axis}), mask=i < {'C' if axis == 0 else 'R'})
"""), BM=M, BN=N, signature="*fp32, *i32, i32, i32"), (1,), [x, out, R, C])
    np.testing.assert_array_equal(out, reference(x, axis=axis))


def test_max_with_return_indices_gives_values_and_first_indices(rng):
    x = rng.integers(-3, 3, (R, C)).astype(np.int32)
    values = np.zeros(R, np.int32)
    indices = np.zeros(R, np.int32)
    run_kernel(build(kernel("x_ptr, v_ptr, i_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=-100)
    v, i = tl.max(x, 1, return_indices=True)
    r = tl.arange(0, BM)
    tl.store(v_ptr + r, v, mask=r < R)
    tl.store(i_ptr + r, i, mask=r < R)
"""), BM=M, BN=N, signature="*i32, *i32, *i32, i32, i32"), (1,), [x, values, indices, R, C])
    np.testing.assert_array_equal(values, x.max(axis=1))
    np.testing.assert_array_equal(indices, x.argmax(axis=1))


def test_min_with_return_indices_over_the_whole_tile(rng):
    x = randf(rng, R, C)
    out = np.zeros(2, np.float32)
    run(kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=float('inf'))
    v, i = tl.min(x, return_indices=True)
    tl.store(out_ptr, v)
    tl.store(out_ptr + 1, i.to(tl.float32))
"""), [x], [out], BM=M, BN=N)
    flat = np.full((M, N), np.inf, np.float32)
    flat[:R, :C] = x
    assert out[0] == x.min() and out[1] == float(flat.argmin())


def test_argmax_takes_a_negative_axis(rng):
    x = randf(rng, R, C)
    out = np.zeros(R, np.int32)
    run_kernel(build(kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=-float('inf'))
    r = tl.arange(0, BM)
    tl.store(out_ptr + r, tl.argmax(x, -1), mask=r < R)
"""), BM=M, BN=N, signature="*fp32, *i32, i32, i32"), (1,), [x, out, R, C])
    np.testing.assert_array_equal(out, x.argmax(axis=1))


def test_argmax_tie_break_left_false_still_finds_a_maximum(rng):
    x = rng.integers(0, 2, (R, C)).astype(np.float32)
    out = np.zeros(R, np.int32)
    run_kernel(build(kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=-1.0)
    r = tl.arange(0, BM)
    tl.store(out_ptr + r, tl.argmax(x, 1, tie_break_left=False), mask=r < R)
"""), BM=M, BN=N, signature="*fp32, *i32, i32, i32"), (1,), [x, out, R, C])
    assert (x[np.arange(R), out] == x.max(axis=1)).all()


# ---- custom combine functions ----------------------------------------------------------------


COMBINES = """
@mytriton.jit
def _max_and_first(a, ai, b, bi):
    keep = a > b or (a == b and ai < bi)
    return tl.where(keep, a, b), tl.where(keep, ai, bi)


@mytriton.jit
def _affine(a1, b1, a2, b2):
    # (x -> a1 x + b1) then (x -> a2 x + b2): associative, not commutative
    return a1 * a2, a2 * b1 + b2


@mytriton.jit
def _first(a, b):
    return a
"""


@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_over_a_tuple_with_a_custom_combine(axis, rng):
    x = rng.integers(0, 4, (R, C)).astype(np.float32)
    length = C if axis == 0 else R
    values = np.zeros(length, np.float32)
    indices = np.zeros(length, np.int32)
    size, bound = ("BN", "C") if axis == 0 else ("BM", "R")
    idx = "rows + cols * 0" if axis == 0 else "cols + rows * 0"
    run_kernel(build(COMBINES + kernel("x_ptr, v_ptr, i_ptr", f"""
    x = tl.load(x_ptr + offs, mask=mask, other=-1.0)
    v, i = tl.reduce((x, {idx}), {axis}, _max_and_first)
    j = tl.arange(0, {size})
    tl.store(v_ptr + j, v, mask=j < {bound})
    tl.store(i_ptr + j, i, mask=j < {bound})
"""), BM=M, BN=N, signature="*fp32, *fp32, *i32, i32, i32"), (1,), [x, values, indices, R, C])
    np.testing.assert_array_equal(values, x.max(axis=axis))
    np.testing.assert_array_equal(indices, x.argmax(axis=axis))


def test_reduce_keeps_the_order_of_a_non_commutative_combine(rng):
    x = randf(rng, R, C)
    out = np.zeros(R, np.float32)
    run(COMBINES + kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=5.0)
    r = tl.arange(0, BM)
    tl.store(out_ptr + r, tl.reduce(x, 1, _first), mask=r < R)
"""), [x], [out], BM=M, BN=N)
    np.testing.assert_array_equal(out, x[:, 0])


def test_reduce_keep_dims_keeps_the_axis(rng):
    x = randf(rng, R, C)
    out = np.zeros((R, C), np.float32)
    run(COMBINES + kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x - tl.reduce(x, 1, _first, keep_dims=True), mask=mask)
"""), [x], [out], BM=M, BN=N)
    np.testing.assert_allclose(out, x - x[:, :1])


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_over_a_tuple_is_a_linear_recurrence(axis, reverse, rng):
    """Mamba's h_t = a_t * h_{t-1} + b_t, as a scan of (a, b) pairs."""
    a = (0.5 + 0.5 * rng.random((R, C))).astype(np.float32)
    b = randf(rng, R, C)
    out = np.zeros((R, C), np.float32)
    run_kernel(build(COMBINES + kernel("a_ptr, b_ptr, out_ptr", f"""
    a = tl.load(a_ptr + offs, mask=mask, other=1.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), {axis}, _affine, reverse={reverse})
    tl.store(out_ptr + offs, h, mask=mask)
"""), BM=M, BN=N), (1,), [a, b, out, R, C])
    steps = range(a.shape[axis] - 1, -1, -1) if reverse else range(a.shape[axis])
    h = np.zeros(a.shape[1 - axis], np.float64)
    expected = np.zeros((R, C))
    for t in steps:
        at, bt = np.take(a, t, axis), np.take(b, t, axis)
        h = at * h + bt
        if axis == 0:
            expected[t] = h
        else:
            expected[:, t] = h
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_combine_functions_become_regions_of_reduce_and_scan_ops():
    kernel_ = build(COMBINES + kernel("x_ptr, out_ptr", """
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.cumsum(x, 1) + tl.reduce(x, 1, _first)[:, None], mask=mask)
"""), BM=M, BN=N)
    ops = {op.name: op for op in walk(kernel_.body)}
    assert len(ops["scan"].regions[0].args) == 2 and ops["scan"].attrs == {"axis": 1}
    assert ops["reduce"].attrs == {"axis": 1}
    text = print_kernel(kernel_)
    assert print_kernel(verify(parse_kernel(text))) == text


# ---- errors -------------------------------------------------------------------------------------


def error_of(body: str) -> str:
    with pytest.raises(CompileError) as info:
        build(COMBINES + kernel("x_ptr, out_ptr", body), BM=M, BN=N)
    return str(info.value)


def test_a_combine_fn_that_is_not_a_jit_function_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan(x, 0, tl.maximum))
""")
    assert "combine_fn must be a @jit function" in message and ":" in message.split("error")[0]


def test_a_combine_fn_of_the_wrong_arity_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan((x, x), 0, _first))
""")
    assert "'_first' takes 2 argument(s), but a scan over 2 tile(s) passes it 4" in message


def test_a_combine_fn_returning_too_few_values_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    v, i = tl.reduce((x, x), 0, _to_one)
    tl.store(out_ptr + tl.arange(0, BN), v)


@mytriton.jit
def _to_one(a, ai, b, bi):
    return a
""")
    assert "'_to_one' returns 1 value(s); a reduce over 2 tile(s) needs 2" in message


def test_an_axis_out_of_range_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, 2))
""")
    assert "axis 2 is out of range" in message


def test_tuple_tiles_of_different_shapes_are_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    v, i = tl.reduce((x, tl.arange(0, BN)), 1, _max_and_first)
    tl.store(out_ptr + offs, x)
""")
    assert "must have one shape" in message


def test_a_combine_fn_that_makes_a_tile_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan(x, 0, _tiles))


@mytriton.jit
def _tiles(a, b):
    return a + tl.sum(tl.arange(0, 4).to(tl.float32))
""")
    assert "a combine function works on scalars, but 'arange' makes a tile" in message


def test_a_combine_fn_with_an_effect_is_a_located_error():
    message = error_of("""
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan(x, 0, _prints))


@mytriton.jit
def _prints(a, b):
    tl.device_print("a", a)
    return a + b
""")
    assert "a combine function cannot use 'device_print'" in message


# ---- CUDA ---------------------------------------------------------------------------------------
# One kernel with every form: row-wise cumsum, column argmax, a reverse scan
# over a tuple, a custom reduce over a tuple, a whole-tile max with its
# index, and scans/reductions of a reshaped tile; each program handles one
# (ragged, masked) R x C tile.

EVERY_FORM = COMBINES + """
@mytriton.jit
def k(x_ptr, a_ptr, cs_ptr, am_ptr, h_ptr, mx_ptr, mi_ptr, top_ptr, sh_ptr, R, C,
      BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    x_ptr += pid * R * C
    a_ptr += pid * R * C
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < R) & (cols < C)
    offs = rows * C + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = tl.load(a_ptr + offs, mask=mask, other=1.0)
    tl.store(cs_ptr + pid * R * C + offs, tl.cumsum(x, axis=1), mask=mask)
    c = tl.arange(0, BN)
    tl.store(am_ptr + pid * BN + c, tl.argmax(tl.where(mask, x, -float('inf')), 0), mask=c < C)
    _, h = tl.associative_scan((a, x), 0, _affine, reverse=True)
    tl.store(h_ptr + pid * R * C + offs, h, mask=mask)
    m, mi = tl.reduce((tl.where(mask, x, -float('inf')), cols + rows * 0), 1, _max_and_first)
    r = tl.arange(0, BM)
    tl.store(mx_ptr + pid * BM + r, m, mask=r < R)
    tl.store(mi_ptr + pid * BM + r, mi, mask=r < R)
    v, i = tl.max(tl.where(mask, x, -float('inf')), return_indices=True)
    tl.store(top_ptr + pid * 2, v)
    tl.store(top_ptr + pid * 2 + 1, i.to(tl.float32))
    flat = tl.reshape(x, (BM * BN,))
    e = tl.arange(0, BM * BN)
    tl.store(sh_ptr + pid * BM * BN + e, tl.cumsum(flat, 0, reverse=True))
"""

# (BM, BN, R, C): ragged and whole tiles, replicated ones (fewer elements than threads), many slots a thread
SHAPES = [(8, 16, 5, 11), (16, 64, 13, 50), (32, 32, 32, 32), (4, 128, 3, 100), (2, 4, 2, 3)]


def every_form_args(rng, BM, BN, R, C, programs=3):
    x = rng.integers(-4, 4, (programs, R, C)).astype(np.float32)  # ties for argmax
    a = (0.5 + 0.5 * rng.random((programs, R, C))).astype(np.float32)
    return [x, a, np.full((programs, R, C), np.nan, np.float32), np.full((programs, BN), -5, np.int32),
            np.full((programs, R, C), np.nan, np.float32), np.full((programs, BM), np.nan, np.float32),
            np.full((programs, BM), -5, np.int32), np.full((programs, 2), np.nan, np.float32),
            np.full((programs, BM * BN), np.nan, np.float32), R, C]


def test_every_form_matches_numpy_in_the_interpreter(kernel_module, rng):
    BM, BN, R, C = SHAPES[0]
    args = every_form_args(rng, BM, BN, R, C)
    kernel_module(EVERY_FORM).k[(3,)](*args, BM=BM, BN=BN, backend="interp")
    x, a, cs, am, h, mx, mi, top, sh = args[:9]
    np.testing.assert_allclose(cs, np.cumsum(x, axis=2), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(am[:, :C], x.argmax(axis=1))
    np.testing.assert_array_equal(mx[:, :R], x.max(axis=2))
    np.testing.assert_array_equal(mi[:, :R], x.argmax(axis=2))
    np.testing.assert_array_equal(top[:, 0], x.reshape(3, -1).max(axis=1))
    padded = np.zeros((3, BM, BN), np.float32)
    padded[:, :R, :C] = x
    np.testing.assert_allclose(sh, np.flip(np.cumsum(np.flip(padded.reshape(3, -1), 1), 1), 1), rtol=1e-5, atol=1e-5)


@pytest.mark.nvcc
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_cuda_of_reduce_and_scan_builds_with_nvcc(shape, num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    BM, BN, _, _ = shape
    cuda = compile_text(kernel_source(EVERY_FORM), "cuda", kernel="k", defines={"BM": BM, "BN": BN},
                        num_warps=num_warps)
    assert "by warp shuffles" in cuda  # the fast path (tests/test_scans_gpu_paths.py)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


def test_the_scan_layouts_show_in_the_laid_out_ssa():
    text = compile_text(kernel_source(EVERY_FORM), "layouts", kernel="k", defines={"BM": 8, "BN": 16})
    scans = [line for line in text.splitlines() if " = scan " in line or " = reduce " in line]
    assert scans and all("#" in line or ": f32, i32" in line for line in scans)
    assert any(" = reduce " in line and "#slice" in line for line in scans)


def test_a_scan_over_the_shared_memory_budget_is_a_located_error():
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(EVERY_FORM), "cuda", kernel="k", defines={"BM": 64, "BN": 64},
                     shared_budget=4096)
    assert "kernel.py:" in str(info.value) and "shared" in str(info.value)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_gpu_reduce_and_scan_match_the_interpreter(kernel_module, shape, num_warps):
    BM, BN, R, C = shape
    module = kernel_module(EVERY_FORM)
    results = []
    for backend in ("cuda", "interp"):
        args = every_form_args(np.random.default_rng(BM * BN + R), BM, BN, R, C)
        module.k[(3,)](*args, BM=BM, BN=BN, num_warps=num_warps, backend=backend)
        results.append(args[2:9])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# ---- TTIR and MLIR --------------------------------------------------------------------------------


def test_reduce_and_scan_are_tt_reduce_and_tt_scan_with_the_combine_region(tmp_path):
    from ttir_check import triton_compile

    text = compile_text(kernel_source(EVERY_FORM), "ttir", kernel="k", defines={"BM": 8, "BN": 16})
    assert '"tt.scan"(' in text and "reverse = true" in text and "tt.scan.return" in text
    assert '"tt.reduce"(' in text and "tt.reduce.return" in text
    assert ":2 = \"tt.reduce\"" in text  # a tuple's reduce has a result per tile
    triton_compile(text, tmp_path)  # skips without Triton


def test_the_mlir_back_end_refuses_reduce_and_scan_with_a_located_error():
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source(EVERY_FORM), "mlir", kernel="k", defines={"BM": 8, "BN": 16})
    assert "kernel.py:" in str(info.value) and "not covered by the MLIR back end" in str(info.value)


# ---- dtypes -------------------------------------------------------------------------------------

DTYPES = """
@mytriton.jit
def k(x_ptr, b_ptr, sums_ptr, counts_ptr, prods_ptr, arg_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0)
    b = tl.load(b_ptr + i, mask=m, other=0) > 0
    tl.store(sums_ptr + i, tl.cumsum(x, 0), mask=m)
    tl.store(counts_ptr + i, tl.cumsum(b, 0), mask=m)
    tl.store(prods_ptr + i, tl.cumprod(x.to(tl.float32) * 0.01 + 1.0, 0, reverse=True), mask=m)
    tl.store(arg_ptr, tl.argmin(tl.where(m, x, 100), 0))
"""

# (input dtype, signature, cumsum's dtype)
INT_DTYPES = [
    (np.int8, "*i8, *i32, *i32, *i32, *fp32, *i32, i32", np.int32),
    (np.uint8, "*u8, *i32, *u32, *i32, *fp32, *i32, i32", np.uint32),
    (np.int16, "*i16, *i32, *i32, *i32, *fp32, *i32, i32", np.int32),
    (np.int64, "*i64, *i32, *i64, *i32, *fp32, *i32, i32", np.int64),
]


def dtype_args(rng, dtype, out_dtype, n=200, block=256):
    return [rng.integers(0, 100, block).astype(dtype), rng.integers(-1, 2, block).astype(np.int32),
            np.zeros(block, out_dtype), np.zeros(block, np.int32), np.zeros(block, np.float32),
            np.zeros(1, np.int32), n]


@pytest.mark.parametrize("dtype, signature, out_dtype", INT_DTYPES)
def test_integer_and_bool_scans_match_numpy(dtype, signature, out_dtype, rng):
    args = dtype_args(rng, dtype, out_dtype)
    run_kernel(build(DTYPES, BLOCK=256, signature=signature), (1,), args)
    x, b, sums, counts, prods, arg, n = args
    np.testing.assert_array_equal(sums[:n], np.cumsum(x[:n].astype(out_dtype)))
    np.testing.assert_array_equal(counts[:n], np.cumsum(b[:n] > 0))
    scaled = x[:n].astype(np.float32) * np.float32(0.01) + np.float32(1.0)
    np.testing.assert_allclose(prods[:n], np.cumprod(scaled[::-1])[::-1], rtol=1e-4)
    assert arg[0] == np.argmin(x[:n])


@pytest.mark.nvcc
@pytest.mark.parametrize("signature", [s for _, s, _ in INT_DTYPES] + [
    "*fp16, *i32, *fp16, *i32, *fp32, *i32, i32", "*bf16, *i32, *fp32, *i32, *fp32, *i32, i32"])
def test_cuda_of_scans_of_every_dtype_builds_with_nvcc(signature):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(DTYPES), "cuda", kernel="k", defines={"BLOCK": 256}, signature=signature)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, signature, out_dtype", INT_DTYPES)
@pytest.mark.parametrize("num_warps", [1, 4])
def test_gpu_integer_and_bool_scans_match_the_interpreter(kernel_module, dtype, signature, out_dtype, num_warps):
    module = kernel_module(DTYPES)
    results = []
    for backend in ("cuda", "interp"):
        args = dtype_args(np.random.default_rng(9), dtype, out_dtype)
        module.k[(1,)](*args, BLOCK=256, num_warps=num_warps, backend=backend)
        results.append(args[2:6])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-5)


NON_COMMUTATIVE = COMBINES + """
@mytriton.jit
def k(x_ptr, a_ptr, first_ptr, comp_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < R) & (cols < C)
    x = tl.load(x_ptr + rows * C + cols, mask=mask, other=0.0)
    a = tl.load(a_ptr + rows * C + cols, mask=mask, other=1.0)
    r = tl.arange(0, BM)
    tl.store(first_ptr + r, tl.reduce(x, 1, _first), mask=r < R)
    _, b = tl.reduce((a, x), 1, _affine)  # the composition of each row's affine maps, in order
    tl.store(comp_ptr + r, b, mask=r < R)
"""


def non_commutative_args(rng, R, C, BM):
    return [randf(rng, R, C), (0.5 + 0.5 * rng.random((R, C))).astype(np.float32),
            np.full(BM, np.nan, np.float32), np.full(BM, np.nan, np.float32), R, C]


def test_a_reduce_keeps_the_order_of_a_non_commutative_combine(kernel_module, rng):
    R, C, BM, BN = 7, 45, 8, 64
    args = non_commutative_args(rng, R, C, BM)
    kernel_module(NON_COMMUTATIVE).k[(1,)](*args, BM=BM, BN=BN, backend="interp")
    x, a, first, comp = args[:4]
    h = np.zeros(R)
    for t in range(C):
        h = a[:, t] * h + x[:, t]
    np.testing.assert_array_equal(first[:R], x[:, 0])
    np.testing.assert_allclose(comp[:R], h, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_gpu_a_reduce_keeps_the_order_of_a_non_commutative_combine(kernel_module, num_warps):
    module = kernel_module(NON_COMMUTATIVE)
    results = []
    for backend in ("cuda", "interp"):
        args = non_commutative_args(np.random.default_rng(11), 7, 45, 8)
        module.k[(1,)](*args, BM=8, BN=64, num_warps=num_warps, backend=backend)
        results.append(args[2:4])
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-5)
