"""Names of Triton's language that published kernels use beside the common
ones: ``tl.assume``, ``tl.broadcast``, ``tl.squeeze``/``tl.unsqueeze``,
``tl.ravel``, ``tl.xor_sum``, ``tl.reduce_or``, ``tl.swizzle2d``,
``tl.sqrt_rn``, ``tl.add``/``sub``/``mul``, ``tl.TRITON_MAX_TENSOR_NUMEL``,
the annotations ``tl.tensor`` and ``tl.const``, ``isinstance`` on
``tl.tensor``, ``tl.tensor_descriptor`` and ``tl.constexpr``, and Triton's
8-bit float names in a branch not taken. Each as Triton defines it, checked
in the interpreter against NumPy; CUDA that nvcc builds; the GPU test
compares the GPU with the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, cdiv, compile_text, kernel_source, run_published
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk


def ops_of(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def compile_error(body: str, signature: str | None = None, **defines) -> str:
    with pytest.raises(CompileError) as info:
        build(body, signature=signature, **defines)
    return str(info.value)


# ---- tl.assume ----------------------------------------------------------------------------------

ASSUMED = """
@mytriton.jit
def k(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(stride > 0)
    tl.assume(BLOCK > 0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)
"""


def test_assume_adds_nothing_to_the_ssa():
    kernel = build(ASSUMED, signature="*fp32, *fp32, i32, i32", BLOCK=64)
    without = build(ASSUMED.replace("tl.assume(", "tl.static_assert(True or "), signature="*fp32, *fp32, i32, i32",
                    BLOCK=64)
    assert ops_of(kernel) == ops_of(without)


def test_assume_refuses_what_is_not_a_condition():
    assert "tl.assume needs a condition (a bool), got i32" in compile_error("""
    @mytriton.jit
    def k(x_ptr, n):
        tl.assume(n)
    """, signature="*fp32, i32")
    assert "got the constant 3" in compile_error("""
    @mytriton.jit
    def k(x_ptr):
        tl.assume(3)
    """, signature="*fp32")


# ---- shapes ---------------------------------------------------------------------------------------

SHAPES = """
@mytriton.jit
def k(col_ptr, row_ptr, sum_ptr, flat_ptr, back_ptr, M: tl.constexpr, N: tl.constexpr):
    col = tl.unsqueeze(tl.load(col_ptr + tl.arange(0, M)), 1)          # [M, 1]
    row = tl.load(row_ptr + tl.unsqueeze(tl.arange(0, N), 0))          # [1, N]
    a, b = tl.broadcast(col, row)                                      # both [M, N]
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(sum_ptr + idx, a * 10 + b)
    tl.store(flat_ptr + tl.arange(0, M * N), tl.ravel(a - b))
    tl.store(back_ptr + tl.arange(0, N), tl.squeeze(row, 0) + tl.squeeze(col, -1).sum())
"""


def test_broadcast_unsqueeze_squeeze_and_ravel_as_numpy(rng):
    m, n = 4, 8
    col = rng.standard_normal(m).astype(np.float32)
    row = rng.standard_normal(n).astype(np.float32)
    outs = [np.full(m * n, np.nan, np.float32), np.full(m * n, np.nan, np.float32), np.full(n, np.nan, np.float32)]
    run_kernel(build(SHAPES, M=m, N=n), (1,), [col, row, *outs])
    a, b = np.broadcast_arrays(col[:, None], row[None, :])
    np.testing.assert_array_equal(outs[0], (a * np.float32(10) + b).ravel())
    np.testing.assert_array_equal(outs[1], (a - b).ravel())
    np.testing.assert_allclose(outs[2], row + col.sum(), rtol=1e-6)


def test_ravel_of_a_transposed_tile_is_row_major_as_numpy(rng):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
        tl.store(out_ptr + tl.arange(0, 32), x.T.ravel())
    """)
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, x.reshape(4, 8).T.ravel())


