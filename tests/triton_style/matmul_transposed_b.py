"""C = A @ B^T with B stored [N, K] row-major (a linear layer's weight, ``x @
w.T``): the B tile [BK, BN] is read with its rows (K) contiguous in memory,
so that, with ``stride_bk`` specialised to 1, it is copied in 16-byte chunks
into a column-major shared buffer (K-major for wgmma)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def matmul_transposed_b(a_ptr, b_ptr, c_ptr, M, N, K,
                        stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def linear(x, w, BM=64, BN=64, BK=32, num_warps=4, num_stages=3):
    """x @ w.T for x [M, K] and w [N, K] (f16 or bf16), an f16/bf16 result."""
    M, K = x.shape
    N = w.shape[0]
    c = np.empty((M, N), dtype=x.dtype)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    strides = [s // t.itemsize for t in (x, w, c) for s in t.strides]
    matmul_transposed_b[grid](x, w, c, M, N, K, *strides, BM=BM, BN=BN, BK=BK,
                              num_warps=num_warps, num_stages=num_stages)
    return c
