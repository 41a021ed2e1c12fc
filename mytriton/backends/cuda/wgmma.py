"""``tl.dot`` on Hopper's warpgroup tensor cores: ``wgmma.mma_async``.

The layouts stage gives a dot of two f16/bf16 shared buffers a ``version=3``
mma layout and both buffers ``nvmma_shared`` layouts (``ir/layouts.py``);
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

The accumulator registers of an m64nN instruction are, warp by warp, the
m16n8 fragments of ``mma.sync`` side by side along N, so the ``version=3``
layout's slots are those of the version-2 layout with warps ``[W, 1]``
(register ``i`` of warp ``w``'s row block: n8 block ``i / 4``, element ``i % 4``).

Ordering: the buffers were written by cp.async or plain stores (the generic
proxy) and the tensor cores read them through the async proxy, so a
``fence.proxy.async`` comes between the barrier that published them and the
first wgmma; ``wgmma.fence`` orders the accumulator registers' earlier
writes; the group is committed and waited for (``wait_group 0``) before the
accumulator is read or the buffers are overwritten: at once, or, for an
``in_flight`` dot, at its ``wgmma_wait``. Each wait names the accumulator
registers ("+f"), so that nvcc keeps every read of them after it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.ir.layouts import Mma
from mytriton.ir.ssa import Op
from mytriton.types import BF16, F16

if TYPE_CHECKING:
    from mytriton.backends.cuda.emitter import CudaEmitter
    from mytriton.backends.cuda.layout import Layout

WARPGROUP = 4  # warps that issue one wgmma together
LAYOUT_TYPE = {128: 1, 64: 2, 32: 3}  # the descriptor's layout type of each swizzle
TYPES = {F16: "f16", BF16: "bf16"}


def descriptor(address: str, swizzle: int, leading: int, stride: int) -> str:
    """A C expression of the 64-bit matrix descriptor of the operand at the
    shared-memory byte ``address`` (a 32-bit shared-window address)."""
    fields = (LAYOUT_TYPE[swizzle] << 62) | ((stride >> 4) << 32) | ((leading >> 4) << 16)
    return f"(0x{fields:x}ull | (unsigned long long)((({address}) & 0x3FFFF) >> 4))"


def instruction(element, n: int) -> str:
    t = TYPES[element]
    return f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t}"


def wgmma_asm(ptx: str, accumulators: list[str], desc_a: str, desc_b: str) -> str:
    count = len(accumulators)
    d = ", ".join(f"%{i}" for i in range(count))
    outs = ", ".join(f'"+f"({x})' for x in accumulators)
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n'
            f'{ptx} {{{d}}}, %{count}, %{count + 1}, p, 1, 1, 0, 1;\\n}}\\n" '
            f': {outs} : "l"({desc_a}), "l"({desc_b}), "n"(1));')


def wait_asm(pending: int, registers: list[str]) -> str:
    """``wgmma.wait_group pending`` naming the accumulator registers the
    waited-for groups write ("+f"): nvcc then cannot move a read of them
    above the wait (ptxas would otherwise serialise the wgmma pipeline)."""
    outs = ", ".join(f'"+f"({r})' for r in registers)
    return f'asm volatile("wgmma.wait_group.sync.aligned {pending};\\n" : {outs} :: "memory");'


def emit_wgmma_products(em: "CudaEmitter", op: Op, layout: "Layout", storage: str,
                        a_name: str, b_name: str) -> None:
    """The products of ``op`` into the accumulator array ``storage`` (already
    holding the initial values), for the version-3 ``layout``."""
    a, b = op.operands[0], op.operands[1]
    attr: Mma = op.results[0].type.layout
    m, k = a.type.shape
    n = b.type.shape[1]
    element = a.type.element
    num_warps = attr.warps_per_cta[0]
    instr_n, instr_k = attr.instr_shape[1], attr.instr_shape[2]
    a_row, b_row = a.type.layout.swizzle, b.type.layout.swizzle  # bytes in a row of a column block
    a_block, b_block = a_row // element.nbytes, b_row // element.nbytes  # its elements
    rows_dim, cols_dim = layout.dims
    reps_m = m // (16 * num_warps)  # the warpgroups' 64-row blocks each one computes
    a_leading, a_stride = 0, 8 * a_row  # K-major: a k step never leaves its row
    b_leading, b_stride = k * b_row, 8 * b_row  # N-major: column blocks K rows apart
    tid = em.lang.thread_id
    em.line(f"// wgmma: {reps_m} row block(s) of 64 per warpgroup x {n // instr_n} of m64n{instr_n}k{instr_k}, "
            f"{k // instr_k} k step(s)")
    em.line("{")
    em.depth += 1
    em.line(f"const unsigned a_base = (unsigned)__cvta_generic_to_shared({a_name});")
    em.line(f"const unsigned b_base = (unsigned)__cvta_generic_to_shared({b_name});")
    em.line(f"const unsigned group_row = {tid} / {32 * WARPGROUP} * 64;  // this warpgroup's first row")
    em.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");  // the copies, to the tensor cores')
    em.line('asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')
    ptx = instruction(element, instr_n)
    for kk in range(0, k, instr_k):
        a_column = (kk // a_block) * m * a_row + (kk % a_block) * element.nbytes
        for rm in range(reps_m):
            row0 = rm * 16 * num_warps
            a_address = f"a_base + {a_column} + (group_row + {row0}) * {a_row}"
            for nb in range(n // instr_n):
                b_address = f"b_base + {(nb * instr_n // b_block) * k * b_row + kk * b_row}"
                accumulators = []
                for i in range(instr_n // 2):
                    rn = nb * instr_n // 8 + i // 4
                    reg = i % 4
                    digits = {rows_dim: str(2 * rm + reg // 2), cols_dim: str(2 * rn + reg % 2)}
                    accumulators.append(f"{storage}[{layout.slot_of(digits)}]")
                em.line(wgmma_asm(ptx, accumulators, descriptor(a_address, a_row, a_leading, a_stride),
                                  descriptor(b_address, b_row, b_leading, b_stride)))
    in_flight = op.attrs.get("in_flight", 0)
    em.line('asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')
    if in_flight:
        em.line("// in flight: the wgmma_wait of this result completes it")
    else:
        em.line(wait_asm(0, [f"{storage}[{k}]" for k in range(layout.slots)]))
    em.depth -= 1
    em.line("}")
