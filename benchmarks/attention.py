"""Fused attention forward (Triton's tutorial 06 style, the file
tests/triton_style/fused_attention.py), f16, head dim 64: mytriton against
Triton running the same kernel source with the same config in one process.

    python benchmarks/attention.py [--ctx 4096 1024] [--batch 4] [--heads 32]
        [--causal] [--block 128x64] [--num-warps 4] [--num-stages 3]

Checks both results against PyTorch's scaled_dot_product_attention first,
then prints milliseconds, TFLOP/s (4 * Z * H * N^2 * D, halved when causal)
and mytriton's ratio to Triton.
"""
from __future__ import annotations

import argparse

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton,
                    load_module, time_cuda, timing_columns, triton_available)

KERNEL = ROOT / "tests" / "triton_style" / "fused_attention.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx", type=int, nargs="+", default=[4096, 1024])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--block", default="128x64")
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("attention", args)
    cold_caches()

    import torch

    block_m, block_n = (int(v) for v in args.block.split("x"))
    ours = load_module(KERNEL, "mytriton_attention")._attn_fwd
    theirs = load_as_triton("", "attention", path=KERNEL)._attn_fwd if triton_available() else None
    stage = 3 if args.causal else 1

    print("ctx    mytriton ms  TFLOP/s  triton TFLOP/s  ratio")
    for n_ctx in args.ctx:
        shape = (args.batch, args.heads, n_ctx, args.head_dim)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) * 0.5 for _ in range(3))
        sm_scale = 0.5
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal, scale=sm_scale)
        flops = 4.0 * args.batch * args.heads * n_ctx * n_ctx * args.head_dim * (0.5 if args.causal else 1.0)
        grid = ((n_ctx + block_m - 1) // block_m, args.batch * args.heads, 1)

        def launch(kernel, o, m, **extra):
            kernel[grid](q, k, v, sm_scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                         args.batch, args.heads, N_CTX=n_ctx, HEAD_DIM=args.head_dim, STAGE=stage,
                         BLOCK_M=block_m, BLOCK_N=block_n, num_warps=args.num_warps,
                         num_stages=args.num_stages, **extra)

        results = {}
        firsts = {}
        for name, kernel, extra in (("mytriton", ours, {"backend": "cuda"}), ("triton", theirs, {})):
            if kernel is None:
                continue
            o = torch.empty_like(q)
            m = torch.empty(shape[:3], device="cuda", dtype=torch.float32)
            firsts[name] = first_call(lambda: launch(kernel, o, m, **extra))
            error = (o.float() - reference.float()).abs().max().item()
            if not error < 2e-2:
                raise SystemExit(f"{name} at ctx {n_ctx}: max abs error {error:.2e}")
            results[name] = time_cuda(lambda: launch(kernel, o, m, **extra), repeat=args.repeat)
        print(f"{n_ctx:<6} {timing_columns(flops, results)}", flush=True)
        print(first_call_line(firsts["mytriton"], firsts.get("triton")), flush=True)
        record.add(f"ctx={n_ctx} d={args.head_dim}{' causal' if args.causal else ''} {args.block}", "ms",
                   results["mytriton"], results.get("triton"), tflops=flops / results["mytriton"] / 1e9,
                   first_call_s=firsts["mytriton"], triton_first_call_s=firsts.get("triton"))


if __name__ == "__main__":
    main()
