"""Triton's language surface: hints, tl.math, casts and
bitcasts, dtypes of values, compile-time checks and prints, device prints and
assertions, Python min/max on runtime values. Each through tracing, SSA, the
interpreter, and CUDA that nvcc builds; the GPU tests compare the GPU with
the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import build, cdiv, compile_text, kernel_source, randf, ssa_of
from mytriton.backends.interp import run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import walk
from mytriton.ir.ssa_text import parse_kernel, print_kernel


def ops_of(kernel) -> list[str]:
    return [op.name for op in walk(kernel.body)]


def compile_error(body: str, **defines) -> str:
    with pytest.raises(CompileError) as info:
        build(body, **defines)
    return str(info.value)


# ---- Python min / max on runtime values --------------------------------------------------------

GROUPED = """
@mytriton.jit
def k(out_ptr, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(0)
    first_pid_m = (pid // GROUP_SIZE_M) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    tl.store(out_ptr + pid, group_size_m + max(pid, 3))
"""


def test_python_min_max_on_runtime_scalars_are_minimum_and_maximum():
    kernel = build(GROUPED, signature="*i32, i32", GROUP_SIZE_M=4)
    assert {"minimum", "maximum"} <= set(ops_of(kernel))
    out = np.zeros(10, np.int32)
    run_kernel(kernel, (10,), [out, 10])
    pid = np.arange(10)
    first = pid // 4 * 4
    np.testing.assert_array_equal(out, np.minimum(10 - first, 4) + np.maximum(pid, 3))


def test_python_min_max_on_tiles_with_several_arguments(rng):
    body = """
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        tl.store(out_ptr + i, min(x, 0.5, -0.25) + max(x, 0.0))
    """
    x = randf(rng, 64)
    out = np.zeros(64, np.float32)
    run_kernel(build(body, BLOCK=64), (1,), [x, out])
    np.testing.assert_array_equal(out, np.minimum(np.minimum(x, 0.5), -0.25) + np.maximum(x, 0.0))


def test_python_min_on_constants_stays_a_constant():
    body = """
    @mytriton.jit
    def k(out_ptr, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, min(BLOCK, 16)), 1.0)
    """
    kernel = build(body, BLOCK=64)
    assert "minimum" not in ops_of(kernel)
    assert "vector<16 x" in print_kernel(kernel)


def test_python_min_on_runtime_values_refuses_key():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr, n):
        tl.store(out_ptr, min(n, 3, key=None))
    """)
    assert "kernel.py:6:" in message and "min()" in message


# ---- tl.math --------------------------------------------------------------------------------------


def test_tl_math_names_are_the_tl_functions(rng):
    body = """
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        tl.store(out_ptr + i, tl.math.exp(x) + tl.math.rsqrt(tl.math.abs(x) + 1.0) + tl.math.maximum(x, 0.0))
    """
    x = randf(rng, 32)
    out = np.zeros(32, np.float32)
    kernel = build(body, BLOCK=32)
    assert {"exp", "rsqrt", "abs", "maximum"} <= set(ops_of(kernel))
    run_kernel(kernel, (1,), [x, out])
    expected = np.exp(x) + 1 / np.sqrt(np.abs(x) + 1) + np.maximum(x, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_tl_math_through_an_alias_of_the_module():
    source = ("import mytriton\nimport mytriton.language as tl\nimport mytriton.language.math as tlm\n\n"
              "@mytriton.jit\ndef k(x_ptr, out_ptr):\n    tl.store(out_ptr, tlm.sqrt(tl.load(x_ptr)))\n")
    assert "sqrt x" not in compile_text(source, "ssa")  # parameters are not sqrt's operand
    assert " = sqrt " in compile_text(source, "ssa")


def test_a_name_tl_math_lacks_is_a_located_error():
    with pytest.raises(CompileError) as info:
        compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr):
            tl.store(x_ptr, tl.math.where(True, 1.0, 2.0))
        """), "tree")
    assert "kernel.py:6:" in str(info.value) and "'where' is not part of mytriton.language.math" in str(info.value)


# ---- hints ----------------------------------------------------------------------------------------------

HINTED = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.max_constancy(offs, 1), mask=m)
    tl.store(out_ptr + offs, x * 2.0, mask=m)
"""


