"""Host time per launch of a tiny kernel, split by layer: the driver's
cuLaunchKernel with the parameters packed once (the floor), mytriton's
CudaKernel.launch, the full ``kernel[grid](...)`` path (positional
arguments only, and with keywords as the matmul benchmark passes them), and
Triton's launch of the same source. Each is timed over many back-to-back
launches on the host clock (the kernel itself takes ~2 us). Every mytriton
launch goes on PyTorch's current stream, as Triton's does.

    python benchmarks/launch_overhead.py
    python benchmarks/launch_overhead.py --stand-in   # no GPU: see below

``--stand-in`` measures the host path on a machine without a GPU (or
without torch): the driver is replaced by one whose calls do nothing
(tests/fake_driver.py's, without its recording), and the tensors by objects
with a tensor's attributes (``data_ptr()``, ``dtype``, ``is_cuda``),
timed on this process's CPU clock. Absolute numbers are this machine's;
the differences between layers are what mytriton's Python adds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from common import ROOT, Results, add_json_option, load_as_triton, load_module, load_sample, triton_available

import mytriton
import mytriton.language as tl
from mytriton.tools.tensor_descriptor import TensorDescriptor


descriptor_matmul = load_module(ROOT / "tests" / "triton_style" / "descriptor_matmul.py",
                                "launch_descriptor_matmul").matmul_kernel_descriptor


@mytriton.jit
def described_scale(x_desc, out_desc, BLOCK: tl.constexpr):
    """The add row's launch with host tensor descriptors (tutorial 06's and 09's arguments)."""
    row = tl.program_id(0) * BLOCK
    out_desc.store([row, 0], x_desc.load([row, 0]) * 2)


def per_call_us(fn, count: int = 2000, synchronize=lambda: None, clock=time.perf_counter) -> float:
    for _ in range(50):
        fn()
    synchronize()
    start = clock()
    for _ in range(count):
        fn()
    synchronize()
    return (clock() - start) / count * 1e6


def layers(add, matmul, x, y, out, n, kernel, stream=0, halves=None):
    """(name, launch) for each layer; ``kernel`` is a CudaKernel of ``add``;
    ``halves``: three f16 tensors of 1024 elements, for the descriptor matmul,
    whose launches find three tensor maps."""
    kernel.launch((4, 1, 1), [x, y, out, n])  # loads the module
    # cuLaunchKernel as the launcher calls it (launch_call: its handles made once)
    launch, handle = kernel.driver.launch_call()
    function, stream_handle, extra = handle(kernel.function(0)), handle(stream), handle(kernel._extra)
    kernel._struct.pack_into(kernel._buffer, 0, x.data_ptr(), y.data_ptr(), out.data_ptr(), n)
    grid = (4,)
    return [
        ("driver cuLaunchKernel, packed once",
         lambda: launch(function, 4, 1, 1, 128, 1, 1, 0, stream_handle, None, extra)),
        ("CudaKernel.launch", lambda: kernel.launch((4, 1, 1), [x, y, out, n])),
        ("kernel[grid](...)", lambda: add[grid](x, y, out, n, backend="cuda")),
        ("kernel[grid](..., BLOCK=, num_warps=)", lambda: add[grid](x, y, out, n, BLOCK=256, num_warps=4,
                                                                    backend="cuda")),
        # 32x32 matrices: the 1024-element tensors hold them whole (the loads are masked past 32).
        ("matmul[grid](6 args, 6 keywords)", lambda: matmul[(1, 1)](
            x, y, out, 32, 32, 32, BM=64, BN=64, BK=32, num_warps=4, num_stages=2, backend="cuda")),
        # The 1024 elements as a 32x32 matrix, 8 rows a program; new descriptors each launch, as
        # the tutorials make them.
        ("kernel[grid](2 TensorDescriptors)", lambda: described_scale[(4,)](
            TensorDescriptor(x, [32, 32], [32, 1], [8, 32]), TensorDescriptor(out, [32, 32], [32, 1], [8, 32]),
            BLOCK=8, backend="cuda")),
        *([] if halves is None else [
            # f16 32x32 matrices, copied and stored by TMA on sm_90: three maps found per launch.
            ("descriptor matmul[grid](3 tensor maps)", lambda: descriptor_matmul[(1, 1)](
                *halves, 32, 32, 32, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, backend="cuda"))]),
    ]


