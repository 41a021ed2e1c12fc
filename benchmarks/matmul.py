"""Matmul throughput: mytriton's samples/matmul.py against Triton running the
same source, on square problems.

    python benchmarks/matmul.py [--sizes 1024 4096] [--configs 64x64x32 ...]
        [--dtype f32|f16|bf16] [--precision ieee|tf32|tf32x3]

``--dtype f16`` or ``bf16`` passes operands of that type (the same source: its
loads take the pointers' element type; the dot accumulates in f32, on tensor
cores). ``--precision`` writes ``input_precision=`` into the sample's
``tl.dot`` for both compilers (f32 operands; "tf32" and "tf32x3" run on
tensor cores), and then Triton runs that one variant.

Prints one row per size and tile config: median milliseconds (CUDA events,
after warm-up) and TFLOP/s (2*M*N*K / time) for mytriton, for Triton with
exact f32 (TRITON_F32_DEFAULT=ieee, the same arithmetic as mytriton's FMA
loop under MYTRITON_F32_DEFAULT=ieee, which this script sets) and for Triton's default (TF32 tensor cores), and mytriton's ratio to
exact-f32 Triton. Every result is checked against torch.matmul in f32 first.
The sides are timed in turn, ``--rounds`` times (``time_interleaved``), and
each figure is the median of its rounds: timed one after the other, they
differed by the clock's drift between them.
"""
from __future__ import annotations

import argparse
import os

import tempfile
from pathlib import Path

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton, load_module,
                    load_sample, time_interleaved, triton_available)

DOT = "tl.dot(a, b)"


def with_precision(precision: str) -> "object":
    """samples/matmul.py with ``input_precision`` in its dot, as a mytriton module."""
    source = (ROOT / "samples" / "matmul.py").read_text()
    assert DOT in source, "samples/matmul.py no longer spells its dot as tl.dot(a, b)"
    source = source.replace(DOT, f'tl.dot(a, b, input_precision="{precision}")')
    path = Path(tempfile.mkdtemp(prefix="mytriton-bench-")) / f"matmul_{precision}.py"
    path.write_text(source)
    return load_module(path, path.stem)


def triton_with_precision(precision: str) -> "object":
    return load_as_triton("", precision, path=Path(with_precision(precision).__file__))


