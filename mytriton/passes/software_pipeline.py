"""software-pipeline: software-pipeline a staged dot's K loop over ``num_stages`` shared buffers.

After stage-dots a matmul's K loop reads

    for %k in range(lo, hi, step) iter_args(%acc = ...) {
      copy_to_shared %sa, a_ptr, ..., <offsets of %k>, ...
      copy_to_shared %sb, b_ptr, ..., <offsets of %k>, ...
      barrier
      %c = dot_shared %sa, %sb, %acc
      barrier
      ...
    }

so every K step waits for its tiles before it multiplies them. With S stages
each buffer holds S tiles (``shared<S*R x C>``, one above the other), the
copies are asynchronous (cp.async on the GPU), and the loop multiplies stage
``slot`` while the tiles of S-1 iterations ahead are in flight:

    <prologue: for i in 0 .. S-2, the copies of iteration lo + i*step into
     stage i, predicated on lo + i*step < hi; async_commit after each stage>
    for %k in range(lo, hi, step, ..., pipeline_stages=S) iter_args(%acc = ..., %slot = 0) {
      async_wait pending=S-2        (this thread's copies of iteration k are done)
      barrier                       (everyone's are, and everyone finished iteration k-1's dot)
      <the copies of iteration k + (S-1)*step into stage (slot + S-1) % S,
       predicated on k + (S-1)*step < hi>
      async_commit
      %c = dot_shared (stage_view %sa, %slot), (stage_view %sb, %slot), %acc
      ...
      yield ..., (slot + 1) % S
    }
    async_wait pending=0            (nothing left in flight)
    barrier                         (nobody still reads the last stage)

The stage refilled in iteration k is the one iteration k-1 multiplied, which
every thread finished before the barrier of iteration k: the barrier after
the dot is gone. The copies' offsets for a later iteration come from cloning
the pure ops that compute them from the induction variable. A loop is left
as it is (with no note) when its copies' operands depend on another carried
value (loop-carried pointers), on memory, or when the dot's buffers have
other users.

How many stages: the loop's own ``num_stages`` (``tl.range``) first, else the
pass's (the launch's ``num_stages``, an autotune config's), else 3, as in
Triton. 1 (or 0) leaves the loop alone. Fewer stages than asked are used when
the shared-memory budget (``shared_budget``, the target's) does not hold them beside the kernel's other buffers
and the scratch its reductions and layout changes will need (``scratch_reserve``); the loop then says so with its
``pipeline_stages`` attribute, which every loop this pass looked at and could
pipeline carries (a second run leaves those loops alone).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mytriton import remarks
from mytriton.ir import opdefs
from mytriton.passes.buffer_liveness import Liveness, placed_end, placement
from mytriton.ir.ssa import (
    BlockArg, Const, Kernel, Op, OpResult, Operand, Value, erase_op, for_body, for_bounds, for_index, for_yield, insert_before, use_counts, values_used, walk,
)
from mytriton.target import SHARED_MEMORY_BUDGET, budget_text
from mytriton.types import BOOL, I32, BlockType, PointerType, SharedType

DEFAULT_NUM_STAGES = 3  # Triton's default

# Each copy stage-dots writes, and the asynchronous copy that replaces it.
ASYNC_FORM = {"copy_to_shared": "async_copy_to_shared",
              "copy_strided_to_shared": "async_copy_strided_to_shared",
              "copy_gathered_to_shared": "async_copy_gathered_to_shared"}


class _NotPipelinable(Exception):
    """This loop is not the staged pattern, or its copies cannot be issued
    early, for ``reason`` (empty: the loop holds no staged dot to tell)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, eq=False)