@pytest.mark.parametrize("call, message", [
    ("tl.squeeze(x, 1)", "tl.squeeze: dimension 1 of shape (1, 8) is 8, not 1"),
    ("tl.squeeze(x, 2)", "tl.squeeze: dim 2 is out of range for 2 dimension(s)"),
    ("tl.unsqueeze(x, 3)", "tl.unsqueeze: dim 3 is out of range for 3 dimension(s)"),
    ("tl.squeeze(tl.arange(0, 1), 0)", "tl.squeeze of a rank-1 tile would give a 0-d tensor"),
    ("tl.broadcast(x, tl.arange(0, 4))", "tl.broadcast: shapes"),
])
def test_shape_functions_refuse_what_triton_refuses(call, message):
    error = compile_error(f"""
    @mytriton.jit
    def k(out_ptr):
        x = tl.zeros((1, 8), tl.float32)
        y = {call}
    """)
    assert message in error


def test_a_shape_is_sliced_as_a_python_tuple():
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
        rows: tl.constexpr = x.shape[:-1]
        tl.static_assert(rows == (4,) and x.shape[1:] == (8,) and x.shape[::-1] == (8, 4))
        tl.store(out_ptr + tl.arange(0, rows[0]), tl.sum(x, 1))
    """)
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, x.reshape(4, 8).sum(1))


@pytest.mark.parametrize("index, message", [
    ("x.shape[:1.5]", "a tuple is sliced by integer constants"),
    ("x.shape[::0]", "a tuple is sliced by integer constants (a step other than 0)"),
])
def test_a_tuple_slice_triton_refuses_is_a_located_error(index, message):
    assert message in compile_error(f"""
    @mytriton.jit
    def k(out_ptr):
        x = tl.zeros((1, 8), tl.float32)
        y = {index}
    """)


# ---- bitwise reductions -----------------------------------------------------------------------------

BITWISE = """
@mytriton.jit
def k(x_ptr, xor_rows_ptr, or_cols_ptr, xor_all_ptr, kept_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(xor_rows_ptr + tl.arange(0, M), tl.xor_sum(x, 1))
    tl.store(or_cols_ptr + tl.arange(0, N), x.reduce_or(0))
    tl.store(xor_all_ptr, x.xor_sum())
    tl.store(kept_ptr + tl.arange(0, M)[:, None], tl.reduce_or(x, 1, keep_dims=True))
"""


@pytest.mark.parametrize("dtype, signature", [(np.int32, "*i32"), (np.uint8, "*u8"), (np.int64, "*i64")])
def test_xor_sum_and_reduce_or_as_numpy(rng, dtype, signature):
    m, n = 8, 16
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=m * n, dtype=dtype, endpoint=True)
    outs = [np.zeros(m, dtype), np.zeros(n, dtype), np.zeros(1, dtype), np.zeros(m, dtype)]
    run_kernel(build(BITWISE, signature=", ".join([signature] * 5), M=m, N=n), (1,), [x, *outs])
    grid = x.reshape(m, n)
    np.testing.assert_array_equal(outs[0], np.bitwise_xor.reduce(grid, axis=1))
    np.testing.assert_array_equal(outs[1], np.bitwise_or.reduce(grid, axis=0))
    assert outs[2][0] == np.bitwise_xor.reduce(x)
    np.testing.assert_array_equal(outs[3], np.bitwise_or.reduce(grid, axis=1))


def test_xor_sum_of_floats_is_trittons_static_assert():
    assert "xor_sum only supported for integers" in compile_error("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        tl.store(out_ptr, tl.xor_sum(tl.load(x_ptr + tl.arange(0, 16))))
    """, signature="*fp32, *fp32")


# ---- tl.swizzle2d -----------------------------------------------------------------------------------

SWIZZLE = """
@mytriton.jit
def k(i_ptr, j_ptr, size_i, size_j, size_g, BLOCK: tl.constexpr):
    cell = tl.arange(0, BLOCK)
    i, j = tl.swizzle2d(cell // size_j, cell % size_j, size_i, size_j, size_g)
    tl.store(i_ptr + cell, i, mask=cell < size_i * size_j)
    tl.store(j_ptr + cell, j, mask=cell < size_i * size_j)
"""


