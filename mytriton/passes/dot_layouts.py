"""Which instruction and which layouts a dot gets: the layouts stage's choices for tl.dot.

A dot the tensor cores can compute (f16 or bf16 operands, f32 ones with
``input_precision="tf32"`` or ``"tf32x3"``, int8 ones) whose tile holds whole
16x8 blocks on every warp gets an ``mma`` result layout (``mma_layout``), its
warps spread over M and N as Triton's warpsPerTileV2 spreads them
(``mma_warps``), and its shared operand buffers padded for ldmatrix
(``mma_shared_layout``). On Hopper a dot of staged buffers whose tile fits
whole warpgroup instructions gets a ``version=3`` layout instead
(``wgmma_layout``) and ``nvmma_shared`` buffers (``wgmma_shared_layout``); a
``dot_rs`` reads A from registers in wgmma's fragment (``register_a_layout``).
Where a dot does not get the faster instruction, ``wgmma_choice`` and
``mma_sync_choice`` say why, for the remarks.
"""
from __future__ import annotations

from mytriton.ir.layout_attributes import (
    SWIZZLE_BYTES, WGMMA_MAX_N, Mma, NvmmaShared, PaddedShared, TileLayout, thread_run,
)
from mytriton.ir import opdefs
from mytriton.ir.ssa import Const, Kernel, Op, OpResult, Value, walk
from mytriton.types import BF16, F16, F32, I8, BlockType, SharedType, element_of



def computed_by_wgmma(op: Op) -> bool:
    """A dot that wgmma computes: its op takes wgmma's decisions (``dot_shared``, ``dot_rs``) and its
    result is in a version-3 mma layout."""
    opdef = opdefs.lookup(op.name)
    if opdef is None or not set(opdefs.WGMMA_DOT_ATTRS) <= set(opdef.attrs) or not op.results:
        return False
    result = op.results[0].type
    return isinstance(result, BlockType) and isinstance(result.layout, Mma) and result.layout.version == 3


def column_major_problem(op: Op, label: str) -> str | None:
    """Why ``op``'s operand ``label`` ("a" or "b") cannot be written to
    scratch column-major (``a_columns``/``b_columns``), or None: only a
    dot on mma.sync of 16-bit operands (ldmatrix reads either orientation),
    an operand that is a register tile whose blocked layout runs down its
    columns (each thread's run is then one write)."""
    if op.name not in ("dot", "dot_rs") or not op.results:
        return "only a dot or a dot_rs writes its operands to scratch"
    value = op.operands[0 if label == "a" else 1]
    result = op.results[0].type
    if not (isinstance(result, BlockType) and isinstance(result.layout, Mma) and result.layout.version == 2):
        return "only a dot on mma.sync (an mma layout of version 2) reads a column-major operand from scratch"
    if not isinstance(value.type, BlockType) or isinstance(value.type, SharedType):
        return f"operand {label} is not a register tile"
    if element_of(value.type).nbytes != 2:
        return ("mma.sync reads a column-major operand through ldmatrix, of 16-bit elements, "
                f"not {element_of(value.type)}")
    run = thread_run(value.type.layout)
    if run is None or run[0] != 0:
        return f"the layout of operand {label} does not run down its columns"
    return None


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


def copies_into_shared(op: Op) -> bool:
    """A copy from global memory into a shared buffer (its first operand): its op reads global memory and
    writes shared memory."""
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.reads_global and opdef.writes_shared


def column_contiguous_buffers(kernel: Kernel) -> frozenset[Value]:
    """The shared buffers every copy into which reads a tile contiguous down
    its columns (row stride 1, column stride not: attention's K^T, ``a @
    b.T``). Stored column-major (``nvmma_shared<order=[0, 1]>``), such a
    tile is copied in 16-byte chunks, and wgmma reads it as a K-major B."""
    verdict: dict[Value, bool] = {}
    for op in walk(kernel.body):
        if copies_into_shared(op):
            buffer = buffer_of(op.operands[0])
            verdict[buffer] = verdict.get(buffer, True) and reads_down_columns(op)
    return frozenset(buffer for buffer, yes in verdict.items() if yes)


def reads_down_columns(copy: Op) -> bool:
    """Whether a copy into shared memory reads a tile whose rows are adjacent
    in memory (its row stride the literal 1, its column stride not). Gathered
    rows are no run down the columns, whatever their stride."""
    opdef = opdefs.lookup(copy.name)
    assert opdef is not None
    stride = copy.operands[opdef.operand_index("row_stride")]
    col_stride = copy.operands[opdef.operand_index("col_stride")] if "col_stride" in opdef.operands else Const(1)
    return ("index" not in opdef.operands and isinstance(stride, Const) and stride.value == 1
            and not (isinstance(col_stride, Const) and col_stride.value == 1))


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


def buffer_of(value: Value) -> Value:
    """The allocation a shared value is, or views (a stage of a multi-stage
    buffer): a view and its buffer share one layout."""
    while isinstance(value, OpResult) and value.op.operands and isinstance(value.op.operands[0], Value) \
            and isinstance(value.op.operands[0].type, SharedType):
        value = value.op.operands[0]
    return value
