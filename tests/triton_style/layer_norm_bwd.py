"""Layer norm, backward, as kernel libraries write it without atomics
(Liger-Kernel's style): each program takes a run of rows, writes their dx
and keeps partial dw/db sums in registers, stored once per program and
summed on the host. The run's end uses Python ``min`` on runtime values."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _layer_norm_backward_kernel(
    X_ptr, W_ptr, Mean_ptr, RSTD_ptr, DX_ptr, DW_ptr, DB_ptr, DY_ptr,
    stride_x, stride_dx, stride_dy, stride_dw,
    n_rows, n_cols, rows_per_program,
    BLOCK_SIZE: tl.constexpr,
):
    row_block_id = tl.program_id(0)
    row_start = row_block_id * rows_per_program
    row_end = min((row_block_id + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols

    dw_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)

    w = tl.load(W_ptr + cols, mask=mask, other=0.0)

    for row in range(row_start, row_end):
        x = tl.load(X_ptr + row * stride_x + cols, mask=mask, other=0.0)
        dy = tl.load(DY_ptr + row * stride_dy + cols, mask=mask, other=0.0)
        mean = tl.load(Mean_ptr + row)
        rstd = tl.load(RSTD_ptr + row)

        x_hat = (x - mean) * rstd
        wdy = w * dy
        c1 = tl.sum(x_hat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        dx = (wdy - (x_hat * c1 + c2)) * rstd
        tl.store(DX_ptr + row * stride_dx + cols, dx, mask=mask)

        dw_row += dy * x_hat
        db_row += dy

    tl.store(DW_ptr + row_block_id * stride_dw + cols, dw_row, mask=mask)
    tl.store(DB_ptr + row_block_id * stride_dw + cols, db_row, mask=mask)


def layer_norm_backward(dy, x, w, mean, rstd, programs=4):
    n_rows, n_cols = dy.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    rows_per_program = triton.cdiv(n_rows, programs)
    dx = np.empty_like(dy)
    _dw = np.empty((programs, n_cols), dtype=np.float32)
    _db = np.empty((programs, n_cols), dtype=np.float32)
    _layer_norm_backward_kernel[(programs,)](
        x, w, mean, rstd, dx, _dw, _db, dy,
        x.shape[1], dx.shape[1], dy.shape[1], _dw.shape[1],
        n_rows, n_cols, rows_per_program,
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return dx, _dw.sum(axis=0), _db.sum(axis=0)
