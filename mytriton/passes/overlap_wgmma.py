"""overlap-wgmma: keep a pipelined loop's warpgroup dot running on the tensor
cores while the threads wait for the next tiles and issue their copies.

After the software-pipeline pass a K loop waits for its tiles, refills the stage the
previous iteration multiplied, then multiplies the current stage:

    async_wait; barrier; <copies into stage slot-1>; async_commit; %c = dot_shared ...; yield %c

A ``wgmma`` dot (an mma ``version=3`` layout) is asynchronous. This pass
moves the dot (with the stage views it reads) to just after the barrier,
issue only (``in_flight=1``), waits for the *previous* iteration's group
(``wgmma_wait pending=1``), and refills that group's stage after a barrier
(every warpgroup's previous group is then complete), as Triton's pipeliner
does:

    async_wait; barrier; %c = dot_shared ..., in_flight=1; wgmma_wait %c pending=1; barrier;
    <copies into stage slot-1>; async_commit; yield %c
    ...
    %r = for ...; wgmma_wait %r pending=0

So one group is always queued on the tensor cores: the one issued in this
iteration runs through the copies, the loop's branch and the next
iteration's wait for its tiles. The accumulator chains from one group into
the next on the tensor cores; the loop's result is complete after the
``wgmma_wait pending=0`` that follows the loop.

Only a dot that accumulates in place qualifies: its accumulator a carried
value used by the dot alone, its result carried on by the yield and used
nowhere else.

A loop body of several wgmma dots (attention: Q @ K^T, then P @ V into the
carried, rescaled accumulator) keeps its last dot in flight into the next
iteration instead, as Triton's pipeliner does: the first dot moves up to
just after the barrier, and its own wait (pending 0) completes every group,
the last iteration's included; ``wgmma_wait`` of the carried value and a
barrier follow it, then the refills, which overwrite the stage the last dot
read:

    async_wait; barrier; %s = dot_shared q, k; wgmma_wait %acc pending=0; barrier;
    <refills>; async_commit; ... %p = ...; %o = dot_rs %p, v, %acc * alpha, in_flight=1; yield %o

Only where the refills are TMA's (one thread, no address registers) and the
first dot reads A from shared memory: with cp.async refills or a register A
beside it, the registers of the group in flight made ptxas spill (HEAD_DIM
128 transposed-K attention; the block-pointer attention at 64), and the
loop ran slower than the one that waits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mytriton import remarks
from mytriton.ir import opdefs
from mytriton.passes.dot_layouts import computed_by_wgmma
from mytriton.ir.ssa import Block, BlockArg, Kernel, Op, OpResult, for_body, for_yield, insert_after, insert_before, use_counts, walk, walk_op


def is_wgmma(op: Op) -> bool:
    """A dot that wgmma computes from two shared buffers, which may be left in flight."""
    return computed_by_wgmma(op) and "in_flight" in opdefs.lookup(op.name).attrs


def _inputs_after(op: Op, body: Block, after: int) -> list[Op] | None:
    """The ops of ``body`` past index ``after`` that ``op`` reads, directly or
    through others, in body order; None if one of them cannot move earlier
    (only pure ops and stage views can)."""
    needed: set[Op] = set()
    work = [op]
    while work:
        for operand in work.pop().operands:
            if isinstance(operand, OpResult) and operand.op.parent is body and operand.op not in needed \
                    and body.ops.index(operand.op) > after:
                producer = operand.op
                opdef = opdefs.lookup(producer.name)
                if producer.name != "stage_view" and (opdef is None or not opdef.pure or producer.regions):
                    return None
                needed.add(producer)
                work.append(producer)
    return [o for o in body.ops if o in needed]


def _readers(value, block: Block) -> list[int]:
    """The indices of ``block``'s ops that read ``value``, in them or in their regions."""
    return [i for i, op in enumerate(block.ops)
            if any(value in inner.operands for inner in walk_op(op))]


