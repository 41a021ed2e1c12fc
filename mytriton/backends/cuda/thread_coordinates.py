"""How a tile's elements are spread over a CUDA block's threads, in C.

The layouts stage decides each tile's layout and writes it into the SSA types
(``mytriton/ir/layout_attributes.py``); ``tile_layout`` turns such an attribute and the
tile's shape into the objects below, which spell coordinates in C.

A ``BlockedLayout`` is Triton's blocked encoding over a shape: along each dimension a
thread holds ``size_per_thread`` contiguous elements, ``threads_per_warp``
lanes and ``warps_per_cta`` warps tile the dimension, and the whole pattern
repeats until the tile is covered. Each thread therefore holds the same
number of elements, its *slots*; slot ``k`` of thread ``t`` is one logical
element. When the pattern is larger than the tile, threads beyond it hold
copies (they are not the element's *owner*, so they do not store it).

The emitter asks a layout only three things: how many slots a thread has,
the coordinates of a slot (C expressions, constant-folded by nvcc after the
slot loop unrolls), and whether the thread owns it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from math import prod
from typing import Any

from mytriton.ir.layout_attributes import WARP, Blocked, Mma, Slice


@dataclass(frozen=True)
class BlockedLayout:
    shape: tuple[int, ...]
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]  # dimensions from fastest-varying to slowest

    def __post_init__(self) -> None:
        rank = len(self.shape)
        assert len(self.size_per_thread) == len(self.threads_per_warp) == len(self.warps_per_cta) == rank
        assert sorted(self.order) == list(range(rank))
        assert prod(self.threads_per_warp) == WARP

    @property
    def rank(self) -> int:
        return len(self.shape)

    def threads_per_dim(self, d: int) -> int:
        return self.threads_per_warp[d] * self.warps_per_cta[d]

    def tile(self, d: int) -> int:
        """Elements one repetition of the pattern covers along ``d``."""
        return self.size_per_thread[d] * self.threads_per_dim(d)

    def reps(self, d: int) -> int:
        return max(1, self.shape[d] // self.tile(d))

    def slots_per_dim(self, d: int) -> int:
        return self._slots_per_dim[d]

    @functools.cached_property
    def _slots_per_dim(self) -> tuple[int, ...]:
        # Asked for every slot of every tile the emitter renders: worked out once a layout.
        return tuple(self.reps(d) * self.size_per_thread[d] for d in range(self.rank))

    @property
    def slots(self) -> int:
        return prod(self.slots_per_dim(d) for d in range(self.rank))

    @property
    def placement(self) -> tuple:
        """What fixes which thread is where (not the shape): threads with one
        placement share their position variables."""
        return (self.threads_per_warp, self.warps_per_cta, self.order)

    def replicated(self, d: int) -> bool:
        return self.tile(d) > self.shape[d]

    # ---- C expressions -----------------------------------------------------------
    def thread_position(self, d: int, tid: str) -> str:
        """Which thread of dimension ``d`` this thread is (C, runtime)."""
        lane_stride = prod(self.threads_per_warp[e] for e in self.order[: self.order.index(d)])
        warp_stride = prod(self.warps_per_cta[e] for e in self.order[: self.order.index(d)])
        last = d == self.order[-1]
        lane = _digit(f"({tid} % {WARP})", lane_stride, self.threads_per_warp[d], last)
        warp = _digit(f"({tid} / {WARP})", warp_stride, self.warps_per_cta[d], last)
        if self.warps_per_cta[d] == 1:
            return lane
        if self.threads_per_warp[d] == 1:
            return warp
        return f"({lane} + {self.threads_per_warp[d]} * {warp})"

    def lane_stride(self, d: int) -> int:
        return prod(self.threads_per_warp[e] for e in self.order[: self.order.index(d)])

    def warp_stride(self, d: int) -> int:
        return prod(self.warps_per_cta[e] for e in self.order[: self.order.index(d)])

    def signature(self, d: int) -> tuple[int, ...]:
        """Everything that fixes which thread holds which coordinate of ``d``
        and in which slot digit: equal signatures mean equal placement."""
        return (self.shape[d], self.size_per_thread[d], self.threads_per_warp[d], self.warps_per_cta[d],
                self.lane_stride(d), self.warp_stride(d))

    def coordinate(self, d: int, digit: str, position: str) -> str:
        """The coordinate along ``d`` of slot digit ``digit`` of the thread at
        ``position`` (both C expressions)."""
        spt = self.size_per_thread[d]
        rep, within = _div(digit, spt), _mod(digit, spt)
        offset = _add(_mul(rep, str(self.tile(d))), within)
        coord = _add(_mul(position, str(spt)), offset)
        if self.replicated(d):
            coord = f"(({coord}) % {self.shape[d]})" if self.shape[d] > 1 else "0"
        return coord

    def warp_holds_whole(self, d: int) -> bool:
        """Whether each warp's lanes hold all of dimension ``d`` (its lanes
        wrap around it, so its warps along ``d`` hold copies): a reduction
        along ``d`` is then whole within each warp."""
        lanes = self.size_per_thread[d] * self.threads_per_warp[d]
        return lanes >= self.shape[d] and lanes % self.shape[d] == 0

    def first_copy_in_warp(self, d: int, digit: str, tid: str) -> str | None:
        """C condition true on the one lane of each warp (of the copies along
        ``d`` within it) that counts the element, where ``warp_holds_whole``;
        None when the lanes hold no copies."""
        spt = self.size_per_thread[d]
        if spt * self.threads_per_warp[d] <= self.shape[d]:
            return None
        lane = _digit(f"({tid} % {WARP})", self.lane_stride(d), self.threads_per_warp[d], d == self.order[-1])
        return f"{_add(_mul(lane, str(spt)), _mod(digit, spt))} < {self.shape[d]}"

    def first_copy(self, d: int, digit: str, position: str) -> str | None:
        """C condition true on the one thread (of the copies along ``d``) that
        owns the element; None when ``d`` has no copies."""
        if not self.replicated(d):
            return None
        within = _mod(digit, self.size_per_thread[d])
        return f"{_add(_mul(position, str(self.size_per_thread[d])), within)} < {self.shape[d]}"

    def describe(self) -> str:
        def dims(t: tuple[int, ...]) -> str:
            return "x".join(str(v) for v in t)

        return (f"{dims(self.threads_per_warp)} lanes, {dims(self.warps_per_cta)} warps, "
                f"order {dims(self.order)}")


def _digit(value: str, stride: int, size: int, outermost: bool = False) -> str:
    """Digit ``(value / stride) % size``; the outermost digit of a mixed-radix
    number needs no modulo."""
    if size == 1:
        return "0"
    quotient = value if stride == 1 else f"({value} / {stride})"
    return quotient if outermost else f"({quotient} % {size})"


def _div(a: str, b: int) -> str:
    return a if b == 1 else ("0" if a == "0" else f"({a} / {b})")


def _mod(a: str, b: int) -> str:
    return "0" if b == 1 or a == "0" else f"({a} % {b})"


def _mul(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if b == "1":
        return a
    if a == "1":
        return b
    return f"{a} * {b}"


def _add(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    return f"{a} + {b}"


@dataclass(frozen=True)
class MmaLayout(BlockedLayout):
    """The ``mma`` accumulator over a shape, as a blocked arrangement of
    threads (lanes 8 x 4, warps ``warps_per_cta``, both row-major: lane
    ``l`` is at row ``l / 4``, column ``l % 4``) holding 2 x 2 elements per
    16x8 block and repetition, whose coordinates interleave differently.

    Along each dimension the coordinate is a mixed-radix number whose digits
    are the element, the lane, the warp and the repetition, but in another
    order than a blocked layout's (which is element, lane, warp, rep):

    - rows: lane (stride 1, 8 lanes), element (stride 8), warp (stride 16),
      repetition (stride 16 * warps);
    - columns: element (stride 1), lane (stride 2, 4 lanes), warp (stride 8),
      repetition (stride 8 * warps).

    A thread's slot digit along a dimension is ``rep * 2 + element``, so the
    four accumulator registers c0..c3 of the PTX fragment of block (rm, rn)
    are the slots with digits (2 rm, 2 rn), (2 rm, 2 rn + 1), (2 rm + 1, 2 rn),
    (2 rm + 1, 2 rn + 1).
    """

    @staticmethod
    def of(attr: Mma, shape: tuple[int, ...]) -> "MmaLayout":
        if attr.version == 3 and attr.warps_per_cta[1] > 1:
            return WarpgroupSplitLayout(tuple(shape), (2, 2), (8, 4), tuple(attr.warps_per_cta), (1, 0))
        return MmaLayout(tuple(shape), (2, 2), (8, 4), tuple(attr.warps_per_cta), (1, 0))

    def element_stride(self, d: int) -> int:
        return 8 if d == 0 else 1

    def lane_coord_stride(self, d: int) -> int:
        return 1 if d == 0 else 2

    def unreduced(self, d: int, digit: str, position: str) -> str:
        lanes = self.threads_per_warp[d]
        block = 16 if d == 0 else 8  # instr_shape
        rep, element = _div(digit, 2), _mod(digit, 2)
        lane, warp = _mod(position, lanes), _div(position, lanes)
        terms = [_mul(lane, str(self.lane_coord_stride(d))), _mul(element, str(self.element_stride(d))),
                 _mul(warp, str(block)), _mul(rep, str(self.tile(d)))]
        coord = "0"
        for term in terms:
            coord = _add(coord, term)
        return coord

    def coordinate(self, d: int, digit: str, position: str) -> str:
        coord = self.unreduced(d, digit, position)
        if self.replicated(d):
            coord = f"(({coord}) % {self.shape[d]})" if self.shape[d] > 1 else "0"
        return coord

    def first_copy(self, d: int, digit: str, position: str) -> str | None:
        if not self.replicated(d):
            return None
        return f"{self.unreduced(d, digit, position)} < {self.shape[d]}"

    def signature(self, d: int) -> tuple:
        return ("mma",) + super().signature(d)

    def describe(self) -> str:
        return f"mma m16n8 blocks, {'x'.join(str(w) for w in self.warps_per_cta)} warps"


class WarpgroupSplitLayout(MmaLayout):
    """A version-3 (wgmma) accumulator whose warpgroups split N: warps
    ``[4, G]``, warp ``w`` at row block ``w % 4`` of warpgroup ``w / 4``
    (a warpgroup is 4 consecutive warps), and warpgroup ``g`` holding the
    columns ``[g N / G, (g + 1) N / G)``, which its m64nN instructions
    compute: along the columns, element (stride 1), lane (stride 2),
    repetition (stride 8), then the warpgroup (stride N / G). Triton's
    choice for 8 warps over 64 rows (warps [4, 2])."""

    def thread_position(self, d: int, tid: str) -> str:
        warps = self.warps_per_cta
        lane = _digit(f"({tid} % {WARP})", 4 if d == 0 else 1, self.threads_per_warp[d], d == 0)
        warp = _digit(f"({tid} / {WARP})", 1 if d == 0 else warps[0], warps[d], d == 1)
        return lane if warps[d] == 1 else f"({lane} + {self.threads_per_warp[d]} * {warp})"

    def warp_stride(self, d: int) -> int:
        return 1 if d == 0 else self.warps_per_cta[0]

    def unreduced(self, d: int, digit: str, position: str) -> str:
        if d == 0:
            return super().unreduced(d, digit, position)
        lanes = self.threads_per_warp[d]
        rep, element = _div(digit, 2), _mod(digit, 2)
        lane, group = _mod(position, lanes), _div(position, lanes)
        coord = "0"
        for term in (_mul(lane, "2"), element, _mul(rep, "8"), _mul(group, str(self.shape[1] // self.warps_per_cta[1]))):
            coord = _add(coord, term)
        return coord

    def signature(self, d: int) -> tuple:
        return ("warpgroup split",) + super().signature(d)

    def describe(self) -> str:
        return f"wgmma m64 blocks, {self.warps_per_cta[1]} warpgroups splitting N"


@dataclass(frozen=True)
class Layout:
    """A tile's distribution, as a view of a parent ``BlockedLayout``: tile
    dimension ``i`` lies along parent dimension ``dims[i]`` and has the
    parent's extent there, or extent 1 (a broadcast dimension every thread
    holds). Parent dimensions not in ``dims`` were reduced away (Triton's
    slice layout): threads that differ only along them hold the same values.
    """

    parent: BlockedLayout
    dims: tuple[int, ...]
    shape: tuple[int, ...]

    @staticmethod
    def of(parent: BlockedLayout) -> "Layout":
        return Layout(parent, tuple(range(parent.rank)), parent.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def spread_dims(self) -> list[int]:
        """Parent dimensions along which this tile has more than one element."""
        return [p for p, extent in zip(self.dims, self.shape) if extent > 1]

    def slot_dims(self) -> list[int]:
        """Parent dimensions that index this tile's slots, fastest first."""
        return list(self._slot_dims)

    @functools.cached_property
    def _slot_dims(self) -> tuple[int, ...]:
        spread = self.spread_dims()
        return tuple(p for p in self.parent.order if p in spread and self.parent.slots_per_dim(p) > 1)

    @property
    def slots(self) -> int:
        return prod(self.parent.slots_per_dim(p) for p in self.slot_dims())

    def digits(self, k: str) -> dict[int, str]:
        """Slot ``k``'s digit along each spread dimension ("0" where a thread
        has one slot along it)."""
        digits = {p: "0" for p in self.spread_dims()}
        stride = 1
        slot_dims = self.slot_dims()
        for p in slot_dims:
            count = self.parent.slots_per_dim(p)
            digits[p] = _digit(k, stride, count, p == slot_dims[-1])
            stride *= count
        return digits

    def slot_of(self, digits: dict[int, str]) -> str:
        """The slot holding the element with these parent digits."""
        index, stride = "0", 1
        for p in self.slot_dims():
            index = _add(index, _mul(digits[p], str(stride)))
            stride *= self.parent.slots_per_dim(p)
        return index

    def coordinates(self, k: str, positions: dict[int, str]) -> list[str]:
        digits = self.digits(k)
        return [self.parent.coordinate(p, digits[p], positions[p]) if extent > 1 else "0"
                for p, extent in zip(self.dims, self.shape)]

    def owner(self, k: str, positions: dict[int, str]) -> str | None:
        """C condition for the one thread that owns slot ``k``'s element, so
        that stores are not repeated by copies; None: every holder owns."""
        digits = self.digits(k)
        terms = []
        for p in range(self.parent.rank):
            spread = p in digits
            if spread:
                term = self.parent.first_copy(p, digits[p], positions[p])
            elif self.parent.threads_per_dim(p) > 1:
                term = f"{positions[p]} == 0"  # copies along a broadcast or reduced dimension
            else:
                term = None
            if term:
                terms.append(term)
        return " && ".join(terms) if terms else None

    def drop(self, axis: int) -> "Layout":
        """The layout of this tile reduced along ``axis``."""
        return Layout(self.parent, self.dims[:axis] + self.dims[axis + 1:], self.shape[:axis] + self.shape[axis + 1:])

    def describe(self) -> str:
        if self.dims == tuple(range(self.parent.rank)) and self.shape == self.parent.shape:
            return self.parent.describe()
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        return f"[{shape}] along dims {self.dims} of {self.parent.describe()}"


@functools.lru_cache(maxsize=4096)
def tile_layout(attr: Any, shape: tuple[int, ...]) -> Layout:
    """The ``Layout`` of a tile of ``shape`` whose type carries the layout
    attribute ``attr`` (blocked, or a slice of one)."""
    if isinstance(attr, Blocked):
        parent = BlockedLayout(tuple(shape), attr.size_per_thread, attr.threads_per_warp, attr.warps_per_cta,
                               attr.order)
        return Layout.of(parent)
    if isinstance(attr, Mma):
        return Layout.of(MmaLayout.of(attr, tuple(shape)))
    if isinstance(attr, Slice):
        inner = tile_layout(attr.parent, shape[:attr.dim] + (1,) + shape[attr.dim:])
        return inner.drop(attr.dim)
    raise ValueError(f"not a tile layout: {attr!r}")
