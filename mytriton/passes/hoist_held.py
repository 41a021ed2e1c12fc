"""hoist-held: compute a tile held in registers (a dot, a reduction) where its operands are
ready, when loads it does not read wait behind it.

    %x0 = load ...                          %x0 = load ...
    %p0 = load ...                          %p0 = load ...
    %x1 = load ...                   =>     %d0 = dot %x0, %p0, %acc
    %p1 = load ...                          %x1 = load ...
    %d0 = dot %x0, %p0, %acc                %p1 = load ...
    %d1 = dot %x1, %p1, %d0                 %d1 = dot %x1, %p1, %d0

The lowering computes an expression where a statement first needs it, and
anchors only loads and effects where the kernel wrote them: the dots and
sums of an unrolled ``tl.static_range`` accumulating into one tile (Liger's
mhc: 64 steps, each a dot into ``acc`` and a sum of squares of its x tile
into ``sumsq``) are first needed after the loop, so every tile they read is
loaded and held before the first of them (ptxas: 114 KB of spills).
Triton's frontend emits them in program order, where each tile dies after
its dot and its sum.

A materialised op (held in registers: a dot, a reduction) that is pure and
reads no memory moves up to just after the latest op of its block that
defines one of its operands (those pure themselves, as the accumulator's
``tl.zeros`` or ``x * x``, moving up first), and so does a pure op that
reads one (``sumsq += tl.sum(...)``'s add), but only where a load (an op
reading memory) it does not read lies between: elsewhere (a K loop's dot at
the end of its body, after pointer increments) it stays, since moving it
would only lengthen its result's life. A load of scalars neither makes it
move nor lets it pass: holding a scalar costs one register, and a
reduction's barriers before the load would hold its latency up. They are
visited in program order, so a chain of them moves up link by link.

The last pass of the default pipeline (``passes.DEFAULT_PIPELINE``), since
Liger's tests of the 39 kernels it changed passed on the H200 (issue 22).
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.ir import opdefs
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Block, Kernel, Op, OpResult, walk


def _is_held(op: Op) -> bool:
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.materialised and _pure(op)


def _pure(op: Op) -> bool:
    """Pure, reading no memory and holding no region: free to move up past anything."""
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.pure and not opdef.reads_memory and not opdef.allocates and not op.regions


def _producers(block: Block, op: Op) -> list[Op]:
    """The ops of ``block`` whose results ``op`` reads (each once)."""
    return list(dict.fromkeys(v.op for v in op.operands if isinstance(v, OpResult) and v.op.parent is block))


def _scalar_read(op: Op) -> bool:
    """A memory read of scalars (``tl.load(mean_ptr + row)``): one register held."""
    return opdefs.reads_memory(op.name) and bool(op.results) and not any(is_tile(r) for r in op.results)


def _hoist_in(block: Block) -> None:
    ops = block.ops
    index = {id(op): i for i, op in enumerate(ops)}
    readers = [0]  # readers[i]: how many ops before index i read tiles from memory
    floors = [-1]  # floors[i]: the index of the latest scalar read before index i
    for i, op in enumerate(ops):
        readers.append(readers[-1] + (opdefs.reads_memory(op.name) and not _scalar_read(op)))
        floors.append(i if _scalar_read(op) else floors[-1])
    floor: dict[int, Op] = {}
    # anchor: the latest op, by index, that an op's pure producers (and itself) must follow.
    anchor: dict[int, int] = {}
    held: set[int] = set()
    moved: set[int] = set()
    for i, op in enumerate(ops):
        producers = _producers(block, op)
        anchor[id(op)] = max((anchor[id(p)] if _pure(p) else index[id(p)] for p in producers), default=-1)
        if _is_held(op):
            held.add(id(op))
        # A held op, or a pure op folding one in (``sumsq += tl.sum(...)``'s add).
        if not (id(op) in held or _pure(op) and any(id(p) in held for p in producers)):
            continue
        start = anchor[id(op)]
        if readers[i] - readers[start + 1] == 0:
            continue  # no tile load waits between: it stays
        if id(op) in held and floors[i] > start:
            # Not above a scalar read: its barriers would hold the read's
            # latency up (Liger's layer norm backward: mean and rstd were
            # loaded after the first row sum's two barriers).
            floor[id(op)] = ops[floors[i]]
        work = [op]
        while work:  # it and the pure ops it needs that come after its anchor
            cone = work.pop()
            if id(cone) in moved or index[id(cone)] <= start:
                continue
            moved.add(id(cone))
            work.extend(p for p in _producers(block, cone) if _pure(p))
    if not moved:
        return
    # Each moved op just after its latest producer (in the new order), the others where they were.
    key: dict[int, tuple[int, int, int]] = {}
    for i, op in enumerate(ops):
        if id(op) in moved:
            after = _producers(block, op) + ([floor[id(op)]] if id(op) in floor else [])
            latest = max((key[id(p)] for p in after), default=(-1, 0, -1))
            key[id(op)] = (latest[0], latest[1] + 1, i)
        else:
            key[id(op)] = (i, 0, i)
    block.ops = sorted(ops, key=lambda op: key[id(op)])


@dataclass(frozen=True)
class HoistHeldPass:
    name: str = "hoist-held"
    summary: str = ("compute a dot or a reduction just after its operands when loads it does not read wait "
                    "behind it (an unrolled static_range's, lowered at their first use)")

    def apply(self, kernel: Kernel) -> Kernel:
        blocks = [kernel.body] + [region for op in walk(kernel.body) for region in op.regions]
        for block in blocks:
            _hoist_in(block)
        return kernel
