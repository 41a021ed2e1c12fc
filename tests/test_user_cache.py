"""The user's cache (nvcc builds, grammar tables) trusts only private files.

A file is read only when it is a regular file owned by this user, in a
folder owned by this user, neither writable by anyone else: an entry planted
by another user, or reached through a link, is ignored and rebuilt. Grammar
tables are JSON, never pickles.
"""
from __future__ import annotations

import json
import os

import lark
import pytest

from conftest import ROOT
from mytriton.ir import grammar
from mytriton.user_cache import read_private, write_private

SSA = (ROOT / "tests" / "snapshots" / "add.ssa").read_text()
NOBODY = 65534


@pytest.fixture
def grammar_cache(cache):
    """An empty cache, and parsers built again from it."""
    grammar.parser.cache_clear()
    yield cache
    grammar.parser.cache_clear()


def test_a_private_file_is_read(tmp_path):
    assert write_private(tmp_path / "d" / "entry", b"data")
    assert read_private(tmp_path / "d" / "entry") == b"data"
    assert oct(os.stat(tmp_path / "d" / "entry").st_mode & 0o777) == "0o600"
    assert oct(os.stat(tmp_path / "d").st_mode & 0o777) == "0o700"


def test_a_file_others_may_write_is_ignored(tmp_path):
    write_private(tmp_path / "d" / "entry", b"data")
    os.chmod(tmp_path / "d" / "entry", 0o622)
    assert read_private(tmp_path / "d" / "entry") is None


def test_a_file_in_a_folder_others_may_write_is_ignored(tmp_path):
    write_private(tmp_path / "d" / "entry", b"data")
    os.chmod(tmp_path / "d", 0o777)
    assert read_private(tmp_path / "d" / "entry") is None


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a file to another user")
def test_a_file_of_another_user_is_ignored(tmp_path):
    write_private(tmp_path / "d" / "entry", b"data")
    os.chown(tmp_path / "d" / "entry", NOBODY, NOBODY)
    assert read_private(tmp_path / "d" / "entry") is None


def test_a_link_is_not_followed(tmp_path):
    write_private(tmp_path / "d" / "target", b"data")
    os.symlink(tmp_path / "d" / "target", tmp_path / "d" / "entry")
    assert read_private(tmp_path / "d" / "entry") is None


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert not write_private(tmp_path / "d" / "entry", b"data")
    assert os.listdir(tmp_path / "d") == []


def test_grammar_tables_are_kept_as_json_and_loaded_without_rebuilding(grammar_cache, monkeypatch):
    first = grammar.parser("ssa").parse(SSA)
    (entry,) = (grammar_cache / "grammars").iterdir()
    assert isinstance(json.loads(entry.read_bytes()), dict)
    grammar.parser.cache_clear()
    monkeypatch.setattr(lark.Lark, "open", lambda *a, **k: pytest.fail("rebuilt the grammar"))
    assert grammar.parser("ssa").parse(SSA) == first


def test_a_damaged_grammar_entry_is_rebuilt(grammar_cache):
    grammar.parser("ssa")
    (entry,) = (grammar_cache / "grammars").iterdir()
    entry.write_bytes(b'{"d": [["data", 1]]}')
    grammar.parser.cache_clear()
    assert grammar.parser("ssa").parse(SSA)
    assert json.loads(entry.read_bytes()) != {"d": [["data", 1]]}


def test_errors_read_the_same_from_loaded_tables(grammar_cache):
    from mytriton.diagnostics import CompileError
    from mytriton.ir.ssa_text import parse_kernel

    bad = SSA.replace("program_id axis=0", "program_id axis=0,")
    messages = []
    for _ in range(2):  # built, then loaded from the cache
        grammar.parser.cache_clear()
        with pytest.raises(CompileError) as err:
            parse_kernel(bad, "bad.ssa")
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "expected" in messages[0]
