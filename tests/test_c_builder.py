"""The C builder: lines at the depth of the scopes they are written in."""
from __future__ import annotations

from mytriton.backends.cuda.c_builder import CBuilder


def test_a_scope_indents_its_block_and_closes_it():
    out = CBuilder(depth=1)
    with out.scope("for (int k = 0; k < 4; ++k) {"):
        out.line("acc += x[k];")
    out.line("y = acc;")
    assert out.lines == ["  for (int k = 0; k < 4; ++k) {", "    acc += x[k];", "  }", "  y = acc;"]


def test_switch_closes_a_block_and_opens_the_next_on_one_line():
    out = CBuilder()
    out.open("if (a) {")
    out.line("x = 1;")
    out.switch("} else {")
    out.line("x = 2;")
    out.close()
    assert out.lines == ["if (a) {", "  x = 1;", "} else {", "  x = 2;", "}"]
