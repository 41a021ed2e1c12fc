"""The IR reference: ``mytriton ops`` and docs/ir.md, both read from the op
definitions (mytriton/ir/opdefs.py, rendered by mytriton/ir/reference.py).

docs/ir.md is generated (``make docs``, which runs ``mytriton ops --markdown
-o docs/ir.md``); a test here fails when it no longer matches the table.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from mytriton.ir import reference
from mytriton.ir.opdefs import LAYOUT_RULES, OPS

DOCS_IR = ROOT / "docs" / "ir.md"


def cli(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("MYTRITON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "mytriton.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=60)


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_a_one_line_doc(name):
    doc = OPS[name].doc
    assert doc.strip(), f"op '{name}' has no doc= one-liner in mytriton/ir/opdefs.py"
    assert "\n" not in doc and doc == doc.strip()


def test_every_boolean_trait_says_what_it_means():
    assert set(reference.boolean_trait_names()) == set(reference.TRAITS), \
        "add the new OpDef trait to reference.TRAITS (and run make docs)"


def test_every_layout_rule_says_what_it_means():
    assert set(LAYOUT_RULES) == set(reference.LAYOUT_RULE_DOCS)


def test_traits_are_the_ops_true_boolean_fields():
    assert reference.traits(OPS["load"]) == ["reads_global", "materialised"]
    assert reference.traits(OPS["add"]) == ["commutative", "elementwise", "folds"]
    assert reference.traits(OPS["program_id"]) == []


def test_ops_lists_every_op_with_its_doc_and_traits():
    result = cli("ops")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    headers = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert headers == list(OPS)
    for name, opdef in OPS.items():
        assert f"    {opdef.doc}" in lines


def test_ops_names_one_op_with_operands_attributes_traits_and_layout_rule():
    result = cli("ops", "load", "full")
    assert result.returncode == 0
    assert result.stdout == (
        "load ptr, mask?, other?\n"
        f"    {OPS['load'].doc}\n"
        "    traits: reads_global, materialised; layout rule: load\n"
        "    address operand: ptr; no effect\n"
        "full value, shape=, dtype=\n"
        f"    {OPS['full'].doc}\n"
        "    traits: -; layout rule: elementwise\n"
        "    no effect\n")


def test_an_unknown_op_is_a_usage_error_naming_it():
    result = cli("ops", "load", "no_such\x1bop")
    assert result.returncode == 2
    assert "no op named 'no_such\\x1bop'" in result.stderr
    assert result.stdout == ""


def test_ops_loads_neither_numpy_nor_the_driver():
    code = ("import sys\nfrom mytriton.cli import main\n"
            "try:\n    main(['ops', '--markdown'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'mytriton.runtime.driver_api') if m in sys.modules), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_markdown_rows_escape_pipes_in_docs():
    row = next(line for line in reference.markdown(["abs"]).splitlines() if line.startswith("| `abs`"))
    assert "\\|x\\|" in row and row.count(" | ") == 5


def test_markdown_sorts_ops_into_sections_by_traits():
    assert reference.section_of(OPS["for"]) == "Control flow"
    assert reference.section_of(OPS["store"]) == "Global memory"
    assert reference.section_of(OPS["copy_to_shared"]) == "Shared memory"
    assert reference.section_of(OPS["sum"]) == "Reductions and dot"
    assert reference.section_of(OPS["exp"]) == "Math functions"
    assert reference.section_of(OPS["trans"]) == "Moving elements"


def test_docs_ir_md_is_current():
    assert DOCS_IR.read_text(encoding="utf-8") == reference.markdown(), \
        "docs/ir.md is stale: run `make docs` (mytriton ops --markdown -o docs/ir.md)"


def test_ops_markdown_writes_docs_ir_md(tmp_path):
    result = cli("ops", "--markdown", "-o", str(tmp_path / "ir.md"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ir.md").read_text(encoding="utf-8") == DOCS_IR.read_text(encoding="utf-8")


def test_shell_completion_offers_op_names():
    code = "from mytriton.cli import main; main(prog_name='mytriton')"
    env = dict(os.environ, _MYTRITON_COMPLETE="bash_complete", COMP_WORDS="mytriton ops cmp_l", COMP_CWORD="2",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.split() == ["plain,cmp_lt", "plain,cmp_le"]
