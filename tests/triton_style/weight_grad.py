"""A linear layer's weight gradient as Liger-Kernel's MoE backward writes it
(dW2): dW[h, i] = sum_t x[t, i] * dy[t, h], computed as [BM, BN] tiles over
(i, h), so that the A tile is x read with its rows (i) contiguous and the
result is stored column-major (``h[None, :] * stride_dwh + i[:, None]``):
each thread's run of the store goes down a column of the tile."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def weight_grad(x_ptr, dy_ptr, dw_ptr, T, N_IN, N_OUT,
                stride_xt, stride_xi, stride_dyt, stride_dyh, stride_dwh, stride_dwi,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    i = pid_m * BM + tl.arange(0, BM)
    h = pid_n * BN + tl.arange(0, BN)
    offs_t = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, T, BK):
        t = k + offs_t
        x = tl.load(x_ptr + t[None, :] * stride_xt + i[:, None] * stride_xi,
                    mask=(t[None, :] < T) & (i[:, None] < N_IN), other=0.0)
        dy = tl.load(dy_ptr + t[:, None] * stride_dyt + h[None, :] * stride_dyh,
                     mask=(t[:, None] < T) & (h[None, :] < N_OUT), other=0.0)
        acc = tl.dot(x, dy, acc)
    tl.store(dw_ptr + h[None, :] * stride_dwh + i[:, None] * stride_dwi, acc.to(dw_ptr.dtype.element_ty),
             mask=(i[:, None] < N_IN) & (h[None, :] < N_OUT))


def weight_grad_of(x, dy, BM=64, BN=64, BK=32, num_warps=4, num_stages=3):
    """dy.T @ x for x [T, I] and dy [T, H]: dW [H, I], in x's dtype."""
    T, n_in = x.shape
    n_out = dy.shape[1]
    dw = np.empty((n_out, n_in), dtype=x.dtype)
    grid = (triton.cdiv(n_in, BM), triton.cdiv(n_out, BN))
    strides = [s // t.itemsize for t in (x, dy, dw) for s in t.strides]
    weight_grad[grid](x, dy, dw, T, n_in, n_out, *strides, BM=BM, BN=BN, BK=BK, num_warps=num_warps, num_stages=num_stages)
    return dw
