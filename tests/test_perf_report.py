"""perf_report and Benchmark (mytriton.testing, triton.testing under
as_triton), as Triton's: a function measured over x values and lines,
printed, saved as CSV, drawn with matplotlib where it is installed."""
from __future__ import annotations

import builtins
import os

import pytest

from mytriton import perf_report as perf_module
from mytriton.testing import Benchmark, perf_report


def bench_of(plot_name="toy", x_vals=(1, 2), **extra):
    return Benchmark(x_names=["n"], x_vals=list(x_vals), line_arg="p", line_vals=[10, 20],
                     line_names=["ten", "twenty"], plot_name=plot_name, args={"k": 3}, **extra)


def linear(n, p, k):
    return n * p + k


def test_the_table_prints_as_pandas_prints_a_data_frame(capsys):
    perf_report(bench_of())(linear).run(print_data=True)
    assert capsys.readouterr().out.splitlines() == ["toy:", "   n  ten  twenty", "0  1   13      23",
                                                    "1  2   23      43"]


def test_each_x_name_takes_its_own_value_from_a_tuple(capsys):
    bench = Benchmark(x_names=["m", "n"], x_vals=[(2, 3), (4, 5)], line_arg="p", line_vals=[1],
                      line_names=["one"], plot_name="pairs")
    perf_report(bench)(lambda m, n, p: m * n * p).run(print_data=True)
    assert capsys.readouterr().out.split()[-3:] == ["4", "5", "20"]


def test_save_path_writes_the_csv_of_x_values_and_lines(tmp_path):
    perf_report(bench_of())(linear).run(save_path=str(tmp_path))
    assert (tmp_path / "toy.csv").read_text() == "n,ten,twenty\n1,13,23\n2,23,43\n"


def test_a_triple_is_the_middle_in_the_table_and_a_band_in_the_plot(tmp_path):
    frames = perf_report(bench_of())(lambda n, p, k: (n * p, n * p - 1.0, n * p + 1.0)).run(save_path=str(tmp_path))
    assert frames is None
    assert (tmp_path / "toy.csv").read_text().splitlines()[1] == "1,10,20"


def test_with_matplotlib_the_plot_is_a_png_that_results_html_shows(tmp_path):
    pytest.importorskip("matplotlib")
    perf_report([bench_of("first"), bench_of("second", x_log=True)])(linear).run(save_path=str(tmp_path))
    for name in ("first", "second"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "results.html").read_text() == (
        '<html><body>\n<img src="first.png"/>\n<img src="second.png"/>\n</body></html>\n')


def test_without_matplotlib_save_path_writes_the_table_and_says_there_is_no_plot(tmp_path, monkeypatch, capsys):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    monkeypatch.setattr(perf_module, "_warned_no_matplotlib", False)
    perf_report(bench_of())(linear).run(save_path=str(tmp_path))
    assert (tmp_path / "toy.csv").exists() and not (tmp_path / "toy.png").exists()
    assert "matplotlib is not installed" in capsys.readouterr().err
    with pytest.raises(ImportError, match="pip install matplotlib"):
        perf_report(bench_of())(linear).run(show_plots=True)


def test_a_plot_name_that_is_a_path_is_refused():
    with pytest.raises(ValueError, match="plain file name"):
        bench_of("../elsewhere")


def test_an_x_value_with_the_wrong_count_is_an_error_naming_the_benchmark():
    bench = Benchmark(x_names=["m", "n"], x_vals=[(1, 2, 3)], line_arg="p", line_vals=[1], line_names=["one"],
                      plot_name="bad")
    with pytest.raises(ValueError, match="'bad'.*3 values for 2 x_names"):
        perf_report(bench)(lambda m, n, p: 0).run()


def test_results_html_escapes_the_picture_names(tmp_path):
    pytest.importorskip("matplotlib")
    perf_report(bench_of('a"<b>'))(linear).run(save_path=str(tmp_path))
    assert '<img src="a&quot;&lt;b&gt;.png"/>' in (tmp_path / "results.html").read_text()


def test_a_link_planted_where_the_csv_goes_is_replaced_not_written_through(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(target, out / "toy.csv")
    perf_report(bench_of())(linear).run(save_path=str(out))
    assert target.read_text() == "keep" and not (out / "toy.csv").is_symlink()
