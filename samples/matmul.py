"""Tiled matmul: C[M, N] = A[M, K] @ B[K, N], one BM x BN tile of C per program,
walking K in BK-wide steps with tl.dot on masked tiles (the canonical pattern
the stage-dots pass stages through shared memory)."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr = 64, BN: tl.constexpr = 64, BK: tl.constexpr = 32):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a_rows = offs_m[:, None]
        a_cols = k + offs_k[None, :]
        a = tl.load(a_ptr + a_rows * K + a_cols, mask=(a_rows < M) & (a_cols < K), other=0.0)
        b_rows = k + offs_k[:, None]
        b_cols = offs_n[None, :]
        b = tl.load(b_ptr + b_rows * N + b_cols, mask=(b_rows < K) & (b_cols < N), other=0.0)
        acc += tl.dot(a, b)
    c_rows = offs_m[:, None]
    c_cols = offs_n[None, :]
    tl.store(c_ptr + c_rows * N + c_cols, acc, mask=(c_rows < M) & (c_cols < N))
