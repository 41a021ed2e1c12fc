"""Copy: out[i] = x[i] for i < n."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
