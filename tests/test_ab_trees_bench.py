"""benchmarks/ab_trees.py without a GPU: stand-in trees whose benchmark
writes rows as the real scripts do (``--json``), run in alternation, each
from its own tree, and summed up as medians per tree."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# A benchmark as the real ones write their rows: it reports its tree's figure, and logs
# which tree ran (its working directory) so that the order can be checked.
STAND_IN = '''
import json, sys
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--json") + 1])
figure = float(Path("figure.txt").read_text())
with open(args[args.index("--log") + 1], "a") as log:
    log.write(Path.cwd().name + "\\n")
out.write_text(json.dumps({"rows": [{"case": "matmul 4096", "unit": "ms", "mytriton": figure, "triton": 2.0}]}))
print("ran", figure)
'''


def tree(root: Path, name: str, figure: float) -> Path:
    (root / name / "benchmarks").mkdir(parents=True)
    (root / name / "benchmarks" / "stand_in.py").write_text(STAND_IN)
    (root / name / "figure.txt").write_text(str(figure))
    return root / name


def run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    old, new = tree(tmp_path, "old", 1.0), tree(tmp_path, "new", 0.8)
    return subprocess.run([sys.executable, str(BENCHMARKS / "ab_trees.py"), "--tree", f"old={old}",
                           "--tree", f"new={new}", *extra, "--", "stand_in.py", "--log", str(tmp_path / "log")],
                          capture_output=True, text=True, timeout=60)


def test_the_trees_run_in_turn_round_by_round(tmp_path):
    result = run(tmp_path, "--rounds", "3")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "log").read_text().split() == ["old", "new"] * 3


def test_each_tree_gets_its_median_and_its_speed_against_the_first(tmp_path):
    result = run(tmp_path, "--rounds", "2", "--json", str(tmp_path / "ab.json"))
    assert result.returncode == 0, result.stderr
    [row] = json.loads((tmp_path / "ab.json").read_text())["rows"]
    assert row["medians"] == {"old": 1.0, "new": 0.8}
    assert row["samples"] == {"old": [1.0, 1.0], "new": [0.8, 0.8]}
    assert abs(row["against_first"]["new"] - 1.25) < 1e-9  # ms: 1.0 / 0.8, above 1 is faster
    assert row["triton_medians"] == {"old": 2.0, "new": 2.0}
    assert "x1.250" in result.stdout


def test_each_runs_output_is_kept_where_asked(tmp_path):
    result = run(tmp_path, "--rounds", "1", "--out", str(tmp_path / "runs"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "runs" / "new_1.txt").read_text().startswith("ran 0.8")


def test_a_tree_without_the_script_is_refused_before_anything_runs(tmp_path):
    tree(tmp_path, "old", 1.0)
    result = subprocess.run([sys.executable, str(BENCHMARKS / "ab_trees.py"), "--tree", f"old={tmp_path / 'old'}",
                             "--tree", f"bare={tmp_path}", "--", "stand_in.py"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "tree bare: no benchmarks/stand_in.py" in result.stderr
    assert not (tmp_path / "log").exists()
