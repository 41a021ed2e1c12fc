"""Runs one of Liger-Kernel's benchmark scripts keeping only what
tools/liger_speed.py compares: the speed rows of Liger's own providers
("liger", "liger-fp32-accum", ...). The reference providers (Hugging Face,
torch) and the memory sweeps are the same on both sides and cost most of a
script's time, so ``run_benchmarks`` (the one place every script hands its
sweeps to) is wrapped to skip them; the script itself runs unchanged.

    python tools/liger_speed_rows.py benchmark/scripts/benchmark_rms_norm.py [script args]

With ``LIGER_SPEED_TIMER=gpu`` the scripts' ``triton.testing.do_bench`` is
replaced by ``gpu_do_bench``: the same calls and the same L2 flush before
each, but timed with the host kept ahead of the GPU, so that each figure is
the GPU's time for the call's kernels alone. Liger's small rows (under ~0.1
ms) are otherwise bound by the host's work per call on both sides (the
torch wrapper, autograd, the launch), and their ratios swing 0.2-2x from one
run to the next with the host's noise.
"""
from __future__ import annotations

import os
import runpy
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable


def liger_speed_only(run_benchmarks: Callable[..., Any]) -> Callable[..., Any]:
    """``run_benchmarks`` for the speed metric and Liger's providers only,
    one mode and size at a time: Liger's writes its CSV once a whole sweep
    is done, and a script stopped at tools/liger_speed.py's time limit would
    leave no row of a sweep it had nearly finished."""

    def run(*args: Any, **kwargs: Any) -> Any:
        if args or kwargs.get("metric_name") != "speed":
            return None if not args else run_benchmarks(*args, **kwargs)
        providers = [p for p in kwargs.get("kernel_providers", []) if p.startswith("liger")]
        if not providers:
            return None
        for mode in kwargs.get("kernel_operation_modes") or [None]:
            for x in kwargs["x_values"]:
                run_benchmarks(**{**kwargs, "kernel_providers": providers, "kernel_operation_modes": [mode],
                                  "x_values": [x]})
        return None

    return run


# What Triton's do_bench flushes: 256 MiB of L2-evicting writes before each timed call.
FLUSH_BYTES = 256 * 1024 * 1024
# Calls timed per backlog: the GPU is held behind a sleep long enough for the host to
# queue this many calls (at its measured pace, with a margin) before it reaches them.
BATCH = 20
SLEEP_MARGIN = 2.0
# _sleep counts SM clock cycles; the H200's clock is at most 1.98 GHz, so this errs long.
CYCLES_PER_S = 2e9


def gpu_do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, grad_to_none: Any = None,
                 quantiles: Any = None, return_mode: str = "mean") -> Any:
    """``triton.testing.do_bench``'s result (the same signature, flush and
    gradient clearing before each call), each call timed by events between
    which the GPU never waits for the host: a batch of calls is queued
    behind a ``torch.cuda._sleep`` that outlasts the host's time to queue
    them. A call that synchronises drains the backlog, and its figure then
    holds the host's time as do_bench's does."""
    import torch

    cuda = torch.cuda
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")

    def before() -> None:
        for tensor in grad_to_none or ():
            tensor.grad = None
        cache.zero_()

    fn()
    cuda.synchronize()
    # Five calls, as do_bench estimates: the host's time a call sizes the sleeps, the
    # longer of it and the GPU's the counts (rep and warmup are milliseconds).
    first, last = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    host = time.perf_counter()
    first.record()
    for _ in range(5):
        before()
        fn()
    last.record()
    host_s = (time.perf_counter() - host) / 5
    cuda.synchronize()
    call_ms = max(host_s * 1e3, first.elapsed_time(last) / 5, 1e-3)
    count = max(1, min(1000, int(rep / call_ms)))
    for _ in range(max(1, min(1000, int(warmup / call_ms)))):
        fn()
    times: list[float] = []
    while len(times) < count:
        batch = min(BATCH, count - len(times))
        starts = [cuda.Event(enable_timing=True) for _ in range(batch)]
        ends = [cuda.Event(enable_timing=True) for _ in range(batch)]
        cuda.synchronize()
        cuda._sleep(int(host_s * batch * SLEEP_MARGIN * CYCLES_PER_S))
        for start, end in zip(starts, ends):
            before()
            start.record()
            fn()
            end.record()
        cuda.synchronize()
        times.extend(s.elapsed_time(e) for s, e in zip(starts, ends))
    if quantiles is not None:
        picked = [quantile(times, q) for q in quantiles]
        return picked[0] if len(picked) == 1 else picked
    return {"min": min, "max": max, "median": statistics.median, "all": list}.get(
        return_mode, statistics.fmean)(times)


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile with linear interpolation (torch.quantile's, which do_bench uses)."""
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def use_gpu_timer() -> None:
    """Every later ``triton.testing.do_bench`` (Triton's or, under
    mytriton.as_triton, mytriton's) is ``gpu_do_bench``."""
    import triton.testing

    triton.testing.do_bench = gpu_do_bench


def main(argv: list[str]) -> None:
    script = Path(argv[0]).resolve()
    sys.argv = [str(script), *argv[1:]]
    sys.path.insert(0, str(script.parent))
    import utils  # Liger's benchmark/scripts/utils.py, which its scripts import by that name

    utils.run_benchmarks = liger_speed_only(utils.run_benchmarks)
    if os.environ.get("LIGER_SPEED_TIMER") == "gpu":
        use_gpu_timer()
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
