"""``triton.testing`` as mytriton gives it: ``do_bench``,
``do_bench_cudagraph`` and ``assert_close`` (mytriton.testing's), and ``Benchmark`` with
``perf_report``, which run a benchmark over its x values and lines and
print or return the table (plots need matplotlib, which mytriton does not
use: asking for one is an error). Any other name is an AttributeError that
names it."""
from __future__ import annotations

import csv
import os
from typing import Any, Callable, Sequence

from mytriton.testing import assert_close, do_bench, do_bench_cudagraph

__all__ = ["Benchmark", "assert_close", "do_bench", "do_bench_cudagraph", "perf_report"]


class Benchmark:
    """Triton's description of one benchmark: the x values (``x_names`` each
    take ``x_vals``), one line per ``line_vals`` value (passed as
    ``line_arg``), fixed ``args``, and how a plot would be labelled."""

    def __init__(self, x_names: Sequence[str], x_vals: Sequence[Any], line_arg: str, line_vals: Sequence[Any],
                 line_names: Sequence[str], plot_name: str, args: dict[str, Any], xlabel: str = "",
                 ylabel: str = "", x_log: bool = False, y_log: bool = False,
                 styles: Sequence[Any] | None = None) -> None:
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args)
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles = styles


class Mark:
    """A function decorated with ``perf_report``: ``run`` measures it."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | Sequence[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks

    def _table(self, bench: Benchmark, **kwargs: Any) -> tuple[list[str], list[list[Any]]]:
        header = [*bench.x_names, *bench.line_names]
        rows = []
        for x in bench.x_vals:
            xs = dict(zip(bench.x_names, x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)))
            row: list[Any] = list(xs.values())
            for line in bench.line_vals:
                result = self.fn(**xs, **{bench.line_arg: line}, **bench.args, **kwargs)
                row.append(result[0] if isinstance(result, (list, tuple)) else result)
            rows.append(row)
        return header, rows

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        if show_plots:
            raise NotImplementedError("mytriton's perf_report draws no plots (show_plots=True); print_data=True "
                                      "prints the table")
        benchmarks = [self.benchmarks] if isinstance(self.benchmarks, Benchmark) else list(self.benchmarks)
        frames = []
        for bench in benchmarks:
            header, rows = self._table(bench, **kwargs)
            if print_data:
                print(f"{bench.plot_name}:")
                print("\t".join(header))
                for row in rows:
                    print("\t".join(str(v) for v in row))
            if save_path:
                with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as handle:
                    writer = csv.writer(handle)
                    writer.writerow(header)
                    writer.writerows(rows)
            if return_df:
                import pandas

                frames.append(pandas.DataFrame(rows, columns=header))
        if return_df:
            return frames[0] if len(frames) == 1 else frames
        return None


def perf_report(benchmarks: Benchmark | Sequence[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Mark a function as a benchmark: ``fn.run(print_data=True)`` measures it."""
    return lambda fn: Mark(fn, benchmarks)


def __getattr__(name: str) -> Any:
    raise AttributeError(f"mytriton does not provide triton.testing.{name} (it gives {', '.join(__all__)})")
