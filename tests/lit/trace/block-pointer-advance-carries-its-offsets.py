# trace: a block pointer is a frontend value; its load is the ordinary masked tile load
# (base + (offset + arange) * stride on each axis, masked by 0 <= coordinate < shape on each
# checked dimension, the padding as other), and a loop that advances it carries its offsets,
# one value each.
# RUN: mytriton trace %s -s "*fp32, *fp32, i32, i32, i32" -D BM=16 -D BN=32 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    block = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    # CHECK: for $start in range(0, N, 32) captures() iter_args($acc = {{.*}}, $block_off0 = mul($pid, 16)@{{[0-9:]+}}, $block_off1 = 0) -> ($acc.1, $block_off0.1, $block_off1.1)
    for start in range(0, N, BN):
        # CHECK: let $[[ROWS:[a-z0-9_.]+]] = expand_dims(add($block_off0, arange(start=0, end=16)
        # CHECK: load(add(x_ptr, add(mul($[[ROWS]], stride_m){{.*}}cmp_ge($[[ROWS]], 0){{.*}}cmp_lt($[[ROWS]], M){{.*}}, 0.0)
        acc += tl.sum(tl.load(block, boundary_check=(0, 1), padding_option="zero"), axis=1)
        block = tl.advance(block, (0, BN))
    # CHECK: yield {{.*}}, $block_off0, add($block_off1, 32)
    rows = pid * BM + tl.arange(0, BM)
    tl.store(out_ptr + rows, acc, mask=rows < M)
