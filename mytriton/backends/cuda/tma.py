"""emit-cuda's TMA copies (tma-copies' ``engine="tma"``) and the copy groups
they complete on.

A copy is one ``cp.async.bulk.tensor.2d`` per box, issued by thread 0
through its tensor map (a ``__grid_constant__`` parameter the launcher
encodes, ``mytriton_tma_map<i>``). TMA completes a copy on an mbarrier, not
in cp.async's groups, so the kernel keeps a ring of ``ring_size`` mbarriers
at the end of its shared array and two counters, the groups committed and
waited for:

- a TMA copy adds its bytes to the expected count of the open group's
  mbarrier (``committed % R``) and issues its boxes against it;
- ``async_commit``: thread 0 arrives on that mbarrier (the group completes
  when its bytes have landed) and the open group moves on;
- ``async_wait pending=P``: every thread waits, oldest first, for the groups
  beyond the newest P, each on its mbarrier's phase ``(g / R) & 1``.

So the IR's groups mean what they mean for cp.async, and a kernel mixing
both kinds of copy waits for both. Where a launch's values give a map TMA
cannot take (a stride or bound not positive), the launcher runs the kernel
built with cp.async instead (``runtime/tensor_maps.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.dots import copy_operands, emit_async
from mytriton.backends.cuda.tma_copies import is_tma, map_base, ring_size, tensor_map_of
from mytriton.backends.cuda.copy_widths import is_async_copy
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.spelling import CUDA
from mytriton.types import BOOL, I32
from mytriton.ir.ssa import Kernel, Op, walk

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

MAP_TYPE = "mytriton_tensor_map"
MAP_STRUCT = f"struct __align__(64) {MAP_TYPE} {{ unsigned long long bits[16]; }};  // a CUtensorMap"
RING = "mytriton_tma_ring"
COMMITTED = "mytriton_tma_committed"
WAITED = "mytriton_tma_waited"
WAIT = "mytriton_tma_wait"
WAIT_HELPER = (
    f"static __device__ __forceinline__ void {WAIT}(unsigned bar, unsigned parity) {{ unsigned done; "
    'do { asm volatile("{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n'
    'selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory"); } while (!done); }')
BARRIER_BYTES = 8


def map_name(index: int) -> str:
    return f"mytriton_tma_map{index}"


def ring_of(kernel: Kernel) -> int:
    """The mbarriers a kernel's TMA copies complete on: 0 where it has none."""
    if not any(is_tma(op) and is_async_copy(op) for op in walk(kernel.body)):
        return 0  # (a TMA store waits for itself)
    # One more than the groups in flight: a thread that lags behind thread 0
    # between a wait and the barrier after it still finds its group's phase.
    return ring_size(kernel) + 1


def ring_bytes(kernel: Kernel) -> int:
    return BARRIER_BYTES * ring_of(kernel)


def has_cp_async(kernel: Kernel) -> bool:
    return any(is_async_copy(op) and not is_tma(op) for op in walk(kernel.body))


def params(maps: list) -> list[str]:
    """The C parameters after the kernel's own: its tensor maps."""
    return [f"const __grid_constant__ {MAP_TYPE} {map_name(i)}" for i in range(len(maps))]


def prologue(kernel: Kernel, ring: int) -> list[str]:
    """The ring's mbarriers, initialised before any copy, and the counters."""
    if not ring:
        return []
    offset = kernel.shared_memory.bytes - ring * BARRIER_BYTES
    return [
        f"const unsigned {RING} = (unsigned)__cvta_generic_to_shared(smem + {offset});  // {ring} mbarriers: "
        "the TMA copy groups in flight",
        f"unsigned {COMMITTED} = 0, {WAITED} = 0;  // TMA copy groups committed and waited for",
        "if (threadIdx.x == 0) {",
        f'  for (int s = 0; s < {ring}; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: '
        f'"r"({RING} + {BARRIER_BYTES} * s) : "memory");',
        '  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");',
        "}",
        "__syncthreads();",
    ]


def _open_barrier(ring: int) -> str:
    return f"{RING} + {BARRIER_BYTES} * ({COMMITTED} % {ring})"


