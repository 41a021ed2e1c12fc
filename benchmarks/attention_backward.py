"""Causal attention's backward pass, f16 or bf16: mytriton against Triton
running the same kernel source (tests/triton_style/attention_backward.py,
tutorial 06's algorithm: dK and dV walking the queries, dQ the keys, each walk
a @jit helper, the diagonal blocks in finer masked steps of a constant count)
with the same config in one process.

    python benchmarks/attention_backward.py [--ctx 4096 1024] [--batch 4] [--heads 32]
        [--head-dim 64] [--dtype f16|bf16] [--blocks 32x128x128x32] [--slice 2]
        [--num-warps 4] [--num-stages 3]

Checks dQ, dK and dV against PyTorch's autograd of scaled_dot_product_attention
first, then prints the milliseconds of the two kernels (delta's preprocess
and the gradients), TFLOP/s (2.5 times the causal forward's 2 * Z * H * N^2 * D,
as the tutorial counts), mytriton's ratio to Triton and both first calls.
"""
from __future__ import annotations

import argparse
import math

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton,
                    load_module, time_cuda, timing_columns, triton_available)

PATH = ROOT / "tests" / "triton_style" / "attention_backward.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    parser.add_argument("--ctx", type=int, nargs="+", default=[4096, 1024])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--blocks", default="32x128x128x32", help="BLOCK_M1 x BLOCK_N1 x BLOCK_M2 x BLOCK_N2")
    parser.add_argument("--slice", type=int, default=2, help="the diagonal blocks' steps: BLOCK_M1 // slice")
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("attention_backward", args)
    cold_caches()

    import torch

    m1, n1, m2, n2 = (int(v) for v in args.blocks.split("x"))
    modules = {"mytriton": load_module(PATH, "mytriton_attention_backward")}
    if triton_available():
        modules["triton"] = load_as_triton("", "attention_backward", path=PATH)
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    sm_scale = 1.0 / math.sqrt(args.head_dim)

    print("ctx    mytriton ms  TFLOP/s  triton TFLOP/s  ratio")
    for n_ctx in args.ctx:
        z, h, d = args.batch, args.heads, args.head_dim
        q, k, v, do = (torch.randn((z, h, n_ctx, d), device="cuda", dtype=dtype) * 0.5 for _ in range(4))
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True, scale=sm_scale)
        o.backward(do)
        reference = [t.grad for t in leaves]
        o = o.detach()
        # The forward's base-2 log-sum-exp, a head at a time (a whole [Z, H, N, N] of scores is large).
        lse = torch.empty((z, h, n_ctx), device="cuda", dtype=torch.float32)
        causal = torch.ones((n_ctx, n_ctx), device="cuda", dtype=torch.bool).tril()
        for b in range(z):
            s = (q[b].float() @ k[b].float().transpose(-1, -2)) * sm_scale
            lse[b] = torch.logsumexp(s.masked_fill(~causal, float("-inf")), dim=-1) / math.log(2)
        flops = 2.5 * 2.0 * z * h * n_ctx * n_ctx * d

        def launch(module, grads, delta, **extra):
            module.attention_bwd_preprocess[(n_ctx // m2, z * h)](o, do, delta, n_ctx, BLOCK_M=m2, HEAD_DIM=d,
                                                                  **extra)
            module.attention_bwd[(n_ctx // n1, z * h)](q, k, v, do, *grads, lse, delta, sm_scale, n_ctx,
                                                       BLOCK_M1=m1, BLOCK_N1=n1, BLOCK_M2=m2, BLOCK_N2=n2,
                                                       SLICE=args.slice, HEAD_DIM=d, num_warps=args.num_warps,
                                                       num_stages=args.num_stages, **extra)

        results, firsts = {}, {}
        for name, module in modules.items():
            extra = {"backend": "cuda"} if name == "mytriton" else {}
            grads = [torch.empty_like(q) for _ in range(3)]
            delta = torch.empty((z, h, n_ctx), device="cuda", dtype=torch.float32)
            firsts[name] = first_call(lambda: launch(module, grads, delta, **extra))
            for label, got, want in zip(("dq", "dk", "dv"), grads, reference):
                error = (got.float() - want.float()).abs().max().item()
                bound = 2e-2 * (1 + want.float().abs().max().item())  # sums over up to N products
                if not error < bound:
                    raise SystemExit(f"{name} at ctx {n_ctx}: {label} max abs error {error:.2e} (bound {bound:.2e})")
            results[name] = time_cuda(lambda: launch(module, grads, delta, **extra), repeat=args.repeat)
        print(f"{n_ctx:<6} {timing_columns(flops, results)}", flush=True)
        print(first_call_line(firsts["mytriton"], firsts.get("triton")), flush=True)
        record.add(f"backward {args.dtype} ctx={n_ctx} d={d} {args.blocks}", "ms", results["mytriton"],
                   results.get("triton"), tflops=flops / results["mytriton"] / 1e9,
                   first_call_s=firsts["mytriton"], triton_first_call_s=firsts.get("triton"))


if __name__ == "__main__":
    main()
