# trace: tl.randint is one of mytriton's own @jit helpers (mytriton/language/random.py),
# traced as a user's helper is, with its n_rounds: two Philox rounds give two umulhi on
# the way to the first word. Every op it makes is located at the call, the kernel's line.
# RUN: mytriton trace %s -D BLOCK=4 -s "*u32, i32" | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(out, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # CHECK: let $offset_lo = cast($offs, dtype=u32)@[[LINE:[0-9]+]]:26
    # CHECK: let $seed = cast(seed, dtype=u64)@[[LINE]]:26
    # CHECK: store(add(out, $offs)@[[LINE]]:14, xor(xor(umulhi(3449720151, xor(xor(umulhi(3528531795, {{.*}})@[[LINE]]:26, none)@[[LINE]]:5
    # CHECK-NOT: umulhi
    tl.store(out + offs, tl.randint(seed, offs, n_rounds=2))
