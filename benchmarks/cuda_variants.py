"""Time hand-edited variants of generated CUDA against each other: each .cu
file (with its mytriton-kernel header) is built, checked against torch.matmul
and timed, so one device run compares several code-generation choices.

    python benchmarks/cuda_variants.py --size 4096 --tile 64x64 variants/*.cu

The kernels must be matmuls with the sample's parameters (a, b, c, M, N, K).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from common import Results, add_json_option, time_cuda


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--tile", default="64x64")
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("cuda_variants", args)

    import torch

    from mytriton.runtime.cuda_driver import CudaKernel

    torch.backends.cuda.matmul.allow_tf32 = False
    size = args.size
    bm, bn = (int(v) for v in args.tile.split("x"))
    a, b = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
    reference = a @ b
    grid = (-(-size // bm), -(-size // bn))
    print("variant                          ms      TFLOP/s  rel. error")
    for file in args.files:
        kernel = CudaKernel(Path(file).read_text(), file=file)
        c = torch.full((size, size), float("nan"), device="cuda")
        run = lambda: kernel.launch(grid, [a, b, c, size, size, size])  # noqa: E731
        run()
        torch.cuda.synchronize()
        error = ((c - reference).norm() / reference.norm()).item()
        ms = time_cuda(run, repeat=20)
        print(f"{Path(file).name:<30} {ms:8.3f}  {2 * size ** 3 / ms / 1e9:8.2f}  {error:.1e}", flush=True)
        record.add(Path(file).name, "ms", ms, None, tflops=2 * size ** 3 / ms / 1e9, error=error)


if __name__ == "__main__":
    main()
