"""Sigmoid: out[i] = 1 / (1 + exp(-x[i]))."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def sigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 256):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    denominator = tl.exp(-x)
    denominator += 1.0
    tl.store(out_ptr + offsets, 1.0 / denominator, mask=mask)
