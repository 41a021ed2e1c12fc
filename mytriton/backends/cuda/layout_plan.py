"""Which layout each tile gets on the GPU.

Pure elementwise ops (arithmetic, comparisons, ``arange``, ``expand_dims``,
pointer arithmetic...) are never stored: the emitter evaluates them where they
are used, at the coordinates the user needs. Only *materialized* tiles have a
layout of their own: loads, reduction results and loop-carried values.

Layouts flow backwards from the statements that consume tiles (Triton's
anchors): a store spreads its tile with the default layout of its shape, and
each operand it reads gets the view of that layout that broadcasting implies
(a ``[BM, 1]`` operand of a ``[BM, BN]`` store is held by the threads that hold
its rows). A reduction's input lives in a layout whose slice is what its
consumers want, so a row max read back against the row it came from needs no
data exchange. When two consumers want different layouts the first one
(latest in program order) wins and the emitter converts for the other.
"""
from __future__ import annotations

from mytriton.backends.cuda.layout import Layout, default_layout
from mytriton.ir.opdefs import REDUCTIONS
from mytriton.ir.ssa import Block, BlockArg, Op, OpResult, Value
from mytriton.types import BlockType

MATERIALIZED = ("load", "dot", "dot_shared", *REDUCTIONS)


def is_tile(value: object) -> bool:
    return isinstance(value, Value) and isinstance(value.type, BlockType)


def view(layout: Layout, shape: tuple[int, ...]) -> Layout:
    """The layout of a broadcast operand of ``shape`` read in ``layout``
    (shapes align on the right, as in NumPy)."""
    skip = layout.rank - len(shape)
    return Layout(layout.parent, layout.dims[skip:], shape)


class LayoutPlan:
    def __init__(self, body: Block, num_warps: int) -> None:
        self.num_warps = num_warps
        self.layouts: dict[Value, Layout] = {}
        self.reduce_domains: dict[Op, Layout] = {}
        self.stores: list[Op] = []
        self.block(body)
        self.store_domains = {op: self.store_domain(op) for op in self.stores}

    def default(self, shape: tuple[int, ...]) -> Layout:
        return Layout.of(default_layout(shape, self.num_warps))

    def of(self, value: Value) -> Layout:
        """The layout a tile is held in (materialized) or was wanted in (pure)."""
        found = self.layouts.get(value)
        return found if found is not None else self.default(value.type.shape)

    def want(self, value: object, layout: Layout) -> None:
        if is_tile(value) and value not in self.layouts:
            self.layouts[value] = view(layout, value.type.shape)

    def store_domain(self, op: Op) -> Layout:
        """A store runs over the layout of the tile it stores when that tile
        is materialized with the pointer's shape and the address and mask
        are computed from indices alone (Triton gives a store its value's
        layout); otherwise over the default layout of its shape."""
        ptr, value, mask = op.operands
        if is_tile(value) and is_materialized(value) and value.type.shape == ptr.type.shape:
            if not any(reaches_materialized(o) for o in (ptr, mask)):
                return self.of(value)
        return self.default(ptr.type.shape)

    def domain(self, op: Op) -> Layout:
        """The layout whose slots a statement runs over."""
        if op.name == "store":
            return self.store_domains[op]
        if op.name in REDUCTIONS:
            return self.reduce_domains[op]
        return self.of(op.results[0])

    # ---- the backward walk ---------------------------------------------------------
    def block(self, block: Block) -> None:
        for op in reversed(block.ops):
            self.op(op)

    def op(self, op: Op) -> None:
        if op.name == "for":
            body = op.regions[0]
            for arg, result, init in zip(body.args[1:], op.results, op.operands[3:]):
                if is_tile(result):
                    layout = self.of(result)
                    self.layouts[result] = layout
                    self.layouts[arg] = layout
                    self.want(init, layout)
            yield_op = body.ops[-1]
            for arg, value in zip(body.args[1:], yield_op.operands):
                if is_tile(arg):
                    self.want(value, self.layouts[arg])
            self.block(_without_last(body))
            return
        if op.name == "store":
            if not is_tile(op.operands[0]):
                return
            self.stores.append(op)
            domain = self.default(op.operands[0].type.shape)
            for operand in op.operands:
                self.want(operand, domain)
            return
        if op.name in REDUCTIONS:
            self.reduction(op)
            return
        if not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        layout = self.of(result)
        if op.name in MATERIALIZED:
            self.layouts[result] = layout
        if op.name == "expand_dims":
            self.want(op.operands[0], layout.drop(op.attrs["axis"]))
            return
        if op.name in ("dot", "dot_shared"):
            for operand in op.operands[:2]:
                self.want(operand, self.default(operand.type.shape))
            self.want(op.operands[2], layout)
            return
        for operand in op.operands:
            self.want(operand, layout)

    def reduction(self, op: Op) -> None:
        (x,) = op.operands
        axis = op.attrs.get("axis")
        result = op.results[0]
        domain = self.layouts.get(x)
        if domain is None:
            wanted = self.layouts.get(result)
            domain = self.default(x.type.shape)
            if wanted is not None and axis is not None and wanted.parent.rank == len(x.type.shape):
                missing = [d for d in range(wanted.parent.rank) if d not in wanted.dims]
                if len(missing) == 1:
                    dims = wanted.dims[:axis] + (missing[0],) + wanted.dims[axis:]
                    domain = Layout(wanted.parent, dims, x.type.shape)
                    if any(extent not in (1, wanted.parent.shape[p]) for p, extent in zip(dims, x.type.shape)):
                        domain = self.default(x.type.shape)
            self.layouts[x] = domain
        self.reduce_domains[op] = domain
        if is_tile(result):
            # The result lives where the reduction left it.
            self.layouts[result] = domain.drop(axis)


def is_materialized(value: Value) -> bool:
    """Tiles that are stored (in registers) rather than recomputed where used."""
    return isinstance(value, BlockArg) or (
        isinstance(value, OpResult) and (value.op.name in MATERIALIZED or value.op.name == "for"))


def reaches_materialized(value: object) -> bool:
    work, seen = [value], set()
    while work:
        v = work.pop()
        if not is_tile(v) or v in seen:
            continue
        seen.add(v)
        if is_materialized(v):
            return True
        work.extend(v.op.operands)
    return False


def _without_last(body: Block) -> Block:
    """A view of a loop body without its ``yield`` (handled with the loop)."""
    view_block = Block()
    view_block.ops = body.ops[:-1]
    return view_block
