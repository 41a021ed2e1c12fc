"""insert-barriers: where a statement needs a barrier before it writes its
shared-memory scratch, as Triton's Membar analysis decides.

Runs last in the layouts stage, after allocate-shared, on laid-out SSA with
its shared-memory plan. Every statement that addresses scratch (a
reduction's or scan's cross-warp combine, a layout change through shared
memory, an unstaged dot's operand tiles, an atomic's old values, a
histogram's bins) writes it from byte 0 and then reads it: what it
addresses is what the CUDA emitter measures (``emitter.measure_scratch``,
as allocate-shared reads it), bytes 0 to ``nbytes``. The stage-dots buffers
lie at their plan ``offset``; scratch needed only after their last use
(``late``) overlays them.

The pass walks the kernel in program order with the set of shared-memory
intervals that may have been read or written since the last barrier on
some path: a statement's scratch, a buffer a copy writes or a dot reads.
A statement whose scratch overlaps one of them needs a barrier before its
first scratch write (``scratch_barrier=true``); one whose scratch nothing
pending overlaps needs none (``scratch_barrier=false``: the first scratch
user of a kernel, one after an explicit ``barrier``). A ``barrier`` op
empties the set, but for asynchronous accesses: a ``cp.async`` copy's
writes stay pending until an ``async_wait pending=0`` before the barrier,
an in-flight wgmma's reads until a ``wgmma_wait pending=0``. A ``for`` or
``while`` is walked until the set at its head stops growing (what one
iteration leaves pending meets the next iteration's statements); an ``if``
joins its branches' sets.

    %9 = sum %8, axis=1 : vector<4 x f32, #slice0> @5:9
    %12 = convert_layout %11 : block<4x32 x f32, #blocked1> @7:9
  =>
    %9 = sum %8, axis=1, scratch_barrier=false : vector<4 x f32, #slice0> @5:9
    %12 = convert_layout %11, scratch_barrier=true : block<4x32 x f32, #blocked1> @7:9

The attribute is on each statement that addresses scratch (the first op of
its group: a slot loop's first load or store), and only there. The emitter
renders it: the barrier goes just before the statement's first scratch
write, after the register work that precedes it. What stays inside an op's
renderer: the barrier between its scratch writes and its reads (and
between the steps of a scan's chunk totals), and the barrier before a
second scratch phase of the same statement (an operand staged through
scratch, then the combine that reuses the same bytes), which always
conflicts. A loop's or an if's carried-value copies through scratch (none
of the kernels the tests build has one) are always fenced; the walk counts
them as scratch accesses after a barrier.

Barriers between the stage-dots buffers' own accesses (copies, dots, the
pipelined loop's stages) are stage-dots' and software-pipeline's explicit
``barrier`` ops: this pass reads them and adds none there. It erases one
that a statement's own barrier makes redundant: a ``barrier`` just before a
dot that writes its register operands to scratch and then synchronises
(``dots.writes_scratch_first``: a ``dot_rs`` on mma.sync, whose B copy the
barrier followed), where those writes overlap nothing pending and nothing
pending is asynchronous. Triton's order for the same dot: A and B written
to shared memory, one barrier, the dot.

    copy_to_shared %0, ...
    barrier
    %27 = dot_rs %17, %0, %1
  =>
    copy_to_shared %0, ...
    %27 = dot_rs %17, %0, %1, scratch_barrier=false

It also erases a barrier that orders nothing: where everything pending at
it is a TMA copy's write (every thread waits on the copy's mbarrier itself,
which makes the bytes visible to it: no barrier does more) or an in-flight
wgmma's read (which only a ``wgmma_wait`` completes), and what follows it up
to the next barrier of its block writes no shared memory and issues no copy
(a TMA copy re-arms an mbarrier that a slower thread may not have waited on
yet: the next barrier keeps that order). That is the barrier after a
pipelined K loop's wait once its copies are TMA's and overlap-wgmma has put
``wgmma_wait; barrier`` before the refills: Triton's loop has one barrier
there too. On the H200 the f16 and bf16 128x256x32 matmul on 8 warps ran
2.5-3% faster without it.

    async_wait pending=1
    barrier
    %18 = dot_shared %16, %17, %14, in_flight=1
    wgmma_wait %18, pending=1
    barrier
    async_copy_strided_to_shared ..., engine="tma"
  =>
    async_wait pending=1
    %18 = dot_shared %16, %17, %14, in_flight=1
    wgmma_wait %18, pending=1
    barrier
    async_copy_strided_to_shared ..., engine="tma"
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.dots import writes_scratch_first
from mytriton.backends.cuda.emitter import ScratchNeed, measure_scratch
from mytriton.backends.cuda.hold_tiles import with_held_tiles
from mytriton.backends.cuda.shared_memory import buffer_interval, loop_exit
from mytriton.diagnostics import CompileError
from mytriton.passes.manager import require_laid_out
from mytriton.ir import opdefs
from mytriton.ir.ssa import Block, Kernel, Op, erase_ops, walk
from mytriton.types import SharedType

ATTR = "scratch_barrier"
# Ops that cannot be a statement addressing scratch (the verifier refuses the attribute on them).
CONTROL = ("for", "if", "while", "yield", "condition")

# A pending access: bytes [lo, hi) of the shared array and how it was made.
# "read"/"write": ordered by the next barrier; "async write" (cp.async): by an
# async_wait pending=0 and then a barrier; "async tma write" (a TMA copy): the
# same here, though each thread's own wait orders it for that thread; "async
# read" (an in-flight wgmma): by a wgmma_wait pending=0 and then a barrier.
Access = tuple[int, int, str]
# What a barrier does not order: a TMA copy's writes, an in-flight wgmma's reads.
UNORDERED_BY_BARRIERS = ("async tma write", "async read")


@dataclass(frozen=True)
class InsertBarriersPass:
    name: str = "insert-barriers"
    summary: str = "decide which statements need a barrier before they write shared-memory scratch (Membar)"
    after_layouts: bool = True  # it reads the shared-memory plan: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        for op in walk(kernel.body):
            op.attrs.pop(ATTR, None)
        if kernel.shared_memory is None:
            return kernel  # no plan: allocate-shared found it cannot be rendered, and emit-cuda says why
        needs: list[ScratchNeed] = []
        if kernel.shared_memory.scratch or kernel.shared_memory.late_scratch:
            kernel = with_held_tiles(kernel)  # the statements' storage, as the printer will render them
            try:
                needs = measure_scratch(kernel)
            except CompileError:
                return kernel
        _Membar(kernel, needs).run()
        return kernel


def with_barriers(kernel: Kernel) -> Kernel:
    """``kernel`` with its barriers decided where none is (laid-out SSA
    written by hand, or from before this pass); a kernel with some decisions
    keeps them (the emitter refuses a statement left without one)."""
    plan = kernel.shared_memory
    if plan is None or not (plan.scratch or plan.late_scratch):
        return kernel
    if any(ATTR in op.attrs for op in walk(kernel.body)):
        return kernel
    return InsertBarriersPass().apply(kernel)


class _Membar:
    def __init__(self, kernel: Kernel, needs: list[ScratchNeed]) -> None:
        self.kernel = kernel
        self.scratch: dict[Op, int] = {}  # statement -> the bytes of scratch it addresses from 0
        for need in needs:
            if need.statement is not None:
                self.scratch[need.statement] = max(self.scratch.get(need.statement, 0), need.nbytes)
        self.decided: dict[Op, bool] = {}
        self.redundant: dict[Op, bool] = {}  # explicit barriers a statement's own barrier replaces

    def run(self) -> None:
        self.block(self.kernel.body, frozenset())
        for op, needed in self.decided.items():
            if op.name not in CONTROL:
                op.attrs[ATTR] = needed
        erase_ops([op for op, redundant in self.redundant.items() if redundant])

    # ---- the walk ----------------------------------------------------------------------------------
    def block(self, block: Block, pending: frozenset[Access]) -> frozenset[Access]:
        for at, (op, after) in enumerate(zip(block.ops, block.ops[1:] + [None])):
            if op.name == "barrier" and after is not None and writes_scratch_first(after):
                self.note_redundancy(op, after, pending)
            elif op.name == "barrier":
                self.note_unordered(op, block.ops[at + 1:], pending)
            pending = self.op(op, pending)
        return pending

    def note_unordered(self, barrier: Op, rest: list[Op], pending: frozenset[Access]) -> None:
        """A barrier with nothing a barrier orders pending before it (only TMA
        writes and in-flight wgmma reads), and nothing after it, up to the
        next barrier of its block, that writes shared memory, issues a copy
        or addresses scratch, orders nothing. It must hold each time the walk
        passes."""
        holds = all(kind in UNORDERED_BY_BARRIERS for _, _, kind in pending) and self.reads_until_barrier(rest)
        self.redundant[barrier] = self.redundant.get(barrier, True) and holds

    def reads_until_barrier(self, ops: list[Op]) -> bool:
        """Whether ``ops`` reach a barrier with nothing before it that writes
        shared memory (a copy among them), addresses scratch, or holds a region."""
        for op in ops:
            if op.name == "barrier":
                return True
            opdef = opdefs.lookup(op.name)
            if op.regions or op in self.scratch or opdef is None or opdef.writes_shared:
                return False
        return False

    def note_redundancy(self, barrier: Op, statement: Op, pending: frozenset[Access]) -> None:
        """An explicit barrier just before a statement that writes its scratch
        first and then has its own barrier (``writes_scratch_first``) is
        redundant where those writes overlap nothing pending before it and
        nothing pending is asynchronous: the statement's barrier orders
        everything before it against everything after, as this one did. It
        must hold each time the walk passes (a loop's body until its set
        stops growing)."""
        nbytes = self.scratch.get(statement)
        holds = nbytes is not None and not any(a[0] < nbytes and 0 < a[1] or a[2].startswith("async")
                                               for a in pending)
        self.redundant[barrier] = self.redundant.get(barrier, True) and holds

    def op(self, op: Op, pending: frozenset[Access]) -> frozenset[Access]:
        if op.name == "barrier":
            return _after_barrier(pending)
        if op.name == "async_wait" and op.attrs.get("pending") == 0:
            return frozenset((lo, hi, "write" if kind in ("async write", "async tma write") else kind) for lo, hi, kind in pending)
        if op.name == "wgmma_wait" and op.attrs.get("pending") == 0:
            return frozenset((lo, hi, "read" if kind == "async read" else kind) for lo, hi, kind in pending)
        if op.name in ("for", "while"):
            pending = self.scratch_access(op, pending)  # the carried values' first copies, before the loop
            return loop_exit(op, pending, self.block)
        if op.name == "if":
            then, other = (self.block(region, pending) for region in op.regions)
            return then | other
        pending = self.scratch_access(op, pending)
        return pending | self.buffer_accesses(op)

    def scratch_access(self, op: Op, pending: frozenset[Access]) -> frozenset[Access]:
        nbytes = self.scratch.get(op)
        if nbytes is None:
            return pending
        conflicts = [a for a in pending if a[0] < nbytes and 0 < a[1]]
        if any(kind.startswith("async") for _, _, kind in conflicts):
            raise CompileError("this statement's shared scratch overlaps a buffer that an asynchronous copy or "
                               "wgmma may still access, which no barrier orders", op.loc or self.kernel.loc)
        fenced = bool(conflicts) or op.name in CONTROL  # carried-value copies are always fenced
        self.decided[op] = self.decided.get(op, False) or fenced
        if fenced:
            pending = _after_barrier(pending)
        return pending | {(0, nbytes, "write")}  # written, then read: both pending

    def buffer_accesses(self, op: Op) -> frozenset[Access]:
        opdef = opdefs.lookup(op.name)
        if opdef is None or not (opdef.reads_shared or opdef.writes_shared) or op.name == "stage_view":
            return frozenset()
        kind = "write" if opdef.writes_shared else "read"
        if opdef.async_shared_write:
            kind = "async tma write" if op.attrs.get("engine") == "tma" else "async write"
        elif op.attrs.get("in_flight"):
            kind = "async read"
        found = set()
        for value in op.operands:
            if isinstance(getattr(value, "type", None), SharedType):
                lo, hi = buffer_interval(self.kernel, value)
                found.add((lo, hi, kind))
        return frozenset(found)


def _after_barrier(pending: frozenset[Access]) -> frozenset[Access]:
    """What a barrier leaves pending: asynchronous accesses not waited for."""
    return frozenset(a for a in pending if a[2].startswith("async"))
