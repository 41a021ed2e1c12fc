"""tma-stores: the store of a dot's result that the Tensor Memory Accelerator
writes (Hopper's ``cp.async.bulk.tensor`` from shared memory to global).

A matmul's epilogue stores its accumulator tile at ``c_ptr + rows * stride +
cols`` under a mask of bounds on both axes. Stored as laid out, each thread
tests four bounds per element and writes masked 16-byte runs after an
exchange through shared memory; TMA needs only the exchange's first half:
the threads write their fragments into shared memory, swizzled as TMA reads
it, and one thread issues one bulk copy a box, which drops what lies past
the bounds. That is Triton's epilogue for a tensor descriptor's store, and
it makes the kernel shorter and faster to build.

The pass rewrites a ``store`` into ``store_tile ..., engine="tma"`` where the
IR proves what a tensor map needs, whatever the source's spelling (a
descriptor's ``store``, a block pointer's, pointer arithmetic):

- the stored value is a wgmma result (an ``mma`` layout of version 3, or a
  layout change of one): the store is a dot's epilogue;
- the pointer is ``base + rows * stride + cols`` with ``rows`` and ``cols``
  an offset plus ``tl.arange`` (no wrap, clamp or gather), the base a pointer
  parameter proven 16-byte aligned, the stride a parameter or a literal of
  a multiple of 16 bytes; the mask tests those rows and columns against
  parameters or literals (or not at all); the offsets are proven never
  negative;
- the store is at the kernel's top level, the kernel's only write to global
  memory, and nothing after it reads global memory (TMA writes through
  another proxy, after the threads have moved on);
- the tile is f16, bf16 or f32, at most 256 rows, its rows a whole number of
  32-, 64- or 128-byte swizzle blocks.

    %43 = addptr c_ptr, %42 : block<128x128 x ptr<f16>, #blocked0>
    %46 = convert_layout %44 : block<128x128 x f16, #blocked0>
    store %43, %46, %45
  =>
    store_tile c_ptr, %3, %5, N, M, N, %44, engine="tma"

What only a launch knows (a positive stride of a multiple of 16 bytes,
positive bounds) the launcher checks, as for TMA's copies: a launch no map
describes runs the kernel built without TMA, where ``store_tile`` is a store
of each thread's elements.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton import remarks
from mytriton.backends.cuda.tma_copies import (BOX_LIMIT, ENGINE, TMA, TMA_ELEMENTS, host_bound, host_value,
                                               row_stride_problem, swizzle_of)
from mytriton.ir import opdefs
from mytriton.ir.analysis import Definitions
from mytriton.ir.axis_info import AxisAnalysis
from mytriton.ir.layout_attributes import Mma
from mytriton.ir.ssa import Const, Kernel, Op, Param, Value, erase_op, insert_before, walk
from mytriton.passes.buffer_liveness import array_bytes
from mytriton.passes.dce import DCEPass
from mytriton.passes.manager import require_laid_out
from mytriton.passes.stage_dots import NO_WRAP, StridedTile, insert_pending, match_tile_store, non_negative
from mytriton.remarks import note
from mytriton.target import DEFAULT_ARCH, DEFAULT_SHARED_LIMIT, SHARED_MEMORY_BUDGET, has_tma
from mytriton.types import I32, PointerType, concrete, element_of

def stored_wgmma_result(value: object) -> Value | None:
    """The wgmma-laid-out tile a store writes (through a layout change), or None."""
    if not isinstance(value, Value):
        return None
    source = value.op if hasattr(value, "op") else None
    if source is not None and source.name == "convert_layout":
        value = source.operands[0]
    layout = getattr(value.type, "layout", None)
    return value if isinstance(layout, Mma) and layout.version == 3 else None


def _only_global_write(kernel: Kernel, store: Op) -> str | None:
    """Why ``store`` is not the kernel's last access to global memory and its only write, or None."""
    after = False
    for op in walk(kernel.body):
        if op is store:
            after = True
            continue
        opdef = opdefs.lookup(op.name)
        if opdef is None:
            continue
        if opdef.writes_global:
            return "the kernel writes global memory elsewhere too"
        if after and opdef.reads_global:
            return "the kernel reads global memory after it"
    return None


def _i32(operand: object) -> bool:
    t = getattr(operand, "type", None)
    return isinstance(operand, Const) and type(operand.value) is int or t is not None and concrete(t) == I32


