# trace: tl.static_range unrolls: one store per iteration, no `for`.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK-NOT: for $
    # CHECK-COUNT-2: store(
    # CHECK-NOT: store(
    # CHECK-NOT: for $
    for i in tl.static_range(2):
        tl.store(out + i * BLOCK + offs, tl.load(x + offs))
