"""The fast path of ``reduce`` and ``scan`` with a combine region: registers,
warp shuffles, and shared memory only across warps.

Taken for blocked layouts (not the mma accumulator's, whose lanes and slots
interleave): along the axis, a thread holds ``size_per_thread`` contiguous
elements in each repetition of the layout (a *block*), and the threads that
split the axis are ordered along it. So the elements of a row along the
axis, in order, are: block by block, warp ``qw``'s lanes ``ql`` in order,
each lane's slots in order. The steps below run per row and block (a
*run*); the blocks' results are then combined in order. Every step below
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
   memory, and every thread combines the row's warp values in order;
4. blocks: every thread combines its row's block totals in order.

``scan`` (inclusive; ``reverse`` flips the order: later elements come first):
1. each thread scans its own slots in order and keeps its total;
2. an inclusive scan of the lanes' totals with ``__shfl_up_sync`` (reverse:
   ``__shfl_down_sync``) in log2 rounds, each lane combining the total of
   the lane ``o`` before it on the left; then each lane takes the inclusive
   total of the lane before it: its exclusive prefix;
3. warps that split the axis: the last lane of each warp writes the warp's
   total to shared memory, and each thread combines the totals of the warps
   before its own (on the left of its lane's prefix)
   (with several blocks, every thread also gets each block's total: from
   shared memory, or from the block's last lane by a shuffle);
4. blocks: each block's prefix gains the totals of the blocks before it;
5. each thread combines its prefix into its slots on the left.

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
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, Layout, tile_layout
from mytriton.backends.cuda.combine_region import combine_lines
from mytriton.backends.cuda.shared_memory import aligned
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Op
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

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
    blocks: int = 1  # repetitions of the layout along the axis, each a run of per_thread slots a thread holds

    @property
    def runs(self) -> int:
        """(row, block) pairs of a thread: each a run of ``per_thread`` slots along the axis."""
        return self.rows * self.blocks

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


def _layout_of(value) -> Layout:
    return tile_layout(value.type.layout, value.type.shape)


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def plan(op: Op, domain: Layout) -> WarpPlan | None:
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
    blocks = 1
    if parent.replicated(dim):
        per_thread, distinct = min(spt, extent), max(1, extent // spt)
    elif threads > 1:
        # Each repetition of the layout along the axis is a block the threads split in
        # order; the blocks' totals are combined in afterwards.
        per_thread, distinct, blocks = spt, threads, parent.reps(dim)
    else:
        per_thread, distinct = parent.slots_per_dim(dim), 1
    eff_lanes = min(lanes, distinct)
    eff_warps = distinct // eff_lanes
    slot_dims = domain.slot_dims()
    stride = 1
    for d in slot_dims:
        if d == dim:
            break
        stride *= parent.slots_per_dim(d)
    result = WarpPlan(domain, axis, dim, per_thread, parent.slots_per_dim(dim) if dim in slot_dims else 1,
                      stride, eff_lanes, eff_warps, blocks)
    if result.per_thread * result.blocks > result.slots_along:
        return None
    for value in op.results:
        if op.name == "scan" and _layout_of(value) != domain:
            return None
        if op.name == "reduce" and is_tile(value) and not _same_placement(_layout_of(value), result.row_layout()):
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


def shuffle(em: "EmitContext", kind: str, ct: str, value: str, amount: int) -> str:
    """``value`` (of C type ``ct``) from another lane: ``xor``, ``up`` or ``down`` by ``amount``."""
    spell = {"xor": em.lang.shuffle_xor, "up": em.lang.shuffle_up, "down": em.lang.shuffle_down}[kind]
    if ct in _WIDENED:
        return f"({ct}){spell(f'(int)({value})', amount)}"
    return spell(value, amount)


def emit_warp_combine(em: "EmitContext", op: Op, plan_: WarpPlan, held: list[str]) -> None:
    """The fast path, after step 0 of ``scans.emit_combine`` put the
    operands' elements of this thread in the arrays ``held`` (domain slots).

    A thread's slots along the axis form ``runs``: one per row it holds and
    block (repetition of the layout along the axis), run ``q`` being row
    ``q / blocks``, block ``q % blocks`` (loop variables take names that
    names.py keeps user names away from). Steps 1-3 treat each run apart
    (the threads split a block in order); then the blocks of a row are
    combined in order: a reduce's totals, a scan's block totals as prefixes."""
    scan = op.name == "scan"
    reverse = scan and bool(op.attrs.get("reverse", False))
    parent = plan_.domain.parent
    dim = plan_.dim
    tag = em.name(op.results[0])[1:]
    n = len(op.operands)
    elements = [c_element(element_of(x.type)) for x in op.operands]
    tid, warp = em.lang.thread_id, em.lang.warp_size
    lane_stride, lanes_here = parent.lane_stride(dim), parent.threads_per_warp[dim]
    warp_stride, warps_here = parent.warp_stride(dim), parent.warps_per_cta[dim]
    rows, per, blocks, runs, lanes = plan_.rows, plan_.per_thread, plan_.blocks, plan_.runs, plan_.lanes
    spread = lanes * plan_.warps > 1  # threads split the axis

    def line(text: str) -> None:
        em.line(text)

    def block(lines: list[str]) -> None:
        for text in lines:
            em.line(text)

    def open_(header: str) -> None:
        em.out.open(header)

    def end() -> None:
        em.out.close()

    def each_run() -> None:
        line(em.lang.unroll)
        open_(f"for (int q = 0; q < {runs}; ++q) {{")

    def at(u: str, j: str) -> str:
        """The slot of element ``j`` of run ``u``."""
        if blocks == 1:
            return plan_.slot(u, j)
        return plan_.slot(f"({u}) / {blocks}", f"({u}) % {blocks} * {per} + ({j})")

    def arrays(prefix: str, count: int, what: str) -> list[str]:
        names = [f"{prefix}{i}_{tag}" for i in range(n)]
        for ct, name in zip(elements, names):
            line(f"{ct} {name}[{count}];  // {what}")
        return names

    lane_pos = f"((({tid} % {warp}) / {lane_stride}) % {lanes_here})" if lanes_here > 1 else "0"
    warp_pos = f"((({tid} / {warp}) / {warp_stride}) % {warps_here})" if warps_here > 1 else "0"
    ql, qw = f"l{tag}", f"m{tag}"
    line(f"const int {ql} = {lane_pos} % {lanes};  // this lane's place along the axis (copies alike)")
    line(f"const int {qw} = {warp_pos} % {plan_.warps};  // this warp's place along the axis")

    # 1. each thread's runs, in order (from the last element when reverse)
    accs = arrays("a", runs, "per run: " + ("its inclusive total so far" if scan else "its combine so far"))
    outs = [em.storage[r] for r in op.results] if scan else []
    for ct, out in zip(elements, outs):
        line(f"{ct} {out}[{plan_.domain.slots}];")
    line(f"// {op.name}: each run of {per} slot(s) along the axis, in order")
    each_run()
    first = str(per - 1) if reverse else "0"
    for acc, x in zip(accs, held):
        line(f"{acc}[q] = {x}[{at('q', first)}];")
    for out, acc in zip(outs, accs):
        line(f"{out}[{at('q', first)}] = {acc}[q];")
    if per > 1:
        line(em.lang.unroll)
        open_(f"for (int j = {per - 2}; j >= 0; --j) {{" if reverse else f"for (int j = 1; j < {per}; ++j) {{")
        cur = [f"{acc}[q]" for acc in accs]
        block(combine_lines(em, op, cur, [f"{x}[{at('q', 'j')}]" for x in held], cur))
        for out, acc in zip(outs, accs):
            line(f"{out}[{at('q', 'j')}] = {acc}[q];")
        end()
    end()

    # A reduce over several blocks and lanes: its own steps 2-4 (fewer shuffles).
    scatter = not scan and lanes > 1 and blocks > 1

    # 2. lanes
    prefix = arrays("e", runs, "per run: the combine of what comes before it") if scan and spread else []
    if lanes > 1 and not scatter:
        line(f"// {op.name}: {lanes} lanes along the axis, by warp shuffles"
             + ("" if scan else " (a butterfly, the lower lanes' block on the left)"))
        each_run()
        cur = [f"{acc}[q]" for acc in accs]
        o = 1
        while o < lanes:
            amount = o * lane_stride
            got = [f"u{i}_{o}_{tag}" for i in range(n)]
            kind = ("down" if reverse else "up") if scan else "xor"
            for ct, g, acc in zip(elements, got, accs):  # every lane shuffles: the full mask
                line(f"const {ct} {g} = {shuffle(em, kind, ct, f'{acc}[q]', amount)};")
            if scan:
                open_(f"if ({ql} < {lanes - o}) {{" if reverse else f"if ({ql} >= {o}) {{")
                block(combine_lines(em, op, got, cur, cur))
                end()
            else:
                # Selects, not a branch per side: both halves of the warp run one combine.
                left = [f"f{i}_{o}_{tag}" for i in range(n)]
                right = [f"z{i}_{o}_{tag}" for i in range(n)]
                line(f"const bool f{o}_{tag} = ({ql} & {o}) == 0;  // this lane's block comes first")
                for ct, f, z, c, g in zip(elements, left, right, cur, got):
                    line(f"const {ct} {f} = f{o}_{tag} ? {c} : {g};")
                    line(f"const {ct} {z} = f{o}_{tag} ? {g} : {c};")
                block(combine_lines(em, op, left, right, cur))
            o *= 2
        for ct, p, acc in zip(elements, prefix, accs):
            line(f"{p}[q] = {shuffle(em, 'down' if reverse else 'up', ct, f'{acc}[q]', lane_stride)};")
        end()
    has = f"h{tag}"
    if scan and spread:
        lane_has = (f"{ql} < {lanes - 1}" if reverse else f"{ql} > 0") if lanes > 1 else "false"
        line(f"bool {has}[{runs}];  // per run: whether anything comes before it")
        line(em.lang.unroll)
        line(f"for (int q = 0; q < {runs}; ++q) {has}[q] = {lane_has};")

    # 3. warps (and a scan's block totals)
    totals = []
    if scan and blocks > 1:
        totals = arrays("g", runs, "per run: its block's total")
    if plan_.warps > 1 and not scatter:
        emit_across_warps(em, op, plan_, accs, prefix, totals, has, reverse, lane_pos, warp_pos, tag)
    elif totals:
        # One warp along the axis: the block's total is the inclusive total of its last lane.
        line(f"// {op.name}: each block's total, from its last lane")
        each_run()
        delta = f"{ql} * {lane_stride}" if reverse else f"({lanes - 1} - {ql}) * {lane_stride}"
        for ct, total, acc in zip(elements, totals, accs):
            line(f"{total}[q] = {shuffle(em, 'up' if reverse else 'down', ct, f'{acc}[q]', delta)};")
        end()

    # 4. the blocks of each row, in order
    if blocks > 1 and not scatter:
        order = (f"int kk = {blocks - 2}; kk >= 0; --kk", str(blocks - 1)) if reverse else (f"int kk = 1; kk < {blocks}; ++kk", "0")
        line(f"// {op.name}: the {blocks} blocks of each row, in order")
        line(em.lang.unroll)
        open_(f"for (int r = 0; r < {rows}; ++r) {{")
        source = totals if scan else accs
        running = [f"k{i}_{tag}" for i in range(n)]
        for ct, k, src in zip(elements, running, source):
            line(f"{ct} {k} = {src}[r * {blocks} + {order[1]}];")
        line(em.lang.unroll)
        open_(f"for ({order[0]}) {{")
        line(f"const int q = r * {blocks} + kk;")
        if scan:
            cur = [f"{p}[q]" for p in prefix]
            open_(f"if ({has}[q]) {{")
            block(combine_lines(em, op, running, cur, cur))
            end()
            open_("else {")
            for p, k in zip(prefix, running):
                line(f"{p}[q] = {k};")
            end()
            line(f"{has}[q] = true;")
        block(combine_lines(em, op, running, [f"{src}[q]" for src in source], running))
        end()
        if not scan:
            for acc, k in zip(accs, running):
                line(f"{acc}[r * {blocks}] = {k};  // the row's total")
        end()

    if scatter:
        emit_reduce_scatter(em, op, plan_, accs, lane_pos, warp_pos, tag)

    # 5. results
    if scan:
        copies = per * blocks < plan_.slots_along  # slots that copy others along the axis (blocks == 1)
        if spread or copies:
            line(f"// {op.name}: what comes before each run, on the left of its slots")
            each_run()
            if spread:
                open_(f"if ({has}[q]) {{")
                line(em.lang.unroll)
                open_(f"for (int j = 0; j < {per}; ++j) {{")
                cells = [f"{out}[{at('q', 'j')}]" for out in outs]
                block(combine_lines(em, op, [f"{p}[q]" for p in prefix], cells, cells))
                end()
                end()
            if copies:
                line(em.lang.unroll)
                open_(f"for (int j = {per}; j < {plan_.slots_along}; ++j) {{")
                for out in outs:
                    line(f"{out}[{at('q', 'j')}] = {out}[{at('q', f'j % {per}')}];")
                end()
            end()
        return
    for i, result in enumerate(op.results):
        ct = c_element(result.type)
        if is_tile(result):
            storage = em.storage[result]
            line(f"{ct} {storage}[{rows}];")
            line(em.lang.unroll)
            line(f"for (int r = 0; r < {rows}; ++r) {storage}[r] = {accs[i]}[r * {blocks}];")
        else:
            line(f"const {ct} {em.name(result)} = {accs[i]}[0];")


def emit_across_warps(em: "EmitContext", op: Op, plan_: WarpPlan, accs: list[str], prefix: list[str],
                      totals: list[str], has: str, reverse: bool, lane_pos: str, warp_pos: str, tag: str) -> None:
    """Step 3: each warp's value per run through shared memory ([row][block][warp]),
    combined in order by every thread: a reduce's all of them (into ``accs``);
    a scan's those of the warps before this one, on the left of the lanes'
    prefix, and where there are several blocks, all of them (the block's total)."""
    scan = op.name == "scan"
    dim, warps, blocks, runs = plan_.dim, plan_.warps, plan_.blocks, plan_.runs
    n = len(op.operands)
    elements = [c_element(element_of(x.type)) for x in op.operands]
    # One writer per (row, block, warp): the lane holding the warp's value (a reduce's
    # lane 0, a scan's last lane in its order), not a copy warp, one copy of the row.
    writer_lane = 0 if (not scan or reverse) else plan_.lanes - 1
    row_layout = plan_.row_layout()
    row_index, terms = _row_writers(em, plan_, dim, warps, warp_pos, f"{lane_pos} == {writer_lane}")
    qw = f"m{tag}"
    line = em.line
    line(f"// {op.name}: {warps} warps along the axis, through shared memory (one value per run and warp)")
    names = _exchange_arrays(em, op, elements, tag, prod(row_layout.shape) * blocks * warps)

    def run_header() -> None:
        line(em.lang.unroll)
        em.out.open(f"for (int q = 0; q < {runs}; ++q) {{")
        line(f"const int r = q / {blocks};")
        line(f"const int at = (({row_index}) * {blocks} + q % {blocks}) * {warps};")

    def end() -> None:
        em.out.close()

    def combine(left: list[str], right: list[str], out: list[str]) -> None:
        for text in combine_lines(em, op, left, right, out):
            line(text)

    run_header()
    line(f"if ({' && '.join(terms)}) {{")
    for name, acc in zip(names, accs):
        line(f"  {name}[at + {qw}] = {acc}[q];")
    line("}")
    end()
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    line(em.lang.barrier)
    run_header()
    if not scan:
        for name, acc in zip(names, accs):
            line(f"{acc}[q] = {name}[at];")
        em.out.open(f"for (int w = 1; w < {warps}; ++w) {{")
        cur = [f"{acc}[q]" for acc in accs]
        combine(cur, [f"{name}[at + w]" for name in names], cur)
        end()
    else:
        before = f"{qw} < {warps - 1}" if reverse else f"{qw} > 0"
        start = warps - 1 if reverse else 0
        loop = f"int w = {warps - 2}; w > {qw}; --w" if reverse else f"int w = 1; w < {qw}; ++w"
        em.out.open(f"if ({before}) {{  // the warps before this one, combined in order")
        got = [f"q{i}_{tag}" for i in range(n)]
        for ct, g, name in zip(elements, got, names):
            line(f"{ct} {g} = {name}[at + {start}];")
        em.out.open(f"for ({loop}) {{")
        combine(got, [f"{name}[at + w]" for name in names], got)
        end()
        cur = [f"{p}[q]" for p in prefix]
        em.out.open(f"if ({has}[q]) {{")
        combine(got, cur, cur)
        end()
        line("else {")
        for p, g in zip(prefix, got):
            line(f"  {p}[q] = {g};")
        line("}")
        line(f"{has}[q] = true;")
        end()
        if totals:  # the block's total: all its warps, in order
            for total, name in zip(totals, names):
                line(f"{total}[q] = {name}[at + {start}];")
            loop = f"int w = {warps - 2}; w >= 0; --w" if reverse else f"int w = 1; w < {warps}; ++w"
            em.out.open(f"for ({loop}) {{")
            cur = [f"{total}[q]" for total in totals]
            combine(cur, [f"{name}[at + w]" for name in names], cur)
            end()
    end()
    # No barrier after these reads: the next statement that writes scratch has one
    # before its write where the insert-barriers pass finds these reads pending.


def emit_reduce_scatter(em: "EmitContext", op: Op, plan_: WarpPlan, accs: list[str], lane_pos: str, warp_pos: str,
                        tag: str) -> None:
    """Steps 2-4 of a reduce whose rows have several blocks split by several
    lanes. A butterfly per block would take blocks x log2(lanes) shuffles;
    halving takes about blocks: in the round of offset ``o`` the two lanes
    of a pair hold the same ``S`` blocks; the lower lane keeps the first
    half, the upper the second, each sends the other half to its partner and
    combines what it keeps with what it gets (the lower lane's value on the
    left). After log2(min(blocks, lanes)) rounds a lane holds ``blocks >>
    rounds`` consecutive blocks, from ``start`` = sum of bit ``i`` of its
    place times ``blocks >> (i + 1)``; plain butterfly rounds finish the
    lanes left. The lanes' block values go to shared memory ([row][block]
    [warp], the order of the axis); the lanes of each row read them back a
    chunk each, combine it in order, and finish with an ordered butterfly."""
    parent = plan_.domain.parent
    dim, blocks, lanes, warps, rows = plan_.dim, plan_.blocks, plan_.lanes, plan_.warps, plan_.rows
    stride = parent.lane_stride(dim)
    n = len(op.operands)
    elements = [c_element(element_of(x.type)) for x in op.operands]
    ql, qw = f"l{tag}", f"m{tag}"
    line = em.line

    def combine(left: list[str], right: list[str], out: list[str]) -> None:
        for text in combine_lines(em, op, left, right, out):
            line(text)

    def exchange(o: int, keep: list[str], send: list[str], out: list[str]) -> None:
        """One pair exchange of round ``o``: ``send`` to the partner, ``keep``
        combined with what comes back, in lane order, into ``out``."""
        lo = f"f{o}_{tag}"
        got = [f"u{i}_{o}_{tag}" for i in range(n)]
        left = [f"x{i}_{o}_{tag}" for i in range(n)]
        right = [f"z{i}_{o}_{tag}" for i in range(n)]
        for ct, g, s_ in zip(elements, got, send):  # every lane shuffles: the full mask
            line(f"const {ct} {g} = {shuffle(em, 'xor', ct, s_, o * stride)};")
        for ct, x, z, k, g in zip(elements, left, right, keep, got):
            line(f"const {ct} {x} = {lo} ? {k} : {g};")
            line(f"const {ct} {z} = {lo} ? {g} : {k};")
        combine(left, right, out)

    def butterfly_round(o: int, values: list[str]) -> None:
        """A plain round: every lane keeps and sends all of ``values``."""
        em.out.open("{")
        exchange(o, values, values, values)
        em.out.close()

    rounds = min(blocks, lanes).bit_length() - 1
    held = blocks >> rounds  # blocks a lane holds after the halving rounds
    line(f"// {op.name}: {lanes} lanes along the axis over {blocks} blocks: {rounds} halving round(s), "
         f"then {(lanes >> rounds).bit_length() - 1} butterfly round(s), by warp shuffles")
    line(em.lang.unroll)
    em.out.open(f"for (int r = 0; r < {rows}; ++r) {{")
    size = blocks
    o = 1
    while o < lanes:
        line(f"const bool f{o}_{tag} = ({ql} & {o}) == 0;  // the lower lane of the pair")
        if size > 1:
            half = size // 2
            line(em.lang.unroll)
            em.out.open(f"for (int j = 0; j < {half}; ++j) {{")
            first = [f"{acc}[r * {blocks} + j]" for acc in accs]
            second = [f"{acc}[r * {blocks} + {half} + j]" for acc in accs]
            keep = [f"k{i}_{o}_{tag}" for i in range(n)]
            send = [f"s{i}_{o}_{tag}" for i in range(n)]
            for ct, k, s_, a, b in zip(elements, keep, send, first, second):
                line(f"const {ct} {k} = f{o}_{tag} ? {a} : {b};")
                line(f"const {ct} {s_} = f{o}_{tag} ? {b} : {a};")
            exchange(o, keep, send, first)
            em.out.close()
            size = half
        else:
            butterfly_round(o, [f"{acc}[r * {blocks}]" for acc in accs])
        o *= 2
    em.out.close()
    assert size == held

    # Shared memory: [row][block][warp]; the lanes of distinct places below 2^rounds write.
    row_layout = plan_.row_layout()
    row_index, terms = _row_writers(em, plan_, dim, warps, warp_pos, f"{lane_pos} < {1 << rounds}")
    start = " + ".join(f"(({ql} >> {i}) & 1) * {blocks >> (i + 1)}" for i in range(rounds)) or "0"
    names = _exchange_arrays(em, op, elements, tag, prod(row_layout.shape) * blocks * warps)
    line(f"const int b{tag} = {start};  // the first block this lane holds")
    line(em.lang.unroll)
    line(f"for (int r = 0; r < {rows}; ++r) {{")
    line(f"  if ({' && '.join(terms)}) {{")
    line(em.lang.unroll)
    line(f"    for (int j = 0; j < {held}; ++j) {{")
    for name, acc in zip(names, accs):
        line(f"      {name}[(({row_index}) * {blocks} + b{tag} + j) * {warps} + {qw}] = {acc}[r * {blocks} + j];")
    line("    }")
    line("  }")
    line("}")
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    line(em.lang.barrier)
    # The row's blocks x warps values, in order, split over its lanes: each combines a
    # chunk in order, then an ordered butterfly over the lanes (every thread would
    # otherwise run the whole chain).
    total = blocks * warps
    sharing = min(lanes, total)
    chunk = total // sharing
    line(f"// {op.name}: the {total} values of each row, {chunk} a lane, then a butterfly over {sharing} lanes")
    line(em.lang.unroll)
    em.out.open(f"for (int r = 0; r < {rows}; ++r) {{")
    place = ql if sharing == lanes else f"({ql} % {sharing})"
    line(f"const int at = ({row_index}) * {total} + {place} * {chunk};")
    cur = [f"{acc}[r * {blocks}]" for acc in accs]
    for name, c in zip(names, cur):
        line(f"{c} = {name}[at];")
    if chunk > 1:
        line(em.lang.unroll)
        em.out.open(f"for (int w = 1; w < {chunk}; ++w) {{")
        combine(cur, [f"{name}[at + w]" for name in names], cur)
        em.out.close()
    o = 1
    while o < sharing:
        line(f"const bool f{o}_{tag} = ({ql} & {o}) == 0;  // the lower lane of the pair")
        butterfly_round(o, cur)
        o *= 2
    em.out.close()
    # No barrier after these reads: the next statement that writes scratch has one
    # before its write where the insert-barriers pass finds these reads pending.


def _row_writers(em: "EmitContext", plan_, dim: int, warps: int, warp_pos: str, lane_term: str) -> tuple[str, list[str]]:
    """The row's index in the shared exchange and the conditions that pick
    its writers: ``lane_term``, a warp among the ``warps`` along ``dim``, and
    one copy of the row where the layout repeats it across threads."""
    parent = plan_.domain.parent
    row_layout = plan_.row_layout()
    positions = {d: f"{em.parent_name(parent)}_p{d}" for d in range(parent.rank)}
    row_index = linear_index(row_layout.coordinates("r", positions), row_layout.shape)
    terms = [lane_term]
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
    return row_index, terms


def _exchange_arrays(em: "EmitContext", op: Op, elements: list[str], tag: str, count: int) -> list[str]:
    """After a barrier, one shared array of ``count`` values per operand of
    ``op`` (C element types ``elements``), one after another from byte 0;
    their names."""
    em.scratch_fence()
    names, offset = [], 0
    for i, x in enumerate(op.operands):
        ct = elements[i]
        name = f"w{i}_{tag}"
        em.line(f"{ct}* const {name} = reinterpret_cast<{ct}*>(smem + {offset});")
        names.append(name)
        offset += aligned(count * element_of(x.type).nbytes)
    em.need_shared(offset, op)
    return names