class _Plan:
    loop: Op
    copies: list[Op]
    first_barrier: Op
    dot: Op
    last_barrier: Op
    allocations: list[Op]  # the shared_alloc of each copy's buffer, in copy order
    # Later dot_rs ops of the body whose B buffer is copied with the dot's
    # (attention's P @ V beside Q @ K^T), each with the barrier after it.
    riders: tuple[tuple[Op, Op], ...] = ()

    @property
    def strided(self) -> bool:
        return any(op.name in ("copy_strided_to_shared", "copy_gathered_to_shared") for op in self.copies)

    @property
    def stage_bytes(self) -> int:
        # The tutorial forms (stage-dots' strided copies, beside attention's
        # unstaged dot) count the most row padding the layouts stage may add.
        return sum(_padded_bytes(op) if self.strided else op.result.type.nbytes for op in self.allocations)


PAD_BYTES = 32  # the widest row padding the layouts stage gives a dot's buffer (TF32 B: 8 elements)


def _padded_bytes(allocation: Op) -> int:
    buffer = allocation.result.type
    return buffer.nbytes + buffer.shape[0] * PAD_BYTES


def requested_stages(loop: Op, default: int | None) -> int:
    given = loop.attrs.get("num_stages")
    if given is not None:
        return given
    return DEFAULT_NUM_STAGES if default is None else default


def _plan(loop: Op, allocation_of: dict[Value, Op], counts: dict[Value, int]) -> _Plan:
    ops = for_body(loop).ops
    found = [i for i, op in enumerate(ops) if op.name == "dot_shared"]
    if not found:  # a dot_rs alone (A computed in registers)
        found = [i for i, op in enumerate(ops) if op.name == "dot_rs"][:1]
    if not found:
        raise _NotPipelinable
    at = found[0]
    dot = ops[at]
    if at < 2 or at + 1 >= len(ops) or ops[at - 1].name != "barrier" or ops[at + 1].name != "barrier":
        raise _NotPipelinable("the dot is not between a barrier after its copies and one after it, "
                              "as stage-dots writes them")
    start = at - 1
    while start > 0 and ops[start - 1].name in ASYNC_FORM:
        start -= 1
    copies = ops[start:at - 1]
    buffers = [op.operands[0] for op in copies]
    riders = _riders(ops, at, set(buffers), set(dot.operands[:2]))
    if len(found) > 1 and {ops[i] for i in found[1:]} - {rider for rider, _ in riders}:
        raise _NotPipelinable(f"its loop body holds {len(found)} staged dots, not all of them reading tiles copied "
                              "with the first; a loop is pipelined around the copies of one group")
    read = set(dot.operands[:2]).union(*(_buffers_read(rider) for rider, _ in riders))
    # Two copies, or one where stage-dots copied the other operand once before
    # the loop (or A of a dot_rs stays in registers); a rider's B besides.
    if not copies:
        raise _NotPipelinable("no copy into its buffers is in its loop body")
    if not set(buffers) <= read or len(set(buffers)) != len(copies):
        raise _NotPipelinable("the copies before the dot are not one into each buffer it reads")
    dot_buffers = [x for x in dot.operands[:2] if isinstance(x.type, SharedType)]
    for other in set(dot_buffers) - set(buffers):
        if other not in allocation_of or _written_in(loop, other):
            raise _NotPipelinable("a buffer it reads without a copy in the loop body is written in the loop "
                                  "or is not a buffer of the kernel")
    allocations = []
    readers = [dot, *(rider for rider, _ in riders)]
    for buffer in buffers:
        # its copy and the dots of the group alone
        if buffer not in allocation_of or counts.get(buffer, 0) != 1 + sum(buffer in _buffers_read(r) for r in readers):
            raise _NotPipelinable("a buffer it reads has other users than its copy and the dot")
        allocations.append(allocation_of[buffer])
    for copy in copies:
        for operand in copy.operands[1:]:
            _check_clonable(loop, operand)
    return _Plan(loop, copies, ops[at - 1], dot, ops[at + 1], allocations, riders)


