"""The fast path of ``reduce`` and ``scan`` with a combine region: registers,
warp shuffles, and shared memory only across warps.

Taken when the operand's layout lets each thread hold a contiguous run of
the axis (in index order) and the threads that split the axis are ordered
along it: a blocked layout with one repetition along the axis, or one thread
along it. Then the elements of a row along the axis, in order, are: warp
``qw``'s lanes ``ql`` in order, each lane's slots in order. Every step below
combines an earlier block on the left of a later one, so a combine that is
associative but not commutative (a 2x2 matrix product, an affine recurrence)
is applied in the order the interpreter applies it. (Triton's own warp
reduce combines ``acc`` with ``__shfl_xor(acc)`` on every lane, which
assumes commutativity; mytriton's contract is associativity only, so the
butterfly below puts the lower lane's block on the left: two selects.)

``reduce``:
1. each thread combines its own slots along the axis, in order;
2. lanes that split the axis: a butterfly of ``__shfl_xor_sync`` with
   offsets 1, 2, 4, ... (ascending keeps the order: after offset ``o`` every
   lane holds the combine of its aligned block of ``2 o`` lanes);
3. warps that split it: lane 0 of each writes its warp's value to shared
   memory, and every thread combines the row's warp values in order.

``scan`` (inclusive; ``reverse`` flips the order: later elements come first):
1. each thread scans its own slots in order and keeps its total;
2. an inclusive scan of the lanes' totals with ``__shfl_up_sync`` (reverse:
   ``__shfl_down_sync``) in log2 rounds, each lane combining the total of
   the lane ``o`` before it on the left; then each lane takes the inclusive
   total of the lane before it: its exclusive prefix;
3. warps that split the axis: the last lane of each warp writes the warp's
   total to shared memory, and each thread combines the totals of the warps
   before its own (on the left of its lane's prefix);
4. each thread combines its prefix into its slots on the left.

A combine has no identity, so a lane with nothing before it (the first lane,
the first warp) keeps its values: validity is known per lane, and the
shuffles run on every lane (full mask) before the branch that uses them.

Copies (a layout larger than the tile along the axis: threads or slots
beyond the extent) compute with their effective position, the position
modulo the number of distinct ones, so they hold exactly what the thread
they copy holds; only one copy writes to shared memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.layout import BlockedLayout, Layout
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Op
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.emitter import CudaEmitter

# Element types a warp shuffle moves as they are; narrower ones travel as int.
_WIDENED = ("bool", "signed char", "short", "unsigned char", "unsigned short")


@dataclass(frozen=True)
class WarpPlan:
    """How the threads of ``domain`` split the axis (parent dimension ``dim``)."""

    domain: Layout
    axis: int
    dim: int
    per_thread: int  # distinct slots a thread holds along the axis, in index order
    slots_along: int  # slots a thread has along the axis (copies included)
    slot_stride: int  # the slot index's stride along the axis
    lanes: int  # distinct lanes along the axis (Lp)
    warps: int  # distinct warps along the axis (Wp)

    @property
    def rows(self) -> int:
        """Slots of a thread that are not along the axis (one per row it holds)."""
        return self.domain.slots // self.slots_along

    def slot(self, r: str, j: str) -> str:
        """The slot index of this thread's ``j``-th slot along the axis of its row ``r``."""
        if self.slots_along == 1:
            return r
        s, n = self.slot_stride, self.slots_along
        if s == 1:
            return f"({r}) * {n} + ({j})"
        return f"(({r}) / {s}) * {s * n} + ({j}) * {s} + ({r}) % {s}"

    def row_layout(self) -> Layout:
        return self.domain.drop(self.axis)


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def plan(em: "CudaEmitter", op: Op, domain: Layout) -> WarpPlan | None:
    """The fast path's plan for ``op`` over ``domain``, or None where the
    layouts do not allow it (the shared-memory path then handles it)."""
    axis = op.attrs.get("axis")
    if axis is None:
        if domain.rank != 1:
            return None  # row-major order over several dimensions: the general path
        axis = 0
    parent = domain.parent
    if type(parent) is not BlockedLayout:
        return None  # an mma accumulator interleaves lanes and slots along each dimension
    dim, extent = domain.dims[axis], domain.shape[axis]
    if extent <= 1 or parent.shape[dim] != extent:
        return None
    spt, lanes, warps = parent.size_per_thread[dim], parent.threads_per_warp[dim], parent.warps_per_cta[dim]
    if not all(_power_of_two(n) for n in (extent, spt, lanes, warps)):
        return None
    threads = lanes * warps
    if parent.reps(dim) > 1 and threads > 1:
        return None  # a thread's slots along the axis are not contiguous
    if parent.replicated(dim):
        per_thread, distinct = min(spt, extent), max(1, extent // spt)
    else:
        per_thread, distinct = parent.slots_per_dim(dim), threads
    eff_lanes = min(lanes, distinct)
    eff_warps = distinct // eff_lanes
    slot_dims = domain.slot_dims()
    stride = 1
    for d in slot_dims:
        if d == dim:
            break
        stride *= parent.slots_per_dim(d)
    result = WarpPlan(domain, axis, dim, per_thread, parent.slots_per_dim(dim) if dim in slot_dims else 1,
                      stride, eff_lanes, eff_warps)
    if result.per_thread > result.slots_along:
        return None
    for value in op.results:
        if op.name == "scan" and em.layout_of(value) != domain:
            return None
        if op.name == "reduce" and is_tile(value) and not _same_placement(em.layout_of(value), result.row_layout()):
            return None
    return result


def _same_placement(a: Layout, b: Layout) -> bool:
    """Whether tiles in ``a`` and ``b`` have each element on the same threads
    in the same slot (a slice layout's parent has extent 1 along the sliced
    dimension, so the layouts differ as objects where they agree here)."""
    if type(a.parent) is not type(b.parent) or a.dims != b.dims or a.shape != b.shape:
        return False
    if a.parent.placement != b.parent.placement:
        return False
    return all(a.parent.signature(d) == b.parent.signature(d) for d in a.spread_dims())


def shuffle(em: "CudaEmitter", kind: str, ct: str, value: str, amount: int) -> str:
    """``value`` (of C type ``ct``) from another lane: ``xor``, ``up`` or ``down`` by ``amount``."""
    spell = {"xor": em.lang.shuffle_xor, "up": em.lang.shuffle_up, "down": em.lang.shuffle_down}[kind]
    if ct in _WIDENED:
        return f"({ct}){spell(f'(int)({value})', amount)}"
    return spell(value, amount)


def emit_warp_combine(em: "CudaEmitter", op: Op, plan_: WarpPlan, held: list[str]) -> None:
    """The fast path, after step 0 of ``scans.emit_combine`` put the
    operands' elements of this thread in the arrays ``held`` (domain slots)."""
    from mytriton.backends.cuda.scans import combine_lines

    scan = op.name == "scan"
    reverse = scan and bool(op.attrs.get("reverse", False))
    parent = plan_.domain.parent
    dim = plan_.dim
    tag = em.name(op.results[0])[1:]
    elements = [c_element(element_of(x.type)) for x in op.operands]
    tid, warp = em.lang.thread_id, em.lang.warp_size
    lane_stride, lanes_here = parent.lane_stride(dim), parent.threads_per_warp[dim]
    warp_stride, warps_here = parent.warp_stride(dim), parent.warps_per_cta[dim]
    rows, per = plan_.rows, plan_.per_thread

    def line(text: str) -> None:
        em.line(text)

    def block(lines: list[str]) -> None:
        for text in lines:
            em.line(text)

    def each_row() -> None:
        line(em.lang.unroll)
        line(f"for (int r = 0; r < {rows}; ++r) {{")
        em.depth += 1

    def end() -> None:
        em.depth -= 1
        line("}")

    lane_pos = f"((({tid} % {warp}) / {lane_stride}) % {lanes_here})" if lanes_here > 1 else "0"
    warp_pos = f"((({tid} / {warp}) / {warp_stride}) % {warps_here})" if warps_here > 1 else "0"
    ql, qw = f"l{tag}", f"m{tag}"
    line(f"const int {ql} = {lane_pos} % {plan_.lanes};  // this lane's place along the axis (copies alike)")
    line(f"const int {qw} = {warp_pos} % {plan_.warps};  // this warp's place along the axis")

    # 1. each thread's own slots, in order (from the last when reverse)
    accs = [f"a{i}_{tag}" for i in range(len(elements))]
    outs = [em.storage[r] for r in op.results] if scan else None
    for ct, acc in zip(elements, accs):
        line(f"{ct} {acc}[{rows}];  // per row: " + ("this thread's total" if scan else "the combine so far"))
    if scan:
        for ct, out in zip(elements, outs):
            line(f"{ct} {out}[{plan_.domain.slots}];")
    line(f"// {op.name}: each thread's {per} slot(s) along the axis, in order")
    each_row()
    first, step_range = (f"{per - 1}", f"int j = {per - 2}; j >= 0; --j") if reverse else ("0", f"int j = 1; j < {per}; ++j")
    for acc, x in zip(accs, held):
        line(f"{acc}[r] = {x}[{plan_.slot('r', first)}];")
    if scan:
        for out, acc in zip(outs, accs):
            line(f"{out}[{plan_.slot('r', first)}] = {acc}[r];")
    if per > 1:
        line(em.lang.unroll)
        line(f"for ({step_range}) {{")
        em.depth += 1
        cur = [f"{acc}[r]" for acc in accs]
        block(combine_lines(em, op, cur, [f"{x}[{plan_.slot('r', 'j')}]" for x in held], cur))
        if scan:
            for out, acc in zip(outs, accs):
                line(f"{out}[{plan_.slot('r', 'j')}] = {acc}[r];")
        end()
    end()

    # 2. lanes
    prefix = [f"e{i}_{tag}" for i in range(len(elements))]
    has = f"h{tag}"
    spread = plan_.lanes * plan_.warps > 1  # threads split the axis: a scan has prefixes to add
    if scan and spread:
        for ct, p in zip(elements, prefix):
            line(f"{ct} {p}[{rows}];  // per row: the combine of everything before this thread's slots")
    if plan_.lanes > 1:
        line(f"// {op.name}: {plan_.lanes} lanes along the axis, by warp shuffles"
             + (" (a butterfly, the lower lanes' block on the left)" if not scan else ""))
        each_row()
        cur = [f"{acc}[r]" for acc in accs]
        o = 1
        while o < plan_.lanes:
            amount = o * lane_stride
            got = [f"u{i}_{o}_{tag}" for i in range(len(elements))]
            kind = ("down" if reverse else "up") if scan else "xor"
            for ct, g, acc in zip(elements, got, accs):  # every lane shuffles: the full mask
                line(f"const {ct} {g} = {shuffle(em, kind, ct, f'{acc}[r]', amount)};")
            if scan:
                line(f"if ({ql} < {plan_.lanes - o}) {{" if reverse else f"if ({ql} >= {o}) {{")
                em.depth += 1
                block(combine_lines(em, op, got, cur, cur))
                end()
            else:
                # Selects, not a branch per side: both halves of the warp run one combine.
                first = [f"f{i}_{o}_{tag}" for i in range(len(elements))]
                second = [f"z{i}_{o}_{tag}" for i in range(len(elements))]
                line(f"const bool f{o}_{tag} = ({ql} & {o}) == 0;  // this lane's block comes first")
                for ct, f, z, c, g in zip(elements, first, second, cur, got):
                    line(f"const {ct} {f} = f{o}_{tag} ? {c} : {g};")
                    line(f"const {ct} {z} = f{o}_{tag} ? {g} : {c};")
                block(combine_lines(em, op, first, second, cur))
            o *= 2
        if scan:
            for ct, p, acc in zip(elements, prefix, accs):
                line(f"{p}[r] = {shuffle(em, 'down' if reverse else 'up', ct, f'{acc}[r]', lane_stride)};")
        end()
    lane_has = (f"{ql} < {plan_.lanes - 1}" if reverse else f"{ql} > 0") if plan_.lanes > 1 else "false"
    if scan and spread:
        line(f"bool {has} = {lane_has};  // this lane has lanes before it")

    # 3. warps
    if plan_.warps > 1:
        emit_across_warps(em, op, plan_, accs, prefix if scan else None, has, reverse, lane_pos, warp_pos, tag)

    # 4. results
    if scan and (spread or per < plan_.slots_along):
        line(f"// {op.name}: the prefix of the lanes and warps before, on the left of each slot")
        each_row()
        if spread:
            line(f"if ({has}) {{")
            em.depth += 1
            line(em.lang.unroll)
            line(f"for (int j = 0; j < {per}; ++j) {{")
            em.depth += 1
            cells = [f"{out}[{plan_.slot('r', 'j')}]" for out in outs]
            block(combine_lines(em, op, [f"{p}[r]" for p in prefix], cells, cells))
            end()
            end()
        if per < plan_.slots_along:  # slots that copy others along the axis
            line(em.lang.unroll)
            line(f"for (int j = {per}; j < {plan_.slots_along}; ++j) {{")
            for out in outs:
                line(f"  {out}[{plan_.slot('r', 'j')}] = {out}[{plan_.slot('r', f'j % {per}')}];")
            line("}")
        end()
    if scan:
        return
    for i, result in enumerate(op.results):
        ct = c_element(result.type)
        if is_tile(result):
            storage = em.storage[result]
            line(f"{ct} {storage}[{rows}];")
            line(em.lang.unroll)
            line(f"for (int r = 0; r < {rows}; ++r) {storage}[r] = {accs[i]}[r];")
        else:
            line(f"const {ct} {em.name(result)} = {accs[i]}[0];")


def emit_across_warps(em: "CudaEmitter", op: Op, plan_: WarpPlan, accs: list[str], prefix: list[str] | None,
                      has: str, reverse: bool, lane_pos: str, warp_pos: str, tag: str) -> None:
    """Step 3: each warp's value per row through shared memory ([row][warp]),
    combined in order by every thread (a reduce: all of them; a scan: those
    of the warps before this one, on the left of the lanes' prefix)."""
    from mytriton.backends.cuda.scans import _aligned, combine_lines

    scan = prefix is not None
    parent = plan_.domain.parent
    dim, warps, rows = plan_.dim, plan_.warps, plan_.rows
    elements = [c_element(element_of(x.type)) for x in op.operands]
    row_layout = plan_.row_layout()
    positions = {d: f"{em.parent_name(parent)}_p{d}" for d in range(parent.rank)}
    row_index = linear_index(row_layout.coordinates("r", positions), row_layout.shape)
    distinct_rows = prod(row_layout.shape)
    # One writer per (row, warp): the warp's last lane along the axis (a reduce's lane 0,
    # a reverse scan's lane 0 hold the warp's value), not a copy warp, one copy of the row.
    writer_lane = 0 if (not scan or reverse) else plan_.lanes - 1
    terms = [f"{lane_pos} == {writer_lane}"]
    if warps < parent.warps_per_cta[dim]:
        terms.append(f"{warp_pos} < {warps}")
    digits = row_layout.digits("r")
    for d in range(parent.rank):
        if d == dim:
            continue
        if d in digits:
            term = parent.first_copy(d, digits[d], positions[d])
        elif parent.threads_per_dim(d) > 1:
            term = f"{positions[d]} == 0"
        else:
            term = None
        if term:
            terms.append(term)
    qw = f"m{tag}"
    arrays, offset = [], 0
    line = em.line
    line(f"// {op.name}: {warps} warps along the axis, through shared memory (one value per row and warp)")
    line(f"{em.lang.barrier}  // earlier readers of shared memory are done")
    for i, x in enumerate(op.operands):
        ct = elements[i]
        name = f"w{i}_{tag}"
        line(f"{ct}* const {name} = reinterpret_cast<{ct}*>(smem + {offset});")
        arrays.append(name)
        offset += _aligned(distinct_rows * warps * element_of(x.type).nbytes)
    em.need_shared(offset, op)
    line(em.lang.unroll)
    line(f"for (int r = 0; r < {plan_.rows}; ++r) {{")
    line(f"  if ({' && '.join(terms)}) {{")
    for name, acc in zip(arrays, accs):
        line(f"    {name}[({row_index}) * {warps} + {qw}] = {acc}[r];")
    line("  }")
    line("}")
    line(em.lang.barrier)
    line(em.lang.unroll)
    line(f"for (int r = 0; r < {rows}; ++r) {{")
    em.depth += 1
    line(f"const int at = ({row_index}) * {warps};")
    if not scan:
        for name, acc in zip(arrays, accs):
            line(f"{acc}[r] = {name}[at];")
        line(f"for (int w = 1; w < {warps}; ++w) {{")
        em.depth += 1
        cur = [f"{acc}[r]" for acc in accs]
        for text in combine_lines(em, op, cur, [f"{name}[at + w]" for name in arrays], cur):
            line(text)
        em.depth -= 1
        line("}")
    else:
        before = f"{qw} < {warps - 1}" if reverse else f"{qw} > 0"
        start = warps - 1 if reverse else 0
        loop = f"int w = {warps - 2}; w > {qw}; --w" if reverse else f"int w = 1; w < {qw}; ++w"
        line(f"if ({before}) {{  // the warps before this one, combined in order")
        em.depth += 1
        totals = [f"g{i}_{tag}" for i in range(len(arrays))]
        for ct, total, name in zip(elements, totals, arrays):
            line(f"{ct} {total} = {name}[at + {start}];")
        line(f"for ({loop}) {{")
        em.depth += 1
        for text in combine_lines(em, op, totals, [f"{name}[at + w]" for name in arrays], totals):
            line(text)
        em.depth -= 1
        line("}")
        cur = [f"{p}[r]" for p in prefix]
        line(f"if ({has}) {{")
        em.depth += 1
        for text in combine_lines(em, op, totals, cur, cur):
            line(text)
        em.depth -= 1
        line("} else {")
        for p, total in zip(prefix, totals):
            line(f"  {p}[r] = {total};")
        line("}")
        em.depth -= 1
        line("}")
    em.depth -= 1
    line("}")
    if scan:
        line(f"{has} = {has} || {qw} {'<' if reverse else '>'} {f'{warps - 1}' if reverse else '0'};")
    line(f"{em.lang.barrier}  // later users of shared memory wait for these reads")
