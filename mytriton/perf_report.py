"""``perf_report`` and ``Benchmark``, as Triton's ``triton.testing`` has them
(most of Triton's tutorials end with one): a function measured over a grid
of x values and lines, printed as a table, saved as CSV, and drawn with
matplotlib when it is installed.

A decorated function returns one number per call, or a (middle, low, high)
triple, which adds ``<line>-min`` and ``<line>-max`` columns and a shaded
band in the plot. ``run(save_path=DIR)`` writes ``DIR/<plot_name>.csv``,
``DIR/<plot_name>.png`` (with matplotlib) and ``DIR/results.html`` showing
the pictures; ``return_df=True`` gives pandas DataFrames (pandas needed for
that only)."""
from __future__ import annotations

import csv
import html
import io
import math
import os
import sys
from typing import Any, Callable, Sequence

from mytriton.output_files import replace_in_directory

__all__ = ["Benchmark", "Mark", "perf_report"]


class Benchmark:
    """One benchmark: the x values (``x_names`` each take ``x_vals``, or a
    tuple per x value giving each name its own), one line per ``line_vals``
    value (passed as ``line_arg``, labelled by ``line_names``), fixed
    ``args``, and how the plot is labelled (``styles``: (colour, line
    style) per line)."""

    def __init__(self, x_names: Sequence[str], x_vals: Sequence[Any], line_arg: str, line_vals: Sequence[Any],
                 line_names: Sequence[str], plot_name: str, args: dict[str, Any] | None = None,
                 xlabel: str = "", ylabel: str = "", x_log: bool = False, y_log: bool = False,
                 styles: Sequence[Any] | None = None, color: Any = None) -> None:
        if not plot_name or os.path.basename(plot_name) != plot_name or plot_name in (".", ".."):
            raise ValueError(f"Benchmark: plot_name {plot_name!r} names the files run(save_path=) writes; "
                             "it must be a plain file name")
        if len(line_names) != len(line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(line_vals)} line_vals but {len(line_names)} line_names")
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles = styles


class Table:
    """The measurements of one Benchmark: a header and rows (x values, then
    each line's middle value, then its low and high where given)."""

    def __init__(self, bench: Benchmark) -> None:
        self.bench = bench
        self.rows: list[list[Any]] = []  # x values, middles, lows, highs

    def add(self, xs: list[Any], middles: list[Any], lows: list[Any], highs: list[Any]) -> None:
        self.rows.append([*xs, *middles, *lows, *highs])

    def column(self, name: str) -> list[Any]:
        return [row[self.header_all.index(name)] for row in self.rows]

    @property
    def header_all(self) -> list[str]:
        names = self.bench.line_names
        return [*self.bench.x_names, *names, *(f"{n}-min" for n in names), *(f"{n}-max" for n in names)]

    @property
    def header(self) -> list[str]:
        """The printed and saved columns: x values and each line's middle, as Triton's."""
        return [*self.bench.x_names, *self.bench.line_names]

    def visible_rows(self) -> list[list[Any]]:
        width = len(self.header)
        return [row[:width] for row in self.rows]

    def text(self) -> str:
        """The table as pandas prints a DataFrame: an index column, right-aligned."""
        cells = [["", *self.header]] + [[str(i), *(_cell(v) for v in row)]
                                        for i, row in enumerate(self.visible_rows())]
        widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
        return "\n".join("  ".join(v.rjust(w) for v, w in zip(row, widths)).rstrip() for row in cells)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _split(result: Any) -> tuple[Any, Any, Any]:
    """A call's (middle, low, high): a triple as it is, one value with no band."""
    if isinstance(result, (list, tuple)):
        if len(result) != 3:
            raise ValueError(f"a perf_report function returns one number or (middle, low, high), got {len(result)} values")
        return result[0], result[1], result[2]
    return result, None, None


