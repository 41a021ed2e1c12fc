"""The NumPy interpreter's throughput, next to NumPy's own on the same machine.

Vector add (samples/add.py) over 2^20 f32 and row softmax (samples/softmax.py)
launched with ``backend="interp"``; GB/s counts bytes read plus bytes written
(12 per element for add, 8 for softmax) over the wall time of one launch after
a warm-up (the compiled kernel is cached), median of ``--repeat`` launches.
NumPy's figure is the same computation written directly in NumPy.

    python benchmarks/interp.py [--n 1048576] [--rows 1024 --cols 1024] [--repeat 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mytriton  # noqa: E402
from common import Results, add_json_option, load_sample  # noqa: E402


def median_seconds(fn, repeat: int) -> float:
    fn()  # warm-up: compiles and caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--block", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=7)
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("interp", args)
    rng = np.random.default_rng(0)

    add = load_sample("add").add_kernel
    n, block = args.n, args.block
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    run = lambda: add[(mytriton.cdiv(n, block),)](x, y, out, n, BLOCK=block, backend="interp")  # noqa: E731
    seconds = median_seconds(run, args.repeat)
    assert np.array_equal(out, x + y), "interpreted add is wrong"
    numpy_seconds = median_seconds(lambda: x + y, args.repeat)
    print("kernel                 interp GB/s  numpy GB/s  ratio")
    print(f"add n={n:<16} {12 * n / seconds / 1e9:11.2f}  {12 * n / numpy_seconds / 1e9:10.2f}  "
          f"{numpy_seconds / seconds:5.2f}")
    record.add(f"add n={n}", "GB/s", 12 * n / seconds / 1e9, None, numpy=12 * n / numpy_seconds / 1e9)

    softmax = load_sample("softmax").softmax_kernel
    rows, cols = args.rows, args.cols
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    b = np.empty_like(a)
    width = 1 << (cols - 1).bit_length()
    run = lambda: softmax[(rows,)](b, a, cols, cols, cols, BLOCK=width, backend="interp")  # noqa: E731
    seconds = median_seconds(run, args.repeat)

    def reference() -> np.ndarray:
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    assert np.allclose(b, reference(), rtol=1e-5, atol=1e-7), "interpreted softmax is wrong"
    numpy_seconds = median_seconds(reference, args.repeat)
    label = f"softmax {rows}x{cols}"
    print(f"{label:<22} {8 * a.size / seconds / 1e9:11.2f}  {8 * a.size / numpy_seconds / 1e9:10.2f}  "
          f"{numpy_seconds / seconds:5.2f}")
    record.add(label, "GB/s", 8 * a.size / seconds / 1e9, None, numpy=8 * a.size / numpy_seconds / 1e9)


if __name__ == "__main__":
    main()
