"""Reductions on the GPU: ``sum``, ``max`` and ``min`` along an axis or all.

Three steps, each over what the previous one left:
1. each thread combines its own slots (copies of an element count once);
2. lanes of a warp that split the reduced dimension exchange partial results
   with warp shuffles (``__shfl_xor_sync`` in CUDA);
3. if warps split it too, each warp's partials meet in shared memory, and
   each warp combines them with shuffles, a partial a lane.
The result is left where the reduction's layout says (a slice of the input's
layout), so reading it back against the tile it came from is local.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_cast, c_element, c_scalar
from mytriton.backends.cuda.expressions import as_type, compute_type, reduce_combine, reduce_identity
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, Layout
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Op
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

@renders("reduce")
def render_reduction(em: "EmitContext", group: Group) -> None:
    emit_reduction(em, group.ops[0], group.domain)


def emit_reduction(em: "EmitContext", op: Op, domain: Layout) -> None:
    (x,) = op.operands
    result = op.results[0]
    axis = op.attrs.get("axis")
    axes = list(range(domain.rank)) if axis is None else [axis]
    reduced = [domain.dims[a] for a in axes]
    t = compute_type(element_of(result.type))
    ct = c_element(result.type) if not t.is_float else c_scalar(t)  # halves accumulate in float
    ct = {"bool": "int"}.get(ct, ct)
    out_layout = em.layout_of(result) if is_tile(result) else None
    out_slots = out_layout.slots if out_layout else 1
    parent = domain.parent
    acc = "r" + em.name(result)[1:]
    identity = reduce_identity(op.name, t)
    where = f"@{op.loc.line}:{op.loc.col}" if op.loc else ""
    em.line(f"// {op.name} {where} of {em.ssa_names.names[x]} along {'all axes' if axis is None else f'axis {axis}'}")
    em.line(f"{ct} {acc}[{out_slots}];")
    em.line(em.lang.unroll)
    em.line(f"for (int r = 0; r < {out_slots}; ++r) {acc}[r] = {identity};")

    # Where each warp's lanes hold the whole of every reduced dimension that
    # warps split (a small tile, its copies wrapping around each warp, as
    # Triton's), each warp counts its own copy and needs no other warp's.
    in_warp = type(parent) is BlockedLayout and all(
        parent.warp_holds_whole(p) for p in reduced if parent.warps_per_cta[p] > 1)

    # Where a warp's lanes wrap a reduced dimension, each aligned group of
    # its distinct lanes holds every element once: the group counts its own
    # copy and the shuffles stay within it.
    distinct = {p: _distinct_lanes(parent, p) for p in reduced
                if in_warp or parent.warps_per_cta[p] == 1}
    distinct = {p: n for p, n in distinct.items() if n is not None}

    # 1. this thread's slots
    loop = em.open_loop(domain, op)
    value = loop.value(x, loop.coords())
    out = out_layout.slot_of({p: loop.digits[p] for p in out_layout.slot_dims()}) if out_layout else "0"
    counted = []
    for a, p in zip(axes, reduced):
        if p in distinct:
            copy = _first_copy_in_thread(parent, p, loop.digits.get(p, "0"))
        elif in_warp and parent.warps_per_cta[p] > 1:
            copy = parent.first_copy_in_warp(p, loop.digits.get(p, "0"), em.lang.thread_id)
        elif domain.shape[a] > 1:
            copy = parent.first_copy(p, loop.digits[p], loop.positions[p])
        else:
            copy = f"{loop.positions[p]} == 0" if parent.threads_per_dim(p) > 1 else None
        if copy:
            counted.append(copy)
    update = f"{acc}[{out}] = {reduce_combine(op.name, t, f'{acc}[{out}]', as_type(value, t))};"
    loop.lines.append(f"if ({' && '.join(counted)}) {update}" if counted else update)
    em.close_loop(loop, f"{op.name}: this thread's slots")

    # 2. lanes
    for p in reduced:
        lanes, stride = distinct.get(p, parent.threads_per_warp[p]), parent.lane_stride(p)
        offset = lanes // 2
        while offset >= 1:
            em.line(em.lang.unroll)
            em.line(f"for (int r = 0; r < {out_slots}; ++r) {acc}[r] = "
                    + reduce_combine(op.name, t, f"{acc}[r]",
                                     em.lang.shuffle_xor(f"{acc}[r]", offset * stride)) + ";")
            offset //= 2

    # 3. warps
    warps = 1
    for p in reduced:
        warps *= parent.warps_per_cta[p]
    if warps > 1 and in_warp:
        em.line(f"// each warp's lanes hold the whole of the reduced dimension{'s' if len(reduced) > 1 else ''}: "
                "its total is already whole")
    elif warps > 1:
        positions = loop.positions
        tid, warp = em.lang.thread_id, em.lang.warp_size
        warp_index, radix = "0", 1
        lane_zero = []
        for p in reduced:
            count = parent.warps_per_cta[p]
            if count > 1:
                digit = f"(({tid} / {warp} / {parent.warp_stride(p)}) % {count})"
                warp_index = digit if warp_index == "0" else f"{warp_index} + {radix} * {digit}"
                radix *= count
            if parent.threads_per_warp[p] > 1:
                lane_zero.append(f"({tid} % {warp} / {parent.lane_stride(p)}) % {parent.threads_per_warp[p]} == 0")
        if out_layout:
            coords = out_layout.coordinates("r", positions)
            out_index = linear_index(coords, result.type.shape)
        else:
            out_index = "0"
        numel = result.type.numel if out_layout else 1
        em.need_shared(numel * warps * (8 if t.bits == 64 else 4), op)
        em.scratch_fence()
        em.line(f"{ct}* const {acc}_warps = reinterpret_cast<{ct}*>(smem);")
        store = f"{acc}_warps[({out_index}) * {warps} + {warp_index}] = {acc}[r];"
        em.line(em.lang.unroll)
        em.line(f"for (int r = 0; r < {out_slots}; ++r) "
                + (f"if ({' && '.join(lane_zero)}) {store}" if lane_zero else store))
        # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
        em.line(em.lang.barrier)
        em.line(em.lang.unroll)
        em.line(f"for (int r = 0; r < {out_slots}; ++r) {{")
        if out_layout is None or _groups_share_outputs(parent, reduced, warps):
            # Each lane reads one warp's partial and its group of lanes combines
            # them with shuffles (as Triton does): a thread reading every
            # partial held them all in registers (Liger's layer norm forward:
            # 54 registers, 48 so, Triton's).
            em.line(f"  {ct} total = {acc}_warps[({out_index}) * {warps} + {tid} % {warps}];")
            offset = warps // 2
            while offset >= 1:
                em.line("  total = " + reduce_combine(op.name, t, "total", em.lang.shuffle_xor("total", offset)) + ";")
                offset //= 2
        else:
            em.line(f"  {ct} total = {identity};")
            em.line(f"  for (int w = 0; w < {warps}; ++w) total = "
                    + reduce_combine(op.name, t, "total", f"{acc}_warps[({out_index}) * {warps} + w]") + ";")
        em.line(f"  {acc}[r] = total;")
        em.line("}")

    element = element_of(result.type)
    if out_layout:
        storage = em.storage[result]
        em.line(f"{c_element(result.type)} {storage}[{out_slots}];")
        em.line(em.lang.unroll)
        em.line(f"for (int r = 0; r < {out_slots}; ++r) {storage}[r] = {c_cast(f'{acc}[r]', t, element)};")
    else:
        em.line(f"const {c_element(result.type)} {em.name(result)} = {c_cast(f'{acc}[0]', t, element)};")


def _distinct_lanes(parent: Layout, d: int) -> int | None:
    """How many consecutive lanes along ``d`` hold distinct elements, where
    the warp's lanes wrap around ``d`` so that later lanes hold copies
    (fewer than the lanes along ``d``); None where every lane is distinct or
    the copies do not fall in aligned groups."""
    if type(parent) is not BlockedLayout:
        return None
    lanes, spt, n = parent.threads_per_warp[d], parent.size_per_thread[d], parent.shape[d]
    if lanes == 1 or not parent.warp_holds_whole(d):
        return None
    group = max(1, n // spt)
    if group >= lanes or group & (group - 1) or lanes % group or (spt > n and spt % n) or (spt <= n and n % spt):
        return None
    return group


def _first_copy_in_thread(parent: Layout, d: int, digit: str) -> str | None:
    """C condition true on the slot (of a thread's own copies along ``d``,
    where it holds more elements than ``d`` has) that counts the element."""
    spt, n = parent.size_per_thread[d], parent.shape[d]
    return f"({digit}) % {spt} < {n}" if spt > n and digit != "0" else None


def _groups_share_outputs(parent: Layout, reduced: list[int], warps: int) -> bool:
    """Whether each aligned group of ``warps`` consecutive lanes computes
    the same output elements: the lowest bits of the lane index all run
    along reduced dimensions, so the lanes of a group differ only there."""
    if type(parent) is not BlockedLayout:
        return False
    group = 1
    for d in parent.order:
        if parent.threads_per_warp[d] == 1:
            continue
        if d not in reduced:
            break
        group *= parent.threads_per_warp[d]
    return group >= warps
