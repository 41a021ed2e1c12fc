# trace: a runtime loop's step is positive (not 0).
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: runtime-loop-zero-step.py:[[# @LINE + 1]]:{{[0-9]+}}: error: range step cannot be zero
    for i in range(0, n, 0):
        tl.store(out + offs, 1.0)