# The rows of this run, as JSON too (main sets it from --json).
RECORD = None


def report(rows, repeat: int, count: int, synchronize=lambda: None, clock=time.perf_counter) -> None:
    """Each layer's median over ``repeat`` runs, the layers taking turns run
    by run: a slow spell of a shared machine then falls on every layer, not
    on the one whose runs it happened to cover."""
    runs: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(repeat):
        for name, fn in rows:
            runs[name].append(per_call_us(fn, count, synchronize, clock))
    print(f"layer                                   us per launch (median of {repeat} runs of {count})")
    for name, _ in rows:
        print(f"{name:<40} {statistics.median(runs[name]):8.2f}   (min {min(runs[name]):.2f})", flush=True)
        if RECORD is not None:
            RECORD.add(name, "us", statistics.median(runs[name]), None, min=min(runs[name]))


def compiled_add(add):
    from mytriton import compiler
    from mytriton.runtime.cuda_driver import CudaKernel

    text, _, _ = add.source()
    options = compiler.Options(kernel="add_kernel", signature="*fp32, *fp32, *fp32, i32")
    return CudaKernel(compiler.to_cuda(compiler.source_to_ssa(text, add.file, options), options))


def on_the_gpu(repeat: int, count: int, clock=time.perf_counter) -> None:
    import torch

    n = 1024
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    add = load_sample("add").add_kernel
    matmul = load_sample("matmul").matmul_kernel
    torch.cuda.synchronize()  # the primary context is current on this thread, as in any torch program
    halves = [torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(3)]
    rows = layers(add, matmul, x, y, out, n, compiled_add(add), torch.cuda.current_stream().cuda_stream, halves)
    if triton_available():
        tadd = load_as_triton("add").add_kernel
        rows.append(("triton kernel[grid](...)", lambda: tadd[(4,)](x, y, out, n, BLOCK=256)))
    report(rows, repeat, count, torch.cuda.synchronize, clock)


# ---- the stand-ins --------------------------------------------------------------------------------


class StandInDtype:
    """torch.float32: a singleton whose str is torch's."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


FLOAT32 = StandInDtype("float32")
FLOAT16 = StandInDtype("float16")


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

    def get_device(self) -> int:
        return 0


def install_stand_ins():
    """The stand-in driver, whose launch does nothing; nvcc skipped."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fake_driver import FakeDriver

    from mytriton.runtime import cuda_driver, driver_api, placement

    class QuietDriver(FakeDriver):
        def launch_raw(self, function, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra) -> int:
            return 0

    driver_api._driver = QuietDriver()
    cuda_driver.compile_cubin = lambda source, arch, driver_version=None: source.encode()
    cuda_driver.cuda_status = lambda: (True, "a stand-in GPU")
    driver_api._driver.set_current(driver_api._driver.primary_context(0))
    # The tensors take torch's path (placement.TORCH_TENSORS), on a stand-in current stream.
    placement.TORCH_TENSORS.add(StandInTensor)
    placement.torch_raw_stream = lambda device: 0


def with_stand_ins(repeat: int, count: int) -> None:
    install_stand_ins()
    n = 1024
    x, y, out = (StandInTensor(0x7F0000000000 + 4096 * i) for i in range(3))
    add = load_sample("add").add_kernel
    matmul = load_sample("matmul").matmul_kernel
    halves = [StandInTensor(0x7F0000100000 + 4096 * i, FLOAT16) for i in range(3)]
    rows = layers(add, matmul, x, y, out, n, compiled_add(add), halves=halves)
    # This process's CPU time: on a shared machine, less of the others' load than the wall clock.
    report(rows, repeat, count, clock=time.process_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", action="store_true", help="no GPU: a stand-in driver and tensors")
    parser.add_argument("--repeat", type=int, default=5, help="runs per layer (the median is shown)")
    parser.add_argument("--count", type=int, default=20000, help="launches per run")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="the wall clock, or this process's CPU time (less of a shared machine's other load)")
    add_json_option(parser)
    args = parser.parse_args()
    global RECORD
    RECORD = Results("launch_overhead" + ("_stand_in" if args.stand_in else ""), args)
    if args.stand_in:
        with_stand_ins(args.repeat, args.count)
    else:
        on_the_gpu(args.repeat, args.count, time.process_time if args.clock == "cpu" else time.perf_counter)


if __name__ == "__main__":
    main()
