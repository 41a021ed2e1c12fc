"""Pictures of shared-memory buffers: where each element's bytes land among
the 32 banks, and the bank conflicts of the accesses that write and read it.

Addresses come from the CUDA back end's own expressions: ``dots.place`` (a
buffer's padding or ``nvmma_shared`` swizzle), the copies' thread-to-chunk
walk (``dots.emit_copies``, ``dots._copy_loop``) and the mma fragments'
``ldmatrix`` and plain reads (``mma.py``).

Conflicts are counted as the hardware serves a warp's request: accesses of W
bytes go in phases of 128 / W lanes (32 lanes of 4 bytes or less, 16 of 8
bytes, 8 of 16 bytes; ``ldmatrix``'s eight row addresses per 8x8 matrix);
within a phase, a bank that must deliver N different 4-byte words takes N
wavefronts (N-way conflict; lanes reading one word share it). A phase with
every bank asked for at most one word is conflict-free (1 way).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mytriton.viz.cexpr import evaluate
from mytriton.viz.svg import Svg, bank_colour

BANKS = 32
BANK_BYTES = 4
MAX_ROWS, MAX_COLS = 64, 64
CELL_W, CELL_H = 30, 24
COPY_OPS = ("copy_to_shared", "async_copy_to_shared", "copy_strided_to_shared", "async_copy_strided_to_shared",
            "copy_gathered_to_shared", "async_copy_gathered_to_shared")


@dataclass(frozen=True)
class BankMap:
    """The byte address (from the shared array's start) of every element of a buffer."""

    shape: tuple[int, int]
    element_bytes: int
    offset: int
    address: np.ndarray  # (rows, cols) byte address of each element

    @property
    def bank(self) -> np.ndarray:
        return self.address // BANK_BYTES % BANKS


def element_index(buffer: Any, rows: Any, cols: Any) -> Any:
    """Element offset of (rows, cols) in ``buffer`` (a laid-out SharedType), as the CUDA stores it."""
    from mytriton.backends.cuda.dots import place

    return evaluate(place(buffer, "row", "col"), {"row": rows, "col": cols})


def bank_map(buffer: Any, offset: int = 0) -> BankMap:
    rows, cols = buffer.shape
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    index = np.broadcast_to(element_index(buffer, r, c), (rows, cols))
    nbytes = buffer.element.nbytes
    return BankMap((rows, cols), nbytes, offset, offset + index * nbytes)


def conflict_ways(addresses: np.ndarray, width: int, active: np.ndarray | None = None,
                  lanes_per_phase: int | None = None) -> list[int]:
    """Wavefronts of each phase of one warp's access: ``addresses`` (one per
    lane, bytes) each ``width`` bytes wide."""
    lanes = len(addresses)
    per_phase = lanes_per_phase or max(1, min(32, 128 // max(width, BANK_BYTES)))
    ways = []
    for start in range(0, lanes, per_phase):
        words: dict[int, set[int]] = {}
        for lane in range(start, min(start + per_phase, lanes)):
            if active is not None and not active[lane]:
                continue
            first, last = int(addresses[lane]) // BANK_BYTES, (int(addresses[lane]) + width - 1) // BANK_BYTES
            for word in range(first, last + 1):
                words.setdefault(word % BANKS, set()).add(word)
        if words:
            ways.append(max(len(w) for w in words.values()))
    return ways


@dataclass
class AccessPattern:
    """One op's access to a buffer, as warps issue it."""

    what: str  # "write by async_copy_to_shared @20:13 ..."
    width: int  # bytes per lane
    first_warp: list[int]  # ways of each phase of the first warp's first access
    worst: int  # the most ways of any phase of any warp and step
    wavefronts: int  # over every warp and step
    ideal: int  # wavefronts with no conflict
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        verdict = "conflict-free" if self.worst <= 1 else f"up to {self.worst}-way conflicts"
        return (f"{self.what}: {self.width}-byte accesses; first warp's phases: "
                f"{', '.join(f'{w}-way' for w in self.first_warp) or 'none'}; {verdict}; "
                f"{self.wavefronts} wavefronts for {self.ideal} without conflicts")


Group = tuple[Any, Any]  # one warp's access: each lane's byte address, and which lanes take part (None: all)


def _pattern(what: str, groups: Sequence[Group], width: int,
             lanes_per_phase: int | None = None) -> AccessPattern:
    first: list[int] = []
    worst, total, ideal = 0, 0, 0
    for i, (addresses, active) in enumerate(groups):
        ways = conflict_ways(addresses, width, active, lanes_per_phase)
        if i == 0:
            first = ways
        worst = max([worst, *ways])
        total += sum(ways)
        ideal += len(ways)
    return AccessPattern(what, width, first, worst, total, ideal)


def copy_pattern(op: Any, offset: int, where: str) -> AccessPattern:
    """The warps' writes of a copy into ``buffer`` (one stage): chunks of
    ``chunk`` elements (cp.async) or single elements, thread i on chunk i."""
    from mytriton.backends.cuda.dots import copy_geometry

    view = copy_geometry(op).view_type  # the stage's rows, as the copy walks them
    rows, cols = view.shape
    width = int(op.attrs.get("chunk") or 1) if op.name.startswith("async") else 1
    per_row = cols // width
    total = rows * per_row
    nbytes = view.element.nbytes
    i = np.arange(total, dtype=np.int64)
    r, c = i // per_row, i % per_row * width
    addresses = offset + np.asarray(element_index(view, r, c), dtype=np.int64) * nbytes
    groups: list[Group] = []
    for start in range(0, total, 32):
        lanes = addresses[start:start + 32]
        groups.append((lanes, None))
    kind = f"{width * nbytes}-byte cp.async chunks" if op.name.startswith("async") else "one element per thread"
    return _pattern(f"write by {op.name}{where} ({kind}, thread i on chunk i)", groups, width * nbytes)


def mma_read_patterns(dot: Any, operand: int, buffer: Any, offset: int, where: str) -> list[AccessPattern]:
    """The reads of a version-2 mma dot's operand ``operand`` (0: A, 1: B)
    from ``buffer``: ldmatrix for 16-bit types and A of int8 and TF32, plain reads else."""
    from mytriton.backends.cuda import mma
    from mytriton.backends.cuda.thread_coordinates import MmaLayout

    layout = dot.results[0].type.layout
    element = dot.operands[0].type.element
    instr = mma.INSTRUCTIONS.get(element)
    if instr is None:
        return []
    k = dot.operands[0].type.shape[1]
    parent = MmaLayout.of(layout, dot.results[0].type.shape)
    wm, wn = layout.warps_per_cta
    nbytes = buffer.element.nbytes
    lane = np.arange(32, dtype=np.int64)
    patterns = []

    def addresses(rc: tuple[str, str], env: dict[str, Any]) -> np.ndarray:
        rows = np.broadcast_to(evaluate(rc[0], env), (32,))
        cols = np.broadcast_to(evaluate(rc[1], env), (32,))
        return offset + np.asarray(element_index(buffer, rows, cols), dtype=np.int64) * nbytes

    envs = [{"lane": lane, "kk": kk, "warp_m": m, "warp_n": n, "rm": 0, "rn": 0}
            for kk in range(0, k, instr.k) for m in range(wm) for n in range(wn)]
    if operand == 0:
        if instr.a_by_ldmatrix:
            groups = [(addresses(mma.a_ldmatrix_address(mma.block_row("rm", wm), "kk", instr.k), e), None)
                      for e in envs]
            patterns.append(_pattern(f"read of A by ldmatrix.x4{where} (8 row addresses per phase)", groups, 16, 8))
        else:
            for reg in range(4):
                groups = [(addresses(mma.tf32_a(mma.block_row("rm", wm), "kk", reg), e), None) for e in envs]
                patterns.append(_pattern(f"read of A register {reg}{where} (4-byte loads)", groups, nbytes))
    else:
        if instr.b_by_ldmatrix:
            step = 8 * wn if parent.reps(1) >= 2 else 0
            active: Any = None if step else lane < 16
            groups = [(addresses(mma.b_ldmatrix_trans_address(mma.block_col("rn", wn), step, "kk"), e), active)
                      for e in envs]
            name = "ldmatrix.x4.trans" if step else "ldmatrix.x2.trans"
            patterns.append(_pattern(f"read of B by {name}{where} (8 row addresses per phase)", groups, 16, 8))
        else:
            for reg in range(2):
                if element.nbytes == 1:
                    rc = mma.s8_b(mma.block_col("rn", wn), "kk", reg, 0)
                else:
                    rc = mma.tf32_b(mma.block_col("rn", wn), "kk", reg)
                groups = [(addresses(rc, e), None) for e in envs]
                patterns.append(_pattern(f"read of B register {reg}{where} ({nbytes}-byte loads)", groups, nbytes))
    return patterns


def shared_picture(title: str, subtitle: list[str], buffer: Any, offset: int,
                   patterns: list[AccessPattern], notes: list[str]) -> str:
    bmap = bank_map(buffer, offset)
    rows, cols = bmap.shape
    shown_r, shown_c = min(rows, MAX_ROWS), min(cols, MAX_COLS)
    pad = int(getattr(buffer.layout, "pad", 0) or 0)
    shown_pad = min(pad, 8)
    svg = Svg(title)
    svg.text(6, 16, title, size=13, bold=True)
    y = 32
    lines = list(subtitle)
    if (shown_r, shown_c) != (rows, cols):
        lines.append(f"clipped: showing rows 0-{shown_r - 1} of {rows} and columns 0-{shown_c - 1} of {cols}")
    for line in lines:
        svg.text(6, y, line, size=10)
        y += 14
    x0, y0 = 44, y + 16
    for c in range(0, shown_c, 4 if shown_c > 8 else 1):
        svg.text(x0 + c * CELL_W + CELL_W / 2, y0 - 4, c, size=8, anchor="middle")
    nbytes = bmap.element_bytes
    for r in range(shown_r):
        svg.text(x0 - 4, y0 + r * CELL_H + CELL_H / 2 + 3, r, size=8, anchor="end")
        for c in range(shown_c):
            address = int(bmap.address[r, c])
            bank = address // BANK_BYTES % BANKS
            chunk = address % 128 // 16
            x, yy = x0 + c * CELL_W, y0 + r * CELL_H
            tip = (f"[{r}, {c}]: byte {address} (bank {bank}, byte {address % BANK_BYTES} of it), "
                   f"16-byte chunk {chunk} of its 128-byte line")
            svg.rect(x, yy, CELL_W, CELL_H, fill=bank_colour(bank), stroke="#777", tooltip=tip)
            svg.text(x + CELL_W / 2, yy + 10, f"b{bank}", size=8, anchor="middle")
            svg.text(x + CELL_W / 2, yy + 20, f"c{chunk}", size=7, anchor="middle", fill="#333")
            if (c * nbytes) % 16 == 0 and c:
                svg.line(x, yy, x, yy + CELL_H, stroke="#000", width=1.2)
        for p in range(shown_pad):
            x = x0 + (shown_c + p) * CELL_W + 4
            svg.rect(x, y0 + r * CELL_H, CELL_W, CELL_H, pattern="hatch", stroke="#aaa",
                     tooltip=f"row {r}: padding element {p} of {pad}")
    ly = y0 + shown_r * CELL_H + 18
    legend = ["legend: cell colour and b = the bank of the element's first byte (32 banks of 4 bytes); "
              "c = its 16-byte chunk within the 128-byte line (the swizzle permutes these)",
              "thick lines: 16-byte chunk boundaries of the logical row" + ("; hatched: row padding" if pad else "")]
    for text in legend + notes:
        svg.text(6, ly, text, size=9)
        ly += 13
    ly += 6
    svg.text(6, ly, "bank conflicts of the accesses (ways per wavefront):", size=10, bold=True)
    ly += 14
    counted: dict[str, int] = {}
    for pattern in patterns:  # ops with one access pattern (the pipeline's copies) listed once
        counted[pattern.summary()] = counted.get(pattern.summary(), 0) + 1
    worst = {p.summary(): p.worst for p in patterns}
    for summary, count in counted.items():
        colour = "#080" if worst[summary] <= 1 else "#b00"
        svg.text(12, ly, summary + (f" [{count} such ops]" if count > 1 else ""), size=9, fill=colour)
        ly += 13
    if not patterns:
        svg.text(12, ly, "no thread access pattern found for this buffer", size=9)
    return svg.render()
