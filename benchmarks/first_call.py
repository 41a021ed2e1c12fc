"""Where a kernel's first launch goes (issue 25 item 4): mytriton's stages
(source to optimised SSA; staging, layouts and the CUDA source), the build
(NVRTC or nvcc, to a cubin), the module load and the rest (binding the
arguments, the launch, waiting for it), for a process's first kernel and the
ones after it, each new to both compilers' caches; Triton's first call of the
same source beside it where Triton is installed.

    python benchmarks/first_call.py [--rounds N] [--json F]   # on the GPU, against Triton
    python benchmarks/first_call.py --stand-in      # no GPU: a stand-in driver, real builds

The kernels, in this order, in one process: the matmul sample (f16, 64x64x32,
then 128x128x64), the offsets, unmasked, helper, trans_b, split-K and
persistent matmul forms (128x128x64) and the
tutorial's attention forward (D64, 128x64 blocks): each the first launch of
its own source or constants. ``--stand-in`` times everything but the launch
itself on any machine (the driver's calls do nothing; NVRTC or nvcc builds
for real), which is what tells a slow compiler from a slow machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from common import (ROOT, Results, add_json_option, cold_caches, load_as_triton, load_copy, load_module,
                    recold_caches, triton_available)

STYLE = ROOT / "tests" / "triton_style"
PARTS = ("to SSA", "to CUDA", "build", "load")


class Stopwatch:
    """Seconds spent in each wrapped function, by part, since the last ``reset``."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[part] += time.perf_counter() - started

        setattr(owner, name, timed)

    def reset(self) -> None:
        self.spent.clear()


def watch_mytriton(watch: Stopwatch, driver_class: type) -> None:
    from mytriton import compiler
    from mytriton.runtime import cuda_driver

    watch.wrap(compiler, "source_to_ssa", "to SSA")
    for name in ("stage_dots", "layouts", "emit_cuda"):
        watch.wrap(compiler, name, "to CUDA")
    watch.wrap(cuda_driver, "compile_cubin", "build")
    watch.wrap(driver_class, "load_module", "load")


