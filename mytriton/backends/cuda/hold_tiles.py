"""hold-tiles: which tiles the CUDA back end keeps in a per-thread array,
and which it computes again in every statement that reads them.

Runs in the layouts stage, on laid-out SSA (statements run over layouts;
``statements.py`` groups them), before allocate-shared, whose measuring
run of the printer must render what this pass decided. A pure tile op
(arithmetic, a cast, a broadcast, ``arange``) costs nothing to recompute
where it is used, so it is not stored; a load must not be issued twice.
The pass writes ``hold=true`` on each op whose tile is held because of a
decision:

- a load read by a statement other than its own slot loop (directly or
  through pure ops): its loop also fills the array the others read;
- a pure tile value that a ``convert_layout`` moves and that takes fewer
  bytes than the held tiles it is computed from together (an epilogue's
  f32 -> f16 cast; ``acc + x * scale`` cast to bf16, from an f32
  accumulator and a bf16 tile): it is computed into registers just before
  the layout change, so that the value crosses shared memory, not its
  inputs;
- a running combination of reduction results (``sumsq += tl.sum(x * x, 1)``
  in a ``tl.static_range``, unrolled: each step's add reads the sums
  before it and the step's own): a pure elementwise tile op reading such
  a result, or such a combination, directly, and two or more of them in
  all, in its own block (``accumulations``). It is computed once into
  registers right after the last of them, so each step's result dies
  there; recomputed at its reader instead, every step's result lived to
  the end (mhc's forward: 64 sums of 8 floats a thread, spilled, and
  ptxas 110 s on them).
- an approximation (``exp``, ``log``, ``sqrt``...: a math function whose
  device result does not fold exactly) whose tile two or more statements
  of its own block read (softmax's ``e = tl.exp(x - m)``: the sum and the
  store): it is computed once into registers before the first, as
  Triton's SSA keeps it, instead of once a reader (each a range reduction
  and a MUFU instruction an element).

    %6 = load %4, %5, -inf : vector<1024 x f32, #blocked0> @10:9
    %74 = cast %67, dtype=f16 : block<128x128 x f16, #mma0> @92:9
  =>
    %6 = load %4, %5, -inf, hold=true : vector<1024 x f32, #blocked0> @10:9
    %74 = cast %67, dtype=f16, hold=true : block<128x128 x f16, #mma0> @92:9

Values that always have an array or a local get no attribute
(``statements.own_storage``): the results of reductions, scans, dots,
layout changes and atomics, and the values that loops, ifs and whiles
carry. Laid-out SSA without any ``hold`` (written by hand, or from before
this pass) is given its decisions by ``with_held_tiles`` before it is
rendered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mytriton.backends.cuda.shared_memory import element_bytes
from mytriton.backends.cuda.statements import Statements, own_storage, rule, statements
from mytriton.passes.manager import require_laid_out
from mytriton.ir import opdefs
from mytriton.ir.analysis import is_materialized, is_tile
from mytriton.ir.ssa import Block, Kernel, Op, OpResult, Value, is_combine, walk


@dataclass(frozen=True)
class HoldTilesPass:
    name: str = "hold-tiles"
    summary: str = ("keep in per-thread arrays the loads other statements read, narrow values before a layout "
                    "change and approximations two statements read")
    after_layouts: bool = True  # statements run over layouts: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        for op in walk(kernel.body):
            op.attrs.pop("hold", None)
        held = {value for value, _ in own_storage(kernel)}
        found = statements(kernel)
        for load in loads_read_elsewhere(kernel, found):
            load.attrs["hold"] = True
            held.add(load.results[0])
        for op in approximations_read_twice(kernel, found):
            op.attrs["hold"] = True
            held.add(op.results[0])
        accumulations(kernel, statement_results(kernel), held)
        # In program order, the printer's order: a value held before one
        # layout change is a held input of those after it.
        for op in walk(kernel.body):
            moved = op.operands[0] if op.name == "convert_layout" else None
            if isinstance(moved, OpResult) and narrower_than_its_inputs(moved, held):
                moved.op.attrs["hold"] = True
                held.add(moved)
        return kernel


def loads_read_elsewhere(kernel: Kernel, found: Statements) -> list[Op]:
    """The loads whose tile a statement other than their own reads (a
    ``yield`` or ``condition`` is always another: the value outlives the
    statement that loaded it)."""
    loads: dict[Op, None] = {}
    for op in walk(kernel.body):
        if op.name not in ("yield", "condition", "for", "if", "while") and op not in found.group_of:
            continue  # pure tile ops are read by the statements that use them
        where = found.group_of.get(op, id(op))
        for value in loads_reached(op):
            if found.group_of.get(value.op) != where:
                loads[value.op] = None
    return list(loads)


def statement_results(kernel: Kernel) -> set:
    """The tile results of reductions and scans (arrays of their own, each
    a statement's): what a running combination combines."""
    return {value for value, _ in own_storage(kernel)
            if isinstance(value, OpResult) and (rule(value.op) == "reduce" or is_combine(value.op))}


def accumulations(kernel: Kernel, results: set, held: set, decide: bool = True) -> list[Op]:
    """The pure elementwise tile ops that combine reduction results
    (``results``: reductions and scans) running along
    their block: each reads one of them or an earlier such op directly, and
    two or more in all (``combined_results``), all of its own block. Each is
    given ``hold`` (and joins ``results`` and ``held``), in program order;
    ``decide`` false: the ops that have it, as the printer finds them."""
    found = []
    blocks = [kernel.body] + [region for op in walk(kernel.body) for region in op.regions]
    for block in blocks:
        for op in block.ops:
            if rule(op) != "elementwise" or not op.results or not is_tile(op.results[0]) \
                    or is_materialized(op.results[0]) or is_approximation(op) \
                    or ("hold" in op.attrs) == decide:
                continue
            if not any(operand in results for operand in op.operands):
                continue
            combined = combined_results(op, results)
            if len(combined) >= 2 and all(value.op.parent is block for value in combined):
                if decide:
                    op.attrs["hold"] = True
                results.add(op.results[0])
                held.add(op.results[0])
                found.append(op)
    return found


def combined_results(op: Op, results) -> list[OpResult]:
    """The values of ``results`` that tile op ``op`` reads, directly or
    through pure tile ops (not past a load or a materialized tile)."""
    found, seen = [], set()
    work = [o for o in op.operands if is_tile(o)]
    while work:
        value = work.pop()
        if value in seen or not isinstance(value, OpResult):
            continue
        seen.add(value)
        if value in results:
            found.append(value)
        elif not is_materialized(value) and value.op.name != "load":
            work.extend(o for o in value.op.operands if is_tile(o))
    return found


def is_approximation(op: Op) -> bool:
    """A math function whose device result does not fold exactly (``exp``,
    ``log``, ``sqrt``...): computed by a sequence, not one exact instruction."""
    opdef = opdefs.lookup(op.name)
    return opdef is not None and opdef.math_function and not opdef.folds


def approximations_read_twice(kernel: Kernel, found: Statements) -> list[Op]:
    """The approximations (``is_approximation``) with a tile result that two
    or more statements of their own block read, directly or through pure
    tile ops; one read from a nested block (a loop's body) keeps the value
    computed where it is used."""
    block_of: dict[Op, Block] = {}
    blocks = [kernel.body] + [region for op in walk(kernel.body) for region in op.regions]
    for block in blocks:
        for op in block.ops:
            block_of[op] = block
    readers: dict[OpResult, dict[int, Block | None]] = {}
    for op in walk(kernel.body):
        if op.name not in ("yield", "condition", "for", "if", "while") and op not in found.group_of:
            continue
        where = found.group_of.get(op, id(op))
        for value in approximations_reached(op):
            readers.setdefault(value, {})[where] = block_of.get(op)
    return [value.op for value, groups in readers.items()
            if len(groups) >= 2 and all(block is block_of.get(value.op) for block in groups.values())]


def approximations_reached(op: Op, held: frozenset = frozenset()) -> list[OpResult]:
    """Tile approximations that ``op`` reads, directly or through pure tile
    ops, not looking past a value in ``held``."""
    return _tiles_reached(op, is_approximation, held)


def loads_reached(op: Op) -> list[OpResult]:
    """Loaded tiles that ``op`` reads, directly or through pure tile ops."""
    return _tiles_reached(op, lambda producer: producer.name == "load")


def _tiles_reached(op: Op, wanted: Callable[[Op], bool], held: frozenset = frozenset()) -> list[OpResult]:
    """The tiles ``op`` reads, directly or through pure tile ops (not past a
    load, a materialized tile or a value in ``held``), whose producer is ``wanted``."""
    found, seen = [], set()
    work = [o for o in (op.operands[3:] if op.name == "for" else op.operands) if is_tile(o)]
    while work:
        value = work.pop()
        if value in seen or not isinstance(value, OpResult) or value in held:
            continue
        seen.add(value)
        if wanted(value.op):
            found.append(value)
        if not is_materialized(value) and value.op.name != "load":
            work.extend(o for o in value.op.operands if is_tile(o))
    return found


def narrower_than_its_inputs(value: OpResult, held: set) -> bool:
    """Whether tile ``value``, not held yet, is computed from held tiles
    (or block arguments) that take more bytes together than it does."""
    if not is_tile(value) or value in held:
        return False
    inputs, work, seen = [], [value], set()
    while work:
        v = work.pop()
        if v in seen or not is_tile(v):
            continue
        seen.add(v)
        if v in held or not isinstance(v, OpResult):
            inputs.append(v)
        else:
            work.extend(v.op.operands)
    return bool(inputs) and sum(tile_bytes(v) for v in inputs) > tile_bytes(value)


def tile_bytes(value: Value) -> int:
    return element_bytes(value.type) * value.type.numel


def with_held_tiles(kernel: Kernel) -> Kernel:
    """``kernel`` with the pass's decisions: its own where any op carries
    ``hold`` (a kernel the pass held nothing in is decided again, to the
    same answer). SSA that is not laid out is left as it is, for the
    printer to refuse."""
    if not kernel.laid_out or any("hold" in op.attrs for op in walk(kernel.body)):
        return kernel
    return HoldTilesPass().apply(kernel)
