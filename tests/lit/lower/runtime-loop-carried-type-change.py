# lower: a value carried by a runtime loop keeps its type (f32, not vector<4 x f32>).
# RUN: mytriton trace %s -D BLOCK=4 | not mytriton lower 2>&1 | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = 0.0
    for i in range(n):
        # CHECK: runtime-loop-carried-type-change.py:[[# @LINE + 1]]:{{[0-9]+}}: error: loop-carried 'acc' changes type in the loop: it enters as f32 and the body makes it vector<4 x f32>
        acc = acc + tl.load(x + offs)
    tl.store(out + offs, acc)
