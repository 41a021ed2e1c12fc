"""@triton.heuristics: the block size and whether masks are needed computed
from the arguments at each launch, as Triton's own kernels do (EVEN_N)."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.heuristics({
    "BLOCK_SIZE": lambda args: min(1024, triton.next_power_of_2(args["n_elements"])),
    "EVEN_N": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0,
})
@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, n_elements, scale, shift,
                       BLOCK_SIZE: tl.constexpr, EVEN_N: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN_N:
        x = tl.load(x_ptr + offsets)
    else:
        x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    y = x * scale + shift
    if EVEN_N:
        tl.store(out_ptr + offsets, y)
    else:
        tl.store(out_ptr + offsets, y, mask=offsets < n_elements)


def scale_shift(x, scale, shift):
    out = np.empty_like(x)
    n_elements = x.size
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )
    scale_shift_kernel[grid](x, out, n_elements, scale, shift)
    return out
