"""Leaky ReLU: out[i] = x[i] if x[i] > 0 else slope * x[i], with a runtime slope."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n, slope, BLOCK: tl.constexpr = 256):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.where(x > 0, x, x * slope)
    tl.store(out_ptr + offsets, y, mask=mask)
