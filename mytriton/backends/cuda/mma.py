"""``tl.dot`` on tensor cores: ``mma.sync`` fed from shared memory.

The layouts stage gives a dot the tensor cores can compute an ``mma``
result layout (``mytriton/ir/layout_attributes.py``); this module renders it. Each
warp owns the 16x8 accumulator blocks the layout gives it (``MmaLayout`` in
``thread_coordinates.py``: slot digits ``2 * rep + element`` along each dimension), and for
each K step of the instruction it

1. loads the A fragment of each of its block rows and the B fragment of each
   of its block columns from the shared operand buffers (row-major, rows
   padded as their ``padded_shared`` layouts say):
   - f16/bf16: ``ldmatrix.x4`` for A (four 8x8 matrices: rows 0-7 and 8-15,
     K 0-7 and 8-15), ``ldmatrix.x4.trans`` for two B blocks at once
     (``.x2.trans`` for a last odd one): ``.trans`` turns the row-major K x N
     buffer into the column fragment ``mma`` wants;
   - int8: ``ldmatrix.x4`` for A (an 8x8 matrix of 16-bit pairs is 8 rows of
     16 bytes); B byte by byte (``ldmatrix`` cannot transpose bytes);
   - tf32: plain 32-bit shared reads (``ldmatrix`` moves 16-bit pairs), the
     f32 bits as they are (the tensor cores read the top 19, as Triton gives
     them); ``tf32x3`` rounds to TF32 with ``cvt.rna.tf32.f32`` and takes the
     TF32 rounding of the remainder (``small``);
2. issues one ``mma.sync`` per (block row, block column) pair into the
   accumulator registers c0..c3 of that block (``tf32x3``: three, small
   products first).

Fragments follow the PTX ISA's tables ("Matrix Fragments for mma.m16n8k*"),
with lane ``l`` as group ``g = l / 4`` and thread-in-group ``t = l % 4``:
- m16n8k16 (f16, bf16): A regs (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..),
  (g+8, 2t+8..); B regs (k 2t..2t+1, n g), (k 2t+8..2t+9, n g);
- m16n8k8 (tf32): A (g, t), (g+8, t), (g, t+4), (g+8, t+4); B (t, g), (t+4, g);
- m16n8k32 (s8): A (g, 4t..4t+3), (g+8, 4t..), (g, 16+4t..), (g+8, 16+4t..);
  B (k 4t..4t+3, n g), (k 16+4t.., n g);
- the accumulator c0..c3: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).

``tests/test_mma_fragments.py`` simulates these index expressions lane by lane
against the tables and NumPy, so a mistake here shows without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.dots import emit_fma_dot, pitch, stage_operands, transposed
from mytriton.backends.cuda.expressions import CValue, as_type
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.thread_coordinates import Layout, MmaLayout
from mytriton.backends.cuda.wgmma import emit_wgmma_products, register_a_name
from mytriton.ir.ssa import BlockArg, Op
from mytriton.ir.layout_attributes import Mma, NvmmaShared
from mytriton.types import BF16, F16, F32, I8, ScalarType, SharedType, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


@dataclass(frozen=True)
class Instruction:
    """One ``mma.sync`` shape and type, and how its operands are loaded."""

    ptx: str  # the instruction, without operands
    k: int  # K per instruction
    accumulator: str  # the asm constraint of an accumulator register
    a_by_ldmatrix: bool  # A fragments with ldmatrix.x4 (else plain reads)
    b_by_ldmatrix: bool  # B fragments with ldmatrix.trans (else plain reads)


INSTRUCTIONS: dict[ScalarType, Instruction] = {
    F16: Instruction("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, "f", True, True),
    BF16: Instruction("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, "f", True, True),
    # ldmatrix moves an 8x8 matrix of b16 pairs: for f32, 8 rows of 4 elements, lane l receiving
    # row l / 4, element l % 4, as the tf32 A fragment (and a K-contiguous B's) has them.
    F32: Instruction("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 8, "f", True, False),
    I8: Instruction("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 32, "r", True, False),
}
LDMATRIX_X4 = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
LDMATRIX_X4_TRANS = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
LDMATRIX_X2 = "ldmatrix.sync.aligned.m8n8.x2.shared.b16"
LDMATRIX_X2_TRANS = "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"
TF32_ROUND = "cvt.rna.tf32.f32"


def is_mma(layout: Layout) -> bool:
    return isinstance(layout.parent, MmaLayout)


# ---- fragment coordinates (C expressions of `lane`, `kk` and block bases) ---------------------
# Each returns (row, column) in the operand buffer of the element (or the
# first of the 16-bit pair / byte quadruple) that a lane loads: ldmatrix
# variants give the row address lane `lane` supplies.


def block_row(rm: str, wm: int) -> str:
    """First row of the warp's block row ``rm`` (warps_per_cta[0] = ``wm``)."""
    return f"warp_m * 16 + {rm} * {16 * wm}"