def test_hints_are_kept_as_facts_in_the_ssa():
    text = compile_text(kernel_source(HINTED), "ssa", defines={"BLOCK": 64})
    assert 'hint %3, kind="multiple_of", values=(64,) : vector<64 x i32>' in text
    assert 'kind="max_contiguous", values=(64,)' in text
    assert 'kind="max_constancy", values=(1,)' in text


def test_hints_survive_fold_cse_and_dce():
    text = compile_text(kernel_source(HINTED), "opt", defines={"BLOCK": 64})
    assert text.count(" = hint ") == 3


def test_hints_round_trip_through_the_ssa_text():
    text = compile_text(kernel_source(HINTED), "ssa", defines={"BLOCK": 64})
    assert print_kernel(parse_kernel(text)) == text


def test_a_hinted_value_is_the_value_itself_in_the_interpreter(rng):
    n = 1000
    x = randf(rng, n)
    out = np.zeros(n, np.float32)
    run_kernel(build(HINTED, BLOCK=128), (cdiv(n, 128),), [x, out, n])
    np.testing.assert_array_equal(out, x * 2)


def test_a_hint_needs_one_value_per_dimension():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr):
        i = tl.arange(0, 16)[:, None] + tl.arange(0, 16)[None, :]
        tl.store(out_ptr + tl.multiple_of(i, 16), 1.0)
    """)
    assert "kernel.py:7:" in message and "one value per dimension" in message


def test_a_hint_needs_positive_values():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr):
        tl.store(out_ptr + tl.multiple_of(tl.arange(0, 16), 0), 1.0)
    """)
    assert "kernel.py:6:" in message and "positive integer" in message


# ---- casts, bitcasts, dtypes ------------------------------------------------------------------------


def test_bitcast_reinterprets_bits_in_the_interpreter(rng):
    body = """
    @mytriton.jit
    def k(x_ptr, bits_ptr, back_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        bits = x.to(tl.int32, bitcast=True)
        tl.store(bits_ptr + i, bits)
        tl.store(back_ptr + i, tl.cast(bits ^ 1, tl.float32, bitcast=True))
    """
    x = randf(rng, 64)
    bits, back = np.zeros(64, np.int32), np.zeros(64, np.float32)
    run_kernel(build(body, signature="*fp32, *i32, *fp32", BLOCK=64), (1,), [x, bits, back])
    np.testing.assert_array_equal(bits, x.view(np.int32))
    np.testing.assert_array_equal(back, (x.view(np.int32) ^ 1).view(np.float32))


