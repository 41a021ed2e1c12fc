"""Split-K matmul, as Triton's ops/matmul.py writes it: the K loop is shared
among SPLIT_K programs (grid axis 1), each adding its partial product into C
with ``tl.atomic_add``."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _matmul_split_k_kernel(A, B, C, M, N, K,  #
                           stride_am, stride_ak,  #
                           stride_bk, stride_bn,  #
                           stride_cm, stride_cn,  #
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  #
                           SPLIT_K: tl.constexpr):
    # matrix multiplication
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    # do matrix multiplication
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    # pointers
    A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_remaining = K - k * (BLOCK_K * SPLIT_K)
        a = tl.load(A, mask=rk[None, :] < k_remaining, other=0.)
        b = tl.load(B, mask=rk[:, None] < k_remaining, other=0.)
        acc += tl.dot(a, b)
        A += BLOCK_K * SPLIT_K * stride_ak
        B += BLOCK_K * SPLIT_K * stride_bk
    # rematerialize rm and rn to save registers
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    # handles write-back with reduction-splitting
    if SPLIT_K == 1:
        tl.store(C, acc, mask=mask)
    else:
        tl.atomic_add(C, acc, mask=mask)


def matmul_split_k(a, b, split_k=4):
    M, K = a.shape
    K, N = b.shape
    c = np.zeros((M, N), dtype=np.float32)  # the programs of a tile add into it
    grid = lambda META: (triton.cdiv(M, META['BLOCK_M']) * triton.cdiv(N, META['BLOCK_N']), META['SPLIT_K'])
    _matmul_split_k_kernel[grid](
        a, b, c, M, N, K,  #
        a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,  #
        b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,  #
        c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,  #
        BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, SPLIT_K=split_k)
    return c