def _riders(ops: list[Op], at: int, buffers: set, dot_reads: set) -> tuple[tuple[Op, Op], ...]:
    """The staged dots after ``ops[at]`` (dot_rs, or dot_shared) reading a
    buffer of ``buffers`` (the copies before the dot's barrier), each followed
    by a barrier (as stage-dots writes them); every buffer the dot does not
    read (``dot_reads``) read so."""
    riders = []
    for i in range(at + 2, len(ops)):
        op = ops[i]
        if op.name in ("dot_rs", "dot_shared") and _buffers_read(op) & buffers:
            if i + 1 >= len(ops) or ops[i + 1].name != "barrier":
                raise _NotPipelinable(f"a {op.name} reading a buffer copied with the dot is not followed by a barrier")
            riders.append((op, ops[i + 1]))
    if not buffers - dot_reads <= set().union(*(_buffers_read(op) for op, _ in riders)):
        raise _NotPipelinable("a buffer copied with the dot is read by neither it nor a dot after it")
    return tuple(riders)


def _buffers_read(dot: Op) -> set[Value]:
    """The shared buffers a staged dot reads (dot_rs: B alone)."""
    return {x for x in dot.operands[:2] if isinstance(x, Value) and isinstance(x.type, SharedType)}


def _written_in(loop: Op, buffer: Value) -> bool:
    return any(op.operands and op.operands[0] is buffer and opdefs.lookup(op.name).writes_shared
               for op in walk(for_body(loop)))


def _check_clonable(loop: Op, operand: Operand) -> None:
    """Whether ``operand`` is invariant in ``loop`` or computed from its
    induction variable by pure ops of its body."""
    if not isinstance(operand, Value):
        return
    body = for_body(loop)
    if isinstance(operand, BlockArg):
        if operand.block is body and operand is not for_index(loop):
            # a carried value (a pointer advanced each step)
            raise _NotPipelinable("a copy's operand is a value the loop carries, not one computed from the "
                                  "loop index, so the copy of a later iteration cannot be issued early")
        return
    if isinstance(operand, OpResult) and operand.op.parent is body:
        op = operand.op
        if not _speculatable(op):
            raise _NotPipelinable(f"a copy's operand is computed by '{op.name}', which may not run ahead for a "
                                  "later iteration (it reads memory, has regions, or divides by what may be "
                                  "0 or -1)")
        for inner in op.operands:
            _check_clonable(loop, inner)


def _speculatable(op: Op) -> bool:
    """A pure op that may run for an iteration that never happens."""
    opdef = opdefs.lookup(op.name)
    if opdef is None or not opdef.pure or opdef.reads_memory or opdef.allocates or op.regions:
        return False
    if op.name in ("floordiv", "mod", "div"):
        divisor = op.operands[1]
        return isinstance(divisor, Const) and divisor.value not in (0, -1)
    return True


# ---- building ops ------------------------------------------------------------------------------


class _Builder:
    """Appends new ops to a list, folding literal index arithmetic."""

    def __init__(self, loc) -> None:
        self.ops: list[Op] = []
        self.loc = loc

    def op(self, name: str, operands: list[Operand], result_types: list, **attrs) -> Op:
        op = Op(name, operands, result_types, attrs, self.loc)
        self.ops.append(op)
        return op

    def add(self, a: Operand, b: Operand) -> Operand:
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(a.value + b.value)
        if b == Const(0):
            return a
        return self.op("add", [a, b], [I32]).result

    def mul(self, a: Operand, times: int) -> Operand:
        if isinstance(a, Const):
            return Const(a.value * times)
        if times == 0:
            return Const(0)
        if times == 1:
            return a
        return self.op("mul", [a, Const(times)], [I32]).result

    def before_end(self, k: Operand, stop: Operand, down: bool) -> Operand:
        """Whether iteration ``k`` runs: k < stop (k > stop counting down)."""
        if isinstance(k, Const) and isinstance(stop, Const):
            return Const(k.value > stop.value if down else k.value < stop.value)
        return self.op("cmp_gt" if down else "cmp_lt", [k, stop], [BOOL]).result


