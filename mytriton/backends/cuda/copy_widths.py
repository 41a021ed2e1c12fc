"""copy-widths: how many elements each cp.async of a pipelined loop's copy
moves, and what the kernel must still check at run time.

Runs in the layouts stage, on laid-out SSA (a buffer's row padding is a
layout decision). A copy moves whole chunks of up to 16 bytes where its
buffer's rows and padding allow (``dots.vector_width``: 16 bytes, else 8;
element by element into a column-major buffer or with a non-zero fill,
which cp.async cannot write). A chunk is one run of a row, so its
addresses must be aligned: the base address a multiple of the chunk's
bytes, the row stride and the column offset multiples of its elements, the
columns contiguous and any wrap a multiple. The axis analysis
(``ir/axis_info.py``) proves that, or the kernel checks it at run time;
where it also proves the column bound a multiple, no chunk straddles the
bound. The pass writes its answer on each copy:

    async_copy_to_shared %15, a_ptr, %3, 0, K, M, K, 0.0, %14 @20:13
  =>
    async_copy_to_shared %15, a_ptr, %3, 0, K, M, K, 0.0, %14, chunk=4, chunks="checked" @20:13

``chunk=1``: element by element; ``chunks="checked"``: the kernel tests
the alignment and copies element by element where it fails; ``"aligned"``:
proven, so no test; ``"whole"``: proven, and every chunk is wholly in or
out of bounds.

A copy of whole chunks can zero-fill a chunk out of bounds two ways, and
the pass writes which (``zero_fill``): cp.async's ignore-src predicate
(``"ignore_src"``), or a source size of 0, as a copy whose chunks a bound
may cut does (``"src_size"``; ptxas gives it LDGSTS's ZFILL form). Neither
is faster everywhere. On an H100 (benchmarks/NOTES.md, sessions of
2026-12-06, twenty-eighth and twenty-ninth), the predicate took f16 wgmma
from 403 to 478 TFLOP/s and exact f32 on FMA ran 5-10 % slower without it,
but most TF32 matmul forms on mma.sync ran 4-30 % faster with the source
size. Not a persistent kernel's, whose K loop runs inside its loop over
tiles: 3-7 % slower, in two runs. So ``"src_size"`` where every dot that
reads the buffer runs on mma.sync in a loop that no other loop holds,
``"ignore_src"`` elsewhere:

    async_copy_to_shared %15, a_ptr, %3, 0, K, M, K, 0.0, %14, chunk=4, chunks="whole", zero_fill="src_size"

A copy the threads wait for (``copy_to_shared``, ``copy_strided_to_shared``:
a dot staged outside a pipelined loop, attention's Q) goes through
registers, where a chunk cut by a bound would need its elements one by one:
it moves whole chunks as single 8- or 16-byte loads where they are proven
``"whole"``; where only the column bound is proven (none, or a multiple of
the chunk), ``"checked"``: the kernel tests the alignment (Q's row and
column strides are runtime values) and falls back to a loop element by
element; otherwise ``chunk=1``, element by element.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.dots import copy_geometry, vector_width
from mytriton.passes.manager import require_laid_out
from mytriton.ir import opdefs
from mytriton.ir.axis_info import AxisAnalysis
from mytriton.ir.layout_attributes import Mma
from mytriton.ir.ssa import Const, Kernel, Op, Value, walk
from mytriton.passes.dot_layouts import buffer_of, copies_into_shared
from mytriton.types import BlockType, SharedType
from mytriton.passes.stage_dots import NO_BOUND  # the column bound of an unmasked dimension


is_copy = copies_into_shared  # a copy from global into shared memory


def is_async_copy(op: Op) -> bool:
    """A copy into shared memory that completes later, behind its predicate (its last operand)."""
    return is_copy(op) and opdefs.lookup(op.name).operands[-1:] == ("pred",)


@dataclass(frozen=True)
class CopyWidthsPass:
    name: str = "copy-widths"
    summary: str = ("give each copy into shared memory its chunk (an async one's cp.async) and what "
                    "the kernel checks of its alignment")
    after_layouts: bool = True  # a buffer's padding is a layout: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        facts = None
        by_source_size = source_size_buffers(kernel)
        for op in walk(kernel.body):
            if not is_copy(op):
                continue
            g = copy_geometry(op)
            width = vector_width(g.view_type, g.fill)
            op.attrs["chunk"] = width
            op.attrs.pop("chunks", None)
            op.attrs.pop(opdefs.ZERO_FILL, None)
            if width > 1:
                facts = facts or AxisAnalysis(kernel)
                op.attrs["chunks"] = chunks(op, width, facts)
                if is_async_copy(op) and op.attrs["chunks"] == "whole":
                    op.attrs[opdefs.ZERO_FILL] = "src_size" if buffer_of(op.operands[0]) in by_source_size \
                        else "ignore_src"
                if not is_async_copy(op) and op.attrs["chunks"] != "whole" \
                        and not (op.attrs["chunks"] == "checked" and bound_cuts_no_chunk(op, width, facts)):
                    op.attrs["chunk"] = 1
                    del op.attrs["chunks"]
        return kernel


def chunks(op: Op, width: int, facts: AxisAnalysis) -> str:
    """What the axis analysis proves of a copy's ``width``-element chunks (the module's three answers)."""
    g = copy_geometry(op)
    nbytes = g.view_type.element.nbytes

    def multiple(value, of: int) -> bool:
        return facts.of(value).scalar_divisibility % of == 0

    if not (isinstance(g.col_stride, Const) and g.col_stride.value == 1):
        return "checked"
    if not (isinstance(g.col_wrap, Const) and g.col_wrap.value == 0) and not multiple(g.col_wrap, width):
        return "checked"  # a wrap of 0 (none) is divisible by everything
    if not (multiple(g.base, width * nbytes) and multiple(g.stride, width) and multiple(g.col_offset, width)):
        return "checked"
    return "whole" if bound_cuts_no_chunk(op, width, facts) else "aligned"


def source_size_buffers(kernel: Kernel) -> frozenset[Value]:
    """The shared buffers whose whole chunks are zero-filled by cp.async's
    source size: dots read them, and every dot reading them runs on mma.sync
    (its result in an mma layout of version 2) in at most one loop (a
    persistent kernel's K loop, inside its loop over tiles, does not)."""
    verdict: dict[Value, bool] = {}
    for op in walk(kernel.body):
        opdef = opdefs.lookup(op.name)
        if opdef is None or opdef.layout_rule != "dot" or not op.results:
            continue
        result = op.results[0].type
        on_mma_sync = isinstance(result, BlockType) and isinstance(result.layout, Mma) and result.layout.version == 2
        yes = on_mma_sync and loops_around(op) <= 1
        for operand in op.operands:
            if isinstance(operand, Value) and isinstance(operand.type, SharedType):
                buffer = buffer_of(operand)
                verdict[buffer] = verdict.get(buffer, True) and yes
    return frozenset(buffer for buffer, yes in verdict.items() if yes)


def loops_around(op: Op) -> int:
    """How many loops (``for``, ``while``: the structured control ops that
    repeat their region) hold ``op``."""
    count, block = 0, op.parent
    while block is not None and block.parent is not None:
        holder = block.parent
        count += holder.name in ("for", "while")
        block = holder.parent
    return count


def bound_cuts_no_chunk(op: Op, width: int, facts: AxisAnalysis) -> bool:
    """Whether a copy's column bound is none or a proven multiple of ``width``:
    aligned, each chunk is then wholly in or out of bounds."""
    g = copy_geometry(op)
    return g.col_bound == NO_BOUND or facts.of(g.col_bound).scalar_divisibility % width == 0


def with_copy_widths(kernel: Kernel) -> Kernel:
    """``kernel`` with every async copy's chunk decided (laid-out SSA written
    by hand, or from before this pass, has none; a waited-for copy without one
    moves element by element)."""
    if any(is_async_copy(op) and "chunk" not in op.attrs for op in walk(kernel.body)):
        return CopyWidthsPass().apply(kernel)
    return kernel
