"""Row softmax throughput: samples/softmax.py against Triton running the same
source, one row per program, BLOCK the next power of two of the row length.
Reports GB/s counting one read and one write of the matrix.

    python benchmarks/softmax.py [--shapes 4096x1024 16384x8192]
"""
from __future__ import annotations

import argparse

from common import (Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton, load_sample,
                    time_cuda, triton_available)


def next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x1024", "16384x8192"])
    add_json_option(parser)
    args = parser.parse_args()
    results = Results("softmax", args)
    cold_caches()

    import torch

    ours = load_sample("softmax").softmax_kernel
    theirs = load_as_triton("softmax").softmax_kernel if triton_available() else None
    print("shape        BLOCK  warps  mytriton GB/s  triton GB/s  ratio")
    for text in args.shapes:
        rows, cols = (int(v) for v in text.split("x"))
        x = torch.randn(rows, cols, device="cuda")
        block = next_power_of_two(cols)
        warps = 4 if block <= 2048 else 8 if block <= 4096 else 16
        out = torch.full_like(x, float("nan"))
        run = lambda: ours[(rows,)](out, x, cols, cols, cols, BLOCK=block, num_warps=warps, backend="cuda")  # noqa: E731
        first = first_call(run)
        error = (out - torch.softmax(x, dim=1)).abs().max().item()
        assert error < 1e-5, f"mytriton softmax is wrong: {error}"
        bytes_moved = 8 * rows * cols
        gbs = bytes_moved / time_cuda(run) / 1e6
        tgbs = tfirst = None
        if theirs is not None:
            tout = torch.empty_like(x)
            trun = lambda: theirs[(rows,)](tout, x, cols, cols, cols, BLOCK=block, num_warps=warps)  # noqa: E731
            tfirst = first_call(trun)
            tgbs = bytes_moved / time_cuda(trun) / 1e6
        ratio = f"{gbs / tgbs:.2f}" if tgbs else "-"
        print(f"{text:<12} {block:<6} {warps:<6} {gbs:>13.0f}  {tgbs or 0:>11.0f}  {ratio:>5}", flush=True)
        print(first_call_line(first, tfirst), flush=True)
        results.add(f"{text} BLOCK={block} warps={warps}", "GB/s", gbs, tgbs, first_call_s=first,
                    triton_first_call_s=tfirst)


if __name__ == "__main__":
    main()
