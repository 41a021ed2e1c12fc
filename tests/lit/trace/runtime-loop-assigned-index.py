# trace: a runtime loop's index is not assigned in the body.
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(n):
        # CHECK: runtime-loop-assigned-index.py:[[# @LINE + 1]]:{{[0-9]+}}: error: the loop variable 'i' cannot be assigned in a runtime loop
        i = i + 1
