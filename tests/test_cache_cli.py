"""Where the cache lives and ``mytriton cache info | clear`` (docs/cli.md, "The cache")."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from mytriton.cli import main
from mytriton.user_cache import cache_root, clear_cache, own_entries, write_private

CUBIN = "ab" * 32 + ".cubin"
PTX = "cd" * 32 + ".ptx"
GRAMMAR = "grammars/ssa-start-0123456789abcdef01234567.json"
AUTOTUNE = "autotune/" + "ef" * 32 + ".json"


def fill(cache: Path) -> None:
    """Three of mytriton's entries of 10 bytes each, and one of 100."""
    for name in (CUBIN, PTX, GRAMMAR):
        assert write_private(cache / name, b"x" * 10)
    assert write_private(cache / AUTOTUNE, b"y" * 100)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# ---- where it is ---------------------------------------------------------------------------


def test_cache_dir_variable_names_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "mine"


def test_cache_is_under_xdg_cache_home_without_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("MYTRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "mytriton"


def test_cache_is_under_the_home_dot_cache_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("MYTRITON_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "mytriton"


def test_a_relative_xdg_cache_home_is_ignored_as_the_spec_says(monkeypatch, tmp_path):
    monkeypatch.delenv("MYTRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "mytriton"


# ---- cache info ------------------------------------------------------------------------------


def test_cache_info_prints_location_entries_and_size(cache):
    fill(cache)
    result = invoke("cache", "info")
    assert result.exit_code == 0
    assert result.stdout == f"location: {cache}\nentries:  4\nsize:     130 bytes\n"


def test_cache_info_of_a_missing_cache_is_empty(cache):
    result = invoke("cache", "info")
    assert result.exit_code == 0 and "entries:  0" in result.stdout
    assert not cache.exists()


def test_cache_info_counts_only_mytritons_entries(cache):
    fill(cache)
    (cache / "notes.txt").write_text("the user's own file")
    assert len(list(own_entries(cache))) == 4


# ---- cache clear ---------------------------------------------------------------------------


def test_cache_clear_removes_every_entry(cache):
    fill(cache)
    result = invoke("cache", "clear")
    assert result.exit_code == 0
    assert result.stdout == f"removed 4 entries (130 bytes) from {cache}\n"
    assert list(own_entries(cache)) == []


def test_cache_clear_keeps_files_that_are_not_mytritons(cache):
    fill(cache)
    (cache / "notes.txt").write_text("mine")
    (cache / "grammars" / "keep.json").write_text("{}")
    clear_cache(cache)
    assert sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) == [
        "grammars/keep.json", "notes.txt"]


def test_cache_clear_never_follows_a_link_named_like_an_entry(cache, tmp_path):
    fill(cache)
    outside = tmp_path / "outside.cubin"
    outside.write_text("not the cache's")
    os.symlink(outside, cache / ("00" * 32 + ".cubin"))
    clear_cache(cache)
    assert outside.read_text() == "not the cache's"


def test_cache_clear_leaves_the_cache_usable(cache):
    fill(cache)
    clear_cache(cache)
    assert write_private(cache / CUBIN, b"again")


@pytest.mark.parametrize("command", [["cache", "info"], ["cache", "clear"]])
def test_cache_commands_take_no_arguments(command):
    assert invoke(*command, "extra").exit_code == 2
