# trace: a negative constant step counts down, as Triton does it: the loop runs
# over range(stop, start, -step) and the body sees start - (index - stop).
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: for $i in range(0, n, 2) captures($offs) iter_args() -> ()
    for i in range(n, 0, -2):
        # CHECK-NEXT: store(add(out, add($offs, sub(n, sub($i, 0)
        tl.store(out + (offs + i), 1.0)
