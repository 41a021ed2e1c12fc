"""The first seed chapter's matmul: a runtime K loop of rank-1 updates,
out[BM x BN] += a[:, k] * b[k, :], with rank-2 tiles built by broadcasting."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def matmul_runtime_k_kernel(a, b, c, M, N, K, BM: tl.constexpr = 32, BN: tl.constexpr = 32):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]
    c_offsets = offs_m * N + offs_n
    c_mask = (offs_m < M) & (offs_n < N)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(K):
        a_values = tl.load(a + offs_m * K + k, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + k * N + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values
    tl.store(c + c_offsets, acc, mask=c_mask)
