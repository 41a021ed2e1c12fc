"""Nested runtime loops: out[b, j] = sum over i < n_outer, t < n_inner of x[i, t, j]."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def nested_loops_kernel(x_ptr, out_ptr, n_outer, n_inner, width, BLOCK: tl.constexpr = 128):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < width
    total = tl.zeros((BLOCK,), tl.float32)
    for i in range(n_outer):
        partial = tl.zeros((BLOCK,), tl.float32)
        for t in range(n_inner):
            partial += tl.load(x_ptr + (i * n_inner + t) * width + cols, mask=mask, other=0.0)
        total += partial
    tl.store(out_ptr + cols, total, mask=mask)