def test_bitcast_between_widths_is_a_located_error():
    message = compile_error("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        tl.store(out_ptr, tl.load(x_ptr).to(tl.int64, bitcast=True))
    """)
    assert "kernel.py:6:" in message and "one width" in message


def test_cast_refuses_a_rounding_mode_it_does_not_have():
    message = compile_error("""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        tl.store(out_ptr, tl.cast(tl.load(x_ptr), tl.float16, fp_downcast_rounding="rtz"))
    """)
    assert "kernel.py:6:" in message and "fp_downcast_rounding" in message


DTYPES = """
@mytriton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    acc = x.to(tl.float32)
    tl.static_assert(acc.dtype == tl.float32)
    tl.static_assert(x.shape == (BLOCK,) and x.shape[0] == BLOCK)
    tl.static_assert(x_ptr.dtype == tl.pointer_type(x.dtype))
    tl.static_assert(x.dtype.is_floating() and not x_ptr.dtype.element_ty.is_int())
    tl.store(out_ptr + i, (acc * 2).to(out_ptr.dtype.element_ty))
"""


def test_dtype_and_element_ty_follow_the_signature(rng):
    kernel = build(DTYPES, signature="*fp16, *fp16", BLOCK=32)
    text = print_kernel(kernel)
    assert "cast %5, dtype=f16 : vector<32 x f16>" in text or "dtype=f16 : vector<32 x f16>" in text
    x = rng.standard_normal(32).astype(np.float16)
    out = np.zeros(32, np.float16)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, (x.astype(np.float32) * 2).astype(np.float16))


SIGNEDNESS = """
@mytriton.jit
def k(s_ptr, u_ptr, b_ptr, f_ptr):
    tl.static_assert(s_ptr.dtype.element_ty.is_int_signed() and not s_ptr.dtype.element_ty.is_int_unsigned())
    tl.static_assert(u_ptr.dtype.element_ty.is_int_unsigned() and not u_ptr.dtype.element_ty.is_int_signed())
    tl.static_assert(not b_ptr.dtype.element_ty.is_int_signed() and not b_ptr.dtype.element_ty.is_int_unsigned())
    tl.static_assert(not f_ptr.dtype.element_ty.is_int_signed())
    tl.store(s_ptr, 1)
"""


RUNTIME_TO_CONSTEXPR = """
@mytriton.jit
def scaled(x, factor: tl.constexpr):
    return x * factor


@mytriton.jit
def k(x_ptr, n):
    x = tl.load(x_ptr)
    tl.store(x_ptr, scaled(x, n))
"""


def test_a_runtime_value_for_a_helpers_constexpr_parameter_is_passed_as_triton_passes_it(rng):
    # Triton binds a helper's arguments by value, whatever its annotations say
    # (the fused-attention tutorial passes its offs_m tile to `offs_m: tl.constexpr`).
    x = randf(rng, 1)
    run_kernel(build(RUNTIME_TO_CONSTEXPR, signature="*fp32, i32"), (1,), [x_out := x.copy(), 3])
    assert x_out[0] == x[0] * 3


def test_a_runtime_value_where_a_helper_needs_a_constant_is_a_located_error():
    from mytriton.diagnostics import CompileError

    with pytest.raises(CompileError) as info:
        build("""
        @mytriton.jit
        def block(x_ptr, size: tl.constexpr):
            return tl.load(x_ptr + tl.arange(0, size))


        @mytriton.jit
        def k(x_ptr, n):
            tl.store(x_ptr + tl.arange(0, 4), block(x_ptr, n))
        """, signature="*fp32, i32")
    assert info.value.loc.line == 6  # tl.arange(0, size) in the helper


def test_signedness_queries_are_tritons_bool_being_neither():
    build(SIGNEDNESS, signature="*i8, *u8, *i1, *fp32")  # a failed static_assert would raise


def test_dtype_without_a_signature_sees_the_inferred_pointer_types():
    kernel = build(DTYPES, BLOCK=32)
    assert [str(p.type) for p in kernel.params] == ["ptr<f32>", "ptr<f32>"]


def test_dtype_of_a_loop_carried_value():
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n):
        acc = tl.zeros((16,), tl.float16)
        for j in range(0, n):
            acc += tl.load(x_ptr + j * 16 + tl.arange(0, 16)).to(acc.dtype)
        tl.static_assert(acc.dtype == tl.float16)
        tl.store(out_ptr + tl.arange(0, 16), acc)
    """, signature="*fp32, *fp16, i32")
    assert "for" in ops_of(kernel)


TRANSPOSED = """
@mytriton.jit
def k(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    y = x.T * 2.0 + tl.trans(x + 1.0, 1, 0)
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], y + tl.arange(0, M).T[None, :])
"""


def test_transpose_of_a_rank_2_tile_is_a_trans_op(rng):
    kernel = build(TRANSPOSED, M=16, N=64)
    assert ops_of(kernel).count("trans") == 2
    x = randf(rng, 16, 64)
    out = np.zeros((64, 16), np.float32)
    run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(out, x.T * 2 + (x + 1).T + np.arange(16, dtype=np.float32)[None, :])


def test_transpose_round_trips_and_is_laid_out_as_a_layout_change():
    text = compile_text(kernel_source(TRANSPOSED), "layouts", defines={"M": 16, "N": 64})
    assert print_kernel(parse_kernel(text)) == text
    assert " = trans %" in text


def test_transpose_of_a_rank_3_tile_is_a_located_error():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr):
        x = tl.zeros((2, 4, 8), tl.float32)
        tl.store(out_ptr + tl.arange(0, 8), tl.sum(tl.sum(x.T, axis=0), axis=0))
    """)
    assert "kernel.py:7:" in message and "rank-3" in message


def test_transpose_dims_must_be_a_permutation():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr):
        x = tl.zeros((16, 16), tl.float32)
        tl.store(out_ptr + tl.arange(0, 16), tl.sum(tl.trans(x, 1, 1), axis=0))
    """)
    assert "kernel.py:7:" in message and "permutation of (0, 1), got (1, 1)" in message


# ---- compile-time checks and prints ---------------------------------------------------------------


