"""Host time per launch of a tiny kernel, split by layer: PyCUDA's launch
with the parameters packed once (the floor), its prepared call, mytriton's
CudaKernel.launch, the full ``kernel[grid](...)`` path (positional
arguments only, and with keywords as the matmul benchmark passes them), and
Triton's launch of the same source. Each is timed over many back-to-back
launches on the host clock (the kernel itself takes ~2 us).

    python benchmarks/launch_overhead.py
    python benchmarks/launch_overhead.py --stand-in   # no GPU: see below

``--stand-in`` measures the host path on a machine without a GPU (or
without PyCUDA and torch): PyCUDA's driver module is replaced by one whose
``prepared_async_call`` does what PyCUDA's Python wrapper does and whose
launch does nothing, and the tensors by objects with torch's attributes
(``data_ptr()``, ``dtype``, ``is_cuda``, a ``__cuda_array_interface__``
built on each access), timed on this process's CPU clock. Absolute numbers
are this machine's; the differences between layers are what mytriton's
Python adds.
"""
from __future__ import annotations

import argparse
import statistics
import struct
import sys
import time
import types

from common import load_as_triton, load_sample, triton_available


def per_call_us(fn, count: int = 2000, synchronize=lambda: None, clock=time.perf_counter) -> float:
    for _ in range(50):
        fn()
    synchronize()
    start = clock()
    for _ in range(count):
        fn()
    synchronize()
    return (clock() - start) / count * 1e6


def layers(add, matmul, x, y, out, n, kernel):
    """(name, launch) for each layer; ``kernel`` is a CudaKernel of ``add``."""
    pointers = [x.data_ptr(), y.data_ptr(), out.data_ptr()]
    buffer = struct.pack("@PPPi", *pointers, n)
    grid = (4,)
    return [
        ("PyCUDA _launch_kernel, packed once", lambda: kernel.function._launch_kernel(
            (4, 1, 1), (128, 1, 1), buffer, 0, None)),
        ("PyCUDA prepared_async_call", lambda: kernel.function.prepared_async_call(
            (4, 1, 1), (128, 1, 1), None, *pointers, n)),
        ("CudaKernel.launch", lambda: kernel.launch((4, 1, 1), [x, y, out, n])),
        ("kernel[grid](...)", lambda: add[grid](x, y, out, n, backend="cuda")),
        ("kernel[grid](..., BLOCK=, num_warps=)", lambda: add[grid](x, y, out, n, BLOCK=256, num_warps=4,
                                                                    backend="cuda")),
        # 32x32 matrices: the 1024-element tensors hold them whole (the loads are masked past 32).
        ("matmul[grid](6 args, 6 keywords)", lambda: matmul[(1, 1)](
            x, y, out, 32, 32, 32, BM=64, BN=64, BK=32, num_warps=4, num_stages=2, backend="cuda")),
    ]


def report(rows, repeat: int, count: int, synchronize=lambda: None, clock=time.perf_counter) -> None:
    print(f"layer                                   us per launch (median of {repeat} runs of {count})")
    for name, fn in rows:
        runs = [per_call_us(fn, count, synchronize, clock) for _ in range(repeat)]
        print(f"{name:<40} {statistics.median(runs):8.2f}   (min {min(runs):.2f})", flush=True)


def compiled_add(add):
    from mytriton import pipeline
    from mytriton.runtime.cuda_driver import CudaKernel

    text, _, _ = add.source()
    options = pipeline.Options(kernel="add_kernel", signature="*fp32, *fp32, *fp32, i32")
    return CudaKernel(pipeline.to_cuda(pipeline.source_to_ssa(text, add.file, options), options))


def on_the_gpu(repeat: int, count: int) -> None:
    import torch

    n = 1024
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    add = load_sample("add").add_kernel
    matmul = load_sample("matmul").matmul_kernel
    rows = layers(add, matmul, x, y, out, n, compiled_add(add))
    if triton_available():
        tadd = load_as_triton("add").add_kernel
        rows.append(("triton kernel[grid](...)", lambda: tadd[(4,)](x, y, out, n, BLOCK=256)))
    report(rows, repeat, count, torch.cuda.synchronize)


