"""Liger-Kernel's fused neighborhood attention test in bf16, on the CPU through
mytriton's interpreter, with a float64 truth beside it: are the elements its
bf16 test finds out of tolerance an error of mytriton's, or bf16's?

    python tools/liger_fna_bf16.py [--batch 2 --seq 32 --hidden 128 --heads 4 --kernel 7]

Needs torch (CPU) and .liger/src (``tools/liger_acceptance.py prepare``). The
module pair, seed and inputs are the test's own
(test_fused_neighborhood_attention_correctness, bias off). For v_proj's weight
gradient, the tensor the test fails on, it prints each element outside the
test's tolerance (0.05 + 0.05 |torch's|) with four values: Liger through
mytriton in bf16, torch in bf16, torch in float64, and Liger through mytriton
in float64 (the same kernels, no bf16 rounding); then each bf16 side's largest
error against the float64 truth over the whole tensor.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGER = ROOT / ".liger" / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("batch", 2), ("seq", 32), ("hidden", 128), ("heads", 4), ("kernel", 7)):
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    sys.path[:0] = [str(LIGER), str(LIGER / "src")]
    import torch

    import mytriton.as_triton

    mytriton.as_triton.install_as_triton()
    from liger_kernel.transformers.fused_neighborhood_attention import LigerFusedNeighborhoodAttention
    from test.transformers.test_fused_neighborhood_attention import TorchNeighborhoodAttention
    from test.utils import set_seed

    bf16 = torch.bfloat16
    set_seed(42)
    x = torch.randn(args.batch, args.seq, args.hidden, dtype=bf16)
    shape = dict(hidden_size=args.hidden, num_heads=args.heads, kernel_size=args.kernel, dilation=1, bias=False,
                 dropout=0.0)
    ref = TorchNeighborhoodAttention(**shape).to(bf16)
    liger = LigerFusedNeighborhoodAttention(**shape).to(bf16)
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            getattr(liger, name).weight.copy_(getattr(ref, name).weight)

    def v_weight_grad(module, inputs):
        inputs = inputs.detach().clone().requires_grad_(True)
        module(inputs).sum().backward()
        return module.v_proj.weight.grad.double()

    truth = v_weight_grad(copy.deepcopy(ref).double(), x.double())
    liger64 = v_weight_grad(copy.deepcopy(liger).double(), x.double())
    ours, theirs = v_weight_grad(liger, x), v_weight_grad(ref, x)
    outside = ((ours - theirs).abs() > 0.05 + 0.05 * theirs.abs()).nonzero().tolist()
    print(f"v_proj.weight.grad: {len(outside)} element(s) outside the test's tolerance")
    for i, j in outside:
        print(f"  ({i}, {j}): liger/mytriton bf16 {ours[i, j]:.4f}, torch bf16 {theirs[i, j]:.4f}, "
              f"torch f64 {truth[i, j]:.4f}, liger/mytriton f64 {liger64[i, j]:.4f}")
    print(f"largest error against f64: liger/mytriton bf16 {(ours - truth).abs().max():.4f}, "
          f"torch bf16 {(theirs - truth).abs().max():.4f}; liger/mytriton f64 {(liger64 - truth).abs().max():.2e}")


if __name__ == "__main__":
    main()
