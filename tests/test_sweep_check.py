"""benchmarks/sweep_check.py: a sweep's JSON (benchmarks/sweep.sh) against
issue 25's targets, with no GPU: attention at 0.85 of Triton, matmul forms
and the grouped matmul at 0.9, the tile configs at 1.0, none below 0.8,
every first call at or below Triton's, all from one GPU."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import sweep_check  # noqa: E402

GPU = "NVIDIA H200"


def results(rows: list[dict], gpu: str = GPU) -> dict:
    return {"script": "x", "options": {}, "gpu": gpu, "when": "2026-12-06T00:00:00+00:00", "rows": rows}


def ms_row(case: str, ours: float, theirs: float, first: float = 0.3, triton_first: float = 0.5, **extra) -> dict:
    return {"case": case, "unit": "ms", "mytriton": ours, "triton": theirs, "first_call_s": first,
            "triton_first_call_s": triton_first, **extra}


def form(name: str, size: str, ours: float, theirs: float, **extra) -> dict:
    return ms_row(f"{name} f16 {size} 128x128x64", ours, theirs, form=name, size=size, **extra)


def sweep(folder: Path, parts: dict[str, dict[str, dict]]) -> Path:
    """A sweep's OUT_DIR as the device returns it: each part's merged PART.json."""
    folder.mkdir(exist_ok=True)
    for part, documents in parts.items():
        (folder / f"{part}.json").write_text(json.dumps(documents))
    return folder


def passing() -> dict[str, dict[str, dict]]:
    return {
        "attention": {"att_f16_trans_64.json": results([ms_row("trans f16 d=64", 1.0, 0.86)])},
        "configs": {"cfg_f16_64x64x32.json": results([
            {"case": "f16 4096 64x64x32", "unit": "TFLOP/s", "mytriton": 290.0, "triton": 282.0,
             "first_call_s": 0.4, "triton_tf32_first_call_s": 1.0}])},
        "tf32-bf16": {"forms_bf16.json": results([form("offsets", "4096x4096x4096", 1.0, 0.95)])},
        "rest": {"grouped.json": results([ms_row("1024x1024x1024 64x64x32x8:4:4", 1.0, 0.95, 0.0001, 0.00007)]),
                 "first_call.json": results([{"case": "matmul sample 64x64x32", "unit": "s", "mytriton": 0.11,
                                              "triton": 0.16}])},
    }


def run(folder: Path, capsys) -> tuple[int, str]:
    code = sweep_check.main([str(folder)])
    return code, capsys.readouterr().out


def shortfalls(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("short:")]


def test_a_sweep_meeting_every_target_passes(tmp_path, capsys):
    code, out = run(sweep(tmp_path / "out", passing()), capsys)
    assert code == 0, out
    assert shortfalls(out) == []
    assert "GPU: NVIDIA H200" in out
    assert "attention: 1 rows, 0 below 0.85" in out


def test_attention_at_0_86_meets_its_target_where_a_form_at_0_86_does_not(tmp_path, capsys):
    parts = passing()
    parts["tf32-bf16"]["forms_bf16.json"] = results([form("offsets", "4096x4096x4096", 1.0, 0.86)])
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: forms_bf16: offsets f16 4096x4096x4096 128x128x64: 0.86 of Triton, below 0.9"]


def test_a_config_just_under_triton_misses_its_target_of_one(tmp_path, capsys):
    parts = passing()
    parts["configs"]["cfg_f16_64x64x32.json"]["rows"][0]["mytriton"] = 279.0
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: cfg_f16_64x64x32: f16 4096 64x64x32: 0.99 of Triton, below 1"]


def test_a_row_below_the_floor_says_so(tmp_path, capsys):
    parts = passing()
    parts["attention"]["att_f16_trans_64.json"] = results([ms_row("trans f16 d=64", 1.0, 0.7)])
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert "0.70 of Triton, below 0.85 and the floor 0.8" in out
    assert "below the floor 0.8: 1" in out


def test_a_row_with_no_result_of_ours_misses_its_target(tmp_path, capsys):
    parts = passing()
    parts["tf32-bf16"]["forms_bf16.json"] = results([form("offsets", "4096x4096x4096", None, 0.95)])
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: forms_bf16: offsets f16 4096x4096x4096 128x128x64: no result"]


def test_a_first_call_above_tritons_is_short(tmp_path, capsys):
    parts = passing()
    parts["tf32-bf16"]["forms_bf16.json"] = results([form("offsets", "4096x4096x4096", 1.0, 0.95, first_call_s=0.8,
                                                          triton_first_call_s=0.7)])
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: forms_bf16: offsets f16 4096x4096x4096 128x128x64: "
                               "first call 0.80 s against Triton's 0.70 s"]


def test_the_rechecks_median_first_call_stands_for_the_one_sample(tmp_path, capsys):
    parts = passing()
    parts["tf32-bf16"]["forms_bf16.json"] = results([form("offsets", "4096x4096x4096", 1.0, 0.95, first_call_s=0.8,
                                                          triton_first_call_s=0.7)])
    parts["recheck"] = {"recheck_first_calls.json": results([
        {"case": "forms_bf16 offsets 4096x4096x4096", "unit": "s", "mytriton": 0.5, "triton": 0.7}])}
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 0, out
    assert "0.5 / 0.7 (median)" in out


def test_first_calls_that_built_nothing_are_not_compared(tmp_path, capsys):
    # passing()'s grouped row reused a kernel: 0.1 ms against Triton's 0.07 ms.
    code, out = run(sweep(tmp_path / "out", passing()), capsys)
    assert code == 0, out
    assert "first calls above Triton's: 0" in out


def test_first_call_pys_rows_are_compared_as_first_calls(tmp_path, capsys):
    parts = passing()
    parts["rest"]["first_call.json"]["rows"][0]["mytriton"] = 0.2
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: first_call: matmul sample 64x64x32: first call 0.20 s against Triton's 0.16 s"]


def test_results_from_two_gpus_are_not_one_run(tmp_path, capsys):
    parts = passing()
    parts["configs"]["cfg_f16_64x64x32.json"]["gpu"] = "NVIDIA H100 80GB HBM3"
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: the results come from more than one GPU"]


def test_a_rows_file_beside_its_merged_part_is_read_once(tmp_path, capsys):
    folder = sweep(tmp_path / "out", passing())
    (folder / "forms_bf16.json").write_text(json.dumps(passing()["tf32-bf16"]["forms_bf16.json"]))
    code, out = run(folder, capsys)
    assert code == 0, out
    assert "form: 1 rows" in out


def test_an_empty_folder_has_no_rows_and_fails(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    code, out = run(tmp_path / "out", capsys)
    assert code == 1
    assert "short: no rows" in out


def test_a_file_that_is_not_json_is_an_error_not_a_traceback(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "broken.json").write_text("{")
    with pytest.raises(SystemExit) as stop:
        sweep_check.main([str(folder)])
    assert str(stop.value.code).startswith(f"{folder / 'broken.json'}: error: not a results file")


def test_the_markdown_tables_go_to_a_file_too(tmp_path, capsys):
    markdown = tmp_path / "tables.md"
    sweep_check.main([str(sweep(tmp_path / "out", passing())), "--markdown", str(markdown)])
    text = markdown.read_text()
    assert "| case | ours | Triton | unit | speed | target | first call s, ours / Triton | short of |" in text
    assert "| trans f16 d=64 | 1 | 0.86 | ms | 0.86 | 0.85 | 0.3 / 0.5 | - |" in text


def test_of_a_part_run_twice_the_later_results_are_read(tmp_path, capsys):
    folder = sweep(tmp_path / "out", passing())
    earlier = results([form("offsets", "4096x4096x4096", 1.0, 0.5)])
    earlier["when"] = "2026-12-05T00:00:00+00:00"
    (folder / "tf32-bf16-old.json").write_text(json.dumps({"forms_bf16.json": earlier}))
    code, out = run(folder, capsys)
    assert code == 0, out
    assert "forms_bf16: in tf32-bf16-old.json and tf32-bf16.json; the later, tf32-bf16.json, is read" in out


def test_values_that_are_not_measurements_count_as_no_result(tmp_path, capsys):
    parts = passing()
    parts["tf32-bf16"]["forms_bf16.json"] = results([form("offsets", "4096x4096x4096", "fast", 0.95),
                                                     "not a row"])
    parts["recheck"] = {"recheck_first_calls.json": {"rows": {"not": "a list"}}}
    code, out = run(sweep(tmp_path / "out", parts), capsys)
    assert code == 1
    assert shortfalls(out) == ["short: forms_bf16: offsets f16 4096x4096x4096 128x128x64: no result"]


def test_an_f16_configs_first_call_is_compared_with_tritons_under_the_precision_it_ran(tmp_path, capsys):
    # matmul.py times an f16 config under both of Triton's f32 precisions; the row's speed and
    # first call are those of the one it was given (--precision, exact f32 when none).
    parts = passing()
    document = results([{"case": "f16 4096 64x64x32", "unit": "TFLOP/s", "mytriton": 290.0, "triton": 282.0,
                         "first_call_s": 0.5, "triton_ieee_first_call_s": 1.1, "triton_tf32_first_call_s": 0.2}])
    parts["configs"] = {"cfg_f16_64x64x32.json": document}
    code, out = run(sweep(tmp_path / "none", parts), capsys)
    assert code == 0 and "0.5 / 1.1" in out
    document["options"] = {"precision": "tf32"}
    code, out = run(sweep(tmp_path / "tf32", parts), capsys)
    assert code == 1 and shortfalls(out) == ["short: cfg_f16_64x64x32: f16 4096 64x64x32: first call 0.50 s against Triton's 0.20 s"]