def block_col(rn: str, wn: int) -> str:
    return f"warp_n * 8 + {rn} * {8 * wn}"


def a_ldmatrix_address(row0: str, kk: str, k_step: int) -> tuple[str, str]:
    """ldmatrix.x4 for A: lane l gives row (l % 8) of matrix l / 8; matrices
    are (rows 0-7, K first half), (rows 8-15, first), (0-7, second), (8-15,
    second), which are the A fragment's registers in order. The K halves are
    8 elements apart (f16) or 16 (int8: 8 pairs of bytes)."""
    half = k_step // 2
    return f"{row0} + (lane / 8) % 2 * 8 + lane % 8", f"{kk} + lane / 16 * {half}"


def b_ldmatrix_trans_address(col0: str, step: int, kk: str) -> tuple[str, str]:
    """ldmatrix.x4.trans for the B blocks at columns col0 and col0 + step:
    matrices (K 0-7, col0), (K 8-15, col0), (K 0-7, col0 + step), (K 8-15,
    col0 + step); lane l gives K row (l % 8) of matrix l / 8 (.x2 reads lanes
    0-15 only: step 0). With .trans lane l receives column l / 4, rows
    2 (l % 4) and the next: the B fragment (k 2t.., n g)."""
    col = col0 if step == 0 else f"{col0} + lane / 16 * {step}"
    return f"{kk} + (lane / 8) % 2 * 8 + lane % 8", col


def a_ldmatrix_trans_address(row0: str, kk: str) -> tuple[str, str]:
    """ldmatrix.x4.trans for A held column-major (its transpose row-major, M
    contiguous): matrices (rows 0-7, K 0-7), (rows 8-15, K 0-7), (0-7, K 8-15),
    (8-15, K 8-15), the A fragment's registers in order, each 8 K rows of 16
    bytes of the transpose; lane l gives K row (l % 8) of matrix l / 8. With
    .trans lane l receives row l / 4, K 2 (l % 4) and the next. As (K, row)
    of the transpose."""
    return f"{kk} + lane / 16 * 8 + lane % 8", f"{row0} + (lane / 8) % 2 * 8"


def b_ldmatrix_address(col0: str, step: int, kk: str, half: int = 8) -> tuple[str, str]:
    """ldmatrix.x4 (no .trans) for the B blocks at columns col0 and col0 +
    step of a column-major B (its transpose row-major, K contiguous):
    matrices (col0, K 0-7), (col0, K 8-15), (col0 + step, K 0-7), (col0 +
    step, K 8-15), each 8 columns of 16 bytes; lane l gives column (l % 8) of
    matrix l / 8 (.x2 reads lanes 0-15 only: step 0), and receives column
    l / 4, K 2 (l % 4) and the next: the B fragment (k 2t.., n g). As
    (column, K) of the transpose. ``half``: K elements per matrix (tf32: 4,
    lane l receiving K l % 4 of column l / 4)."""
    col = col0 if step == 0 else f"{col0} + lane / 16 * {step}"
    return f"{col} + lane % 8", f"{kk} + (lane / 8) % 2 * {half}"


