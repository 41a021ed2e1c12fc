"""emit-cuda's ``store_tile`` (tma-stores'): a dot's result written by TMA.

With ``engine="tma"``, the threads write their elements into the scratch at
byte 0, in boxes of one swizzle block of every row each, swizzled as TMA
reads them (the 16-byte chunk ``j`` of row ``r`` of a box at chunk
``j ^ (r mod 8)`` for a 128-byte block); a thread's two adjacent columns of
a wgmma fragment go as one word. The writes are ``st.shared`` at 32-bit
shared addresses: through a generic pointer, NVVM spent a quarter of the
kernel's build on their swizzled addresses. Every thread then fences its writes for the
async proxy, and after a barrier thread 0 issues one
``cp.async.bulk.tensor.2d`` a box through the store's tensor map, commits
them as a bulk group and waits until TMA has read the scratch (the next
statement that writes scratch has a barrier first: insert-barriers). TMA
drops what lies past the map's extents, which are the store's bounds.

Without an engine (the launcher's build for a launch no map describes, or
an edited dump), each thread stores its own elements where they are in
bounds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.tma import map_name
from mytriton.backends.cuda.tma_copies import is_tma, store_map_of
from mytriton.ir.layout_attributes import Mma
from mytriton.ir.ssa import Op, Value
from mytriton.types import I32

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


@renders("store_tile")
def render_store_tile(em: "EmitContext", group: Group) -> None:
    (op,) = group.ops
    if is_tma(op):
        emit_tma_store(em, op)
    else:
        emit_element_stores(em, op)


def _scalars(em: "EmitContext", op: Op) -> list[str]:
    return [as_type(em.scalar_arg(x), I32) for x in op.operands[1:6]]


def emit_element_stores(em: "EmitContext", op: Op) -> None:
    """Each thread's elements, where in bounds: ``store``'s meaning, no TMA."""
    value = op.operands[-1]
    row_offset, col_offset, stride, row_bound, col_bound = _scalars(em, op)
    loop = em.open_loop(em.layout_of(value), op, looped=True)
    coords = loop.coords()
    row, col = (f"({offset} + {loop.use(c)})" for offset, c in zip((row_offset, col_offset), coords))
    conditions = [c for c in (loop.owner(), f"{row} < {row_bound}", f"{col} < {col_bound}") if c]
    target = f"{em.scalar_ref(op.operands[0])}[(long long){row} * {stride} + {col}]"
    loop.lines.append(f"if ({' && '.join(conditions)}) {target} = {loop.value(value, coords).expr};")
    em.close_loop(loop, f"store_tile{em.where(op).replace('  // store_tile', '')} element by element over "
                        f"{em.parent_name(loop.domain.parent)} ({loop.domain.slots} slot(s) per thread)")


def _in_registers(em: "EmitContext", value: Value, op: Op) -> str:
    """The per-thread array holding ``value`` (computed into one here where none does)."""
    em.hold_in_registers(value, op)
    if value in em.storage:
        return em.storage[value]
    domain = em.layout_of(value)
    loop = em.open_loop(domain, op, looped=True)
    name = "t" + em.name(value)[1:]
    loop.lines.append(f"{name}[k] = {loop.value(value, loop.coords()).expr};")
    em.close_loop(loop, f"{em.name(value)} in registers for its TMA store ({domain.slots} slot(s) per thread)",
                  [f"{c_element(value.type)} {name}[{domain.slots}];"])
    em.storage[value] = name
    return name


def emit_tma_store(em: "EmitContext", op: Op) -> None:
    """The module's doc: stage the tile swizzled, then one bulk copy a box."""
    value = op.operands[-1]
    rows, cols = value.type.shape
    nbytes = value.type.element.nbytes
    m = store_map_of(op)
    index = em.tensor_maps.index(m)
    box_bytes = m.box_cols * rows * nbytes
    boxes = cols // m.box_cols
    held = _in_registers(em, value, op)
    row_offset, col_offset = _scalars(em, op)[:2]
    element = c_element(value.type)
    em.scratch_fence()
    where = em.where(op).replace("  // store_tile", "")
    em.line(f"// store_tile{where}: the {rows}x{cols} tile staged in shared memory, swizzled {m.swizzle}B, "
            f"then TMA through map {index}, {boxes} box(es) of {m.box_cols}x{rows}")
    loop = em.open_loop(em.layout_of(value), op)

    def at(row: str, col: str) -> str:
        """The byte of (row, col) in the staged boxes, its 16-byte chunk swizzled as TMA's."""
        byte = f"({col}) / {m.box_cols} * {box_bytes} + ({row}) * {m.swizzle} + (({col}) % {m.box_cols}) * {nbytes}"
        return f"(({byte}) ^ ((({byte}) >> 7 & {m.swizzle // 16 - 1}) << 4))"

    split = loop.split_coords()
    prelude = []
    if split is not None:
        # Rows and columns are powers of two, each coordinate this thread's part
        # plus the slot's in other bits: every field of the address (the box, the
        # row, the chunk, the byte in it) and the swizzle's XOR are linear over
        # such sums, so the address is this thread's XOR the slot's, a constant
        # once the loop unrolls (as the exchange's writes: stage_shared).
        (thread_row, thread_col), (slot_row, slot_col) = split
        prelude.append(f"const int thread_at = {at(thread_row, thread_col)};")
        target = f"staged + (thread_at ^ {at(slot_row, slot_col)})"
    else:
        row, col = (loop.use(c) for c in loop.coords())
        target = f"staged + {at(row, col)}"
    if isinstance(value.type.layout, Mma):  # a fragment's two adjacent columns (consecutive slots), one word
        loop.lines.append(em.lang.shared_store(element, target, [f"{held}[k]", f"{held}[k + 1]"]))
        loop.step = 2
    else:
        loop.lines.append(em.lang.shared_store(element, target, [f"{held}[k]"]))
    with em.out.scope("{"):
        em.line("const unsigned staged = (unsigned)__cvta_generic_to_shared(smem);  // its 32-bit shared address")
        for text in prelude:
            em.line(text)
        em.close_loop(loop, f"the tile into its boxes ({loop.domain.slots} slot(s) per thread)")
        em.line('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the writes, seen by TMA')
        em.line(em.lang.barrier)
        with em.out.scope(f"if ({em.lang.thread_id} == 0) {{"):
            for j in range(boxes):
                col0 = col_offset if not j else f"{col_offset} + {j * m.box_cols}"
                em.line('asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" '
                        f':: "l"(&{map_name(index)}), "r"({col0}), "r"({row_offset}), "r"(staged + {j * box_bytes}) '
                        ': "memory");')
            em.line('asm volatile("cp.async.bulk.commit_group;" ::: "memory");')
            em.line('asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the scratch is read')
    em.need_shared(rows * cols * nbytes, op)
