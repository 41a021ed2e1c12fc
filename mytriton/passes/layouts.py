"""layouts: give every tile a layout, for a number of warps per program.

    %6 = load %4, %5, -inf : vector<1024 x f32> @10:9
      =>
    #blocked0 = blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0]>
    %6 = load %4, %5, -inf : vector<1024 x f32, #blocked0> @10:9

Triton's TTGIR stage is the model. Layouts flow backwards from the ops that
consume tiles (Triton's anchors): a store spreads its tile with the default
layout of its shape (or, when it stores a tile held in registers whose
address and mask come from indices alone, with that tile's layout, so no
data moves; but a tile held in an ``mma`` layout whose store the axis
analysis proves 16 bytes wide a thread is exchanged through shared memory
just before the store into a blocked layout of 16-byte runs, as Triton's
epilogue, where that scratch overlays the staged buffers, fits 48 KiB, or
fits the block's budget in a kernel that already opts into more (``exchange_fits``): the fragments hold two adjacent columns a thread; a tile atomic of
such a tile whose addresses run along the row is exchanged into a blocked
layout along the row, so a warp's atomic covers adjacent addresses, with 4
f32 (8 f16 or bf16) a thread where a vector atom may add them, ``mark_vector_atomics``);
each operand is asked for in the layout its consumer's rule
gives (``OpDef.layout_rule``), sliced where it broadcasts from a lower rank.
A reduction's operand takes the layout whose slice its consumers want, so a
row maximum read back against its row needs no data exchange; a ``split``'s
operand takes its halves' blocked layout with the pair held whole by each
thread (``paired``), so the halves are read in registers. The first
request (the latest use in program order) decides a value's layout. A later
request for another layout is met

- for a value computed elementwise (index arithmetic, ``arange``, a mask):
  by a copy of its op in the new layout (*rematerialised*, as Triton's
  RemoveLayoutConversions does), since recomputing is cheaper than moving;
- for a value held in registers (a load, a reduction, a dot, a loop's
  carried value): by an explicit ``convert_layout`` after its definition,
  which the back end renders as an exchange through shared memory.

A dot the tensor cores can compute (f16 or bf16 operands, f32 ones with
``input_precision="tf32"`` or ``"tf32x3"``, int8 ones) whose tile holds whole
16x8 blocks on every warp anchors an ``mma`` result layout (as below), so
that the accumulator stays in its fragments across the K loop and is stored
from them.
Its shared operand buffers are padded by 16 bytes a row (tf32's B by 8
elements), which makes each ``ldmatrix`` phase (8 rows of 16 bytes) and each
fragment read hit distinct banks. Other dots keep the CUDA-core path.
On Hopper (``sm_90``/``sm_90a``) a dot of f16 or bf16 shared buffers whose
tile fits whole warpgroup instructions (``wgmma_layout``: M a multiple of 16
per warp, N and K of 64) gets a ``version=3`` mma layout instead, and its two
buffers ``nvmma_shared`` layouts (128-byte swizzle), which ``wgmma`` reads
through matrix descriptors without any ldmatrix. A ``dot_rs`` (A in
registers, B a staged buffer) gets one too where it fits; its A is asked for
in a version-3 mma layout over [M, K], wgmma's A register fragment
(``register_a_layout``), which attention's P already has.

A dot computed with FMAs anchors its result's layout (Triton's anchors
again): its result gets a register-tiled layout (``fma_dot_layout``), and
that choice flows forwards, before the backward walk, to what is computed
elementwise from it at its shape and through the loops that carry it, so the
accumulator of ``acc += tl.dot(a, b)`` stays in it across the K loop. A
reduction of a tensor-core accumulator anchors its result in the slice of
the mma layout, which flows the same way (attention's row max and sum, and
the m_i and l_i its loop carries, stay where acc * alpha[:, None] reads
them). A use
that wants a held anchored tile in another layout gets a ``convert_layout``
(after the loop, for a loop's result) instead of moving the anchor.

Loads and stores of contiguous, aligned tiles move 16 bytes per access (as
Triton's Coalesce pass arranges): the axis analysis (``ir/axis_info.py``)
gives each access the elements a thread may move at once; where every load
and store of a tile shape allows N, that shape's layout holds N elements
per thread along its last dimension, and each access that can gets
``vector=N``, which the back end renders as one wide access. Shapes a dot
reads or writes keep their default layouts.

Shared buffers from stage-dots get a ``padded_shared`` layout: the A operand
of an FMA dot is padded so that its rows' 16-byte reads fall in distinct
banks (``fma_operand_pad``) where all staged buffers still fit the shared
budget; other buffers are unpadded (B is read along its rows). The kernel
records ``num_warps``: the SSA is then the CUDA back end's input, and
``emit-cuda`` renders it without choosing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from mytriton import remarks
from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.axis_info import AxisAnalysis, contiguous_dim, vector_width
from mytriton.ir.analysis import is_materialized, is_tile, reaches_materialized
from mytriton.ir.layout_attributes import (
    SWIZZLE_BYTES, WGMMA_MAX_N, Blocked, Mma, NvmmaShared, PaddedShared, SharedLayout, Slice, TileLayout, broadcast_view,
    default_blocked, fma_dot_layout, fma_operand_pad, thread_run,
)
from mytriton.ir.ssa import (
    Block, BlockArg, Const, Kernel, Op, OpResult, Value, for_body, for_carried, for_inits, for_yield, insert_before,
    walk,
)
from mytriton.target import (
    DEFAULT_ARCH, DEFAULT_SHARED_LIMIT, SHARED_MEMORY_BUDGET, has_vector_atomics, has_wgmma,
)
from mytriton.types import BF16, F16, F32, I8, BlockType, SharedType, element_of

DEFAULT_NUM_WARPS = 4
# Row-major shared buffers, unpadded unless an FMA dot reads them across rows
# (see ``shared_layouts``): B is read along its rows from consecutive banks and
# the copies write consecutive addresses.
SHARED_LAYOUT = PaddedShared(pad=0)


# The element types PTX's vector atom adds (sm_90): .v2/.v4 of f32, .v2-.v8 of f16 and bf16.
VECTOR_ATOMIC_TYPES = (F32, F16, BF16)
# mma.sync's K per instruction, by operand element type (f32 means TF32).
MMA_K = {F16: 16, BF16: 16, F32: 8, I8: 32}
TENSOR_CORE_PRECISIONS = ("tf32", "tf32x3")


def _operand_element(value: Value):
    t = value.type
    return t.element if isinstance(t, SharedType) else element_of(t)


def mma_warps(m: int, n: int, num_warps: int) -> tuple[int, int] | None:
    """Warps over (M, N) as Triton's warpsPerTileV2 splits them (more warps
    along M while a warp has at least as many 16-row blocks as 16-column
    ones); None when some warp would get no 16x8 block (the dot then stays on
    CUDA cores)."""
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // 16 // wm >= n // 16 // wn and wm < m // 16:
            wm *= 2
        else:
            wn *= 2
    if 16 * wm > m or 8 * wn > n:
        return None
    return wm, wn


# wgmma's K per instruction (f32 operands: TF32 dots, both operands K-major).
WGMMA_K = {F16: 16, BF16: 16, F32: 8}


def wgmma_swizzle(columns: int, element_bytes: int) -> int | None:
    """The widest swizzle (128, 64 or 32 bytes) whose rows a buffer of
    ``columns`` elements splits into whole, or None."""
    return next((s for s in SWIZZLE_BYTES if (columns * element_bytes) % s == 0), None)


COPIES = ("copy_to_shared", "copy_strided_to_shared", "copy_gathered_to_shared", "async_copy_to_shared",
          "async_copy_strided_to_shared", "async_copy_gathered_to_shared")


def column_contiguous_buffers(kernel: Kernel) -> frozenset[Value]:
    """The shared buffers every copy into which reads a tile contiguous down
    its columns (row stride 1, column stride not: attention's K^T, ``a @
    b.T``). Stored column-major (``nvmma_shared<order=[0, 1]>``), such a
    tile is copied in 16-byte chunks, and wgmma reads it as a K-major B."""
    verdict: dict[Value, bool] = {}
    for op in walk(kernel.body):
        if op.name not in COPIES:
            continue
        buffer = buffer_of(op.operands[0])
        opdef = opdefs.lookup(op.name)
        stride = op.operands[opdef.operand_index("row_stride")]
        col_stride = op.operands[opdef.operand_index("col_stride")] if "col_stride" in opdef.operands else Const(1)
        # (Gathered rows are no run down the columns, whatever their stride.)
        down_columns = ("index" not in opdef.operands and isinstance(stride, Const) and stride.value == 1
                        and not (isinstance(col_stride, Const) and col_stride.value == 1))
        verdict[buffer] = verdict.get(buffer, True) and down_columns
    return frozenset(buffer for buffer, yes in verdict.items() if yes)


def is_tf32(op: Op) -> bool:
    return _operand_element(op.operands[0]) == F32 and op.attrs.get("input_precision") == "tf32"


def k_major_buffers(kernel: Kernel) -> frozenset[Value]:
    """The buffers filled from tiles contiguous down their columns
    (``column_contiguous_buffers``): a warpgroup dot reads such a B K-major
    and such an A M-major (``imm-trans-a``: an operand transposed with
    ``tl.trans(a)`` from an [K, M] tile, 16-bit types only). Not every
    B of a TF32 dot, though wgmma reads tf32 operands K-major only: one
    contiguous along N in memory would be copied element by element, 4
    bytes a cp.async, and that copy, not the tensor cores, set the pace on
    the H200 (128x128x32 at 4096^3: 78.9 TFLOP/s against mma.sync's 111.7;
    Triton's TF32 is at 81 the same way). Such a dot stays on mma.sync."""
    return column_contiguous_buffers(kernel)


def wgmma_layout(op: Op, num_warps: int, k_major: frozenset[Value] = frozenset()) -> Mma | None:
    """The accumulator layout of a dot of two shared buffers that Hopper's
    warpgroup instructions compute, or None: f16/bf16 operands, or f32 ones
    of a TF32 dot whose B is read K-major (wgmma reads B N-major only for
    16-bit types), whole warpgroups, M a multiple of 16 per
    warp, K a multiple of the instruction's 16, and rows of both buffers
    whole swizzle rows (``wgmma_swizzle``). A B buffer in ``k_major``
    (``column_contiguous_buffers``) is read K-major: its swizzle rows run
    along K, and an instruction's N is any multiple of 8 up to 256."""
    chosen = wgmma_choice(op, num_warps, k_major)
    return chosen if isinstance(chosen, Mma) else None


def wgmma_choice(op: Op, num_warps: int, k_major: frozenset[Value] = frozenset()) -> Mma | str:
    """``wgmma_layout``'s answer, or the rule that refused it (for remarks)."""
    if opdefs.lookup(op.name).layout_rule != "dot":
        return "not a dot"
    a, b = op.operands[0], op.operands[1]
    # A from registers (``dot_rs``): wgmma reads it as the register fragment
    # ``register_a_layout`` gives, with no swizzle of its own.
    a_in_registers = op.name == "dot_rs" and isinstance(a.type, BlockType)
    if not ((isinstance(a.type, SharedType) or a_in_registers) and isinstance(b.type, SharedType)):
        return "wgmma reads its operands from staged shared buffers (A from registers in a dot_rs), and this " \
            "dot is not staged"
    element = _operand_element(a)
    if element != b.type.element:
        return f"its operands' types differ ({element} and {b.type.element})"
    if element not in WGMMA_K:
        return f"wgmma takes f16, bf16 or TF32 operands, not {element}"
    if num_warps % 4:
        return f"wgmma needs whole warpgroups of 4 warps, and num_warps is {num_warps}"
    (m, k), n = a.type.shape, b.type.shape[1]
    # A contiguous down its columns (M) is read M-major: its swizzle rows run along M.
    a_m_major = not a_in_registers and buffer_of(a) in k_major
    a_swizzle = SWIZZLE_BYTES[0] if a_in_registers else wgmma_swizzle(m if a_m_major else k, element.nbytes)
    b_k_major = buffer_of(b) in k_major
    if element == F32:
        if not is_tf32(op):
            return f"an f32 dot runs on wgmma only as TF32, and its input_precision is " \
                   f"{op.attrs.get('input_precision')}"
        if a_in_registers:
            return "a TF32 wgmma reads A from shared memory, not registers"
        if a_m_major:
            return "a TF32 wgmma reads A K-major only, and A is contiguous along M in memory " \
                   "(its copy's row stride is the constant 1)"
        if not b_k_major:
            return "a TF32 wgmma reads B K-major only, and B is not contiguous along K in memory " \
                   "(its copy's row stride is not the constant 1)"
    b_swizzle = wgmma_swizzle(k if b_k_major else n, element.nbytes)
    # Warpgroups split M where each gets whole 16-row blocks a warp; else, as
    # Triton does for 8 warps over 64 rows, N (each warpgroup all M rows, in
    # 64-row blocks, and a contiguous share of N: WarpgroupSplitLayout). Only
    # a dot that accumulates (a K loop's): attention's Q @ K^T (no accumulator)
    # feeds P @ V, which reads P in the warps' M split.
    groups = num_warps // 4
    split = m % (16 * num_warps) != 0 and groups > 1 and not a_in_registers and m % 64 == 0 \
        and n % (8 * groups) == 0 and op.operands[2] is not None
    if m % (16 * num_warps) and not split:
        return f"M={m} is not a multiple of 16 rows per warp over {num_warps} warps ({16 * num_warps})"
    warps = (4, groups) if split else (num_warps, 1)
    n_group = n // groups if split else n
    if k % WGMMA_K[element]:
        return f"K={k} is not a multiple of the instruction's {WGMMA_K[element]}"
    if a_swizzle is None:
        what = f"A's {'columns' if a_m_major else 'rows'} ({m if a_m_major else k} x {element.nbytes} bytes)"
        return f"{what} are not whole 32-byte swizzle rows"
    if b_swizzle is None:
        what = f"B's {'columns' if b_k_major else 'rows'} ({k if b_k_major else n} x {element.nbytes} bytes)"
        return f"{what} are not whole 32-byte swizzle rows"
    if b_k_major:
        if n % 8:
            return f"N={n} is not a multiple of 8"
        instr_n = next(w for w in range(min(n_group, WGMMA_MAX_N) // 8 * 8, 0, -8) if n_group % w == 0)
        return Mma(3, warps, (16, instr_n, WGMMA_K[element]))
    # An instruction's N: whole column blocks of B, at most 256; with a narrower
    # swizzle than 128 bytes, one block (untested on the GPU across several such
    # blocks, which power-of-two tiles never need: a row of 64 or more halves
    # takes the 128-byte swizzle).
    block = b_swizzle // element.nbytes
    if split and n_group % block:
        return f"N={n} over {groups} warpgroups is not whole {b_swizzle}-byte column blocks each"
    if b_swizzle != SWIZZLE_BYTES[0]:
        instr_n = block
    else:
        instr_n = next(w for w in range(min(n_group, WGMMA_MAX_N), 0, -block) if n_group % w == 0)
    return Mma(3, warps, (16, instr_n, WGMMA_K[element]))


def register_a_layout(result: Mma, a: Value, held: TileLayout | None) -> Mma:
    """The layout a warpgroup dot reads its register A operand [M, K] in:
    wgmma's m64nNk16 A fragment (PTX ISA, "Register Fragments" of
    wgmma.mma_async: per warp 16 rows; registers (g, 2t..2t+1), (g+8, ..),
    (g, 2t+8..), (g+8, ..)) is, k16 step by k16 step, the m64nK accumulator
    fragment of the same warps (Triton's dot_operand<op_idx=0, parent=#mma(v3),
    k_width=2>): a version-3 mma layout over [M, K]. A tile already held in
    one (attention's P, computed from the Q @ K^T accumulator) is read where
    it is, whatever its instruction N (the slots do not depend on it)."""
    if isinstance(held, Mma) and held.version == 3 and tuple(held.warps_per_cta) == tuple(result.warps_per_cta):
        return held
    k = a.type.shape[1]
    instr_n = next(w for w in range(min(k, WGMMA_MAX_N) // 8 * 8, 0, -8) if k % w == 0)
    return Mma(3, tuple(result.warps_per_cta), (16, instr_n, result.instr_shape[2]))


def wgmma_shared_layout(op: Op, index: int, k_major: frozenset[Value]) -> NvmmaShared:
    """Operand ``index`` of a warpgroup dot: swizzled rows along K for a
    K-major A and a K-major B (column-major), along N for an N-major B, along
    M for an M-major A (column-major)."""
    operand = op.operands[index]
    nbytes = operand.type.element.nbytes
    if buffer_of(operand) in k_major:  # B K-major, A M-major: column-major, swizzled down the columns
        return NvmmaShared(wgmma_swizzle(operand.type.shape[0], nbytes), (0, 1))
    return NvmmaShared(wgmma_swizzle(operand.type.shape[1], nbytes))


def mma_layout(op: Op, num_warps: int, wgmma: bool = False, k_major: frozenset[Value] = frozenset()) -> Mma | None:
    """The accumulator layout of a dot the tensor cores compute, or None
    (with ``wgmma``, Hopper's warpgroup layout where it applies)."""
    if opdefs.lookup(op.name).layout_rule != "dot":
        return None
    if wgmma:
        layout = wgmma_layout(op, num_warps, k_major)
        if layout is not None:
            return layout
    chosen = mma_sync_choice(op, num_warps)
    return chosen if isinstance(chosen, Mma) else None


def mma_sync_choice(op: Op, num_warps: int) -> Mma | str:
    """The ``mma.sync`` accumulator layout of a dot, or the rule that refused it (for remarks)."""
    a, b = op.operands[0], op.operands[1]
    element = _operand_element(a)
    if element != _operand_element(b):
        return f"its operands' types differ ({element} and {_operand_element(b)})"
    if element not in MMA_K:
        return f"the tensor cores take f16, bf16, i8 or TF32 operands, not {element}"
    if element == F32 and op.attrs.get("input_precision") not in TENSOR_CORE_PRECISIONS:
        return f"an f32 dot runs on the tensor cores as tf32 or tf32x3, and its input_precision is " \
               f"{op.attrs.get('input_precision')}"
    (m, k), n = a.type.shape, b.type.shape[1]
    if m % 16:
        return f"M={m} is not a multiple of 16"
    if n % 8:
        return f"N={n} is not a multiple of 8"
    if k % MMA_K[element]:
        return f"K={k} is not a multiple of {MMA_K[element]} ({element}'s mma.sync K)"
    warps = mma_warps(m, n, num_warps)
    if warps is None:
        return f"a {m}x{n} tile leaves some of {num_warps} warps without a whole 16x8 block"
    return Mma(2, warps)


def mma_shared_layout(element, op_idx: int) -> PaddedShared:
    """Rows padded by 16 bytes for ldmatrix (its 8 row addresses then fall in
    8 different 16-byte bank groups); tf32's plain reads: A's lane (g, t)
    reads row g, column t (banks 4 g + t with 4 elements of padding), B's
    row t, column g (banks 8 t + g with 8)."""
    if element == F32:
        return PaddedShared(pad=4 if op_idx == 0 else 8)
    return PaddedShared(pad=16 // element.nbytes)


def check_num_warps(num_warps: Any) -> None:
    if type(num_warps) is not int or not 1 <= num_warps <= 32 or num_warps & (num_warps - 1):
        raise CompileError(f"num_warps must be a power of two from 1 to 32, got {num_warps}")


def vectorized_blocked(shape: tuple[int, ...], num_warps: int, width: int, dim: int | None = None) -> Blocked:
    """The default layout of ``shape`` with ``width`` consecutive elements per
    thread along ``dim`` (by default the last dimension), which is then the
    fastest: lanes and warps spread as they would over a tile ``width``
    times narrower along it."""
    last = len(shape) - 1
    dim = last if dim is None else dim
    narrow = tuple(max(1, n // width) if d == dim else n for d, n in enumerate(shape))
    order = None if dim == last else (dim, *(d for d in reversed(range(len(shape))) if d != dim))
    base = default_blocked(narrow, num_warps, order)
    return replace(base, size_per_thread=tuple(width if d == dim else n for d, n in enumerate(base.size_per_thread)))


def access_widths(kernel: Kernel, analysis: AxisAnalysis) -> dict[Op, int]:
    """The vector width the axis analysis proves for each tile load and store."""
    return {op: vector_width(analysis, op) for op in walk(kernel.body)
            if op.name in ("load", "store") and is_tile(op.operands[0])}


def column_runs(kernel: Kernel, analysis: AxisAnalysis) -> dict[Op, tuple[int, int]]:
    """For each tile store whose addresses run contiguously along another
    dimension than the last (a tile stored column-major): that dimension
    and the vector width proven along it, where it is two or more."""
    runs = {}
    for op in walk(kernel.body):
        if op.name == "store" and is_tile(op.operands[0]):
            dim = contiguous_dim(analysis, op)
            if dim != len(op.operands[0].type.shape) - 1:
                width = vector_width(analysis, op, dim)
                if width > 1:
                    runs[op] = (dim, width)
    return runs


def atomic_runs(kernel: Kernel, analysis: AxisAnalysis, vectors: bool) -> dict[Op, tuple[int, int]]:
    """For each tile atomic: how many consecutive addresses the axis analysis
    proves along its pointer's last dimension, and how many elements one
    vector atom may apply there (an f32, f16 or bf16 add, aligned and under
    one mask value, on a target with vector atomics; else 1)."""
    runs = {}
    for op in walk(kernel.body):
        if op.name not in opdefs.ATOMIC_OPS or not is_tile(op.operands[0]):
            continue
        contiguity = analysis.of(op.operands[0], op.operands[0].type.shape).contiguity[-1]
        vector = 1
        if vectors and op.name == "atomic_rmw" and op.attrs.get("kind") == "add" \
                and element_of(op.operands[0].type).pointee in VECTOR_ATOMIC_TYPES:
            vector = vector_width(analysis, op)  # at most 16 bytes, as PTX's vector atom
        runs[op] = (contiguity, vector)
    return runs


def mark_vector_atomics(kernel: Kernel, runs: dict[Op, tuple[int, int]]) -> None:
    """``vector=N`` on each f32/f16/bf16 atomic add whose laid-out pointer holds runs of
    N proven elements per thread along its last dimension (PTX's vector atom)."""
    for op, (_, width) in runs.items():
        layout = op.operands[0].type.layout
        last = len(op.operands[0].type.shape) - 1
        if width > 1 and isinstance(layout, Blocked) and layout.order[0] == last:
            n = min(width, layout.size_per_thread[last])
            if n > 1:
                op.attrs["vector"] = n


def preferred_layouts(kernel: Kernel, widths: dict[Op, int], num_warps: int) -> dict[tuple[int, ...], Blocked]:
    """A vectorised layout for each tile shape one of whose loads or stores
    moves at least two elements per access, as wide as the widest of them;
    not for shapes a dot touches. The others of the shape then take their
    proven width within it (a gather one element at a time): Triton's
    coalescing gives a load the widest vector among the accesses of its
    shape and order, so one gather (Liger's group norm reads its weights by
    channel) does not narrow the row's contiguous loads and stores."""
    by_shape: dict[tuple[int, ...], int] = {}
    for op, width in widths.items():
        shape = op.operands[0].type.shape
        by_shape[shape] = max(by_shape.get(shape, width), width)
    for op in walk(kernel.body):
        if opdefs.lookup(op.name).layout_rule == "dot":
            for value in list(op.operands) + list(op.results):
                if value is not None and is_tile(value):
                    by_shape.pop(value.type.shape, None)
    return {shape: vectorized_blocked(shape, num_warps, width)
            for shape, width in by_shape.items() if width > 1}


def mark_vector_accesses(kernel: Kernel, widths: dict[Op, int],
                         columns: dict[Op, tuple[int, int]] | None = None) -> None:
    """``vector=N`` on each access whose laid-out pointer holds runs of N
    proven elements per thread along its fastest, last dimension, or along
    the other dimension its addresses run on (``column_runs``) where its
    layout makes that one the fastest."""
    for op, (dim, width) in (columns or {}).items():
        layout = op.operands[0].type.layout
        if isinstance(layout, Blocked) and layout.order[0] == dim and min(width, layout.size_per_thread[dim]) > 1:
            op.attrs["vector"] = min(width, layout.size_per_thread[dim])
    for op, width in widths.items():
        layout = op.operands[0].type.layout
        last = len(op.operands[0].type.shape) - 1
        if width < 2 or "vector" in op.attrs:
            continue
        run = thread_run(layout)
        if isinstance(layout, Mma):
            # An accumulator's thread holds pairs of adjacent columns (its
            # consecutive slots): a dot's epilogue stores 8 bytes of f32 at once.
            n = 2
        elif run is not None and run[0] == last:
            # a blocked layout's, or a slice's of one (a row of sums stored
            # where the reduction made it)
            n = min(width, run[1])
        else:
            continue
        if n > 1:
            op.attrs["vector"] = n


class _Assigner:
    def __init__(self, kernel: Kernel, num_warps: int,
                 preferred: dict[tuple[int, ...], Blocked] | None = None, wgmma: bool = False,
                 widths: dict[Op, int] | None = None,
                 atomic_runs: dict[Op, tuple[int, int]] | None = None,
                 shared_budget: int = SHARED_MEMORY_BUDGET,
                 columns: dict[Op, tuple[int, int]] | None = None) -> None:
        self.kernel = kernel
        self.columns = columns or {}  # store -> (the other dimension its addresses run on, the width there)
        self.shared_budget = shared_budget  # bytes of shared memory a block may use
        self.widths = widths or {}  # the elements each load and store may move at once (axis info)
        # tile atomic -> (its pointer's contiguous run along the last dimension, its vector width)
        self.atomic_runs = atomic_runs or {}
        # the bytes of the staged dot buffers, which scratch needed after them may overlay
        self.staged_bytes = sum(op.results[0].type.nbytes for op in walk(kernel.body)
                                if opdefs.lookup(op.name).allocates and isinstance(op.results[0].type, SharedType))
        self.num_warps = num_warps
        self.wgmma = wgmma  # the target has Hopper's warpgroup instructions
        self.k_major = k_major_buffers(kernel) if wgmma else frozenset()
        self.layouts: dict[Value, TileLayout] = {}
        # (value, layout) -> the value standing for it there (a copy or a conversion)
        self.variants: dict[tuple[Value, TileLayout], Value] = {}
        # Tile shapes whose accesses are vectorised: their layout.
        self.preferred = preferred or {}
        # value -> the layout a dot anchors for it (see ``anchor``)
        self.anchored: dict[Value, TileLayout] = {}
        self.reduce_defaults = False  # see ``anchor``
        self.anchor(kernel.body)

    # ---- anchors ------------------------------------------------------------------------------
    def dot_layout(self, op: Op) -> TileLayout:
        """A dot's result layout: an ``mma`` layout where the tensor cores
        compute it (``mma_layout``), else a register tile per thread whose
        column runs are 16 bytes of the operands' and result's elements."""
        mma = mma_layout(op, self.num_warps, self.wgmma, self.k_major)
        # Why not the faster instruction, for remarks: why not wgmma on an
        # mma.sync dot, why not mma.sync on an FMA one.
        if mma is None or (mma.version == 2 and self.wgmma):
            refused = wgmma_choice(op, self.num_warps, self.k_major) if mma is not None \
                else mma_sync_choice(op, self.num_warps)
            if isinstance(refused, str):
                remarks.note(self.kernel, op, remarks.INSTRUCTION, refused)
        elif mma.version == 2:
            remarks.note(self.kernel, op, remarks.INSTRUCTION, "wgmma needs sm_90 (Hopper)")
        if mma is not None:
            return mma
        types = (op.operands[0].type, op.operands[1].type, op.results[0].type)
        widest = max((t.element if isinstance(t, SharedType) else element_of(t)).nbytes for t in types)
        return fma_dot_layout(op.results[0].type.shape, self.num_warps, max(1, 16 // widest))

    def anchor(self, block: Block) -> None:
        """Forwards: each dot's result takes its FMA layout; an elementwise
        result takes the anchored layout of an operand of its own shape; the
        values a loop carries (and its results) and an if's results, the
        anchored layout of their initial or yielded values. Passes over the
        kernel in program order repeat until nothing new is anchored (a
        yield reaches its loop's next iteration in the next pass); each pass
        but the last anchors something, so there are few. A reduction whose
        operand nothing anchors is anchored in the slice of that operand's
        default layout only once the others have settled: in an earlier pass
        its operand may yet take a dot's layout (the accumulator a loop
        returns reaches the ops after the loop in the second pass)."""
        for defaults in (False, True):
            self.reduce_defaults = defaults
            while True:
                count = len(self.anchored)
                for op in walk(block):
                    self.anchor_op(op)
                if len(self.anchored) == count:
                    break

    def anchor_op(self, op: Op) -> None:
        if op.name == "for":
            carried = for_carried(op)
            terminator = for_yield(op)
            yields = terminator.operands if terminator is not None else []
            for arg, init, value, result in zip(carried, for_inits(op), yields, op.results):
                self.anchor_to(arg, init)
                self.anchor_to(arg, value)
                self.anchor_to(result, arg)
            return
        if op.name == "while":  # one layout for all its carried values (``while_op``)
            before, after = op.regions
            for index, (arg, init) in enumerate(zip(before.args, op.operands)):
                self.anchor_to(arg, init)
                self.anchor_to(arg, after.ops[-1].operands[index])
                self.anchor_to(after.args[index], arg)
                self.anchor_to(op.results[index], arg)
            return
        if op.name == "if":
            for index, result in enumerate(op.results):
                for region in op.regions:
                    self.anchor_to(result, region.ops[-1].operands[index])
            return
        definition = opdefs.lookup(op.name)
        if definition is None or not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        if definition.layout_rule == "dot" and len(result.type.shape) == 2:
            self.anchored.setdefault(result, self.dot_layout(op))
        elif definition.layout_rule == "reduce":
            # A reduction anchors its result in the slice of its operand's
            # layout, where it is made: the values computed from it and those
            # a loop carries for it (attention's m_i and l_i, an accumulator of
            # row sums `acc += tl.sum(x, axis=0)`) stay there, so the next
            # iteration and the tiles combined with it (`tl.zeros` made
            # again in that layout) read it with no exchange through shared
            # memory each time it is made.
            domain = self.anchored.get(op.operands[0])
            if domain is None:
                if not self.reduce_defaults:
                    return
                domain = self.default(op.operands[0].type.shape)
            for tile in op.results:
                if is_tile(tile):
                    self.anchored.setdefault(tile, Slice(op.attrs.get("axis"), domain))
        elif definition.layout_rule == "elementwise":
            for operand in op.operands:
                self.anchor_to(result, operand)

    def anchor_to(self, value: Value, source: object) -> None:
        if value not in self.anchored and is_tile(source) and source in self.anchored \
                and source.type.shape == value.type.shape:
            self.anchored[value] = self.anchored[source]

    def default(self, shape: tuple[int, ...]) -> TileLayout:
        found = self.preferred.get(tuple(shape))
        return found if found is not None else default_blocked(shape, self.num_warps)

    def layout(self, value: Value) -> TileLayout:
        found = self.layouts.get(value) or self.anchored.get(value)
        return found if found is not None else self.default(value.type.shape)

    def held(self, value: Value) -> TileLayout:
        """The layout a tile held in registers has, or will have if no later
        use asks otherwise: a reduction leaves its result in a slice of its
        operand's layout."""
        found = self.layouts.get(value) or self.anchored.get(value)
        if found is not None:
            return found
        op = value.op if isinstance(value, OpResult) else None
        if op is not None and opdefs.lookup(op.name).layout_rule == "reduce":
            return Slice(op.attrs["axis"], self.layout(op.operands[0]))
        return self.default(value.type.shape)

    # ---- requests ---------------------------------------------------------------------------
    def request(self, op: Op, index: int, layout: TileLayout) -> None:
        """Operand ``index`` of ``op`` is read in ``layout`` (already a view
        for the operand's rank)."""
        value = op.operands[index]
        if not is_tile(value):
            return
        have = self.layouts.get(value)
        if have is None:
            anchored = self.anchored.get(value)
            if anchored is None or anchored == layout or not is_materialized(value):
                self.layouts[value] = layout
                return
            # A held tile keeps the layout its dot anchors; this use converts.
            have = self.layouts[value] = anchored
        if have == layout:
            return
        variant = self.variants.get((value, layout))
        if variant is None:
            variant = self.rematerialize(value, layout) if not is_materialized(value) \
                else self.convert(value, layout)
            self.variants[(value, layout)] = variant
        op.operands[index] = variant

    def rematerialize(self, value: Value, layout: TileLayout) -> Value:
        original = value.op
        copy = Op(original.name, list(original.operands), [r.type for r in original.results],
                  dict(original.attrs), original.loc)
        _insert_after(original, copy)
        result = copy.results[value.index]
        self.layouts[result] = layout
        self.operands(copy, layout)
        return result

    def convert(self, value: Value, layout: TileLayout) -> Value:
        op = Op("convert_layout", [value], [value.type], loc=_loc_of(value))
        if isinstance(value, BlockArg):
            body = value.block
            op.parent = body
            body.ops.insert(0, op)
        else:
            _insert_after(value.op, op)
        self.layouts[op.result] = layout
        return op.result

    # ---- ops ------------------------------------------------------------------------------------
    def operands(self, op: Op, layout: TileLayout) -> None:
        """Ask for ``op``'s tile operands as its layout rule says, given the
        layout of its result (of its pointer, for a store)."""
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "expand_dims":
            self.request(op, 0, Slice(op.attrs["axis"], layout))
            return
        if rule == "dot":
            for index in (0, 1):
                operand = op.operands[index]
                if is_tile(operand):
                    wanted = self.layout(operand)
                    if index == 0 and op.name == "dot_rs" and isinstance(layout, Mma) and layout.version == 3:
                        wanted = register_a_layout(layout, operand, self.layouts.get(operand)
                                                   or self.anchored.get(operand))
                    self.request(op, index, wanted)
            self.request(op, 2, layout)
            return
        for index, operand in enumerate(op.operands):
            if is_tile(operand):
                self.request(op, index, broadcast_view(layout, len(operand.type.shape)))

    def block(self, block: Block) -> None:
        for op in reversed(list(block.ops)):
            self.op(op)

    def op(self, op: Op) -> None:
        if op.name == "for":
            self.loop(op)
            return
        if op.name == "if":
            self.if_op(op)
            return
        if op.name == "while":
            self.while_op(op)
            return
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "store":
            if is_tile(op.operands[0]):
                self.store(op)
            return
        if rule == "reduce":
            self.reduction(op)
            return
        if rule == "scan":
            self.scan(op)
            return
        if op.name == "split":
            self.split(op)
            return
        if rule == "convert" or not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        layout = self.layout(result)
        if op.name in opdefs.ATOMIC_OPS and result not in self.layouts:
            layout = self.atomic_layout(op, layout)
        self.layouts[result] = layout
        self.operands(op, layout)

    def split(self, op: Op) -> None:
        """One half of ``tl.split``: its operand is asked for in the result's
        blocked layout with the pair as a last dimension each thread holds
        whole (``paired``), as Triton lays a split's operand out, so each
        thread takes its half from its own registers; a result in any other
        layout (a slice, an mma) is moved through shared memory."""
        result = op.results[0]
        layout = self.layout(result)
        if isinstance(layout, Blocked):
            self.layouts[result] = layout
            self.request(op, 0, paired(layout))

    def store(self, op: Op) -> None:
        # A store's (pointer, value, mask); device_print's and device_assert's
        # first operand stands where the pointer does.
        ptr, value, mask = (op.operands + [None, None])[:3] if op.name == "store" else (op.operands[0], None, None)
        layout = self.default(ptr.type.shape)
        if is_tile(value) and (is_materialized(value) or value in self.anchored) \
                and value.type.shape == ptr.type.shape and not any(reaches_materialized(o) for o in (ptr, mask)):
            layout = self.held(value)  # store the tile where it is: no data moves
            coalesced = self.coalesced_store(op, layout)
            if coalesced is not None:
                # A dot's result is stored 16 bytes a thread after an exchange
                # through shared memory, as Triton's epilogue: the tensor-core
                # fragments hold two adjacent columns a thread.
                layout = self.exchange_before(op, 1, layout, coalesced)
        self.request(op, 0, layout)
        self.operands(op, layout)

    def coalesced_store(self, op: Op, held: TileLayout) -> Blocked | None:
        """The layout storing 16 bytes a thread, for a store of a tile held in
        an mma layout whose accesses the axis analysis proves that wide:
        along its rows, or down its columns where it is stored column-major
        (Liger's MoE dW2 tile, `h[None, :] * stride + i[:, None]`), whose
        fragments would otherwise store 2 bytes at a time, 8 rows apart."""
        if op.name != "store" or not isinstance(held, Mma):
            return None
        shape = op.operands[0].type.shape
        nbytes = element_of(op.operands[0].type).pointee.nbytes
        width = 16 // nbytes
        dim, proven = self.columns.get(op, (len(shape) - 1, self.widths.get(op, 1)))
        if proven < width or shape[dim] % width or not self.exchange_fits(op.operands[1]):
            return None
        return vectorized_blocked(shape, self.num_warps, width, dim)

    def exchange_fits(self, value: Value) -> bool:
        """Whether ``value`` may move through shared memory: its scratch
        overlays the staged dot buffers (it is needed after their last use),
        or fits the 48 KiB any block has, or, in a kernel whose buffers
        already take more than that (its launch opts into more), the block's
        budget, as Triton's epilogue takes it: a 128x256 f32 accumulator on 8
        warps (128 KiB over 72 KiB of buffers, and 128 accumulators a thread,
        which hold a block to one an SM whatever its shared memory) is
        stored 16 bytes a thread, 32 instructions where its fragments took 64
        of 8 bytes, each spread over 8 rows."""
        t = value.type
        nbytes = t.numel * element_of(t).nbytes
        if nbytes <= max(self.staged_bytes, DEFAULT_SHARED_LIMIT):
            return True
        return self.staged_bytes > DEFAULT_SHARED_LIMIT and nbytes <= self.shared_budget

    def atomic_layout(self, op: Op, layout: TileLayout) -> TileLayout:
        """An atomic no tile use has asked a layout of yet applies its value
        where that value is held (as a store does: no data moves), when its
        pointer and mask come from indices alone."""
        index = 1 if op.name == "atomic_rmw" else 2
        value = op.operands[index]
        others = [o for i, o in enumerate(op.operands) if i != index]
        if is_tile(value) and (is_materialized(value) or value in self.anchored) \
                and value.type.shape == op.results[0].type.shape and not any(reaches_materialized(o) for o in others):
            held = self.held(value)
            contiguity, vector = self.atomic_runs.get(op, (1, 1))
            if not isinstance(held, Mma) or contiguity < 2 or not self.exchange_fits(value):
                return held
            # A tensor-core fragment holds pairs of columns on 8 rows a warp:
            # its atomics would touch 8 rows' sectors per instruction, each
            # (acq_rel by default) behind a fence. Moved along the contiguous
            # rows as Triton's coalesced atomics, a warp's instruction covers
            # adjacent elements, and on sm_90 each thread adds 4 f32 at once
            # (one fence per 4 elements).
            shape = value.type.shape
            coalesced = vectorized_blocked(shape, self.num_warps, vector) if vector > 1 and shape[-1] % vector == 0 \
                else default_blocked(shape, self.num_warps)
            return self.exchange_before(op, index, held, coalesced)
        return layout

    def exchange_before(self, op: Op, index: int, held: TileLayout, layout: TileLayout) -> TileLayout:
        """``op``'s operand ``index`` (held in ``held``) moved into ``layout`` by
        a ``convert_layout`` just before ``op``: after a K loop's drain, where
        its scratch may reuse the staged buffers' memory."""
        value = op.operands[index]
        self.layouts.setdefault(value, held)
        exchange = Op("convert_layout", [value], [value.type], loc=_loc_of(value))
        insert_before(op, exchange)
        self.layouts[exchange.result] = layout
        op.operands[index] = exchange.result
        return layout

    def reduction(self, op: Op) -> None:
        """A reduction's operand (a combine ``reduce``'s first one; the others
        are read in its layout) takes the layout whose slice its users want;
        each tile result is that layout sliced along the axis."""
        x = op.operands[0]
        axis = op.attrs.get("axis")
        tiles = [r for r in op.results if is_tile(r)]
        domain = self.layouts.get(x)
        if domain is None:
            domain = self.anchored.get(x) or self.default(x.type.shape)
            wanted = self.layouts.get(tiles[0]) if tiles else None
            if isinstance(wanted, Slice) and wanted.dim == axis:
                domain = wanted.parent  # the slice consumers want is this reduction's own
            self.layouts[x] = domain
        for index in range(1, len(op.operands)):
            self.request(op, index, domain)
        for result in tiles:
            self.settle(result, Slice(axis, domain))

    def scan(self, op: Op) -> None:
        """A scan's results are held in registers in one layout (the one the
        first result's users want), which its operands are read in."""
        layout = self.layout(op.results[0])
        for result in op.results:
            self.settle(result, layout)
        for index in range(len(op.operands)):
            self.request(op, index, layout)

    def settle(self, result: Value, layout: TileLayout) -> None:
        """``result`` is made in ``layout``; users that asked for another
        before it was known read a ``convert_layout`` of it."""
        wanted = self.layouts.get(result)
        self.layouts[result] = layout
        if wanted is not None and wanted != layout:
            converted = self.convert(result, wanted)
            for user in walk(self.kernel.body):
                if user is not converted.op and not (user.name == "convert_layout" and user.operands[0] is result):
                    user.operands = [converted if o is result else o for o in user.operands]
            self.variants[(result, wanted)] = converted

    def loop(self, op: Op) -> None:
        body = for_body(op)
        for index, (arg, result, init) in enumerate(zip(for_carried(op), op.results, for_inits(op))):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[arg] = layout
                self.request(op, 3 + index, layout)
        terminator = for_yield(op)
        for index, arg in enumerate(for_carried(op)):
            if is_tile(arg):
                self.request(terminator, index, self.layouts[arg])
        self.block(_without_yield(body))


    def if_op(self, op: Op) -> None:
        """An if's tile results are held in registers, like loop-carried
        values: each keeps the layout its users want, and both branches
        yield it in that layout; then the branches are laid out."""
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = layout
                for region in op.regions:
                    self.request(region.ops[-1], index, layout)
        for region in op.regions:
            self.block(_without_yield(region))

    def while_op(self, op: Op) -> None:
        """A while loop's carried tiles: one layout for the initial value,
        both regions' arguments, the yielded value and the result."""
        before, after = op.regions
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[before.args[index]] = self.layouts[after.args[index]] = layout
                self.request(op, index, layout)
                self.request(after.ops[-1], index, layout)
        self.block(_without_yield(after))
        self.block(_without_yield(before))


def _without_yield(body: Block) -> Block:
    """The ops of a region but its terminator (``yield`` or ``condition``)."""
    view = Block()
    view.ops = [op for op in body.ops if op.name not in ("yield", "condition")]
    return view


def _insert_after(anchor: Op, op: Op) -> None:
    block = anchor.parent
    assert block is not None
    op.parent = block
    block.ops.insert(block.ops.index(anchor) + 1, op)


def _loc_of(value: Value):
    return value.op.loc if isinstance(value, OpResult) else value.block.parent.loc


def buffer_of(value: Value) -> Value:
    """The allocation a shared value is, or views (a stage of a multi-stage
    buffer): a view and its buffer share one layout."""
    while isinstance(value, OpResult) and value.op.operands and isinstance(value.op.operands[0], Value) \
            and isinstance(value.op.operands[0].type, SharedType):
        value = value.op.operands[0]
    return value


def after_the_buffers(kernel: Kernel) -> frozenset[Op]:
    """The top-level ops after the last one that touches a shared buffer or
    waits on an asynchronous copy or wgmma group (a dot's pipelined loop):
    the epilogue, whose scratch the CUDA backend overlays on the buffers
    once a barrier has let every thread's reads finish (its late scratch)."""
    ops = kernel.body.ops
    last = max((i for i, op in enumerate(ops) if touches_shared(op)), default=-1)
    return frozenset(ops[last + 1:]) if last >= 0 else frozenset()


def touches_shared(op: Op) -> bool:
    """Whether ``op`` or an op in its regions reads or writes a shared
    buffer or waits on (or is) an asynchronous copy or wgmma group."""
    for inner in [op, *(o for region in op.regions for o in walk(region))]:
        if inner.name in ("async_wait", "async_commit", "wgmma_wait") or inner.attrs.get("in_flight"):
            return True
        if any(isinstance(getattr(v, "type", None), SharedType) for v in [*inner.operands, *inner.results]):
            return True
    return False


def shared_layouts(kernel: Kernel, num_warps: int, budget: int = SHARED_MEMORY_BUDGET,
                   wgmma: bool = False) -> dict[Value, SharedLayout]:
    """Padding for the shared operands of dots, by the buffer they read (all
    stages of a pipelined one alike), as long as every shared buffer, padding
    included, and the scratch its reductions need (``scratch_reserve``) stay
    within the shared-memory ``budget`` (a pair stage-dots let
    through at the budget's edge stays unpadded): both operands of a dot on
    tensor cores (``mma_shared_layout``), the A buffer of an FMA dot
    (``fma_operand_pad``); both operands of a warpgroup dot are swizzled
    (``nvmma_shared``, no padding). A 16-bit operand of mma.sync contiguous
    down its columns (B of ``x @ w.T``, K^T; A of ``tl.trans(a)``) is held
    column-major, its transpose's rows padded: copied in 16-byte chunks, read
    by ldmatrix with .trans for A, without for B (as row-major, each element
    would be copied on its own)."""
    from mytriton.passes.software_pipeline import scratch_reserve

    allocs = [r for op in walk(kernel.body) if opdefs.lookup(op.name).allocates for r in op.results]
    # The scratch the software-pipeline pass left room for stays free: padding never takes it. An
    # epilogue's (after the buffers' last use) overlays the buffers instead: it must fit beside none.
    used = sum(r.type.numel * r.type.element.nbytes for r in allocs) \
        + scratch_reserve(kernel, overlaying=after_the_buffers(kernel))
    layouts: dict[Value, SharedLayout] = {}
    k_major = k_major_buffers(kernel) if wgmma else frozenset()
    down_columns = column_contiguous_buffers(kernel)
    for op in walk(kernel.body):
        if op.name not in ("dot_shared", "dot_rs"):
            continue
        # A dot_rs's A is in registers: its B alone is a buffer.
        shared = [i for i in (0, 1) if isinstance(op.operands[i].type, SharedType)]
        if wgmma and wgmma_layout(op, num_warps, k_major) is not None:
            for index in shared:
                layouts.setdefault(buffer_of(op.operands[index]), wgmma_shared_layout(op, index, k_major))
            continue
        on_tensor_cores = mma_layout(op, num_warps) is not None
        for index in [i for i in ((0, 1) if on_tensor_cores else (0,)) if i in shared]:
            buffer = buffer_of(op.operands[index])
            if buffer in layouts:
                continue
            rows, cols = buffer.type.shape
            nbytes = buffer.type.element.nbytes
            pad = mma_shared_layout(buffer.type.element, index).pad if on_tensor_cores \
                else fma_operand_pad(cols, nbytes)
            if on_tensor_cores and buffer in down_columns and buffer.type.element in (F16, BF16):
                fits = used + cols * pad * nbytes <= budget
                used += cols * pad * nbytes if fits else 0
                layouts[buffer] = PaddedShared(pad=pad if fits else 0, order=(0, 1))
                continue
            if pad and used + rows * pad * nbytes <= budget:
                used += rows * pad * nbytes
                layouts[buffer] = PaddedShared(pad=pad)
    return layouts


def _with_layouts(kernel: Kernel, layouts: dict[Value, TileLayout], budget: int, wgmma: bool) -> None:
    shared = shared_layouts(kernel, kernel.num_warps, budget, wgmma)
    for op in walk(kernel.body):
        values = list(op.results) + [arg for region in op.regions for arg in region.args]
        for value in values:
            if isinstance(value.type, BlockType):
                layout = layouts.get(value) or default_blocked(value.type.shape, kernel.num_warps)
                value.type = replace(value.type, layout=layout)
            elif isinstance(value.type, SharedType):
                value.type = replace(value.type, layout=stage_layout(op, shared.get(buffer_of(value), SHARED_LAYOUT)))


def stage_layout(op: Op, layout: SharedLayout) -> SharedLayout:
    """The layout of what ``op`` makes of a buffer of ``layout``: the same,
    but for a stage of a padded column-major buffer. Its stages lie one above
    the other, so each of its transpose's rows holds a run of every stage in
    turn: a stage's view is padded by the other stages' runs too."""
    if op.name != "stage_view" or not (isinstance(layout, PaddedShared) and layout.transposed):
        return layout
    rows = op.operands[0].type.shape[0] // op.attrs["stages"]
    return replace(layout, pad=layout.pad + (op.attrs["stages"] - 1) * rows)


@dataclass(frozen=True)
class LayoutsPass:
    name: str = "layouts"
    after_layouts: ClassVar[bool] = True  # to refuse it in its own words: a kernel is laid out once
    summary: str = "give every tile a layout for --num-warps warps (CUDA's input; not an optimisation)"
    num_warps: int = DEFAULT_NUM_WARPS
    shared_budget: int = SHARED_MEMORY_BUDGET  # bytes of shared memory a block may use (the target's)
    arch: str = DEFAULT_ARCH  # sm_90 and sm_90a dots may use wgmma

    def apply(self, kernel: Kernel) -> Kernel:
        check_num_warps(self.num_warps)
        if kernel.laid_out:
            raise CompileError(f"kernel '{kernel.name}' is already laid out (num_warps={kernel.num_warps})",
                               kernel.loc)
        analysis = AxisAnalysis(kernel)
        widths = access_widths(kernel, analysis)
        wgmma = has_wgmma(self.arch)
        runs = atomic_runs(kernel, analysis, has_vector_atomics(self.arch))
        columns = column_runs(kernel, analysis)
        assigner = _Assigner(kernel, self.num_warps, preferred_layouts(kernel, widths, self.num_warps), wgmma, widths,
                             runs, self.shared_budget, columns)
        assigner.block(kernel.body)
        kernel.num_warps = self.num_warps
        _with_layouts(kernel, assigner.layouts, self.shared_budget, wgmma)
        mark_vector_accesses(kernel, widths, columns)
        mark_vector_atomics(kernel, runs)
        return kernel


def paired(layout: Blocked) -> Blocked:
    """``layout`` with one more, last dimension of 2 that each thread holds
    whole: the layout of a ``tl.split`` operand whose halves are in
    ``layout``, each thread's pair adjacent in its registers."""
    return Blocked(layout.size_per_thread + (2,), layout.threads_per_warp + (1,), layout.warps_per_cta + (1,),
                   (layout.rank,) + layout.order)
