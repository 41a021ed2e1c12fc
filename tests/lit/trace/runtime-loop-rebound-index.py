# trace: the loop variable may be rebound in a runtime loop's body (as
# `start_n = tl.multiple_of(start_n, 16)` in Triton's attention tutorial): the
# new value holds for the rest of the iteration and is not carried.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: for $i in range(0, n, 1) captures($offs) iter_args() -> ()
    for i in range(n):
        i = i * 2
        # CHECK-NEXT: store(add(out, add($offs, mul($i, 2)@[[# @LINE - 1]]:13)
        tl.store(out + (offs + i), 1.0)