def tf32_a(row0: str, kk: str, reg: int) -> tuple[str, str]:
    return f"{row0} + lane / 4 + {8 * (reg % 2)}", f"{kk} + lane % 4 + {4 * (reg // 2)}"


def tf32_b(col0: str, kk: str, reg: int) -> tuple[str, str]:
    return f"{kk} + lane % 4 + {4 * reg}", f"{col0} + lane / 4"


def s8_b(col0: str, kk: str, reg: int, byte: int) -> tuple[str, str]:
    return f"{kk} + lane % 4 * 4 + {16 * reg + byte}", f"{col0} + lane / 4"


def accumulator_digits(rm: str, rn: str, reg: int) -> tuple[str, str]:
    """Slot digits (row, column) of accumulator register c<reg> of block (rm, rn)."""
    return f"(2 * {rm} + {reg // 2})", f"(2 * {rn} + {reg % 2})"


# ---- emission --------------------------------------------------------------------------------


@renders("dot")
def render_dot(em: "EmitContext", group: Group) -> None:
    """A dot on tensor cores where the layouts stage chose an mma layout, else on CUDA cores."""
    (op,) = group.ops
    layout = op.results[0].type.layout
    if op.attrs.get("in_flight") and not (isinstance(layout, Mma) and layout.version == 3):
        raise em.error_at(op, "only a dot in a version-3 (wgmma) mma layout can be in flight")
    if is_mma(em.layout_of(op.results[0])):
        emit_mma_dot(em, op)
    else:
        emit_fma_dot(em, op)


