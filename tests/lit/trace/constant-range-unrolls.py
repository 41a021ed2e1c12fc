# trace: a range with a constant bound unrolls while tracing: no `for`, one load per iteration.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    # CHECK-NOT: for $
    # CHECK-COUNT-3: load(
    # CHECK-NOT: load(
    # CHECK-NOT: for $
    for i in range(3):
        acc += tl.load(x + i * BLOCK + offs)
    tl.store(out + offs, acc)
