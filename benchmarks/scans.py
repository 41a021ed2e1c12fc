"""Row-wise scan and index-reduction throughput: a ``tl.cumsum`` kernel and
a ``tl.argmax`` kernel (one row per program, BLOCK the next power of two of
the row length), against Triton running the same source in the same run
when it is importable. Reports GB/s counting what each kernel must move:
cumsum reads and writes the matrix, argmax reads it and writes one index
per row.

    python benchmarks/scans.py [--shapes 4096x4096 16384x1024] [--warps 8]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import Results, add_json_option, load_as_triton, load_module, time_cuda, triton_available

# The kernels, in a file of their own so that Triton compiles the same source.
KERNELS = '''
import mytriton
import mytriton.language as tl


@mytriton.jit
def cumsum_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, 0), mask=mask)


@mytriton.jit
def argmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.argmax(x, 0))
'''


def next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x4096"])
    parser.add_argument("--warps", type=int, default=None, help="warps per program (default: by BLOCK)")
    add_json_option(parser)
    args = parser.parse_args()
    results = Results("scans", args)

    import torch

    path = Path(tempfile.mkdtemp(prefix="mytriton-scans-")) / "scan_kernels.py"
    path.write_text(KERNELS)
    ours = load_module(path, "mytriton_scan_kernels")
    theirs = load_as_triton("scan_kernels", path=path) if triton_available() else None
    print("kernel  shape        BLOCK  warps  mytriton GB/s  triton GB/s  ratio")
    for text in args.shapes:
        rows, cols = (int(v) for v in text.split("x"))
        x = torch.randn(rows, cols, device="cuda")
        block = next_power_of_two(cols)
        warps = args.warps or (4 if block <= 2048 else 8 if block <= 4096 else 16)
        expected = {"cumsum": torch.cumsum(x, dim=1), "argmax": torch.argmax(x, dim=1).to(torch.int32)}
        for name in ("cumsum", "argmax"):
            out = (torch.full_like(x, float("nan")) if name == "cumsum"
                   else torch.full((rows,), -1, dtype=torch.int32, device="cuda"))
            kernel = getattr(ours, f"{name}_kernel")
            run = lambda: kernel[(rows,)](out, x, cols, BLOCK=block, num_warps=warps, backend="cuda")  # noqa: E731
            run()
            torch.cuda.synchronize()
            if name == "cumsum":
                error = (out - expected[name]).abs().max().item()
                assert torch.allclose(out, expected[name], rtol=1e-3, atol=1e-3), f"mytriton cumsum is wrong: {error}"
            else:
                assert torch.equal(out, expected[name]), "mytriton argmax is wrong"
            bytes_moved = 8 * rows * cols if name == "cumsum" else 4 * rows * cols + 4 * rows
            gbs = bytes_moved / time_cuda(run) / 1e6
            tgbs = None
            if theirs is not None:
                tout = torch.empty_like(out)
                tkernel = getattr(theirs, f"{name}_kernel")
                trun = lambda: tkernel[(rows,)](tout, x, cols, BLOCK=block, num_warps=warps)  # noqa: E731
                trun()
                tgbs = bytes_moved / time_cuda(trun) / 1e6
            ratio = f"{gbs / tgbs:.2f}" if tgbs else "-"
            print(f"{name:<7} {text:<12} {block:<6} {warps:<6} {gbs:>13.0f}  {tgbs or 0:>11.0f}  {ratio:>5}", flush=True)
            results.add(f"{name} {text} BLOCK={block} warps={warps}", "GB/s", gbs, tgbs)


if __name__ == "__main__":
    main()
