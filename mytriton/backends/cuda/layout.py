"""How a tile's elements are spread over a CUDA block's threads.

A ``BlockedLayout`` is Triton's blocked encoding: along each dimension a
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

from dataclasses import dataclass
from math import prod

WARP = 32


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

    @property
    def num_threads(self) -> int:
        return WARP * prod(self.warps_per_cta)

    def threads_per_dim(self, d: int) -> int:
        return self.threads_per_warp[d] * self.warps_per_cta[d]

    def tile(self, d: int) -> int:
        """Elements one repetition of the pattern covers along ``d``."""
        return self.size_per_thread[d] * self.threads_per_dim(d)

    def reps(self, d: int) -> int:
        return max(1, self.shape[d] // self.tile(d))

    def slots_per_dim(self, d: int) -> int:
        return self.reps(d) * self.size_per_thread[d]

    @property
    def slots(self) -> int:
        return prod(self.slots_per_dim(d) for d in range(self.rank))

    def replicated(self, d: int) -> bool:
        return self.tile(d) > self.shape[d]

    # ---- C expressions -----------------------------------------------------------
    def thread_position(self, d: int, tid: str = "threadIdx.x") -> str:
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

    def slot_digits(self, k: str) -> list[str]:
        """Per-dimension slot index of slot ``k``: slots run fastest along
        ``order[0]``, like the elements they hold."""
        digits = [""] * self.rank
        stride = 1
        for d in self.order:
            digits[d] = _digit(k, stride, self.slots_per_dim(d), d == self.order[-1])
            stride *= self.slots_per_dim(d)
        return digits

    def coordinates(self, k: str, positions: list[str]) -> list[str]:
        """Logical coordinates of slot ``k`` given the thread's per-dimension
        positions (``thread_position``)."""
        coords = []
        for d, digit in enumerate(self.slot_digits(k)):
            spt = self.size_per_thread[d]
            rep, within = (_div(digit, spt), _mod(digit, spt))
            offset = _add(_mul(rep, str(self.tile(d))), within)
            coord = _add(_mul(positions[d], str(spt)), offset)
            if self.replicated(d):
                coord = f"({coord} % {self.shape[d]})" if self.shape[d] > 1 else "0"
            coords.append(coord)
        return coords

    def owner(self, k: str, positions: list[str]) -> str | None:
        """C condition true when this thread owns slot ``k`` (None: always)."""
        terms = []
        for d, digit in enumerate(self.slot_digits(k)):
            if self.replicated(d):
                within = _mod(digit, self.size_per_thread[d])
                terms.append(f"{_add(_mul(positions[d], str(self.size_per_thread[d])), within)} < {self.shape[d]}")
        return " && ".join(terms) if terms else None

    def describe(self) -> str:
        def dims(t: tuple[int, ...]) -> str:
            return "x".join(str(v) for v in t)

        return (f"[{dims(self.shape)}] {dims(self.size_per_thread)} per thread, "
                f"{dims(self.threads_per_warp)} lanes, {dims(self.warps_per_cta)} warps, "
                f"{self.slots} slot(s)")


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


def default_layout(shape: tuple[int, ...], num_warps: int) -> BlockedLayout:
    """Contiguous dimension last and fastest; lanes fill it first, then the
    next; warps go to the slowest dimensions first (rows of a rank-2 tile),
    so a row is read by consecutive lanes (coalesced) and a row reduction
    stays inside a warp when the row fits."""
    rank = len(shape)
    order = tuple(reversed(range(rank)))
    lanes = [1] * rank
    remaining = WARP
    for d in order:
        take = min(remaining, shape[d])
        lanes[d] = take
        remaining //= take
    lanes[order[-1]] *= remaining  # the slowest dimension absorbs leftover lanes
    warps = [1] * rank
    remaining = num_warps
    for d in reversed(order):
        room = max(1, shape[d] // (lanes[d]))
        take = min(remaining, room)
        warps[d] = take
        remaining //= take
    warps[order[0]] *= remaining  # leftover warps replicate along the fastest dimension
    return BlockedLayout(tuple(shape), (1,) * rank, tuple(lanes), tuple(warps), order)
