"""Tutorial 09's persistent matmul in its device-side descriptor form: a
fixed number of programs walk the output tiles with ``tl.range(...,
flatten=True, warp_specialize=...)``, each tile's place from the grouped
ordering in a @jit helper (``min`` of a difference: not provably never
negative), A and B^T (B given as [N, K], read as ``b.T``) through
``tl.make_tensor_descriptor``, and the epilogue either whole or split in
two halves along N (``reshape``, ``permute``, ``split``), each stored
through a descriptor of half the block. Ragged sizes: the descriptors read
zeros and drop writes outside the matrices. f16 in, f32 accumulation, f16
out."""
import numpy as np

import mytriton as triton
import mytriton.language as tl

NUM_SMS = 4


@triton.jit
def _tile_place(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
    group = tile_id // num_pid_in_group
    first_pid_m = group * GROUP_SIZE_M
    rows_in_group = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % rows_in_group)
    pid_n = (tile_id % num_pid_in_group) // rows_in_group
    return pid_m, pid_n


@triton.jit
def matmul_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                                 NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    dtype = c_ptr.dtype.element_ty
    start = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N // 2 if EPILOGUE_SUBTILE else BLOCK_N])

    # The epilogue's tile counter runs apart from the loop's, as the tutorial's does.
    tile_c = start - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_place(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a = a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k])
            acc = tl.dot(a, b.T, acc)

        tile_c += NUM_SMS
        pid_m, pid_n = _tile_place(tile_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        off_cm = pid_m * BLOCK_M
        off_cn = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([off_cm, off_cn], left.to(dtype))
            c_desc.store([off_cm, off_cn + BLOCK_N // 2], right.to(dtype))
        else:
            c_desc.store([off_cm, off_cn], acc.to(dtype))


def matmul(a, b_t, epilogue_subtile=False, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32):
    """a @ b_t.T for a [M, K] and b_t [N, K], both row-major f16."""
    M, K = a.shape
    N, K2 = b_t.shape
    assert K == K2, "Incompatible dimensions"
    c = np.empty((M, N), dtype=np.float16)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    matmul_descriptor_persistent[(min(NUM_SMS, tiles),)](
        a, b_t, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_SIZE_M=4,
        EPILOGUE_SUBTILE=epilogue_subtile, NUM_SMS=NUM_SMS, WARP_SPECIALIZE=False)
    return c
