# trace: a runtime loop's step may be a runtime value (positive by contract, as
# in Triton's scf.for).
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: for $i in range(0, n, n) captures($offs) iter_args() -> ()
    for i in range(0, n, n):
        tl.store(out + offs, 1.0)
