"""Row maxima: out[r] = max(x[r, :]); masked-off elements read as -inf."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def row_max_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 128):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
    tl.store(out_ptr + rows, tl.max(x, axis=1), mask=rows < n_rows)
