"""benchmarks/recheck_first_calls.py without a GPU: from a matmul_forms.py
results file, the rows whose one first call was above Triton's are run again,
grouped by size, with the file's own options and several first calls."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def results(path: Path) -> Path:
    def row(form: str, size: str, ours: float, theirs: float | None) -> dict:
        return {"form": form, "size": size, "first_call_s": ours, "triton_first_call_s": theirs}

    path.write_text(json.dumps({
        "options": {"dtype": "f32", "precision": "tf32", "config": "128x128x32", "num_warps": 4, "num_stages": 3,
                    "split_k": 4, "forms": ["offsets"], "sizes": ["4096"], "repeat": 10, "first_calls": 1},
        "rows": [row("offsets", "3000x2000x1000", 0.74, 0.73), row("descriptor", "3000x2000x1000", 0.74, 0.67),
                 row("offsets", "4096x4096x4096", 0.56, 0.96), row("gathered", "4096x4096x4096", 1.0, 0.95),
                 row("tutorial", "4096x4096x4096", 0.5, None)]}))
    return path


def test_the_rows_above_triton_are_rerun_by_size_with_the_files_options(tmp_path):
    run = subprocess.run([sys.executable, str(BENCHMARKS / "recheck_first_calls.py"),
                          str(results(tmp_path / "forms_tf32.json")), "--dry-run", "--first-calls", "5"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    commands = [line.split() for line in run.stdout.splitlines()]
    assert len(commands) == 2
    small, large = commands
    for command in commands:
        assert command[1].endswith("matmul_forms.py")
        text = " ".join(command)
        assert "--dtype f32 --precision tf32 --config 128x128x32 --num-warps 4 --num-stages 3" in text
        assert "--first-calls 5" in text
    assert " ".join(small).count("--forms offsets descriptor --sizes 3000x2000x1000") == 1
    assert " ".join(large).count("--forms gathered --sizes 4096x4096x4096") == 1
    assert str(tmp_path / "recheck_forms_tf32_3000x2000x1000.json") in small


def test_a_file_with_no_row_above_triton_reruns_nothing(tmp_path):
    path = tmp_path / "forms_f16.json"
    path.write_text(json.dumps({"options": {"dtype": "f16"},
                                "rows": [{"form": "offsets", "size": "4096x4096x4096", "first_call_s": 0.4,
                                          "triton_first_call_s": 0.9}]}))
    run = subprocess.run([sys.executable, str(BENCHMARKS / "recheck_first_calls.py"), str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "no row's first call was above Triton's"


def test_each_rerun_row_keeps_its_median_beside_its_one_sample_before(tmp_path, monkeypatch, capsys):
    """The reruns themselves need the GPU: here a stand-in writes what matmul_forms.py would."""
    sys.path.insert(0, str(BENCHMARKS))
    import recheck_first_calls as recheck

    def rerun(command, timeout, check):
        target = Path(command[command.index("--json") + 1])
        forms = command[command.index("--forms") + 1:command.index("--sizes")]
        size = command[command.index("--sizes") + 1]
        target.write_text(json.dumps({"rows": [{"form": form, "size": size, "first_call_s": 0.6,
                                                "triton_first_call_s": 0.7} for form in forms]}))

    monkeypatch.setattr(recheck.subprocess, "run", rerun)
    out = tmp_path / "recheck.json"
    assert recheck.main([str(results(tmp_path / "forms_tf32.json")), "--json", str(out)]) == 0
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    assert sorted(rows) == ["forms_tf32 descriptor 3000x2000x1000", "forms_tf32 gathered 4096x4096x4096",
                            "forms_tf32 offsets 3000x2000x1000"]
    offsets = rows["forms_tf32 offsets 3000x2000x1000"]
    assert (offsets["mytriton"], offsets["triton"], offsets["before"], offsets["triton_before"]) == (0.6, 0.7, 0.74, 0.73)
    line = next(line for line in capsys.readouterr().out.splitlines() if " offsets " in line)
    assert line.split()[-6:] == ["0.74", "/", "0.73", "0.60", "/", "0.70"]
