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

A dot the tensor cores can compute (f16 or bf16 operands, f32 ones with
``input_precision="tf32"`` or ``"tf32x3"``, int8 ones) whose tile holds whole
16x8 blocks on every warp gets an ``mma`` result layout before anything else
is decided, and so does the loop-carried accumulator it updates, so that the
accumulator stays in its fragments across the K loop and is stored from them.
Its shared operand buffers are padded by 16 bytes a row (tf32's B by 8
elements), which makes each ``ldmatrix`` phase (8 rows of 16 bytes) and each
fragment read hit distinct banks. Other dots keep the CUDA-core path.

Shared buffers from stage-dots get a ``padded_shared`` layout. The kernel
records ``num_warps``: the SSA is then the CUDA back end's input, and
``emit-cuda`` renders it without choosing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.analysis import is_materialized, is_tile, reaches_materialized
from mytriton.ir.layouts import Mma, PaddedShared, Slice, TileLayout, broadcast_view, default_blocked
from mytriton.ir.ssa import (
    Block, BlockArg, Kernel, Op, OpResult, Value, for_body, for_carried, for_inits, for_yield, walk,
)
from mytriton.target import SHARED_MEMORY_BUDGET
from mytriton.types import BF16, F16, F32, I8, BlockType, SharedType, element_of

DEFAULT_NUM_WARPS = 4
# Row-major shared buffers, unpadded: the CUDA dot reads a row of A as one
# broadcast value per warp and a row of B from consecutive banks, and the
# copies write consecutive addresses, so padding would buy nothing.
SHARED_LAYOUT = PaddedShared(pad=0)


# mma.sync's K per instruction, by operand element type (f32 means TF32).
MMA_K = {F16: 16, BF16: 16, F32: 8, I8: 32}
TENSOR_CORE_PRECISIONS = ("tf32", "tf32x3")


def _operand_element(value: Value):
    t = value.type
    return t.element if isinstance(t, SharedType) else element_of(t)


def mma_warps(m: int, n: int, num_warps: int) -> tuple[int, int] | None:
    """Warps over (M, N) as Triton's warpsPerTileV2 splits them (more warps
    along M while a warp has at least as many 16-row blocks as 16-column
    ones); None when some warp would get no 16x8 block (the dot then stays on
    CUDA cores)."""
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // 16 // wm >= n // 16 // wn and wm < m // 16:
            wm *= 2
        else:
            wn *= 2
    if 16 * wm > m or 8 * wn > n:
        return None
    return wm, wn


def mma_layout(op: Op, num_warps: int) -> Mma | None:
    """The accumulator layout of a dot the tensor cores compute, or None."""
    if opdefs.lookup(op.name).layout_rule != "dot":
        return None
    a, b = op.operands[0], op.operands[1]
    element = _operand_element(a)
    if element != _operand_element(b) or element not in MMA_K:
        return None
    if element == F32 and op.attrs.get("input_precision") not in TENSOR_CORE_PRECISIONS:
        return None
    (m, k), n = a.type.shape, b.type.shape[1]
    if m % 16 or n % 8 or k % MMA_K[element]:
        return None
    warps = mma_warps(m, n, num_warps)
    return Mma(2, warps) if warps is not None else None


def mma_shared_layout(element, op_idx: int) -> PaddedShared:
    """Rows padded by 16 bytes for ldmatrix (its 8 row addresses then fall in
    8 different 16-byte bank groups); tf32's plain reads: A's lane (g, t)
    reads row g, column t (banks 4 g + t with 4 elements of padding), B's
    row t, column g (banks 8 t + g with 8)."""
    if element == F32:
        return PaddedShared(pad=4 if op_idx == 0 else 8)
    return PaddedShared(pad=16 // element.nbytes)


def check_num_warps(num_warps: Any) -> None:
    if type(num_warps) is not int or not 1 <= num_warps <= 32 or num_warps & (num_warps - 1):
        raise CompileError(f"num_warps must be a power of two from 1 to 32, got {num_warps}")


class _Assigner:
    def __init__(self, kernel: Kernel, num_warps: int) -> None:
        self.kernel = kernel
        self.num_warps = num_warps
        self.layouts: dict[Value, TileLayout] = {}
        # (value, layout) -> the value standing for it there (a copy or a conversion)
        self.variants: dict[tuple[Value, TileLayout], Value] = {}
        self.shared_layouts: dict[Value, PaddedShared] = {}

    def tensor_cores(self) -> None:
        """Seed the layouts of dots on tensor cores (and of the loop-carried
        accumulators they update), and pad their shared operands."""
        for op in walk(self.kernel.body):
            mma = mma_layout(op, self.num_warps)
            if mma is None:
                continue
            self.layouts[op.results[0]] = mma
            for index in (0, 1):
                operand = op.operands[index]
                if isinstance(operand.type, SharedType):
                    self.shared_layouts[operand] = mma_shared_layout(operand.type.element, index)
            if not self.seed_carried(op.operands[2], op.results[0], mma):
                # `acc += tl.dot(a, b)`: the sum is carried; it is computed in the mma layout too.
                adds = [user for user in op.parent.ops if user.name == "add" and op.results[0] in user.operands]
                if len(adds) == 1 and adds[0].results[0].type == op.results[0].type:
                    other = [o for o in adds[0].operands if o is not op.results[0]]
                    if len(other) == 1 and self.seed_carried(other[0], adds[0].results[0], mma):
                        self.layouts[adds[0].results[0]] = mma

    def fit_shared_budget(self) -> None:
        """Padding is worth less than the tile: where the padded buffers would
        not fit the shared budget that the unpadded ones fit, no buffer is
        padded (ldmatrix then meets bank conflicts, but runs)."""
        allocs = [r for op in walk(self.kernel.body) for r in op.results if isinstance(r.type, SharedType)]
        total = sum((t.shape[1] + self.shared_layouts.get(v, SHARED_LAYOUT).pad) * t.shape[0] * t.element.nbytes
                    for v in allocs for t in [v.type])
        if total > SHARED_MEMORY_BUDGET:
            self.shared_layouts.clear()

    def seed_carried(self, arg: Any, value: Value, mma: Mma) -> bool:
        """If ``arg`` is a for loop's carried tile and ``value`` what the loop
        yields for it, give the argument and the loop's result ``mma``."""
        loop = arg.block.parent if isinstance(arg, BlockArg) else None
        if loop is None or loop.name != "for" or arg not in for_carried(loop):
            return False
        index = for_carried(loop).index(arg)
        if for_yield(loop).operands[index] is not value:
            return False
        self.layouts[arg] = self.layouts[loop.results[index]] = mma
        return True

    def default(self, shape: tuple[int, ...]) -> TileLayout:
        return default_blocked(shape, self.num_warps)

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


def _with_layouts(kernel: Kernel, layouts: dict[Value, TileLayout],
                  shared_layouts: dict[Value, PaddedShared]) -> None:
    for op in walk(kernel.body):
        values = list(op.results) + [arg for region in op.regions for arg in region.args]
        for value in values:
            if isinstance(value.type, BlockType):
                layout = layouts.get(value) or default_blocked(value.type.shape, kernel.num_warps)
                value.type = replace(value.type, layout=layout)
            elif isinstance(value.type, SharedType):
                value.type = replace(value.type, layout=shared_layouts.get(value, SHARED_LAYOUT))


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
        assigner = _Assigner(kernel, self.num_warps)
        assigner.tensor_cores()
        assigner.fit_shared_budget()
        assigner.block(kernel.body)
        kernel.num_warps = self.num_warps
        _with_layouts(kernel, assigner.layouts, assigner.shared_layouts)
        return kernel
