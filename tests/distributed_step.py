"""A two-process data-parallel training step whose forward and backward run
mytriton kernels, its gradients all-reduced through NCCL and checked
against the same step in one process (tests/test_torch_launch.py runs it on
a machine with two GPUs).

    python tests/distributed_step.py SCRATCH_DIR
"""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import mytriton
import mytriton.language as tl

BATCH, FEATURES = 64, 512


@mytriton.jit
def gelu_forward(x, y, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    tl.store(y + offs, v * tl.sigmoid(1.702 * v), mask=mask)


@mytriton.jit
def gelu_backward(x, dy, dx, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    s = tl.sigmoid(1.702 * v)
    tl.store(dx + offs, tl.load(dy + offs, mask=mask) * (s + 1.702 * v * s * (1.0 - s)), mask=mask)


class Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        gelu_forward[(mytriton.cdiv(x.numel(), 256),)](x, y, x.numel())
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        gelu_backward[(mytriton.cdiv(x.numel(), 256),)](x, dy.contiguous(), dx, x.numel())
        return dx


def model(device):
    torch.manual_seed(0)
    first = torch.nn.Linear(FEATURES, FEATURES).to(device)
    second = torch.nn.Linear(FEATURES, 1).to(device)
    return first, second


def step(first, second, inputs, targets):
    """The mean squared error's gradients (the layers' parameters, in order)."""
    out = second(Gelu.apply(first(inputs)))
    loss = ((out.squeeze(1) - targets) ** 2).mean()
    loss.backward()
    return [p.grad for p in (*first.parameters(), *second.parameters())]


def data():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, FEATURES, generator=generator), torch.randn(BATCH, generator=generator)


def rank_main(rank: int, scratch: str) -> None:
    dist.init_process_group("nccl", init_method=f"file://{scratch}/store", rank=rank, world_size=2)
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    first, second = model(device)
    inputs, targets = data()
    half = BATCH // 2
    grads = step(first, second, inputs[rank * half:(rank + 1) * half].to(device),
                 targets[rank * half:(rank + 1) * half].to(device))
    for grad in grads:
        dist.all_reduce(grad)
        grad /= 2
    torch.save([g.cpu() for g in grads], f"{scratch}/rank{rank}.pt")
    dist.destroy_process_group()


def main() -> None:
    scratch = sys.argv[1]
    mp.spawn(rank_main, args=(scratch,), nprocs=2, join=True)
    first, second = model("cuda:0")
    inputs, targets = data()
    reference = [g.cpu() for g in step(first, second, inputs.to("cuda:0"), targets.to("cuda:0"))]
    for rank in (0, 1):
        reduced = torch.load(f"{scratch}/rank{rank}.pt")
        for got, want in zip(reduced, reference):
            if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
                sys.exit(f"rank {rank}: gradients differ by {float((got - want).abs().max())}")
    print("gradients match")


if __name__ == "__main__":
    main()
