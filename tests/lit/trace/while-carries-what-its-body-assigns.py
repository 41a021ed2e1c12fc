# trace: a runtime while carries the names its body assigns that exist before
# it; its condition is traced in the condition region, its body yields the next values.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    i = 0
    total = 0.0
    # CHECK: while captures() iter_args($i = 0, $total = 0.0) -> ($i.1, $total.1) @[[# @LINE + 3]]:5 {
    # CHECK-NEXT: } condition cmp_lt($i, n)@[[# @LINE + 2]]:11 do {
    # CHECK-NEXT: yield add($i, 1)@[[# @LINE + 2]]:9, add($total, 0.5)@[[# @LINE + 3]]:9 @[[# @LINE + 1]]:5
    while i < n:
        i += 1
        total += 0.5
    # CHECK: store(out, $total.1, none)
    tl.store(out, total)
