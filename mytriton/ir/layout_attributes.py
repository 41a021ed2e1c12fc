"""Layout attributes: how a tile is spread over the threads of a program.

The layouts stage (``mytriton/passes/layouts.py``) gives every tile type one
of these, and the CUDA back end renders what they say. They follow Triton's
TTGIR encodings and, like them, do not depend on the tile's shape: a layout
repeats over a larger tile and is replicated over a smaller one.

- ``blocked``: along each dimension a thread holds ``size_per_thread``
  contiguous elements, ``threads_per_warp`` lanes and ``warps_per_cta`` warps
  tile it, ``order`` lists the dimensions fastest first.
- ``slice``: a tile with dimension ``dim`` of ``parent`` removed, as a
  reduction along ``dim`` leaves it (threads differing only along ``dim``
  hold the same values).
- ``padded_shared``: a shared-memory buffer stored row-major with ``pad``
  unused elements after each row (against bank conflicts).
- ``nvmma_shared``: a buffer as Hopper's ``wgmma`` reads it through a matrix
  descriptor with ``swizzle``-byte swizzling (S = 128, 64 or 32): the columns
  in blocks of S bytes, each block R rows of S bytes one after the other, and
  the 16-byte chunk ``c`` of row ``r`` stored at chunk ``c ^ (r / (128 / S)) %
  (S / 16)`` (the hardware XORs address bits 4.. with bits 7..; conflict-free
  for row writes and column reads alike). A row of A ([M, K], K-major) and a
  row of B ([K, N], N-major) are both a block's row: one address rule serves
  both operands. ``order=[0, 1]`` stores the tile's transpose that way (its
  columns are the pattern's rows): B [K, N] K-major, for a tile contiguous
  along K in memory (attention's K^T, ``a @ b.T``), copied in 16-byte chunks.

- ``mma``: the accumulator of tensor-core ``mma.sync`` instructions
  (``version=2``: Ampere/Hopper ``mma.sync``): each warp computes
  ``instr_shape`` (16x8) blocks, ``warps_per_cta`` warps side by side (warp
  ``w`` is at row ``w / warps_per_cta[1]``, column ``w % warps_per_cta[1]``),
  and the pattern repeats over the tile. In one 16x8 block lane ``l`` holds
  rows ``l / 4`` and ``l / 4 + 8``, columns ``2 * (l % 4)`` and the next (the
  PTX ISA's fragment of the m16n8 accumulator).
  ``version=3``: Hopper's warpgroup ``wgmma.mma_async``, ``instr_shape``
  [16, N, K] (each warp's 16 rows of an m64nNkK instruction of its group of
  four warps), warps ``[num_warps, 1]``: a warpgroup's accumulator registers
  are the version-2 fragments of its four warps side by side along M, so the
  registers of both versions hold the same elements.
- ``dot_operand``: operand ``op_idx`` (0: A, 1: B) of the mma dot whose
  accumulator is ``parent``, ``k_width`` consecutive K elements per 32-bit
  register (2 for f16/bf16, 1 for tf32, 4 for int8).

Each class has the same four methods (``text``, ``problem``, ``rank``,
``from_params``).

In SSA text a layout is defined once, before the kernel, and named by alias:

    #blocked0 = blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0]>
    #slice0 = slice<dim=1, parent=#blocked1>
    kernel k(...) num_warps=4 ... {
      %3 = load %1, %2, 0.0 : vector<1024 x f32, #blocked0> @5:9
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable

WARP = 32  # threads in a warp


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class Blocked:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]  # dimensions from fastest-varying to slowest

    kind = "blocked"

    @property
    def rank(self) -> int:
        return len(self.order)

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        return (f"blocked<size_per_thread={_ints(self.size_per_thread)}, "
                f"threads_per_warp={_ints(self.threads_per_warp)}, "
                f"warps_per_cta={_ints(self.warps_per_cta)}, order={_ints(self.order)}>")

    def problem(self, num_warps: int) -> str | None:
        rank = len(self.order)
        fields = (self.size_per_thread, self.threads_per_warp, self.warps_per_cta)
        if rank == 0 or any(len(f) != rank for f in fields):
            return f"{self.text()}: every field needs one entry per dimension"
        if sorted(self.order) != list(range(rank)):
            return f"{self.text()}: order must list each dimension once"
        if not all(_power_of_two(v) for f in fields for v in f):
            return f"{self.text()}: sizes must be powers of two"
        if prod(self.threads_per_warp) != WARP:
            return f"{self.text()}: threads_per_warp must multiply to {WARP}"
        if prod(self.warps_per_cta) != num_warps:
            return f"{self.text()}: warps_per_cta must multiply to the kernel's num_warps ({num_warps})"
        return None

    @staticmethod
    def from_params(params: dict[str, Any]) -> "Blocked":
        return Blocked(*(_int_list(params, key) for key in
                         ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")))


@dataclass(frozen=True)
class Slice:
    dim: int
    parent: "TileLayout"

    kind = "slice"

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        parent = name(self.parent) if name is not None else self.parent.text()
        return f"slice<dim={self.dim}, parent={parent}>"

    def problem(self, num_warps: int) -> str | None:
        if not 0 <= self.dim < self.parent.rank:
            return f"{self.text()}: dim {self.dim} is not a dimension of its parent"
        return self.parent.problem(num_warps)

    @staticmethod
    def from_params(params: dict[str, Any]) -> "Slice":
        dim, parent = params.get("dim"), params.get("parent")
        if type(dim) is not int:
            raise LayoutSyntaxError("slice needs dim=<integer>")
        if not isinstance(parent, (Blocked, Slice, Mma)):
            raise LayoutSyntaxError("slice needs parent=#<a tile layout>")
        return Slice(dim, parent)


MAX_STAGE_PAD = 1 << 16  # elements: the other stages' runs, and the padding, of a stage of a column-major buffer


@dataclass(frozen=True)
class PaddedShared:
    pad: int  # unused elements after each row
    order: tuple[int, ...] = (1, 0)

    kind = "padded_shared"
    rank = 2

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        return f"padded_shared<pad={self.pad}, order={_ints(self.order)}>"

    def problem(self, num_warps: int) -> str | None:
        # (A stage of a column-major buffer counts the other stages' runs as its padding.)
        most = MAX_STAGE_PAD if self.order == (0, 1) else 64
        if not 0 <= self.pad <= most:
            return f"{self.text()}: pad must be from 0 to {most} elements"
        if self.order not in ((1, 0), (0, 1)):
            return f"{self.text()}: order is [1, 0] (row-major) or [0, 1] (column-major)"
        return None

    @property
    def transposed(self) -> bool:
        """Whether the buffer holds its tile column-major (order [0, 1]): its
        transpose row-major, each of those rows padded (mma.sync's K-major B)."""
        return self.order == (0, 1)

    def row_pitch(self, columns: int) -> int:
        """Elements from the start of one row to the next (of the transpose, when column-major)."""
        return columns + self.pad

    @staticmethod
    def from_params(params: dict[str, Any]) -> "PaddedShared":
        pad = params.get("pad")
        if type(pad) is not int:
            raise LayoutSyntaxError("padded_shared needs pad=<integer>")
        return PaddedShared(pad, _int_list(params, "order"))


MMA_INSTR_SHAPE = (16, 8)  # the m16n8kK accumulator block of one warp
WGMMA_MAX_N = 256  # the widest wgmma instruction (m64n256kK)
SWIZZLE_BYTES = (128, 64, 32)  # nvmma_shared's swizzles, widest first
SWIZZLE_ALIGNMENT = 1024  # where an nvmma_shared buffer starts: its pattern repeats every 1024 bytes


@dataclass(frozen=True)
class NvmmaShared:
    swizzle: int = 128
    order: tuple[int, ...] = (1, 0)

    kind = "nvmma_shared"
    rank = 2

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        return f"nvmma_shared<swizzle={self.swizzle}, order={_ints(self.order)}>"

    def problem(self, num_warps: int) -> str | None:
        if self.swizzle not in SWIZZLE_BYTES:
            return f"{self.text()}: swizzle is 128, 64 or 32 (bytes)"
        if self.order not in ((1, 0), (0, 1)):
            return f"{self.text()}: order is [1, 0] (row-major) or [0, 1] (column-major)"
        return None

    @property
    def transposed(self) -> bool:
        """Whether the buffer holds its tile column-major (order [0, 1])."""
        return self.order == (0, 1)

    def row_pitch(self, columns: int) -> int:
        return columns  # no padding: the swizzle keeps the banks apart

    def xor_of_row(self, row: str) -> str:
        """The chunk XOR of row ``row`` (a C expression): its address bits 7.. ."""
        period = 128 // self.swizzle  # rows sharing one 128-byte line
        chunks = self.swizzle // 16
        return f"({row} % {8 * period})" if period == 1 else f"({row} / {period} % {chunks})"

    def buffer_problem(self, shape: tuple[int, ...], element_bytes: int) -> str | None:
        """Why a buffer of ``shape`` cannot be stored this way, or None."""
        rows, cols = shape[::-1] if self.transposed else shape
        line = "columns" if self.transposed else "rows"
        if (cols * element_bytes) % self.swizzle or rows % 8:
            return (f"{self.text()} needs {line} of whole {self.swizzle}-byte blocks and a multiple of 8 "
                    f"{line}, got {shape[0]}x{shape[1]} of {element_bytes}-byte elements")
        return None

    @staticmethod
    def from_params(params: dict[str, Any]) -> "NvmmaShared":
        swizzle = params.get("swizzle")
        if type(swizzle) is not int:
            raise LayoutSyntaxError("nvmma_shared needs swizzle=<integer>")
        return NvmmaShared(swizzle, _int_list(params, "order"))


@dataclass(frozen=True)
class Mma:
    version: int
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...] = MMA_INSTR_SHAPE

    kind = "mma"
    rank = 2

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        return (f"mma<version={self.version}, warps_per_cta={_ints(self.warps_per_cta)}, "
                f"instr_shape={_ints(self.instr_shape)}>")

    def problem(self, num_warps: int) -> str | None:
        if self.version == 3:
            return self._wgmma_problem(num_warps)
        if self.version != 2:
            return f"{self.text()}: only version=2 (mma.sync) and version=3 (wgmma) are supported"
        if tuple(self.instr_shape) != MMA_INSTR_SHAPE:
            return f"{self.text()}: instr_shape must be [16, 8] (m16n8)"
        if len(self.warps_per_cta) != 2 or not all(_power_of_two(w) for w in self.warps_per_cta):
            return f"{self.text()}: warps_per_cta needs two powers of two"
        if prod(self.warps_per_cta) != num_warps:
            return f"{self.text()}: warps_per_cta must multiply to the kernel's num_warps ({num_warps})"
        return None

    def _wgmma_problem(self, num_warps: int) -> str | None:
        shape = tuple(self.instr_shape)
        if len(shape) != 3 or shape[0] != 16 or not 8 <= shape[1] <= WGMMA_MAX_N or shape[1] % 8 \
                or shape[2] not in (8, 16, 32):
            return f"{self.text()}: instr_shape must be [16, N, K], N a multiple of 8 up to 256, K 8, 16 or 32"
        split = (4, num_warps // 4)  # warpgroups splitting N (WarpgroupSplitLayout)
        if tuple(self.warps_per_cta) not in ((num_warps, 1), split) or num_warps % 4:
            return (f"{self.text()}: warps_per_cta must be [num_warps, 1] (warpgroups splitting M) or "
                    f"[4, num_warps / 4] (splitting N), with whole warpgroups of 4 warps")
        return None

    def block(self, d: int) -> int:
        """Elements one repetition of the warps covers along ``d`` (version
        3: a warpgroup instruction's N along the columns)."""
        if self.version == 3 and d == 1:
            return self.instr_shape[1] * self.warps_per_cta[1]
        return self.instr_shape[d] * self.warps_per_cta[d]

    @staticmethod
    def from_params(params: dict[str, Any]) -> "Mma":
        version = params.get("version")
        if type(version) is not int:
            raise LayoutSyntaxError("mma needs version=<integer>")
        return Mma(version, _int_list(params, "warps_per_cta"), _int_list(params, "instr_shape"))


@dataclass(frozen=True)
class DotOperand:
    op_idx: int
    parent: Mma
    k_width: int

    kind = "dot_operand"
    rank = 2

    def text(self, name: Callable[[Any], str] | None = None) -> str:
        parent = name(self.parent) if name is not None else self.parent.text()
        return f"dot_operand<op_idx={self.op_idx}, parent={parent}, k_width={self.k_width}>"

    def problem(self, num_warps: int) -> str | None:
        if self.op_idx not in (0, 1):
            return f"{self.text()}: op_idx is 0 (A) or 1 (B)"
        if self.k_width not in (1, 2, 4):
            return f"{self.text()}: k_width is 1 (tf32), 2 (f16, bf16) or 4 (int8)"
        return self.parent.problem(num_warps)

    @staticmethod
    def from_params(params: dict[str, Any]) -> "DotOperand":
        op_idx, parent, k_width = params.get("op_idx"), params.get("parent"), params.get("k_width")
        if type(op_idx) is not int or type(k_width) is not int:
            raise LayoutSyntaxError("dot_operand needs op_idx=<integer> and k_width=<integer>")
        if not isinstance(parent, Mma):
            raise LayoutSyntaxError("dot_operand needs parent=#<an mma layout>")
        return DotOperand(op_idx, parent, k_width)


TileLayout = Blocked | Slice | Mma
SharedLayout = PaddedShared | NvmmaShared
Layout = Blocked | Slice | Mma | DotOperand | PaddedShared | NvmmaShared
KINDS: dict[str, Any] = {"blocked": Blocked, "slice": Slice, "padded_shared": PaddedShared, "mma": Mma,
                         "dot_operand": DotOperand, "nvmma_shared": NvmmaShared}
SHARED_KINDS = (PaddedShared, NvmmaShared)
FIELDS: dict[str, tuple[str, ...]] = {
    "blocked": ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"),
    "slice": ("dim", "parent"),
    "padded_shared": ("pad", "order"),
    "nvmma_shared": ("swizzle", "order"),
    "mma": ("version", "warps_per_cta", "instr_shape"),
    "dot_operand": ("op_idx", "parent", "k_width"),
}


class LayoutSyntaxError(Exception):
    """A layout attribute is malformed; the reader attaches the location."""


def _int_list(params: dict[str, Any], key: str) -> tuple[int, ...]:
    value = params.get(key)
    if not isinstance(value, tuple) or not all(type(v) is int for v in value):
        raise LayoutSyntaxError(f"'{key}' must be a list of integers like [1, 0]")
    return value


# ---- choices the layouts stage makes and the rules the verifier checks ------------------


def thread_run(layout: "TileLayout") -> tuple[int, int] | None:
    """The tile dimension along which a thread's consecutive slots hold
    consecutive elements, and how many (its elements per thread there), for
    a blocked layout or a slice of one: what a vector access of a thread's
    slots may move at once. None for other layouts."""
    if isinstance(layout, Blocked):
        return layout.order[0], layout.size_per_thread[layout.order[0]]
    if isinstance(layout, Slice) and isinstance(layout.parent, Blocked):
        parent = layout.parent
        fastest = next(d for d in parent.order if d != layout.dim)
        return (fastest if fastest < layout.dim else fastest - 1), parent.size_per_thread[fastest]
    return None


def default_blocked(shape: tuple[int, ...], num_warps: int, order: tuple[int, ...] | None = None) -> Blocked:
    """The contiguous dimension last and fastest (or ``order``'s first);
    lanes fill it first, then the next; warps go to the slowest dimensions
    first (rows of a rank-2 tile), so a row is read by consecutive lanes
    (coalesced) and a row reduction stays inside a warp when the row fits."""
    rank = len(shape)
    order = tuple(reversed(range(rank))) if order is None else order
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
        room = max(1, shape[d] // lanes[d])
        take = min(remaining, room)
        warps[d] = take
        remaining //= take
    warps[order[0]] *= remaining  # leftover warps replicate along the fastest dimension
    return Blocked((1,) * rank, tuple(lanes), tuple(warps), order)


def fma_dot_layout(shape: tuple[int, ...], num_warps: int, vector: int = 4) -> Blocked:
    """The result layout of a dot done with FMAs on CUDA cores: a register
    tile per thread. Each thread holds TM rows spaced a warp's row span apart
    and TN columns in runs of ``vector`` (``size_per_thread=[1, vector]``), so
    for each k it reads B's columns as 16-byte runs, and for each of its rows
    A's next ``vector`` k values as one 16-byte read. Per k a thread then
    reads TM + TN values for TM * TN FMAs.

    Every split of the lanes and warps between rows and columns is a
    candidate; the chosen one gives each thread the fewest outputs (no thread
    idle while the tile has elements for it), then the fewest reads per k
    (TM + TN, the squarest tile), then two lanes along the columns: lanes t
    and t^1 then read the same A row and t and t^2 the same B run, the lane
    pairs for which the shared-memory unit returns a 16-byte read at twice
    the bandwidth. Consecutive lanes along the rows read consecutive rows of A,
    which the A buffer's swizzle (``fma_operand_swizzle``) or padding
    (``fma_operand_pad``) puts in distinct banks."""
    rows, cols = shape
    run = max(1, min(vector, cols))
    best: tuple[tuple, Blocked] | None = None
    lanes_r = 1
    while lanes_r <= WARP:
        lanes_c = WARP // lanes_r
        warps_r = 1
        while warps_r <= num_warps:
            warps_c = num_warps // warps_r
            tm = max(1, rows // (lanes_r * warps_r))
            tn = run * max(1, cols // (run * lanes_c * warps_c))
            cost = (tm * tn, tm + tn, lanes_c != 2, tm > tn, warps_r)
            if best is None or cost < best[0]:
                best = (cost, Blocked((1, run), (lanes_r, lanes_c), (warps_r, warps_c), (1, 0)))
            warps_r *= 2
        lanes_r *= 2
    assert best is not None
    return best[1]


def fma_operand_swizzle(rows: int, columns: int, element_bytes: int) -> int | None:
    """The ``nvmma_shared`` swizzle (bytes) for a dot's A buffer read by
    ``fma_dot_layout``'s threads, or None where its rows take none: rows of
    32 or 64 bytes, or of whole 128-byte blocks, and a multiple of 8 rows.
    A warp reads 16 bytes at k of consecutive rows; the XOR of each 16-byte
    chunk with its row's place in the pattern puts 8 consecutive rows in 8
    different groups of 4 banks, as the padding (``fma_operand_pad``) does,
    but the rows stay whole: a copy's 16-byte chunks of one row fill one
    128-byte line of shared memory, where padded rows straddle two. On the
    H200 the padded exact-f32 matmul's A copies asked for a third more L2
    sectors and 60 % more shared wavefronts than the data (ncu); Triton
    swizzles this buffer too. The layouts pass swizzles it only where TMA
    makes its copies (the swizzle is TMA's own): copied by cp.async, the
    swizzled 64x64x32 sample ran 2 % slower than the padded one, by TMA
    5 % faster."""
    row_bytes = columns * element_bytes
    swizzle = 128 if row_bytes % 128 == 0 else row_bytes if row_bytes in (32, 64) else None
    return swizzle if swizzle is not None and rows % 8 == 0 else None


def fma_operand_pad(columns: int, element_bytes: int) -> int:
    """Padding for a dot's A buffer read by ``fma_dot_layout``'s threads: a
    warp reads 16 bytes at k of 16 consecutive rows; with the row pitch an
    odd number of 16-byte units (one unit of padding on a power-of-two row),
    8 consecutive rows start in 8 different groups of 4 banks, so each read is
    conflict-free. Rows already of an odd number of units need none."""
    unit = max(1, 16 // element_bytes)
    if columns % unit:
        return 0  # rows not in whole units: the reads are not 16 bytes wide
    return 0 if (columns // unit) % 2 else unit


def broadcast_view(layout: TileLayout, rank: int) -> TileLayout:
    """The layout in which an operand of ``rank`` dimensions is read by an op
    whose result has ``layout``: shapes align on the right (NumPy
    broadcasting), so the leading dimensions it lacks are sliced away."""
    while layout.rank > rank:
        layout = Slice(0, layout)
    return layout


def transposed_blocked(layout: Blocked) -> Blocked:
    """The rank-2 blocked layout of a tile's transpose that places each
    element on the thread and in the slot holding it in ``layout``: a
    ``trans`` between the two moves no data (Triton's TransOp infers it)."""
    return Blocked(layout.size_per_thread[::-1], layout.threads_per_warp[::-1], layout.warps_per_cta[::-1],
                   tuple(1 - d for d in layout.order))


def shape_problem(layout: Any, shape: tuple[int, ...], num_warps: int) -> str | None:
    """Why ``layout`` cannot describe a tile of ``shape``, or None."""
    if layout.rank != len(shape):
        return f"{layout.text()} has {layout.rank} dimension(s) but the tile has {len(shape)}"
    problem = layout.problem(num_warps)
    if problem is None and isinstance(layout, Mma):
        for d in range(2):
            if shape[d] != 1 and shape[d] % layout.block(d):
                return (f"{layout.text()} needs a tile whose dimension {d} is 1 or a multiple of "
                        f"{layout.block(d)} (instr_shape times warps), got {shape[d]}")
    if problem is None and isinstance(layout, DotOperand):
        problem = f"{layout.text()}: tiles in registers in a dot_operand layout are not supported yet"
    return problem
