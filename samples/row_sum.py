"""Row sums of a matrix: out[r] = sum(x[r, :]), BLOCK_M rows per program."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def row_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr = 4, BLOCK_N: tl.constexpr = 256):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(x, axis=1), mask=rows < n_rows)
