"""Runs one of Liger-Kernel's benchmark scripts keeping only what
tools/liger_speed.py compares: the speed rows of Liger's own providers
("liger", "liger-fp32-accum", ...). The reference providers (Hugging Face,
torch) and the memory sweeps are the same on both sides and cost most of a
script's time, so ``run_benchmarks`` (the one place every script hands its
sweeps to) is wrapped to skip them; the script itself runs unchanged.

    python tools/liger_speed_rows.py benchmark/scripts/benchmark_rms_norm.py [script args]
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any, Callable


def liger_speed_only(run_benchmarks: Callable[..., Any]) -> Callable[..., Any]:
    """``run_benchmarks`` for the speed metric and Liger's providers only."""

    def run(*args: Any, **kwargs: Any) -> Any:
        if args or kwargs.get("metric_name") != "speed":
            return None if not args else run_benchmarks(*args, **kwargs)
        providers = [p for p in kwargs.get("kernel_providers", []) if p.startswith("liger")]
        if not providers:
            return None
        return run_benchmarks(**{**kwargs, "kernel_providers": providers})

    return run


def main(argv: list[str]) -> None:
    script = Path(argv[0]).resolve()
    sys.argv = [str(script), *argv[1:]]
    sys.path.insert(0, str(script.parent))
    import utils  # Liger's benchmark/scripts/utils.py, which its scripts import by that name

    utils.run_benchmarks = liger_speed_only(utils.run_benchmarks)
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