def _overlap_across_iterations(kernel: Kernel, loop: Op, counts: dict, dots: list[Op]) -> bool:
    """A loop body of several wgmma dots (attention's Q @ K^T, then P @ V):
    the last dot, whose result the loop carries on, left in flight into the
    next iteration, where the first dot's wait completes both; the refills
    move after that wait (they overwrite the stages the last dot read)."""
    body = for_body(loop)
    first, last = dots[0], dots[-1]
    result = last.results[0]
    yielded = for_yield(loop)
    refused = None
    if yielded is None or counts.get(result) != 1 or result not in yielded.operands:
        refused = "its result has other users in the loop than the yield"
    elif any(getattr(opdefs.lookup(op.name), "async_shared_write", False) and not opdefs.is_tma_copy(op)
             for op in body.ops):
        # cp.async refills: every thread issues them, with address registers
        # of its own live beside the group in flight; the transposed-K
        # attention at HEAD_DIM 128 then spilled (60 bytes, 0.83 of the loop
        # that waits), and the stage's cp.async writes need a barrier of their
        # own before the first dot.
        refused = "its loop's refills are cp.async copies (not TMA), whose registers the group in flight would crowd"
    elif first.name == "dot_rs":
        # Its A tile (the block-pointer attention's scaled Q) lives in registers
        # through the loop: with the in-flight group's accumulator and A
        # fragments live across it too, ptxas spilled (164 bytes at D64 on 4
        # warps, and ran at 0.8 of the loop that waits).
        refused = "its loop's first dot reads A from registers, which the group in flight would hold beside it"
    if refused is None:
        carried = body.args[1 + yielded.operands.index(result)]
        first_at = body.ops.index(first)
        if any(i <= first_at for i in _readers(carried, body)):
            refused = "its carried result is read before the loop body's first dot has waited"
    barriers = [i for i, op in enumerate(body.ops) if op.name == "barrier"]
    if refused is None and (not barriers or barriers[0] > body.ops.index(first)):
        refused = "no barrier precedes its loop body's first dot"
    inputs = _inputs_after(first, body, barriers[0]) if refused is None else None
    if refused is None and inputs is None:
        refused = ("its loop body's first dot reads a value computed after the loop's first barrier by an op "
                   "that cannot move before it")
    if refused is not None:
        remarks.note(kernel, last, remarks.OVERLAP, refused)
        return False
    assert inputs is not None
    moved = [*inputs, first]
    for op in moved:
        body.ops.remove(op)
        op.parent = None
    for offset, op in enumerate(moved, start=1):
        op.parent = body
        body.ops.insert(barriers[0] + offset, op)
    # The first dot waits for every group (pending 0), the last iteration's
    # last dot included: its carried result is complete, and after the barrier
    # no warpgroup reads the stages the refills that follow overwrite.
    insert_after(first, Op("wgmma_wait", [carried], [], {"pending": 0}, last.loc), Op("barrier", [], [], {}, last.loc))
    last.attrs = {**last.attrs, "in_flight": 1}
    insert_after(loop, Op("wgmma_wait", [loop.results[carried.index - 1]], [], {"pending": 0}, last.loc))
    return True


def _overlap(kernel: Kernel, loop: Op, counts: dict) -> bool:
    body = for_body(loop)
    dots = [op for op in body.ops if is_wgmma(op)]
    if any(dot.attrs.get("in_flight") for dot in dots):
        return False
    if len(dots) > 1:
        if len([op for op in walk(body) if computed_by_wgmma(op)]) != len(dots):
            for dot in dots:
                remarks.note(kernel, dot, remarks.OVERLAP, "its loop body holds wgmma dots in nested regions")
            return False
        return _overlap_across_iterations(kernel, loop, counts, dots)
    if len(dots) != 1:
        return False
    dot = dots[0]
    result = dot.results[0]
    acc = dot.operands[2] if len(dot.operands) > 2 else None
    yielded = for_yield(loop)
    refused = None
    if not isinstance(acc, BlockArg) or acc.block is not body or yielded is None:
        refused = "its accumulator is not a value its loop carries (acc = tl.dot(a, b, acc))"
    elif counts.get(acc) != 1:
        refused = "its accumulator has other readers than the dot"
    elif yielded.operands[acc.index - 1] is not result:
        refused = "its loop does not carry its result on as the next accumulator"
    elif counts.get(result) != 1:
        refused = "its result has other users in the loop than the yield"
    if refused is not None:
        remarks.note(kernel, dot, remarks.OVERLAP, refused)
        return False
    barriers = [i for i, op in enumerate(body.ops) if op.name == "barrier"]
    if not barriers or barriers[0] > body.ops.index(dot):
        remarks.note(kernel, dot, remarks.OVERLAP, "no barrier precedes it in its loop body")
        return False
    inputs = _inputs_after(dot, body, barriers[0])
    if inputs is None:
        remarks.note(kernel, dot, remarks.OVERLAP, "it reads a value computed after the loop's first barrier by "
                     "an op that cannot move before it")
        return False
    moved = [*inputs, dot]
    for op in moved:
        body.ops.remove(op)
        op.parent = None
    barrier_at = barriers[0]  # no op before the barrier moved
    for offset, op in enumerate(moved, start=1):
        op.parent = body
        body.ops.insert(barrier_at + offset, op)
    dot.attrs = {**dot.attrs, "in_flight": 1}
    after_dot = body.ops[body.ops.index(dot) + 1]
    insert_before(after_dot, Op("wgmma_wait", [result], [], {"pending": 1}, dot.loc), Op("barrier", [], [], {}, dot.loc))
    insert_after(loop, Op("wgmma_wait", [loop.results[acc.index - 1]], [], {"pending": 0}, dot.loc))
    return True


@dataclass(frozen=True)
class OverlapWgmmaPass:
    name: str = "overlap-wgmma"
    after_layouts: ClassVar[bool] = True  # it reads laid-out SSA
    summary: str = "let a pipelined loop's wgmma dot run while the next tiles' copies issue (laid-out SSA)"

    def apply(self, kernel: Kernel) -> Kernel:
        if not kernel.laid_out:
            return kernel
        counts = use_counts(kernel.body)
        for loop in [op for op in walk(kernel.body) if op.name == "for" and op.attrs.get("pipeline_stages")]:
            _overlap(kernel, loop, counts)
        return kernel
