"""C = A @ B with the K loop in a ``@jit`` helper that takes the first
blocks' pointers and returns the accumulator (pointer increments and a mask
on K inside it; masks on M and N at the store); a 2D grid."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def matmul_loop_helper(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Rows and columns past the matrix wrap around (tutorial 03's % M): read, never stored.
    rows = offs_m % M
    cols = offs_n % N
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = _k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    M, K = a.shape
    N = b.shape[1]
    c = np.empty((M, N), dtype=a.dtype)
    strides = [s // t.itemsize for t in (a, b, c) for s in t.strides]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_loop_helper[grid](a, b, c, M, N, K, *strides, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                             num_warps=num_warps)
    return c
