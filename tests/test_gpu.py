"""Every sample on the GPU through the CUDA driver, against NumPy (skipped without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

import mytriton
from conftest import load_sample

pytestmark = pytest.mark.gpu

ELEMENTWISE = {
    "add": ("add_kernel", lambda x, y: x + y, 2),
    "vector_copy": ("copy_kernel", lambda x: x, 1),
    "relu": ("relu_kernel", lambda x: np.maximum(x, 0), 1),
    "sigmoid": ("sigmoid_kernel", lambda x: 1 / (1 + np.exp(-x)), 1),
}


@pytest.mark.parametrize("sample", sorted(ELEMENTWISE))
@pytest.mark.parametrize("n", [1, 1000, 4096, 100_003])
def test_elementwise_sample_matches_numpy_on_gpu(sample, n):
    name, reference, inputs = ELEMENTWISE[sample]
    kernel = getattr(load_sample(sample), name)
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(inputs)]
    out = np.full(n, np.nan, np.float32)
    kernel[lambda meta: (mytriton.cdiv(n, meta["BLOCK"]),)](*xs, out, n, backend="cuda")
    np.testing.assert_allclose(out, reference(*xs), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("block,num_warps", [(32, 4), (4096, 4), (256, 1), (1024, 8)])
def test_block_need_not_equal_thread_count(block, num_warps):
    kernel = load_sample("add").add_kernel
    n = 10_007
    rng = np.random.default_rng(block)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.full(n, np.nan, np.float32)
    kernel[(mytriton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=num_warps, backend="cuda")
    np.testing.assert_allclose(out, x + y, rtol=0, atol=0)


def test_leaky_relu_takes_a_runtime_float():
    kernel = load_sample("leaky_relu").leaky_relu_kernel
    n = 5000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel[(mytriton.cdiv(n, 256),)](x, out, n, 0.125, backend="cuda")
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.125 * x), rtol=1e-6)


def test_gpu_and_interpreter_agree_on_every_elementwise_sample():
    for sample, (name, _, inputs) in ELEMENTWISE.items():
        kernel = getattr(load_sample(sample), name)
        n = 3001
        rng = np.random.default_rng(7)
        xs = [rng.uniform(-4, 4, n).astype(np.float32) for _ in range(inputs)]
        outs = []
        for backend in ("cuda", "interp"):
            out = np.full(n, np.nan, np.float32)
            kernel[(mytriton.cdiv(n, 128),)](*xs, out, n, BLOCK=128, backend=backend)
            outs.append(out)
        np.testing.assert_allclose(outs[0], outs[1], rtol=2e-6, atol=1e-7)


def test_device_arrays_are_passed_without_copies():
    torch = pytest.importorskip("torch")
    kernel = load_sample("add").add_kernel
    n = 50_000
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    kernel[(mytriton.cdiv(n, 256),)](x, y, out, n, backend="cuda")
    torch.cuda.synchronize()
    assert torch.allclose(out, x + y)


def test_integer_pointers_on_gpu(tmp_kernel):
    path = tmp_kernel('''
        @mytriton.jit
        def scale(x, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            v = tl.load(x + offs, mask=m, other=0)
            tl.store(out + offs, v * 3 - 7, mask=m)
    ''')
    import importlib.util

    spec = importlib.util.spec_from_file_location("int_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    n = 777
    x = np.random.default_rng(3).integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    module.scale[(mytriton.cdiv(n, 64),)](x, out, n, BLOCK=64, backend="cuda")
    np.testing.assert_array_equal(out, x * 3 - 7)