def emit_pipelined(em: "EmitContext", op: Op) -> None:
    """One op of a pipelined loop (dots.emit_async's), TMA's copies and the
    groups of a kernel that has them taken here."""
    ring = em.tma_ring
    if op.name == "async_commit" and ring:
        emit_commit(em, em.where(op))
    elif op.name == "async_wait" and ring:
        emit_wait(em, op.attrs["pending"], em.where(op))
    elif is_tma(op):
        emit_tma_copy(em, op)
    else:
        emit_async(em, op)


def _cp_async_too(em: "EmitContext", line: str, where: str) -> str:
    """cp.async's ``line`` where the kernel also has copies cp.async makes;
    the ``where`` comment left for the next line."""
    if not has_cp_async(em.kernel):
        return where
    em.line(f"{line}{where}")
    return ""


def emit_commit(em: "EmitContext", where: str) -> None:
    """``async_commit`` in a kernel with TMA copies: thread 0 arrives on the open group's mbarrier."""
    where = _cp_async_too(em, CUDA.cp_async_commit, where)
    em.line(f'if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: '
            f'"r"({_open_barrier(em.tma_ring)}) : "memory");{where}')
    em.line(f"++{COMMITTED};  // the next TMA copies go to the next group")


def emit_wait(em: "EmitContext", pending: int, where: str) -> None:
    """``async_wait`` in a kernel with TMA copies: each older group's mbarrier, oldest first."""
    where = _cp_async_too(em, CUDA.cp_async_wait(pending), where)
    ring = em.tma_ring
    em.line(f"while ({COMMITTED} - {WAITED} > {pending}u) {{{where or '  // the TMA groups'}, "
            f"all but the newest {pending}, oldest first")
    em.line(f"  {WAIT}({RING} + {BARRIER_BYTES} * ({WAITED} % {ring}), {WAITED} / {ring} & 1u);")
    em.line(f"  ++{WAITED};")
    em.line("}")


def emit_tma_copy(em: "EmitContext", op: Op) -> None:
    """One TMA copy (the module's doc), where its predicate holds."""
    g, args = copy_operands(em, op)
    tile = g.view_type
    m = tensor_map_of(op)
    index = em.tensor_maps.index(m)
    rows, cols = tile.shape
    nbytes = tile.element.nbytes
    boxes = cols // m.box_cols
    box_bytes = m.box_cols * rows * nbytes
    dst = em.storage[g.view]
    pred = as_type(em.scalar_arg(op.operands[-1]), BOOL)
    where = em.where(op).replace(f"  // {op.name}", "")
    em.line(f"// {op.name}{where.replace('  //', '')}: the {rows}x{cols} tile of {em.scalar_ref(g.base)} at "
            f"({args['row_offset']}, {args['col_offset']}), TMA through map {index}, {boxes} box(es) of "
            f"{m.box_cols}x{rows}")
    em.line(f"if (({pred}) && threadIdx.x == 0) {{")
    em.line(f"  const unsigned bar = {_open_barrier(em.tma_ring)};")
    em.line(f"  const unsigned dst0 = (unsigned)__cvta_generic_to_shared({dst});")
    # The proxy fence orders the threads' earlier plain accesses to this buffer
    # (before the barrier that came first) ahead of TMA's writes into it, where
    # proxy-fences found some (absent: laid-out SSA from before that pass).
    fence = "fence.proxy.async.shared::cta;\\n" if op.attrs.get("proxy_fence", True) else ""
    em.line(f'  asm volatile("{fence}mbarrier.expect_tx.relaxed.cta.shared::cta.b64 '
            f'[%0], %1;" :: "r"(bar), "n"({box_bytes * boxes}) : "memory");')
    _, shift = map_base(g.base) or (None, None)
    col0 = args["col_offset"] if shift is None else f"{args['col_offset']} + {as_type(em.scalar_arg(shift), I32)}"
    for j in range(boxes):
        col = col0 if not j else f"{col0} + {j * m.box_cols}"
        em.line('  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes '
                f'[%0], [%1, {{%2, %3}}], [%4];" :: "r"(dst0 + {j * box_bytes}), "l"(&{map_name(index)}), '
                f'"r"({col}), "r"({args["row_offset"]}), "r"(bar) : "memory");')
    em.line("}")