# ---- the stand-ins --------------------------------------------------------------------------------


class StandInDtype:
    """torch.float32: a singleton whose str is torch's."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


FLOAT32 = StandInDtype("float32")


class StandInTensor:
    """A CUDA tensor as the launch path sees one."""

    def __init__(self, address: int, dtype: StandInDtype = FLOAT32) -> None:
        self._address = address
        self._dtype = dtype

    def data_ptr(self) -> int:
        return self._address

    @property
    def dtype(self) -> StandInDtype:
        return self._dtype

    @property
    def is_cuda(self) -> bool:
        return True

    @property
    def __cuda_array_interface__(self) -> dict:
        # torch builds this dict (shape, strides, typestr, version) on each access
        return {"data": (self._address, False), "shape": (1024,), "strides": None, "typestr": "<f4",
                "version": 2}


class StandInFunction:
    """PyCUDA's Function: prepare() keeps the format, prepared_async_call() is
    PyCUDA's Python wrapper (pycuda/driver.py) around a launch that does nothing."""

    def prepare(self, arg_format):
        self.arg_format = arg_format
        self.texrefs = []
        return self

    def set_attribute(self, attribute, value) -> None:
        pass

    def _set_block_shape(self, *block) -> None:
        pass

    def _launch_kernel(self, grid, block, arg_buf, shared_size, stream) -> None:
        pass

    def prepared_async_call(self, grid, block, stream, *args, **kwargs):
        if isinstance(block, tuple):
            self._set_block_shape(*block)
        shared_size = kwargs.pop("shared_size", 0)
        if kwargs:
            raise TypeError("unknown keyword arguments: " + ", ".join(kwargs.keys()))
        from struct import pack

        arg_buf = pack(self.arg_format, *args)
        for texref in self.texrefs:
            texref()
        self._launch_kernel(grid, block, arg_buf, shared_size, stream)


def install_stand_ins() -> None:
    """PyCUDA's driver module, replaced; nvcc and module loading skipped."""
    driver = types.ModuleType("pycuda.driver")
    driver.init = lambda: None
    driver.Device = types.SimpleNamespace(count=lambda: 1)
    driver.Context = types.SimpleNamespace(synchronize=lambda: None)
    driver.function_attribute = types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES=8)
    driver.device_attribute = types.SimpleNamespace()
    package = types.ModuleType("pycuda")
    package.driver = driver
    sys.modules["pycuda"] = package
    sys.modules["pycuda.driver"] = driver

    from mytriton.runtime import cuda_driver

    cuda_driver.compile_cubin = lambda source, arch: source.encode()
    cuda_driver._load_module = lambda cubin: types.SimpleNamespace(get_function=lambda name: StandInFunction())
    cuda_driver._context = object()  # context() finds it made
    cuda_driver.cuda_status.cache_clear()


def with_stand_ins(repeat: int, count: int) -> None:
    install_stand_ins()
    n = 1024
    x, y, out = (StandInTensor(0x7F0000000000 + 4096 * i) for i in range(3))
    add = load_sample("add").add_kernel
    matmul = load_sample("matmul").matmul_kernel
    rows = layers(add, matmul, x, y, out, n, compiled_add(add))
    rows.insert(2, ("struct pack alone", lambda: struct.pack("PPPi", 1, 2, 3, n)))
    # This process's CPU time: on a shared machine, less of the others' load than the wall clock.
    report(rows, repeat, count, clock=time.process_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", action="store_true", help="no GPU: stand-in PyCUDA and tensors")
    parser.add_argument("--repeat", type=int, default=5, help="runs per layer (the median is shown)")
    parser.add_argument("--count", type=int, default=20000, help="launches per run")
    args = parser.parse_args()
    if args.stand_in:
        with_stand_ins(args.repeat, args.count)
    else:
        on_the_gpu(args.repeat, args.count)


if __name__ == "__main__":
    main()
