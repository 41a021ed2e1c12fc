"""Sorting each row of a matrix in one program, as top-k and sampling
kernels do: the row is loaded into a power-of-two block (its tail padded
with a value that sorts last), sorted with ``tl.sort``, and its first
``n_cols`` elements stored."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def sort_rows_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    x_row_stride,
    out_row_stride,
    BLOCK_SIZE: tl.constexpr,
    DESCENDING: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    pad = -float("inf") if DESCENDING else float("inf")
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=pad)
    y = tl.sort(x, descending=DESCENDING)
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


def sort_rows(x, descending=False):
    n_rows, n_cols = x.shape
    out = np.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    sort_rows_kernel[(n_rows, )](x, out, n_cols, x.shape[1], out.shape[1], BLOCK_SIZE=BLOCK_SIZE,
                                 DESCENDING=descending)
    return out
