# trace: a range with constant bounds and more than 8 iterations is a `for` region, as every range
# is in Triton (8 or fewer unroll; tl.static_range always unrolls).
# RUN: mytriton trace %s -D BLOCK=4 -D N=36 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    # CHECK: for $i in range(0, 36, 4)
    # CHECK-NEXT: load(
    # CHECK-NOT: load(
    # CHECK-NOT: for $j
    for i in range(0, N, BLOCK):
        acc += tl.load(x + i + offs)
    # the 8-iteration loop unrolls: its index is a constant in each copy of the body
    # CHECK: store(add(out, $offs)@{{[0-9:]+}}, add(add(add(add(add(add(add(add($acc.1, 0)
    for j in range(8):
        acc += j
    tl.store(out + offs, acc)
