# trace: an inner loop captures the outer index, and a value carried by both loops goes through both.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    # CHECK: for $i in range(0, n, 1) captures($offs) iter_args($acc = {{.*}}) -> ($acc.1)
    for i in range(n):
        # CHECK-NEXT: for $j in range(0, $i, 1) captures($i, $offs) iter_args($acc.2 = $acc) -> ($acc.3)
        for j in range(i):
            acc += tl.load(x + (i * n + j) * BLOCK + offs)
    # CHECK: yield $acc.3 @
    tl.store(out + offs, acc)
