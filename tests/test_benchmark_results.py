"""The benchmark scripts write their rows as JSON next to their tables, and
benchmarks/plot.py draws them: mytriton's speed relative to Triton's (or
NumPy's) per row."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import common  # noqa: E402
import plot  # noqa: E402

# The scripts that measure (plot.py and sweep_check.py read what they wrote).
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in ("common.py", "plot.py", "sweep_check.py"))


def test_results_are_written_after_every_row(tmp_path):
    import argparse

    results = common.Results("toy", argparse.Namespace(shapes=["8x8"], json=str(tmp_path / "toy.json")))
    results.add("8x8", "GB/s", 100.0, 125.0, block=8)
    first = json.loads((tmp_path / "toy.json").read_text())
    assert first["script"] == "toy" and first["options"] == {"shapes": ["8x8"]}
    assert first["rows"] == [{"case": "8x8", "unit": "GB/s", "mytriton": 100.0, "triton": 125.0, "block": 8}]
    results.add("16x16", "GB/s", 90.0)
    assert len(json.loads((tmp_path / "toy.json").read_text())["rows"]) == 2


def test_the_ratio_is_speed_whether_the_unit_is_a_rate_or_a_time():
    assert common.speed_ratio({"unit": "GB/s", "mytriton": 90.0, "triton": 100.0}) == 0.9
    assert common.speed_ratio({"unit": "ms", "mytriton": 2.0, "triton": 1.0}) == 0.5
    assert common.speed_ratio({"unit": "ms", "mytriton": 2.0, "triton": None}) is None
    assert common.speed_ratio({"unit": "GB/s", "mytriton": 2.0, "numpy": 4.0}, against="numpy") == 0.5


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_script_takes_the_json_option(script):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--json PATH" in done.stdout


def document(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text(json.dumps({"script": "softmax", "when": "2026-12-01T00:00:00+00:00", "rows": rows}))
    return path


def test_plot_draws_one_bar_per_row_and_file(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [{"case": "4096x1024", "unit": "GB/s", "mytriton": 2900.0, "triton": 3000.0},
            {"case": "16384x8192", "unit": "GB/s", "mytriton": 3100.0, "triton": None}]
    first = document(tmp_path, "a.json", rows)
    second = document(tmp_path, "b.json", rows[:1])
    cases, per_file = plot.series(plot.load([first, second]), "triton")
    assert cases == ["softmax: 4096x1024"]  # the row without Triton's figure has no ratio
    assert [ratios for _, ratios in per_file] == [{"softmax: 4096x1024": 2900 / 3000}] * 2
    assert plot.main([str(first), str(second), "-o", str(tmp_path / "out.png")]) == 0
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_refuses_a_file_that_is_not_a_result(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SystemExit, match="not a benchmark result"):
        plot.load([bad])


def test_a_first_call_is_timed_from_an_idle_gpu_to_its_result(monkeypatch):
    """first_call waits for the GPU before and after the call, so its time
    is the call's compile, load and run, nothing queued before it."""
    import types

    events = []
    cuda = types.SimpleNamespace(synchronize=lambda: events.append("sync"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    seconds = common.first_call(lambda: events.append("call"))
    assert events == ["sync", "call", "sync"] and seconds >= 0


def test_cold_caches_give_both_compilers_empty_cache_folders(monkeypatch):
    import os

    # (set through monkeypatch first, so that the test leaves both as it found them)
    monkeypatch.setenv("MYTRITON_CACHE_DIR", "before")
    monkeypatch.setenv("TRITON_CACHE_DIR", "before")
    monkeypatch.delenv("CUDA_CACHE_DISABLE", raising=False)
    common.cold_caches()
    for name in ("MYTRITON_CACHE_DIR", "TRITON_CACHE_DIR"):
        folder = Path(os.environ[name])
        assert folder.is_dir() and not any(folder.iterdir())
    assert os.environ["CUDA_CACHE_DISABLE"] == "1"


def test_cold_caches_refuse_a_process_whose_cuda_has_started(monkeypatch):
    """The driver reads CUDA_CACHE_DISABLE once, as CUDA starts: set later, its
    compute cache would serve a rerun's "first calls" (0.03 s where 0.4 s is
    the build)."""
    import types

    cuda = types.SimpleNamespace(is_initialized=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    with pytest.raises(RuntimeError, match="before CUDA starts"):
        common.cold_caches()


def test_results_ask_for_the_gpu_only_when_they_write(tmp_path, monkeypatch):
    """A script makes its Results before cold_caches; asking torch for the
    GPU's name there would start CUDA too soon."""
    import argparse

    asked = []
    monkeypatch.setattr(common, "gpu_name", lambda: asked.append(1) or "H200")
    results = common.Results("toy", argparse.Namespace(json=str(tmp_path / "toy.json")))
    assert asked == []
    results.add("a", "ms", 1.0)
    assert json.loads((tmp_path / "toy.json").read_text())["gpu"] == "H200" and asked == [1]


def test_results_written_through_a_link_keep_the_link(tmp_path):
    import argparse
    import os

    target = tmp_path / "kept.json"
    target.write_text("{}")
    os.symlink(target, tmp_path / "link.json")
    common.Results("toy", argparse.Namespace(json=str(tmp_path / "link.json"))).add("a", "ms", 1.0)
    assert (tmp_path / "link.json").is_symlink() and json.loads(target.read_text())["rows"][0]["case"] == "a"
