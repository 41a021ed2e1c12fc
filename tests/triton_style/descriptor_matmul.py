"""Matrix multiplication through tensor descriptors, Triton's replacement for
block pointers: tl.make_tensor_descriptor for A, B and C (on the GPU
Triton builds them with TMA), desc.load at the block's offsets in a K loop,
desc.store of the result. Reads out of bounds give zeros and writes out of
bounds are dropped, so no size needs to be a multiple of its block (TMA
needs the rows' strides to be multiples of 16 bytes). fp16 inputs, fp32
accumulation, fp16 output."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def matmul_kernel_descriptor(a_ptr, b_ptr, c_ptr,  #
                             M, N, K,  #
                             BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    dtype = tl.float16
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)

    a_desc = tl.make_tensor_descriptor(
        a_ptr,
        shape=[M, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
    )
    b_desc = tl.make_tensor_descriptor(
        b_ptr,
        shape=[K, N],
        strides=[N, 1],
        block_shape=[BLOCK_SIZE_K, BLOCK_SIZE_N],
    )
    c_desc = tl.make_tensor_descriptor(
        c_ptr,
        shape=[M, N],
        strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N],
    )

    offs_am = pid_m * BLOCK_SIZE_M
    offs_bn = pid_n * BLOCK_SIZE_N
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_SIZE_K):
        a = a_desc.load([offs_am, k])
        b = b_desc.load([k, offs_bn])
        accumulator = tl.dot(a, b, accumulator)
    c = accumulator.to(dtype)
    c_desc.store([offs_am, offs_bn], c)


def matmul(a, b, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.flags.c_contiguous and b.flags.c_contiguous, "the descriptors describe row-major matrices"
    M, K = a.shape
    K, N = b.shape
    c = np.empty((M, N), dtype=np.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']), triton.cdiv(N, META['BLOCK_SIZE_N']))
    matmul_kernel_descriptor[grid](a, b, c, M, N, K, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N,
                                   BLOCK_SIZE_K=BLOCK_SIZE_K)
    return c
