# trace: tl.range's num_stages, loop_unroll_factor and true flags are kept on the loop (defaults left
# out); with options a loop stays a loop even with constant bounds.
# RUN: mytriton trace %s -D BLOCK=4 -D STAGES=3 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    # CHECK: for $i in range(0, n, 1, num_stages=3, loop_unroll_factor=2, warp_specialize=true) captures(
    for i in tl.range(0, n, 1, num_stages=STAGES, loop_unroll_factor=2, flatten=False, warp_specialize=True):
        total += tl.load(x + i * BLOCK + offs)
    # CHECK: for $j in range(0, 4, 1, num_stages=2) captures()
    for j in tl.range(0, 4, num_stages=2):
        total += j
    tl.store(out + offs, total)
