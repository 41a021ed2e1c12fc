"""``tl.dot`` on Hopper's warpgroup tensor cores: ``wgmma.mma_async``.

The layouts stage gives a dot of two f16/bf16 shared buffers a ``version=3``
mma layout and both buffers ``nvmma_shared`` layouts (``ir/layout_attributes.py``);
this module renders it. A warpgroup (4 consecutive warps, 128 threads)
issues ``wgmma.mma_async.m64nNk16``: 64 rows of the result from A's 64 rows
and B's N columns, both read by the tensor cores straight from shared memory
through 64-bit *matrix descriptors* (start address, leading and stride byte
offsets, swizzle mode; PTX ISA "Matrix Descriptor Format"):

- A, [M, K] K-major: rows of S bytes (its swizzle: 128, 64 or 32) swizzled;
  a k16 step starts 32 bytes further into the row, and 8-row groups are 8 S
  bytes apart (the stride byte offset). Columns beyond the first S bytes live
  in the next column block (``M * S`` bytes on), which a k16 step never
  straddles.
- B, [K, N] N-major (``imm-trans-b`` = 1): each column block of S bytes holds
  K rows of S bytes; 8-row groups along K are 8 S bytes apart (stride byte
  offset), the column blocks ``K * S`` bytes apart (leading byte offset),
  and a k16 step starts 16 rows (16 S bytes) further.
- B, [K, N] K-major (``imm-trans-b`` = 0; a column-major buffer,
  ``nvmma_shared<order=[0, 1]>``): addressed as A is, N taking M's place.
- A, [M, K] M-major (``imm-trans-a`` = 1, 16-bit types; a column-major
  buffer, from ``tl.trans`` of a [K, M] tile): addressed as an N-major B is,
  M taking N's place: column blocks of S bytes along M, K rows each, ``K *
  S`` bytes apart (leading byte offset); a warpgroup's 64 rows start at
  their column block, and a k16 step 16 rows (16 S bytes) further.

A ``dot_rs`` (attention's P @ V) reads A from registers instead: the tile is
held in a version-3 mma layout over [M, K] (``layouts.register_a_layout``),
whose slots for k16 step s are the A fragment of ``m64nNk16`` (PTX ISA,
wgmma "Register Fragments": (g, 2t..2t+1), (g+8, ..), (g, 2t+8..), (g+8, ..)
of the warp's 16 rows, ``a_register_slots``); each thread packs its own pairs
into four .b32 registers per k16 step, with no data exchanged.

The accumulator registers of an m64nN instruction are, warp by warp, the
m16n8 fragments of ``mma.sync`` side by side along N, so the ``version=3``
layout's slots are those of the version-2 layout with warps ``[W, 1]``
(register ``i`` of warp ``w``'s row block: n8 block ``i / 4``, element ``i % 4``).

Ordering: the tensor cores read the buffers through the async proxy; where
plain stores (the generic proxy: a synchronous copy, scratch overlaying the
buffers) may have written them since the last fence, a ``fence.proxy.async``
comes between the barrier that published them and the first wgmma (the
proxy-fences pass decides, ``proxy_fence``; cp.async's writes need none);
``wgmma.fence`` orders the accumulator registers' earlier
writes; the group is committed and waited for (``wait_group 0``) before the
accumulator is read or the buffers are overwritten: at once, or, for an
``in_flight`` dot, at its ``wgmma_wait``. No wait names the accumulator
registers: ptxas itself keeps every read of a register a wgmma writes after a
wait that completes it (where one comes first, it adds a ``warpgroup.wait``
there, note C7517), so the order never rests on NVVM's.
"""
from __future__ import annotations

import functools

from typing import TYPE_CHECKING, NamedTuple

from mytriton.backends.cuda.spelling import CUDA
from mytriton.ir.layout_attributes import Mma
from mytriton.ir.ssa import Op, walk
from mytriton.types import BF16, F16, F32

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext
    from mytriton.backends.cuda.thread_coordinates import Layout

WARPGROUP = 4  # warps that issue one wgmma together
# The thread's warpgroup, worked out once at the kernel's top through a warp
# shuffle (``warpgroup_index_line``), as Triton's warp id: ptxas then knows it
# is the same across a warp, and a descriptor built from it stays in uniform
# registers (from threadIdx.x directly, 4 R2UR moves a K iteration at
# 128x256x32 on 8 warps).
WARPGROUP_INDEX = "mytriton_warpgroup"

LAYOUT_TYPE = {128: 1, 64: 2, 32: 3}  # the descriptor's layout type of each swizzle
TYPES = {F16: "f16", BF16: "bf16", F32: "tf32"}  # f32 operands: a TF32 dot


