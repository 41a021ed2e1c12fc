"""stage-dots: stage the operands of ``tl.dot`` through shared memory.

    %a = load <a_ptr + rows_a * K + cols_a>, <rows_a < M & cols_a < K>, 0.0 : block<64x32 x f32>
    %b = load <b_ptr + rows_b * N + cols_b>, <rows_b < K & cols_b < N>, 0.0 : block<32x64 x f32>
    %c = dot %a, %b, %acc : block<64x64 x f32>
  =>
    %sa = shared_alloc name="dot_a0", shape=(64, 32), dtype=f32 : shared<64x32 x f32>   (top of the kernel)
    %sb = shared_alloc name="dot_b0", shape=(32, 64), dtype=f32 : shared<32x64 x f32>
    ...
    copy_to_shared %sa, a_ptr, <offset of rows_a>, <offset of cols_a>, K, M, K, 0.0
    copy_to_shared %sb, b_ptr, <offset of rows_b>, <offset of cols_b>, N, K, N, 0.0
    barrier
    %c = dot_shared %sa, %sb, %acc : block<64x64 x f32>
    barrier

A dot is staged when both its operands are canonical tile loads
(``match_operand``), followed backwards through their definitions wherever
licm and cse left them:

    load(ptr, mask, other) with
      ptr   = base + rows * row_stride + cols   (base a pointer parameter; the two
              additions nested either way, the product in either order)
      rows  = row_offset + expand_dims(arange(0, R), axis=1)     [R, 1]
      cols  = col_offset + expand_dims(arange(0, C), axis=0)     [1, C]
              (the offset an i32 scalar, added before or after expand_dims,
              on either side, or absent)
      mask  = (rows < row_bound) & (cols < col_bound), in either order
      other = 0 or 0.0

and no store may run between a load and its dot (the copy reads memory where
the dot is). The first barrier makes the copies visible to every thread; the
second keeps the next copy (the next K step of a loop) from overwriting
buffers that threads are still reading. The loads, and every op only they
needed, are erased; ops also used elsewhere (the output's offsets and masks)
stay.

A dot whose A operand is computed in registers (not a load: attention's
P = softmax(Q @ K^T)) and whose B is a canonical tile load stages B alone:

    %c = dot_rs %p, %sb, %acc          (a register tile times a shared buffer)
    barrier

The same holds for a canonical A whose tile other ops read too (an unrolled
``sumsq += tl.sum(x * x, axis=1)`` beside ``acc += tl.dot(x, phi)``) where
the dot is in no loop: the tile is in registers anyway, and writing it to
shared memory saves a second read from global memory, as Triton's
``local_alloc`` of a loaded tile does. (In a loop, the pipelined copy wins.)

In a loop body that already stages a dot_shared (attention's Q @ K^T), B's
copy joins that dot's copies before its first barrier, so the software-pipeline pass
multi-buffers V with K (and drops the barrier after the dot_rs).

Top-level dots (in no loop or branch) of the same tiles and attributes share
one pair of buffers (``_reuse_key``): an unrolled ``tl.static_range`` over K
takes one pair, not one per step.

A dot whose operands are not canonical is left as it is (the CUDA backend has
a general path for it); ``match_dot`` says why. All shared buffers together
must fit in the target's shared-memory budget (``shared_budget``, sm_90's
227 KiB by default: ``mytriton.target``): a dot whose pair does not is an error
at the dot, raised before the kernel is changed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mytriton import remarks
from mytriton.diagnostics import CompileError, Location
from mytriton.ir import opdefs
from mytriton.ir.axis_info import pow2_divisor
from mytriton.ir.analysis import Definitions, NotDefinedBy, describe_operand
from mytriton.ir.opdefs import LOWER_BOUNDS
from mytriton.passes.buffer_liveness import allocates
from mytriton.ir.ssa import (
    BlockArg, Const, Kernel, Op, OpResult, Operand, Param, Value, defining_block, erase_op, for_bounds,
    for_index, for_inits, for_yield, insert_after, insert_before, is_within, replace_uses, use_counts, values_used, walk,
)
from mytriton.ir.text_common import format_literal
from mytriton.target import SHARED_MEMORY_BUDGET, budget_text
from mytriton.types import BOOL, I32, I64, BlockType, PointerType, ScalarType, SharedType, concrete, element_of, shape_of


# The fills that make a masked-off element contribute nothing to a dot.
ZERO_FILLS = (Const(0), Const(0.0))

ROWS, COLUMNS = 1, 0  # the expand_dims axis that makes a row ([R, 1]) or a column ([1, C]) coordinate

POINTER_REASON = "the pointer is not base + rows * row_stride + cols"
MASK_REASON = "the mask of the load is not (rows < bound) & (cols < bound)"


# ---- what a match finds ----------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """``offset + expand_dims(arange(0, size))`` along one axis of a tile."""

    offset: Operand  # an i32 scalar: a value or an int literal
    size: int


@dataclass(frozen=True, eq=False)
class TilePlan:
    """A canonical tile load, as ``copy_to_shared`` spells it:
    tile[r, c] = (row_offset + r < row_bound && col_offset + c < col_bound)
                 ? base[(row_offset + r) * row_stride + col_offset + c] : fill."""

    load: Op
    base: Param
    row_offset: Operand
    col_offset: Operand
    row_stride: Operand
    row_bound: Operand
    col_bound: Operand
    fill: Const

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = shape_of(self.load.result.type)
        return rows, cols

    @property
    def element(self) -> ScalarType:
        assert isinstance(self.base.type, PointerType)
        return self.base.type.pointee

    @property
    def buffer_type(self) -> SharedType:
        return SharedType(self.shape, self.element)

    @property
    def root(self) -> Op:
        """The op whose result the dot reads (erased once the copy replaces it)."""
        return self.load

    def copy_operands(self, buffer: Value) -> list[Operand]:
        return [buffer, self.base, self.row_offset, self.col_offset, self.row_stride, self.row_bound,
                self.col_bound, self.fill]

    def copy_ops(self, buffer: Value, widen: Callable[[Operand, Location | None], Operand]) -> list[Op]:
        return [Op("copy_to_shared", self.copy_operands(buffer), [], loc=self.load.loc)]


@dataclass(frozen=True, eq=False)
class DotPlan:
    dot: Op
    a: "TilePlan | StridedPlan | None"  # None: A is a register tile (``dot_rs``)
    b: "TilePlan | StridedPlan"

    @property
    def tiles(self) -> list["TilePlan | StridedPlan"]:
        """The operands staged through shared memory."""
        return [self.b] if self.a is None else [self.a, self.b]

    @property
    def nbytes(self) -> int:
        return sum(tile.buffer_type.nbytes for tile in self.tiles)

    @property
    def strided(self) -> bool:
        """Whether an operand is in a tutorial form (``copy_strided_to_shared``),
        or A stays in registers (attention's P @ V, beside its Q @ K^T)."""
        return not all(isinstance(tile, TilePlan) for tile in self.tiles) or self.a is None

    def describe(self) -> str:
        """The tiles staged, for messages."""
        return " and ".join(str(tile.load.result.type) for tile in self.tiles)


@dataclass(frozen=True)
class NotCanonical:
    """Why a dot (or one operand) is not the canonical pattern, in a few words;
    ``tutorial``: why it is not one of Triton's tutorial forms either, where
    that says something the canonical reason does not (for remarks)."""

    reason: str
    tutorial: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.reason

    @property
    def remark(self) -> str:
        """The reason, and the tutorial form's where it adds to it."""
        return f"{self.reason}; as a tutorial form: {self.tutorial}" if self.tutorial else self.reason


class _Mismatch(Exception):
    """A pattern did not match, for ``reason``; ``form``: at the pointer or
    the mask (which Triton's tutorial forms spell otherwise), not later."""

    def __init__(self, reason: str, form: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.form = form


# ---- matching ---------------------------------------------------------------------------


def match_dot(defs: Definitions, dot: Op, read_elsewhere: frozenset[Value] = frozenset()) -> DotPlan | NotCanonical:
    """The plan to stage ``dot``'s operands, or why they are not canonical.
    An A operand computed in registers (not a load: attention's P) stays
    there when B is a canonical tile load: B alone is staged (``dot_rs``);
    so does a loaded A that other ops read too (``read_elsewhere``: the
    loaded tiles with a reader besides dots) where the dot is in no loop."""
    a, b, _ = dot.operands
    tiles: list[TilePlan | StridedPlan | None] = []
    a_reason: NotCanonical | None = None
    held_a = False
    for value, label in ((a, "A"), (b, "B")):
        tile = match_operand(defs, value)
        # (16-bit elements: the dot_rs forms attention's P @ V exercises, on mma.sync and wgmma.)
        held = label == "A" and value in read_elsewhere and phase_of(dot) is None \
            and not isinstance(tile, NotCanonical) and tile.load.result is value \
            and element_of(value.type).nbytes == 2
        if held:
            held_a = True
            tile = NotCanonical("its tile is in registers for its other readers and the dot is in no loop, "
                                "so it is written to shared memory from there")
        if isinstance(tile, NotCanonical):
            if label == "A" and (held or _in_registers(defs, value)):
                a_reason = tile
                tiles.append(None)
                continue
            # Neither operand stages: A's reason says the most (it is the first), unless A
            # was a canonical tile kept in registers only because B would be staged.
            if a_reason is not None and not held_a:
                return NotCanonical(f"operand A: {a_reason}", a_reason.tutorial)
            return NotCanonical(f"operand {label}: {tile}", tile.tutorial)
        writer = _store_between(defs, tile.load, dot)
        if writer is not None:
            return NotCanonical(f"operand {label}: a {writer.name} may run between the load and the dot")
        gather = tile.rows.gather if isinstance(tile, StridedPlan) else None
        writer = _store_between(defs, gather.load, dot) if gather is not None else None
        if writer is not None:  # (the copy reads the indices where the dot is, too)
            return NotCanonical(f"operand {label}: a {writer.name} may run between the load of its row indices "
                                "and the dot")
        tiles.append(tile)
    return DotPlan(dot, tiles[0], tiles[1])


def _in_registers(defs: Definitions, value: Operand) -> bool:
    """A rank-2 tile computed in registers: not a load (a load that is not
    canonical keeps the general path, as before) nor a literal."""
    return isinstance(value, Value) and isinstance(value.type, BlockType) and len(value.type.shape) == 2 \
        and defs.defined_by(value, "load") is None


def match_operand(defs: Definitions, value: Operand) -> TilePlan | StridedPlan | NotCanonical:
    """The tile a dot operand loads, if it is a canonical tile load, or the
    transpose of one (``tl.trans(k)``: copied with its axes swapped)."""
    trans = defs.defined_by(value, "trans")
    if trans is not None:
        (inner,) = trans.operands[:1]
        try:
            return _match_strided_load(defs, inner).transposed(trans)
        except _Mismatch as err:
            return NotCanonical(f"the operand is the transpose of a tile whose load does not match: {err.reason}")
    try:
        return _match_load(defs, value)
    except _Mismatch as err:
        try:
            return _match_strided_load(defs, value)
        except _Mismatch as strided:
            # The canonical form's reason says the most; the tutorial form's
            # is kept where the pointer or the mask did not match, which the
            # tutorial forms spell otherwise (a remark shows both).
            tutorial = strided.reason if err.form and strided.reason != err.reason else ""
            return NotCanonical(err.reason, tutorial)


def _match_load(defs: Definitions, value: Operand) -> TilePlan:
    try:
        load = defs.require(value, "load")
    except NotDefinedBy as err:
        raise _Mismatch(f"the operand is not a load but {describe_operand(value, err.found)}") from None
    ptr, mask, other = load.operands
    try:
        base, rows, row_stride, cols = _match_pointer(defs, ptr)
        row_bound, col_bound = _match_mask(defs, mask, rows, cols)
    except _Mismatch as err:
        raise _Mismatch(err.reason, form=True) from None
    if other not in ZERO_FILLS:
        given = "no value (other=none)" if other is None else (
            format_literal(other.value) if isinstance(other, Const) else "a computed value")
        raise _Mismatch(f"the load fills masked-off elements with {given}, not 0 or 0.0")
    if shape_of(load.result.type) != (rows.size, cols.size):  # the dot's operand is this tile
        raise _Mismatch(f"the load's tile {load.result.type} is not [{rows.size}, {cols.size}]")
    assert isinstance(other, Const)
    return TilePlan(load, base, rows.offset, cols.offset, row_stride, row_bound, col_bound, other)


def _match_pointer(defs: Definitions, ptr: Operand) -> tuple[Param, Axis, Operand, Axis]:
    """``base + rows * row_stride + cols``: (base, rows, row_stride, cols)."""
    terms: list[Operand] = []
    base = ptr
    while (step := defs.defined_by(base, "addptr")) is not None:
        base, offset = step.operands
        terms.append(offset)
    if not (isinstance(base, Param) and isinstance(base.type, PointerType)):
        found = describe_operand(base, defs.op(base))
        raise _Mismatch(f"the pointer's base is not a pointer parameter but {found}")
    terms.reverse()  # source order: base + first + second
    if len(terms) == 1 and (add := defs.defined_by(terms[0], "add")) is not None:
        terms = list(add.operands)
    # Rows that do not match say less than columns that do not match once the rows did.
    row_failure: _Mismatch | None = None
    col_failure: _Mismatch | None = None
    if len(terms) == 2:
        for scaled, cols in _orders(terms):
            product = defs.defined_by(scaled, "mul")
            if product is None:
                continue
            for rows, stride in _orders(product.operands):
                if not (_is_i32_scalar(stride) and _is_i32_tile(rows)):
                    continue
                try:
                    row_axis = _match_axis(defs, rows, ROWS)
                except _Mismatch as err:
                    row_failure = row_failure or err
                    continue
                try:
                    return base, row_axis, stride, _match_axis(defs, cols, COLUMNS)
                except _Mismatch as err:
                    col_failure = col_failure or err
    raise col_failure or row_failure or _Mismatch(POINTER_REASON)


def _match_axis(defs: Definitions, value: Operand, axis: int) -> Axis:
    """``offset + expand_dims(arange(0, n), axis)``, spelled any of the ways
    the docstring lists."""
    found = _axis(defs, value, axis)
    if found is None:
        what = "rows" if axis == ROWS else "columns"
        raise _Mismatch(f"the {what} are not offset + expand_dims(arange(0, n), axis={axis})")
    return found


def _axis(defs: Definitions, value: Operand, axis: int) -> Axis | None:
    add = defs.defined_by(value, "add")
    if add is not None:  # offset + expand_dims(arange)
        for offset, expanded in _orders(add.operands):
            expand = defs.defined_by(expanded, "expand_dims")
            if expand is not None and expand.attrs.get("axis") == axis and _is_i32_scalar(offset):
                size = _arange_size(defs, expand.operands[0])
                if size is not None:
                    return Axis(offset, size)
        return None
    expand = defs.defined_by(value, "expand_dims")
    if expand is None or expand.attrs.get("axis") != axis:
        return None
    inner = expand.operands[0]
    size = _arange_size(defs, inner)
    if size is not None:  # expand_dims(arange)
        return Axis(Const(0), size)
    add = defs.defined_by(inner, "add")
    if add is not None:  # expand_dims(offset + arange)
        for offset, arange in _orders(add.operands):
            size = _arange_size(defs, arange) if _is_i32_scalar(offset) else None
            if size is not None:
                return Axis(offset, size)
    return None


def _arange_size(defs: Definitions, value: Operand) -> int | None:
    arange = defs.defined_by(value, "arange")
    if arange is None:
        return None
    start, end = arange.attrs["start"], arange.attrs["end"]
    if start != 0:
        raise _Mismatch(f"arange({start}, {end}) does not start at 0")
    return end


def _match_mask(defs: Definitions, mask: Operand, rows: Axis, cols: Axis) -> tuple[Operand, Operand]:
    """``(rows < row_bound) & (cols < col_bound)``: the two bounds."""
    both = defs.defined_by(mask, "and")
    if both is None:
        raise _Mismatch(MASK_REASON)
    for first, second in _orders(both.operands):
        row_test, col_test = defs.defined_by(first, "cmp_lt"), defs.defined_by(second, "cmp_lt")
        if row_test is None or col_test is None:
            continue
        # The same coordinates as the pointer's, though cse may not have made them one value.
        if _axis(defs, row_test.operands[0], ROWS) != rows or _axis(defs, col_test.operands[0], COLUMNS) != cols:
            continue
        bounds = row_test.operands[1], col_test.operands[1]
        for bound, what in zip(bounds, ("row", "column")):
            if not _is_i32_scalar(bound):
                got = "none" if bound is None else bound.type
                raise _Mismatch(f"the {what} bound of the mask is not an i32 scalar ({got})")
        return bounds
    raise _Mismatch(MASK_REASON)


def _orders(pair: list[Operand]) -> tuple[tuple[Operand, Operand], tuple[Operand, Operand]]:
    first, second = pair
    return (first, second), (second, first)


def _is_i32_scalar(operand: Operand) -> bool:
    if isinstance(operand, Const):  # an integer literal beyond i32 is i64
        return type(operand.value) is int and concrete(operand.type) == I32
    return isinstance(operand, Value) and operand.type == I32


def _is_i32_tile(operand: Operand) -> bool:
    return isinstance(operand, Value) and isinstance(operand.type, BlockType) and operand.type.element == I32


def _is_index_tile(operand: Operand) -> bool:
    """An i32 tile, or an i64 one (coordinates widened against overflow: ``_vector_axis`` says which)."""
    return isinstance(operand, Value) and isinstance(operand.type, BlockType) and operand.type.element in (I32, I64)


def _is_i32_vector(operand: Operand) -> bool:
    return _is_i32_tile(operand) and len(shape_of(operand.type)) == 1


def _is_index_scalar(operand: Operand) -> bool:
    """An i32 or i64 scalar: a stride (an i64 one scales the coordinates in 64 bits)."""
    if isinstance(operand, Const):
        return type(operand.value) is int and concrete(operand.type) in (I32, I64)
    return isinstance(operand, Value) and operand.type in (I32, I64)


def _orders_memory(op: Op) -> bool:
    """Whether a load may not move across ``op``: it writes memory (a store,
    an atomic) or synchronises."""
    return opdefs.writes_memory(op.name) or opdefs.synchronises(op.name)


def _store_between(defs: Definitions, load: Op, dot: Op) -> Op | None:
    """An op that writes memory or synchronises (a store, say) and may run
    after ``load`` and before ``dot`` (the copy that replaces the load reads
    memory where the dot is)."""
    first, last = defs.position[load], defs.position[dot]
    for op, position in defs.position.items():
        if _orders_memory(op) and first < position < last:
            return op
    # A loop around the dot but not the load runs all of its body again
    # between the load and the dot's next iteration.
    block = dot.parent
    while block is not None and not is_within(load.parent, block):
        store = next((op for op in walk(block) if _orders_memory(op)), None)
        if store is not None:
            return store
        loop = block.parent
        block = loop.parent if loop is not None else None
    return None


# ---- Triton's tutorial forms ------------------------------------------------------------
# Tutorial 03 (grouped matmul) and tutorial 06 (attention) address an operand
# through a pointer tile carried by the K loop,
#
#     a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)   (before the loop)
#     a = load(a_ptrs, offs_k[None, :] < K - k * BK, 0.0)
#     a_ptrs += BK * stride_ak                                                          (end of the body)
#
# with runtime strides on both axes, rows ``(pid_m * BM + arange) % M`` and a
# mask on one axis only (or none, or a 1-D test expanded). The copy
# (``copy_strided_to_shared``) then reads through
#
#     base = a_ptr + <its scalar offsets> + j * step    (j: the iterations done, (k - start) / loop step)
#
# so its operands depend on the induction variable alone and the pipeline
# pass can compute them for a later iteration. A mask that tests another
# offset than the pointer's (``(start_n + offs_n) < N`` with the pointer at
# ``offs_n``) tests the same elements against the bound moved by the
# difference.

NO_BOUND = Const(2147483647)  # a bound the mask does not test: every i32 coordinate passes
NO_WRAP = Const(0)


@dataclass(frozen=True)
class WrappedAxis:
    """``wrap(offset + arange(0, size))`` along one axis (``NO_WRAP``: none).

    ``clamp``: the coordinates are ``where(x < clamp, x, 0)`` of
    ``x = offset + arange`` under a ``max_contiguous`` hint that covers the
    tile (tutorial 09's ``offs_am = tl.where(offs_am < M, offs_am, 0)``,
    hinted contiguous). The hint is the user's promise that the clamped
    coordinates are contiguous, so they are ``clamp(offset) + arange``: the
    copy starts at the clamped offset and takes ``clamp`` as the axis's
    bound, so where the promise fails it reads zeros, never past the bound."""

    offset: Operand
    size: int
    wrap: Operand
    clamp: Operand | None = None
    # The coordinates widened to i64 (``.to(tl.int64)``, against overflow in
    # the product with the stride): the same values as the i32 ones, so the
    # mask tests them alike, but the copy scales them by an i64 stride.
    wide: bool = field(default=False, compare=False)
    # Gathered: the coordinate at position p of ``offset + arange(0, size)``
    # is the index array's element p (``gather``); the mask tests positions.
    gather: "Gather | None" = None


@dataclass(frozen=True, eq=False)
class Gather:
    """Coordinates loaded from an index array: ``load`` reads ``index[p]`` for
    the positions p of the axis (where ``p < bound``; None: everywhere)."""

    load: Op
    index: Operand  # a scalar pointer to i32 or i64
    bound: Operand | None
    # What the index load's mask tests: coordinates at this offset, where the positions are at that one
    # (the same element tested against the bound moved by the difference, as a tile's mask).
    shift: tuple[Operand, Operand] = (Const(0), Const(0))


@dataclass(frozen=True)
class Advance:
    """A pointer tile carried by ``loop`` and advanced by ``step`` elements an iteration."""

    loop: Op
    step: Operand


@dataclass(frozen=True)
class CarriedOffset:
    """A scalar offset the loop around a load carries (a block pointer's,
    moved by ``tl.advance``): ``init`` in the first iteration, then ``step``
    more each iteration (None: it stays ``init``)."""

    arg: BlockArg
    loop: Op
    init: Operand
    step: Operand | None


@dataclass(frozen=True, eq=False)
class StridedTile:
    """A 2-D tile at ``base + rows * row_stride + cols * col_stride``
    (``shifts`` added) where the mask's bounds hold: what a load is matched
    to for its copy (``StridedPlan``) and a store for its TMA (tma-stores)."""

    base: Operand  # a scalar pointer: the tile's origin (in the loop's first iteration when carried) ...
    shifts: tuple[Operand, ...]  # ... plus these integer scalars
    rows: WrappedAxis
    cols: WrappedAxis
    row_stride: Operand
    col_stride: Operand
    row_bound: Operand
    col_bound: Operand
    bound_shifts: tuple[tuple[Operand, Operand], tuple[Operand, Operand]]  # (mask offset, pointer offset)


@dataclass(frozen=True, eq=False)
class StridedPlan(StridedTile):
    """A tile load in a tutorial form, as ``copy_strided_to_shared`` spells it."""

    load: Op
    advance: Advance | None
    fill: Const
    carried: tuple[CarriedOffset, ...] = ()  # offsets above that the loop carries, recomputed from its index
    # The dot reads the load's tile transposed (``tl.trans(load)``, ``load.T``):
    # the axes above are the operand's, swapped from the load's; this op is the trans.
    transposed_by: Op | None = None
    # Bytes every row's first element is a multiple of, from a tl.multiple_of
    # on the carried pointer tile (Triton's tutorial 08): 0 where none says so.
    # The load's rows: a transposed plan's copy does not use it.
    row_starts: int = 0
    # (rows, columns): the copy tests that axis's coordinates >= 0 too (_lower_bound).
    lower_bounds: tuple[bool, bool] = (False, False)

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = shape_of(self.load.result.type)
        return (cols, rows) if self.transposed_by is not None else (rows, cols)

    @property
    def root(self) -> Op:
        """The op whose result the dot reads (erased once the copy replaces it)."""
        return self.transposed_by if self.transposed_by is not None else self.load

    def transposed(self, trans: Op) -> "StridedPlan":
        """The plan of ``trans(load)``: the same copy with rows and columns
        swapped, strides and bounds with them. A row-major [N, K] load read
        as its transpose becomes a [K, N] tile contiguous down its columns,
        stored column-major (K-major for wgmma), as ``x @ w.T`` is."""
        if self.rows.gather is not None:
            raise _Mismatch("its rows are gathered, and the transpose of a gathered tile is not staged")
        (row_shift, col_shift) = self.bound_shifts
        return StridedPlan(self.base, self.shifts, self.cols, self.rows, self.col_stride, self.row_stride,
                           self.col_bound, self.row_bound, (col_shift, row_shift), load=self.load,
                           advance=self.advance, fill=self.fill, carried=self.carried, transposed_by=trans,
                           row_starts=self.row_starts, lower_bounds=self.lower_bounds[::-1])

    @property
    def element(self) -> ScalarType:
        pointer = self.base.type
        assert isinstance(pointer, PointerType)
        return pointer.pointee

    @property
    def buffer_type(self) -> SharedType:
        return SharedType(self.shape, self.element)

    def copy_ops(self, buffer: Value, widen: Callable[[Operand, Location | None], Operand]) -> list[Op]:
        """The ops that compute the copy's base and bounds in this iteration, then
        the copy (``widen``: a stride as i64, cast once where it is defined)."""
        ops: list[Op] = []
        loc = self.load.loc

        def emit(name: str, operands: list[Operand], result_type) -> Value:
            op = Op(name, operands, [result_type], loc=loc)
            ops.append(op)
            return op.result

        def iterations_done(loop: Op) -> Operand:
            start, _, step = for_bounds(loop)
            done: Operand = for_index(loop)
            if start != Const(0):
                done = emit("sub", [done, start], I32)
            if step != Const(1):
                done = emit("floordiv", [done, step], I32)
            return done

        base = self.base
        for shift in self.shifts:
            base = emit("addptr", [base, shift], base.type)
        if self.advance is not None:
            done = iterations_done(self.advance.loop)
            base = emit("addptr", [base, emit("mul", [done, self.advance.step], I32)], base.type)
        row_stride = self.row_stride
        if self.row_starts and self.transposed_by is None:
            # Row 0 starts at the base (its columns from 0), and two rows next to
            # each other start a row stride apart: both are multiples too.
            def hinted(value: Operand, of: int) -> Operand:
                op = Op("hint", [value], [value.type], loc=loc, attrs={"kind": "multiple_of", "values": (of,)})
                ops.append(op)
                return op.result
            base = hinted(base, self.row_starts)
            if self.row_starts // self.element.nbytes > 1 and isinstance(row_stride, Value):
                row_stride = hinted(row_stride, self.row_starts // self.element.nbytes)
        # A carried offset in this iteration: its first value plus the steps
        # taken, so that the copy depends on the loop index alone.
        now: dict[Operand, Operand] = {}
        for carried in self.carried:
            if carried.step is None:
                now[carried.arg] = carried.init
            else:
                start, _, loop_step = for_bounds(carried.loop)
                if carried.step == loop_step:  # advanced as the index is (tl.advance by BLOCK_K): k - start
                    moved = for_index(carried.loop) if start == Const(0) else \
                        emit("sub", [for_index(carried.loop), start], I32)
                else:
                    moved = emit("mul", [iterations_done(carried.loop), carried.step], I32)
                now[carried.arg] = moved if carried.init == Const(0) else emit("add", [carried.init, moved], I32)

        def at(offset: Operand) -> Operand:
            return now.get(offset, offset) if isinstance(offset, BlockArg) else offset

        bounds = []
        for bound, (mask_offset, pointer_offset) in zip((self.row_bound, self.col_bound), self.bound_shifts):
            mask_offset, pointer_offset = at(mask_offset), at(pointer_offset)
            if mask_offset != pointer_offset:  # offset_m + i < bound  <=>  offset_p + i < bound - offset_m + offset_p
                if mask_offset != Const(0):
                    bound = emit("sub", [bound, mask_offset], I32)
                if pointer_offset != Const(0):
                    bound = emit("add", [bound, pointer_offset], I32)
            bounds.append(bound)
        def start(axis: WrappedAxis) -> Operand:
            offset = at(axis.offset)
            if axis.clamp is None:
                return offset
            inside = emit("cmp_lt", [offset, axis.clamp], BOOL)
            return emit("where", [inside, offset, Const(0)], I32)

        def scaling(axis: WrappedAxis, stride: Operand) -> Operand:
            """The stride, widened to i64 where the kernel scales 64-bit coordinates by it."""
            return widen(stride, loc) if axis.wide and concrete(stride.type) != I64 else stride

        strides = [scaling(self.rows, row_stride), scaling(self.cols, self.col_stride)]
        gather = self.rows.gather
        if gather is not None:  # (no wraps: _gathered_axis)
            operands = [buffer, base, gather.index, start(self.rows), start(self.cols), *strides, *bounds, self.fill]
            ops.append(Op("copy_gathered_to_shared", operands, [], loc=loc))
            return ops
        operands = [buffer, base, start(self.rows), start(self.cols), *strides,
                    bounds[0], bounds[1], self.rows.wrap, self.cols.wrap, self.fill]
        attrs = {LOWER_BOUNDS: tuple(int(flag) for flag in self.lower_bounds)} if any(self.lower_bounds) else {}
        ops.append(Op("copy_strided_to_shared", operands, [], attrs, loc=loc))
        return ops


def _match_strided_load(defs: Definitions, value: Operand) -> StridedPlan:
    load = defs.defined_by(value, "load")
    if load is None:
        raise _Mismatch("the operand is not a load")
    ptr, mask, other = load.operands
    advance = None
    hints: list[Op] = []
    while (hint := defs.defined_by(ptr, "hint")) is not None and isinstance(hint.operands[0], BlockArg):
        hints.append(hint)  # tl.multiple_of(a_ptrs, ...) on the carried pointer, Triton's tutorial 08
        ptr = hint.operands[0]
    tile_ptr = ptr
    if isinstance(ptr, BlockArg):
        advance = _match_advance(load, ptr)
        loop = advance.loop
        tile_ptr = for_inits(loop)[ptr.index - 1]
    elif hints:
        raise _Mismatch("the hinted pointer is not a carried value of a for loop")
    base, shifts, rows, row_stride, cols, col_stride = _match_strided_pointer(defs, tile_ptr)
    if shape_of(load.result.type) != (rows.size, cols.size):
        raise _Mismatch(f"the load's tile {load.result.type} is not [{rows.size}, {cols.size}]")
    ((row_bound, row_shift), (col_bound, col_shift)), lower_bounds = _match_strided_mask(defs, mask, rows, cols)
    if cols.gather is not None:
        raise _Mismatch("its columns are gathered; a gathered tile is copied by rows")
    if rows.gather is not None and any(lower_bounds):
        raise _Mismatch("its rows are gathered, and the mask tests coordinates >= 0 that may be negative")
    if rows.gather is not None and rows.gather.bound is not None \
            and (row_bound != rows.gather.bound or row_shift != rows.gather.shift):
        raise _Mismatch("its rows are gathered, and the load's mask does not test their positions against the "
                        "bound of the index load's mask")
    if rows.clamp is not None:
        row_bound = _clamp_bound(rows, row_bound)
    if cols.clamp is not None:
        col_bound = _clamp_bound(cols, col_bound)
    offsets = [rows.offset, cols.offset, *row_shift, *col_shift]
    carried = tuple({arg: found for arg in offsets if (found := _carried_offset(load, arg)) is not None}.values())
    pointee = base.type.pointee if isinstance(base.type, PointerType) else None
    if other is None and mask is None:
        fill = Const(0.0) if pointee is not None and pointee.is_float else Const(0)
    elif other in ZERO_FILLS:
        assert isinstance(other, Const)
        fill = other
    else:
        raise _Mismatch("the load does not fill masked-off elements with 0 or 0.0")
    return StridedPlan(base, tuple(shifts), rows, cols, row_stride, col_stride, row_bound, col_bound,
                       (row_shift, col_shift), load=load, advance=advance, fill=fill, carried=carried,
                       row_starts=_row_starts(defs, hints, rows, cols, col_stride, pointee), lower_bounds=lower_bounds)


def _row_starts(defs: Definitions, hints: list[Op], rows: WrappedAxis, cols: WrappedAxis, col_stride: Operand,
                pointee: ScalarType | None) -> int:
    """Bytes the copy's base and row stride are multiples of, as a
    ``tl.multiple_of(ptr, [_, d])`` on the carried pointer tile says (Triton's
    meaning: the first element of each contiguous run along the last axis,
    here each row's start, is a multiple of d bytes): two rows next to each
    other then start a stride apart, and row 0 at the base plus its first
    column, which must be a known multiple too. 0 where that does not follow."""
    divisor = max((pow2_divisor(hint.attrs["values"][1]) for hint in hints
                   if hint.attrs.get("kind") == "multiple_of" and len(hint.attrs.get("values", ())) == 2), default=0)
    if divisor < 2 or pointee is None or not (isinstance(col_stride, Const) and col_stride.value == 1):
        return 0
    if rows.wrap != NO_WRAP or cols.wrap != NO_WRAP or rows.clamp is not None or cols.clamp is not None \
            or rows.size < 2 or rows.gather is not None:
        return 0
    if _known_multiple(defs, cols.offset) * pointee.nbytes % divisor:
        return 0
    return divisor


def _known_multiple(defs: Definitions, value: Operand, depth: int = 0) -> int:
    """A power of two the i32 scalar ``value`` is a multiple of, as literals,
    products and sums show (1 where nothing does)."""
    if isinstance(value, Const):
        return pow2_divisor(value.value) if type(value.value) is int and value.value else 1 << 30
    op = defs.op(value)
    if op is None or depth > 8:
        return 1
    if op.name == "mul":
        return min(1 << 30, _known_multiple(defs, op.operands[0], depth + 1)
                   * _known_multiple(defs, op.operands[1], depth + 1))
    if op.name in ("add", "sub"):
        return min(_known_multiple(defs, operand, depth + 1) for operand in op.operands)
    return 1


def _clamp_bound(axis: WrappedAxis, bound: Operand) -> Operand:
    """A clamped axis's bound is its clamp's (the mask must not test it too)."""
    if bound != NO_BOUND:
        raise _Mismatch("the mask tests coordinates that are also clamped with tl.where")
    assert axis.clamp is not None
    return axis.clamp


def _carried_offset(load: Op, offset: Operand) -> CarriedOffset | None:
    """``offset`` as a carried offset of the for loop whose body holds
    ``load`` (``off = off + step`` each iteration, or passed on unchanged:
    a block pointer's offsets that ``tl.advance`` moves or leaves); None if
    it is not a value that loop carries, or one it changes another way (the
    copy then reads the carried value itself, and the loop is not pipelined)."""
    if not isinstance(offset, BlockArg) or offset.block is not load.parent:
        return None
    loop = offset.block.parent
    if loop is None or loop.name != "for" or offset is for_index(loop):
        return None
    terminator = for_yield(loop)
    if terminator is None:
        return None
    init = for_inits(loop)[offset.index - 1]
    after = terminator.operands[offset.index - 1]
    if after is offset:
        return CarriedOffset(offset, loop, init, None)
    add = after.op if isinstance(after, OpResult) and after.op.name == "add" else None
    for value, step in _orders(add.operands) if add is not None else ():
        if value is offset and _is_i32_scalar(step) and not _defined_in(step, offset.block):
            return CarriedOffset(offset, loop, init, step)
    return None


def non_negative(defs: Definitions, value: Operand, depth: int = 0, assumed: frozenset = frozenset()) -> bool:
    """Whether the i32 scalar ``value`` is never negative, as far as a
    few rules tell (program ids, literals, sums, products and quotients
    of such, a for loop's index counting up from one, an offset it
    carries and advances by one, the parameters ``assumed``); i32 overflow aside."""
    if depth > 16:
        return False
    if isinstance(value, Const):
        return type(value.value) is int and value.value >= 0
    if isinstance(value, Param):
        return value in assumed
    if isinstance(value, BlockArg):
        loop = value.block.parent
        if loop is None or loop.name != "for":
            return False
        if value is for_index(loop):
            start, _, step = for_bounds(loop)
            return non_negative(defs, start, depth + 1, assumed) and non_negative(defs, step, depth + 1, assumed)
        terminator = for_yield(loop)
        if terminator is None:
            return False
        after = terminator.operands[value.index - 1]
        if not non_negative(defs, for_inits(loop)[value.index - 1], depth + 1, assumed):
            return False
        if after is value:
            return True
        add = defs.defined_by(after, "add")
        return add is not None and any(first is value and non_negative(defs, other, depth + 1, assumed)
                                       for first, other in _orders(add.operands))
    op = defs.op(value)
    if op is None:
        return False
    if op.name in ("program_id", "num_programs"):
        return True
    if op.name == "mod":  # the remainder takes the dividend's sign (C's, Triton's): tutorial 03's pid_m
        return non_negative(defs, op.operands[0], depth + 1, assumed)
    if op.name in ("add", "mul", "floordiv", "minimum", "hint"):
        return all(non_negative(defs, operand, depth + 1, assumed) for operand in op.operands if operand is not None)
    if op.name == "maximum":
        return any(non_negative(defs, operand, depth + 1, assumed) for operand in op.operands)
    return False


def _match_advance(load: Op, ptr: BlockArg) -> Advance:
    """``ptr``, a value the loop around ``load`` carries, advanced by a
    loop-invariant scalar each iteration (``ptr += step``)."""
    body = ptr.block
    loop = body.parent
    if loop is None or loop.name != "for" or ptr is for_index(loop) or load.parent is not body:
        raise _Mismatch("the pointer is a carried value of no for loop around the load")
    if for_index(loop).type != I32:
        raise _Mismatch("the loop's index is not i32")
    _, _, loop_step = for_bounds(loop)
    if not (isinstance(loop_step, Const) and type(loop_step.value) is int and loop_step.value > 0):
        raise _Mismatch("the loop's step is not a positive literal")
    terminator = for_yield(loop)
    if terminator is None:
        raise _Mismatch("the loop yields nothing")
    step_op = terminator.operands[ptr.index - 1]
    steps: list[Operand] = []
    while isinstance(step_op, Value) and step_op is not ptr:
        if isinstance(step_op, OpResult) and step_op.op.name == "hint":  # tl.multiple_of(a_ptrs, ...) in the body
            step_op = step_op.op.operands[0]
            continue
        add = step_op.op if isinstance(step_op, OpResult) and step_op.op.name == "addptr" else None
        if add is None:
            raise _Mismatch("the carried pointer is not advanced by addptr each iteration")
        step_op, offset = add.operands
        if not (_is_i32_scalar(offset) and not _defined_in(offset, body)):
            raise _Mismatch("the carried pointer advances by something other than a loop-invariant i32 scalar")
        steps.append(offset)
    if step_op is not ptr or len(steps) != 1:
        raise _Mismatch("the carried pointer is not advanced by one addptr each iteration")
    return Advance(loop, steps[0])


def _defined_in(value: Operand, block) -> bool:
    return isinstance(value, Value) and is_within(defining_block(value), block)


def _match_strided_pointer(defs: Definitions, ptr: Operand) -> tuple[Operand, list[Operand], WrappedAxis, Operand,
                                                                       WrappedAxis, Operand]:
    """``base + rows * row_stride + cols * col_stride`` (base a scalar
    pointer), plus scalars added to the tile: (base, the scalars, rows,
    row_stride, cols, col_stride)."""
    terms: list[Operand] = []
    shifts: list[Operand] = []  # scalars added to the whole tile (tile + lo * stride): they move the base
    base = ptr
    while isinstance(base, Value) and isinstance(base.type, BlockType) \
            and (step := defs.defined_by(base, "addptr")) is not None:
        base, offset = step.operands
        if _is_index_tile(offset):
            terms.append(offset)
        elif isinstance(offset, (Value, Const)) and not shape_of(offset.type) and _is_integer(offset):
            shifts.append(offset)
        else:
            raise _Mismatch(_gather_reason(defs, ptr) or POINTER_REASON)
    if not (isinstance(base, Value) and isinstance(base.type, PointerType)):
        raise _Mismatch("the pointer's base is not a scalar pointer")
    flat: list[Operand] = []
    while terms:
        term = terms.pop()
        add = defs.defined_by(term, "add")
        if add is not None and _row_and_column(add.operands):
            terms += add.operands
        else:
            flat.append(term)
    if len(flat) != 2:
        raise _Mismatch(_gather_reason(defs, ptr) or POINTER_REASON)
    found: dict[int, tuple[WrappedAxis, Operand]] = {}
    for term in flat:
        for axis in (ROWS, COLUMNS):
            scaled = _scaled_axis(defs, term, axis)
            if scaled is not None:
                found[axis] = scaled
    if set(found) != {ROWS, COLUMNS}:
        raise _Mismatch(_gather_reason(defs, ptr) or POINTER_REASON)
    (rows, row_stride), (cols, col_stride) = found[ROWS], found[COLUMNS]
    return base, shifts, rows, row_stride, cols, col_stride


# The ops a tile's coordinates pass through on their way into its pointer.
_COORDINATE_OPS = ("addptr", "add", "sub", "mul", "expand_dims", "broadcast", "cast")


def _gather_reason(defs: Definitions, ptr: Operand) -> str | None:
    """Why a pointer tile is no tutorial form, where an axis's coordinates
    are loaded (a gather: Liger's fused MoE picks each token's row of x by an
    index it loads), or else widened to 64 bits in a way the copies do not
    take (a 64-bit offset, ``pid.to(tl.int64) * BM + arange``: the copies
    take i32 coordinates, widened only as a whole), said with the op's line;
    None where neither is."""
    work: list[tuple[Operand, int | None]] = [(ptr, None)]
    widened: Op | None = None
    for _ in range(64):  # a bounded walk back through the coordinate arithmetic
        if not work:
            break
        value, axis = work.pop()
        op = defs.op(value) if isinstance(value, Value) else None
        if op is None:
            continue
        if op.name == "load" and axis is not None and isinstance(value.type, BlockType):  # (a scalar's is an offset)
            which = "rows" if axis == ROWS else "columns"
            return (f"its {which} are gathered: their coordinates are loaded (the load{_at(op)}), not an offset "
                    f"plus tl.arange, and a gathered tile is not staged")
        if op.name == "cast" and element_of(op.result.type).nbytes == 8 and getattr(element_of(op.result.type), "is_int", False):
            widened = widened or op
        if op.name == "expand_dims":
            axis = op.attrs.get("axis")
        if op.name in _COORDINATE_OPS:
            work += [(operand, axis) for operand in op.operands]
    if widened is not None:
        return (f"its offsets are 64-bit integers (the cast{_at(widened)}) before tl.arange is added; the staged "
                "copies take i32 coordinates, widened as a whole ((offset + tl.arange(0, n)).to(tl.int64)) or not at "
                "all")
    return None


def _at(op: Op) -> str:
    return f" at {op.loc.line}:{op.loc.col}" if op.loc is not None else ""


def _is_integer(operand: Operand) -> bool:
    if isinstance(operand, Const):
        return type(operand.value) is int
    return isinstance(operand.type, ScalarType) and operand.type.is_int


def _row_and_column(pair: list[Operand]) -> bool:
    """An [R, 1] tile and a [1, C] one, in either order."""
    shapes = {shape_of(x.type) if isinstance(x, Value) else () for x in pair}
    return len(shapes) == 2 and all(len(s) == 2 for s in shapes) and {s[0] == 1 for s in shapes} == {True, False} \
        and all(1 in s for s in shapes)


def _scaled_axis(defs: Definitions, value: Operand, axis: int) -> tuple[WrappedAxis, Operand] | None:
    """``axis_tile * stride`` (either order) or ``axis_tile`` (stride 1)."""
    found = _wrapped_axis(defs, value, axis)
    if found is not None:
        return found, Const(1)
    product = defs.defined_by(value, "mul")
    if product is None:
        return None
    for tile, stride in _orders(product.operands):
        if _is_index_scalar(stride):
            found = _wrapped_axis(defs, tile, axis)
            if found is not None:
                return found, stride
    return None


def _wrapped_axis(defs: Definitions, value: Operand, axis: int) -> WrappedAxis | None:
    try:
        plain = _axis(defs, value, axis)
    except _Mismatch:
        return None
    if plain is not None:
        return WrappedAxis(plain.offset, plain.size, NO_WRAP)
    expand = defs.defined_by(value, "expand_dims")
    if expand is None or expand.attrs.get("axis") != axis:
        return None
    return _vector_axis(defs, expand.operands[0])


def _vector_axis(defs: Definitions, value: Operand) -> WrappedAxis | None:
    """A 1-D ``[offset +] arange(0, n)``, through hints, optionally ``% wrap``,
    or clamped to 0 past a bound under a ``max_contiguous`` hint."""
    contiguous = 0
    while (hint := defs.defined_by(value, "hint")) is not None:
        if hint.attrs.get("kind") == "max_contiguous":
            contiguous = max(contiguous, *hint.attrs.get("values", (0,)))
        value = hint.operands[0]
    widen = defs.defined_by(value, "cast")
    if widen is not None and widen.result.type.element == I64 and _is_i32_vector(widen.operands[0]):
        narrow = _vector_axis(defs, widen.operands[0])
        return None if narrow is None else replace(narrow, wide=True)
    indices = defs.defined_by(value, "load")
    if indices is not None:
        return _gathered_axis(defs, indices)
    clamped = _clamped_axis(defs, value)
    if clamped is not None:
        return clamped if contiguous >= clamped.size else None
    wrap: Operand = NO_WRAP
    modulo = defs.defined_by(value, "mod")
    if modulo is not None and _is_i32_scalar(modulo.operands[1]):
        value, wrap = modulo.operands
        while (hint := defs.defined_by(value, "hint")) is not None:
            value = hint.operands[0]
    try:
        size = _arange_size(defs, value)
        if size is not None:
            return WrappedAxis(Const(0), size, wrap)
        add = defs.defined_by(value, "add")
        if add is not None:
            for offset, arange in _orders(add.operands):
                size = _arange_size(defs, arange) if _is_i32_scalar(offset) else None
                if size is not None:
                    return WrappedAxis(offset, size, wrap)
            # offset + (offset' + arange): Liger's expert_start + (k + arange), one offset their sum
            for offset, inner in _orders(add.operands):
                if not (_is_i32_scalar(offset) and _is_i32_vector(inner)) or wrap != NO_WRAP:
                    continue
                shifted = _vector_axis(defs, inner)
                if shifted is not None and shifted == WrappedAxis(shifted.offset, shifted.size, NO_WRAP) \
                        and not shifted.wide:
                    return WrappedAxis(_pending_sum(defs, add, offset, shifted.offset), shifted.size, NO_WRAP)
    except _Mismatch:
        return None
    return None


def _pending_sum(defs: Definitions, add: Op, first: Operand, second: Operand) -> Operand:
    """The scalar sum of the offsets a nested vector addition ``add`` makes:
    one op (``defs.made``), put before ``add`` only when a copy uses it
    (``_insert_pending``)."""
    if second == Const(0):
        return first
    if add not in defs.made:
        defs.made[add] = Op("add", [first, second], [I32], loc=add.loc)
    return defs.made[add].result


def _insert_pending(defs: Definitions, ops: list[Op]) -> None:
    """Put each pending sum ``ops`` use in the IR, before the addition it comes from."""
    pending = {made: origin for origin, made in defs.made.items()}
    for op in ops:
        for operand in op.operands:
            made = operand.op if isinstance(operand, OpResult) else None
            if made in pending and made.parent is None:
                _insert_pending(defs, [made])  # (its operands may be pending sums too)
                insert_before(pending[made], made)


def _gathered_axis(defs: Definitions, load: Op) -> WrappedAxis | None:
    """``load(index + p, p < bound)`` of a 1-D ``p = [offset +] arange(0, n)``
    (or unmasked): the rows it names, gathered (Liger's fused MoE:
    ``token_idx = tl.load(x_gather_idx_ptr + row_offs, mask=row_mask)``)."""
    ptr, mask, _ = load.operands
    step = defs.defined_by(ptr, "addptr")
    if step is None:
        return None
    index, positions = step.operands
    pointee = index.type.pointee if isinstance(index, Value) and isinstance(index.type, PointerType) else None
    if pointee not in (I32, I64) or len(shape_of(positions.type)) != 1:
        return None
    position = _vector_axis(defs, positions)
    if position is None or position.gather is not None or position.wrap != NO_WRAP or position.clamp is not None:
        return None
    bound, shift = None, (Const(0), Const(0))
    if mask is not None:
        compare = defs.defined_by(mask, "cmp_lt")
        tested = _vector_axis(defs, compare.operands[0]) if compare is not None else None
        if tested is None or tested.size != position.size or tested.wrap != NO_WRAP or tested.clamp is not None \
                or tested.gather is not None or not _is_i32_scalar(compare.operands[1]):
            return None
        bound = compare.operands[1]
        if tested != position:  # (Liger's k_idx < M_e, the positions expert_start + k_idx)
            shift = (tested.offset, position.offset)
    return replace(position, wide=pointee == I64, gather=Gather(load, index, bound, shift))


def _clamped_axis(defs: Definitions, value: Operand) -> WrappedAxis | None:
    """``where(x < bound, x, 0)`` with ``x = [offset +] arange(0, n)``."""
    select = defs.defined_by(value, "where")
    if select is None:
        return None
    test, x, zero = select.operands
    compare = defs.defined_by(test, "cmp_lt")
    if zero != Const(0) or compare is None or compare.operands[0] != x or not _is_i32_scalar(compare.operands[1]):
        return None
    inner = _vector_axis(defs, x)
    if inner is None or inner.wrap != NO_WRAP or inner.clamp is not None:
        return None
    return WrappedAxis(inner.offset, inner.size, NO_WRAP, compare.operands[1])


def _match_strided_mask(defs: Definitions, mask: Operand | None, rows: WrappedAxis,
                        cols: WrappedAxis) -> tuple[tuple[tuple[Operand, tuple[Operand, Operand]], ...],
                                                    tuple[bool, bool]]:
    """Each axis's bound and (mask offset, pointer offset): NO_BOUND for an
    axis the mask does not test; and whether the copy must test each axis's
    coordinates against 0 too (see ``_lower_bound``)."""
    found: dict[int, tuple[Operand, tuple[Operand, Operand]]] = {}
    lower = [False, False]
    tests: list[Operand] = [] if mask is None else [mask]
    while tests:
        test = tests.pop()
        both = defs.defined_by(test, "and")
        if both is not None:
            tests += both.operands
            continue
        tested = _lower_test(defs, test)
        if tested is not None:
            axis, coordinate = tested
            lower[axis] = lower[axis] or _lower_bound(defs, coordinate, rows if axis == ROWS else cols)
            continue
        axis, coordinate, bound = _axis_test(defs, test)
        pointer_axis = rows if axis == ROWS else cols
        if coordinate.gather is not None:
            raise _Mismatch("the mask tests gathered coordinates, not their positions")
        if pointer_axis.gather is not None:  # the mask tests the positions the rows are gathered from
            pointer_axis = replace(pointer_axis, gather=None)
        if axis in found or coordinate.size != pointer_axis.size:
            raise _Mismatch(MASK_REASON)
        if coordinate == pointer_axis:
            found[axis] = (bound, (Const(0), Const(0)))
        elif coordinate.wrap == NO_WRAP and pointer_axis.wrap == NO_WRAP:
            found[axis] = (bound, (coordinate.offset, pointer_axis.offset))
        else:
            raise _Mismatch(MASK_REASON)
    for axis in (ROWS, COLUMNS):
        if lower[axis] and found.get(axis, (NO_BOUND, (Const(0), Const(0))))[1] != (Const(0), Const(0)):
            raise _Mismatch("the mask tests coordinate >= 0 on the pointer's coordinates and their upper bound "
                            "on others")
    bounds = tuple(found.get(axis, (NO_BOUND, (Const(0), Const(0)))) for axis in (ROWS, COLUMNS))
    return bounds, (lower[ROWS], lower[COLUMNS])


def _lower_bound(defs: Definitions, coordinate: WrappedAxis, pointer_axis: WrappedAxis) -> bool:
    """Whether the copy must test ``coordinate >= 0`` itself (Triton's
    boundary_check and a tensor descriptor's mask test it): False where the
    coordinates are provably never negative. A descriptor's rows often are
    not provable (``off_z * (N_CTX * H) + ...`` of runtime sizes, a grouped
    place from a ``min``): the copy then skips rows before 0 as a mask does,
    which it can only do on plain coordinates, the pointer's own."""
    if coordinate != pointer_axis:
        raise _Mismatch("the mask tests coordinate >= 0 on other coordinates than the pointer's")
    if non_negative(defs, pointer_axis.offset):
        return False
    if pointer_axis.wrap != NO_WRAP or pointer_axis.clamp is not None or pointer_axis.gather is not None:
        raise _Mismatch("the mask tests coordinate >= 0 on coordinates that may be negative and are wrapped, "
                        "clamped or gathered")
    return True


def _lower_test(defs: Definitions, test: Operand) -> tuple[int, WrappedAxis] | None:
    """``axis_tile >= 0`` (a block pointer's boundary_check): (axis, coordinate); None for any other test."""
    compare = defs.defined_by(test, "cmp_ge")
    if compare is None or compare.operands[1] not in (Const(0),) or not isinstance(compare.operands[0], Value):
        return None
    shape = shape_of(compare.operands[0].type)
    if len(shape) != 2 or 1 not in shape:
        return None
    axis = ROWS if shape[1] == 1 else COLUMNS
    coordinate = _wrapped_axis(defs, compare.operands[0], axis)
    return None if coordinate is None else (axis, coordinate)


def _axis_test(defs: Definitions, test: Operand) -> tuple[int, WrappedAxis, Operand]:
    """``axis_tile < bound``, or ``expand_dims(vector < bound)``: (axis, coordinate, bound)."""
    expand = defs.defined_by(test, "expand_dims")
    if expand is not None:
        compare = defs.defined_by(expand.operands[0], "cmp_lt")
        axis = expand.attrs.get("axis")
        if compare is None or axis not in (ROWS, COLUMNS):
            raise _Mismatch(MASK_REASON)
        coordinate = _vector_axis(defs, compare.operands[0])
    else:
        compare = defs.defined_by(test, "cmp_lt")
        if compare is None or not isinstance(compare.operands[0], Value):
            raise _Mismatch(MASK_REASON)
        shape = shape_of(compare.operands[0].type)
        if len(shape) != 2 or 1 not in shape:
            raise _Mismatch(MASK_REASON)
        axis = ROWS if shape[1] == 1 else COLUMNS
        coordinate = _wrapped_axis(defs, compare.operands[0], axis)
    bound = compare.operands[1]
    if coordinate is None or not _is_i32_scalar(bound):
        raise _Mismatch(MASK_REASON)
    return axis, coordinate, bound


def match_tile_store(defs: Definitions, store: Op) -> StridedTile | str:
    """``store`` as a tile at a base, its rows and columns, strides and
    bounds, as the copies of a dot's operands are matched; else why not."""
    ptr, value, mask = store.operands
    if not isinstance(ptr, Value) or len(shape_of(ptr.type)) != 2:
        return "it is no 2-D tile"
    try:
        base, shifts, rows, row_stride, cols, col_stride = _match_strided_pointer(defs, ptr)
        if shape_of(ptr.type) != (rows.size, cols.size):
            return f"its pointer tile {ptr.type} is not [{rows.size}, {cols.size}]"
        ((row_bound, row_shift), (col_bound, col_shift)), lower_bounds = _match_strided_mask(defs, mask, rows, cols)
        if any(lower_bounds):
            return "its mask tests coordinates >= 0 that may be negative"
    except _Mismatch as mismatch:
        return mismatch.reason.replace("of the load", "of the store")
    return StridedTile(base, tuple(shifts), rows, cols, row_stride, col_stride, row_bound, col_bound,
                       (row_shift, col_shift))


def insert_pending(defs: Definitions, ops: list[Op]) -> None:
    """Put the sums of nested offsets ``ops`` read (a match's) in the IR."""
    _insert_pending(defs, ops)


# ---- planning and rewriting ----------------------------------------------------------------


def plan_dots(kernel: Kernel, defs: Definitions, budget: int = SHARED_MEMORY_BUDGET) -> list[DotPlan]:
    """The dots to stage, in program order. Raises if their buffers, with the
    kernel's existing ones, do not fit in the shared-memory budget."""
    used = sum(op.results[0].type.nbytes for op in walk(kernel.body) if allocates(op))
    matched = []
    read_elsewhere = _read_elsewhere(kernel)
    for op in walk(kernel.body):
        if op.name != "dot":
            continue
        plan = match_dot(defs, op, read_elsewhere)
        if isinstance(plan, NotCanonical):
            remarks.note(kernel, op, remarks.STAGING, plan.remark)
        else:
            matched.append(plan)
    # A dot in a tutorial form (a strided copy) is staged only where its
    # buffers leave room for the scratch of what stays unstaged (attention's
    # P @ V, its reductions): otherwise it keeps the general path, as before.
    while True:
        # (A dot_rs off wgmma stages its register A through scratch: not "staged" here.)
        reserve = _scratch_reserve(kernel, frozenset(plan.dot for plan in matched if plan.a is not None),
                                   frozenset(plan.dot for plan in matched if plan.a is None))
        taken, room, once, shared = [], _Room(used), set(), set()
        for plan in matched:
            # (The layouts stage pads the buffers' rows, and the back end's
            # scratch is known only while emitting: a margin for both.)
            nbytes = _new_bytes(plan, once, shared)
            beside = room.after(plan, once, shared) - nbytes
            if plan.strided and beside + nbytes * 5 // 4 + 2 * reserve > budget:
                remarks.note(kernel, plan.dot, remarks.STAGING,
                             f"its tiles in a tutorial form take {nbytes} bytes, and with room for row padding "
                             f"(a quarter more) and twice the {reserve} bytes of scratch that what stays unstaged "
                             f"may need, beside {beside} bytes already taken, they would pass the "
                             f"{budget_text(budget)} budget")
                continue
            room.take(plan, once, shared)
            once |= _copied_once(plan)
            shared.add(_reuse_key(plan))
            taken.append(plan)
        # P @ V is staged only beside a staged Q @ K^T: a dot_rs whose loop
        # body keeps another dot on the general path would read P converted
        # from that dot's layout through shared memory (and crowd the budget).
        staged = {plan.dot for plan in taken}
        beside = [plan for plan in taken if plan.a is not None or all(
            op in staged for op in plan.dot.parent.ops if op.name == "dot")]
        for plan in taken:
            if plan not in beside:
                remarks.note(kernel, plan.dot, remarks.STAGING,
                             "A is computed in registers (a dot_rs), which is staged only where every other dot "
                             "of its loop body is staged too, and one is not")
        taken = beside
        if len(taken) == len(matched):
            break
        matched = taken
    plans: list[DotPlan] = []
    once, shared = set(), set()  # (shared: the _reuse_keys of the pairs taken)
    room = _Room(used)
    for plan in matched:
        op = plan.dot
        nbytes = _new_bytes(plan, once, shared)
        beside = room.after(plan, once, shared) - nbytes
        if beside + nbytes > budget:
            earlier = f", and {beside} bytes are already allocated" if beside else ""
            raise CompileError(
                f"tl.dot needs {nbytes} bytes of shared memory to stage {plan.describe()}{earlier}, "
                f"over the {budget_text(budget)} budget", op.loc)
        room.take(plan, once, shared)
        once |= _copied_once(plan)
        shared.add(_reuse_key(plan))
        plans.append(plan)
    return plans


def _read_elsewhere(kernel: Kernel) -> frozenset[Value]:
    """The loaded tiles an op other than a dot reads."""
    return frozenset(operand for op in walk(kernel.body) if op.name != "dot" for operand in op.operands
                     if isinstance(operand, OpResult) and operand.op.name == "load")


def phase_of(dot: Op) -> Op | None:
    """The top-level loop around ``dot``, if any. The buffers of its tiles
    (but those copied once before the loop) are used in that loop alone and,
    after it, a drained barrier (``_stage`` sees to it) lets a later loop's
    buffers take their bytes (``buffer_liveness``): the causal attention's
    two K loops need the room of one."""
    op = dot
    while op.parent is not None and op.parent.parent is not None:
        op = op.parent.parent
    return op if op is not dot and op.name in ("for", "while") else None


class _Room:
    """The shared bytes the plans taken so far need: what every loop's dots
    share (the kernel's earlier buffers, tiles copied once before a loop,
    top-level dots' pairs) and, beside it, the most any one top-level loop's
    own tiles take."""

    def __init__(self, used: int) -> None:
        self.common = used
        self.phases: dict[Op, int] = {}

    def _split(self, plan: DotPlan, once: set[Op], shared: set[tuple]) -> tuple[int, int, Op | None]:
        """The bytes ``plan`` adds (``_new_bytes``) in common and to its loop's own, and that loop."""
        phase = phase_of(plan.dot)
        key = _reuse_key(plan)
        if key is not None and key in shared:
            return 0, 0, phase
        common = own = 0
        for tile in plan.tiles:
            if tile.load in once and _before_loop(plan, tile):
                continue
            if phase is None or _before_loop(plan, tile):
                common += tile.buffer_type.nbytes  # live across the loops, or in none
            else:
                own += tile.buffer_type.nbytes
        return common, own, phase

    def after(self, plan: DotPlan, once: set[Op], shared: set[tuple]) -> int:
        """The bytes needed once ``plan`` is taken too."""
        common, own, phase = self._split(plan, once, shared)
        phases = dict(self.phases)
        if phase is not None:
            phases[phase] = phases.get(phase, 0) + own
        return self.common + common + max(phases.values(), default=0)

    def take(self, plan: DotPlan, once: set[Op], shared: set[tuple]) -> None:
        """Count ``plan`` in (before ``once`` and ``shared`` take it in)."""
        common, own, phase = self._split(plan, once, shared)
        self.common += common
        if phase is not None:
            self.phases[phase] = self.phases.get(phase, 0) + own


def _before_loop(plan: DotPlan, tile: "TilePlan | StridedPlan") -> bool:
    """Whether ``_stage`` copies ``tile`` once, before the loop around the dot
    (a loop-invariant tile in a tutorial form: attention's Q)."""
    return isinstance(tile, StridedPlan) and _loop_around(plan.dot, tile.load) is not None


def _copied_once(plan: DotPlan) -> set[Op]:
    """The loads of ``plan``'s tiles copied once before their loop (``_stage``
    gives a later such dot of the same load the same buffer)."""
    return {tile.load for tile in plan.tiles if _before_loop(plan, tile)}


def _new_bytes(plan: DotPlan, once: set[Op], shared: set[tuple] | None = None) -> int:
    """The shared bytes ``plan`` adds: not those of a tile an earlier plan copies
    once, nor any where an earlier top-level dot's pair serves (``shared``: the
    ``_reuse_key``s of the pairs taken)."""
    key = _reuse_key(plan)
    if key is not None and shared is not None and key in shared:
        return 0
    return sum(tile.buffer_type.nbytes for tile in plan.tiles
               if not (tile.load in once and _before_loop(plan, tile)))


def _reuse_key(plan: DotPlan) -> tuple | None:
    """What top-level dots (in no loop or branch) must have in common to share
    one pair of buffers; None for a dot in a region. Such a dot's copies, its
    barrier, the product and the barrier after it run in program order, so the
    next one's copies never overwrite tiles still being read: Triton's
    allocator reuses dead buffers the same way. An unrolled
    ``tl.static_range`` over K (Liger's mhc forward: K/256 dots of 32x256 by
    256x32 tiles) otherwise takes a pair per dot, past the budget from K = 2048."""
    dot = plan.dot
    if dot.parent is None or dot.parent.parent is not None:
        return None
    attrs = tuple(sorted((name, repr(value)) for name, value in dot.attrs.items()))
    return (plan.a is None, tuple(tile.buffer_type for tile in plan.tiles), attrs, str(dot.result.type))


def _scratch_reserve(kernel: Kernel, staged: frozenset[Op], register_a: frozenset[Op]) -> int:
    from mytriton.passes.software_pipeline import scratch_reserve  # (pipeline imports nothing from here)
    return scratch_reserve(kernel, staged, register_a=register_a)




def _stage(kernel: Kernel, defs: Definitions, plans: list[DotPlan]) -> None:
    taken = {op.attrs.get("name") for op in walk(kernel.body) if allocates(op)}
    phases = list(dict.fromkeys(phase for phase in map(phase_of, (plan.dot for plan in plans)) if phase is not None))
    allocations: list[Op] = []
    loads: list[Op] = []
    index = 0
    # The first copy and the first barrier of each staged dot_shared, by the
    # dot it replaced: a later dot of the same loop body copies its tiles with
    # that dot's copies (the ops computing its operands before the first).
    groups: dict[Op, tuple[Op, Op]] = {}
    # The buffer of each tile a group copies, by the op whose result the dot
    # read (its load, or a trans of it), by the group's first barrier: a later
    # dot of the group reading the same tile reads that buffer (Liger's MoE
    # up-projection multiplies one x tile by its gate and its up weights).
    group_tiles: dict[Op, dict[Op, Value]] = {}
    # A loop-invariant tile copied before a loop (attention's Q), by its
    # load: a later loop's dot of the same tile (the causal kernel's second
    # loop) reads the same buffer, which nothing between overwrote (the
    # dot's match found no store after the load).
    copied_once: dict[Op, Value] = {}
    # The pair of buffers of each earlier top-level dot, by its _reuse_key.
    pairs: dict[tuple, list[Value | None]] = {}
    widened: dict[Operand, Value] = {}

    def widen(stride: Operand, loc: Location | None) -> Value:
        """``stride`` cast to i64 once, just after its definition (before the
        loops that copy with it): 64-bit coordinates are scaled in 64 bits."""
        if stride not in widened:
            cast = Op("cast", [stride], [I64], {"dtype": I64}, loc)
            if isinstance(stride, OpResult):
                insert_after(stride.op, cast)
            else:
                block = stride.block if isinstance(stride, BlockArg) else kernel.body
                insert_before(block.ops[0], cast)
            widened[stride] = cast.result
        return widened[stride]
    for plan in plans:
        key = _reuse_key(plan)
        buffers: list[Value | None] = []
        reused = key in pairs
        if reused:
            buffers = pairs[key]
        else:
            while f"dot_a{index}" in taken or f"dot_b{index}" in taken:
                index += 1
            for tile, letter in ((plan.a, "a"), (plan.b, "b")):
                if tile is None:  # A stays in registers
                    buffers.append(None)
                    continue
                if tile.load in copied_once and _before_loop(plan, tile):
                    buffers.append(copied_once[tile.load])
                    continue
                attrs = {"name": f"dot_{letter}{index}", "shape": tile.shape, "dtype": tile.element}
                allocation = Op("shared_alloc", [], [tile.buffer_type], attrs, tile.load.loc)
                allocations.append(allocation)
                buffers.append(allocation.result)
            index += 1
            if key is not None:
                pairs[key] = buffers
        dot = plan.dot
        # The precision and out dtype go with the product (dot_shared has dot's attributes).
        name = "dot_rs" if plan.a is None else "dot_shared"
        operands = [dot.operands[0] if plan.a is None else buffers[0], buffers[1], dot.operands[2]]
        staged = Op(name, operands, [dot.result.type], dict(dot.attrs), loc=dot.loc)
        # The ops that compute a copy's operands first, so that the copies stay
        # together before the barrier (the software-pipeline pass finds them there).
        in_place: list[Op] = []
        copies: list[Op] = []
        copied: list[tuple[TilePlan | StridedPlan, int, list[Op], Op]] = []  # in place: tile, operand, prelude, copy
        for at, (tile, buffer) in enumerate(((plan.a, buffers[0]), (plan.b, buffers[1]))):
            if tile is None:
                continue
            *prelude, copy = tile.copy_ops(buffer, widen)
            _insert_pending(defs, [*prelude, copy])
            outside = _loop_around(dot, tile.load) if isinstance(tile, StridedPlan) else None
            if outside is not None:
                # A tile loaded before the loop (attention's Q) is copied once,
                # there: nothing in the loop writes memory (_store_between).
                if copied_once.get(tile.load) is buffer:
                    continue  # before an earlier loop
                insert_before(outside, *prelude, copy, Op("barrier", [], [], loc=tile.load.loc))
                copied_once[tile.load] = buffer
            else:
                in_place += prelude
                copies.append(copy)
                copied.append((tile, at, prelude, copy))
        barrier = Op("barrier", [], [], loc=dot.loc)
        # (A reused pair's copies stay at their dot: joined to an earlier dot's,
        # they could meet its first user's copies before one barrier.)
        group = _group_of(defs, plan, groups, in_place + copies) if copies and not reused else None
        if group is not None:
            tiles = group_tiles.setdefault(group[1], {})
            for tile, at, prelude, copy in copied:
                if tile.root in tiles and tiles[tile.root].type == operands[at].type:  # copied for the group already
                    allocations = [op for op in allocations if op.result is not operands[at]]
                    operands[at] = tiles[tile.root]
                    in_place = [op for op in in_place if op not in prelude]
                    copies.remove(copy)
            staged.operands = operands
            # Attention's V: copied (and pipelined) with K, before Q @ K^T's
            # barrier; the barrier after P @ V keeps the next iteration's copy
            # from overwriting V while it is read (the pipeline drops it).
            first_copy, first_barrier = group
            insert_before(first_copy, *in_place)
            insert_before(first_barrier, *copies)
            insert_before(dot, staged, Op("barrier", [], [], loc=dot.loc))
        else:
            insert_before(dot,
                          *in_place, *copies,
                          barrier,
                          staged,
                          Op("barrier", [], [], loc=dot.loc))
            if copies or name == "dot_shared":
                groups[dot] = ((copies or [barrier])[0], barrier)
                group_tiles[barrier] = {tile.root: operands[at] for tile, at, _, _ in copied}
        replace_uses(kernel.body, dot.result, staged.result)
        remarks.moved(kernel, dot, staged)
        erase_op(dot)
        loads += [tile.root for tile in plan.tiles]
    # Allocations first in the kernel, after any it already had.
    body = kernel.body
    first = next(op for op in body.ops if not allocates(op))
    insert_before(first, *allocations)
    _erase_staging_only(kernel, defs, loads)
    # A barrier after each loop but the last whose tiles a later loop's may
    # overlay: the drained barrier buffer_liveness asks for (the software
    # pipeline puts its wait for the copies before it).
    for phase in phases[:-1]:
        ops = phase.parent.ops
        at = ops.index(phase) + 1
        if at == len(ops) or ops[at].name != "barrier":
            insert_after(phase, Op("barrier", [], [], loc=phase.loc))


def _group_of(defs: Definitions, plan: DotPlan, groups: dict[Op, tuple[Op, Op]],
              ops: list[Op]) -> tuple[Op, Op] | None:
    """For a dot whose tiles are copied in the loop body of an earlier staged
    dot_shared (attention's P @ V beside Q @ K^T; the gate and up products of
    a MoE up-projection): that dot's first copy and first barrier, where the
    copies can join its copies, if their operands are all computed before
    the first copy and nothing between the loads and the dot writes memory
    or synchronises."""
    dot = plan.dot
    for earlier, group in groups.items():
        first_copy, barrier = group
        if barrier.parent is not dot.parent or barrier.parent is None:
            continue
        body = barrier.parent
        at = body.ops.index(first_copy)
        made = {result for op in ops for result in op.results}
        for op in ops:
            for operand in op.operands:
                if isinstance(operand, OpResult) and operand not in made and operand.op.parent is body \
                        and body.ops.index(operand.op) >= at:
                    return None
        first = min(defs.position[earlier], *(defs.position[tile.load] for tile in plan.tiles))
        last = defs.position[dot]
        if any(_orders_memory(op) and first < position < last for op, position in defs.position.items()
               if op is not earlier):
            return None
        return group
    return None


def _loop_around(dot: Op, load: Op) -> Op | None:
    """The outermost loop around ``dot`` in the block of ``load`` (which then
    runs before it, loop-invariant), if ``dot`` is in such a loop."""
    op = dot
    while op.parent is not None and op.parent is not load.parent:
        owner = op.parent.parent
        if owner is None:
            return None
        op = owner
    return op if op is not dot and op.parent is load.parent and op.regions else None


def _erase_staging_only(kernel: Kernel, defs: Definitions, loads: list[Op]) -> None:
    """Erase the loads and, transitively, the pure ops that only fed them."""
    counts = use_counts(kernel.body)
    work = list(loads)
    while work:
        op = work.pop()
        if op.parent is None or op.regions or not opdefs.is_pure(op.name):
            continue
        if any(counts.get(result, 0) for result in op.results):
            continue
        erase_op(op)
        for value in values_used(op):
            counts[value] -= 1
            producer = defs.op(value)
            if producer is not None:
                work.append(producer)


@dataclass(frozen=True)
class StageDotsPass:
    name: str = "stage-dots"
    summary: str = ("stage canonical tl.dot tile loads through shared memory: "
                    "dot %a, %b => copy_to_shared x2, barrier, dot_shared, barrier")
    shared_budget: int = SHARED_MEMORY_BUDGET  # bytes of shared memory a block may use (the target's)

    def apply(self, kernel: Kernel) -> Kernel:
        defs = Definitions(kernel)
        plans = plan_dots(kernel, defs, self.shared_budget)  # every check before the first edit
        if plans:
            _stage(kernel, defs, plans)
        if any(isinstance(tile, StridedPlan) and (tile.advance is not None or tile.carried)
               for p in plans for tile in p.tiles):
            # The pointer tiles the loop carried now feed only their own
            # advance: dce drops those lanes (and the tiles' arithmetic).
            from mytriton.passes.dce import DCEPass
            DCEPass().apply(kernel)
        return kernel
