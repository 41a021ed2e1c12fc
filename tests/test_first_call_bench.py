"""benchmarks/first_call.py without a GPU (``--stand-in``: a stand-in
driver, real builds): a row for each kernel, in launch order, whose parts
(mytriton's stages to SSA and to CUDA, the build, the module load) are each
timed and add up to no more than the first call itself."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow
@pytest.mark.nvcc
def test_the_stand_in_run_times_each_part_of_every_kernels_first_call(tmp_path):
    """Two rounds: the second loads every kernel anew into emptied caches, so it builds each again."""
    out = tmp_path / "first_call.json"
    run = subprocess.run([sys.executable, "first_call.py", "--stand-in", "--rounds", "2", "--json", str(out)],
                         cwd=ROOT / "benchmarks", capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["case"] for row in rows] == ["matmul sample 64x64x32", "matmul sample 128x128x64",
                                             "form offsets 128x128x64", "form unmasked 128x128x64",
                                             "form helper 128x128x64", "form trans_b 128x128x64",
                                             "form split_k 128x128x64", "form persistent 128x128x64",
                                             "attention tutorial D64"]
    assert [row["order"] for row in rows] == list(range(1, 10))
    for row in rows:
        parts = [row["to_SSA"], row["to_CUDA"], row["build"], row["load"]]
        assert row["to_SSA"] > 0 and row["to_CUDA"] > 0 and row["build"] > 0, row
        assert sum(parts) <= row["mytriton"] and row["triton"] is None, row
        assert row["rounds"] == 2 and row["mytriton"] == statistics.median(row["mytriton_samples"]), row
        assert len(row["build_samples"]) == 2 and min(row["build_samples"]) > 0.01, row  # built, not read back
