"""allocate-shared: divide the kernel's one dynamic shared-memory array and
check it fits the budget, as Triton's Allocation analysis does.

Runs last in the layouts stage, on laid-out SSA. What each statement
needs of scratch (a reduction's per-warp partials, a layout change's copy,
an unstaged dot's operand tiles, a scan's chunks) is what the CUDA emitter
addresses from byte 0, measured by running it without output
(``emitter.measure_scratch``). The pass decides the rest:

- the scratch is the most any statement needs before the buffers' last use;
- each stage-dots buffer follows it, in program order, at its alignment
  (16 bytes; a swizzled ``nvmma_shared`` buffer 1024), over the bytes of
  an earlier one whose live range a drained barrier separates from its
  own (``buffer_liveness``: the causal attention's two K loops);
- a statement past the buffers' last use and the barrier after it
  (``shared_memory.late_ops``: an epilogue's layout change) has its
  scratch from byte 0 again, over the dead buffers;
- a dot whose A tile the printer writes from registers to scratch gets
  each row of it padded (``a_pad``, elements) so that a warp's 16-byte reads
  down its rows fall in distinct banks, as a staged A buffer's rows are; a
  padding the kernel has no room for is dropped, the largest dot's first;
- a layout change out of an mma layout gets each row of its copy in
  scratch padded (``scratch_pad``, elements) where rows a multiple of 128
  bytes would put a warp's 8 fragment rows in the same banks (dropped,
  as ``a_pad`` is, where the kernel has no room for it); into a blocked
  layout whose runs go down the columns (a dot's result stored
  column-major), its copy is column-major (``scratch_columns``), each
  column padded, and each thread reads its run as one vector;
- all of it must fit the budget (the target's: sm_90 227 KiB), else an
  error at the statement that needs the most scratch (or the first buffer).

It writes each buffer's ``offset`` and the kernel's totals into the IR,
which the emitter then only reads:

    kernel k(...) num_warps=4 @"k.py":1:1 {
      %0 = shared_alloc_stages name="dot_a0", shape=(64, 32), dtype=f32, stages=3 : ...
  =>
    kernel k(...) num_warps=4 shared_memory(bytes=55296, scratch=0, late_scratch=0) @"k.py":1:1 {
      %0 = shared_alloc_stages name="dot_a0", shape=(64, 32), dtype=f32, stages=3, offset=0 : ...

and on an unstaged dot:

      %9 = dot %7, %8, input_precision="ieee", out_dtype=f32, read_widths=(4, 4) : ...
  =>
      %9 = dot %7, %8, input_precision="ieee", out_dtype=f32, read_widths=(4, 4), a_pad=4 : ...

A kernel that uses no shared memory gets an empty plan, which prints as
nothing. A kernel the emitter cannot render is left without a plan:
``emit-cuda`` reports why.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.combine_strategy import with_combine_strategies
from mytriton.backends.cuda.copy_widths import with_copy_widths
from mytriton.backends.cuda.dots import A_PAD, B_PAD, COLUMNS, columns_pad, writes_columns
from mytriton.backends.cuda.emitter import ScratchNeed, measure_scratch
from mytriton.backends.cuda.tma import ring_bytes
from mytriton.backends.cuda.tma_copies import without_tma
from mytriton.backends.cuda.hold_tiles import with_held_tiles
from mytriton.backends.cuda.read_widths import with_read_widths
from mytriton.backends.cuda.shared_memory import aligned, buffers_end, element_bytes, overlaid_offsets, shared_buffers
from mytriton.diagnostics import CompileError
from mytriton.passes.manager import require_laid_out
from mytriton.ir.layout_attributes import Blocked, Mma, fma_operand_pad
from mytriton.ir.ssa import Kernel, Op, SharedMemory, walk
from mytriton.target import SHARED_MEMORY_BUDGET, budget_text
from mytriton.types import element_of

SCRATCH_PAD = "scratch_pad"  # allocate-shared's padding of a layout change's rows in scratch
SCRATCH_COLUMNS = "scratch_columns"  # allocate-shared's: a layout change's copy in scratch is column-major


@dataclass(frozen=True)
class AllocateSharedPass:
    shared_budget: int = SHARED_MEMORY_BUDGET
    name: str = "allocate-shared"
    summary: str = "place shared buffers and scratch in the shared array, overlaying dead buffers; check the budget"
    after_layouts: bool = True  # it reads the layouts: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        # The emitter measures the copies, dots, combines and held tiles as they will be written.
        kernel = with_held_tiles(with_combine_strategies(with_read_widths(with_copy_widths(kernel))))
        try:
            needs = padded_scratch(kernel, self.shared_budget)
        except CompileError:
            kernel.shared_memory = None
            for op in shared_buffers(kernel):
                op.attrs.pop("offset", None)
            return kernel
        return allocate(kernel, needs, self.shared_budget)


def allocated(kernel: Kernel, shared_budget: int = SHARED_MEMORY_BUDGET) -> Kernel:
    """``kernel`` with a shared-memory plan within ``shared_budget``: its own
    where it has one that fits, else a new one (any error the emitter or the
    budget raises on the way is raised)."""
    if kernel.shared_memory is not None and kernel.shared_memory.bytes <= shared_budget:
        return kernel
    kernel = with_held_tiles(with_combine_strategies(with_read_widths(with_copy_widths(kernel))))
    return allocate(kernel, padded_scratch(kernel, shared_budget), shared_budget)


def padded_scratch(kernel: Kernel, shared_budget: int) -> list[ScratchNeed]:
    """The scratch needs of ``kernel`` once each dot that writes its A tile
    to scratch has its ``a_pad``: the padding where the kernel still fits
    the budget with it, else none (the largest need's dot first)."""
    padded_ops = {}
    for op in walk(kernel.body):
        if writes_a_to_scratch(op):
            for label in ("a", "b"):
                op.attrs.pop(COLUMNS[label], None)
                if writes_columns(op, label):
                    op.attrs[COLUMNS[label]] = True
            op.attrs.pop(B_PAD, None)
            op.attrs[A_PAD] = scratch_a_pad(op)
            if op.attrs.get(COLUMNS["b"]):
                b = op.operands[1]
                op.attrs[B_PAD] = columns_pad(b.type.shape[0], element_of(b.type).nbytes)
            padded_ops[id(op)] = A_PAD
        elif op.name == "convert_layout":
            op.attrs.pop(SCRATCH_PAD, None)
            op.attrs.pop(SCRATCH_COLUMNS, None)
            if columns_exchange(op):
                op.attrs[SCRATCH_COLUMNS] = True
            pad = fragment_exchange_pad(op)
            if pad:
                op.attrs[SCRATCH_PAD] = pad
                padded_ops[id(op)] = SCRATCH_PAD
    needs = measure_scratch(kernel)
    while _plan(kernel, needs)[0] > shared_budget:
        padded = [need for need in needs if need.op.attrs.get(padded_ops.get(id(need.op), ""))
                  or padded_ops.get(id(need.op)) == A_PAD and need.op.attrs.get(B_PAD)]
        if not padded:
            break  # the padding is not what passes the budget: allocate says what does
        largest = max(padded, key=lambda need: need.nbytes).op
        if padded_ops[id(largest)] == A_PAD:
            largest.attrs[A_PAD] = 0
            if largest.attrs.get(B_PAD):
                largest.attrs[B_PAD] = 0
        else:
            del largest.attrs[SCRATCH_PAD]
        needs = measure_scratch(kernel)
    return needs


def writes_a_to_scratch(op: Op) -> bool:
    """Whether the printer writes ``op``'s A tile from registers to scratch
    (``dots.stage_operands``): a ``dot`` that stage-dots left unstaged, or a
    ``dot_rs`` anywhere but in a wgmma layout (wgmma reads A from registers)."""
    if op.name == "dot":
        return True
    if op.name != "dot_rs":
        return False
    layout = op.results[0].type.layout
    return not (isinstance(layout, Mma) and layout.version == 3)


def columns_exchange(op: Op) -> bool:
    """Whether a ``convert_layout`` moves a tile out of an mma layout into a
    blocked one whose runs go down its columns (a dot's result stored
    column-major): its copy in scratch is then column-major too, so that each
    thread reads its run as one vector, where row-major the run's elements are
    a row apart and the warp's reads fall in the same banks."""
    x, result = op.operands[0], op.results[0]
    layout, new = getattr(x.type, "layout", None), getattr(result.type, "layout", None)
    return isinstance(layout, Mma) and isinstance(new, Blocked) and len(x.type.shape) == 2 \
        and new.order[0] == 0 and new.size_per_thread[0] > 1


def fragment_exchange_pad(op: Op) -> int:
    """The padding after each row of a ``convert_layout``'s copy in scratch
    when it moves a tile out of an mma layout: a warp writes its fragments
    two adjacent columns a thread on 8 rows, and rows a multiple of 128
    bytes long would put all 8 in the same banks (an 8-way conflict on
    every write of a dot's epilogue). 8 elements puts each row 4 banks
    (f16) or 8 (f32) after the one above, so that the 8 rows of a write
    (f32: a half-warp's 4) fall in distinct banks, and keeps each row
    16-byte aligned for the reads of the new layout. 0 where no conflict
    arises or the element is not 2 or 4 bytes."""
    x = op.operands[0]
    layout = getattr(x.type, "layout", None)
    if not isinstance(layout, Mma) or len(x.type.shape) != 2:
        return 0
    nbytes = element_bytes(x.type)  # a pointer tile's (a loop's addresses) 8
    if nbytes not in (2, 4):
        return 0
    if op.attrs.get(SCRATCH_COLUMNS):
        # Column-major, a write's 8 rows are adjacent and its 4 pairs of
        # columns a column apart: 16 bytes after each column puts the pairs 4
        # banks apart (f16: 8 rows in 4 words; f32: the half-warp's 4 words
        # then 8 apart), and keeps each column's runs 16-byte aligned.
        return 16 // nbytes if (x.type.shape[0] * nbytes) % 128 == 0 else 0
    return 8 if (x.type.shape[-1] * nbytes) % 128 == 0 else 0


def scratch_a_pad(op: Op) -> int:
    """The padding that puts the rows of ``op``'s A tile in scratch in
    distinct banks for the warps' 16-byte reads (``fma_operand_pad``, as a
    staged A buffer's; it also keeps ldmatrix's rows 16-byte aligned)."""
    a = op.operands[0]
    if op.attrs.get(COLUMNS["a"]):  # its transpose's rows, read by ldmatrix.trans
        return columns_pad(a.type.shape[0], element_of(a.type).nbytes)
    return fma_operand_pad(a.type.shape[1], element_of(a.type).nbytes)


def aligned8(nbytes: int) -> int:
    return (nbytes + 7) // 8 * 8


def _plan(kernel: Kernel, needs: list[ScratchNeed]) -> tuple[int, int, int, Op | None, list[int]]:
    """The shared array's bytes in all, the scratch before the buffers' last
    use and after it, the statement needing the most, and the buffers' offsets."""
    scratch = late = 0
    largest = None  # the statement needing the most scratch: where an over-budget error points
    for need in needs:
        if need.late:
            late = max(late, need.nbytes)
        if need.nbytes > scratch:
            largest = need.op
            if not need.late:
                scratch = need.nbytes
    buffers = shared_buffers(kernel)
    offsets = overlaid_offsets(kernel, scratch)
    total = max(buffers_end(buffers, offsets, scratch), aligned(late))
    return total, scratch, late, largest, offsets


def allocate(kernel: Kernel, needs: list[ScratchNeed], shared_budget: int) -> Kernel:
    total, scratch, late, largest, offsets = _plan(kernel, needs)
    buffers = shared_buffers(kernel)
    # The mbarriers of TMA's copy groups go last (tma.py); where they alone
    # would pass the budget, cp.async makes the copies instead.
    ring = ring_bytes(kernel)
    if ring and total <= shared_budget < aligned8(total) + ring:
        without_tma(kernel)
        ring = 0
    if ring:
        total = aligned8(total) + ring
    if total > shared_budget:
        end = buffers_end(buffers, offsets, scratch)
        staged = end - aligned(scratch) if buffers else 0
        # Scratch serves reductions, scans, layout changes, unstaged dots' operands, atomics: name the one.
        parts = f"{staged} for staged dot tiles and {scratch} of scratch" if staged \
            else f"scratch, the most of it for this {largest.name}" if largest is not None else "scratch"
        where = largest if scratch or not buffers else buffers[0]
        raise CompileError(f"kernel '{kernel.name}' needs {total} bytes of shared memory ({parts}), "
                           f"over the {budget_text(shared_budget)} budget; use smaller tiles",
                           where.loc if where is not None and where.loc else kernel.loc)
    for op, offset in zip(buffers, offsets):
        op.attrs["offset"] = offset
    kernel.shared_memory = SharedMemory(total, scratch, late)
    return kernel
