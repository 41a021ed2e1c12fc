# trace: a runtime loop's step is a compile-time integer.
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: runtime-loop-runtime-step.py:[[# @LINE + 1]]:{{[0-9]+}}: error: the step of a runtime loop must be a compile-time integer
    for i in range(0, n, n):
        tl.store(out + offs, 1.0)
