# trace and lower: a second loop starts from the first loop's result.
# RUN: mytriton trace %s -D BLOCK=4 | mytriton lower | filecheck %s
import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = 0.0
    # CHECK: [[FIRST:%[0-9]+]] = for {{%[0-9]+}} in range(0, n, 1) iter_args({{%[0-9]+}} = 0.0) : f32 @[[# @LINE + 1]]:5 {
    for i in range(n):
        acc += 1.0
    # CHECK: {{%[0-9]+}} = for {{%[0-9]+}} in range(0, n, 1) iter_args({{%[0-9]+}} = [[FIRST]]) : f32 @[[# @LINE + 1]]:5 {
    for j in range(n):
        acc = acc * 2.0
    tl.store(out + offs, acc)