def warpgroup_index_line(thread_id: str) -> str:
    return (f"const unsigned {WARPGROUP_INDEX} = __shfl_sync(0xffffffffu, {thread_id} / {32 * WARPGROUP}, 0);"
            "  // this thread's warpgroup, the same across its warp")


def descriptor(address: str, swizzle: int, leading: int, stride: int) -> str:
    """A C expression of the 64-bit matrix descriptor of the operand at the
    shared-memory byte ``address`` (a 32-bit shared-window address)."""
    fields = (LAYOUT_TYPE[swizzle] << 62) | ((stride >> 4) << 32) | ((leading >> 4) << 16)
    return f"(0x{fields:x}ull | (unsigned long long)((({address}) & 0x3FFFF) >> 4))"


def moved(desc: str, offset: int) -> str:
    """The descriptor ``desc`` moved ``offset`` bytes on (a multiple of 16):
    its start-address field is the address over 16, which stays below 2**14
    in the shared window (228 KiB), so that the sum never carries into the
    next field. A constant add, where a descriptor built again would be
    four instructions."""
    assert offset % 16 == 0, offset
    return f"{desc} + {offset >> 4}" if offset else desc


def instruction(element, n: int) -> str:
    t = TYPES[element]
    return f"wgmma.mma_async.sync.aligned.m64n{n}k{32 // element.nbytes}.f32.{t}.{t}"


class Product(NamedTuple):
    """One ``wgmma.mma_async`` of a dot: its accumulator registers (C
    expressions), A (a descriptor expression, or four .b32 register
    expressions where A is in registers), B's descriptor, and the
    immediates after scale-d."""
    accumulators: list[str]
    a: str | list[str]
    desc_b: str
    immediates: str


def immediates(trans_b: int | None, trans_a: int | None) -> str:
    """imm-scale-a, imm-scale-b, then the transposes where the form has
    them: ``trans_b`` None is the tf32 form, which has none (both operands
    K-major); ``trans_a`` None is A from registers, which has no imm-trans-a
    (K-major by definition)."""
    if trans_b is None:
        return "1, 1"
    return f"1, 1, {trans_b}" if trans_a is None else f"1, 1, {trans_a}, {trans_b}"


def products_asm(ptx: str, products: list[Product]) -> list[str]:
    """A dot's ``wgmma.mma_async`` instructions, in issue order, as one
    ``asm`` statement, an instruction a line. Each accumulator register is
    one operand ("+f") however many instructions write it, each descriptor
    and A register one input. NVVM's time grows with a statement's operands:
    a 128x128x64 matmul's eight statements of 64 accumulators each took it
    0.1 s more than one of 128 (NVRTC, 0.37 -> 0.28 s a build here), and
    ptxas, reading the same instructions in the same order, made the same
    SASS of it. ``setp`` makes scale-d a predicate (1: accumulate)."""
    outputs: dict[str, int] = {}
    for product in products:
        for register in product.accumulators:
            outputs.setdefault(register, len(outputs))
    inputs: dict[tuple[str, str], int] = {}

    def operand(constraint: str, expression: str) -> str:
        return f"%{len(outputs) + inputs.setdefault((constraint, expression), len(inputs))}"
    lines = []
    for product in products:
        d = ", ".join(f"%{outputs[register]}" for register in product.accumulators)
        a = operand("l", product.a) if isinstance(product.a, str) else \
            "{" + ", ".join(operand("r", register) for register in product.a) + "}"
        lines.append(f'"{ptx} {{{d}}}, {a}, {operand("l", product.desc_b)}, p, {product.immediates};\\n"')
    outs = ", ".join(f'"+f"({register})' for register in outputs)
    ins = ", ".join(f'"{constraint}"({expression})' for constraint, expression in inputs)
    return [f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{len(outputs) + len(inputs)}, 0;\\n"',
            *lines, f'"}}\\n" : {outs} : {ins}, "n"(1));']


# The bits of a 16-bit element, for packing two into an A register.
BITS = {F16: "__half_as_ushort", BF16: "__bfloat16_as_ushort"}


