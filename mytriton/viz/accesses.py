"""Which elements of each tensor a kernel's programs load and store.

``record_accesses`` runs a kernel in the NumPy interpreter with its
global-memory ops watched (``interp.observing_accesses``: the run itself is
the interpreter's, unchanged) and counts, per tensor and element, the lanes
that load it, store it, and that were masked off while pointing at it; a
masked lane pointing past the end of its tensor is an out-of-bounds attempt
the mask prevented, counted in a window of GHOST elements after the end. The
same counts are kept for each program asked for. ``access_svgs`` draws them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mytriton.viz.svg import Svg, heat_colour

GHOST = 1024  # elements after a tensor's end where masked out-of-bounds attempts are counted
MAX_SIDE = 64  # cells per side of a picture; larger tensors are binned
CELL_W, CELL_H = 30, 24


@dataclass
class Counts:
    """Accesses to one tensor (by one program, or by all)."""

    name: str
    shape: tuple[int, ...]
    size: int
    loads: np.ndarray = field(init=False)
    stores: np.ndarray = field(init=False)
    masked: np.ndarray = field(init=False)  # masked-off lanes that pointed at the element
    ghost: np.ndarray = field(init=False)  # masked-off lanes pointing i elements past the end
    masked_elsewhere: int = 0  # masked-off lanes pointing before the start or further out
    faults: int = 0  # enabled lanes outside the tensor (the interpreter stops the run)

    def __post_init__(self) -> None:
        self.loads = np.zeros(self.size, dtype=np.int64)
        self.stores = np.zeros(self.size, dtype=np.int64)
        self.masked = np.zeros(self.size, dtype=np.int64)
        self.ghost = np.zeros(GHOST, dtype=np.int64)

    def add(self, kind: str, element: np.ndarray, in_bounds: np.ndarray, enabled: np.ndarray,
            masked: np.ndarray) -> None:
        hit = enabled & in_bounds
        if kind in ("load", "atomic"):
            self.loads += np.bincount(element[hit], minlength=self.size)
        if kind in ("store", "atomic"):
            self.stores += np.bincount(element[hit], minlength=self.size)
        self.faults += int(np.count_nonzero(enabled & ~in_bounds))
        self.masked += np.bincount(element[masked & in_bounds], minlength=self.size)
        past = element[masked & ~in_bounds] - self.size
        near = (past >= 0) & (past < GHOST)
        self.ghost += np.bincount(past[near], minlength=GHOST)
        self.masked_elsewhere += int(np.count_nonzero(~near))


@dataclass
class AccessLog:
    kernel_name: str
    programs: int
    tensors: dict[str, Counts]
    per_program: dict[int, dict[str, Counts]]


def record_accesses(kernel: Any, grid: Any, args: Sequence[object], programs: Sequence[int] = ()) -> AccessLog:
    """Run ``kernel`` (SSA, as ``run_kernel`` takes it) in the interpreter
    over ``grid`` with ``args``; the accesses of every program, and of each
    linear program id in ``programs`` on its own."""
    from mytriton.backends.interp import observing_accesses, run_kernel

    shapes = {p.name: tuple(a.shape) for p, a in zip(kernel.params, args) if isinstance(a, np.ndarray)}
    tensors: dict[str, Counts] = {}
    chosen = sorted(set(int(p) for p in programs))
    per_program: dict[int, dict[str, Counts]] = {p: {} for p in chosen}

    def counts_of(table: dict[str, Counts], name: str, size: int) -> Counts:
        if name not in table:
            table[name] = Counts(name, shapes.get(name, (size,)), size)
        return table[name]

    def observe(access: Any) -> None:
        masked = access.running & ~access.enabled
        for b, (name, size) in enumerate(access.buffers, start=1):
            mine = access.buffer == b
            if not mine.any():
                continue
            counts_of(tensors, name, size).add(access.kind, access.element, access.in_bounds & mine,
                                               access.enabled & mine, masked & mine)
            for p in chosen:
                row = p - access.first
                if 0 <= row < access.element.shape[0]:
                    counts_of(per_program[p], name, size).add(
                        access.kind, access.element[row], access.in_bounds[row] & mine[row],
                        access.enabled[row] & mine[row], masked[row] & mine[row])

    dims = tuple(grid) if not isinstance(grid, int) else (grid,)
    with observing_accesses(observe):
        run_kernel(kernel, dims, args)
    total = int(np.prod(dims)) if dims else 1
    return AccessLog(kernel.name, total, tensors, per_program)


def _view(counts: Counts) -> tuple[int, int]:
    """(rows, columns) of a tensor's flat elements as drawn: a matrix as
    itself (more dimensions: flattened onto the last), a vector in rows of
    32 (64 when long)."""
    if len(counts.shape) >= 2:
        return -(-counts.size // counts.shape[-1]), counts.shape[-1]
    cols = 32 if counts.size <= 2048 else 64
    cols = max(1, min(cols, counts.size))
    return -(-counts.size // cols), cols


def heat_map(title: str, counts: Counts, notes: list[str], per_program: bool = False) -> str:
    rows, cols = _view(counts)
    ghost_end = int(np.nonzero(counts.ghost)[0].max()) + 1 if counts.ghost.any() else 0
    extent = counts.size + ghost_end
    all_rows = -(-extent // cols)
    br, bc = -(-all_rows // MAX_SIDE), -(-cols // MAX_SIDE)  # elements per cell along each side
    shown_r, shown_c = -(-all_rows // br), -(-cols // bc)

    def binned(values: np.ndarray) -> np.ndarray:
        grid = np.zeros(shown_r * br * shown_c * bc, dtype=np.int64)
        flat = np.zeros(all_rows * cols, dtype=np.int64)
        flat[:values.size] = values
        padded = np.zeros((shown_r * br, shown_c * bc), dtype=np.int64)
        padded[:all_rows, :cols] = flat.reshape(all_rows, cols)
        grid = padded.reshape(shown_r, br, shown_c, bc).sum(axis=(1, 3))
        return grid

    ghosts = np.concatenate([np.zeros(counts.size, dtype=np.int64), counts.ghost[:ghost_end]])
    loads, stores = binned(counts.loads), binned(counts.stores)
    masked, oob = binned(counts.masked), binned(ghosts)
    inside = binned(np.ones(counts.size, dtype=np.int64))
    peak = max(1, int((loads + stores).max()))
    svg = Svg(title)
    svg.text(6, 16, title, size=13, bold=True)
    y = 32
    lines = list(notes)
    shape = "x".join(str(d) for d in counts.shape)
    lines.append(f"tensor {counts.name}: {shape} ({counts.size} elements), drawn in rows of {cols}"
                 + (f"; each cell sums {br}x{bc} elements" if br * bc > 1 else ""))
    lines.append(f"loads {int(counts.loads.sum())}, stores {int(counts.stores.sum())}, masked-off lanes "
                 f"{int(counts.masked.sum()) + int(counts.ghost.sum()) + counts.masked_elsewhere} (of them out of "
                 f"bounds: {int(counts.ghost.sum()) + counts.masked_elsewhere}"
                 + (f", {counts.masked_elsewhere} not drawn" if counts.masked_elsewhere else "") + ")"
                 + (f"; {counts.faults} unmasked out-of-bounds lanes" if counts.faults else ""))
    for line in lines:
        svg.text(6, y, line, size=10)
        y += 14
    x0, y0 = 56, y + 16
    for c in range(0, shown_c, 4 if shown_c > 8 else 1):
        svg.text(x0 + c * CELL_W + CELL_W / 2, y0 - 4, c * bc, size=8, anchor="middle")
    for r in range(shown_r):
        svg.text(x0 - 4, y0 + r * CELL_H + CELL_H / 2 + 3, r * br * cols if len(counts.shape) < 2 else r * br,
                 size=8, anchor="end")
        for c in range(shown_c):
            x, yy = x0 + c * CELL_W, y0 + r * CELL_H
            nl, ns, nm, no = (int(a[r, c]) for a in (loads, stores, masked, oob))
            where = f"row {r * br}, column {c * bc}" + (f" (+{br}x{bc})" if br * bc > 1 else "")
            if not inside[r, c]:
                if no:
                    svg.rect(x, yy, CELL_W, CELL_H, pattern="hatch", stroke="#d00", stroke_width=1.2, dash=True,
                             tooltip=f"{where}: past the end; {no} masked-off lane(s) pointed here")
                    svg.text(x + CELL_W / 2, yy + 15, "OOB", size=7, anchor="middle", fill="#d00")
                continue
            tip = f"{where}: {nl} load(s), {ns} store(s), {nm} masked-off lane(s)"
            if per_program:
                fill = "#9c9" if nl and not ns else "#99e" if ns and not nl else "#7cc" if ns else "#fff"
            else:
                fill = heat_colour((nl + ns) / peak) if nl + ns else "#fff"
            svg.rect(x, yy, CELL_W, CELL_H, fill=fill, stroke="#999", tooltip=tip)
            if nm and not (nl or ns):
                svg.rect(x + 1, yy + 1, CELL_W - 2, CELL_H - 2, pattern="hatch", stroke="none")
            if nl:
                svg.text(x + 2, yy + 10, f"L{nl}", size=7)
            if ns:
                svg.text(x + 2, yy + 20, f"S{ns}", size=7, fill="#00a")
            if nm:
                svg.rect(x + CELL_W - 6, yy + CELL_H - 6, 5, 5, fill="#666", stroke="#666")
    ly = y0 + shown_r * CELL_H + 18
    if per_program:
        legend = "legend: green loaded, blue stored, teal both; L/S = loads/stores; hatched or grey corner = masked-off lanes pointed here; red dashed OOB = masked-off lanes past the end"
    else:
        legend = (f"legend: colour = loads + stores per cell (white 0, dark red {peak}); L/S = loads/stores; "
                  "hatched or grey corner = masked-off lanes pointed here; red dashed OOB = masked-off lanes past the end")
    svg.text(6, ly, legend, size=9)
    return svg.render()


def access_svgs(log: AccessLog, programs: Sequence[int] = ()) -> list[tuple[str, str]]:
    out = []
    for name, counts in log.tensors.items():
        title = f"{log.kernel_name}: accesses to {name} by all {log.programs} programs"
        out.append((title, heat_map(title, counts, [])))
    for p in programs:
        for name, counts in log.per_program.get(int(p), {}).items():
            title = f"{log.kernel_name}: accesses to {name} by program {p}"
            out.append((title, heat_map(title, counts, [], per_program=True)))
    return out