def matmul_case(path: Path, kernel: str, tiles: tuple[int, int, int], prefix: str, strides: bool):
    """A matmul launch of ``kernel`` at 4096^3 in f16 (the sample takes M, N, K; the forms their strides too)."""
    n = 4096
    bm, bn, bk = tiles
    constexprs = dict(zip((f"{prefix}M", f"{prefix}N", f"{prefix}K"), tiles))

    def launch(module: Any, a: Any, b: Any, c: Any) -> None:
        extra = (n, 1, n, 1, n, 1) if strides else ()
        getattr(module, kernel)[(n // bm, n // bn)](a, b, c, n, n, n, *extra, **constexprs, num_warps=4,
                                                    num_stages=3)
    return path, launch, n, "float16"


def split_k_case() -> tuple[Path, Callable[..., None], int, str]:
    """The split-K form at 4096^3 (SPLIT_K 4, atomics into an f32 C): its epilogue adds where the others store."""
    n = 4096

    def launch(module: Any, a: Any, b: Any, c: Any) -> None:
        module._matmul_split_k_kernel[((n // 128) * (n // 128), 4)](
            a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SPLIT_K=4,
            num_warps=4, num_stages=3)
    return STYLE / "matmul_split_k.py", launch, n, "float32"


def persistent_case() -> tuple[Path, Callable[..., None], int, str]:
    """Tutorial 09's persistent form at 4096^3 on 132 programs (the H200's multiprocessors)."""
    n = 4096

    def launch(module: Any, a: Any, b: Any, c: Any) -> None:
        module.matmul_kernel_persistent[(132,)](a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_SIZE_M=128,
                                                 BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, NUM_SMS=132,
                                                 num_warps=4, num_stages=3)
    return STYLE / "persistent_matmul.py", launch, n, "float16"


def cases() -> list[tuple[str, Path, Callable[..., None], int, str]]:
    """(name, source, launch, n, C's torch dtype) of each matmul row, in order."""
    sample = ROOT / "samples" / "matmul.py"
    rows = [("matmul sample 64x64x32", *matmul_case(sample, "matmul_kernel", (64, 64, 32), "B", False)),
            ("matmul sample 128x128x64", *matmul_case(sample, "matmul_kernel", (128, 128, 64), "B", False)),
            ("form offsets 128x128x64", *matmul_case(STYLE / "matmul_offsets.py", "matmul_offsets",
                                                     (128, 128, 64), "BLOCK_", True)),
            ("form unmasked 128x128x64", *matmul_case(STYLE / "matmul_unmasked.py", "matmul_unmasked",
                                                      (128, 128, 64), "BLOCK_", True)),
            ("form helper 128x128x64", *matmul_case(STYLE / "matmul_loop_helper.py", "matmul_loop_helper",
                                                   (128, 128, 64), "BLOCK_", True)),
            ("form trans_b 128x128x64", *matmul_case(STYLE / "matmul_trans.py", "matmul_trans_b",
                                                    (128, 128, 64), "BLOCK_", True)),
            ("form split_k 128x128x64", *split_k_case()),
            ("form persistent 128x128x64", *persistent_case())]
    return rows


def attention_launch(module: Any, q: Any, k: Any, v: Any, o: Any, m: Any, ctx: int) -> None:
    z, h, d = 1, 2, 64
    strides = (h * ctx * d, ctx * d, d, 1)
    module._attn_fwd[(ctx // 128, z * h, 1)](q, k, v, 0.5, m, o, *strides, *strides, *strides, *strides, z, h,
                                             N_CTX=ctx, HEAD_DIM=d, STAGE=1, BLOCK_M=128, BLOCK_N=64,
                                             num_warps=4, num_stages=3)


def run(stand_in: bool, record: Results, rounds: int = 1) -> None:
    watch = Stopwatch()
    if stand_in:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from launch_overhead import StandInDtype, StandInTensor, install_stand_ins

        install_stand_ins()
        from mytriton.runtime import cuda_driver, driver_api
        from mytriton.backends.cuda.nvcc import compile_cubin

        cuda_driver.compile_cubin = compile_cubin  # the stand-ins skip the build: this one builds for real
        def tensor(numel: int, dtype: str = "float16") -> Any:
            tensor.next = getattr(tensor, "next", 0x7F0000000000) + (numel * 4 + 4095) // 4096 * 4096
            return StandInTensor(tensor.next, StandInDtype(dtype))

        def sync() -> None:
            """No GPU: nothing to wait for."""
        driver_class = type(driver_api._driver)
    else:
        import torch

        def tensor(numel: int, dtype: str = "float16") -> Any:
            return torch.randn(numel, device="cuda", dtype=getattr(torch, dtype))

        def sync() -> None:
            torch.cuda.synchronize()
        from mytriton.runtime.driver_api import driver
        driver_class = type(driver())
    watch_mytriton(watch, driver_class)
    theirs_available = not stand_in and triton_available()

    def first(fn: Callable[[], None]) -> float:
        sync()
        started = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - started

    print(f"{'kernel':<28} {'order':>5}  {'mytriton':>8}  " + "  ".join(f"{p:>8}" for p in PARTS)
          + f"  {'other':>7}  {'triton':>7}")
    rows: list[tuple[str, Path, Callable[..., None], Any]] = [
        (name, path, lambda module, n=n, launch=launch, out=out: launch(module, tensor(n * n), tensor(n * n),
                                                                         tensor(n * n, out)), None)
        for name, path, launch, n, out in cases()]
    ctx = 1024
    rows.append(("attention tutorial D64", STYLE / "fused_attention.py",
                 lambda module: attention_launch(module, *(tensor(2 * ctx * 64) for _ in range(4)),
                                                 tensor(2 * ctx * 2), ctx), None))
    taken: dict[str, list[tuple[float, dict[str, float], float | None]]] = defaultdict(list)
    for again in range(rounds):
        if again:
            recold_caches()
            print(f"round {again + 1} of {rounds}: every kernel loaded anew, both caches emptied", flush=True)
        suffix = f"_{again}" if again else ""
        for order, (name, path, launch, _) in enumerate(rows, start=1):
            ours = load_copy(path, f"first_call_{order}{suffix}") if again else load_module(path, f"first_call_{order}")
            watch.reset()
            total = first(lambda: launch(ours))
            parts = {p: watch.spent.get(p, 0.0) for p in PARTS}
            theirs = None
            if theirs_available:
                module = load_as_triton("", f"first_call_{order}{suffix}", path=path)
                theirs = first(lambda: launch(module))
            print_row(name, order, total, parts, theirs)
            taken[name].append((total, parts, theirs))
    if rounds > 1:
        print(f"median of {rounds} rounds:", flush=True)
    for order, (name, *_) in enumerate(rows, start=1):
        samples = taken[name]
        total = statistics.median(t for t, _, _ in samples)
        parts = {p: statistics.median(ps[p] for _, ps, _ in samples) for p in PARTS}
        theirs_all = [t for _, _, t in samples if t is not None]
        theirs = statistics.median(theirs_all) if theirs_all else None
        if rounds > 1:
            print_row(name, order, total, parts, theirs)
        record.add(name, "s", mytriton=total, triton=theirs, order=order, other=total - sum(parts.values()),
                   rounds=rounds, mytriton_samples=[t for t, _, _ in samples], triton_samples=theirs_all or None,
                   build_samples=[ps["build"] for _, ps, _ in samples],
                   **{p.replace(" ", "_"): parts[p] for p in PARTS})


def print_row(name: str, order: int, total: float, parts: dict[str, float], theirs: float | None) -> None:
    other = total - sum(parts.values())
    print(f"{name:<28} {order:>5}  {total:>7.3f}s  " + "  ".join(f"{parts[p]:>7.3f}s" for p in PARTS)
          + f"  {other:>6.3f}s  " + (f"{theirs:>6.3f}s" if theirs is not None else f"{'-':>7}"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", action="store_true", help="no GPU: a stand-in driver, real builds")
    parser.add_argument("--rounds", type=int, default=1, metavar="N",
                        help="first calls of each kernel, in N rounds, each loading every kernel anew after "
                             "both compilers' caches were emptied; the last table gives the medians (default 1)")
    add_json_option(parser)
    args = parser.parse_args()
    record = Results("first_call" + ("_stand_in" if args.stand_in else ""), args)
    cold_caches()
    run(args.stand_in, record, args.rounds)


if __name__ == "__main__":
    main()
