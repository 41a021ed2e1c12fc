# trace: a range with a runtime bound is a `for` region that names its captures and its carried
# values in source order, yields them, and gives results the code after it reads.
# RUN: mytriton trace %s -D BLOCK=4 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    count = 0
    # CHECK: for $i in range(0, n, 1) captures($offs) iter_args($count = 0, $total = full(0.0, shape=(4,), dtype=f32)@{{[0-9:]+}}) -> ($count.1, $total.1) @[[# @LINE + 1]]:5 {
    for i in range(n):
        # CHECK-NEXT: let $v = load(add(add(x, mul($i, 4)
        v = tl.load(x + i * BLOCK + offs)
        count += 1
        total += v
    # CHECK-NEXT: yield add($count, 1)@{{[0-9:]+}}, add($total, $v)@{{[0-9:]+}} @{{[0-9:]+}}
    # CHECK-NEXT: }
    # CHECK-NEXT: store(add(out, $offs)@{{[0-9:]+}}, div($total.1, $count.1)
    tl.store(out + offs, total / count)