def test_static_assert_failure_names_the_message_and_line():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
        tl.store(out_ptr, 1.0)
    """, BLOCK=48)
    assert "kernel.py:6:5: error: tl.static_assert failed: BLOCK must be a multiple of 32" in message


def test_static_assert_on_a_runtime_value_is_an_error():
    message = compile_error("""
    @mytriton.jit
    def k(out_ptr, n):
        tl.static_assert(n > 0)
        tl.store(out_ptr, 1.0)
    """)
    assert "kernel.py:6:" in message and "tl.device_assert" in message


def test_static_print_prints_while_compiling_once(capsys):
    build("""
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.static_print("BLOCK", BLOCK, x, x.dtype)
        tl.store(out_ptr + tl.arange(0, BLOCK), x)
    """, BLOCK=64)
    captured = capsys.readouterr()
    assert captured.err == "BLOCK 64 vector<64 x f32> f32\n"
    assert captured.out == ""


def test_static_print_escapes_control_characters(capsys):
    build("""
    @mytriton.jit
    def k(out_ptr):
        tl.static_print("a\\x1b[31mb")
        tl.store(out_ptr, 1.0)
    """)
    assert capsys.readouterr().err == "a\\x1b[31mb\n"


# ---- device prints and assertions ---------------------------------------------------------------

PRINTS = """
@mytriton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_print("x: ", x)
    tl.device_print("pid", pid, hex=True)
