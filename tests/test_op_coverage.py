"""Every op family through both backends: each small kernel runs in the
interpreter (checked against NumPy here), builds with nvcc, and on the H200
gives what the interpreter gives (a differential test of the two backends)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import compile_text, kernel_source

N = 1000
BLOCK = 256


def nonzero(values):
    return np.where(values == 0, 3, values).astype(np.int32)


def grid(n=N):
    return (-(-n // BLOCK),)


KERNELS = {
    "math": ('''
        @mytriton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            x = tl.load(x_ptr + i, mask=m, other=1.0)
            p = tl.abs(x) + 0.5
            y = tl.exp(x) + tl.exp2(x) + tl.log(p) + tl.log2(p) + tl.sqrt(p) + tl.rsqrt(p)
            y += tl.sin(x) + tl.cos(x) + tl.floor(x) + tl.ceil(x) + tl.sigmoid(x) - x / p
            tl.store(out_ptr + i, y, mask=m)
    ''', lambda rng: [rng.uniform(-3, 3, N).astype(np.float32), np.zeros(N, np.float32), N],
        lambda x, out, n: (lambda p: np.exp(x) + np.exp2(x) + np.log(p) + np.log2(p) + np.sqrt(p) + 1 / np.sqrt(p)
                           + np.sin(x) + np.cos(x) + np.floor(x) + np.ceil(x) + 1 / (1 + np.exp(-x)) - x / p)(
            np.abs(x) + 0.5), 1, 2e-5),
    "erf_tanh_floor": ('''
        @mytriton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            x = tl.load(x_ptr + i, mask=m, other=1.0)
            tl.store(out_ptr + i, tl.erf(x) + tl.tanh(x) * 2.0 + tl.floor(x) * 4.0 + tl.floor(2.5), mask=m)
    ''', lambda rng: [rng.uniform(-3, 3, N).astype(np.float32), np.zeros(N, np.float32), N],
        lambda x, out, n: (np.vectorize(math.erf)(x.astype(np.float64)) + np.tanh(x.astype(np.float64)) * 2
                           + np.floor(x) * 4 + 2).astype(np.float32), 1, 2e-5),
    "integers": ('''
        @mytriton.jit
        def k(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            a = tl.load(a_ptr + i, mask=m, other=1)
            b = tl.load(b_ptr + i, mask=m, other=1)
            y = a // b + a % b * 3 + (a & b) - (a | b) + (a ^ b) + (~a) - (-b)
            y += tl.maximum(a, b) * 2 - tl.minimum(a, b) + tl.where(a < b, 1, 0) + tl.where(a >= b, 7, 0)
            y += tl.where(a == b, 100, 0) + tl.where(a != b, 5, 0) + tl.where(a <= b, 11, 0) + tl.where(a > b, 13, 0)
            tl.store(out_ptr + i, y, mask=m)
    ''', lambda rng: [rng.integers(-1000, 1000, N).astype(np.int32), nonzero(rng.integers(-50, 50, N)),
                      np.zeros(N, np.int32), N],
        lambda a, b, out, n: (np.trunc(a / b).astype(np.int32) + np.fmod(a, b) * 3 + (a & b) - (a | b) + (a ^ b)
                              + ~a + b + np.maximum(a, b) * 2 - np.minimum(a, b) + (a < b) + 7 * (a >= b)
                              + 100 * (a == b) + 5 * (a != b) + 11 * (a <= b) + 13 * (a > b)), 2, 0),
    "casts_and_half": ('''
        @mytriton.jit
        def k(x_ptr, h_ptr, i_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            x = tl.load(x_ptr + i, mask=m, other=0.0)
            tl.store(h_ptr + i, (x * 2.0).to(tl.float16), mask=m)
            tl.store(i_ptr + i, x.to(tl.int32) + (x > 0).to(tl.int32), mask=m)
    ''', lambda rng: [rng.uniform(-100, 100, N).astype(np.float32), np.zeros(N, np.float16), np.zeros(N, np.int32), N],
        lambda x, h, i, n: ((x * 2).astype(np.float16), np.trunc(x).astype(np.int32) + (x > 0)), (1, 2), 0),
    "half_and_wide": ('''
        @mytriton.jit
        def k(h_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            h = tl.load(h_ptr + i, mask=m, other=0.0)
            w = tl.load(w_ptr + i, mask=m, other=0)
            tl.store(out_ptr + i, w * 3 + (h * 4.0).to(tl.int64), mask=m)
    ''', lambda rng: [rng.uniform(-8, 8, N).astype(np.float16), rng.integers(-2**40, 2**40, N).astype(np.int64),
                      np.zeros(N, np.int64), N],
        lambda h, w, out, n: w * 3 + np.trunc(h.astype(np.float32) * 4).astype(np.int64), 2, 0),
    "scalars_and_grid": ('''
        @mytriton.jit
        def k(x_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr):
            pid = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
            first = tl.load(x_ptr + pid * BLOCK)
            i = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + i, tl.load(x_ptr + i) - first)
            tl.store(flags_ptr + pid, first > 0)
    ''', lambda rng: [rng.standard_normal(24 * BLOCK).astype(np.float32), np.zeros(24 * BLOCK, np.float32),
                      np.zeros(24, np.bool_)],
        lambda x, out, flags: ((x.reshape(24, BLOCK) - x.reshape(24, BLOCK)[:, :1]).reshape(-1),
                               x.reshape(24, BLOCK)[:, 0] > 0), (1, 2), 0, (2, 3, 4)),
    "integer_reductions": ('''
        @mytriton.jit
        def k(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
            r = tl.arange(0, BM)[:, None]
            c = tl.arange(0, BN)[None, :]
            x = tl.load(x_ptr + r * BN + c)
            tl.store(out_ptr + tl.arange(0, BN), tl.sum(x, axis=0))
            tl.store(out_ptr + BN + tl.arange(0, BM), tl.max(x, axis=1))
            tl.store(out_ptr + BN + BM + tl.arange(0, BM)[:, None], tl.min(x, axis=1, keep_dims=True))
            tl.store(out_ptr + BN + 2 * BM, tl.sum((x > 0).to(tl.int32), axis=None))
    ''', lambda rng: [rng.integers(-1000, 1000, 64 * 32).astype(np.int32), np.zeros(32 + 2 * 64 + 1, np.int32)],
        lambda x, out: np.concatenate([x.reshape(64, 32).sum(0), x.reshape(64, 32).max(1), x.reshape(64, 32).min(1),
                                       [(x > 0).sum()]]).astype(np.int32), 1, 0, (1,), {"BM": 64, "BN": 32}),
    "full_and_where_pointers": ('''
        @mytriton.jit
        def k(a_ptr, b_ptr, out_ptr, fill, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            src = tl.where(i % 2 == 0, a_ptr + i, b_ptr + i)
            base = tl.full((BLOCK,), fill, tl.float32)
            tl.store(out_ptr + i, tl.load(src, mask=m, other=0.0) + base, mask=m)
    ''', lambda rng: [rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32),
                      np.zeros(N, np.float32), 0.25, N],
        lambda a, b, out, fill, n: np.where(np.arange(n) % 2 == 0, a, b) + fill, 2, 0),
}


def launch(name, backend, seed=0):
    import importlib.util
    import pathlib
    import tempfile

    body, make, reference, outputs, tolerance, *rest = KERNELS[name]
    grid_shape = rest[0] if rest else None
    meta = rest[1] if len(rest) > 1 else {"BLOCK": BLOCK}
    directory = pathlib.Path(tempfile.mkdtemp())
    path = directory / f"cov_{name}.py"
    path.write_text(kernel_source(body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = make(np.random.default_rng(seed))
    module.k[grid_shape or grid()](*args, backend=backend, **meta)
    outs = (outputs,) if isinstance(outputs, int) else outputs
    return args, [args[i] for i in outs], reference, tolerance


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_interpreter_matches_numpy(name):
    args, outs, reference, tolerance = launch(name, "interp")
    expected = reference(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(outs, expected):
        if tolerance:
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_op_family_builds_with_nvcc(name, tmp_path, monkeypatch):
    from mytriton.backends.cuda.nvcc import compile_cubin

    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))
    body, make, *_ = KERNELS[name]
    meta = KERNELS[name][6] if len(KERNELS[name]) > 6 else {"BLOCK": BLOCK}
    import re

    from mytriton.runtime.arguments import arg_type, signature_of

    args = make(np.random.default_rng(0))
    params = re.search(r"def k\((.*?)\)", body).group(1).split(",")
    runtime = [p.strip() for p in params if "constexpr" not in p]
    signature = signature_of([arg_type(a, n) for a, n in zip(args, runtime)])
    cuda = compile_text(kernel_source(body), "cuda", signature=signature, defines=meta)
    assert compile_cubin(cuda)[:4] == b"\x7fELF"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_gpu_matches_the_interpreter(name):
    _, gpu, _, tolerance = launch(name, "cuda", seed=3)
    _, cpu, _, _ = launch(name, "interp", seed=3)
    for got, want in zip(gpu, cpu):
        if tolerance:
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(got, want)