def a_register_slots(a_layout: "Layout", rm: int, kk: int) -> list[tuple[str, str]]:
    """The A tile's slots (low, high) packed into the four registers of
    k16 step ``kk`` for the warp's 16-row block ``rm``: the A fragment's
    (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..) are the m16n8
    accumulator registers (c0, c1), (c2, c3) of n8 blocks kk/8 and kk/8 + 1
    of a version-3 layout over [M, K] (``layouts.register_a_layout``)."""
    rows_dim, cols_dim = a_layout.dims
    pairs = []
    for block in (kk // 8, kk // 8 + 1):
        for half in (0, 1):  # rows g, then g + 8
            slots = [a_layout.slot_of({rows_dim: str(2 * rm + half), cols_dim: str(2 * block + column)})
                     for column in (0, 1)]
            pairs.append((slots[0], slots[1]))
    return pairs


def wait_asm(pending: int) -> str:
    """``wgmma.wait_group pending``. It names no accumulator register ("+f"):
    ptxas orders the reads of a wgmma's registers after the wait that
    completes them (C7517 above), and the 128 ties of a 128x128 tile took
    15 of NVVM's 89 ms on the descriptor matmul form. Over the 88 sm_90 kernels
    whose pending-0 wait named them (61 lit inputs, the 27 f16 and bf16 matmul
    forms), NVRTC took 7.6 % less without them; 80 gave the same SASS, 8 lit
    kernels were scheduled differently, and no build gained a ptxas note
    (C7514/C7515 serialisation, C7517/C7519 injection)."""
    return f'asm volatile("wgmma.wait_group.sync.aligned {pending};\\n" ::: "memory");'


def register_a_name(em: "EmitContext", op: Op) -> str:
    """The array holding a ``dot_rs``'s A elements for wgmma, one per dot:
    a loop body may hold two (attention's backward: dV from P and dK from dS)."""
    return f"{em.storage[op.results[0]]}_a"


def emit_wgmma_products(em: "EmitContext", op: Op, layout: "Layout", storage: str,
                        a_name: str, b_name: str) -> None:
    """The products of ``op`` into the accumulator array ``storage`` (already
    holding the initial values), for the version-3 ``layout``."""
    a, b = op.operands[0], op.operands[1]
    attr: Mma = op.results[0].type.layout
    m, k = a.type.shape
    n = b.type.shape[1]
    element = b.type.element
    num_warps = attr.warps_per_cta[0]
    instr_n, instr_k = attr.instr_shape[1], attr.instr_shape[2]
    registers_a = a_name is None  # dot_rs: A is a register tile (its values in register_a_name's array)
    a_row = 0 if registers_a else a.type.layout.swizzle  # bytes in a row of a column block
    b_row = b.type.layout.swizzle
    b_k_major = b.type.layout.transposed
    a_m_major = not registers_a and a.type.layout.transposed
    a_block, b_block = a_row // element.nbytes, b_row // element.nbytes  # its elements
    rows_dim, cols_dim = layout.dims
    reps_m = m // (16 * num_warps)  # the warpgroups' 64-row blocks each one computes
    groups = attr.warps_per_cta[1]  # warpgroups splitting N (WarpgroupSplitLayout): each its n_group columns
    n_group = n // groups
    # K-major: a k step never leaves its row; M-major: column blocks K rows apart, as an N-major B's
    a_leading, a_stride = (k * a_row, 8 * a_row) if a_m_major else (0, 8 * a_row)
    # N-major: column blocks K rows apart; K-major: as A
    b_leading, b_stride = (0, 8 * b_row) if b_k_major else (k * b_row, 8 * b_row)

    def b_offset(nb: int, kk: int) -> int:
        """Bytes from B's start to k16 step ``kk`` of the instruction's N block ``nb``."""
        if b_k_major:  # column blocks of S bytes along K, N rows each
            return (kk // b_block) * n * b_row + (kk % b_block) * element.nbytes + nb * instr_n * b_row
        return (nb * instr_n // b_block) * k * b_row + kk * b_row
    em.line(f"// wgmma: {reps_m} row block(s) of 64 per warpgroup x {n_group // instr_n} of m64n{instr_n}k{instr_k}, "
            f"{k // instr_k} k step(s){', A from registers' if registers_a else ''}"
            + (f", each of {groups} warpgroups {n_group} of the {n} columns" if groups > 1 else ""))
    with em.out.scope("{"):
        if registers_a:
            a_layout = em.layout_of(a)
            pack = BITS[element]
        else:
            em.line(f"const unsigned a_base = (unsigned)__cvta_generic_to_shared({a_name});")
        em.line(f"const unsigned b_base = (unsigned)__cvta_generic_to_shared({b_name});")
        b_start = "b_base"
        if groups > 1:  # this warpgroup's columns: K-major rows of B, or N-major column blocks
            per_group = n_group * b_row if b_k_major else n_group // b_block * k * b_row
            b_start = f"b_base + {WARPGROUP_INDEX} * {per_group}"
        if not registers_a:
            if em.threads <= 32 * WARPGROUP or groups > 1:  # a constant: the descriptors then stay in uniform registers
                em.line(f"const unsigned group_row = 0;  // {'every warpgroup: all rows' if groups > 1 else 'one warpgroup'}")
            else:
                em.line(f"const unsigned group_row = {WARPGROUP_INDEX} * 64;  // this warpgroup's first row")
        if op.attrs.get("proxy_fence", True):  # the proxy-fences pass's decision (absent: fence)
            em.line(f"{CUDA.proxy_fence}  // plain stores, to the tensor cores")
        # wgmma.fence names the accumulator registers ("+f") and any A registers
        # ("+r"), all written before it, so that nvcc keeps their writes above it
        # (the accumulator's zeros, attention's rescaled acc, the packed P): ptxas
        # then injects no warpgroup.arrive of its own before a wgmma (C7519).
        # Not where a dot is kept in flight (the overlap-wgmma pass): the fence
        # would then name registers an earlier group may still be writing.
        fenced = [] if any(x.attrs.get("in_flight") for x in walk(em.kernel.body)) else \
            [f'"+f"({storage}[{slot}])' for slot in range(layout.slots)]
        fragments: list[str] = []
        if registers_a:
            values = register_a_name(em, op)
            for kk in range(0, k, instr_k):
                for rm in range(reps_m):
                    packed = ", ".join(f"(unsigned){pack}({values}[{low}]) | ((unsigned){pack}({values}[{high}]) << 16)"
                                       for low, high in a_register_slots(a_layout, rm, kk))
                    em.line(f"unsigned a_frag_{kk // instr_k}_{rm}[4] = {{{packed}}};")
                    fragments += [f"a_frag_{kk // instr_k}_{rm}[{i}]" for i in range(4)]
        fenced += [f'"+r"({r})' for r in fragments]
        if fenced:
            em.line(f'asm volatile("wgmma.fence.sync.aligned;\\n" : {", ".join(fenced)} :: "memory");')
        else:
            em.line('asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')
        ptx = instruction(element, instr_n)
        # Each operand's descriptor once (its warpgroup's rows included); each
        # wgmma's, that one moved by a constant.
        em.line(f"const unsigned long long b_desc = {descriptor(b_start, b_row, b_leading, b_stride)};")
        if not registers_a:
            group = f"group_row / {a_block} * {k * a_row}" if a_m_major else f"group_row * {a_row}"
            em.line(f"const unsigned long long a_desc = {descriptor(f'a_base + {group}', a_row, a_leading, a_stride)};")
        @functools.lru_cache(maxsize=None)
        def accumulators_of(rm: int, nb: int) -> list[str]:
            """The accumulator slots of row block ``rm`` and N block ``nb``: the same at every k step."""
            slots = []
            for i in range(instr_n // 2):
                rn = nb * instr_n // 8 + i // 4
                reg = i % 4
                digits = {rows_dim: str(2 * rm + reg // 2), cols_dim: str(2 * rn + reg % 2)}
                slots.append(f"{storage}[{layout.slot_of(digits)}]")
            return slots

        products = []
        for kk in range(0, k, instr_k):
            for rm in range(reps_m):
                row0 = rm * 16 * num_warps
                a_operand: str | list[str]
                if registers_a:
                    a_operand = [f"a_frag_{kk // instr_k}_{rm}[{i}]" for i in range(4)]
                elif a_m_major:  # the column block of the warpgroup's first row, then k16 step kk's rows
                    # (the warpgroup's first row and row0 are multiples of 64, a column block's rows at most)
                    assert row0 % a_block == 0 and 64 % a_block == 0, (row0, a_block)
                    a_operand = moved("a_desc", row0 // a_block * k * a_row + kk * a_row)
                else:
                    a_column = (kk // a_block) * m * a_row + (kk % a_block) * element.nbytes
                    a_operand = moved("a_desc", a_column + row0 * a_row)
                for nb in range(n_group // instr_n):
                    accumulators = accumulators_of(rm, nb)
                    trans_b = None if element == F32 else 0 if b_k_major else 1
                    trans_a = None if registers_a else 1 if a_m_major else 0
                    products.append(Product(accumulators, a_operand, moved("b_desc", b_offset(nb, kk)),
                                            immediates(trans_b, trans_a)))
        for line in products_asm(ptx, products):
            em.line(line)
        in_flight = op.attrs.get("in_flight", 0)
        em.line('asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')
        if in_flight:
            em.line("// in flight: the wgmma_wait of this result completes it")
        else:
            em.line(wait_asm(0))