def swizzle_reference(size_i: int, size_j: int, size_g: int) -> np.ndarray:
    """Each cell's number in the grouped order: bands of size_g rows (the last
    may be shorter), each band numbered down its columns."""
    order = np.zeros((size_i, size_j), np.int32)
    number = 0
    for first in range(0, size_i, size_g):
        rows = min(size_g, size_i - first)
        for j in range(size_j):
            for i in range(first, first + rows):
                order[i, j] = number
                number += 1
    return order


@pytest.mark.parametrize("size_i, size_j, size_g", [(4, 4, 2), (7, 5, 3), (6, 3, 8), (5, 9, 1)])
def test_swizzle2d_numbers_each_band_down_its_columns(size_i, size_j, size_g):
    n = size_i * size_j
    i_out, j_out = np.full(64, -1, np.int32), np.full(64, -1, np.int32)
    run_kernel(build(SWIZZLE, signature="*i32, *i32, i32, i32, i32", BLOCK=64), (1,),
               [i_out, j_out, size_i, size_j, size_g])
    # Cell c (row-major) is sent to (i_out[c], j_out[c]): the cell the c-th program takes.
    order = swizzle_reference(size_i, size_j, size_g)
    np.testing.assert_array_equal(order[i_out[:n], j_out[:n]], np.arange(n))


def test_swizzle2d_of_constants_is_tritons_docstring_example():
    # Triton's docstring: size_i = size_j = 4, size_g = 2 sends row-major cell 2 to (0, 1), 4 to (1, 0)...
    kernel = build("""
    @mytriton.jit
    def k(out_ptr):
        i, j = tl.swizzle2d(0, 2, 4, 4, 2)
        tl.static_assert(i == 0 and j == 1)
        i, j = tl.swizzle2d(1, 0, 4, 4, 2)
        tl.static_assert(i == 0 and j == 2)
        i, j = tl.swizzle2d(3, 3, 4, 4, 2)
        tl.static_assert(i == 3 and j == 3)
        tl.store(out_ptr, i * 4 + j)
    """, signature="*i32")
    assert "swizzle" not in " ".join(ops_of(kernel))


# ---- sqrt_rn, add, sub, mul, the constant --------------------------------------------------------

ARITHMETIC = """
@mytriton.jit
def k(x_ptr, y_ptr, root_ptr, arith_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.static_assert(BLOCK <= tl.TRITON_MAX_TENSOR_NUMEL)
    tl.store(root_ptr + offs, tl.sqrt_rn(x), mask=m)
    tl.store(arith_ptr + offs, tl.mul(tl.add(x, y), tl.sub(x, 2.0, sanitize_overflow=False)), mask=m)
"""


def test_sqrt_rn_and_arithmetic_functions_as_numpy(rng):
    n = 300
    x = np.abs(rng.standard_normal(n)).astype(np.float32) + np.float32(0.5)
    y = rng.standard_normal(n).astype(np.float32)
    root, arith = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    run_kernel(build(ARITHMETIC, signature="*fp32, *fp32, *fp32, *fp32, i32", BLOCK=128), (cdiv(n, 128),),
               [x, y, root, arith, n])
    np.testing.assert_array_equal(root, np.sqrt(x))
    np.testing.assert_array_equal(arith, (x + y) * (x - np.float32(2.0)))


def test_sqrt_rn_rounds_to_nearest_in_every_back_end():
    source = kernel_source(ARITHMETIC)
    defines = {"BLOCK": 128}
    signature = "*fp32, *fp32, *fp32, *fp32, i32"
    assert "__fsqrt_rn(" in compile_text(source, "cuda", defines=defines, signature=signature)
    assert "tt.precise_sqrt" in compile_text(source, "ttir", defines=defines, signature=signature)
    assert "math.sqrt" in compile_text(source, "mlir", defines=defines, signature=signature)


