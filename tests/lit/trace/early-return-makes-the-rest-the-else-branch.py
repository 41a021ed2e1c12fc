# trace: an early return (`if row >= n_rows: return`, as in Triton's cross-entropy
# kernels) makes the rest of the kernel the other branch of a runtime if; an if
# on a constexpr is resolved; a nested early return nests the same way.
# RUN: mytriton trace %s -D BLOCK=4 -D SKIP_ODD=1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n_rows, BLOCK: tl.constexpr, SKIP_ODD: tl.constexpr):
    row = tl.program_id(0)
    # CHECK: if cmp_ge($row, n_rows)@[[# @LINE + 1]]:8 captures($row) -> () @[[# @LINE + 1]]:5 {
    if row >= n_rows:
        return
    # CHECK-NEXT: yield @[[# @LINE - 2]]:5
    # CHECK-NEXT: } else {
    if SKIP_ODD:
        # CHECK-NEXT: if cmp_eq(mod($row, 2)@[[# @LINE + 1]]:12, 1)@[[# @LINE + 1]]:12 captures($row) -> () @[[# @LINE + 1]]:9 {
        if row % 2 == 1:
            return
    # CHECK-NEXT: yield
    # CHECK-NEXT: } else {
    # CHECK-NEXT: store(add(out, $row)@[[# @LINE + 1]]:14, 1.0, none)@[[# @LINE + 1]]:5
    tl.store(out + row, 1.0)
