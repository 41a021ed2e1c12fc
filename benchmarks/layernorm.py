"""Layer norm forward throughput: Triton's tutorial 05 kernel
(tests/triton_style/layer_norm_fwd.py) through mytriton and, the same source
with Triton's imports, through Triton, in one process. Reports GB/s counting
one read of X and one write of Y (as the tutorial does), and the ratio.

    python benchmarks/layernorm.py [--shapes 4096x8192 4096x1000]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import ROOT, Results, add_json_option, load_module, time_cuda, triton_available

SOURCE = ROOT / "tests" / "triton_style" / "layer_norm_fwd.py"


def load_as_triton():
    """The tutorial file with mytriton's imports replaced by Triton's."""
    source = SOURCE.read_text()
    source = source.replace("import mytriton.language as tl", "import triton.language as tl")
    source = source.replace("import mytriton as triton", "import triton")
    path = Path(tempfile.mkdtemp(prefix="mytriton-bench-")) / "triton_layer_norm_fwd.py"
    path.write_text(source)
    return load_module(path, path.stem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x8192", "4096x1000"])
    add_json_option(parser)
    args = parser.parse_args()
    results = Results("layernorm", args)

    import torch

    ours = load_module(SOURCE, "mytriton_layer_norm_fwd")._layer_norm_fwd_fused
    theirs = load_as_triton()._layer_norm_fwd_fused if triton_available() else None
    print("shape        BLOCK  warps  mytriton GB/s  triton GB/s  ratio")
    for text in args.shapes:
        rows, cols = (int(v) for v in text.split("x"))
        x = torch.randn(rows, cols, device="cuda")
        w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        # The tutorial's choices: at most 64 KB per row chunk, warps by block size.
        block = min(65536 // x.element_size(), 1 << (cols - 1).bit_length())
        warps = min(max(block // 256, 1), 8)

        def launch(kernel, **extra):
            y = torch.empty_like(x)
            mean = torch.empty(rows, device="cuda")
            rstd = torch.empty(rows, device="cuda")
            run = lambda: kernel[(rows,)](x, y, w, b, mean, rstd, x.stride(0), cols, 1e-5,  # noqa: E731
                                          BLOCK_SIZE=block, num_warps=warps, **extra)
            return run, y

        run, y = launch(ours, backend="cuda")
        run()
        torch.cuda.synchronize()
        expected = torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5)
        error = (y - expected).abs().max().item()
        assert error < 1e-3, f"mytriton layer norm is wrong: {error}"
        bytes_moved = 8 * rows * cols
        gbs = bytes_moved / time_cuda(run) / 1e6
        tgbs = None
        if theirs is not None:
            trun, _ = launch(theirs)
            trun()
            tgbs = bytes_moved / time_cuda(trun) / 1e6
        ratio = f"{gbs / tgbs:.2f}" if tgbs else "-"
        print(f"{text:<12} {block:<6} {warps:<6} {gbs:>13.0f}  {tgbs or 0:>11.0f}  {ratio:>5}", flush=True)
        results.add(f"{text} BLOCK={block} warps={warps}", "GB/s", gbs, tgbs)


if __name__ == "__main__":
    main()
