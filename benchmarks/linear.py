"""x @ w.T with w stored [N, K] (a linear layer; the kernel file
tests/triton_style/matmul_transposed_b.py): B's tile is contiguous along K,
which mytriton stores column-major and wgmma reads K-major. mytriton against
Triton running the same source and config in one process.

    python benchmarks/linear.py [--sizes 4096] [--dtype f16|bf16|f32]
        [--configs 128x128x64] [--num-warps 4] [--num-stages 3]

f32 is TF32 (tl.dot's default precision in both). Prints milliseconds,
TFLOP/s (2 M N K) and mytriton's ratio to Triton.
"""
from __future__ import annotations

import argparse

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton,
                    load_module, time_cuda, timing_columns, triton_available)

KERNEL = ROOT / "tests" / "triton_style" / "matmul_transposed_b.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096])
    parser.add_argument("--dtype", choices=["f16", "bf16", "f32"], default="f16")
    parser.add_argument("--configs", nargs="+", default=["128x128x64", "128x128x32"])
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("linear", args)
    cold_caches()

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    ours = load_module(KERNEL, "mytriton_linear").matmul_transposed_b
    theirs = load_as_triton("", "linear", path=KERNEL).matmul_transposed_b if triton_available() else None
    print(f"dtype {args.dtype}\nsize  config      mytriton ms  TFLOP/s  triton TFLOP/s  ratio")
    for size in args.sizes:
        M = N = K = size
        x = torch.randn(M, K, device="cuda").to(dtype)
        w = torch.randn(N, K, device="cuda").to(dtype)
        reference = x.float() @ w.float().T
        for text in args.configs:
            bm, bn, bk = (int(v) for v in text.split("x"))
            grid = (-(-M // bm), -(-N // bn))
            results = {}
            firsts = {}
            for name, kernel, extra in (("mytriton", ours, {"backend": "cuda"}), ("triton", theirs, {})):
                if kernel is None:
                    continue
                c = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)

                def launch():
                    kernel[grid](x, w, c, M, N, K, *x.stride(), *w.stride(), *c.stride(), BM=bm, BN=bn, BK=bk,
                                 num_warps=args.num_warps, num_stages=args.num_stages, **extra)

                firsts[name] = first_call(launch)
                error = ((c.float() - reference).norm() / reference.norm()).item()
                if not error < 1e-2:
                    raise SystemExit(f"{name} {text} at {size}: relative error {error:.2e}")
                results[name] = time_cuda(launch, repeat=args.repeat)
            print(f"{size:<5} {text:<12} {timing_columns(2.0 * M * N * K, results, ms_width=10)}", flush=True)
            print(first_call_line(firsts["mytriton"], firsts.get("triton")), flush=True)
            record.add(f"{args.dtype} {size} {text}", "ms", results["mytriton"], results.get("triton"),
                       tflops=2.0 * M * N * K / results["mytriton"] / 1e9, first_call_s=firsts["mytriton"],
                       triton_first_call_s=firsts.get("triton"))


if __name__ == "__main__":
    main()