def test_arithmetic_functions_on_constants_fold():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr):
        tl.store(out_ptr, tl.mul(tl.add(2, 3), tl.sub(7, 1)))
    """, signature="*i32")
    out = np.zeros(1, np.int32)
    run_kernel(kernel, (1,), [out])
    assert out[0] == 30 and "mul" not in ops_of(kernel)


# ---- isinstance, and names of types mytriton lacks -------------------------------------------------

DESCRIBED = """
@mytriton.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FP8_OUTPUT: tl.constexpr):
    dtype = tl.float8e5 if FP8_OUTPUT else tl.float32
    offs = tl.arange(0, BLOCK)
    tl.static_assert(isinstance(offs, tl.tensor) and isinstance(n, tl.tensor) and not isinstance(BLOCK, tl.tensor))
    tl.static_assert(isinstance(BLOCK, tl.constexpr) and isinstance(BLOCK, (float, int)))
    tl.static_assert(not isinstance(x_ptr, tl.tensor_descriptor) and not isinstance(offs, tl.constexpr))
    block = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    tl.static_assert(isinstance(block, tl.tensor) and not isinstance(block, tl.tensor_descriptor))
    x = _maybe_make_tensor_desc(x_ptr, [n], [1], [BLOCK])
    out = _maybe_make_tensor_desc(_maybe_make_tensor_desc(out_ptr, [n], [1], [BLOCK]), [1], [1], [1])
    out.store([0], (x.load([0]) * 2).to(dtype))
