"""Grouped matmul (Triton's tutorial 03 source, tests/triton_style/matmul.py),
f16 inputs, f32 accumulation, f16 output: mytriton against Triton running the
same kernel with the same tile config in the same process.

    python benchmarks/grouped_matmul.py [--shapes 4096x4096x4096 1000x3000x700]
        [--configs 128x128x32x8:3:4 ...] [--first-calls 3]

A config is BMxBNxBKxGROUP:num_stages:num_warps. Both compilers run the
kernel under the file's autotuner with one config (``.fn``, the jitted
function). Every result is checked against torch.matmul first. Prints
milliseconds, TFLOP/s (2*M*N*K / time) and mytriton's ratio to Triton.

The first call is a row's first launch: the compile and load of its
specialisation where no row before built it (a later shape whose sizes and
strides specialise alike reuses the kernel: 0.00 s). ``--first-calls N``
takes N - 1 more per row and side, the sides alternating, each of the kernel
loaded anew with both compilers' caches emptied, and prints their median.
"""
from __future__ import annotations

import argparse
import statistics

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton, load_copy,
                    load_module, recold_caches, time_cuda, triton_available)

KERNEL = ROOT / "tests" / "triton_style" / "matmul.py"


def parse_shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def parse_config(text: str) -> tuple[dict, int, int]:
    tiles, stages, warps = text.split(":")
    bm, bn, bk, group = (int(v) for v in tiles.lower().split("x"))
    meta = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group}
    return meta, int(stages), int(warps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x4096x4096", "1024x1024x1024", "3000x2000x1000"])
    parser.add_argument("--configs", nargs="+", default=["128x128x32x8:3:4", "128x256x64x8:3:8", "64x64x32x8:4:4"])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--first-calls", type=int, default=1, metavar="N",
                        help="first calls per row and side (the median is printed; default 1)")
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("grouped_matmul", args)
    cold_caches()

    import torch

    import mytriton

    ours_kernel = load_module(KERNEL, "mytriton_grouped_matmul").matmul_kernel.fn
    theirs_kernel = load_as_triton("", "grouped", path=KERNEL).matmul_kernel.fn if triton_available() else None

    print("shape             config              mytriton ms  TFLOP/s  triton TFLOP/s  ratio")
    for shape in args.shapes:
        M, N, K = parse_shape(shape)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        reference = (a.float() @ b.float())
        flops = 2.0 * M * N * K
        for text in args.configs:
            meta, stages, warps = parse_config(text)
            grid = (mytriton.cdiv(M, meta["BLOCK_SIZE_M"]) * mytriton.cdiv(N, meta["BLOCK_SIZE_N"]),)

            def launch(kernel, c, **extra):
                kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), ACTIVATION="", num_warps=warps, num_stages=stages,
                             **meta, **extra)

            c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
            first = first_call(lambda: launch(ours_kernel, c, backend="cuda"))
            error = ((c.float() - reference).norm() / reference.norm()).item()
            if not error < 1e-2:
                raise SystemExit(f"mytriton {text} at {shape}: relative error {error:.2e}")
            ms = time_cuda(lambda: launch(ours_kernel, c, backend="cuda"), repeat=args.repeat)
            line = f"{shape:<17} {text:<19} {ms:>11.3f}  {flops / ms / 1e9:>7.1f}"
            tms = tfirst = None
            if theirs_kernel is not None:
                ct = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
                tfirst = first_call(lambda: launch(theirs_kernel, ct))
                terror = ((ct.float() - reference).norm() / reference.norm()).item()
                if not terror < 1e-2:
                    raise SystemExit(f"Triton {text} at {shape}: relative error {terror:.2e}")
                tms = time_cuda(lambda: launch(theirs_kernel, ct), repeat=args.repeat)
                line += f"  {flops / tms / 1e9:>14.1f}  {tms and ms and (tms / ms):>5.2f}"
            firsts = {"mytriton": [first]} | ({"triton": [tfirst]} if tfirst is not None else {})
            for again in range(1, args.first_calls):
                recold_caches()
                tag = f"{shape}_{text}_{again}".replace(":", "_")
                mine = load_copy(KERNEL, f"mytriton_grouped_matmul_{again}").matmul_kernel.fn
                firsts["mytriton"].append(first_call(lambda: launch(mine, c, backend="cuda")))
                if "triton" in firsts:
                    fresh = load_as_triton("", f"grouped_{tag}", path=KERNEL).matmul_kernel.fn
                    firsts["triton"].append(first_call(lambda: launch(fresh, ct)))
            first = statistics.median(firsts["mytriton"])
            tfirst = statistics.median(firsts["triton"]) if "triton" in firsts else None
            print(line, flush=True)
            print(first_call_line(first, tfirst), flush=True)
            record.add(f"{shape} {text}", "ms", ms, tms, tflops=flops / ms / 1e9, first_call_s=first,
                       triton_first_call_s=tfirst, first_calls_s=firsts)


if __name__ == "__main__":
    main()
