"""Memory-bound throughput: samples/add.py against Triton running the same
source. Reports GB/s counting bytes read plus bytes written (12 per element).

    python benchmarks/elementwise.py [--sizes 1048576 268435456] [--blocks 1024 4096]
"""
from __future__ import annotations

import argparse

from common import Results, add_json_option, load_as_triton, load_sample, time_cuda, triton_available


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 20, 1 << 28])
    parser.add_argument("--blocks", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--num-warps", type=int, default=4)
    add_json_option(parser)
    args = parser.parse_args()
    results = Results("elementwise", args)

    import torch

    import mytriton

    ours = load_sample("add").add_kernel
    theirs = load_as_triton("add").add_kernel if triton_available() else None
    print("n          BLOCK  mytriton GB/s  triton GB/s  ratio")
    for n in args.sizes:
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        bytes_moved = 12 * n
        for block in args.blocks:
            grid = (mytriton.cdiv(n, block),)
            out = torch.full_like(x, float("nan"))
            run = lambda: ours[grid](x, y, out, n, BLOCK=block, num_warps=args.num_warps, backend="cuda")  # noqa: E731
            run()
            torch.cuda.synchronize()
            assert torch.equal(out, x + y), "mytriton add is wrong"
            gbs = bytes_moved / time_cuda(run) / 1e6
            tgbs = None
            if theirs is not None:
                tout = torch.empty_like(x)
                trun = lambda: theirs[grid](x, y, tout, n, BLOCK=block, num_warps=args.num_warps)  # noqa: E731
                trun()
                tgbs = bytes_moved / time_cuda(trun) / 1e6
            ratio = f"{gbs / tgbs:.2f}" if tgbs else "-"
            print(f"{n:<10} {block:<6} {gbs:>13.0f}  {tgbs or 0:>11.0f}  {ratio:>5}", flush=True)
            results.add(f"n={n} BLOCK={block}", "GB/s", gbs, tgbs)


if __name__ == "__main__":
    main()
