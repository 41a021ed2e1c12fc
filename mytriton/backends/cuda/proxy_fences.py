"""proxy-fences: which wgmma dots, and which TMA copies, need a
``fence.proxy.async`` before them.

wgmma reads its shared operands through the async proxy; plain stores to
shared memory (``st.shared``: a synchronous copy's tile, a statement's
scratch) are the generic proxy's, and the async proxy sees them only past a
proxy fence. cp.async's writes are taken as visible to wgmma once waited for
and published by a barrier, with no fence: Triton's fence insertion fences
only tiles stored from registers, and CUTLASS's cp.async wgmma mainloops
have none. Profiled at f16 128x256x32 on 8 warps, the fence before every
K step's wgmma (with the ``MEMBAR`` it brings) cost ~6 % of the loop's
stall samples.

Runs after insert-barriers, on laid-out SSA with its shared-memory plan. The
walk carries the byte intervals of shared memory that plain stores may have
written since the last fence, on some path: a buffer a synchronous copy
writes; a statement's scratch, taken as the plan's whole scratch (bytes 0
to ``scratch``, or to ``late_scratch`` for the ops past the buffers' last
use, ``shared_memory.late_ops``), which costs no measuring of each
statement and loses nothing: the scratch lies below every buffer, and the
late scratch that overlays them comes after every wgmma. A wgmma dot whose
buffers overlap one of them gets ``proxy_fence=true``, which empties the set
(its fence orders every earlier write, the barrier before it every
thread's); one whose buffers none overlaps gets ``proxy_fence=false``. Loops are walked until the set at their
head stops growing, as insert-barriers walks them; an ``if`` joins its
branches' sets.

A ``for`` loop that enters with such writes to the buffers of a wgmma dot
inside it (attention's Q, copied once before its K loop) gets a
``proxy_fence`` op just before it, where the loop's body has a barrier
before its first wgmma (the fence, then the barrier, then the tensor cores,
as Triton's fence insertion and CUTLASS order them): one fence per loop
instead of the dot's own at every iteration (Triton hoists it so too).

    %26 = dot_shared %24, %25, %22 : block<128x256 x f32, #mma0>
  =>
    %26 = dot_shared %24, %25, %22, proxy_fence=false : block<128x256 x f32, #mma0>

A TMA copy writes through the async proxy too: its issuing thread fences
first (``proxy_fence=true``) where plain stores or plain reads (a dot on
mma.sync reading a buffer with ldmatrix) of its bytes are pending, and
issues it bare (``proxy_fence=false``) where only TMA writes the buffer and
only wgmma reads it, as Triton issues a pipelined loop's copies. That fence
is one thread's: it empties nothing for the other threads' wgmma.

The wgmma and TMA renderers write the fence where the attribute is true or
absent (laid-out SSA from before this pass).
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.shared_memory import buffer_interval, late_ops, loop_exit
from mytriton.ir import opdefs
from mytriton.ir.ssa import Block, Kernel, Op, insert_before, walk, walk_op
from mytriton.passes.dot_layouts import computed_by_wgmma
from mytriton.passes.manager import require_laid_out
from mytriton.types import SharedType

ATTR = "proxy_fence"
FENCE = "proxy_fence"  # the op a loop's fence is
Interval = tuple[int, int]


def may_address_scratch(op: Op) -> bool:
    """Whether ``op`` may write shared scratch: a statement a ``scratch_barrier`` may be on, or a loop or an
    if, whose carried values may be copied through it."""
    if op.name in ("for", "while", "if"):
        return True
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.layout_rule in ("load", "store", "reduce", "scan", "dot", "convert")


@dataclass(frozen=True)
class ProxyFencesPass:
    name: str = "proxy-fences"
    summary: str = "decide which wgmma dots need a fence.proxy.async after plain stores to their buffers"
    after_layouts: bool = True  # it reads the shared-memory plan: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        dots = [op for op in walk(kernel.body) if computed_by_wgmma(op) or opdefs.is_tma_copy(op)]
        for op in walk(kernel.body):
            op.attrs.pop(ATTR, None)
        for op in [op for op in walk(kernel.body) if op.name == FENCE]:  # an earlier run's: decided again
            _remove_fence(op)
        if not dots or kernel.shared_memory is None:
            return kernel  # no wgmma or TMA copy, or no plan (allocate-shared found it cannot be rendered)
        late = late_ops(kernel)
        scratch = {op: kernel.shared_memory.late_scratch if op in late else kernel.shared_memory.scratch
                   for op in walk(kernel.body) if may_address_scratch(op)}
        walker = _Walk(kernel, scratch)
        walker.block(kernel.body, frozenset())
        for op in dots:
            op.attrs[ATTR] = walker.decided.get(op, True)
        for fence in [op for op in walk(kernel.body) if op.name == FENCE]:
            ops = fence.parent.ops
            loop = next(op for op in ops[ops.index(fence) + 1:] if op.name != "barrier")
            if all(op.attrs[ATTR] for op in walk(loop.regions[0]) if computed_by_wgmma(op)):
                _remove_fence(fence)  # its dots fence every issue themselves (plain copies in the loop)
        return kernel


def _remove_fence(fence: Op) -> None:
    """A loop's fence taken out, with the barrier this pass put between it and the loop, if any."""
    ops = fence.parent.ops
    at = ops.index(fence)
    if at + 2 < len(ops) and ops[at + 1].name == "barrier" and ops[at + 2].name == "for":
        del ops[at + 1]
    del ops[at]