def emit_mma_dot(em: "EmitContext", op: Op) -> None:
    a, b, acc = op.operands
    result = op.results[0]
    layout = em.layout_of(result)
    parent: MmaLayout = layout.parent  # type: ignore[assignment]
    m, k = a.type.shape
    n = b.type.shape[1]
    storage = em.storage[result]
    where = em.where(op)
    registers_a = op.name == "dot_rs" and result.type.layout.version == 3
    a_columns = b_columns = False  # the operands' tiles in scratch written column-major (stage_operands)
    if op.name == "dot_shared":
        a_name, b_name = em.storage[a], em.storage[b]
        element = a.type.element
        a_pitch, b_pitch = pitch(a.type), pitch(b.type)
    elif registers_a:  # wgmma reads A from the registers the tile is held in
        a_name, b_name = None, em.storage[b]
        element = b.type.element
        a_pitch, b_pitch = 0, pitch(b.type)
        _check_register_a(em, op)
    else:
        # A's rows may be padded by whole 16-byte units (a_pad), which keeps ldmatrix's rows aligned.
        a_name, b_name, element, _, a_pitch, b_pitch, a_columns, b_columns = stage_operands(em, op)
        b_pitch = pitch(b.type) if isinstance(b.type, SharedType) else b_pitch  # dot_rs: B is a staged buffer
    if result.type.layout.version == 3:
        _check_wgmma_buffers(em, op, registers_a)
    elif any(isinstance(x.type, SharedType) and isinstance(x.type.layout, NvmmaShared) for x in (a, b)):
        raise em.error_at(op, "only a dot in a version-3 (wgmma) mma layout reads nvmma_shared buffers "
                              "(mma.sync reads padded_shared ones)")
    instr = INSTRUCTIONS.get(element)
    if instr is None:
        raise em.error_at(op, f"a dot of {element} operands cannot run on tensor cores (an mma layout "
                              f"needs f16, bf16, f32 or i8 operands)")
    if k % instr.k:
        raise em.error_at(op, f"a dot on tensor cores steps K by {instr.k} for {element} operands; "
                              f"K = {k} is not a multiple")
    # tf32x3: a * b ~ a_big * b_big + a_big * b_small + a_small * b_big
    split = element == F32 and op.attrs.get("input_precision") == "tf32x3"
    wm, wn = parent.warps_per_cta
    reps_m, reps_n = parent.reps(0), parent.reps(1)
    result_element = element_of(result.type)
    # f16 results (out_dtype=float16) accumulate in f32 registers over the
    # whole K and round once at the end, as the interpreter does.
    rounds_at_end = result_element == F16
    acc_type = "float" if rounds_at_end else c_element(result.type)
    final = storage
    if rounds_at_end:
        storage = f"{storage}_f32"
    kind = "wgmma" if result.type.layout.version == 3 else instr.ptx.split('.')[3]
    em.line(f"//{where.replace('  //', '')}: [{m}x{k}] x [{k}x{n}] on tensor cores "
            f"({kind}), {wm}x{wn} warps, {reps_m}x{reps_n} blocks of 16x8 per warp")
    carried = None if rounds_at_end else em.carried_in_place(op)
    if carried is not None:
        em.line(f"{acc_type} (&{storage})[{layout.slots}] = {carried};  // the carried accumulator, in place")
    else:
        em.line(f"{acc_type} {storage}[{layout.slots}];")
    if carried is None or not isinstance(acc, BlockArg):  # (in place: a function of the carried value, rewritten)
        init = em.open_loop(layout, op)
        if acc is not None:
            value = init.value(acc, init.coords())
            init.lines.append(f"{storage}[k] = {as_type(value, F32 if rounds_at_end else result_element)};")
        else:
            init.lines.append(f"{storage}[k] = 0;")
        em.close_loop(init, f"{op.name}: the accumulator")

    if result.type.layout.version == 3:
        if registers_a:
            _materialise_register_a(em, op)
        emit_wgmma_products(em, op, layout, storage, a_name, b_name)
    else:
        a_column_major, b_column_major = (columns or isinstance(x.type, SharedType) and x.type.layout.transposed
                                          for x, columns in ((a, a_columns), (b, b_columns)))
        if (a_column_major or b_column_major) and element not in (F16, BF16, F32):
            raise em.error_at(op, f"mma.sync reads a column-major operand of 16-bit or TF32 elements, "
                                  f"not of {element}")
        if a_column_major and not a_columns:
            a_pitch = pitch(transposed(a.type))
        if b_column_major and not b_columns:
            b_pitch = pitch(transposed(b.type))
        _emit_mma_sync_products(em, op, layout, storage, instr, (a_name, a_pitch), (b_name, b_pitch), split,
                                a_column_major, b_column_major)
    if rounds_at_end:
        em.line(f"{c_element(result.type)} {final}[{layout.slots}];")
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {layout.slots}; ++k) {final}[k] = {as_type(CValue(f'{storage}[k]', F32), F16)};")


def _check_wgmma_buffers(em: "EmitContext", op: Op, registers_a: bool) -> None:
    """wgmma reads its shared operands through descriptors: nvmma_shared
    buffers; a column-major A (M-major, ``imm-trans-a``) of 16-bit types only,
    and B of a TF32 dot column-major (tf32 operands are K-major only)."""
    a, b = op.operands[0], op.operands[1]
    if not all(isinstance(x.type, SharedType) and isinstance(x.type.layout, NvmmaShared)
               for x in ((b,) if registers_a else (a, b))):
        raise em.error_at(op, "a dot in a version-3 (wgmma) mma layout needs two shared buffers in "
                              "nvmma_shared layouts")
    if not registers_a and a.type.layout.transposed and a.type.element == F32:
        raise em.error_at(op, "a TF32 wgmma dot reads A K-major: its buffer needs order=[1, 0], not "
                              f"{a.type.layout.text()}")
    if b.type.element == F32 and not b.type.layout.transposed:
        raise em.error_at(op, "a TF32 wgmma dot reads B K-major: its buffer needs order=[0, 1], not "
                              f"{b.type.layout.text()}")


