"""Outer product and a rescaled copy: out[i, j] = x[i] * y[j], x2[i] = 2 * x[i].

The x tile feeds a rank-1 store (spread over all threads) and the rows of a
rank-2 product (held by the threads of each row): the layouts stage keeps it
in one layout and converts it to the other (compile --emit=layouts). (A tile
of fewer elements than the block has threads is loaded again instead.)
"""
import mytriton
import mytriton.language as tl


@mytriton.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, x2_ptr, M, N, BM: tl.constexpr = 128, BN: tl.constexpr = 64):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rows, mask=rows < M, other=0.0)
    y = tl.load(y_ptr + cols, mask=cols < N, other=0.0)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], x[:, None] * y[None, :], mask=mask)
    tl.store(x2_ptr + rows, 2.0 * x, mask=(rows < M) & (tl.program_id(1) == 0))