"""


def test_device_print_lines_in_program_order(capsys):
    x = np.array([1.5, -2.0, 3.25], np.float32)
    run_kernel(build(PRINTS, BLOCK=2), (2,), [x, 3])
    assert capsys.readouterr().out.splitlines() == [
        "pid (0, 0, 0) idx (0) x: 1.500000",
        "pid (0, 0, 0) idx (1) x: -2.000000",
        "pid (1, 0, 0) idx (0) x: 3.250000",
        "pid (1, 0, 0) idx (1) x: 0.000000",
        "pid (0, 0, 0) pid: 0x0",
        "pid (1, 0, 0) pid: 0x1",
    ]


ASSERTS = """
@mytriton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative", mask=offs < n)
"""


def test_device_assert_passes_where_the_condition_holds():
    run_kernel(build(ASSERTS, BLOCK=4), (3,), [np.arange(10, dtype=np.float32), 10])


def test_device_assert_failure_names_the_message_program_and_element():
    x = np.arange(10, dtype=np.float32)
    x[6] = -1
    with pytest.raises(CompileError) as info:
        run_kernel(build(ASSERTS, BLOCK=4), (3,), [x, 10])
    assert "kernel.py:8:5: error: device_assert failed: x must be non-negative (in program 1 at tile element [2])" \
        in str(info.value)


def test_device_assert_ignores_masked_elements():
    x = np.arange(10, dtype=np.float32)
    body = ASSERTS.replace("other=0.0", "other=-1.0")
    run_kernel(build(body, BLOCK=4), (3,), [x, 10])


def test_device_ops_stay_through_dce():
    text = compile_text(kernel_source(PRINTS), "opt", defines={"BLOCK": 4})
    assert text.count("device_print ") == 2


# ---- CUDA ------------------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("body", [HINTED, PRINTS, ASSERTS, DTYPES, GROUPED, TRANSPOSED])
def test_cuda_of_the_new_spellings_builds_with_nvcc(body):
    from mytriton.backends.cuda.nvcc import compile_ptx

    defines = {"GROUP_SIZE_M": 4} if body is GROUPED else {"M": 16, "N": 64} if body is TRANSPOSED else {"BLOCK": 64}
    cuda = compile_text(kernel_source(body), "cuda", defines=defines)
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


@pytest.mark.nvcc
def test_cuda_bitcast_and_prints_build_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    source = kernel_source("""
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        h = x.to(tl.float16)
        tl.device_print("h", h.to(tl.bfloat16, bitcast=True), hex=False)
        tl.device_print("bits", x.to(tl.int32, bitcast=True), hex=True)
        tl.device_assert(x == x, "a \\"quoted\\" %s message")
        tl.store(out_ptr + i, x.to(tl.int32, bitcast=True))
    """)
    cuda = compile_text(source, "cuda", defines={"BLOCK": 128}, signature="*fp32, *i32")
    assert 'device_assert failed: a \\"quoted\\" %s message\\012"); __trap();' in cuda  # passed to printf as an argument, not as its format
    ptx = compile_ptx(cuda, "sm_90")
    assert "vprintf" in ptx and "trap" in ptx


# ---- GPU (the lead runs these on the H200) -------------------------------------------------------------


def _both_backends(kernel, grid, make_args, **meta):
    results = []
    for backend in ("cuda", "interp"):
        args = make_args()
        kernel[grid](*args, backend=backend, **meta)
        results.append(args)
    return results


@pytest.mark.gpu
def test_gpu_hints_bitcasts_min_max_match_the_interpreter(kernel_module):
    module = kernel_module("""
        @mytriton.jit
        def k(x_ptr, bits_ptr, out_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = tl.multiple_of(pid * BLOCK, BLOCK) + tl.arange(0, BLOCK)
            offs = tl.max_contiguous(offs, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            tl.store(bits_ptr + offs, x.to(tl.int32, bitcast=True), mask=m)
            y = tl.cast(x.to(tl.int32, bitcast=True) ^ 1, tl.float32, bitcast=True)
            tl.store(out_ptr + offs, max(y, min(x, 0.5)) + min(pid, 2), mask=m)
    """)
    n = 5000
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)

    def make_args():
        return [x, np.zeros(n, np.int32), np.zeros(n, np.float32), n]

    gpu, interp = _both_backends(module.k, (cdiv(n, 256),), make_args, BLOCK=256)
    np.testing.assert_array_equal(gpu[1], x.view(np.int32))
    np.testing.assert_array_equal(gpu[1], interp[1])
    np.testing.assert_array_equal(gpu[2], interp[2])


@pytest.mark.gpu
def test_gpu_device_print_prints_what_the_interpreter_prints(kernel_module, capfd):
    module = kernel_module(PRINTS)
    x = np.array([1.5, -2.0, 3.25], np.float32)
    module.k[(2,)](x, 3, BLOCK=2, backend="interp")
    interp = sorted(capfd.readouterr().out.splitlines())
    module.k[(2,)](x, 3, BLOCK=2, backend="cuda")
    gpu = sorted(capfd.readouterr().out.splitlines())
    assert gpu == interp


@pytest.mark.gpu
def test_gpu_device_assert_stops_the_kernel(tmp_kernel):
    # A trap spoils the process's CUDA context: the failing launch runs in its own process.
    import subprocess
    import sys

    path = tmp_kernel(ASSERTS)
    script = (
        "import importlib.util, sys, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location('kernels', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "x = np.arange(10, dtype=np.float32)\n"
        "m.k[(3,)](x, 10, BLOCK=4, backend='cuda')\n"
        "print('held', flush=True)\n"
        "x[6] = -1\n"
        "m.k[(3,)](x, 10, BLOCK=4, backend='cuda')\n"
        "print('not stopped', flush=True)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "held" in run.stdout
    assert "not stopped" not in run.stdout and run.returncode != 0


# ---- tl.range options -----------------------------------------------------------------------------

PIPELINED = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, num_stages=3, loop_unroll_factor=2, warp_specialize=False):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    for j in tl.range(0, 3, num_stages=2):
        acc = acc * 2 + j
    tl.store(out_ptr + offs, acc)
"""


def test_tl_range_options_are_kept_on_the_loop_and_round_trip():
    from mytriton.ir.tree_text import parse_tree, print_tree

    tree_text = compile_text(kernel_source(PIPELINED), "tree", defines={"BLOCK": 16})
    assert "range(0, n, 1, num_stages=3, loop_unroll_factor=2) captures(" in tree_text
    assert print_tree(parse_tree(tree_text)) == tree_text
    ssa_text = compile_text(kernel_source(PIPELINED), "opt", defines={"BLOCK": 16})
    assert "range(0, n, 1, num_stages=3, loop_unroll_factor=2) iter_args(" in ssa_text
    assert "range(0, 3, 1, num_stages=2) iter_args(" in ssa_text  # options keep a constant loop a loop
    assert print_kernel(parse_kernel(ssa_text)) == ssa_text


def test_a_loop_with_options_computes_what_it_would_without(rng):
    n, block = 5, 16
    x = randf(rng, n * block)
    out = np.zeros(block, np.float32)
    run_kernel(build(PIPELINED, BLOCK=block), (1,), [x, out, n])
    acc = x.reshape(n, block).sum(axis=0)
    for j in range(3):
        acc = acc * 2 + j
    np.testing.assert_allclose(out, acc, rtol=1e-6)


def test_loop_unroll_factor_becomes_a_pragma():
    cuda = compile_text(kernel_source(PIPELINED), "cuda", defines={"BLOCK": 128})
    assert "#pragma unroll 2\n  for (int " in cuda


@pytest.mark.parametrize("option, message", [
    ("num_stages='3'", "num_stages must be an integer constant"),
    ("num_stages=65", "num_stages must be from 0 to 64"),
    ("loop_unroll_factor=0", "loop_unroll_factor must be from 1"),
    ("flatten=1", "flatten must be True or False"),
    ("stages=2", "tl.range() has no parameter 'stages'"),
])
def test_tl_range_options_are_checked_where_written(option, message):
    text = compile_error(f"""
    @mytriton.jit
    def k(out_ptr, n):
        for i in tl.range(0, n, {option}):
            tl.store(out_ptr + i, 1.0)
    """)
    assert "kernel.py:6:" in text and message in text


def test_static_range_takes_no_options():
    text = compile_error("""
    @mytriton.jit
    def k(out_ptr):
        for i in tl.static_range(0, 4, num_stages=2):
            tl.store(out_ptr + i, 1.0)
    """)
    assert "kernel.py:6:" in text and "positional" in text


@pytest.mark.nvcc
def test_cuda_of_a_loop_with_options_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(PIPELINED), "cuda", defines={"BLOCK": 128})
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
def test_gpu_loop_with_options_matches_the_interpreter(kernel_module):
    module = kernel_module(PIPELINED)
    n, block = 7, 256
    x = np.random.default_rng(5).standard_normal(n * block).astype(np.float32)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.zeros(block, np.float32)
        module.k[(1,)](x, out, n, BLOCK=block, backend=backend)
        outs.append(out)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


# ---- Triton's promotion rules (semantic.computation_type_impl) --------------------------------------

from mytriton.ir import opdefs  # noqa: E402
from mytriton.types import BF16, BOOL, F16, F32, I32, I64, WEAK_FLOAT, WEAK_INT  # noqa: E402


@pytest.mark.parametrize("a, b, expected", [
    (F16, BF16, F16),  # f16 wins over bf16
    (BF16, F16, F16),
    (BF16, BF16, BF16),
    (BF16, I32, F32),  # bf16 stays bf16 only with bf16
    (I64, BF16, F32),
    (F16, I32, F16),
    (F16, F32, F32),
    (BF16, F32, F32),
    (I32, I64, I64),
    (BOOL, I32, I32),
    (F16, WEAK_FLOAT, F16),  # a Python scalar of a lower or equal kind does not take part
    (BF16, WEAK_INT, BF16),
    (I32, WEAK_FLOAT, F32),
    (BOOL, WEAK_INT, I32),
])
def test_add_computes_in_tritons_type(a, b, expected):
    assert opdefs.OPS["add"].infer([a, b], {}) == [expected]


@pytest.mark.parametrize("a, b, expected", [
    (F16, F16, F32),  # no half division in PTX: Triton divides halves in f32
    (BF16, BF16, F32),
    (F16, WEAK_FLOAT, F32),
    (BF16, WEAK_INT, F32),
    (I32, I32, F32),
    (F32, F16, F32),
])
def test_true_division_computes_in_tritons_type(a, b, expected):
    assert opdefs.OPS["div"].infer([a, b], {}) == [expected]


def test_half_division_runs_in_f32_in_the_interpreter(rng):
    body = """
    @mytriton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        tl.static_assert((x / 3.0).dtype == tl.float32)
        tl.store(out_ptr + i, x / 3.0)
    """
    x = rng.standard_normal(32).astype(np.float16)
    out = np.zeros(32, np.float32)
    run_kernel(build(body, signature="*fp16, *fp32", BLOCK=32), (1,), [x, out])
    np.testing.assert_array_equal(out, x.astype(np.float32) / np.float32(3.0))


@pytest.mark.nvcc
def test_cuda_of_mixed_half_arithmetic_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    source = kernel_source("""
    @mytriton.jit
    def k(a_ptr, b_ptr, n_ptr, out_ptr, q_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        a, b, n = tl.load(a_ptr + i), tl.load(b_ptr + i), tl.load(n_ptr + i)
        tl.store(out_ptr + i, a * b + (b + n).to(tl.float16))
        tl.store(q_ptr + i, a / b)
    """)
    cuda = compile_text(source, "cuda", defines={"BLOCK": 128}, signature="*fp16, *bf16, *i32, *fp16, *fp32")
    assert ".entry k(" in compile_ptx(cuda, "sm_90")


# ---- constexpr globals and conditional expressions ------------------------------------------------

GLOBALS = """
USE_FAST: tl.constexpr = True
BLOCK = 128 if USE_FAST or NOT_DEFINED_ANYWHERE else 64
SCALE = 2.0 if BLOCK > 100 and not False else 3.0
ACC = tl.float32 if not USE_FAST else tl.float16


@mytriton.jit
def k(x_ptr, out_ptr, FLAG: tl.constexpr = False):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    y = x * SCALE if FLAG else x.to(ACC).to(tl.float32) + 1.0
    tl.store(out_ptr + i, y)
"""


def test_module_constants_may_be_conditional_expressions_and_comparisons():
    text = compile_text(kernel_source(GLOBALS), "ssa")
    assert "vector<128 x i32>" in text and "dtype=f16" in text and " = mul " not in text


def test_a_conditional_expression_on_a_constexpr_picks_one_branch(rng):
    x = randf(rng, 128)
    out = np.zeros(128, np.float32)
    run_kernel(build(GLOBALS, FLAG=True), (1,), [x, out])
    np.testing.assert_array_equal(out, x * 2)
    run_kernel(build(GLOBALS, FLAG=False), (1,), [x, out])
    np.testing.assert_array_equal(out, x.astype(np.float16).astype(np.float32) + 1)


def test_the_kernel_bundle_carries_the_folded_constants():
    from mytriton.frontend.stages import parse_stage

    bundle = parse_stage(kernel_source(GLOBALS), "kernel.py")
    assert compile_text(bundle, "ssa", file="bundle.py") == compile_text(kernel_source(GLOBALS), "ssa")


def test_python_print_in_a_kernel_is_device_print(capsys):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr):
        print("x", tl.load(x_ptr + tl.arange(0, 2)))
    """)
    run_kernel(kernel, (1,), [np.array([0.5, 2.0], np.float32)])
    assert capsys.readouterr().out.splitlines() == ["pid (0, 0, 0) idx (0) x: 0.500000",
                                                    "pid (0, 0, 0) idx (1) x: 2.000000"]


def test_device_print_needs_a_string_prefix():
    message = compile_error("""
    @mytriton.jit
    def k(x_ptr):
        print(tl.load(x_ptr))
    """)
    assert "kernel.py:6:" in message and "prefix of tl.device_print must be a string" in message


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, num_warps", [(16, 64, 4), (64, 32, 8), (32, 32, 1)])
def test_gpu_transpose_matches_the_interpreter(kernel_module, m, n, num_warps):
    module = kernel_module(TRANSPOSED)
    x = np.random.default_rng(m + n).standard_normal((m, n)).astype(np.float32)
    outs = []
    for backend in ("cuda", "interp"):
        out = np.full((n, m), np.nan, np.float32)
        module.k[(1,)](x, out, M=m, N=n, num_warps=num_warps, backend=backend)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


# ---- the buffers a kernel stores to (the launcher copies them back) ---------------------------------


@pytest.mark.parametrize("pointer", [
    "tl.multiple_of(out_ptr + tl.arange(0, 16), 16)[:, None]",
    "(out_ptr + tl.arange(0, 16))[:, None]",  # expand_dims of a pointer tile (was missed before)
    "tl.trans(out_ptr + tl.arange(0, 16)[None, :] + tl.zeros((2, 1), tl.int32))",
])
def test_stores_through_hinted_expanded_or_transposed_pointers_are_found(pointer):
    import json

    source = kernel_source(f"""
    @mytriton.jit
    def k(x_ptr, out_ptr):
        p = {pointer}
        tl.store(p + tl.zeros((16, 2), tl.int32), tl.load(x_ptr + tl.zeros((16, 2), tl.int32)))
    """)
    cuda = compile_text(source, "cuda")
    header = json.loads(cuda.splitlines()[0].split(": ", 1)[1])
    assert header["stores"] == ["out_ptr"]
    assert [p[1] for p in header["params"]] == ["ptr<f32>", "ptr<f32>"]


# ---- tutorial 03 as a Triton user writes it (grouped ordering, hints, tl.range options, a helper) -------

TUTORIAL_03 = """@mytriton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@mytriton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=3):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == 1:
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)
"""

MATMUL_SIGNATURE = "*fp16, *fp16, *fp16, i32, i32, i32, i32, i32, i32, i32, i32, i32"
MATMUL_META = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4, "ACTIVATION": 1}


def _matmul_case(seed: int, m: int, n: int, k: int):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    reference = a.astype(np.float32) @ b.astype(np.float32)
    reference = np.where(reference >= 0, reference, 0.01 * reference).astype(np.float16)
    return a, b, reference


def _matmul_args(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    return [a, b, c, m, n, k, k, 1, n, 1, n, 1]


def test_tutorial_03_matmul_in_the_interpreter():
    m, n, k = 70, 45, 100
    a, b, reference = _matmul_case(3, m, n, k)
    c = np.zeros((m, n), np.float16)
    kernel = ssa_of(kernel_source(TUTORIAL_03), defines=MATMUL_META, signature=MATMUL_SIGNATURE)
    grid = (cdiv(m, 32) * cdiv(n, 32),)
    run_kernel(kernel, grid, _matmul_args(a, b, c))
    np.testing.assert_allclose(c.astype(np.float32), reference.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_tutorial_03_ssa_shows_the_hints_the_grouping_and_the_pipelined_loop():
    text = compile_text(kernel_source(TUTORIAL_03), "ssa", defines=MATMUL_META, signature=MATMUL_SIGNATURE)
    assert " = minimum " in text and 'kind="multiple_of", values=(32,)' in text
    assert "num_stages=3) iter_args(" in text


@pytest.mark.nvcc
def test_tutorial_03_builds_with_nvcc():
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_text(kernel_source(TUTORIAL_03), "cuda", defines=MATMUL_META, signature=MATMUL_SIGNATURE)
    assert ".entry matmul_kernel(" in compile_ptx(cuda, "sm_90")


@pytest.mark.gpu
def test_gpu_tutorial_03_matches_the_interpreter(kernel_module):
    module = kernel_module(TUTORIAL_03)
    m, n, k = 300, 200, 160
    a, b, _ = _matmul_case(4, m, n, k)
    outs = []
    for backend in ("cuda", "interp"):
        c = np.zeros((m, n), np.float16)
        module.matmul_kernel[(cdiv(m, 32) * cdiv(n, 32),)](*_matmul_args(a, b, c), backend=backend, **MATMUL_META)
        outs.append(c.astype(np.float32))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-2, atol=1e-2)


def test_tensor_methods_are_the_tl_functions_of_the_tensor():
    # Triton's _tensor_member_fn: x.cast(dtype), x.exp(), x.sum(axis=0) are tl.cast(x, ...), ...
    ssa = compile_text(kernel_source("""
        @mytriton.jit
        def k(x_ptr, out_ptr, BLOCK: tl.constexpr = 64):
            x = tl.load(x_ptr + tl.arange(0, BLOCK)).cast(tl.int32)
            tl.store(out_ptr, x.to(tl.float32).exp().sum(axis=0) + x.abs().max(0))
    """), "ssa")
    ops = [line.split(" = ")[1].split()[0] for line in ssa.splitlines() if " = " in line]
    assert ops[-7:] == ["cast", "cast", "exp", "sum", "abs", "max", "add"]


# ---- not ------------------------------------------------------------------------------------------


def test_not_of_a_runtime_boolean_is_its_inverse_and_of_a_number_its_test_for_zero(rng):
    kernel = build("""
    @mytriton.jit
    def k(x_ptr, out_ptr, n, lo, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        outside = (x < lo) | (x > 0.5)
        if not (lo > 0.0):  # a runtime scalar condition
            x = x + 1.0
        tl.store(out_ptr + offs, tl.where(not outside, x, 0.0) + (not n) * 100.0, mask=offs < n)
    """, signature="*fp32, *fp32, i32, fp32", BLOCK=32)
    x = randf(rng, 20)
    out = np.zeros(20, np.float32)
    run_kernel(kernel, (1,), [x, out, 20, -0.25])
    np.testing.assert_array_equal(out, np.where((x < -0.25) | (x > 0.5), 0.0, x + 1.0).astype(np.float32))


def test_not_of_a_constant_is_pythons():
    kernel = build("""
    @mytriton.jit
    def k(out_ptr, FLAG: tl.constexpr, EMPTY: tl.constexpr = None):
        if not FLAG and not EMPTY:
            tl.store(out_ptr, 1.0)
    """, FLAG=False)
    assert "store" in ops_of(kernel)
