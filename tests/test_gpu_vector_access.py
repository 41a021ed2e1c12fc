"""16-byte accesses on the GPU: vector add, softmax and layer norm with
aligned, ragged and offset-view (misaligned) arguments, against the
interpreter and NumPy. Offset views of device tensors must take the scalar
path (a vector access there would fault); aligned ones the vector path, even
beside a scalar access of the same shape."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from conftest import ROOT, load_sample

pytestmark = pytest.mark.gpu


def torch_cuda():
    import torch

    return torch


def device(torch, array: np.ndarray, offset: int = 0):
    """``array`` on the GPU, starting ``offset`` elements into a fresh buffer
    (so an offset of 1 is a misaligned view, as ``x[1:]``)."""
    flat = torch.zeros(array.size + offset, dtype=getattr(torch, str(array.dtype)), device="cuda")
    view = flat[offset:]
    view.copy_(torch.from_numpy(array.reshape(-1)))
    return view.view(array.shape)


@pytest.mark.parametrize("n", [16_000, 100_003, 1 << 20])
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_vector_add_matches_numpy_aligned_ragged_and_offset(n, offset):
    torch = torch_cuda()
    kernel = load_sample("add").add_kernel
    rng = np.random.default_rng(n + offset)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    dx, dy = device(torch, x, offset), device(torch, y, offset)
    out = device(torch, np.full(n, np.nan, np.float32), offset)
    handle = kernel[(mytriton.cdiv(n, 1024),)](dx, dy, out, n, BLOCK=1024, backend="cuda")
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), x + y)
    vectorised = "vector=4" in handle.asm["layouts"]
    assert vectorised == (offset % 4 == 0 and n % 8 == 0)  # a launch proves n divisible by 16 or 8


@pytest.mark.parametrize("n", [4096, 5000, 5004])
def test_half_vector_copy_moves_eight_halves(n):
    torch = torch_cuda()
    kernel = load_sample("vector_copy").copy_kernel
    x = np.random.default_rng(n).standard_normal(n).astype(np.float16)
    out = device(torch, np.zeros(n, np.float16))
    handle = kernel[(mytriton.cdiv(n, 1024),)](device(torch, x), out, n, BLOCK=1024, backend="cuda")
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), x)
    assert ("vector=8" in handle.asm["layouts"]) == (n % 8 == 0)


@pytest.mark.parametrize("rows, cols, pad", [(64, 1024, 0), (37, 1000, 0), (16, 8192, 0), (33, 512, 1)])
def test_softmax_matches_the_interpreter(rows, cols, pad):
    torch = torch_cuda()
    kernel = load_sample("softmax").softmax_kernel
    stride = cols + pad  # pad 1: every row but the first starts misaligned
    x = np.random.default_rng(rows * cols).standard_normal((rows, stride)).astype(np.float32)
    block = 1 << (cols - 1).bit_length()
    warps = 4 if block <= 2048 else 8
    out = device(torch, np.zeros((rows, stride), np.float32))
    handle = kernel[(rows,)](out, device(torch, x), stride, stride, cols, BLOCK=block, num_warps=warps,
                             backend="cuda")
    torch.cuda.synchronize()
    expected = np.zeros((rows, stride), np.float32)
    kernel[(rows,)](expected, x, stride, stride, cols, BLOCK=block, num_warps=warps, backend="interp")
    np.testing.assert_allclose(out.cpu().numpy()[:, :cols], expected[:, :cols], rtol=1e-5, atol=1e-6)
    assert ("vector=4" in handle.asm["layouts"]) == (stride % 8 == 0 and cols % 8 == 0)


def layer_norm_kernel():
    path = ROOT / "tests" / "triton_style" / "layer_norm_fwd.py"
    spec = importlib.util.spec_from_file_location("ts_layer_norm_fwd", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._layer_norm_fwd_fused


@pytest.mark.parametrize("rows, cols, offset", [(32, 8192, 0), (19, 1000, 0), (8, 4096, 1), (5, 777, 3)])
def test_layer_norm_matches_numpy(rows, cols, offset):
    torch = torch_cuda()
    kernel = layer_norm_kernel()
    rng = np.random.default_rng(cols + offset)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    y = device(torch, np.zeros((rows, cols), np.float32), offset)
    mean, rstd = device(torch, np.zeros(rows, np.float32)), device(torch, np.zeros(rows, np.float32))
    block = min(1 << (cols - 1).bit_length(), 1024)
    warps = min(max(block // 256, 1), 8)
    handle = kernel[(rows,)](device(torch, x, offset), y, device(torch, w, offset), device(torch, b), mean, rstd,
                             cols, cols, 1e-5, BLOCK_SIZE=block, num_warps=warps, backend="cuda")
    torch.cuda.synchronize()
    mu = x.astype(np.float64).mean(axis=1, keepdims=True)
    sigma = np.sqrt(x.astype(np.float64).var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.cpu().numpy(), (x - mu) / sigma * w + b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean.cpu().numpy(), mu[:, 0], rtol=1e-5, atol=1e-5)
    # Aligned, every access is a vector (x's three loads, w's, b's, y's store); with
    # offset views of x, y and w, only b's load (b is not offset) keeps its vector.
    vectors = handle.asm["layouts"].count("vector=4")
    assert vectors == (0 if cols % 8 else 6 if offset % 4 == 0 else 1)


@mytriton.jit
def scale_by_channel(x_ptr, w_ptr, out_ptr, n, per_channel, BLOCK: tl.constexpr):
    """Group norm's normalising pass in small: a contiguous row, the weight of
    each element's channel gathered (offs // per_channel), the row stored."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs // per_channel, mask=mask, other=0.0)
    tl.store(out_ptr + row * n + offs, x * w, mask=mask)


@pytest.mark.parametrize("n, per_channel", [(2048, 512), (2048, 3), (1000, 7), (1004, 7)])
def test_a_gather_beside_a_contiguous_row_leaves_the_row_its_vectors(n, per_channel):
    torch = torch_cuda()
    rows = 6
    rng = np.random.default_rng(n + per_channel)
    x = rng.standard_normal((rows, n)).astype(np.float16)
    w = rng.standard_normal(-(-n // per_channel)).astype(np.float16)
    out = device(torch, np.full((rows, n), np.nan, np.float16))
    handle = scale_by_channel[(rows,)](device(torch, x), device(torch, w), out, n, per_channel, BLOCK=2048,
                                       backend="cuda")
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), x * w[np.arange(n) // per_channel])
    layouts = handle.asm["layouts"]
    assert ("vector=8" in layouts) == (n % 8 == 0)  # the row's load and store; the gather has none
