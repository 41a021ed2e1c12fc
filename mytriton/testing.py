"""``mytriton.testing``: Triton's ``do_bench``, ``do_bench_cudagraph``,
``assert_close``, and ``perf_report`` with ``Benchmark`` (perf_report.py).

``do_bench`` times with CUDA events where a GPU is in use (PyTorch's when
PyTorch sees the GPU, else the driver's) and with the wall clock otherwise (the
interpreter), in milliseconds, as Triton's does: before each timed call the
gradients of ``grad_to_none`` are cleared and the GPU's L2 cache is flushed
(a 256 MiB buffer zeroed), so that a kernel timed here and the same kernel
timed by Triton's do_bench start from the same cold cache.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from mytriton.diagnostics import CompileError
from mytriton.perf_report import Benchmark, perf_report  # noqa: F401  (mytriton.testing's, as Triton's)

RETURN_MODES = ("min", "max", "mean", "median", "all")
# Triton's get_empty_cache_for_benchmark: more than any GPU's L2 (the H200's is 60 MiB).
FLUSH_BYTES = 256 * 1024 * 1024


class _WallClock:
    """Host timing, for the interpreter (its launches are synchronous)."""

    def synchronize(self) -> None:
        return None

    def flush(self) -> None:
        return None

    def timed(self, fn: Callable[[], Any], times: int, before: Callable[[], None] = lambda: None) -> list[float]:
        out = []
        for _ in range(times):
            before()
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1e3)
        return out


class _TorchEvents:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._cache: Any = None

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def flush(self) -> None:
        if self._cache is None:
            self._cache = self.torch.empty(FLUSH_BYTES // 4, dtype=self.torch.int, device="cuda")
        self._cache.zero_()

    def timed(self, fn: Callable[[], Any], times: int, before: Callable[[], None] = lambda: None) -> list[float]:
        cuda = self.torch.cuda
        starts = [cuda.Event(enable_timing=True) for _ in range(times)]
        ends = [cuda.Event(enable_timing=True) for _ in range(times)]
        for start, end in zip(starts, ends):
            before()
            start.record()
            fn()
            end.record()
        cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]


class _DriverEvents:
    """CUDA events through the driver, on the legacy default stream (where
    launches without tensors go), on the device a launch would use."""

    def __init__(self) -> None:
        from mytriton.runtime.cuda_driver import on_device
        from mytriton.runtime.driver_api import driver
        from mytriton.runtime.placement import default_device

        self.device = on_device(default_device(driver()))
        self._cache = 0

    def synchronize(self) -> None:
        with self.device as drv:
            drv.synchronize_context()

    def flush(self) -> None:
        with self.device as drv:
            if not self._cache:
                self._cache = drv.allocate(FLUSH_BYTES)
            drv.memset32(self._cache, 0, FLUSH_BYTES // 4)

    def release(self) -> None:
        if self._cache:
            with self.device as drv:
                drv.free(self._cache)
            self._cache = 0

    def timed(self, fn: Callable[[], Any], times: int, before: Callable[[], None] = lambda: None) -> list[float]:
        with self.device as drv:
            events = [(drv.event(), drv.event()) for _ in range(times)]
        try:
            for start, end in events:
                before()
                with self.device as drv:
                    drv.record(start)
                fn()
                with self.device as drv:
                    drv.record(end)
            with self.device as drv:
                return [drv.elapsed_ms(start, end) for start, end in events]
        finally:
            with self.device as drv:
                for pair in events:
                    for event in pair:
                        drv.destroy_event(event)


def _timer() -> Any:
    from mytriton.runtime.jit import select_backend

    if select_backend() != "cuda":
        return _WallClock()
    try:
        import torch

        if torch.cuda.is_available():
            return _TorchEvents(torch)
    except ImportError:
        pass
    return _DriverEvents()


def _quantiles(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    import numpy as np

    return [float(q) for q in np.quantile(np.asarray(values, dtype=np.float64), list(qs))]


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             grad_to_none: Sequence[Any] | None = None, quantiles: Sequence[float] | None = None,
             return_mode: str = "mean") -> Any:
    """Milliseconds per call of ``fn``: ``warmup`` ms of calls first, then
    about ``rep`` ms of timed calls (at least one of each). With
    ``quantiles``, those quantiles of the timings (a list; one value when one
    quantile is asked); otherwise the ``return_mode`` statistic ("all": the list)."""
    _check_modes(return_mode, quantiles, warmup, rep)
    timer = _timer()
    try:
        times = _timed_runs(timer, fn, warmup, rep, grad_to_none or ())
    finally:
        getattr(timer, "release", lambda: None)()
    return _summary(times, quantiles, return_mode)


def _check_modes(return_mode: str, quantiles: Sequence[float] | None, warmup: float, rep: float) -> None:
    if return_mode not in RETURN_MODES:
        raise CompileError(f"do_bench: return_mode must be one of {', '.join(RETURN_MODES)}, got {return_mode!r}")
    if quantiles is not None and not all(0 <= q <= 1 for q in quantiles):
        raise CompileError(f"do_bench: quantiles lie in [0, 1], got {list(quantiles)}")
    if not warmup >= 0 or not rep >= 0:
        raise CompileError(f"do_bench: warmup and rep are non-negative milliseconds, got {warmup}, {rep}")


def _summary(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    """Triton's _summarize_statistics: the quantiles asked for, else the return_mode statistic."""
    if quantiles is not None:
        result = _quantiles(times, quantiles)
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return times
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return _quantiles(times, [0.5])[0]
    return sum(times) / len(times)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Sequence[Any] | None = None,
                       quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """Milliseconds per call of ``fn`` replayed from a CUDA graph, as
    Triton's: a call is estimated from five plain calls (a graph costs more
    to build than a short kernel runs), then about ``rep`` ms of calls
    (gradients of ``grad_to_none`` cleared before each) are captured in one
    graph, replayed ten times; the host's launch work is left out. Needs
    PyTorch and the GPU backend (mytriton's launches go on torch's current
    stream, which capture records)."""
    from mytriton.runtime.jit import select_backend

    _check_modes(return_mode, quantiles, 0, rep)
    torch = _torch()
    if select_backend() != "cuda" or torch is None or not torch.cuda.is_available():
        raise CompileError("do_bench_cudagraph captures a CUDA graph: it needs PyTorch with a GPU and the cuda "
                           "backend (do_bench times the interpreter)")
    cuda = torch.cuda
    with cuda.stream(cuda.Stream()):
        fn()  # compiles and loads outside the capture
        for tensor in grad_to_none or ():
            tensor.detach_()
            tensor.requires_grad_(True)
            tensor.grad = None
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        cuda.synchronize()
        estimate = start.elapsed_time(end) / 5
        n_repeat = 1000 if estimate <= 0 else max(1, int(rep / estimate))  # Triton's count for a 0 estimate
        many = cuda.CUDAGraph()
        with cuda.graph(many):
            for _ in range(n_repeat):
                for tensor in grad_to_none or ():
                    tensor.grad = None
                fn()
        cuda.synchronize()
        times = []
        for _ in range(10):
            start.record()
            many.replay()
            end.record()
            cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summary(times, quantiles, return_mode)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _timed_runs(timer: Any, fn: Callable[[], Any], warmup: float, rep: float,
                grad_to_none: Sequence[Any]) -> list[float]:
    fn()
    timer.synchronize()
    # An estimate of one call from five, each after a flush that it counts, as Triton's: the flush is
    # what a timed call costs the GPU for a short kernel (without it, 20 times the calls of Triton's).
    def five() -> None:
        for _ in range(5):
            timer.flush()
            fn()

    estimate = max(timer.timed(five, 1)[0] / 5, 1e-6)  # one timing (one pair of events) around all five
    n_warmup = max(1, int(warmup / estimate))
    n_repeat = max(1, int(rep / estimate))
    for _ in range(n_warmup):
        fn()

    def before() -> None:
        for tensor in grad_to_none:
            tensor.grad = None
        timer.flush()

    return timer.timed(fn, n_repeat, before)


def _as_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a tensor
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):  # CuPy, PyCUDA arrays
        value = value.get()
    array = np.asarray(value)
    if array.dtype.name == "bfloat16":  # ml_dtypes' bfloat16: compare as f32
        array = array.astype(np.float32)
    return array


def assert_close(x: Any, y: Any, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """``x`` and ``y`` agree elementwise within ``atol + rtol * |y|``
    (defaults as Triton's: atol 1e-2, rtol 0); NaNs must match. Arrays,
    tensors (moved to the host) and scalars."""
    import numpy as np

    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    a, b = _as_numpy(x), _as_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
