"""Matmul throughput: mytriton's samples/matmul.py against Triton running the
same source, on square f32 problems.

    python benchmarks/matmul.py [--sizes 1024 4096] [--configs 64x64x32 ...]

Prints one row per size and tile config: median milliseconds (CUDA events,
after warm-up) and TFLOP/s (2*M*N*K / time) for mytriton, for Triton with
exact f32 (TRITON_F32_DEFAULT=ieee, the same arithmetic as mytriton's FMA
loop) and for Triton's default (TF32 tensor cores), and mytriton's ratio to
exact-f32 Triton. Every result is checked against torch.matmul in f32 first.
"""
from __future__ import annotations

import argparse
import os

from common import load_as_triton, load_sample, time_cuda, triton_available


def parse_config(text: str) -> tuple[int, int, int]:
    bm, bn, bk = (int(v) for v in text.lower().split("x"))
    return bm, bn, bk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--configs", nargs="+", default=["64x64x32", "128x128x32", "128x64x16", "64x128x16", "32x32x32"])
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    import torch

    import mytriton

    torch.backends.cuda.matmul.allow_tf32 = False
    kernel = load_sample("matmul").matmul_kernel
    triton_kernels = {}
    if triton_available():
        os.environ["TRITON_F32_DEFAULT"] = "ieee"
        triton_kernels["ieee"] = load_as_triton("matmul", "ieee").matmul_kernel
        triton_kernels["tf32"] = load_as_triton("matmul", "tf32").matmul_kernel

    rows = []
    for size in args.sizes:
        M = N = K = size
        a = torch.randn(M, K, device="cuda")
        b = torch.randn(K, N, device="cuda")
        reference = a @ b
        flops = 2.0 * M * N * K
        for text in args.configs:
            bm, bn, bk = parse_config(text)
            grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
            c = torch.full((M, N), float("nan"), device="cuda")

            def ours():
                kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=args.num_warps, backend="cuda")

            ours()
            torch.cuda.synchronize()
            error = ((c - reference).norm() / reference.norm()).item()
            if not error < 1e-4:
                raise SystemExit(f"mytriton {text} at {size}: relative error {error:.2e}")
            ms = time_cuda(ours, repeat=args.repeat)
            row = {"size": size, "config": text, "ms": ms, "tflops": flops / ms / 1e9, "error": error}
            for mode, tkernel in triton_kernels.items():
                os.environ["TRITON_F32_DEFAULT"] = mode
                ct = torch.full((M, N), float("nan"), device="cuda")

                def theirs():
                    tkernel[grid](a, b, ct, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=args.num_warps)

                theirs()
                torch.cuda.synchronize()
                terror = ((ct - reference).norm() / reference.norm()).item()
                tms = time_cuda(theirs, repeat=args.repeat)
                row[f"triton_{mode}_tflops"] = flops / tms / 1e9
                row[f"triton_{mode}_error"] = terror
            rows.append(row)
            print_row(row, flush=True)
    print()
    print("size  config      mytriton ms  TFLOP/s  triton-ieee TFLOP/s  triton-tf32 TFLOP/s  ratio (vs ieee)")
    for row in rows:
        print_row(row)


def print_row(row: dict, flush: bool = False) -> None:
    ieee = row.get("triton_ieee_tflops")
    tf32 = row.get("triton_tf32_tflops")
    ratio = f"{row['tflops'] / ieee:.2f}" if ieee else "-"
    print(f"{row['size']:<5} {row['config']:<11} {row['ms']:>11.3f}  {row['tflops']:>7.2f}  "
          f"{ieee if ieee is None else round(ieee, 2)!s:>19}  {tf32 if tf32 is None else round(tf32, 2)!s:>19}  "
          f"{ratio:>15}", flush=flush)


if __name__ == "__main__":
    main()
