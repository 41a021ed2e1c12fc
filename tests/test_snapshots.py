"""Golden files: what every sample compiles to, byte for byte.

For each sample, tests/snapshots/ holds the lowered SSA (``<sample>.ssa``),
the optimised SSA (``<sample>.opt.ssa``) and the CUDA (``<sample>.cu``), as
``mytriton compile samples/<sample>.py --emit=ssa|opt|cuda`` prints them
from the repository root. A change to the compiler that changes them must
mean to, and shows in review as a diff of these files.

To regenerate them after an intended change, run

    UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py

which writes every snapshot instead of comparing (those tests then pass),
and read the diff before committing it.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import SAMPLES, sample_names, sample_options
from mytriton import compiler
from mytriton.compiler import Options

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"

SAMPLE_OPTIONS = {name: sample_options(name) for name in sample_names()}

# --emit value -> snapshot suffix
KINDS = {"ssa": ".ssa", "opt": ".opt.ssa", "staged": ".staged.ssa", "layouts": ".layouts.ssa", "cuda": ".cu"}


def compiled(name: str, emit: str) -> str:
    # The path relative to the repository root, as the CLI run from there names
    # it: the snapshots do not depend on where the checkout is.
    source = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(source, f"samples/{name}.py", emit, Options(**SAMPLE_OPTIONS[name]))


@pytest.mark.parametrize("emit", KINDS)
@pytest.mark.parametrize("name", SAMPLE_OPTIONS)
def test_sample_matches_its_snapshot(name, emit):
    path = SNAPSHOTS / f"{name}{KINDS[emit]}"
    text = compiled(name, emit)
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no snapshot {path.name}; run UPDATE_SNAPSHOTS=1 python -m pytest {__file__}"
    assert text == path.read_text(), f"{path.name} changed; if that is intended, regenerate (see the docstring)"


def test_every_snapshot_belongs_to_a_sample():
    expected = {f"{name}{suffix}" for name in SAMPLE_OPTIONS for suffix in KINDS.values()}
    assert {p.name for p in SNAPSHOTS.iterdir()} <= expected


def test_snapshots_name_the_source_relative_to_the_repository():
    for name in SAMPLE_OPTIONS:
        assert f'@"samples/{name}.py":' in (SNAPSHOTS / f"{name}.ssa").read_text()
