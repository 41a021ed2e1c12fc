"""ReLU: out[i] = max(x[i], 0)."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 512):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)
