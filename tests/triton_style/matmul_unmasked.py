"""C = A @ B with no masks at all: every size must be a multiple of its
block (the host checks), the pointers incremented along K as tutorial 03
does, a 2D grid."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def matmul_unmasked(a_ptr, b_ptr, c_ptr, M, N, K,
                    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c)


def matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4):
    M, K = a.shape
    N = b.shape[1]
    assert M % BLOCK_M == 0 and N % BLOCK_N == 0 and K % BLOCK_K == 0, "no masks: whole blocks only"
    c = np.empty((M, N), dtype=a.dtype)
    strides = [s // t.itemsize for t in (a, b, c) for s in t.strides]
    grid = (M // BLOCK_M, N // BLOCK_N)
    matmul_unmasked[grid](a, b, c, M, N, K, *strides, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                          num_warps=num_warps)
    return c
