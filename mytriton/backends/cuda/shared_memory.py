"""The facts a shared-memory plan is made of: what a buffer takes, where it
may start, when the buffers are dead.

A kernel has one dynamic shared array. Ops' scratch starts at byte 0; the
stage-dots buffers follow it, in allocation order, each at its alignment
(a buffer whose live range a drained barrier separates from an earlier
one's may take its bytes: ``buffer_liveness``);
scratch needed only after the buffers' last use starts at byte 0 again,
over them. The allocate-shared pass decides the plan from these facts and
writes it into the IR; the printer reads it back (``buffer_offsets`` gives
the printer no choice: it only reads the offsets the IR holds).
"""
from __future__ import annotations

from typing import Callable, TypeVar

from mytriton.ir import opdefs
from mytriton.ir.layout_attributes import SWIZZLE_ALIGNMENT, NvmmaShared
from mytriton.ir.ssa import Block, Kernel, Op, OpResult, Value, walk
from mytriton.passes.buffer_liveness import Liveness, aligned, asynchronous, placed_end, placement
from mytriton.passes.layouts import touches_shared
from mytriton.types import PointerType, Type, element_of


def element_bytes(t: Type) -> int:
    """The bytes one element of a tile takes in shared memory (a pointer: 8,
    where a reshaped or joined tile of addresses is staged)."""
    element = element_of(t)
    return 8 if isinstance(element, PointerType) else element.nbytes


def buffer_bytes(op: Op) -> int:
    """The bytes a ``shared_alloc`` (every stage of a ``shared_alloc_stages``) takes, padding included."""
    return op.results[0].type.allocated_bytes


def buffer_alignment(op: Op) -> int:
    """The byte boundary a buffer starts on in the shared array: 1024 for a
    swizzled one (wgmma applies the swizzle to address bits 4-9, so a buffer
    must start where the pattern does), else 16 (cp.async's 16-byte chunks,
    ldmatrix rows)."""
    return SWIZZLE_ALIGNMENT if isinstance(op.results[0].type.layout, NvmmaShared) else 16


def shared_buffers(kernel: Kernel) -> list[Op]:
    """The kernel's buffers (``shared_alloc`` and its multi-stage form), in program order."""
    return [op for op in walk(kernel.body) if opdefs.lookup(op.name).allocates]


def buffer_offsets(buffers: list[Op], scratch: int) -> list[int]:
    """Where each buffer starts: after ``scratch`` bytes, one after another,
    each at its alignment. Nothing overlaps, so the offsets are a function
    of the scratch and the buffers' types alone."""
    offsets, offset = [], aligned(scratch)
    for op in buffers:
        offset = aligned(offset, buffer_alignment(op))
        offsets.append(offset)
        offset += aligned(buffer_bytes(op))
    return offsets


def overlaid_offsets(kernel: Kernel, scratch: int) -> list[int]:
    """Where each of the kernel's buffers starts: past ``scratch``, first
    fit in program order, taking the bytes of a buffer whose live range a
    drained barrier separates from its own (``buffer_liveness``). Where all
    are live at once, the same offsets as ``buffer_offsets``."""
    return placement(shared_buffers(kernel), buffer_bytes, buffer_alignment, scratch, Liveness(kernel).may_overlay)


def buffers_end(buffers: list[Op], offsets: list[int], scratch: int) -> int:
    """The first byte past every buffer (past the scratch where there is none)."""
    return placed_end(buffers, offsets, buffer_bytes, scratch)


def late_ops(kernel: Kernel) -> set:
    """The top-level ops after the buffers' last use: past the last op that
    touches a shared buffer or an asynchronous copy or wgmma group, and past
    the barrier after it (every thread's copies have landed, every group's
    reads are done), so their scratch may overlay the buffers. In a kernel
    without asynchronous copies or wgmma groups, the ops right after the
    last use are (a K loop of plain copies, its last barrier inside it):
    insert-barriers puts a barrier before their first scratch write where
    the buffers' last accesses may still be under way."""
    ops = kernel.body.ops
    last = max((i for i, op in enumerate(ops) if touches_shared(op)), default=-1)
    if last < 0:
        return set()
    barrier = next((i for i in range(last + 1, len(ops)) if ops[i].name == "barrier"), None)
    if barrier is not None:
        return set(ops[barrier + 1:])
    return set() if any(asynchronous(op) for op in walk(kernel.body)) else set(ops[last + 1:])


def buffer_interval(kernel: Kernel, value: Value) -> tuple[int, int]:
    """The bytes [lo, hi) of the shared array that the buffer ``value`` is
    (a stage view: its whole buffer), at its plan ``offset``; the whole
    array where it has none."""
    while isinstance(value, OpResult) and value.op.name == "stage_view":
        value = value.op.operands[0]
    alloc = value.op if isinstance(value, OpResult) else None
    plan = kernel.shared_memory
    assert plan is not None
    if alloc is None or "offset" not in alloc.attrs:
        return 0, plan.bytes
    return alloc.attrs["offset"], alloc.attrs["offset"] + alloc.results[0].type.allocated_bytes


State = TypeVar("State", bound=frozenset)


def loop_exit(op: Op, entry: State, block: Callable[[Block, State], State]) -> State:
    """What a walk of ``block`` (a region and the set it enters with, to the
    set it leaves with) carries out of the loop ``op`` (a ``for`` or a
    ``while``): the set at its head, once what an iteration leaves there
    adds nothing to it (the sets only grow, so the walk ends)."""
    head = entry
    while True:
        if op.name == "for":
            exit_ = head
            end = block(op.regions[0], head)
        else:  # while: the condition region runs before every exit and every body
            exit_ = block(op.regions[0], head)
            end = block(op.regions[1], exit_)
        grown = head | end
        if grown == head:
            return exit_
        head = grown
