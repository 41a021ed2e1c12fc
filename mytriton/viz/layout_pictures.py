"""Pictures of register-tile layouts: which thread holds each element.

``thread_map`` is the data model: for a layout attribute and a tile shape it
evaluates the CUDA back end's own coordinate expressions
(``thread_coordinates.tile_layout``) for every thread and slot of the
program, and gives each element's owner (the thread that stores it), the
slot (register index) it sits in there, and how many threads hold a copy.
``layout_picture`` draws that as a grid of cells coloured by warp and
labelled with the lane and slot.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from mytriton.ir.layout_attributes import WARP
from mytriton.viz.cexpr import evaluate
from mytriton.viz.svg import Svg, warp_colour

MAX_SIDE = 64  # rows and columns drawn; a larger tile is drawn as its top-left corner
RANK1_WIDTH = 32  # a vector is drawn in rows of this many elements
CELL_W, CELL_H = 30, 24
TID = "threadIdx.x"


@dataclass(frozen=True)
class ThreadMap:
    """Where each element of a tile lives (arrays over the row-major elements)."""

    shape: tuple[int, ...]
    threads: int  # threads in the program
    slots: int  # registers (slots) per thread
    owner: np.ndarray  # thread that owns (stores) the element; -1 if none
    slot: np.ndarray  # the owner's slot holding it
    holders: np.ndarray  # how many (thread, slot) pairs hold it (copies included)
    description: str

    def at(self, *index: int) -> tuple[int, int, int]:
        """(warp, lane, slot) of the owner of the element at ``index``."""
        flat = int(np.ravel_multi_index(index, self.shape))
        tid = int(self.owner[flat])
        return tid // WARP, tid % WARP, int(self.slot[flat])


def thread_map(attr: Any, shape: tuple[int, ...], num_warps: int) -> ThreadMap:
    """The owners of every element of a ``shape`` tile laid out by ``attr``
    (blocked, slice or mma) in a program of ``num_warps`` warps."""
    from mytriton.backends.cuda.thread_coordinates import tile_layout

    layout = tile_layout(attr, tuple(shape))
    parent = layout.parent
    positions = {p: f"({parent.thread_position(p, TID)})" for p in range(parent.rank)}
    threads = num_warps * WARP
    env = {TID: np.arange(threads, dtype=np.int64)[:, None], "k": np.arange(layout.slots, dtype=np.int64)[None, :]}
    grid = (threads, layout.slots)
    coords = [np.broadcast_to(np.asarray(evaluate(c, env), dtype=np.int64), grid)
              for c in layout.coordinates("k", positions)]
    owner_expr = layout.owner("k", positions)
    owns = np.ones(grid, dtype=bool) if owner_expr is None else np.broadcast_to(evaluate(owner_expr, env), grid)
    numel = prod(shape)
    flat = np.ravel_multi_index(tuple(coords), shape) if shape else np.zeros(grid, dtype=np.int64)
    holders = np.bincount(flat.reshape(-1), minlength=numel)
    owner = np.full(numel, -1, dtype=np.int64)
    slot = np.full(numel, -1, dtype=np.int64)
    tids, ks = np.nonzero(owns)
    # The lowest thread among owners wins (there is one where the layout is right).
    order = np.argsort(tids, kind="stable")[::-1]
    owner[flat[tids[order], ks[order]]] = tids[order]
    slot[flat[tids[order], ks[order]]] = ks[order]
    return ThreadMap(tuple(shape), threads, layout.slots, owner, slot, holders, layout.describe())


def drawn_grid(shape: tuple[int, ...]) -> tuple[int, int, str]:
    """(rows, columns, how) of the 2-D view of a tile: a matrix as itself, a
    vector in rows of RANK1_WIDTH, a higher rank as its last two dimensions
    at index 0 of the others."""
    if len(shape) == 1:
        cols = min(shape[0], RANK1_WIDTH)
        return -(-shape[0] // cols), cols, f"elements in rows of {cols}" if shape[0] > cols else ""
    rows, cols = shape[-2], shape[-1]
    lead = ", ".join("0" for _ in shape[:-2])
    return rows, cols, f"the [{lead}, :, :] slice" if len(shape) > 2 else ""


def layout_picture(title: str, subtitle: list[str], tmap: ThreadMap) -> str:
    rows, cols, how = drawn_grid(tmap.shape)
    shown_r, shown_c = min(rows, MAX_SIDE), min(cols, MAX_SIDE)
    svg = Svg(title)
    svg.text(6, 16, title, size=13, bold=True)
    y = 32
    notes = list(subtitle)
    if how:
        notes.append(f"drawn as {how}")
    if (shown_r, shown_c) != (rows, cols):
        notes.append(f"clipped: showing rows 0-{shown_r - 1} of {rows} and columns 0-{shown_c - 1} of {cols}")
    for note in notes:
        svg.text(6, y, note, size=10)
        y += 14
    x0, y0 = 44, y + 16
    for c in range(0, shown_c, 4 if shown_c > 8 else 1):
        svg.text(x0 + c * CELL_W + CELL_W / 2, y0 - 4, c, size=8, anchor="middle")
    width = cols if len(tmap.shape) == 1 else cols
    for r in range(shown_r):
        svg.text(x0 - 4, y0 + r * CELL_H + CELL_H / 2 + 3, r * width if len(tmap.shape) == 1 else r,
                 size=8, anchor="end")
        for c in range(shown_c):
            flat = r * cols + c
            if len(tmap.shape) == 1 and flat >= tmap.shape[0]:
                continue
            x, yy = x0 + c * CELL_W, y0 + r * CELL_H
            tid = int(tmap.owner[flat])
            index = _index_text(tmap.shape, flat)
            if tid < 0:
                svg.rect(x, yy, CELL_W, CELL_H, pattern="hatch", tooltip=f"{index}: no owner")
                continue
            warp, lane, slot = tid // WARP, tid % WARP, int(tmap.slot[flat])
            copies = int(tmap.holders[flat]) - 1
            tip = f"{index}: warp {warp}, lane {lane}, slot {slot} (thread {tid})"
            if copies:
                tip += f"; {copies} more cop{'y' if copies == 1 else 'ies'} in other threads or slots"
            svg.rect(x, yy, CELL_W, CELL_H, fill=warp_colour(warp), stroke="#777", tooltip=tip)
            svg.text(x + CELL_W / 2, yy + 10, f"L{lane}", size=8, anchor="middle")
            svg.text(x + CELL_W / 2, yy + 20, f"r{slot}", size=7, anchor="middle", fill="#333")
            if copies:
                svg.rect(x + CELL_W - 5, yy + 1, 4, 4, fill="#333", stroke="#333")
    legend_y = y0 + shown_r * CELL_H + 18
    warps = tmap.threads // WARP
    svg.text(6, legend_y, "legend: cell colour = warp; L = lane, r = register slot of the owning thread; "
             "dark corner = other threads hold copies", size=9)
    for w in range(warps):
        lx, ly = 6 + (w % 16) * 62, legend_y + 8 + (w // 16) * 18
        svg.rect(lx, ly, 14, 12, fill=warp_colour(w), stroke="#777")
        svg.text(lx + 18, ly + 10, f"warp {w}", size=9)
    return svg.render()


def _index_text(shape: tuple[int, ...], flat: int) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"
