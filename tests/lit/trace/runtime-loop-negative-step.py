# trace: a runtime loop's step is positive (not -1).
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: runtime-loop-negative-step.py:[[# @LINE + 1]]:{{[0-9]+}}: error: the step of a runtime loop must be positive, got -1
    for i in range(0, n, -1):
        tl.store(out + offs, 1.0)