"""


def test_isinstance_tells_descriptors_tensors_and_constants_apart(rng):
    kernel = build(DESCRIBED, signature="*fp32, *fp32, i32", BLOCK=16, FP8_OUTPUT=False)
    x = rng.standard_normal(16).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    run_kernel(kernel, (1,), [x, out, 12])
    np.testing.assert_array_equal(out[:12], x[:12] * 2)
    assert np.isnan(out[12:]).all()


def test_an_8_bit_float_name_is_an_error_only_where_it_is_used_as_a_dtype():
    error = compile_error(DESCRIBED, signature="*fp32, *fp32, i32", BLOCK=16, FP8_OUTPUT=True)
    assert "got tl.float8e5, one of Triton's 8-bit float types, which mytriton does not support" in error
    assert ":23:" in error.splitlines()[0]  # out.store(..., (...).to(dtype))


def test_an_8_bit_float_name_compares_unequal_to_every_dtype():
    # Triton 3.x's fused-attention tutorial: v_order = (0, 1) if V.dtype.element_ty == tl.float8e5 else (1, 0)
    kernel = build("""
    @mytriton.jit
    def k(v_ptr, out_ptr):
        fp8_v: tl.constexpr = v_ptr.dtype.element_ty == tl.float8e5
        order: tl.constexpr = (0, 1) if fp8_v else (1, 0)
        tl.static_assert(order == (1, 0) and tl.float8e5 != tl.float8e4nv and tl.float8e5 == tl.float8e5)
        tl.store(out_ptr, tl.load(v_ptr))
    """, signature="*fp16, *fp16")
    assert "load" in ops_of(kernel)


def test_isinstance_refuses_a_class_it_cannot_answer():
    assert "isinstance() in a kernel takes" in compile_error("""
    @mytriton.jit
    def k(x_ptr):
        tl.static_assert(isinstance(x_ptr, tl.float32))
    """, signature="*fp32")


# ---- annotations, through `import triton` ------------------------------------------------------------

ANNOTATED = '''
import numpy as np
import triton
import triton.language as tl


@triton.jit
def copy(x_ptr: tl.tensor, out_ptr: tl.const, n: tl.int32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.assume(n > 0)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


x = np.arange(10, dtype=np.float32)
out = np.zeros(10, np.float32)
copy[(1,)](x, out, 10, BLOCK=16)
assert (out == x).all() and tl.TRITON_MAX_TENSOR_NUMEL == 1048576
print("ok")
'''


def test_a_module_annotated_with_tl_tensor_and_tl_const_imports_and_runs(tmp_path):
    assert run_published(tmp_path, "annotated.py", ANNOTATED) == "ok\n"


def test_tl_tensor_is_only_an_annotation_outside_kernels():
    import mytriton.language as tl

    with pytest.raises(RuntimeError, match="only inside a @mytriton.jit kernel"):
        tl.tensor()


# ---- CUDA and the GPU -------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("body, signature, defines", [
    (SHAPES, None, {"M": 4, "N": 8}),
    (BITWISE, "*i32, *i32, *i32, *i32, *i32", {"M": 8, "N": 16}),
    (SWIZZLE, "*i32, *i32, i32, i32, i32", {"BLOCK": 64}),
    (ARITHMETIC, "*fp32, *fp32, *fp32, *fp32, i32", {"BLOCK": 128}),
    (ASSUMED, "*fp32, *fp32, i32, i32", {"BLOCK": 64}),
])
def test_cuda_of_the_names_builds_with_nvcc(body, signature, defines):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(body), "cuda", defines=defines, signature=signature)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
def test_gpu_runs_the_names_as_the_interpreter(kernel_module):
    module = kernel_module(BITWISE + SWIZZLE.replace("def k(", "def s(") + ARITHMETIC.replace("def k(", "def a("))
    rng = np.random.default_rng(11)
    x = rng.integers(-2**31, 2**31 - 1, size=128, dtype=np.int32)
    n = 300
    f = np.abs(rng.standard_normal(n)).astype(np.float32) + np.float32(0.5)
    g = rng.standard_normal(n).astype(np.float32)
    runs = {}
    for backend in ("cuda", "interp"):
        bitwise = [x, np.zeros(8, np.int32), np.zeros(16, np.int32), np.zeros(1, np.int32), np.zeros(8, np.int32)]
        module.k[(1,)](*bitwise, M=8, N=16, backend=backend)
        swizzled = [np.full(64, -1, np.int32), np.full(64, -1, np.int32), 7, 5, 3]
        module.s[(1,)](*swizzled, BLOCK=64, backend=backend)
        arith = [f, g, np.zeros(n, np.float32), np.zeros(n, np.float32), n]
        module.a[(cdiv(n, 128),)](*arith, BLOCK=128, backend=backend)
        runs[backend] = bitwise[1:] + swizzled[:2] + arith[2:4]
    for gpu, interp in zip(runs["cuda"], runs["interp"]):
        np.testing.assert_array_equal(gpu, interp)


# ---- constexpr arguments at the launch ----------------------------------------------------------------

CONSTEXPR_ARG = """
@mytriton.jit
def k(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr) + N)
"""


def test_a_tl_constexpr_argument_is_its_value(kernel_module):
    x = np.ones(1, np.float32)
    kernel_module(CONSTEXPR_ARG).k[(1,)](x, N=tl_constexpr(3), backend="interp")
    assert x[0] == 4


def tl_constexpr(value):
    import mytriton.language as tl

    return tl.constexpr(value)


@pytest.mark.parametrize("value, what", [
    (object(), "got a value of type object"),
    (None, None),
    ("float8e5", "got tl.float8e5, one of Triton's 8-bit float types, which mytriton does not support"),
])
def test_a_constexpr_argument_the_ir_cannot_hold_is_refused_at_the_launch(kernel_module, value, what):
    import mytriton.language as tl

    if value == "float8e5":
        value = tl.float8e5
    kernel = kernel_module(CONSTEXPR_ARG.replace("tl.load(x_ptr) + N", "tl.load(x_ptr) + 1")).k
    x = np.ones(1, np.float32)
    if what is None:  # None is a constant the IR holds
        kernel[(1,)](x, N=value, backend="interp")
        assert x[0] == 2
        return
    with pytest.raises(CompileError, match=f"argument 'N': a tl.constexpr takes a number, .*, {what}") as info:
        kernel[(1,)](x, N=value, backend="interp")
    assert info.value.loc is not None and info.value.loc.file == __file__


# ---- @jit functions as constexpr arguments ---------------------------------------------------------------

ACTIVATED = """
@mytriton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@mytriton.jit
def square(x):
    return x * x


