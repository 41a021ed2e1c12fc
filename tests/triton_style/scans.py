"""Scans and index reductions as kernel libraries write them: a row-wise
cumulative sum (``tl.cumsum``), the argmax of each row (``tl.argmax``), a
custom ``tl.reduce`` over a (value, index) tuple keeping the last maximum,
and a Mamba-style selective-scan step, ``h_t = a_t * h_{t-1} + b_t``, as a
``tl.associative_scan`` over the tuple (a, b). Each program handles one
row; the rows are ragged (masked) against the power-of-two block."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _cumsum_argmax_kernel(x_ptr, cumsum_ptr, argmax_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(cumsum_ptr + row * n_cols + cols, tl.cumsum(x, axis=0), mask=mask)
    x = tl.where(mask, x, -float("inf"))
    tl.store(argmax_ptr + row, tl.argmax(x, axis=0))


@triton.jit
def _last_max_combine(value1, index1, value2, index2):
    # of equal values, the higher index wins
    pick_first = (value1 > value2) | ((value1 == value2) & (index1 > index2))
    return tl.where(pick_first, value1, value2), tl.where(pick_first, index1, index2)


@triton.jit
def _last_max_kernel(x_ptr, value_ptr, index_ptr, n_rows, n_cols,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
    index = tl.broadcast_to(cols[None, :], (BLOCK_M, BLOCK_N))
    value, where = tl.reduce((x, index), 1, _last_max_combine)
    tl.store(value_ptr + rows, value, mask=rows < n_rows)
    tl.store(index_ptr + rows, where, mask=rows < n_rows)


@triton.jit
def _first_order_op(l_a, l_b, r_a, r_b):
    # composing x -> l_a * x + l_b, then x -> r_a * x + r_b
    return r_a * l_a, r_a * l_b + r_b


@triton.jit
def _selective_scan_kernel(a_ptr, b_ptr, h_ptr, seq_len, BLOCK_L: tl.constexpr):
    channel = tl.program_id(0)
    t = tl.arange(0, BLOCK_L)
    mask = t < seq_len
    a = tl.load(a_ptr + channel * seq_len + t, mask=mask, other=1.0)
    b = tl.load(b_ptr + channel * seq_len + t, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=_first_order_op)
    tl.store(h_ptr + channel * seq_len + t, h, mask=mask)


def cumsum_argmax(x):
    n_rows, n_cols = x.shape
    cumsum = np.empty_like(x)
    argmax = np.empty(n_rows, np.int32)
    _cumsum_argmax_kernel[(n_rows,)](x, cumsum, argmax, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return cumsum, argmax


def last_max(x):
    n_rows, n_cols = x.shape
    value = np.empty(n_rows, x.dtype)
    index = np.empty(n_rows, np.int32)
    BLOCK_M = 16
    _last_max_kernel[(triton.cdiv(n_rows, BLOCK_M),)](x, value, index, n_rows, n_cols,
                                                      BLOCK_M=BLOCK_M, BLOCK_N=triton.next_power_of_2(n_cols))
    return value, index


def selective_scan(a, b):
    channels, seq_len = a.shape
    h = np.empty_like(a)
    _selective_scan_kernel[(channels,)](a, b, h, seq_len, BLOCK_L=triton.next_power_of_2(seq_len))
    return h
