"""The pictures of one laid-out kernel: its tiles' layouts and its shared buffers."""
from __future__ import annotations

from typing import Any

from mytriton.ir.layout_attributes import DotOperand
from mytriton.ir.ssa import Kernel, Op, walk
from mytriton.ir.ssa_text import LayoutAliases, ValueNames
from mytriton.types import BlockType, SharedType
from mytriton.viz.layout_pictures import layout_picture, thread_map
from mytriton.viz.shared_pictures import COPY_OPS, copy_pattern, mma_read_patterns, shared_picture

MAX_NAMED = 6  # values listed by name under a layout picture's title


def layout_svgs(kernel: Kernel) -> list[tuple[str, str]]:
    if not kernel.laid_out:
        raise ValueError(f"kernel '{kernel.name}' is not laid out: run the layouts stage first")
    names = ValueNames(kernel)
    aliases = LayoutAliases(kernel)
    num_warps = kernel.num_warps or 4
    tiles: dict[tuple[Any, tuple[int, ...]], list[str]] = {}
    for op in walk(kernel.body):
        for result in op.results:
            t = result.type
            if isinstance(t, BlockType) and t.layout is not None and t.shape and not isinstance(t.layout, DotOperand):
                tiles.setdefault((t.layout, tuple(t.shape)), []).append(f"{names.names[result]} ({op.name})")
    out = []
    for (layout, shape), values in tiles.items():
        alias = aliases.name(layout)
        dims = "x".join(str(d) for d in shape)
        title = f"{kernel.name}: {alias} over a {dims} tile"
        listed = ", ".join(values[:MAX_NAMED]) + (f" and {len(values) - MAX_NAMED} more" if len(values) > MAX_NAMED else "")
        tmap = thread_map(layout, shape, num_warps)
        subtitle = [f"{alias} = {layout.text(aliases.name)}",
                    f"{tmap.description}; {num_warps} warps, {tmap.slots} register slot(s) per thread",
                    f"values: {listed}"]
        out.append((title, layout_picture(title, subtitle, tmap)))
    out += shared_svgs(kernel, names, aliases)
    return out


def shared_svgs(kernel: Kernel, names: ValueNames, aliases: LayoutAliases) -> list[tuple[str, str]]:
    ops = list(walk(kernel.body))
    allocs = [op for op in ops if op.name in ("shared_alloc", "shared_alloc_stages")]
    out = []
    for alloc in allocs:
        full = alloc.results[0].type
        if not isinstance(full, SharedType) or full.layout is None:
            continue
        shape = tuple(alloc.attrs.get("shape") or full.shape)
        buffer = SharedType(shape, full.element, full.layout)
        offset = int(alloc.attrs.get("offset") or 0)
        views = _views_of(alloc, ops)
        patterns: list[Any] = []
        notes: list[str] = []
        for op in ops:
            if op.name in COPY_OPS and op.operands[0] in views:
                patterns.append(copy_pattern(op, offset, _where(op)))
            elif op.name in ("dot_shared", "dot_rs"):
                for index, operand in enumerate(op.operands[:2]):
                    if operand in views:
                        patterns += _reads(op, index, buffer, offset, notes)
        stages = alloc.attrs.get("stages")
        dims = "x".join(str(d) for d in shape)
        name = alloc.attrs.get("name", names.names[alloc.results[0]])
        title = f"{kernel.name}: shared buffer {name} ({dims} {full.element})"
        subtitle = [f"{names.names[alloc.results[0]]} = {alloc.name}{_where(alloc)}: "
                    f"{aliases.type(full) if full.layout in aliases.names else full}",
                    f"{full.layout.text()}; row pitch {full.layout.row_pitch(shape[1]) * full.element.nbytes} bytes"
                    + (f"; {stages} stages, stage 0 drawn" if stages else "")
                    + f"; at byte {offset} of the shared array"]
        out.append((title, shared_picture(title, subtitle, buffer, offset, patterns, notes)))
    return out


def _views_of(alloc: Op, ops: list[Op]) -> set[Any]:
    views = {alloc.results[0]}
    for op in ops:
        if op.name == "stage_view" and op.operands[0] in views:
            views.add(op.results[0])
    return views


def _reads(dot: Op, index: int, buffer: SharedType, offset: int, notes: list[str]) -> list[Any]:
    from mytriton.ir.layout_attributes import Mma

    layout = getattr(dot.results[0].type, "layout", None)
    operand = "AB"[index]
    if isinstance(layout, Mma) and layout.version == 2:
        return mma_read_patterns(dot, index, buffer, offset, _where(dot))
    if isinstance(layout, Mma):
        notes.append(f"read as {operand} by wgmma{_where(dot)} through a matrix descriptor: the tensor cores' "
                     "own access (the swizzle is what keeps it conflict-free), not counted here")
    else:
        notes.append(f"read as {operand} by the FMA loop of {dot.name}{_where(dot)}: not counted here")
    return []


def _where(op: Op) -> str:
    return f" @{op.loc.line}:{op.loc.col}" if op.loc is not None else ""
