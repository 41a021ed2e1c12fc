# trace: a name first bound in a runtime loop's body is not defined after the loop.
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(n):
        tmp = tl.load(x + offs)
    # CHECK: names-bound-in-the-body-do-not-escape.py:[[# @LINE + 1]]:{{[0-9]+}}: error: 'tmp' is not defined
    tl.store(out + offs, tmp)
