"""Matmuls with an operand loaded as it is stored and transposed with
``tl.trans`` before the dot: ``matmul_trans_b`` is ``x @ w.T`` with w stored
[N, K] and loaded as a [BLOCK_N, BLOCK_K] tile (``tl.dot(a, tl.trans(b))``,
as linear layers are often written); ``matmul_trans_a`` is ``a.T @ b`` with
a stored [K, M] and loaded as a [BLOCK_K, BLOCK_M] tile
(``tl.dot(tl.trans(a), b)``). Offsets recomputed from the loop index, masks
on every axis."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def matmul_trans_b(x_ptr, w_ptr, c_ptr, M, N, K,
                   stride_xm, stride_xk, stride_wn, stride_wk, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + (k + offs_k)[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[:, None] * stride_wn + (k + offs_k)[None, :] * stride_wk,
                    mask=(offs_n[:, None] < N) & ((k + offs_k)[None, :] < K), other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_trans_a(a_ptr, b_ptr, c_ptr, M, N, K,
                   stride_ak, stride_am, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + (k + offs_k)[:, None] * stride_ak + offs_m[None, :] * stride_am,
                    mask=((k + offs_k)[:, None] < K) & (offs_m[None, :] < M), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(tl.trans(a), b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _launch(kernel, first, second, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_warps):
    c = np.empty((M, N), dtype=first.dtype)
    strides = [s // t.itemsize for t in (first, second, c) for s in t.strides]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    kernel[grid](first, second, c, M, N, K, *strides, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                 num_warps=num_warps)
    return c


def linear(x, w, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    """x @ w.T for x [M, K] and w [N, K]."""
    (M, K), N = x.shape, w.shape[0]
    return _launch(matmul_trans_b, x, w, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_warps)


def matmul_at(at, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    """at.T @ b for at [K, M] and b [K, N]."""
    (K, M), N = at.shape, b.shape[1]
    return _launch(matmul_trans_a, at, b, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_warps)
