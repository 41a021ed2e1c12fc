"""The expression-tree IR that tracing produces.

Expressions are untyped trees (DAGs: a subexpression bound to a Python name
is shared by identity). A region is a list of statements: stores, loops,
``Let`` anchors that fix where a load happens relative to stores, and a loop
body's final ``Yield``. Types are inferred later, when lowering to SSA.

A loop is a closed region, as in the SSA: a ``ForRange`` lists the outer
expressions its body reads (``captures``), the carried values' initial
expressions, the body's view of them (``LoopCarry``) and what each iteration
yields, and the values visible after the loop (``LoopResult``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from mytriton.diagnostics import Location
from mytriton.types import Type

Literal = bool | int | float


class Expr:
    """A tree expression; compared by identity."""

    hint: str | None = None  # the Python name it was first bound to, for printing


@dataclass(eq=False)
class ParamRef(Expr):
    name: str


@dataclass(eq=False)
class Node(Expr):
    op: str
    args: tuple["Arg", ...]
    attrs: dict[str, Any]
    loc: Location | None
    hint: str | None = None


@dataclass(eq=False)
class LoopIndex(Expr):
    hint: str | None = None


@dataclass(eq=False)
class LoopCarry(Expr):
    index: int
    hint: str | None = None


@dataclass(eq=False)
class LoopResult(Expr):
    loop: "ForRange | WhileLoop | IfStmt | CombineStmt"  # also the results of a while loop, an if, a reduce
    index: int
    hint: str | None = None


Arg = Expr | Literal | None  # None: an absent operand (no mask)


@dataclass(eq=False)
class Let:
    """Anchors ``node`` at this point of its region (loads, for ordering)."""

    node: Node


@dataclass(eq=False)
class Effect:
    """A statement with a side effect (a store)."""

    node: Node


@dataclass(eq=False)
class Yield:
    values: tuple[Arg, ...]
    loc: Location | None


@dataclass(eq=False)
class ForRange:
    index: LoopIndex
    start: Arg
    stop: Arg
    step: Arg
    captures: tuple[Expr, ...]
    body: list["Stmt"]
    carried_inputs: tuple[Arg, ...]
    carried_args: tuple[LoopCarry, ...]
    results: tuple[LoopResult, ...] = ()
    loc: Location | None = None
    attrs: dict[str, Any] = field(default_factory=dict)  # tl.range's options (opdefs.LOOP_ATTRS)

    @property
    def carried_outputs(self) -> tuple[Arg, ...]:
        last = self.body[-1] if self.body else None
        return last.values if isinstance(last, Yield) else ()


@dataclass(eq=False)
class IfStmt:
    """A runtime ``if``: each branch ends with a ``Yield`` of the values the
    names it assigns hold after it (``results``: what the kernel reads there)."""

    condition: Arg
    captures: tuple[Expr, ...]
    then_body: list["Stmt"]
    else_body: list["Stmt"]
    results: tuple[LoopResult, ...] = ()
    loc: Location | None = None


@dataclass(eq=False)
class WhileLoop:
    """A runtime ``while``: carried values (``LoopCarry``) visible in both the
    condition region (``before``, then ``condition``) and the body (ending
    with a ``Yield`` of the next carried values)."""

    captures: tuple[Expr, ...]
    carried_inputs: tuple[Arg, ...]
    carried_args: tuple[LoopCarry, ...]
    before: list["Stmt"]
    condition: Arg
    body: list["Stmt"]
    results: tuple[LoopResult, ...] = ()
    loc: Location | None = None

    @property
    def carried_outputs(self) -> tuple[Arg, ...]:
        last = self.body[-1] if self.body else None
        return last.values if isinstance(last, Yield) else ()


@dataclass(eq=False)
class CombineStmt:
    """A ``reduce`` or ``scan`` (tl.reduce, tl.associative_scan): its tiles,
    its attributes, and its closed combine region, whose arguments
    (``LoopCarry``: N left scalars, then N right ones) only it sees and whose
    body ends with a ``Yield`` of N combined scalars; ``results`` are the N
    reduced or scanned tiles."""

    op: str
    inputs: tuple[Arg, ...]
    attrs: dict[str, Any]
    args: tuple[LoopCarry, ...]
    body: list["Stmt"]
    results: tuple[LoopResult, ...] = ()
    loc: Location | None = None


Stmt = Let | Effect | Yield | ForRange | IfStmt | WhileLoop | CombineStmt


@dataclass
class TreeKernel:
    name: str
    params: list[tuple[str, Type]]
    constexprs: dict[str, Any]
    body: list[Stmt]
    loc: Location
    param_refs: dict[str, ParamRef] = field(default_factory=dict)
    digest: str | None = None  # short sha256 of the source text (diagnostics may then quote the file)
    # Facts the launch specialised on, by parameter (text_common.PARAM_ATTRS).
    param_attrs: dict[str, dict[str, int]] = field(default_factory=dict)

    def param(self, name: str) -> ParamRef:
        ref = self.param_refs.get(name)
        if ref is None:
            ref = self.param_refs[name] = ParamRef(name)
        return ref


def children(expr: Arg) -> Iterator[Expr]:
    if isinstance(expr, Node):
        for arg in expr.args:
            if isinstance(arg, Expr):
                yield arg


def stmt_roots(stmt: Stmt) -> Iterator[Arg]:
    """The expressions a statement reads in its own region (for a loop or an
    if: its header and captures, not its regions)."""
    if isinstance(stmt, (Let, Effect)):
        yield stmt.node
    elif isinstance(stmt, Yield):
        yield from stmt.values
    elif isinstance(stmt, IfStmt):
        yield stmt.condition
        yield from stmt.captures
    elif isinstance(stmt, WhileLoop):
        yield from stmt.captures
        yield from stmt.carried_inputs
    elif isinstance(stmt, CombineStmt):
        yield from stmt.inputs
    else:
        yield stmt.start
        yield stmt.stop
        yield stmt.step
        yield from stmt.captures
        yield from stmt.carried_inputs
