"""Row minima: out[r] = min(x[r, :]); masked-off elements read as +inf."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def row_min_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr = 2, BLOCK_N: tl.constexpr = 512):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=float("inf"))
    tl.store(out_ptr + rows, tl.min(x, axis=1), mask=rows < n_rows)
