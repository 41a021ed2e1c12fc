"""``triton.testing`` as mytriton gives it: ``do_bench``,
``do_bench_cudagraph``, ``assert_close``, ``Benchmark`` and ``perf_report``
(mytriton.testing's). Any other name is an AttributeError that names it."""
from __future__ import annotations

from typing import Any

from mytriton.perf_report import Benchmark, perf_report
from mytriton.testing import assert_close, do_bench, do_bench_cudagraph

__all__ = ["Benchmark", "assert_close", "do_bench", "do_bench_cudagraph", "perf_report"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"mytriton does not provide triton.testing.{name} (it gives {', '.join(__all__)})")
