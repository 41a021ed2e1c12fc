"""``reduce`` and ``scan`` with a combine region on the GPU (tl.reduce,
tl.associative_scan, tl.cumsum, tl.argmax, ...).

A combine region has no identity element and need not commute, so both ops
go through shared memory in an order that keeps the combine's order and
counts each element once:

1. each thread writes the elements it owns (copies of a replicated layout
   write nothing) of each of the N tiles into a row-major array in shared
   memory;
2. the elements along the axis form ``R`` rows of ``L`` (a whole-tile reduce:
   one row of all of them); each row is cut into the ``C`` chunks the
   combine-strategy pass chose (``chunks_per_row``: as many as the threads
   allow, up to ``L``) and one thread combines each chunk in order
   (from the end when ``reverse``), a scan writing each running value back,
   and keeps the chunk's total;
3. the chunk totals of each row become their inclusive prefixes in log2(C)
   rounds (each total combined with the one d before it, on the left: the
   order stays); a scan then combines, into every element of a chunk but the
   first, the prefix of the chunks before it (on the left);
4. each thread reads its slots of the results back: the scanned tile in the
   operand's layout, or a row's total in the reduce's slice layout.

Barriers separate the steps. The region is emitted inline as scalar C on
the N values (``combine_lines``), once per place it is applied.

This is the general path. Where the operand's layout gives each thread a
contiguous run of the axis (the usual blocked layout), ``warp_scan.py``
does it in registers and warp shuffles instead, with shared memory only
across warps; the combine-strategy pass picks (``strategy``), from the
layouts alone.
"""
from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.thread_coordinates import Layout
from mytriton.backends.cuda.combine_region import combine_lines
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.slots import SlotLoop, linear_index
from mytriton.backends.cuda.warp_scan import emit_warp_combine
from mytriton.backends.cuda.warp_scan import plan as warp_plan
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Op
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


@renders("combine")
def render_combine(em: "EmitContext", group: Group) -> None:
    emit_combine(em, group.ops[0], group.domain)