class Mark:
    """A function decorated with ``perf_report``: ``run`` measures it."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | Sequence[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench: Benchmark, **kwargs: Any) -> Table:
        table = Table(bench)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"Benchmark {bench.plot_name!r}: x value {x!r} gives {len(xs)} values for "
                                 f"{len(bench.x_names)} x_names")
            named = dict(zip(bench.x_names, xs))
            middles, lows, highs = [], [], []
            for line in bench.line_vals:
                middle, low, high = _split(self.fn(**named, **{bench.line_arg: line}, **bench.args, **kwargs))
                middles.append(middle)
                lows.append(low)
                highs.append(high)
            table.add(xs, middles, lows, highs)
        return table

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, save_precision: int = 6, **kwargs: Any) -> Any:
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks: list[Benchmark] = ([self.benchmarks] if isinstance(self.benchmarks, Benchmark)
                                       else list(self.benchmarks))
        tables: list[Table] = []
        pictures: list[str] = []
        try:
            for bench in benchmarks:
                table = self._measure(bench, **kwargs)
                tables.append(table)
                if show_plots or save_path:
                    picture = _plot(table, save_path, show_plots)
                    if picture:
                        pictures.append(picture)
                if print_data:
                    print(f"{bench.plot_name}:")
                    print(table.text())
                if save_path:
                    _write_csv(table, save_path, f"{bench.plot_name}.csv", save_precision)
        finally:
            if save_path:
                page = "<html><body>\n" + "".join(f'<img src="{html.escape(name, quote=True)}"/>\n'
                                                   for name in pictures) + "</body></html>\n"
                replace_in_directory(save_path, "results.html", lambda handle: handle.write(page.encode()))
        if return_df:
            frames = [_data_frame(table) for table in tables]
            return frames[0] if single else frames
        return None


def _write_csv(table: Table, directory: str, name: str, precision: int) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(table.header)
    for row in table.visible_rows():
        writer.writerow([f"{v:.{precision}f}" if isinstance(v, float) else v for v in row])
    replace_in_directory(directory, name, lambda handle: handle.write(text.getvalue().encode()))


def _data_frame(table: Table) -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("perf_report's return_df=True gives pandas DataFrames: pip install pandas "
                          "(print_data=True and save_path= need nothing)") from None
    return pandas.DataFrame(table.visible_rows(), columns=table.header)


_warned_no_matplotlib = False


def _plot(table: Table, save_path: str, show: bool) -> str | None:
    """Draw the table's lines against its first x name (a band from each
    line's low to high where the function gave them); save it as
    ``<plot_name>.png`` in ``save_path``. The picture's file name, or None
    where nothing was saved."""
    global _warned_no_matplotlib
    try:
        import matplotlib

        if not show:
            matplotlib.use("Agg")  # a file only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        if show:
            raise ImportError("perf_report's plots need matplotlib: pip install matplotlib (print_data=True "
                              "and save_path= give the table without it)") from None
        if not _warned_no_matplotlib:
            print("perf_report: matplotlib is not installed: tables and CSV only, no plots", file=sys.stderr)
            _warned_no_matplotlib = True
        return None
    bench = table.bench
    first = bench.x_names[0]
    xs = table.column(first)
    figure, axes = plt.subplots()
    for i, line in enumerate(bench.line_names):
        colour, style = (bench.styles[i][0], bench.styles[i][1]) if bench.styles else (None, None)
        ys = [_number(v) for v in table.column(line)]
        axes.plot(xs, ys, label=line, color=colour, ls=style)
        lows, highs = table.column(f"{line}-min"), table.column(f"{line}-max")
        if all(v is not None for v in lows + highs):
            axes.fill_between(xs, [_number(v) for v in lows], [_number(v) for v in highs], alpha=0.15, color=colour)
    axes.legend()
    axes.set_xlabel(bench.xlabel or first)
    axes.set_ylabel(bench.ylabel)
    axes.set_title(bench.plot_name)
    from matplotlib.scale import LinearScale, LogScale

    axes.set_xscale(LogScale.name if bench.x_log else LinearScale.name)
    axes.set_yscale(LogScale.name if bench.y_log else LinearScale.name)
    picture = None
    if save_path:
        picture = f"{bench.plot_name}.png"
        replace_in_directory(save_path, picture, lambda handle: figure.savefig(handle, format="png"))
    if show:
        plt.show()
    plt.close(figure)
    return picture


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def perf_report(benchmarks: Benchmark | Sequence[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Mark a function as a benchmark: ``fn.run(print_data=True)`` measures it."""
    return lambda fn: Mark(fn, benchmarks)
