"""Where Liger-Kernel's fused MoE spends its GPU time, kernel by kernel.

Three forward and backward steps of ``LigerFusedMoEFunction`` at Qwen3-MoE-30B's
sizes (E=128 experts, H=2048, I=768, top-8, bf16; T tokens from ``MOE_T``,
4096 by default) under ``torch.profiler``; prints the kernels sorted by their
total GPU time. Run it once on each side, from the repository root on the GPU
machine (liger-kernel's source on PYTHONPATH, as ``tools/liger_speed.py``
sets it up), and compare the rows:

    LIGER_FUSED_MOE_AUTOTUNE=0 python tools/liger_moe_profile.py
    LIGER_FUSED_MOE_AUTOTUNE=0 python -m mytriton.as_triton tools/liger_moe_profile.py

(mytriton's kernels are named ``mytriton_<kernel>``.) benchmarks/NOTES.md, the
ninth session, shows what it found.
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from liger_kernel.ops import LigerFusedMoEFunction

T, E, H, INNER, K = int(os.environ.get("MOE_T", "4096")), 128, 2048, 768, 8


def main() -> None:
    torch.manual_seed(42)
    x = torch.randn(T, H, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    gate_up = (torch.randn(E, 2 * INNER, H, dtype=torch.bfloat16, device="cuda") * 0.02).requires_grad_(True)
    down = (torch.randn(E, H, INNER, dtype=torch.bfloat16, device="cuda") * 0.02).requires_grad_(True)
    logits = torch.randn(T, E, device="cuda")
    top = torch.topk(logits, K, dim=-1).indices.to(torch.int32)
    weights = torch.softmax(torch.gather(logits, 1, top.long()), dim=-1).to(torch.bfloat16).requires_grad_(True)

    def step() -> None:
        LigerFusedMoEFunction.apply(x, gate_up, down, top, weights).sum().backward()

    for _ in range(3):  # compile and warm up
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    side = "mytriton" if "mytriton" in sys.modules else "triton"
    print(f"== {side}, T={T}: three steps")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=60))


if __name__ == "__main__":
    main()
