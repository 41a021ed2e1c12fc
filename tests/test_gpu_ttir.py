"""On the H200: Triton's own build of each sample's TTIR (``--emit=ttir``,
compiled by ``triton.compile``, launched on torch tensors) stores the same
results as mytriton's CUDA and as NumPy, on the inputs of tests/sample_cases.py
(random non-zero data, ragged sizes, a zero-trip loop). Skipped without a GPU,
Triton or torch. Checked against Triton 3.9.0.

Triton lowers ``/`` (arith.divf) and ``tl.exp`` (math.exp) on f32 to
approximate instructions and takes TF32 operands as the tensor cores read
them, where mytriton's CUDA divides correctly rounded and rounds TF32 with
cvt.rna: results agree within the case's tolerance (twice it between the two
GPU builds), not bit for bit; integer outputs agree exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import SAMPLES, kernel_source, load_sample
from mytriton import compiler
from mytriton.compiler import Options
from sample_cases import CASES
from ttir_check import NUM_WARPS, triton_compile

pytestmark = pytest.mark.gpu

_POINTEE = {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16", np.dtype(np.int32): "i32",
            np.dtype(np.int64): "i64", np.dtype(np.float64): "fp64"}


def signature_of(args: list) -> str:
    """Triton's signature of the launch arguments: ``*fp32`` for an f32 array, ``i32`` for a Python int."""
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append("*" + _POINTEE[a.dtype])
        elif isinstance(a, float):
            parts.append("fp32")
        else:
            parts.append("i32")
    return ", ".join(parts)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tritons_build_of_the_ttir_matches_mytritons_cuda(name, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    case = CASES[name]
    args, expected = case.make(np.random.default_rng(7))
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(load_sample(case.sample), case.kernel)[case.grid](*ours, backend="cuda", **case.meta)

    defines = {k: v for k, v in case.meta.items() if k != "num_warps"}
    options = Options(kernel=case.kernel, defines=defines, signature=signature_of(args))
    source = (SAMPLES / f"{case.sample}.py").read_text()
    kernel = compiler.source_to_ssa(source, f"samples/{case.sample}.py", options)
    compiled = triton_compile(compiler.emit_ttir(kernel), tmp_path, case.meta.get("num_warps", NUM_WARPS))
    meta = {**{p.name: a for p, a in zip(kernel.params, args)}, **kernel.constexprs}
    grid = tuple(case.grid(meta)) + (1,) * (3 - len(case.grid(meta)))
    tensors = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    compiled[grid](*tensors)
    torch.cuda.synchronize()

    for label, reference in expected.items():
        index = int(label.split("#")[1])
        theirs = tensors[index].cpu().numpy()
        if theirs.dtype.kind in "iu":
            np.testing.assert_array_equal(theirs, ours[index], err_msg=f"{name}: {label}, Triton vs mytriton")
            continue
        np.testing.assert_allclose(theirs, reference, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{name}: {label}, Triton vs NumPy")
        np.testing.assert_allclose(theirs, ours[index], rtol=2 * case.rtol, atol=2 * case.atol,
                                   err_msg=f"{name}: {label}, Triton vs mytriton's CUDA")


# ---- today's ops: atomics and libdevice, Triton's build against mytriton's interpreter ----------


def _run_triton(source: str, signature: str, defines: dict, grid: tuple[int, ...], args: list, tmp_path) -> list:
    """Launch Triton's build of the kernel's TTIR on copies of ``args``; the arrays after the launch."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    text = compiler.compile_source(source, "kernel.py", "ttir", Options(defines=defines, signature=signature))
    compiled = triton_compile(text, tmp_path)
    tensors = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    compiled[grid + (1,) * (3 - len(grid))](*tensors)
    torch.cuda.synchronize()
    return [t.cpu().numpy() if isinstance(a, np.ndarray) else t for t, a in zip(tensors, args)]


ATOMICS_KERNEL = """
@mytriton.jit
def k(f_ptr, v_ptr, h_ptr, c_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(v_ptr + i, mask=m, other=0.0)
    old = tl.atomic_max(f_ptr + i, v, mask=m)
    low = tl.atomic_min(f_ptr + n + i, v, mask=m)
    tl.atomic_add(h_ptr + i % 7, 1, mask=m)
    tl.atomic_cas(c_ptr, 0, 5)
    tl.store(v_ptr + i, old + low, mask=m)
"""


def test_tritons_build_of_float_max_min_integer_add_and_cas_matches_the_interpreter(kernel_module, tmp_path):
    pytest.importorskip("triton")
    rng = np.random.default_rng(12)
    n, block = 300, 64  # ragged: the last program is part masked
    memory = (rng.standard_normal(2 * n) * 4).astype(np.float32)  # both signs: the pair on the bits
    memory[:3] = [-0.0, 0.0, -0.0]
    values = (rng.standard_normal(n) * 4).astype(np.float32)
    values[:3] = [0.0, -0.0, 1e-30]
    args = [memory, values, np.zeros(7, np.int32), np.zeros(1, np.int32), n]
    grid = ((n + block - 1) // block,)
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel_module(ATOMICS_KERNEL).k[grid](*ours, BLOCK=block, backend="interp")
    theirs = _run_triton(kernel_source(ATOMICS_KERNEL), "*fp32, *fp32, *i32, *i32, i32", {"BLOCK": block},
                         grid, args, tmp_path)
    for index, label in enumerate(("memory", "old values", "histogram", "cas word")):
        np.testing.assert_array_equal(theirs[index], ours[index], err_msg=f"{label}: Triton vs mytriton")


LIBDEVICE_ONE = """
@mytriton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.5)
    tl.store(out_ptr + i, {call}, mask=m)
"""


def _libdevice_f32_calls() -> list[str]:
    from mytriton.language.extra import libdevice

    calls = []
    for name, (_, signatures) in sorted(libdevice.SIGNATURES.items()):
        f32 = [s for s in signatures if all(t.is_float and t.bits == 32 for t in s)]
        if f32 and name not in ("fma", "div_rn", "fmax", "fmin", "abs", "tanh"):
            calls.append(f"libdevice.{name}({', '.join(['x'] * len(f32[0]))})")
    return calls


@pytest.mark.parametrize("call", _libdevice_f32_calls())
def test_tritons_build_of_a_libdevice_function_matches_the_interpreter(call, kernel_module, tmp_path):
    pytest.importorskip("triton")
    rng = np.random.default_rng(len(call))
    n, block = 200, 64
    x = rng.uniform(-3.0, 3.0, n).astype(np.float32)
    x[:4] = [0.25, -0.5, 2.5, -0.0]  # halves for round/rint, a signed zero for signbit
    out_dtype = np.int64 if "llrint" in call else np.bool_ if any(p in call for p in ("isnan", "isinf", "signbit")) \
        else np.float32
    signature = {np.int64: "*fp32, *i64, i32", np.bool_: "*fp32, *i1, i32"}.get(out_dtype, "*fp32, *fp32, i32")
    body = LIBDEVICE_ONE.format(call=call)
    args = [x, np.zeros(n, out_dtype), n]
    grid = ((n + block - 1) // block,)
    module = kernel_module("from mytriton.language.extra import libdevice\n" + body)
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    module.k[grid](*ours, BLOCK=block, backend="interp")
    source = "from mytriton.language.extra import libdevice\n" + kernel_source(body)
    theirs = _run_triton(source, signature, {"BLOCK": block}, grid, args, tmp_path)
    if out_dtype != np.float32:
        np.testing.assert_array_equal(theirs[1], ours[1], err_msg=f"{call}: Triton vs mytriton")
    else:  # libdevice is within a few ulp; fast_expf and fast_dividef are the hardware's approximations
        np.testing.assert_allclose(theirs[1], ours[1], rtol=2e-5, atol=1e-6, err_msg=f"{call}: Triton vs mytriton")
