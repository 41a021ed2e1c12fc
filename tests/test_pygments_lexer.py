"""The Pygments lexers for the IR text (mytriton/ir/pygments_lexer.py).

Pygments is optional (the ``pygments`` extra; the ``test`` extra brings it),
so these tests skip where it is absent. The entry points are registered by
installing the package (``pip install -e .``).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pygments = pytest.importorskip("pygments")

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # noqa: E402
from pygments.token import Comment, Error, Keyword, Name, Number, String, Text  # noqa: E402

from mytriton.ir.pygments_lexer import MytritonSSALexer, MytritonTreeLexer  # noqa: E402

SSA_FILES = sorted((ROOT / "tests" / "snapshots").glob("*.ssa")) + sorted((ROOT / "tests" / "lit").rglob("*.ssa"))
TREE_FILES = sorted((ROOT / "tests" / "lit").rglob("*.tree"))

SSA = """\
#blocked0 = blocked<size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[4], order=[0]>
kernel add_kernel(x_ptr: ptr<f32>, n: i32) constexpr(BLOCK = 512) num_warps=4 @"add.py":7:1 {
  %0 = program_id axis=0 : i32 @8:11
  %1 = arange start=0, end=512 : vector<512 x i32, #blocked0> @9:29
  %2 = addptr x_ptr, %1 : vector<512 x ptr<f32>, #blocked0> @11:17
  %3 = load %2, none, -inf : vector<512 x f32, #blocked0> @11:9
  %4, %5 = for %6 in range(0, n, 1) iter_args(%7 = 0.0, %8 = true) : f32, bool @12:5 {
    yield %7, %8 @12:5
  }
  store %2, %3, none @13:5
}
"""

TREE = """\
tree k(x: ptr<f32>, n: i32) constexpr(BLOCK = 256) @"k.py":1:1 sha256="90bec116c5a1bfe7" {
  let $offsets = add(program_id(axis=0)@8:11, arange(start=0, end=256)@9:29)@9:15
  for $i in range(0, n, 1) captures($offsets) iter_args($acc = 0.0) -> ($acc.1) @9:5 {
    yield add($acc, 1.5e-3)@10:9 @9:5
  }
  store(add(x, $offsets)@13:14, $acc.1, none)@13:5
}
"""


def tokens(lexer, text: str) -> list[tuple[object, str]]:
    return [(kind, value) for kind, value in lexer.get_tokens(text) if value.strip()]


def kind_of(lexer, text: str, value: str):
    kinds = {kind for kind, v in tokens(lexer, text) if v == value}
    assert len(kinds) == 1, f"{value!r} lexed as {kinds}"
    return kinds.pop()


@pytest.mark.parametrize("path", SSA_FILES + TREE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dump_in_the_tests_lexes_without_errors_or_unclassified_text(path):
    lexer = MytritonTreeLexer() if path.suffix == ".tree" else MytritonSSALexer()
    text = path.read_text(encoding="utf-8")
    lexed = list(lexer.get_tokens(text))
    assert "".join(value for _, value in lexed) == (text if text.endswith("\n") else text + "\n")
    assert [(k, v) for k, v in lexed if k in (Error, Text) and v.strip()] == []


@pytest.mark.parametrize("value, kind", [
    ("#blocked0", Name.Label),
    ("blocked", Name.Builtin),
    ("size_per_thread", Name.Attribute),
    ("kernel", Keyword),
    ("add_kernel", Name.Function),
    ("ptr", Keyword.Type),
    ("f32", Keyword.Type),
    ("vector", Keyword.Type),
    ("constexpr", Keyword),
    ("%0", Name.Variable),
    ("program_id", Name.Function),
    ("axis", Name.Attribute),
    ("@8:11", Comment.Special),
    ('"add.py"', String.Double),
    ("512", Number.Integer),
    ("-inf", Number.Float),
    ("0.0", Number.Float),
    ("none", Keyword.Constant),
    ("true", Keyword.Constant),
    ("for", Keyword),
    ("iter_args", Keyword),
    ("yield", Keyword),
    ("store", Name.Function),
    ("x_ptr", Name),
])
def test_ssa_tokens(value, kind):
    assert kind_of(MytritonSSALexer(), SSA, value) == kind


@pytest.mark.parametrize("value, kind", [
    ("tree", Keyword),
    ("k", Name.Function),
    ("let", Keyword),
    ("$offsets", Name.Variable),
    ("$acc.1", Name.Variable),
    ("add", Name.Function),
    ("program_id", Name.Function),
    ("store", Name.Function),
    ("captures", Keyword),
    ("range", Keyword),
    ("sha256", Keyword),
    ("1.5e-3", Number.Float),
    ("@9:5", Comment.Special),
])
def test_tree_tokens(value, kind):
    assert kind_of(MytritonTreeLexer(), TREE, value) == kind


def test_lexers_are_registered_as_pygments_plugins():
    assert isinstance(get_lexer_by_name("mytriton-ssa"), MytritonSSALexer)
    assert isinstance(get_lexer_by_name("mytriton-tree"), MytritonTreeLexer)
    assert isinstance(get_lexer_for_filename("kernel.ssa"), MytritonSSALexer)
    assert isinstance(get_lexer_for_filename("kernel.tree"), MytritonTreeLexer)


def test_pygmentize_highlights_a_dump_from_the_cli():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    dump = subprocess.run([sys.executable, "-m", "mytriton.cli", "compile", "samples/add.py", "--emit=layouts"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=True).stdout
    html = subprocess.run([sys.executable, "-m", "pygments", "-l", "mytriton-ssa", "-f", "html"], input=dump,
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert html.returncode == 0, html.stderr
    assert '<span class="nv">%0</span>' in html.stdout  # Name.Variable
    assert '<span class="nl">#blocked0</span>' in html.stdout  # Name.Label
    assert '<span class="nf">program_id</span>' in html.stdout  # Name.Function


def test_the_lexer_module_loads_neither_numpy_nor_lark():
    code = ("import sys, mytriton.ir.pygments_lexer\n"
            "print(sorted(m for m in ('numpy', 'lark', 'mytriton.runtime.driver_api') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.stdout.strip() == "[]", result.stderr
