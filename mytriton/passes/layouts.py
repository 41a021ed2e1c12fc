"""layouts: give every tile a layout, for a number of warps per program.

    %6 = load %4, %5, -inf : vector<1024 x f32> @10:9
      =>
    #blocked0 = blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0]>
    %6 = load %4, %5, -inf : vector<1024 x f32, #blocked0> @10:9

Triton's TTGIR stage is the model. Layouts flow backwards from the ops that
consume tiles (Triton's anchors): a store spreads its tile with the default
layout of its shape (or, when it stores a tile held in registers whose
address and mask come from indices alone, with that tile's layout, so no
data moves); each operand is asked for in the layout its consumer's rule
gives (``OpDef.layout_rule``), sliced where it broadcasts from a lower rank.
A reduction's operand takes the layout whose slice its consumers want, so a
row maximum read back against its row needs no data exchange. The first
request (the latest use in program order) decides a value's layout. A later
request for another layout is met

- for a value computed elementwise (index arithmetic, ``arange``, a mask):
  by a copy of its op in the new layout (*rematerialised*, as Triton's
  RemoveLayoutConversions does), since recomputing is cheaper than moving;
- for a value held in registers (a load, a reduction, a dot, a loop's
  carried value): by an explicit ``convert_layout`` after its definition,
  which the back end renders as an exchange through shared memory.

Loads and stores of contiguous, aligned tiles move 16 bytes per access (as
Triton's Coalesce pass arranges): the axis analysis (``ir/axis_info.py``)
gives each access the elements a thread may move at once; where every load
and store of a tile shape allows N, that shape's layout holds N elements
per thread along its last dimension, and each access that can gets
``vector=N``, which the back end renders as one wide access. Shapes a dot
reads or writes keep their default layouts.

Shared buffers from stage-dots get a ``padded_shared`` layout. The kernel
records ``num_warps``: the SSA is then the CUDA back end's input, and
``emit-cuda`` renders it without choosing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.axis_info import AxisAnalysis, vector_width
from mytriton.ir.analysis import is_materialized, is_tile, reaches_materialized
from mytriton.ir.layouts import Blocked, PaddedShared, Slice, TileLayout, broadcast_view, default_blocked
from mytriton.ir.ssa import (
    Block, BlockArg, Kernel, Op, OpResult, Value, for_body, for_carried, for_inits, for_yield, walk,
)
from mytriton.types import BlockType, SharedType

DEFAULT_NUM_WARPS = 4
# Row-major shared buffers, unpadded: the CUDA dot reads a row of A as one
# broadcast value per warp and a row of B from consecutive banks, and the
# copies write consecutive addresses, so padding would buy nothing.
SHARED_LAYOUT = PaddedShared(pad=0)


def check_num_warps(num_warps: Any) -> None:
    if type(num_warps) is not int or not 1 <= num_warps <= 32 or num_warps & (num_warps - 1):
        raise CompileError(f"num_warps must be a power of two from 1 to 32, got {num_warps}")


def vectorized_blocked(shape: tuple[int, ...], num_warps: int, width: int) -> Blocked:
    """The default layout of ``shape`` with ``width`` consecutive elements per
    thread along the last dimension: lanes and warps spread as they would
    over a tile ``width`` times narrower."""
    narrow = shape[:-1] + (max(1, shape[-1] // width),)
    base = default_blocked(narrow, num_warps)
    return replace(base, size_per_thread=base.size_per_thread[:-1] + (width,))


def access_widths(kernel: Kernel) -> dict[Op, int]:
    """The vector width the axis analysis proves for each tile load and store."""
    analysis = AxisAnalysis(kernel)
    return {op: vector_width(analysis, op) for op in walk(kernel.body)
            if op.name in ("load", "store") and is_tile(op.operands[0])}


def preferred_layouts(kernel: Kernel, widths: dict[Op, int], num_warps: int) -> dict[tuple[int, ...], Blocked]:
    """A vectorised layout for each tile shape all of whose loads and stores
    move at least two elements per access; not for shapes a dot touches."""
    by_shape: dict[tuple[int, ...], int] = {}
    for op, width in widths.items():
        shape = op.operands[0].type.shape
        by_shape[shape] = min(by_shape.get(shape, width), width)
    for op in walk(kernel.body):
        if opdefs.lookup(op.name).layout_rule == "dot":
            for value in list(op.operands) + list(op.results):
                if value is not None and is_tile(value):
                    by_shape.pop(value.type.shape, None)
    return {shape: vectorized_blocked(shape, num_warps, width)
            for shape, width in by_shape.items() if width > 1}


def mark_vector_accesses(kernel: Kernel, widths: dict[Op, int]) -> None:
    """``vector=N`` on each access whose laid-out pointer holds runs of N
    proven elements per thread along its fastest, last dimension."""
    for op, width in widths.items():
        layout = op.operands[0].type.layout
        last = len(op.operands[0].type.shape) - 1
        if width < 2 or not isinstance(layout, Blocked) or layout.order[0] != last:
            continue
        n = min(width, layout.size_per_thread[last])
        if n > 1:
            op.attrs["vector"] = n


class _Assigner:
    def __init__(self, kernel: Kernel, num_warps: int,
                 preferred: dict[tuple[int, ...], Blocked] | None = None) -> None:
        self.kernel = kernel
        self.num_warps = num_warps
        self.layouts: dict[Value, TileLayout] = {}
        # (value, layout) -> the value standing for it there (a copy or a conversion)
        self.variants: dict[tuple[Value, TileLayout], Value] = {}
        # Tile shapes whose accesses are vectorised: their layout.
        self.preferred = preferred or {}

    def default(self, shape: tuple[int, ...]) -> TileLayout:
        found = self.preferred.get(tuple(shape))
        return found if found is not None else default_blocked(shape, self.num_warps)

    def layout(self, value: Value) -> TileLayout:
        found = self.layouts.get(value)
        return found if found is not None else self.default(value.type.shape)

    def held(self, value: Value) -> TileLayout:
        """The layout a tile held in registers has, or will have if no later
        use asks otherwise: a reduction leaves its result in a slice of its
        operand's layout."""
        found = self.layouts.get(value)
        if found is not None:
            return found
        op = value.op if isinstance(value, OpResult) else None
        if op is not None and opdefs.lookup(op.name).layout_rule == "reduce":
            return Slice(op.attrs["axis"], self.layout(op.operands[0]))
        return self.default(value.type.shape)

    # ---- requests ---------------------------------------------------------------------------
    def request(self, op: Op, index: int, layout: TileLayout) -> None:
        """Operand ``index`` of ``op`` is read in ``layout`` (already a view
        for the operand's rank)."""
        value = op.operands[index]
        if not is_tile(value):
            return
        have = self.layouts.get(value)
        if have is None:
            self.layouts[value] = layout
            return
        if have == layout:
            return
        variant = self.variants.get((value, layout))
        if variant is None:
            variant = self.rematerialize(value, layout) if not is_materialized(value) \
                else self.convert(value, layout)
            self.variants[(value, layout)] = variant
        op.operands[index] = variant

    def rematerialize(self, value: Value, layout: TileLayout) -> Value:
        original = value.op
        copy = Op(original.name, list(original.operands), [r.type for r in original.results],
                  dict(original.attrs), original.loc)
        _insert_after(original, copy)
        result = copy.results[value.index]
        self.layouts[result] = layout
        self.operands(copy, layout)
        return result

    def convert(self, value: Value, layout: TileLayout) -> Value:
        op = Op("convert_layout", [value], [value.type], loc=_loc_of(value))
        if isinstance(value, BlockArg):
            body = value.block
            op.parent = body
            body.ops.insert(0, op)
        else:
            _insert_after(value.op, op)
        self.layouts[op.result] = layout
        return op.result

    # ---- ops ------------------------------------------------------------------------------------
    def operands(self, op: Op, layout: TileLayout) -> None:
        """Ask for ``op``'s tile operands as its layout rule says, given the
        layout of its result (of its pointer, for a store)."""
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "expand_dims":
            self.request(op, 0, Slice(op.attrs["axis"], layout))
            return
        if rule == "dot":
            for index in (0, 1):
                operand = op.operands[index]
                if is_tile(operand):
                    self.request(op, index, self.layout(operand))
            self.request(op, 2, layout)
            return
        for index, operand in enumerate(op.operands):
            if is_tile(operand):
                self.request(op, index, broadcast_view(layout, len(operand.type.shape)))

    def block(self, block: Block) -> None:
        for op in reversed(list(block.ops)):
            self.op(op)

    def op(self, op: Op) -> None:
        if op.name == "for":
            self.loop(op)
            return
        if op.name == "if":
            self.if_op(op)
            return
        if op.name == "while":
            self.while_op(op)
            return
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "store":
            if is_tile(op.operands[0]):
                self.store(op)
            return
        if rule == "reduce":
            self.reduction(op)
            return
        if rule == "convert" or not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        layout = self.layout(result)
        self.layouts[result] = layout
        self.operands(op, layout)

    def store(self, op: Op) -> None:
        # A store's (pointer, value, mask); device_print's and device_assert's
        # first operand stands where the pointer does.
        ptr, value, mask = (op.operands + [None, None])[:3] if op.name == "store" else (op.operands[0], None, None)
        layout = self.default(ptr.type.shape)
        if is_tile(value) and is_materialized(value) and value.type.shape == ptr.type.shape \
                and not any(reaches_materialized(o) for o in (ptr, mask)):
            layout = self.held(value)  # store the tile where it is: no data moves
        self.request(op, 0, layout)
        self.operands(op, layout)

    def reduction(self, op: Op) -> None:
        x = op.operands[0]
        axis = op.attrs.get("axis")
        result = op.results[0]
        domain = self.layouts.get(x)
        if domain is None:
            domain = self.default(x.type.shape)
            wanted = self.layouts.get(result) if is_tile(result) else None
            if isinstance(wanted, Slice) and wanted.dim == axis:
                domain = wanted.parent  # the slice consumers want is this reduction's own
            self.layouts[x] = domain
        if not is_tile(result):
            return
        wanted = self.layouts.get(result)
        self.layouts[result] = Slice(axis, domain)
        if wanted is not None and wanted != self.layouts[result]:
            # Its users asked for another layout before the operand's was known.
            converted = self.convert(result, wanted)
            for user in walk(self.kernel.body):
                if user is not converted.op and not (user.name == "convert_layout" and user.operands[0] is result):
                    user.operands = [converted if o is result else o for o in user.operands]
            self.variants[(result, wanted)] = converted

    def loop(self, op: Op) -> None:
        body = for_body(op)
        for index, (arg, result, init) in enumerate(zip(for_carried(op), op.results, for_inits(op))):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[arg] = layout
                self.request(op, 3 + index, layout)
        terminator = for_yield(op)
        for index, arg in enumerate(for_carried(op)):
            if is_tile(arg):
                self.request(terminator, index, self.layouts[arg])
        self.block(_without_yield(body))


    def if_op(self, op: Op) -> None:
        """An if's tile results are held in registers, like loop-carried
        values: each keeps the layout its users want, and both branches
        yield it in that layout; then the branches are laid out."""
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = layout
                for region in op.regions:
                    self.request(region.ops[-1], index, layout)
        for region in op.regions:
            self.block(_without_yield(region))

    def while_op(self, op: Op) -> None:
        """A while loop's carried tiles: one layout for the initial value,
        both regions' arguments, the yielded value and the result."""
        before, after = op.regions
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[before.args[index]] = self.layouts[after.args[index]] = layout
                self.request(op, index, layout)
                self.request(after.ops[-1], index, layout)
        self.block(_without_yield(after))
        self.block(_without_yield(before))