def _clone_operand(builder: _Builder, loop: Op, operand: Operand, k: Operand,
                   clones: dict[Value, Operand]) -> Operand:
    """``operand`` as it would be in the iteration whose induction variable is ``k``."""
    if not isinstance(operand, Value):
        return operand
    if operand is for_index(loop):
        return k
    if operand in clones:
        return clones[operand]
    if isinstance(operand, OpResult) and operand.op.parent is for_body(loop):
        op = operand.op
        inner = [_clone_operand(builder, loop, o, k, clones) for o in op.operands]
        copy = Op(op.name, inner, [r.type for r in op.results], dict(op.attrs), op.loc)
        builder.ops.append(copy)
        for old, new in zip(op.results, copy.results):
            clones[old] = new
        return clones[operand]
    return operand


def _issue(builder: _Builder, plan: _Plan, k: Operand, pred: Operand, stage: Operand, stages: int) -> None:
    """The async copies of iteration ``k`` into ``stage``, then a commit."""
    clones: dict[Value, Operand] = {}
    for copy, allocation in zip(plan.copies, plan.allocations):
        operands = [_clone_operand(builder, plan.loop, o, k, clones) for o in copy.operands[1:]]
        view = _view(builder, allocation, stage, stages, copy.loc)
        builder.ops.append(Op(ASYNC_FORM[copy.name], [view, *operands, pred], [], dict(copy.attrs), copy.loc))
    builder.op("async_commit", [], [])


def _view(builder: _Builder, allocation: Op, stage: Operand, stages: int, loc) -> Value:
    buffer = allocation.result
    rows, cols = allocation.attrs["shape"]
    view = Op("stage_view", [buffer, stage], [SharedType((rows, cols), buffer.type.element)],
              {"stages": stages}, loc)
    builder.ops.append(view)
    return view.result


def _insert_after(anchor: Op, ops: list[Op]) -> None:
    block = anchor.parent
    at = block.ops.index(anchor) + 1
    for op in ops:
        op.parent = block
    block.ops[at:at] = ops


# ---- the rewrite --------------------------------------------------------------------------------