def emit_combine(em: "EmitContext", op: Op, domain: Layout) -> None:
    scan = op.name == "scan"
    tiles = op.operands
    shape = tiles[0].type.shape
    axis = op.attrs.get("axis")
    reverse = bool(op.attrs.get("reverse", False))
    numel = prod(shape)
    if axis is None:
        length, inner = numel, 1
    else:
        length, inner = shape[axis], prod(shape[axis + 1:])
    rows = numel // length
    threads = em.threads
    strategy = op.attrs.get("strategy")
    if strategy is None or (strategy == "shared" and "chunks_per_row" not in op.attrs):
        what = "strategy" if strategy is None else "chunks_per_row"
        raise em.error_at(op, f"this {op.name} has no {what} decision: run combine-strategy (the layouts stage) again")
    chunks = op.attrs.get("chunks_per_row", 1)  # the combine-strategy pass's (the shuffles use none)
    per_chunk = length // chunks
    tag = em.name(op.results[0])[1:]
    elements = [c_element(element_of(x.type)) for x in tiles]
    sizes = [element_of(x.type).nbytes for x in tiles]
    where = f"@{op.loc.line}:{op.loc.col}" if op.loc else ""
    tid, barrier = em.lang.thread_id, em.lang.barrier
    what = f"along axis {axis}" if axis is not None else "over the whole tile"
    fast = warp_plan(op, domain) if strategy == "shuffle" else None
    if strategy == "shuffle" and fast is None:
        raise em.error_at(op, f"this {op.name} cannot run by warp shuffles in its operands' layout: "
                              'its strategy must be "shared" (run combine-strategy again)')
    if fast is not None:
        em.line(f"// {op.name} {where} {what}{' from the end' if reverse else ''}: {rows} row(s) of {length}, "
                f"{fast.blocks} block(s) of {fast.per_thread} slot(s) x {fast.lanes} lane(s) x {fast.warps} warp(s) "
                "along it, by warp shuffles")
    else:
        em.line(f"// {op.name} {where} {what}{' from the end' if reverse else ''}: {rows} row(s) of {length}, "
                f"{chunks} chunk(s) of {per_chunk} per row, through shared memory")

    # 0. the operands into registers (reading them may stage other tiles through shared memory)
    loop = em.open_loop(domain, op)
    coords = loop.coords()
    held = [f"x{i}_{tag}" for i in range(len(tiles))]
    for name, x in zip(held, tiles):
        loop.lines.append(f"{name}[k] = {as_type(loop.value(x, coords), element_of(x.type))};")
    em.close_loop(loop, f"{op.name}: the operands' elements this thread holds",
                  [f"{ct} {name}[{domain.slots}];" for ct, name in zip(elements, held)])
    if fast is not None:
        emit_warp_combine(em, op, fast, held)
        return

    # Shared arrays: the N tiles, then the N arrays of chunk totals.
    offset = 0
    tile_arrays, total_arrays = [], []
    em.scratch_fence()
    for i, (ct, size) in enumerate(zip(elements, sizes)):
        name = f"s{i}_{tag}"
        em.line(f"{ct}* const {name} = reinterpret_cast<{ct}*>(smem + {offset});")
        tile_arrays.append(name)
        offset += _aligned(numel * size)
    for i, (ct, size) in enumerate(zip(elements, sizes)):
        name = f"c{i}_{tag}"
        em.line(f"{ct}* const {name} = reinterpret_cast<{ct}*>(smem + {offset});")
        total_arrays.append(name)
        offset += _aligned(rows * chunks * size)
    em.need_shared(offset, op)

    # 1. owned elements into shared memory
    writer = SlotLoop(em, domain)
    index = linear_index([writer.use(c) for c in writer.coords()], shape)
    owner = writer.owner()
    for name, value in zip(tile_arrays, held):
        store = f"{name}[{index}] = {value}[k];"
        writer.lines.append(f"if ({owner}) {store}" if owner else store)
    em.line(f"// {op.name}: this thread's elements into shared memory (copies write nothing)")
    em.line(em.lang.unroll)
    em.line(f"for (int k = 0; k < {domain.slots}; ++k) {{")
    for text in writer.body():
        em.line("  " + text)
    em.line("}")
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    em.line(barrier)

    def position(j: str) -> str:
        """The row-major index of element ``j`` (in combining order) of row ``row``."""
        along = f"({length - 1} - ({j}))" if reverse else f"({j})"
        return f"base + {along} * {inner}" if inner > 1 else f"base + {along}"

    row_base = f"(row / {inner}) * {length * inner} + (row % {inner})" if inner > 1 else f"row * {length}"
    accs = [f"a{i}_{tag}" for i in range(len(tiles))]
    items = [f"{tile}[at]" for tile in tile_arrays]

    # 2. each chunk in order, by one thread
    em.line(f"// {op.name}: each chunk of each row in order, one thread per chunk")
    with em.out.scope(f"for (int w = {tid}; w < {rows * chunks}; w += {threads}) {{"):
        em.line(f"const int row = w / {chunks};")
        em.line(f"const int base = {row_base};")
        em.line(f"const int first = {position(f'(w % {chunks}) * {per_chunk}')};")
        for acc, ct, tile in zip(accs, elements, tile_arrays):
            em.line(f"{ct} {acc} = {tile}[first];")
        if per_chunk > 1:
            with em.out.scope(f"for (int q = 1; q < {per_chunk}; ++q) {{"):
                em.line(f"const int at = {position(f'(w % {chunks}) * {per_chunk} + q')};")
                for text in combine_lines(em, op, accs, items, accs):
                    em.line(text)
                if scan:
                    for tile, acc in zip(tile_arrays, accs):
                        em.line(f"{tile}[at] = {acc};")
        for total, acc in zip(total_arrays, accs):
            em.line(f"{total}[w] = {acc};")
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    em.line(barrier)

    # 3. the chunks' totals: their inclusive prefixes along each row, in log2(C) rounds of
    # total[w] = combine(total[w - d], total[w]) (every chunk has a thread: rows * C <= threads)
    if chunks > 1:
        news = [f"n{i}_{tag}" for i in range(len(tiles))]
        step, takes = f"d{tag}", f"p{tag}"
        em.line(f"// {op.name}: the chunk totals' prefixes along each row, in {chunks.bit_length() - 1} round(s)")
        with em.out.scope(f"for (int {step} = 1; {step} < {chunks}; {step} *= 2) {{"):
            em.line(f"const bool {takes} = {tid} < {rows * chunks} && ({tid} % {chunks}) >= {step};")
            for ct, new in zip(elements, news):
                em.line(f"{ct} {new}{{}};")
            with em.out.scope(f"if ({takes}) {{"):
                for text in combine_lines(em, op, [f"{total}[{tid} - {step}]" for total in total_arrays],
                                          [f"{total}[{tid}]" for total in total_arrays], news):
                    em.line(text)
            # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
            em.line(barrier)
            em.line(f"if ({takes}) {{")
            for total, new in zip(total_arrays, news):
                em.line(f"  {total}[{tid}] = {new};")
            em.line("}")
            # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
            em.line(barrier)
        if scan:
            em.line(f"// {op.name}: the chunks before each chunk, combined in on the left")
            with em.out.scope(f"for (int w = {tid}; w < {rows * chunks}; w += {threads}) {{"):
                em.line(f"if (w % {chunks} == 0) continue;")
                em.line(f"const int row = w / {chunks};")
                em.line(f"const int base = {row_base};")
                prefixes = [f"{total}[w - 1]" for total in total_arrays]
                with em.out.scope(f"for (int q = 0; q < {per_chunk}; ++q) {{"):
                    em.line(f"const int at = {position(f'(w % {chunks}) * {per_chunk} + q')};")
                    for text in combine_lines(em, op, prefixes, items, items):
                        em.line(text)
            # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
            em.line(barrier)

    # 4. the results back into registers
    for i, result in enumerate(op.results):
        if not is_tile(result):
            total = f"{total_arrays[i]}[{chunks - 1}]"
            em.line(f"const {c_element(result.type)} {em.name(result)} = {total};")
            continue
        layout = em.layout_of(result)
        reader = SlotLoop(em, layout)
        if scan:
            source = f"{tile_arrays[i]}[{linear_index([reader.use(c) for c in reader.coords()], shape)}]"
        else:
            row = linear_index([reader.use(c) for c in reader.coords()], result.type.shape)
            source = f"{total_arrays[i]}[({row}) * {chunks} + {chunks - 1}]"
        storage = em.storage[result]
        reader.lines.append(f"{storage}[k] = {source};")
        em.line(f"{c_element(result.type)} {storage}[{layout.slots}];")
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {layout.slots}; ++k) {{")
        for text in reader.body():
            em.line("  " + text)
        em.line("}")
    # No barrier after these reads: the next statement that writes scratch has one
    # before its write where the insert-barriers pass finds these reads pending.


def _aligned(nbytes: int) -> int:
    return (nbytes + 15) // 16 * 16
