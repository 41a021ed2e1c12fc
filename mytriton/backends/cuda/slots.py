"""Evaluating tiles inside one slot loop.

A slot loop runs over the slots of one layout (its *domain*): in iteration
``k`` each thread handles one element, at coordinates the layout gives.
Pure tile ops are computed right there, at the coordinates the statement
needs (broadcasting maps them: a ``[BM, 1]`` operand of a ``[BM, BN]`` sum is
read at the row, with column 0). Materialized tiles are read from the
registers of the thread that holds them when its layout places that element
on this thread (the usual case), or else from a copy in shared memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mytriton.backends.cuda.c_builder import SourcedLines
from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.expressions import Arg, CValue, render
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, Layout
from mytriton.ir import opdefs
from mytriton.ir.analysis import is_materialized, is_tile
from mytriton.ir.ssa import Const, Op, Operand, Value
from mytriton.types import PointerType, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


@dataclass(frozen=True)
class Coord:
    """One coordinate of a tile element: along domain parent dimension
    ``dim`` (None: a broadcast dimension, always 0) as the C expression ``expr``."""

    dim: int | None
    expr: str


ZERO = Coord(None, "0")


@dataclass
class SlotLoop:
    emitter: "EmitContext"
    domain: Layout
    index: str = "k"
    lines: list[str] = field(init=False)  # each remembers its Python line (c_builder.SourcedLines)
    memo: dict[tuple, Arg] = field(default_factory=dict)
    coord_vars: dict[int, str] = field(default_factory=dict)
    coord_defs: list[tuple[str, str]] = field(default_factory=list)  # (name, definition), emitted if used
    used_coords: set[str] = field(default_factory=set)  # the coordinate variables some line reads
    locals: set[str] = field(default_factory=set)  # the names this loop's lines define
    staged: list[Value] = field(default_factory=list)  # tiles this loop reads from shared memory
    pads: dict[Value, int] = field(default_factory=dict)  # a staged tile's padding after each row (elements)
    columns: set[Value] = field(default_factory=set)  # staged tiles copied column-major (scratch_columns)
    # staged tiles read at this loop's own coordinates: the thread's part of each position
    # (the emitter declares a pointer there before the loop; each read adds the slot's part)
    thread_reads: dict[Value, str] = field(default_factory=dict)
    # The loop visits every step-th slot: a loop whose one statement moves a
    # run of slots at once (a vector read of scratch) need not unroll the
    # slots between, which NVVM would otherwise unroll and then delete.
    step: int = 1

    def __post_init__(self) -> None:
        self.lines = SourcedLines(self.emitter.out)
        self.parent_name = self.emitter.parent_name(self.domain.parent)
        self.positions = {p: f"{self.parent_name}_p{p}" for p in range(self.domain.parent.rank)}
        self.digits = self.domain.digits(self.index)

    # ---- the domain's own coordinates ------------------------------------------------------
    def coords(self) -> list[Coord]:
        out = []
        for p, extent in zip(self.domain.dims, self.domain.shape):
            out.append(Coord(p, self.coord_var(p)) if extent > 1 else ZERO)
        return out

    def coord_var(self, p: int) -> str:
        if p not in self.coord_vars:
            name = f"c{p}"
            expr = self.domain.parent.coordinate(p, self.digits[p], self.positions[p])
            # Index arithmetic: from the Python line of the op it is first worked out for.
            self.coord_defs.append((name, self.emitter.out.sourced(f"const int {name} = {expr};")))
            self.coord_vars[p] = name
        return self.coord_vars[p]

    def split_coords(self) -> tuple[list[str], list[str]] | None:
        """Each coordinate as this thread's part and the slot's, where the
        layout's coordinates are their sums (no copies wrapped around the
        shape): the thread's position at slot 0, and the slot's digits at
        position 0; None where a dimension wraps."""
        parent = self.domain.parent
        thread, slot = [], []
        for p, extent in zip(self.domain.dims, self.domain.shape):
            if extent == 1:
                thread.append("0")
                slot.append("0")
                continue
            if parent.replicated(p):
                return None
            thread.append(parent.coordinate(p, "0", self.positions[p]))
            slot.append(parent.coordinate(p, self.digits[p], "0"))
        return thread, slot

    def use(self, coord: Coord) -> str:
        """``coord`` as C, for a line of this loop (which then declares it)."""
        if coord.dim is not None:
            self.used_coords.add(coord.expr)
        return coord.expr

    def body(self) -> list[str]:
        """The loop body: the coordinates it uses, then its statements."""
        used = [text for name, text in self.coord_defs if name in self.used_coords]
        return used + self.lines

    def owner(self) -> str | None:
        return self.domain.owner(self.index, self.positions)

    # ---- values at coordinates ------------------------------------------------------------------
    def value(self, operand: Operand, coords: list[Coord]) -> Arg:
        if operand is None or isinstance(operand, Const):
            return operand
        if not is_tile(operand):
            return CValue(self.emitter.scalar_ref(operand), element_of(operand.type))
        key = (operand, tuple(coords))
        if key in self.memo:
            return self.memo[key]
        if is_materialized(operand) or operand in self.emitter.held:
            result = self.read(operand, coords)
        else:
            result = self.compute(operand.op, coords)
        self.memo[key] = result
        return result

    def define(self, value: Value, expr: str, coords: list[Coord]) -> CValue:
        """Bind one element of ``value`` to a local (named after its SSA value)."""
        name = self.emitter.local_name(value, self)
        element = element_of(value.type)
        const = "" if isinstance(element, PointerType) else "const "
        op = getattr(value, "op", None)
        with self.emitter.out.at(op.loc.line if op is not None and op.loc else None):
            self.lines.append(f"{const}{c_element(value.type)} {name} = {expr};")
        self.locals.add(name)
        result = CValue(name, element)
        self.memo[(value, tuple(coords))] = result
        return result

    def compute(self, op: Op, coords: list[Coord]) -> CValue:
        result = op.results[0]
        if op.name == "arange":
            start = op.attrs["start"]
            coord = self.use(coords[0])
            expr = coord if not start else f"({start} + {coord})"
            return self.define(result, expr, coords)
        args = [self.value(o, self.operand_coords(op, o, coords)) for o in op.operands]
        if op.name == "expand_dims":
            return args[0]  # the same element, one more (broadcast) coordinate
        return self.define(result, render(op, args), coords)

    def operand_coords(self, op: Op, operand: Operand, coords: list[Coord]) -> list[Coord]:
        if not is_tile(operand):
            return []
        if op.name == "expand_dims":
            axis = op.attrs["axis"]
            return coords[:axis] + coords[axis + 1:]
        shape = operand.type.shape
        aligned = coords[len(coords) - len(shape):]
        return [c if extent > 1 else ZERO for c, extent in zip(aligned, shape)]

    def remapped(self, op: Op, coords: list[Coord]) -> list[list[Coord]]:
        """The coordinates of each operand element that element ``coords`` of
        a shape op's result is (opdefs.source_coords): swapped or permuted
        coordinates stay the domain's own; computed ones (reshape's
        re-indexing, split's half) are C expressions, read from shared
        memory where they are not this thread's."""
        def reindex(result_coords: list[Coord], shape: tuple[int, ...]) -> list[Coord]:
            linear = linear_index([self.use(c) for c in result_coords], op.results[0].type.shape)
            out = []
            for j, extent in enumerate(shape):
                stride = math.prod(shape[j + 1:])
                if extent == 1:
                    out.append(ZERO)
                    continue
                expr = f"({linear})" if stride == 1 else f"({linear}) / {stride}"
                out.append(Coord(None, expr if j == 0 else f"({expr}) % {extent}"))
            return out

        shapes = [o.type.shape for o in op.operands]
        found = opdefs.source_coords(op.name, op.attrs, shapes, coords, reindex)
        return [[Coord(None, str(c)) if isinstance(c, int) else c for c in cs] for cs in found]

    # ---- materialized tiles ----------------------------------------------------------------------
    def register_slot(self, value: Value, coords: list[Coord]) -> str | None:
        """The slot of ``value``'s storage that holds the element at ``coords``
        on this thread, or None when another thread holds it."""
        layout = self.emitter.layout_of(value)
        digits: dict[int, str] = {}
        for i, (p, extent) in enumerate(zip(layout.dims, layout.shape)):
            if extent == 1:
                continue
            c = coords[i]
            if c.dim is None:
                digit = in_thread_digit(layout.parent, p, c.expr)
                if digit is None:
                    return None
                digits[p] = digit
                continue
            if layout.parent.signature(p) != self.domain.parent.signature(c.dim):
                return None
            digits[p] = self.digits[c.dim]
        return layout.slot_of(digits)

    def read(self, value: Value, coords: list[Coord]) -> CValue:
        element = element_of(value.type)
        slot = self.register_slot(value, coords)
        if slot is not None:
            return CValue(f"{self.emitter.storage[value]}[{slot}]", element)
        if value not in self.staged:
            self.staged.append(value)
        split = self.split_coords() if coords == self.coords() else None
        if split is not None:
            thread, slot = split
            self.thread_reads[value] = self.scratch_index(value, thread)
            return CValue(f"{self.emitter.shared_name(value)}_read[{self.scratch_index(value, slot)}]", element)
        index = self.scratch_index(value, [self.use(c) for c in coords])
        return CValue(f"{self.emitter.shared_name(value)}[{index}]", element)

    def scratch_shape(self, value: Value) -> tuple[int, ...]:
        """The shape ``value``'s copy in scratch is addressed by: its own (its
        dimensions reversed where it is copied column-major), each row
        followed by its padding (``pads``)."""
        shape = value.type.shape[::-1] if value in self.columns else value.type.shape
        pad = self.pads.get(value, 0)
        return shape[:-1] + (shape[-1] + pad,) if pad else shape

    def scratch_index(self, value: Value, coords: list[str]) -> str:
        """The position in scratch of ``value``'s element at ``coords``."""
        return linear_index(coords[::-1] if value in self.columns else coords, self.scratch_shape(value))


def in_thread_digit(parent: BlockedLayout, d: int, coordinate: str) -> str | None:
    """The slot digit along ``d`` of the constant ``coordinate`` where every
    thread holds all of dimension ``d`` itself (one thread along it, no
    copies: the coordinate is the digit), as a split's pair is; else None."""
    if type(parent) is not BlockedLayout or parent.threads_per_dim(d) != 1 or parent.replicated(d):
        return None
    if not coordinate.isdigit() or int(coordinate) >= parent.shape[d]:
        return None
    return coordinate


def linear_index(coords: list[str], shape: tuple[int, ...]) -> str:
    """Row-major position of an element (broadcast dimensions are 0)."""
    index = ""
    for expr, extent in zip(coords, shape):
        if extent == 1:
            expr = "0"
        if not index:
            index = expr
        elif index == "0":
            index = expr
        else:
            index = f"({index}) * {extent} + {expr}" if expr != "0" else f"({index}) * {extent}"
    return index or "0"

