"""When each shared buffer is live, and which buffers may take the same bytes.

A buffer (``shared_alloc``, ``shared_alloc_stages``) is live from the first
top-level op that reads or writes it (itself, through a stage view, or in
the op's regions) to the last. Two buffers may overlay when one's live
range ends before the other's begins and a *drained barrier* lies between:
a top-level ``barrier`` at which no asynchronous copy is in flight (an
``async_wait pending=0`` came after the last commit) and no wgmma group (a
``wgmma_wait pending=0`` came after the last dot left in flight). Past it
no thread still reads the first buffer and no copy still lands in it, so
the second one's first writes race nothing. Triton's allocator overlays
buffers by liveness the same way.

The causal attention tutorial runs two K loops one after the other (its
STAGE 1 and 2), each staging its own K and V tiles: overlaid, they take
the room of one loop's, and the second loop's P @ V is staged (on wgmma)
where it would otherwise not fit beside the first loop's buffers.

``placement`` gives each buffer the lowest offset, in program order, that
overlaps no buffer it may not overlay: buffers that are all live at once
lie one after another, as they did before buffers could share bytes.
"""
from __future__ import annotations

from typing import Callable

from mytriton.ir import opdefs
from mytriton.ir.ssa import Kernel, Op, OpResult, Operand, Value, walk, walk_op
from mytriton.passes.dot_layouts import buffer_of
from mytriton.types import SharedType


def asynchronous(op: Op) -> bool:
    """Whether ``op`` is (or waits on) an asynchronous copy or wgmma group:
    its shared-memory accesses may land after it."""
    return op.name in ("async_wait", "async_commit", "wgmma_wait") or bool(op.attrs.get("in_flight")) \
        or opdefs.lookup(op.name).async_shared_write


def allocates(op: Op) -> bool:
    """A shared buffer's allocation (``shared_alloc``, or the software pipeline's ``shared_alloc_stages``)."""
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.allocates


def allocation_of(value: Operand) -> Op | None:
    """The op allocating the buffer ``value`` is (or views), else None."""
    if not isinstance(value, Value) or not isinstance(value.type, SharedType):
        return None
    value = buffer_of(value)
    return value.op if isinstance(value, OpResult) and allocates(value.op) else None


def live_ranges(kernel: Kernel) -> dict[Op, tuple[int, int]]:
    """Each buffer's first and last top-level op (indices into the kernel's
    body) that uses it; a buffer nothing uses is absent."""
    ranges: dict[Op, tuple[int, int]] = {}
    for index, op in enumerate(kernel.body.ops):
        if allocates(op):
            continue
        for inner in walk_op(op):
            for operand in inner.operands:
                buffer = allocation_of(operand)
                if buffer is not None:
                    first, _ = ranges.get(buffer, (index, index))
                    ranges[buffer] = (first, index)
    return ranges


def drained_barriers(kernel: Kernel) -> list[int]:
    """The indices of the top-level barriers at which nothing asynchronous is
    in flight (see the module's docstring). A wait inside a region drains
    nothing here: the region may not run, or run again after it."""
    copies = groups = False
    drained = []
    for index, op in enumerate(kernel.body.ops):
        if op.name == "async_wait" and op.attrs.get("pending") == 0:
            copies = False
        elif op.name == "wgmma_wait" and op.attrs.get("pending") == 0:
            groups = False  # (wgmma.wait_group 0 waits for every group of the warpgroup)
        elif op.name == "barrier":
            if not copies and not groups:
                drained.append(index)
        else:
            for inner in walk_op(op):
                if not asynchronous(inner) or inner.name in ("async_wait", "wgmma_wait"):
                    continue
                if inner.name == "async_commit" or opdefs.lookup(inner.name).async_shared_write:
                    copies = True
                else:
                    groups = True
    return drained


class Liveness:
    """The live ranges and drained barriers of one kernel, asked which pairs
    of buffers may overlay."""

    def __init__(self, kernel: Kernel) -> None:
        self.ranges = live_ranges(kernel)
        self.drained = drained_barriers(kernel)

    def may_overlay(self, a: Op, b: Op) -> bool:
        """Whether ``a`` and ``b`` may take the same bytes: a drained barrier
        lies between their live ranges (a buffer nothing uses overlays none:
        a hand-written plan may address it)."""
        if a not in self.ranges or b not in self.ranges:
            return False
        (first_a, last_a), (first_b, last_b) = self.ranges[a], self.ranges[b]
        if last_b < first_a:
            (first_a, last_a), (first_b, last_b) = (first_b, last_b), (first_a, last_a)
        return last_a < first_b and any(last_a < index < first_b for index in self.drained)


def aligned(nbytes: int, alignment: int = 16) -> int:
    return (nbytes + alignment - 1) // alignment * alignment


def placement(buffers: list[Op], size: Callable[[Op], int], alignment: Callable[[Op], int], start: int,
              may_overlay: Callable[[Op, Op], bool]) -> list[int]:
    """Each buffer's offset, first fit in program order from ``start``: the
    lowest at its alignment overlapping no earlier buffer it may not
    overlay. Each takes ``aligned(size)`` bytes."""
    placed: list[tuple[int, int, Op]] = []
    offsets = []
    for op in buffers:
        nbytes = aligned(size(op))
        apart = [(lo, hi) for lo, hi, other in placed if not may_overlay(op, other)]
        offset = aligned(start, alignment(op))
        while True:
            clash = max((hi for lo, hi in apart if lo < offset + nbytes and offset < hi), default=None)
            if clash is None:
                break
            offset = aligned(clash, alignment(op))
        offsets.append(offset)
        placed.append((offset, offset + nbytes, op))
    return offsets


def placed_end(buffers: list[Op], offsets: list[int], size: Callable[[Op], int], start: int) -> int:
    """The first byte past every buffer (``aligned(start)`` where there is none)."""
    return max((offset + aligned(size(op)) for op, offset in zip(buffers, offsets)), default=aligned(start))


def array_bytes(kernel: Kernel, size: Callable[[Op], int], start: int = 0,
                alignment: Callable[[Op], int] = lambda op: 16) -> int:
    """The bytes the kernel's buffers take from ``start``, overlaid where
    their live ranges allow (``placement``), each taking ``size(op)``."""
    buffers = [op for op in walk(kernel.body) if allocates(op)]
    liveness = Liveness(kernel)
    offsets = placement(buffers, size, alignment, start, liveness.may_overlay)
    return placed_end(buffers, offsets, size, start)
