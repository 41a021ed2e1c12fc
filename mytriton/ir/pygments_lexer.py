"""Pygments lexers for mytriton's IR text: the SSA (also laid out) and the tree IR.

Registered as Pygments plugins (pyproject.toml, ``pygments.lexers`` entry
points), so ``mytriton compile k.py --emit=layouts | pygmentize -l
mytriton-ssa`` and documentation tools (Sphinx, MkDocs) highlight dumps by
name: ``mytriton-ssa`` (``*.ssa``) and ``mytriton-tree`` (``*.tree``).
Install Pygments with ``pip install 'mytriton[pygments]'``.

The tokens follow the grammars (grammars/common.lark, ssa.lark, tree.lark):
keywords, types, layouts (``#blocked0``), values (``%3``) and bindings
(``$x``), op names, attributes (``axis=``), literals, strings and locations
(``@12:5``). Op names are found by position (after ``=`` or at the start of a
statement in SSA, before ``(`` in the tree IR), so a new op needs no change
here. This module imports Pygments alone: no NumPy, no Lark.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace,
)

__all__ = ["MytritonSSALexer", "MytritonTreeLexer"]

# A Python identifier (non-ASCII too), as the grammars' NAME.
_NAME = r"(?!\d)\w+"

# The words the grammars spell as literals ("kernel", "for", ...).
KEYWORDS = ("kernel", "tree", "constexpr", "num_warps", "for", "in", "range", "iter_args", "if", "else",
            "while", "do", "condition", "yield", "let", "captures", "sha256", "reduce", "scan", "combine")
# Type constructors (followed by <) and scalar type names (grammars: NAME in a type).
TYPE_CONSTRUCTORS = ("ptr", "vector", "block", "shared")
SCALAR_TYPES = ("bool", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
                "f64")
# Layout attributes (mytriton/ir/layout_attributes.py), followed by <.
LAYOUT_KINDS = ("blocked", "slice", "padded_shared", "nvmma_shared", "mma", "dot_operand")
CONSTANTS = ("true", "false", "none")


class _IRLexer(RegexLexer):
    """What the tree IR and the SSA share (grammars/common.lark)."""

    tokens = {
        "common": [
            # Newlines apart, so that a statement's first word is still at ^.
            (r"\n", Whitespace),
            (r"[ \t]+(?!x[ \t])", Whitespace),
            (r"([ \t]+)(x)([ \t]+)", bygroups(Whitespace, Punctuation, Whitespace)),  # vector<256 x f32>
            (r"//[^\n]*", Comment.Single),
            # Locations: @"file.py":7:1 in the header, @12:5 on every op.
            (r'(@)("(?:[^"\\]|\\.)*")(:\d+:\d+)', bygroups(Comment.Special, String.Double, Comment.Special)),
            (r"@\d+:\d+", Comment.Special),
            (r'"(?:[^"\\]|\\.)*"', String.Double),
            (r"#" + _NAME, Name.Label),
            (words(TYPE_CONSTRUCTORS, suffix=r"(?=\s*<)"), Keyword.Type),
            (words(LAYOUT_KINDS, suffix=r"(?=\s*<)"), Name.Builtin),
            (words(SCALAR_TYPES, prefix=r"(?<![\w%$#.])", suffix=r"\b"), Keyword.Type),
            (r"\d+(?:x\d+)+\b", Number.Integer),  # tile dimensions: 64x32
            (words(CONSTANTS, prefix=r"(?<![\w%$#.])", suffix=r"\b"), Keyword.Constant),
            (r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)", Number.Float),
            (r"-?(?:inf|nan)\b", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"(" + _NAME + r")(\s*)(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (r"->", Operator),
            (r"=", Operator),
            (r"[()\[\]{}<>,:]", Punctuation),
            (_NAME, Name),
            (r".", Text),
        ],
    }


class MytritonSSALexer(_IRLexer):
    """mytriton's typed SSA (``mytriton lower``, ``opt``, ``layouts``...)."""

    name = "mytriton SSA"
    aliases = ["mytriton-ssa", "mytriton"]
    filenames = ["*.ssa"]
    mimetypes = ["text/x-mytriton-ssa"]

    tokens = {
        "root": [
            # kernel NAME(
            (r"^(kernel)(\s+)(" + _NAME + r")", bygroups(Keyword, Whitespace, Name.Function)),
            # %3, %4 = NAME ... at a line's start (iter_args(%3 = %1) is no op); NAME may be
            # a keyword (for, if, while).
            (r"^([ \t]*)((?:%[\w.]+[ \t]*,[ \t]*)*%[\w.]+)([ \t]*)(=)([ \t]*)(?=(?:for|if|while)\b)",
             bygroups(Whitespace, Name.Variable, Whitespace, Operator, Whitespace)),
            (r"^([ \t]*)((?:%[\w.]+[ \t]*,[ \t]*)*%[\w.]+)([ \t]*)(=)([ \t]*)(" + _NAME + r")",
             bygroups(Whitespace, Name.Variable, Whitespace, Operator, Whitespace, Name.Function)),
            # A statement without results: `store %9, %14, %5 @14:5`, `barrier @24:16`.
            (r"^([ \t]*)(?!(?:" + "|".join(KEYWORDS) + r")\b)(" + _NAME + r")(?=[ \t]+[%@\w\-\"(])",
             bygroups(Whitespace, Name.Function)),
            (words(KEYWORDS, prefix=r"(?<![\w%$#.])", suffix=r"\b"), Keyword),
            (r"%[\w.]+", Name.Variable),
            include("common"),
        ],
    }


class MytritonTreeLexer(_IRLexer):
    """mytriton's expression-tree IR (``mytriton trace``)."""

    name = "mytriton tree IR"
    aliases = ["mytriton-tree"]
    filenames = ["*.tree"]
    mimetypes = ["text/x-mytriton-tree"]

    tokens = {
        "root": [
            (r"^(tree)(\s+)(" + _NAME + r")", bygroups(Keyword, Whitespace, Name.Function)),
            (words(("constexpr", "range", "iter_args", "captures"), suffix=r"(?=\()"), Keyword),
            (r"(" + _NAME + r")(?=\()", Name.Function),
            (words(KEYWORDS, prefix=r"(?<![\w%$#.])", suffix=r"\b"), Keyword),
            (r"\$\w[\w.]*", Name.Variable),
            include("common"),
        ],
    }