def _check_register_a(em: "EmitContext", op: Op) -> None:
    """A dot_rs on wgmma reads its A tile as the register fragment: the tile
    must be in a version-3 mma layout of the result's warps (the layouts
    stage puts it there) and of 16-bit elements."""
    a, result = op.operands[0], op.results[0]
    attr, wanted = a.type.layout, result.type.layout
    if not (isinstance(attr, Mma) and attr.version == 3 and tuple(attr.warps_per_cta) == tuple(wanted.warps_per_cta)):
        raise em.error_at(op, f"a dot_rs in a version-3 (wgmma) mma layout reads A in a version-3 mma layout "
                              f"with warps_per_cta={list(wanted.warps_per_cta)}, not {attr.text()}")
    if element_of(a.type) not in (F16, BF16) or not isinstance(op.operands[1].type.layout, NvmmaShared):
        raise em.error_at(op, "a dot_rs on wgmma needs an f16 or bf16 A tile and a B buffer in an nvmma_shared layout")


def _materialise_register_a(em: "EmitContext", op: Op) -> None:
    """``register_a_name``'s array: this thread's elements of the A tile, slot
    by slot (where it is a cast of the accumulator of another dot, the f32 ->
    f16 rounding of its registers: no data moves between threads)."""
    a = op.operands[0]
    values = register_a_name(em, op)
    loop = em.open_loop(em.layout_of(a), op)
    value = loop.value(a, loop.coords())
    loop.lines.append(f"{values}[k] = {as_type(value, element_of(a.type))};")
    em.close_loop(loop, "dot_rs: A's registers, the wgmma fragment",
                  [f"{c_element(a.type)} {values}[{loop.domain.slots}];"])