def _without_yield(body: Block) -> Block:
    """The ops of a region but its terminator (``yield`` or ``condition``)."""
    view = Block()
    view.ops = [op for op in body.ops if op.name not in ("yield", "condition")]
    return view


def _insert_after(anchor: Op, op: Op) -> None:
    block = anchor.parent
    assert block is not None
    op.parent = block
    block.ops.insert(block.ops.index(anchor) + 1, op)


def _loc_of(value: Value):
    return value.op.loc if isinstance(value, OpResult) else value.block.parent.loc


def _with_layouts(kernel: Kernel, layouts: dict[Value, TileLayout]) -> None:
    for op in walk(kernel.body):
        values = list(op.results) + [arg for region in op.regions for arg in region.args]
        for value in values:
            if isinstance(value.type, BlockType):
                layout = layouts.get(value) or default_blocked(value.type.shape, kernel.num_warps)
                value.type = replace(value.type, layout=layout)
            elif isinstance(value.type, SharedType):
                value.type = replace(value.type, layout=SHARED_LAYOUT)


@dataclass(frozen=True)
class LayoutsPass:
    name: str = "layouts"
    summary: str = "give every tile a layout for --num-warps warps (CUDA's input; not an optimisation)"
    num_warps: int = DEFAULT_NUM_WARPS

    def apply(self, kernel: Kernel) -> Kernel:
        check_num_warps(self.num_warps)
        if kernel.laid_out:
            raise CompileError(f"kernel '{kernel.name}' is already laid out (num_warps={kernel.num_warps})",
                               kernel.loc)
        widths = access_widths(kernel)
        assigner = _Assigner(kernel, self.num_warps, preferred_layouts(kernel, widths, self.num_warps))
        assigner.block(kernel.body)
        kernel.num_warps = self.num_warps
        _with_layouts(kernel, assigner.layouts)
        mark_vector_accesses(kernel, widths)
        return kernel
