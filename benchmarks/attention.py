"""Fused attention forward, f16 or bf16: mytriton against Triton running the
same kernel source with the same config in one process. Two spellings of
the algorithm (``--form``): ``tutorial`` is Triton's tutorial 06
(tests/triton_style/fused_attention.py: pointer increments, K read
K-major, the causal split in two loops); ``trans`` is
tests/triton_style/attention_trans.py (K loaded as stored and
``tl.trans``-ed, offsets recomputed from the loop index with a mask, the
loop in a ``@jit`` helper); ``descriptors`` is the tutorial's current form
(tests/triton_style/attention_descriptors.py: Q, K, V and O passed as host
TensorDescriptors of the (Z * H * N, D) matrices, each library's own class);
``block_ptr`` is Triton 2.x's tutorial spelling
(tests/triton_style/attention_block_ptr.py: block pointers advanced with
``tl.advance``, K^T through a transposed view, Q scaled in registers, the
causal mask on the scores' initial value).

    python benchmarks/attention.py [--form tutorial|trans|descriptors|block_ptr] [--ctx 4096 1024]
        [--batch 4] [--heads 32] [--head-dim 64] [--dtype f16|bf16] [--causal]
        [--block 128x64] [--num-warps 4] [--num-stages 3]

Checks both results against PyTorch's scaled_dot_product_attention first,
then prints milliseconds, TFLOP/s (4 * Z * H * N^2 * D, halved when causal)
and mytriton's ratio to Triton.
"""
from __future__ import annotations

import argparse

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton,
                    load_module, time_cuda, timing_columns, triton_available)

KERNELS = {"tutorial": (ROOT / "tests" / "triton_style" / "fused_attention.py", "_attn_fwd"),
           "trans": (ROOT / "tests" / "triton_style" / "attention_trans.py", "attention_fwd"),
           "descriptors": (ROOT / "tests" / "triton_style" / "attention_descriptors.py", "_attn_fwd"),
           "block_ptr": (ROOT / "tests" / "triton_style" / "attention_block_ptr.py", "attn_fwd_block_ptr")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--form", choices=sorted(KERNELS), default="tutorial")
    parser.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
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
    path, kernel_name = KERNELS[args.form]
    our_module = load_module(path, f"mytriton_attention_{args.form}")
    their_module = load_as_triton("", f"attention_{args.form}", path=path) if triton_available() else None
    ours = getattr(our_module, kernel_name)
    theirs = getattr(their_module, kernel_name) if their_module is not None else None
    modules = {"mytriton": our_module, "triton": their_module}
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    stage = 3 if args.causal else 1

    print("ctx    mytriton ms  TFLOP/s  triton TFLOP/s  ratio")
    for n_ctx in args.ctx:
        shape = (args.batch, args.heads, n_ctx, args.head_dim)
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) * 0.5 for _ in range(3))
        sm_scale = 0.5
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal, scale=sm_scale)
        flops = 4.0 * args.batch * args.heads * n_ctx * n_ctx * args.head_dim * (0.5 if args.causal else 1.0)
        grid = ((n_ctx + block_m - 1) // block_m, args.batch * args.heads, 1)

        def launch(kernel, o, m, library, **extra):
            if args.form == "descriptors":
                # The config's block shapes set as its pre_hook would; the autotuner's kernel itself.
                module = modules[library]
                rows = args.batch * args.heads * n_ctx
                blocks = (block_m, block_n, block_n, block_m)
                descs = [module.TensorDescriptor(t.view(rows, args.head_dim), [rows, args.head_dim],
                                                 [args.head_dim, 1], [b, args.head_dim])
                         for t, b in zip((q, k, v, o), blocks)]
                kernel.fn[grid](sm_scale, m, args.batch, args.heads, *descs, N_CTX=n_ctx, HEAD_DIM=args.head_dim,
                                BLOCK_M=block_m, BLOCK_N=block_n, FP8_OUTPUT=False, STAGE=stage,
                                warp_specialize=False, default_dtype=getattr(module.tl, str(dtype).split(".")[1]),
                                num_warps=args.num_warps, num_stages=args.num_stages, **extra)
                return
            if args.form == "block_ptr":
                head, row = n_ctx * args.head_dim, args.head_dim  # [Z, H, N, D] contiguous
                kernel[grid](q, k, v, o, sm_scale, head, row, head, row, head, row, head, row, n_ctx,
                             BLOCK_M=block_m, HEAD_DIM=args.head_dim, BLOCK_N=block_n, IS_CAUSAL=args.causal,
                             num_warps=args.num_warps, num_stages=args.num_stages, **extra)
                return
            if args.form == "trans":
                # [Z, H, N, D] contiguous is [Z*H, N, D]: a head's stride is N*D, a row's D.
                kernel[grid](q, k, v, o, n_ctx * args.head_dim, args.head_dim, n_ctx * args.head_dim,
                             args.head_dim, n_ctx * args.head_dim, args.head_dim, n_ctx * args.head_dim,
                             args.head_dim, n_ctx, sm_scale, CAUSAL=args.causal, BLOCK_M=block_m,
                             BLOCK_N=block_n, HEAD_DIM=args.head_dim, num_warps=args.num_warps,
                             num_stages=args.num_stages, **extra)
                return
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
            firsts[name] = first_call(lambda: launch(kernel, o, m, name, **extra))
            error = (o.float() - reference.float()).abs().max().item()
            if not error < 2e-2:
                raise SystemExit(f"{name} at ctx {n_ctx}: max abs error {error:.2e}")
            results[name] = time_cuda(lambda: launch(kernel, o, m, name, **extra), repeat=args.repeat)
        print(f"{n_ctx:<6} {timing_columns(flops, results)}", flush=True)
        print(first_call_line(firsts["mytriton"], firsts.get("triton")), flush=True)
        record.add(f"{args.form} {args.dtype} ctx={n_ctx} d={args.head_dim}{' causal' if args.causal else ''} "
                   f"{args.block}", "ms",
                   results["mytriton"], results.get("triton"), tflops=flops / results["mytriton"] / 1e9,
                   first_call_s=firsts["mytriton"], triton_first_call_s=firsts.get("triton"))


if __name__ == "__main__":
    main()
