"""The tensor-core index math, checked without a GPU: every lane's ldmatrix
row addresses and plain fragment reads (the C expressions mma.py emits) are
evaluated lane by lane, ldmatrix is simulated as the PTX ISA describes it,
and each register must then hold the operand element the ISA's fragment
table puts there for the block the warp computes; the accumulator registers
must be the slots whose MmaLayout coordinates are the table's C positions.
"""
import ast
import operator

import pytest

from mytriton.backends.cuda import mma
from mytriton.backends.cuda.thread_coordinates import Layout, MmaLayout
from mytriton.ir.layout_attributes import Mma
from mytriton.types import BF16, F16, F32, I8

# ---- the PTX ISA's fragment tables (g = lane / 4, t = lane % 4) ----------------------------------


def a_table(element, reg, part, g, t):
    """(row, k) in the 16 x K instruction tile of part ``part`` (a 16-bit half
    or a byte) of A register ``reg``."""
    if element == F32:
        return g + 8 * (reg % 2), t + 4 * (reg // 2)
    if element == I8:
        return g + 8 * (reg % 2), 4 * t + part + 16 * (reg // 2)
    return g + 8 * (reg % 2), 2 * t + part + 8 * (reg // 2)


def b_table(element, reg, part, g, t):
    """(k, n) in the K x 8 instruction tile."""
    if element == F32:
        return t + 4 * reg, g
    if element == I8:
        return 4 * t + part + 16 * reg, g
    return 2 * t + part + 8 * reg, g


def c_table(reg, g, t):
    return g + 8 * (reg // 2), 2 * t + reg % 2


# ---- evaluating the emitted C index expressions -----------------------------------------------------


_C_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.floordiv, ast.Mod: operator.mod}


def c_eval(expr: str, **env) -> int:
    """A C integer expression of + - * / % on non-negative ints (our own
    emitted text), evaluated node by node (C's / on them is floor division)."""
    def value(node: ast.AST) -> int:
        if isinstance(node, ast.BinOp) and type(node.op) in _C_OPS:
            return _C_OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        raise AssertionError(f"not a C index expression: {expr}")

    return value(ast.parse(expr, mode="eval").body)


def ldmatrix(addresses, trans, element_bytes=2):
    """What each lane receives from ldmatrix: ``addresses[j][r]`` is the
    (row, col) of row ``r`` of matrix ``j``'s start (given by lane 8 j + r).
    A matrix row is 16 bytes; lane l gets, per matrix, the 4 bytes at byte
    4 (l % 4) of row l / 4 (two 16-bit elements, or four bytes); with .trans
    (16-bit only) the two elements of column l / 4 at rows 2 (l % 4) and + 1."""
    per_lane = 4 // element_bytes
    out = []
    for lane in range(32):
        regs = []
        for rows in addresses:
            if trans:
                i, j = lane // 4, 2 * (lane % 4)
                regs.append([(rows[j][0], rows[j][1] + i), (rows[j + 1][0], rows[j + 1][1] + i)])
            else:
                row, col = rows[lane // 4]
                regs.append([(row, col + per_lane * (lane % 4) + e) for e in range(per_lane)])
        out.append(regs)
    return out


def a_fragments(element, wm, rm, warp_m, kk):
    """Per lane, per register, the list of A buffer (row, col) it holds (the
    halves / bytes / single tf32 value in order)."""
    k_step = mma.INSTRUCTIONS[element].k
    row0 = mma.block_row("rm", wm)
    if element == F32:
        return [[[tuple(c_eval(e, lane=lane, rm=rm, warp_m=warp_m, kk=kk) for e in mma.tf32_a(row0, "kk", reg))]
                 for reg in range(4)] for lane in range(32)]
    row_e, col_e = mma.a_ldmatrix_address(row0, "kk", k_step)
    supplied = [(c_eval(row_e, lane=lane, rm=rm, warp_m=warp_m, kk=kk),
                 c_eval(col_e, lane=lane, rm=rm, warp_m=warp_m, kk=kk)) for lane in range(32)]
    return ldmatrix([supplied[8 * j: 8 * j + 8] for j in range(4)], trans=False, element_bytes=element.nbytes)


def b_fragments(element, wn, rn, warp_n, kk, pairs):
    col0 = mma.block_col("rn", wn)
    if element == F32:
        return [[[tuple(c_eval(e, lane=lane, rn=rn, warp_n=warp_n, kk=kk) for e in mma.tf32_b(col0, "kk", reg))]
                 for reg in range(2)] for lane in range(32)]
    if element == I8:
        return [[[tuple(c_eval(e, lane=lane, rn=rn, warp_n=warp_n, kk=kk) for e in mma.s8_b(col0, "kk", reg, byte))
                  for byte in range(4)] for reg in range(2)] for lane in range(32)]
    step = 8 * wn if pairs else 0
    row_e, col_e = mma.b_ldmatrix_trans_address(col0, step, "kk")
    supplied = [(c_eval(row_e, lane=lane, rn=rn, warp_n=warp_n, kk=kk),
                 c_eval(col_e, lane=lane, rn=rn, warp_n=warp_n, kk=kk)) for lane in range(32)]
    regs = ldmatrix([supplied[8 * j: 8 * j + 8] for j in range(4 if pairs else 2)], trans=True)
    if pairs:  # registers: block rn's two, then block rn + 1's two
        return [lane_regs[:2] for lane_regs in regs], [lane_regs[2:] for lane_regs in regs]
    return [lane_regs[:2] for lane_regs in regs]


ELEMENTS = [F16, BF16, F32, I8]


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (2, 4)])
def test_operand_fragments_hold_the_elements_the_isa_tables_name(element, warps):
    wm, wn = warps
    k_step = mma.INSTRUCTIONS[element].k
    for warp_m in range(wm):
        for rm in range(2):
            kk = k_step  # the second K step
            frags = a_fragments(element, wm, rm, warp_m, kk)
            row_base = warp_m * 16 + rm * 16 * wm
            for lane in range(32):
                g, t = lane // 4, lane % 4
                for reg in range(4):
                    for part, got in enumerate(frags[lane][reg]):
                        i, k = a_table(element, reg, part, g, t)
                        assert got == (row_base + i, kk + k), (lane, reg, part)
    for warp_n in range(wn):
        for rn in (0, 2):
            kk = k_step
            frags = b_fragments(element, wn, rn, warp_n, kk, pairs=element in (F16, BF16))
            blocks = [(rn, frags[0]), (rn + 1, frags[1])] if element in (F16, BF16) else [(rn, frags)]
            for block, fr in blocks:
                col_base = warp_n * 8 + block * 8 * wn
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    for reg in range(2):
                        for part, got in enumerate(fr[lane][reg]):
                            k, j = b_table(element, reg, part, g, t)
                            assert got == (kk + k, col_base + j), (block, lane, reg, part)


@pytest.mark.parametrize("element", [F16, BF16])
def test_a_last_odd_b_block_loads_with_ldmatrix_x2(element):
    frags = b_fragments(element, 2, 3, 1, 16, pairs=False)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for reg in range(2):
            for part, got in enumerate(frags[lane][reg]):
                k, j = b_table(element, reg, part, g, t)
                assert got == (16 + k, 8 + 3 * 16 + j)


@pytest.mark.parametrize("warps,shape", [((1, 1), (16, 8)), ((2, 2), (64, 64)), ((4, 2), (128, 32)),
                                         ((1, 8), (16, 128)), ((8, 1), (256, 16))])
def test_accumulator_registers_are_the_slots_at_the_isa_positions(warps, shape):
    """Slot digits (2 rm + reg / 2, 2 rn + reg % 2) of the MmaLayout sit at
    the C fragment's (g + 8 (reg / 2), 2 t + reg % 2) of block (rm, rn), and
    every element of the tile is held by exactly one thread."""
    wm, wn = warps
    layout = Layout.of(MmaLayout.of(Mma(2, warps), shape))
    parent = layout.parent
    seen = set()
    for tid in range(32 * wm * wn):
        lane, warp = tid % 32, tid // 32
        warp_m, warp_n = warp // wn, warp % wn
        positions = {d: c_eval(parent.thread_position(d, "tid"), tid=tid) for d in range(2)}
        for rm in range(parent.reps(0)):
            for rn in range(parent.reps(1)):
                for reg in range(4):
                    digits = mma.accumulator_digits(str(rm), str(rn), reg)
                    slot = c_eval(layout.slot_of(dict(zip((0, 1), digits))))
                    k_digits = layout.digits("k")
                    row = c_eval(parent.coordinate(0, k_digits[0], "p"), k=slot, p=positions[0])
                    col = c_eval(parent.coordinate(1, k_digits[1], "p"), k=slot, p=positions[1])
                    i, j = c_table(reg, lane // 4, lane % 4)
                    assert (row, col) == (c_eval(mma.block_row(str(rm), wm), warp_m=warp_m) + i,
                                          c_eval(mma.block_col(str(rn), wn), warp_n=warp_n) + j)
                    assert (row, col) not in seen
                    seen.add((row, col))
    assert len(seen) == shape[0] * shape[1]
    assert layout.slots == 4 * parent.reps(0) * parent.reps(1)
