"""Reading IR never unpickles anything: Lark's grammar cache stays off.

Lark's ``cache=True`` keeps a pickled parser in the shared temporary
directory under a predictable name and loads it on the next start without
checking who wrote it; a file planted there by another user would run in
the compiler. mytriton builds each parser once per process, or loads its
tables as JSON from the user's private cache (tests/test_user_cache.py).
"""
from __future__ import annotations

import os
import subprocess
import sys

import lark

from conftest import ROOT
from mytriton.ir import grammar

SSA = (ROOT / "tests" / "snapshots" / "add.ssa").read_text()


def test_parsers_are_built_without_a_lark_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))  # nothing to load: they are built
    asked = []
    original = lark.Lark.open

    def spy(*args, **kwargs):
        asked.append(kwargs.get("cache", False))
        return original(*args, **kwargs)

    monkeypatch.setattr(lark.Lark, "open", spy)
    grammar.parser.cache_clear()
    try:
        grammar.parser("ssa")
        grammar.parser("tree")
    finally:
        grammar.parser.cache_clear()
    assert asked == [False, False]


def test_reading_ir_writes_nothing_in_the_temporary_directory(tmp_path):
    # A fresh process with its own temporary directory: a Lark cache would
    # appear there (and be trusted by the next run).
    env = dict(os.environ, TMPDIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-m", "mytriton.cli", "verify"], input=SSA.encode(),
                            capture_output=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert os.listdir(tmp_path) == []