def _pipeline(plan: _Plan, stages: int) -> None:
    loop, dot = plan.loop, plan.dot
    start, stop, step = for_bounds(loop)
    down = isinstance(step, Const) and step.value < 0
    for index, allocation in enumerate(plan.allocations):  # S tiles, one above the other
        rows, cols = allocation.result.type.shape
        staged = Op("shared_alloc_stages", [], [SharedType((rows * stages, cols), allocation.result.type.element)],
                    {**allocation.attrs, "stages": stages}, allocation.loc)
        insert_before(allocation, staged)
        erase_op(allocation)  # its copies and dot are rewritten below
        plan.allocations[index] = staged

    # Prologue: iterations 0 .. S-2 into stages 0 .. S-2.
    prologue = _Builder(loop.loc)
    for i in range(stages - 1):
        k = prologue.add(start, prologue.mul(step, i))
        _issue(prologue, plan, k, prologue.before_end(k, stop, down), Const(i), stages)
    insert_before(loop, *prologue.ops)

    # The stage index, carried.
    body = for_body(loop)
    slot = BlockArg(body, len(body.args), I32)
    body.args.append(slot)
    loop.operands.append(Const(0))
    loop.results.append(OpResult(loop, len(loop.results), I32))
    loop.attrs["pipeline_stages"] = stages

    # The body: wait for this iteration's tiles, refill the stage the last one read, multiply.
    steady = _Builder(dot.loc)
    steady.op("async_wait", [], [], pending=stages - 2)
    steady.ops.append(Op("barrier", [], [], loc=plan.first_barrier.loc))
    ahead = steady.add(for_index(loop), steady.mul(step, stages - 1))
    refill = steady.op("mod", [steady.add(slot, Const(stages - 1)), Const(stages)], [I32]).result
    _issue(steady, plan, ahead, steady.before_end(ahead, stop, down), refill, stages)
    reads = [_view(steady, allocation, slot, stages, dot.loc) for allocation in plan.allocations]
    by_buffer = {copy.operands[0]: view for copy, view in zip(plan.copies, reads)}
    for reader in [dot, *(rider for rider, _ in plan.riders)]:
        reader.operands = [by_buffer.get(reader.operands[0], reader.operands[0]),
                           by_buffer.get(reader.operands[1], reader.operands[1]), reader.operands[2]]
    insert_before(dot, *steady.ops)
    # A rider's barrier goes too: the next refill of its stage comes after
    # the next iteration's first barrier, as the dot's does.
    for op in [*plan.copies, plan.first_barrier, plan.last_barrier, *(barrier for _, barrier in plan.riders)]:
        erase_op(op)
    terminator = for_yield(loop)
    after = _Builder(dot.loc)
    following = after.op("mod", [after.add(slot, Const(1)), Const(stages)], [I32]).result
    insert_before(terminator, *after.ops)
    terminator.operands.append(following)

    # Epilogue: nothing in flight, nobody still reading the last stage. (Where a
    # barrier follows the loop already, stage-dots' before a later loop's
    # buffers take these ones' bytes, the wait goes before it.)
    block = loop.parent
    following_op = block.ops[block.ops.index(loop) + 1] if block.ops[-1] is not loop else None
    drain = [Op("async_wait", [], [], {"pending": 0}, dot.loc)]
    if following_op is None or following_op.name != "barrier":
        drain.append(Op("barrier", [], [], loc=dot.loc))
    _insert_after(loop, drain)
    _erase_dead(body)


def _erase_dead(block) -> None:
    """Erase the pure ops of ``block`` that only fed the copies replaced."""
    changed = True
    while changed:
        changed = False
        counts = use_counts(block)
        for op in reversed(list(block.ops)):
            if op.regions or not opdefs.is_pure(op.name) or any(counts.get(r, 0) for r in op.results):
                continue
            erase_op(op)
            for value in values_used(op):
                counts[value] -= 1
            changed = True