def _emit_mma_sync_products(em: "EmitContext", op: Op, layout: Layout, storage: str, instr: Instruction,
                            a_operand: tuple[str, int], b_operand: tuple[str, int], split: bool,
                            a_column_major: bool = False, b_column_major: bool = False) -> None:
    """The products of an mma.sync dot into ``storage``, K step by K step
    (``a_column_major``, ``b_column_major``: the operand's buffer holds its
    transpose row-major, and its pitch is that transpose's)."""
    (a_name, a_pitch), (b_name, b_pitch) = a_operand, b_operand
    parent: MmaLayout = layout.parent  # type: ignore[assignment]
    element = op.operands[0].type.element
    k = op.operands[0].type.shape[1]
    wm, wn = parent.warps_per_cta
    reps_m, reps_n = parent.reps(0), parent.reps(1)
    rows_dim, cols_dim = layout.dims
    tid = em.lang.thread_id
    em.out.open("{")
    em.line(f"const int lane = {tid} % 32;")
    em.line(f"const int warp_m = {tid} / 32 / {wn};" if wm > 1 else "const int warp_m = 0;")
    em.line(f"const int warp_n = {tid} / 32 % {wn};" if wn > 1 else "const int warp_n = 0;")
    row0 = block_row("rm", wm)

    def col0(rn: str) -> str:
        return block_col(rn, wn)

    def at(name: str, row_pitch: int, rc: tuple[str, str]) -> str:
        return f"{name}[({rc[0]}) * {row_pitch} + {rc[1]}]"

    # Each lane's reads start from its own element, worked out once: nvcc folds
    # the rest of each address (the block's and the K step's, constants once
    # unrolled) into the load's offset, not the lane's part.
    nbytes = element.nbytes
    a_ldmatrix = a_column_major and element != F32 or not a_column_major and instr.a_by_ldmatrix
    b_ldmatrix = b_column_major or instr.b_by_ldmatrix
    if a_column_major and element == F32:
        em.line(f"const float* const a_lane = &{a_name}[(lane % 4) * {a_pitch} + warp_m * 16 + lane / 4];")
    elif a_ldmatrix:
        first = a_ldmatrix_trans_address("warp_m * 16", "0") if a_column_major else \
            a_ldmatrix_address("warp_m * 16", "0", instr.k)
        em.line(f"const unsigned a_lane = (unsigned)__cvta_generic_to_shared(&{at(a_name, a_pitch, first)});")
    if b_ldmatrix:
        # B^T row-major: ldmatrix reads its K runs as they are (tf32: 4 to a matrix row); B
        # row-major: with .trans
        x4, x2, address_of = (LDMATRIX_X4, LDMATRIX_X2, partial(b_ldmatrix_address, half=instr.k // 2)) \
            if b_column_major else (LDMATRIX_X4_TRANS, LDMATRIX_X2_TRANS, b_ldmatrix_trans_address)
        pairs = reps_n // 2
        # x4 reads two blocks 8 * wn columns apart; x2 (an odd last block) one, lanes 0-15
        for name, step, wanted in (("b_lane", 8 * wn, pairs), ("b_lane_x2", 0, reps_n % 2)):
            if wanted:
                em.line(f"const unsigned {name} = (unsigned)__cvta_generic_to_shared("
                        f"&{at(b_name, b_pitch, address_of('warp_n * 8', step, '0'))});")

    def b_offset(rn: str) -> str:
        """Bytes from a lane's first B element to block ``rn``'s at step kk."""
        blocks = f"{rn} * {8 * wn}"
        elements = f"{blocks} * {b_pitch} + kk" if b_column_major else f"kk * {b_pitch} + {blocks}"
        return f"({elements}) * {nbytes}"

    em.line(em.lang.unroll)
    em.out.open(f"for (int kk = 0; kk < {k}; kk += {instr.k}) {{")
    em.line(f"unsigned a_frag[{reps_m}][4];")
    em.line(f"unsigned b_frag[{reps_n}][2];")
    if split:
        em.line(f"unsigned a_small[{reps_m}][4];")
        em.line(f"unsigned b_small[{reps_n}][2];")

    # A fragments
    em.line(em.lang.unroll)
    em.line(f"for (int rm = 0; rm < {reps_m}; ++rm) {{")
    if a_column_major and element == F32:  # A^T row-major, read element by element
        for reg in range(4):
            address = f"a_lane[(kk + {4 * (reg // 2)}) * {a_pitch} + rm * {16 * wm} + {8 * (reg % 2)}]"
            em.line(f"  {tf32(f'a_frag[rm][{reg}]', address, split and f'a_small[rm][{reg}]')}")
    elif a_ldmatrix:
        # A^T row-major: ldmatrix.trans gives the row-major fragment; A row-major: ldmatrix
        blocks = f"rm * {16 * wm}"
        elements = f"kk * {a_pitch} + {blocks}" if a_column_major else f"{blocks} * {a_pitch} + kk"
        em.line(f"  {ldmatrix(LDMATRIX_X4_TRANS if a_column_major else LDMATRIX_X4, [f'a_frag[rm][{i}]' for i in range(4)], f'a_lane + ({elements}) * {nbytes}')}")
        for reg in range(4) if split else ():
            em.line(f"  {tf32(f'a_frag[rm][{reg}]', f'__uint_as_float(a_frag[rm][{reg}])', f'a_small[rm][{reg}]')}")
    else:
        for reg in range(4):
            em.line(f"  {tf32(f'a_frag[rm][{reg}]', at(a_name, a_pitch, tf32_a(row0, 'kk', reg)), split and f'a_small[rm][{reg}]')}")
    em.line("}")
    # B fragments
    if b_ldmatrix:
        if pairs:
            em.line(em.lang.unroll)
            em.line(f"for (int rn = 0; rn < {2 * pairs}; rn += 2) {{")
            regs = ["b_frag[rn][0]", "b_frag[rn][1]", "b_frag[rn + 1][0]", "b_frag[rn + 1][1]"]
            em.line(f"  {ldmatrix(x4, regs, 'b_lane + ' + b_offset('rn'))}")
            em.line("}")
        if reps_n % 2:
            last = str(reps_n - 1)
            em.line(ldmatrix(x2, [f"b_frag[{last}][0]", f"b_frag[{last}][1]"], f"b_lane_x2 + {b_offset(last)}"))
        if split:  # tf32x3: the f32 values read, split into their TF32 rounding and the rest
            em.line(em.lang.unroll)
            em.line(f"for (int rn = 0; rn < {reps_n}; ++rn) {{")
            for reg in range(2):
                em.line(f"  {tf32(f'b_frag[rn][{reg}]', f'__uint_as_float(b_frag[rn][{reg}])', f'b_small[rn][{reg}]')}")
            em.line("}")
    else:
        em.line(em.lang.unroll)
        em.line(f"for (int rn = 0; rn < {reps_n}; ++rn) {{")
        for reg in range(2):
            if element == I8:
                quad = [f"(unsigned)(unsigned char){at(b_name, b_pitch, s8_b(col0('rn'), 'kk', reg, byte))}"
                        + (f" << {8 * byte}" if byte else "") for byte in range(4)]
                em.line(f"  b_frag[rn][{reg}] = {' | '.join(f'({q})' for q in quad)};")
            else:
                em.line(f"  {tf32(f'b_frag[rn][{reg}]', at(b_name, b_pitch, tf32_b(col0('rn'), 'kk', reg)), split and f'b_small[rn][{reg}]')}")
        em.line("}")
    # the products
    em.line(em.lang.unroll)
    em.line(f"for (int rm = 0; rm < {reps_m}; ++rm) {{")
    em.line(f"  {em.lang.unroll}")
    em.line(f"  for (int rn = 0; rn < {reps_n}; ++rn) {{")
    c = [f"{storage}[{layout.slot_of(dict(zip((rows_dim, cols_dim), accumulator_digits('rm', 'rn', reg))))}]"
         for reg in range(4)]
    if split:  # the small terms first, as Triton orders them
        em.line(f"    {mma_asm(instr, c, 'a_small[rm]', 'b_frag[rn]')}")
        em.line(f"    {mma_asm(instr, c, 'a_frag[rm]', 'b_small[rn]')}")
    em.line(f"    {mma_asm(instr, c, 'a_frag[rm]', 'b_frag[rn]')}")
    em.line("  }")
    em.line("}")
    em.out.close()
    em.out.close()


def ldmatrix(ptx: str, regs: list[str], address: str) -> str:
    """``ptx`` into ``regs`` from ``address``, a shared-space address (unsigned)."""
    outs = ", ".join(f"%{i}" for i in range(len(regs)))
    constraints = ", ".join(f'"=r"({r})' for r in regs)
    return f'asm volatile("{ptx} {{{outs}}}, [%{len(regs)}];\\n" : {constraints} : "r"({address}));'


def tf32(target: str, expr: str, small: str | bool = False) -> str:
    """Set ``target`` to the bits of f32 ``expr`` as a TF32 operand: the f32
    bits themselves, which the tensor cores read to 19 bits (as Triton gives
    them; a ``cvt.rna`` each is half the K loop's instructions, emulated on
    sm_90); with ``small`` (tf32x3), ``target`` rounded to TF32 (to nearest,
    ties away) and ``small`` the TF32 rounding of what remains (big + small
    carries about 21 of f32's 24 bits)."""
    if not small:
        return f"{target} = __float_as_uint({expr});"
    big = f'asm("{TF32_ROUND} %0, %1;\\n" : "=r"({target}) : "f"({expr}));'
    return (f"{{ const float x = {expr}; {big.replace(expr, 'x')} "
            f'asm("{TF32_ROUND} %0, %1;\\n" : "=r"({small}) : "f"(x - __uint_as_float({target}))); }}')


def mma_asm(instr: Instruction, c: list[str], a: str, b: str) -> str:
    d = ", ".join(f"%{i}" for i in range(4))
    a_ops = ", ".join(f"%{i}" for i in range(4, 8))
    b_ops = "%8, %9"
    outs = ", ".join(f'"+{instr.accumulator}"({x})' for x in c)
    ins = ", ".join([f'"r"({a}[{i}])' for i in range(4)] + [f'"r"({b}[{i}])' for i in range(2)])
    return f'asm volatile("{instr.ptx} {{{d}}}, {{{a_ops}}}, {{{b_ops}}}, {{{d}}};\\n" : {outs} : {ins});'