@mytriton.jit
def k(x_ptr, out_ptr, n, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if ACTIVATION is not None:
        x = ACTIVATION(x)
    tl.store(out_ptr + offs, x, mask=offs < n)
"""


def test_a_jit_function_passed_as_a_constexpr_is_called_in_the_kernel(kernel_module, rng):
    module = kernel_module(ACTIVATED)
    x = rng.standard_normal(50).astype(np.float32)
    for activation, expected in ((module.relu, np.maximum(x, 0)), (module.square, x * x), (None, x)):
        out = np.full(50, np.nan, np.float32)
        compiled = module.k[(1,)](x, out, 50, ACTIVATION=activation, BLOCK=64, backend="interp")
        np.testing.assert_array_equal(out, expected)
    assert len(module.k._compiled) == 3  # one specialisation per function
    assert "ACTIVATION = none" in compiled.asm["ssa"].splitlines()[0]
    relu = module.k[(1,)](x, out, 50, ACTIVATION=module.relu, BLOCK=64, backend="interp")
    assert "relu)" in relu.asm["ssa"].splitlines()[0]


def test_a_plain_python_function_as_a_constexpr_is_refused_at_the_launch(kernel_module):
    module = kernel_module(ACTIVATED)
    x = np.ones(4, np.float32)
    with pytest.raises(CompileError, match="a tl.constexpr takes .*, got a value of type function"):
        module.k[(1,)](x, x, 4, ACTIVATION=lambda v: v, BLOCK=4, backend="interp")


# ---- what Triton's CompiledKernel tells its callers ---------------------------------------------------

SOFTMAX = """
@mytriton.jit
def softmax(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)
"""


def _warmed_up(kernel_module, backend: str):
    x = np.zeros((4, 100), np.float32)
    return kernel_module(SOFTMAX).softmax.warmup(x, x, 100, BLOCK=128, num_warps=4, grid=(1,), backend=backend)


def test_metadata_shared_is_the_blocks_shared_bytes(kernel_module):
    from mytriton.backends.cuda.emitter import header_of

    compiled = _warmed_up(kernel_module, "interp")
    assert compiled.metadata.shared == compiled.metadata["shared"] == header_of(compiled.asm["cuda"])["shared_bytes"]
    assert compiled.metadata.shared > 0  # the reductions' partials between warps


def test_n_regs_and_n_spills_come_from_the_loaded_function_on_the_gpu(kernel_module, monkeypatch):
    # Tutorial 02 sizes its persistent grid from them: warmup, _init_handles, n_regs, metadata.shared.
    from fake_driver import FakeDriver, install

    fake = install(monkeypatch, FakeDriver(shared_limit=232448))
    compiled = _warmed_up(kernel_module, "cuda")
    compiled._init_handles()
    assert (compiled.n_regs, compiled.n_spills) == (40, 4)  # the stand-in's 16 local bytes are 4 words
    assert len(fake.functions) == 1


@pytest.mark.nvcc
def test_n_regs_in_the_interpreter_are_ptxas_s_for_its_cuda(kernel_module):
    from mytriton.remarks import ptxas_usage

    compiled = _warmed_up(kernel_module, "interp")
    compiled._init_handles()  # nothing to load
    assert compiled.n_regs == ptxas_usage(compiled.asm["cuda"], "sm_90").registers > 0
    assert compiled.n_spills == 0


# ---- leniencies of Triton's that published code relies on -------------------------------------------


def test_where_takes_a_condition_of_another_type_as_its_test_against_zero(rng):
    # Tutorial 04's dropout passes an int32 keep-mask; Triton casts it to int1 (x != 0).
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, keep_ptr, scale_ptr, out_ptr):
        offs = tl.arange(0, 16)
        x = tl.load(x_ptr + offs)
        out = tl.where(tl.load(keep_ptr + offs), x, 0.0) + tl.where(tl.load(scale_ptr + offs), 1.0, 2.0)
        tl.store(out_ptr + offs, out)
    """, signature="*fp32, *i32, *fp32, *fp32")
    x = rng.standard_normal(16).astype(np.float32)
    keep = rng.integers(-1, 2, 16).astype(np.int32)
    scale = np.array([0.0, -0.0, 1.5, np.nan] * 4, np.float32)
    out = np.zeros(16, np.float32)
    run_kernel(kernel, (1,), [x, keep, scale, out])
    np.testing.assert_array_equal(out, np.where(keep != 0, x, 0.0) + np.where(scale != 0, 1.0, 2.0).astype(np.float32))


