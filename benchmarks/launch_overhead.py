"""Host time per launch of a tiny kernel, split by layer: the raw PyCUDA
prepared call, mytriton's CudaKernel.launch, the full ``kernel[grid](...)``
path, and Triton's launch of the same source. Each is timed over many
back-to-back launches on the host clock (the kernel itself takes ~2 us).

    python benchmarks/launch_overhead.py
"""
from __future__ import annotations

import time

from common import load_as_triton, load_sample, triton_available


def per_call_us(fn, count: int = 2000) -> float:
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    import torch

    from mytriton import pipeline
    from mytriton.runtime.cuda_driver import CudaKernel

    n = 1024
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    add = load_sample("add").add_kernel
    text, _, _ = add.source()
    options = pipeline.Options(kernel="add_kernel", signature="*fp32, *fp32, *fp32, i32")
    compiled = CudaKernel(pipeline.to_cuda(pipeline.source_to_ssa(text, add.file, options), options))
    pointers = [t.data_ptr() for t in (x, y, out)]
    rows = [
        ("PyCUDA prepared_async_call", lambda: compiled.function.prepared_async_call(
            (4, 1, 1), (128, 1, 1), None, *pointers, n)),
        ("CudaKernel.launch", lambda: compiled.launch((4, 1, 1), [x, y, out, n])),
        ("kernel[grid](...)", lambda: add[(4,)](x, y, out, n, backend="cuda")),
    ]
    if triton_available():
        tadd = load_as_triton("add").add_kernel
        rows.append(("triton kernel[grid](...)", lambda: tadd[(4,)](x, y, out, n, BLOCK=256)))
    print("layer                          us per launch")
    for name, fn in rows:
        print(f"{name:<30} {per_call_us(fn):8.1f}", flush=True)


if __name__ == "__main__":
    main()