def parse_config(text: str) -> tuple[int, int, int]:
    bm, bn, bk = (int(v) for v in text.lower().split("x"))
    return bm, bn, bk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--configs", nargs="+", default=["64x64x32", "128x128x32", "128x64x16", "64x128x16", "32x32x32"])
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3, help="pipelining depth, both compilers (Triton's default 3)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5,
                        help="each side timed this many times, alternating with the others; the median")
    parser.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    parser.add_argument("--precision", choices=["ieee", "tf32", "tf32x3"], default=None,
                        help="input_precision of the dot (f32 operands); default: the sample as it is")
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("matmul", args)
    cold_caches()

    import torch

    import mytriton

    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    if args.dtype != "f32" and args.precision is not None:
        raise SystemExit("--precision is for f32 operands (f16 and bf16 dots run on tensor cores as they are)")
    if args.precision is None:
        # tl.dot on f32 is TF32 by default, as in Triton: without --precision this measures the exact path.
        os.environ["MYTRITON_F32_DEFAULT"] = "ieee"
    kernel = (with_precision(args.precision) if args.precision else load_sample("matmul")).matmul_kernel
    # exact f32 FMA against f64-accurate torch: 1e-4; TF32, f16 and bf16 products round the operands
    tolerance = 1e-4 if args.dtype == "f32" and args.precision in (None, "ieee", "tf32x3") else 1e-2
    triton_kernels = {}
    if triton_available():
        if args.precision:
            triton_kernels[args.precision] = triton_with_precision(args.precision).matmul_kernel
        else:
            os.environ["TRITON_F32_DEFAULT"] = "ieee"
            triton_kernels["ieee"] = load_as_triton("matmul", "ieee").matmul_kernel
            triton_kernels["tf32"] = load_as_triton("matmul", "tf32").matmul_kernel

    rows = []
    for size in args.sizes:
        M = N = K = size
        a = torch.randn(M, K, device="cuda").to(dtype)
        b = torch.randn(K, N, device="cuda").to(dtype)
        reference = a.float() @ b.float()
        flops = 2.0 * M * N * K
        for text in args.configs:
            bm, bn, bk = parse_config(text)
            grid = (mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))
            c = torch.full((M, N), float("nan"), device="cuda")

            def ours():
                kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=args.num_warps,
                       num_stages=args.num_stages, backend="cuda")

            first = first_call(ours)
            error = ((c - reference).norm() / reference.norm()).item()
            if not error < tolerance:
                raise SystemExit(f"mytriton {text} at {size}: relative error {error:.2e}")
            row = {"size": size, "config": text, "error": error, "first_call_s": first}
            sides = {"mytriton": ours}
            for mode, tkernel in triton_kernels.items():
                ct = torch.full((M, N), float("nan"), device="cuda")

                def theirs(mode=mode, tkernel=tkernel, ct=ct):
                    if not args.precision:  # the mode its compilation was asked for (Triton reads it per call)
                        os.environ["TRITON_F32_DEFAULT"] = mode
                    tkernel[grid](a, b, ct, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=args.num_warps,
                                  num_stages=args.num_stages)

                row[f"triton_{mode}_first_call_s"] = first_call(theirs)
                row[f"triton_{mode}_error"] = ((ct - reference).norm() / reference.norm()).item()
                sides[mode] = theirs
            times = time_interleaved(sides, rounds=args.rounds, repeat=args.repeat)
            row["ms"] = times["mytriton"]
            row["tflops"] = flops / row["ms"] / 1e9
            for mode in triton_kernels:
                row[f"triton_{mode}_tflops"] = flops / times[mode] / 1e9
            rows.append(row)
            print_row(row, flush=True, mode=args.precision)
            print(first_call_line(first, row.get(f"triton_{args.precision or 'ieee'}_first_call_s")), flush=True)
            mode = args.precision or "ieee"  # the Triton figure the ratio is taken against
            theirs = row.get(f"triton_{mode}_tflops")
            record.add(f"{args.dtype} {args.precision or 'ieee'} {size} {text}", "TFLOP/s", row["tflops"], theirs,
                       **{k: v for k, v in row.items() if k not in ("tflops",)})
    print()
    print(f"dtype {args.dtype}, precision {args.precision or 'as in the sample'}")
    if args.precision:
        print(f"size  config      mytriton ms  TFLOP/s  triton-{args.precision} TFLOP/s  ratio")
        for row in rows:
            print_row(row, mode=args.precision)
        return
    print("size  config      mytriton ms  TFLOP/s  triton-ieee TFLOP/s  triton-tf32 TFLOP/s  ratio (vs ieee)")
    for row in rows:
        print_row(row)


def print_row(row: dict, flush: bool = False, mode: str | None = None) -> None:
    if mode is not None:
        theirs = row.get(f"triton_{mode}_tflops")
        ratio = f"{row['tflops'] / theirs:.2f}" if theirs else "-"
        print(f"{row['size']:<5} {row['config']:<11} {row['ms']:>11.3f}  {row['tflops']:>7.2f}  "
              f"{theirs if theirs is None else round(theirs, 2)!s:>19}  {ratio:>5}", flush=flush)
        return
    ieee = row.get("triton_ieee_tflops")
    tf32 = row.get("triton_tf32_tflops")
    ratio = f"{row['tflops'] / ieee:.2f}" if ieee else "-"
    print(f"{row['size']:<5} {row['config']:<11} {row['ms']:>11.3f}  {row['tflops']:>7.2f}  "
          f"{ieee if ieee is None else round(ieee, 2)!s:>19}  {tf32 if tf32 is None else round(tf32, 2)!s:>19}  "
          f"{ratio:>15}", flush=flush)


if __name__ == "__main__":
    main()
