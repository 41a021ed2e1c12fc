"""Cross-entropy forward and gradient in one pass, as Liger-Kernel writes it:
an online softmax over the row in blocks, the gradient written over the
logits in place, and an early ``return`` for rows whose label is
``ignore_index``."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def liger_cross_entropy_kernel(
    X_ptr,
    X_stride,
    Y_ptr,
    Y_stride,
    loss_ptr,
    loss_stride,
    n_cols,
    n_non_ignore,
    ignore_index,
    BLOCK_SIZE: tl.constexpr,
):
    # https://github.com/triton-lang/triton/issues/1058
    # If B*T*V is too large, program_id * stride will overflow out of int32, so we convert to int64
    program_id = tl.program_id(0).to(tl.int64)

    # 1. Load Y_ptr first because if the target is ignore_index, we can return right away
    Y_ptr += program_id * Y_stride
    y = tl.load(Y_ptr)

    # 2. locate the start index
    X_ptr += program_id * X_stride

    if y == ignore_index:
        # set all X_ptr as 0
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            tl.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        return

    loss_ptr += program_id * loss_stride

    # Online softmax: 1 loop to find max and sum
    m = float("-inf")  # m is the max value. use the notation from the paper
    d = 0.0  # d is the sum. use the notation from the paper
    ori_X_y = tl.load(X_ptr + y).cast(tl.float32)  # we need to store the original value of X_y for the loss calculation

    # 3. [Online softmax] first pass: find max + sum
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tl.float32)
        block_max = tl.max(X_block)
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new

    # 4. [Online Softmax] Second pass: compute gradients
    # dx_y = (softmax(x_y) - 1) / N
    # dx_i = softmax(x_i) / N, i != y
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tl.float32)
        X_block = tl.exp(X_block - m) / d
        X_block = tl.where(X_offsets != y, X_block, X_block - 1.0)
        X_block = X_block / n_non_ignore
        tl.store(X_ptr + X_offsets, X_block, mask=X_offsets < n_cols)

    # 5. Calculate the loss
    # loss = log (softmax(X_y)) = log ((e ^ (X_y - max(X)) / sum(e ^ (X - max(X))))
    #      = (X_y - max(X)) - log(sum(e ^ (X - max(X))))
    loss = -(ori_X_y - m - tl.log(d))
    loss = loss / n_non_ignore
    tl.store(loss_ptr, loss)


def cross_entropy_forward(_input, target, ignore_index=-100):
    BT, V = _input.shape
    n_rows = BT
    BLOCK_SIZE = min(1024, triton.next_power_of_2(V))
    loss_1d = np.zeros(n_rows, dtype=np.float32)
    n_non_ignore = int((target != ignore_index).sum())
    _input = np.ascontiguousarray(_input)
    liger_cross_entropy_kernel[(n_rows,)](
        X_ptr=_input,
        X_stride=_input.strides[-2] // _input.itemsize,
        Y_ptr=target,
        Y_stride=target.strides[-1] // target.itemsize,
        loss_ptr=loss_1d,
        loss_stride=loss_1d.strides[-1] // loss_1d.itemsize,
        n_cols=V,
        n_non_ignore=n_non_ignore,
        ignore_index=ignore_index,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=4,
    )
    loss = np.sum(loss_1d)
    return loss, _input
