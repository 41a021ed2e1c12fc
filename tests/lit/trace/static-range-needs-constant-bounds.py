# trace: tl.static_range with a runtime bound is an error at the loop.
# RUN: not mytriton trace %s -D BLOCK=4 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: static-range-needs-constant-bounds.py:[[# @LINE + 1]]:{{[0-9]+}}: error: tl.static_range needs compile-time integer bounds; use range(...) for a runtime loop
    for i in tl.static_range(n):
        tl.store(out + offs, tl.load(x + offs))