def store_problem(kernel: Kernel, store: Op, tile: Value, facts: AxisAnalysis, defs: Definitions,
                  budget: int = SHARED_MEMORY_BUDGET) -> tuple[str | None, StridedTile | None]:
    """Why TMA cannot write ``store`` (of the wgmma result ``tile``), or (None, its match)."""
    if store.parent is not kernel.body:
        return "it is inside a loop or a branch", None
    why = _only_global_write(kernel, store)
    if why:
        return why, None
    found = match_tile_store(defs, store)
    if isinstance(found, str):
        return found, None
    element = tile.type.element
    pointee = element_of(store.operands[0].type).pointee
    if element != pointee:
        return f"it stores {element} through a pointer to {pointee}", None
    if element.name not in TMA_ELEMENTS:
        return f"TMA stores {', '.join(TMA_ELEMENTS)} here, not {element.name}", None
    rows, cols = tile.type.shape
    swizzle = swizzle_of(cols, element.nbytes)
    if rows > BOX_LIMIT or rows < 8 or swizzle is None or rows & (rows - 1) or cols & (cols - 1):
        return f"a {rows}x{cols} tile is no whole number of boxes of 8 to {BOX_LIMIT} rows", None
    nbytes, staged = tile.type.numel * element.nbytes, array_bytes(kernel, lambda op: op.results[0].type.nbytes)
    if not (nbytes <= max(staged, DEFAULT_SHARED_LIMIT) or staged > DEFAULT_SHARED_LIMIT and nbytes <= budget):
        # As the layout change a store may take (layouts.exchange_fits), so as not to cost occupancy.
        return (f"its {nbytes} bytes in shared memory would be the only reason for the launch to opt into more "
                f"than {DEFAULT_SHARED_LIMIT} bytes"), None
    if found.shifts or not (isinstance(found.base, Param) and isinstance(found.base.type, PointerType)):
        return "its base is not a pointer parameter", None
    if facts.of(found.base).scalar_divisibility % 16:
        return "its base is not proven 16-byte aligned", None
    if not (isinstance(found.col_stride, Const) and found.col_stride.value == 1):
        return "its columns are not contiguous", None
    for axis in (found.rows, found.cols):
        if axis.wrap != NO_WRAP or axis.clamp is not None or axis.gather is not None or axis.wide:
            return "its coordinates wrap, are clamped, gathered or 64-bit", None
    if found.bound_shifts != ((Const(0), Const(0)), (Const(0), Const(0))):
        return "its mask tests other coordinates than its pointer's", None
    if host_value(found.row_stride) is None or not _i32(found.row_stride):
        return "its row stride is not an i32 parameter or a literal", None
    problem = row_stride_problem(found.row_stride, element.nbytes)  # a parameter: tested at each launch
    if problem:
        return problem, None
    for bound, what in ((found.row_bound, "row"), (found.col_bound, "column")):
        if host_bound(bound) is None or not _i32(bound):
            return f"its {what} bound is not an i32 parameter, a literal or a product of them", None
    assumed = frozenset(v for v in (found.row_stride, found.row_bound, found.col_bound) if isinstance(v, Param))
    if not all(_i32(a.offset) and non_negative(defs, a.offset, assumed=assumed) for a in (found.rows, found.cols)):
        return "its offsets are not proven never negative (TMA would drop what the store writes)", None
    if facts.of(found.cols.offset).scalar_divisibility * element.nbytes % 16:
        return "its column offset is not proven a multiple of 16 bytes (TMA's boxes start at one)", None
    return None, found


@dataclass(frozen=True)
class TmaStoresPass:
    name: str = "tma-stores"
    summary: str = "store a dot's result with TMA (one thread, a tensor map) where the IR proves a map describes it"
    after_layouts: bool = True  # the stored tile's layout says it is a wgmma result
    enabled: bool = True  # False: every store as laid out (compile --no-tma)
    arch: str = DEFAULT_ARCH
    shared_budget: int = SHARED_MEMORY_BUDGET

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        stores = [(op, tile) for op in walk(kernel.body)
                  if op.name == "store" and (tile := stored_wgmma_result(op.operands[1])) is not None]
        if not stores:
            return kernel
        if not self.enabled or not has_tma(self.arch):
            why = "TMA is off (--no-tma)" if not self.enabled else f"{self.arch} has no TMA (sm_90 has)"
            for op, _ in stores:
                note(kernel, op, remarks.TMA, why)
            return kernel
        facts, defs = AxisAnalysis(kernel), Definitions(kernel)
        rewritten = False
        for op, tile in stores:
            problem, found = store_problem(kernel, op, tile, facts, defs, self.shared_budget)
            if problem is not None or found is None:
                note(kernel, op, remarks.TMA, problem or "")
                continue
            new = Op("store_tile", [found.base, found.rows.offset, found.cols.offset, found.row_stride,
                                    found.row_bound, found.col_bound, tile], [], loc=op.loc, attrs={ENGINE: TMA})
            insert_before(op, new)
            insert_pending(defs, [new])
            erase_op(op)
            rewritten = True
        return DCEPass().apply(kernel) if rewritten else kernel
