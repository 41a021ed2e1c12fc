"""parse_type: a kernel parameter's type (a scalar or a pointer to one, as a
CUDA file's header spells it) is looked up without building the grammar's
parser; the lookup gives what the grammar gives, and every other type still
goes through the grammar."""
from __future__ import annotations

import pytest

from mytriton.diagnostics import CompileError
from mytriton.ir import text_common
from mytriton.ir.text_common import TextReader, parse_text, parse_type
from mytriton.types import BlockType, PointerType


def through_the_grammar(text: str):
    return TextReader("<t>").type(parse_text("common", text, "<t>", start="type"))


@pytest.mark.parametrize("text", sorted(text_common._PARAMETER_TYPES))
def test_a_looked_up_parameter_type_is_what_the_grammar_reads(text):
    looked_up = parse_type(text)
    assert looked_up == through_the_grammar(text) and str(looked_up) == text


def test_a_pointer_type_is_looked_up():
    assert parse_type("ptr<f16>") == PointerType(parse_type("f16"))


def test_a_tile_type_still_goes_through_the_grammar():
    assert isinstance(parse_type("vector<4 x i32>"), BlockType)


def test_a_misspelled_type_is_still_refused():
    with pytest.raises(CompileError):
        parse_type("ptr<f17>")
