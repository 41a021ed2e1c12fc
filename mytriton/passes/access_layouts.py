"""Loads, stores and atomics as wide as the axis analysis proves them (Triton's Coalesce).

The axis analysis (``ir/axis_info.py``) gives each access the elements a
thread may move at once; where every load and store of a tile shape allows
N along its last dimension, that shape's layout holds N elements per thread
there (``preferred_layouts``), and each access that can gets ``vector=N``
(``mark_vector_accesses``), which the back end renders as one wide access.
A store whose addresses run down another dimension (a tile stored
column-major, ``column_runs``) is given its runs along that one where its
layout makes it the fastest (the epilogue of a dot's result stored
column-major). Tile atomics of f32, f16 and bf16 adds take PTX's vector
atom where their runs allow it (``atomic_runs``, ``mark_vector_atomics``).
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

from mytriton.ir import opdefs
from mytriton.ir.analysis import is_tile
from mytriton.ir.axis_info import AxisAnalysis, contiguous_dim, vector_width
from mytriton.ir.layout_attributes import WARP, Blocked, Mma, default_blocked, thread_run
from mytriton.ir.ssa import Kernel, Op, walk
from mytriton.types import BF16, F16, F32, element_of


# The element types PTX's vector atom adds (sm_90): .v2/.v4 of f32, .v2-.v8 of f16 and bf16.
VECTOR_ATOMIC_TYPES = (F32, F16, BF16)


def vectorized_blocked(shape: tuple[int, ...], num_warps: int, width: int, dim: int | None = None) -> Blocked:
    """The default layout of ``shape`` with ``width`` consecutive elements per
    thread along ``dim`` (by default the last dimension), which is then the
    fastest: lanes and warps spread as they would over a tile ``width``
    times narrower along it."""
    last = len(shape) - 1
    dim = last if dim is None else dim
    narrow = tuple(max(1, n // width) if d == dim else n for d, n in enumerate(shape))
    order = None if dim == last else (dim, *(d for d in reversed(range(len(shape))) if d != dim))
    base = default_blocked(narrow, num_warps, order)
    return replace(base, size_per_thread=tuple(width if d == dim else n for d, n in enumerate(base.size_per_thread)))


def access_widths(kernel: Kernel, analysis: AxisAnalysis) -> dict[Op, int]:
    """The vector width the axis analysis proves for each tile load and store."""
    return {op: vector_width(analysis, op) for op in walk(kernel.body)
            if op.name in ("load", "store") and is_tile(op.operands[0])}


def column_runs(kernel: Kernel, analysis: AxisAnalysis) -> dict[Op, tuple[int, int]]:
    """For each tile store whose addresses run contiguously along another
    dimension than the last (a tile stored column-major): that dimension
    and the vector width proven along it, where it is two or more."""
    runs = {}
    for op in walk(kernel.body):
        if op.name == "store" and is_tile(op.operands[0]):
            dim = contiguous_dim(analysis, op)
            if dim != len(op.operands[0].type.shape) - 1:
                width = vector_width(analysis, op, dim)
                if width > 1:
                    runs[op] = (dim, width)
    return runs


def row_runs(kernel: Kernel, analysis: AxisAnalysis) -> dict[Op, int]:
    """For each tile store: how many consecutive addresses the axis analysis
    proves along its pointer's last dimension, whatever their alignment (a
    pointer loaded from an array of addresses is contiguous along the row
    but of unknown alignment)."""
    return {op: analysis.of(op.operands[0], op.operands[0].type.shape).contiguity[-1] for op in walk(kernel.body)
            if op.name == "store" and is_tile(op.operands[0])}


def atomic_runs(kernel: Kernel, analysis: AxisAnalysis, vectors: bool) -> dict[Op, tuple[int, int]]:
    """For each tile atomic: how many consecutive addresses the axis analysis
    proves along its pointer's last dimension, and how many elements one
    vector atom may apply there (an f32, f16 or bf16 add, aligned and under
    one mask value, on a target with vector atomics; else 1)."""
    runs = {}
    for op in walk(kernel.body):
        if op.name not in opdefs.ATOMIC_OPS or not is_tile(op.operands[0]):
            continue
        contiguity = analysis.of(op.operands[0], op.operands[0].type.shape).contiguity[-1]
        vector = 1
        if vectors and op.name == "atomic_rmw" and op.attrs.get("kind") == "add" \
                and element_of(op.operands[0].type).pointee in VECTOR_ATOMIC_TYPES:
            vector = vector_width(analysis, op)  # at most 16 bytes, as PTX's vector atom
        runs[op] = (contiguity, vector)
    return runs


def mark_vector_atomics(kernel: Kernel, runs: dict[Op, tuple[int, int]]) -> None:
    """``vector=N`` on each f32/f16/bf16 atomic add whose laid-out pointer holds runs of
    N proven elements per thread along its last dimension (PTX's vector atom)."""
    for op, (_, width) in runs.items():
        layout = op.operands[0].type.layout
        last = len(op.operands[0].type.shape) - 1
        if width > 1 and isinstance(layout, Blocked) and layout.order[0] == last:
            n = min(width, layout.size_per_thread[last])
            if n > 1:
                op.attrs["vector"] = n


def preferred_layouts(kernel: Kernel, widths: dict[Op, int], num_warps: int) -> dict[tuple[int, ...], Blocked]:
    """A vectorised layout for each tile shape one of whose loads or stores
    moves at least two elements per access, as wide as the widest of them,
    shapes a dot touches too: a dot's operand in registers is written to
    shared memory (or converted to wgmma's fragment) from whatever layout it
    has, a thread's run at once, and a dot's result keeps its mma layout
    whatever the shape's default. The others of the shape then take their
    proven width within it (a gather one element at a time): Triton's
    coalescing gives a load the widest vector among the accesses of its
    shape and order, so one gather (Liger's group norm reads its weights by
    channel) does not narrow the row's contiguous loads and stores."""
    by_shape: dict[tuple[int, ...], int] = {}
    for op, width in widths.items():
        shape = op.operands[0].type.shape
        by_shape[shape] = max(by_shape.get(shape, width), width)
    # As Triton's Coalesce: no thread takes more than its share of the tile,
    # so a small tile spreads over the lanes instead of leaving most of
    # them holding copies.
    threads = WARP * num_warps
    by_shape = {shape: min(width, max(1, prod(shape) // threads)) for shape, width in by_shape.items()}
    return {shape: vectorized_blocked(shape, num_warps, width)
            for shape, width in by_shape.items() if width > 1}


def mark_vector_accesses(kernel: Kernel, widths: dict[Op, int],
                         columns: dict[Op, tuple[int, int]] | None = None) -> None:
    """``vector=N`` on each access whose laid-out pointer holds runs of N
    proven elements per thread along its fastest, last dimension, or along
    the other dimension its addresses run on (``column_runs``) where its
    layout makes that one the fastest."""
    for op, (dim, width) in (columns or {}).items():
        layout = op.operands[0].type.layout
        if isinstance(layout, Blocked) and layout.order[0] == dim and min(width, layout.size_per_thread[dim]) > 1:
            op.attrs["vector"] = min(width, layout.size_per_thread[dim])
    for op, width in widths.items():
        layout = op.operands[0].type.layout
        last = len(op.operands[0].type.shape) - 1
        if width < 2 or "vector" in op.attrs:
            continue
        run = thread_run(layout)
        if isinstance(layout, Mma):
            # An accumulator's thread holds pairs of adjacent columns (its
            # consecutive slots): a dot's epilogue stores 8 bytes of f32 at once.
            n = 2
        elif run is not None and run[0] == last:
            # a blocked layout's, or a slice's of one (a row of sums stored
            # where the reduction made it)
            n = min(width, run[1])
        else:
            continue
        if n > 1:
            op.attrs["vector"] = n
