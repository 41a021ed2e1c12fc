"""Sums of rows longer than a tile: a runtime loop over column chunks."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def long_row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr = 512):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
