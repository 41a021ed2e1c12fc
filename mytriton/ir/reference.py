"""The IR reference: every op of ``opdefs.OPS`` as ``mytriton ops`` prints it,
and as docs/ir.md holds it (``mytriton ops --markdown``, ``make docs``).

Everything here is read from the op definitions: an op's operands,
attributes, traits and one-line ``doc``. A trait is any ``bool`` field of
``OpDef``, so a new trait shows up by itself; TRAITS says what each means
(tests/test_ops_reference.py checks that none is missing), as LAYOUT_RULES
does for the layout rules.
"""
from __future__ import annotations

import dataclasses

from mytriton.ir.opdefs import LAYOUT_RULES, OPS, OpDef

# What each boolean trait of an OpDef means, for the reader of a dump.
TRAITS: dict[str, str] = {
    "commutative": "the operands may be swapped (CSE matches `add a, b` with `add b, a`)",
    "elementwise": "computes each result element from the operand elements at the same coordinates "
                   "(operands broadcast)",
    "reads_global": "reads global memory: never merged by CSE nor hoisted by LICM",
    "writes_global": "writes global memory: an effect, kept by DCE; no memory access moves across it",
    "reads_shared": "reads a shared-memory buffer",
    "writes_shared": "writes a shared-memory buffer: an effect",
    "async_shared_write": "its shared-memory writes land later (cp.async): complete at an async_wait, "
                          "visible to the block after the barrier that follows; wgmma reads them unfenced",
    "synchronises": "a barrier between the program's threads: an effect; nothing moves across it",
    "talks_to_host": "prints or stops the kernel while it runs: an effect, never moved",
    "control": "structure (regions and their terminators): kept or dropped by what it holds",
    "allocates": "each execution makes a new buffer: never merged; only at the kernel's top level",
    "reduction": "combines the elements of a tile along an axis",
    "comparison": "compares its operands in their promoted type; the result is boolean",
    "math_function": "an elementwise `tl.<name>(x)` of a float, spelled by the target's math tables",
    "stages_through_scratch": "the CUDA back end writes it through shared scratch whatever its layouts: "
                              "it may carry a scratch_barrier",
    "materialised": "held in registers by the CUDA back end instead of recomputed where it is used",
    "identity": "its result is its first operand's value itself: a back end may read the operand instead",
    "combine": "runs a combine region (2N scalars in, N out) over its N tile operands: reduce and scan",
    "folds": "constant folding evaluates it on literal operands (its NumPy semantics)",
}

# What each layout rule (OpDef.layout_rule) says about the op's tiles.
LAYOUT_RULE_DOCS: dict[str, str] = {
    "elementwise": "tile operands are read in the result's layout (sliced for a lower-rank operand, "
                   "which broadcasts)",
    "expand_dims": "the operand's layout is the result's, sliced along the new axis",
    "load": "as elementwise; the result is held in registers",
    "store": "the value and mask are read in the pointer's layout (for host ops, the other operands "
             "in the first one's)",
    "reduce": "the result's layout is the operand's, sliced along the axis (a combine reduce: every operand "
              "in one layout, every result its slice)",
    "scan": "every operand and result in one layout; the results are held in registers",
    "dot": "the accumulator is in the result's layout; the operands in any",
    "convert": "operand and result in any layouts: the op moves data between threads",
    "none": "no tile operand or result is laid out by a rule (scalars, shared memory, control)",
}

# The sections of the reference, in order: the first whose test an op passes.
_SECTIONS: tuple[tuple[str, str], ...] = (
    ("Control flow", "control"),
    ("Talking to the host", "talks_to_host"),
    ("Shared memory", "shared"),
    ("Global memory", "global"),
    ("Reductions and dot", "reduce"),
    ("Comparisons", "comparison"),
    ("Math functions", "math_function"),
    ("Elementwise", "elementwise"),
    ("Moving elements", "convert"),
    ("Indices and tiles", "other"),
)


def traits(opdef: OpDef) -> list[str]:
    """The op's true boolean traits, in the order OpDef declares them."""
    return [f.name for f in dataclasses.fields(OpDef)
            if f.type in ("bool", bool) and getattr(opdef, f.name) is True]


def boolean_trait_names() -> list[str]:
    return [f.name for f in dataclasses.fields(OpDef) if f.type in ("bool", bool)]


def _details(opdef: OpDef) -> list[str]:
    """The op's non-boolean facts worth reading: which operands are shared
    buffers or the global address, and what the semantics compute in."""
    facts = []
    if opdef.address_operand:
        facts.append(f"address operand: {opdef.address_operand}")
    if opdef.shared_operands:
        facts.append(f"shared-buffer operands: {', '.join(opdef.shared_operands)}")
    if opdef.semantics is not None:
        facts.append(f"computes in: {opdef.computes_in}")
    facts.append("no effect" if opdef.pure else "has an effect")
    return facts