def with_proxy_fences(kernel: Kernel) -> Kernel:
    """``kernel`` with its wgmma dots' fences decided where none is (laid-out
    SSA written by hand, or from before this pass)."""
    if kernel.shared_memory is None or any(ATTR in op.attrs for op in walk(kernel.body)):
        return kernel
    return ProxyFencesPass().apply(kernel)


# A plain access pending since the last fence: bytes [lo, hi) of the shared
# array, and whether it wrote them ("write") or only read them ("read": a dot
# on mma.sync reading its buffer with ldmatrix).
Access = tuple[int, int, str]


def _overlaps(intervals: list[Interval], pending: frozenset[Access], kinds: tuple[str, ...]) -> bool:
    return any(lo < p_hi and p_lo < hi for lo, hi in intervals for p_lo, p_hi, kind in pending if kind in kinds)


class _Walk:
    def __init__(self, kernel: Kernel, scratch: dict[Op, int]) -> None:
        self.kernel = kernel
        self.scratch = scratch  # statement -> the bytes of scratch it may write from 0
        self.decided: dict[Op, bool] = {}

    def block(self, block: Block, pending: frozenset[Access]) -> frozenset[Access]:
        for op in list(block.ops):  # (a fence may be inserted before a loop on the way)
            pending = self.op(op, pending)
        return pending

    def op(self, op: Op, pending: frozenset[Access]) -> frozenset[Access]:
        if op.name == FENCE:
            return frozenset()
        if op in self.scratch:  # a loop's carried-value copies come before it
            pending = pending | {(0, self.scratch[op], "write")}
        if op.name == "for" and pending and self.fenced_before(op, pending):
            pending = frozenset()
        if op.name in ("for", "while"):
            return loop_exit(op, pending, self.block)
        if op.name == "if":
            then, other = (self.block(region, pending) for region in op.regions)
            return then | other
        if computed_by_wgmma(op):
            needed = _overlaps(self.buffers(op), pending, ("write",))
            self.decided[op] = self.decided.get(op, False) or needed
            if needed:
                pending = frozenset()
        elif opdefs.is_tma_copy(op):
            # TMA writes through the async proxy: after plain writes (WAW) or
            # reads (WAR) of its bytes, its thread fences first. Its fence is
            # one thread's, so the set stays for the others' wgmma.
            needed = _overlaps(self.buffers(op), pending, ("write", "read"))
            self.decided[op] = self.decided.get(op, False) or needed
        opdef = opdefs.lookup(op.name)
        if opdef is not None and opdef.writes_shared and not opdef.async_shared_write:
            pending = pending | {(lo, hi, "write") for lo, hi in self.buffers(op)}
        elif opdef is not None and opdef.reads_shared and op.name != "stage_view" and not computed_by_wgmma(op):
            pending = pending | {(lo, hi, "read") for lo, hi in self.buffers(op)}
        return pending

    def fenced_before(self, loop: Op, pending: frozenset[Access]) -> bool:
        """Whether ``loop`` has (now) a fence just before it: where a wgmma dot
        in it reads bytes plain stores wrote and its body has a barrier before
        its first wgmma."""
        block = loop.parent
        at = block.ops.index(loop)
        if at and (block.ops[at - 1].name == FENCE or at > 1 and block.ops[at - 2].name == FENCE
                   and block.ops[at - 1].name == "barrier"):
            return True
        reads = [interval for op in walk(loop.regions[0]) if computed_by_wgmma(op) for interval in self.buffers(op)]
        if not _overlaps(reads, pending, ("write",)):
            return False
        for op in loop.regions[0].ops:
            if op.name == "barrier":
                insert_before(loop, Op(FENCE, [], [], loc=loop.loc))
                return True
            if any(computed_by_wgmma(inner) for inner in walk_op(op)):
                # No barrier before it in the body (insert-barriers erased one
                # that ordered only TMA's writes): a barrier of the loop's own
                # after the fence, once, rather than a fence at every issue.
                insert_before(loop, Op(FENCE, [], [], loc=loop.loc), Op("barrier", [], [], loc=loop.loc))
                return True
        return False

    def buffers(self, op: Op) -> list[Interval]:
        """The bytes of each shared buffer ``op`` reads or writes."""
        return [buffer_interval(self.kernel, v) for v in op.operands if isinstance(getattr(v, "type", None), SharedType)]