def scratch_reserve(kernel: Kernel, staged: frozenset[Op] = frozenset(), overlaying: frozenset[Op] = frozenset(),
                    register_a: frozenset[Op] = frozenset()) -> int:
    """Shared bytes to leave for the CUDA backend's scratch (reductions,
    layout changes, unstaged dots), which it sizes only while emitting: the
    largest tile such an op reads or makes, at 4 bytes an element at least.
    A layout change the layouts stage adds later is not foreseen. The dots
    in ``staged`` are about to be staged: they need none; the ops in
    ``overlaying`` run after the buffers' last use, where their scratch
    overlays the buffers (the allocator's late scratch). The dots in
    ``register_a`` are about to be staged as dot_rs: off wgmma their A
    alone goes through scratch, B being staged."""
    reserve = 0
    for op in walk(kernel.body):
        opdef = opdefs.lookup(op.name)
        if opdef is None or op.name == "dot_shared" or op in staged or op in overlaying \
                or opdef.layout_rule not in ("reduce", "convert", "dot"):
            continue
        sizes = []
        for value in [*values_used(op), *op.results]:
            if isinstance(value.type, BlockType):
                element = value.type.element  # a pointer takes 8 bytes
                nbytes = value.type.numel * (8 if isinstance(element, PointerType) else max(4, element.nbytes))
                sizes.append((nbytes + 15) // 16 * 16)
                reserve = max(reserve, sizes[-1])
        if op.name == "dot" and op not in register_a:  # an unstaged dot holds both operand tiles there at once
            reserve = max(reserve, sum(sizes[:2]))
    return reserve


def _note(kernel: Kernel, loop: Op, fact: str) -> None:
    """``fact``: why the staged dots of ``loop``'s body are not pipelined."""
    for op in for_body(loop).ops:
        if op.name in ("dot_shared", "dot_rs"):
            remarks.note(kernel, op, remarks.PIPELINE, fact)


def choose_stages(requested: int, total: Callable[[int], int], budget: int = SHARED_MEMORY_BUDGET) -> int:
    """The most stages up to ``requested`` at which the shared array takes
    ``total(stages)`` bytes within ``budget`` (1 where none from 2 does)."""
    return max([1] + [stages for stages in range(2, requested + 1) if total(stages) <= budget])


@dataclass(frozen=True)
class SoftwarePipelinePass:
    name: str = "software-pipeline"
    summary: str = ("multi-buffer a staged dot's K loop: async copies num_stages-1 iterations ahead "
                    "(default 3 stages, a loop's num_stages first)")
    num_stages: int | None = None
    shared_budget: int = SHARED_MEMORY_BUDGET  # bytes of shared memory a block may use (the target's)

    def apply(self, kernel: Kernel) -> Kernel:
        allocation_of = {op.result: op for op in kernel.body.ops if op.name == "shared_alloc"}
        counts = use_counts(kernel.body)
        plans = []
        for op in walk(kernel.body):
            if op.name != "for" or "pipeline_stages" in op.attrs:
                continue
            requested = requested_stages(op, self.num_stages)
            if requested <= 1:
                whose = "the loop's num_stages" if op.attrs.get("num_stages") is not None else "num_stages"
                _note(kernel, op, f"{whose} is {requested}")
                continue
            try:
                plans.append(_plan(op, allocation_of, counts))
            except _NotPipelinable as refused:
                if refused.reason:
                    _note(kernel, op, refused.reason)
                continue
        if not plans:
            return kernel
        # Budget: every other buffer stays as it is; loops are served in program order. A loop's
        # buffers take the bytes of those a drained barrier separates them from (buffer_liveness:
        # the causal attention's second K loop reuses the first's).
        strided = any(plan.strided for plan in plans)
        reserve = scratch_reserve(kernel)
        for plan in plans:
            requested = requested_stages(plan.loop, self.num_stages)
            liveness = Liveness(kernel)
            stages = choose_stages(
                requested, lambda n, plan=plan, liveness=liveness: _array_bytes(kernel, liveness, plan, strided, n)
                + reserve, self.shared_budget)
            other = _array_bytes(kernel, liveness, plan, strided, 1) + reserve - plan.stage_bytes
            room = (f"a stage of its buffers takes {plan.stage_bytes} bytes, beside {other} "
                    f"bytes of other buffers and scratch reserve in the {budget_text(self.shared_budget)} budget")
            if stages <= 1:
                remarks.note(kernel, plan.dot, remarks.PIPELINE, f"{requested} stages asked, but only 1 fits: {room}")
                plan.loop.attrs["pipeline_stages"] = 1
                continue
            if stages < requested:
                remarks.note(kernel, plan.dot, remarks.PIPELINE, f"of {requested} asked: {room}")
            _pipeline(plan, stages)
        return kernel


def _array_bytes(kernel: Kernel, liveness: Liveness, plan: _Plan, strided: bool, stages: int) -> int:
    """The bytes of the kernel's buffers, overlaid where their live ranges
    allow, with ``plan``'s at ``stages`` stages."""
    own = set(plan.allocations)

    def size(op: Op) -> int:
        if op in own:
            return (_padded_bytes(op) if plan.strided else op.result.type.nbytes) * stages
        return _padded_bytes(op) if strided else op.result.type.nbytes
    buffers = [op for op in kernel.body.ops if opdefs.lookup(op.name).allocates]
    offsets = placement(buffers, size, lambda op: 16, 0, liveness.may_overlay)
    return placed_end(buffers, offsets, size, 0)