def section_of(opdef: OpDef) -> str:
    tests = {
        "control": opdef.control,
        "talks_to_host": opdef.talks_to_host,
        "shared": opdef.allocates or opdef.reads_shared or opdef.writes_shared or opdef.synchronises,
        "global": opdef.reads_global or opdef.writes_global,
        "reduce": opdef.reduction or opdef.combine or opdef.layout_rule == "dot",
        "comparison": opdef.comparison,
        "math_function": opdef.math_function,
        "elementwise": opdef.elementwise,
        "convert": opdef.layout_rule == "convert",
        "other": True,
    }
    return next(title for title, key in _SECTIONS if tests[key])


def signature(opdef: OpDef) -> str:
    """How the op reads in SSA text: its name, operands (``?``: may be
    ``none``) and attributes (``name=``)."""
    parts = list(opdef.operands) + [f"{a}=" for a in opdef.attrs]
    return f"{opdef.name} {', '.join(parts)}".rstrip()


def text(names: list[str] | None = None) -> str:
    """``mytriton ops``: each op as a signature line and indented facts."""
    lines = []
    for name in names or list(OPS):
        opdef = OPS[name]
        lines.append(signature(opdef))
        lines.append(f"    {opdef.doc}")
        lines.append(f"    traits: {', '.join(traits(opdef)) or '-'}; layout rule: {opdef.layout_rule}")
        lines.append(f"    {'; '.join(_details(opdef))}")
    return "\n".join(lines) + "\n"


def _cell(value: str) -> str:
    """A markdown table cell: pipes escaped, so a doc's ``|x|`` stays one cell."""
    return value.replace("|", "\\|")


def _code(value: str) -> str:
    return f"`{value}`" if value else ""


_INTRO = """\
# The mytriton IR: op reference

<!-- Generated by `mytriton ops --markdown` (`make docs`) from mytriton/ir/opdefs.py; do not edit:
     tests/test_ops_reference.py fails when this file is stale. -->

Every op of the tree IR and the SSA is one definition in `mytriton/ir/opdefs.py`:
its operands, attributes, traits and type rule, and for the ops that compute on
elements the NumPy semantics that constant folding and the interpreter share.
This page lists them; `mytriton ops` prints the same from the command line, and
docs/architecture.md ("The text formats") shows whole kernels.

In SSA an op reads `%r = NAME operand, ..., attr=value, ... : result-type @line:col`:
operands are values (`%3`), kernel parameters (`n`), literals (`1.0`, `-inf`, `true`)
or `none` for an optional operand left out (marked `?` below); attributes follow as
`name=value` (integers, dtype names, strings, tuples). The tree IR writes the same
op as a call, `NAME(operand, ..., attr=value)@line:col`. Types are scalars (`i32`,
`f16`, `bool`), `ptr<f32>`, tiles `vector<256 x f32>` and `block<64x32 x f32>`, and
shared buffers `shared<64x32 x f32>`; after the layouts stage a tile type names its
layout (`vector<256 x f32, #blocked0>`), defined once before the kernel.
`for`, `if` and `while` hold regions, which `yield` (and `condition`) end.
"""


def markdown(names: list[str] | None = None) -> str:
    """docs/ir.md: the traits, the layout rules, then the ops (or the ones
    named) by section."""
    out = [_INTRO]
    out.append("## Traits\n")
    out.append("Passes ask an op's traits, never its name. A trait an op has is listed in its row.\n")
    out.append("| trait | meaning |\n| --- | --- |")
    out += [f"| `{name}` | {_cell(TRAITS[name])} |" for name in boolean_trait_names()]
    out.append("\n## Layout rules\n")
    out.append("How the layouts of an op's tile operands and results relate "
               "(the layouts stage and the verifier read them).\n")
    out.append("| rule | meaning |\n| --- | --- |")
    out += [f"| `{rule}` | {_cell(LAYOUT_RULE_DOCS[rule])} |" for rule in LAYOUT_RULES]
    out.append("\n## Ops\n")
    by_section: dict[str, list[OpDef]] = {title: [] for title, _ in _SECTIONS}
    for opdef in (OPS[name] for name in names or list(OPS)):
        by_section[section_of(opdef)].append(opdef)
    for title, _ in _SECTIONS:
        if not by_section[title]:
            continue
        out.append(f"### {title}\n")
        out.append("| op | operands | attributes | traits | layout rule | what it does |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for opdef in by_section[title]:
            out.append("| " + " | ".join((
                f"`{opdef.name}`",
                _cell(", ".join(f"`{o}`" for o in opdef.operands)),
                ", ".join(f"`{a}`" for a in opdef.attrs),
                ", ".join(traits(opdef)),
                _code(opdef.layout_rule),
                _cell(opdef.doc),
            )) + " |")
        out.append("")
    return "\n".join(out)