EXTERN = """
@mytriton.jit
def k(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, libdevice.asin(tl.load(x_ptr + offs)))
"""


def test_extern_libs_naming_libdevice_is_accepted_and_no_file_is_read(kernel_module, tmp_path):
    module = kernel_module("from mytriton.language.extra import libdevice\n" + EXTERN)
    x = np.linspace(-0.9, 0.9, 16, dtype=np.float32)
    out = np.zeros_like(x)
    missing = str(tmp_path / "no-such-libdevice.10.bc")  # never opened
    module.k[(1,)](x, out, N=16, extern_libs={"libdevice": missing}, backend="interp")
    np.testing.assert_allclose(out, np.arcsin(x), rtol=1e-6)


@pytest.mark.parametrize("libs, message", [
    ({"libm": "/tmp/libm.bc"}, "links libdevice only .*cannot link 'libm'"),
    ("libdevice", "extern_libs maps library names to paths"),
])
def test_extern_libs_naming_another_library_is_an_error(kernel_module, libs, message):
    module = kernel_module("from mytriton.language.extra import libdevice\n" + EXTERN)
    x = np.zeros(16, np.float32)
    with pytest.raises(CompileError, match=message):
        module.k[(1,)](x, x, N=16, extern_libs=libs, backend="interp")


def test_tl_core_constexpr_0_is_zero_in_a_kernel_and_a_constexpr_outside(kernel_module):
    """flash-linear-attention reads ``tl.core.CONSTEXPR_0``, as Triton's core defines it."""
    import mytriton.language as tl

    k = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, B: tl.constexpr):
        offs = tl.arange(0, B)
        tl.store(out_ptr + offs, tl.sum(tl.load(x_ptr + offs)[None, :], axis=tl.core.CONSTEXPR_0) + 1)
    """).k
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    k[(1,)](x, out, B=16, backend="interp")
    np.testing.assert_array_equal(out, x + 1)
    assert isinstance(tl.core.CONSTEXPR_0, tl.constexpr) and tl.core.CONSTEXPR_0.value == 0


def test_next_power_of_2_of_a_constexpr_in_a_kernel_is_a_constant(kernel_module):
    """Triton runs ``triton.next_power_of_2(D)`` on a constexpr while tracing (flash-linear-attention sizes blocks so)."""
    k = kernel_module("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, D: tl.constexpr):
        B: tl.constexpr = mytriton.next_power_of_2(D)
        offs = tl.arange(0, B)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0.0) + B, mask=offs < n)
    """).k
    x = np.arange(20, dtype=np.float32)
    out = np.zeros_like(x)
    k[(1,)](x, out, 20, D=20, backend="interp")
    np.testing.assert_array_equal(out, x + 32)


def test_next_power_of_2_of_a_runtime_value_is_a_located_error():
    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, n):
        tl.store(x_ptr, mytriton.next_power_of_2(n))
    """)
    with pytest.raises(Exception, match="triton.next_power_of_2 in a kernel takes one integer constant") as info:
        compile_text(source, "ssa", signature="*i32, i32")
    assert info.value.loc.line == 6


@pytest.mark.parametrize("i, log2", [(1, 0), (2, 1), (64, 6), (100, 6)])
def test_tl_standard_log2_of_a_constexpr_is_tritons(kernel_module, i, log2):
    k = kernel_module("""
    @mytriton.jit
    def k(out_ptr, I: tl.constexpr):
        tl.store(out_ptr, tl.standard._log2(I))
    """).k
    out = np.zeros(1, np.int32)
    k[(1,)](out, I=i, backend="interp")
    assert out[0] == log2
