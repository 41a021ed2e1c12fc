"""combine-strategy: whether a ``reduce`` or ``scan`` with a combine region
runs by warp shuffles or through shared memory.

Runs in the layouts stage, on laid-out SSA (the choice reads the layouts).
Where the operands' layout is a blocked one whose axis (power-of-two
extents, sizes per thread, lanes and warps) lies along one parent
dimension, and the results keep the layout the shuffles leave them in
(``warp_scan.plan``), each thread combines its own slots, the lanes of a
warp combine by shuffles, and only the warps' totals cross shared memory:
``strategy="shuffle"``. Otherwise every element goes through shared memory
(``scans.py``): ``strategy="shared"``, and the pass cuts each row of the
axis (a whole-tile reduce: one row of every element) into as many chunks
as the threads allow, a power of two up to the row's length, one thread
combining each: ``chunks_per_row=C``.

    %5 = scan %4, axis=0, reverse=false : vector<256 x f32, #blocked0> @7:9 combine(...)
    %7 = reduce %3, axis=none : f32 @5:5 combine(...)
  =>
    %5 = scan %4, axis=0, reverse=false, strategy="shuffle" : vector<256 x f32, #blocked0> @7:9 combine(...)
    %7 = reduce %3, axis=none, strategy="shared", chunks_per_row=128 : f32 @5:5 combine(...)

Laid-out SSA without these decisions (written by hand, or from before this
pass) is given them by ``with_combine_strategies`` before it is rendered.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mytriton.backends.cuda.thread_coordinates import tile_layout
from mytriton.backends.cuda.warp_scan import plan
from mytriton.passes.manager import require_laid_out
from mytriton.ir.ssa import Kernel, Op, is_combine, walk


@dataclass(frozen=True)
class CombineStrategyPass:
    name: str = "combine-strategy"
    summary: str = "choose warp shuffles or shared memory for each reduce and scan with a combine region"
    after_layouts: bool = True  # it reads the layouts: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        for op in walk(kernel.body):
            if is_combine(op):
                tile = op.operands[0].type
                fast = plan(op, tile_layout(tile.layout, tile.shape))
                op.attrs["strategy"] = "shuffle" if fast is not None else "shared"
                op.attrs.pop("chunks_per_row", None)
                if fast is None:
                    op.attrs["chunks_per_row"] = chunks_per_row(op, 32 * kernel.num_warps)
        return kernel


def rows_of(op: Op) -> tuple[int, int]:
    """The rows a combine ``op`` runs along and their length: the elements
    along its axis for each position of the others (a whole-tile reduce,
    ``axis=none``: one row of all of them)."""
    shape = op.operands[0].type.shape
    numel = prod(shape)
    axis = op.attrs.get("axis")
    length = numel if axis is None else shape[axis]
    return numel // length, length


def chunks_per_row(op: Op, threads: int) -> int:
    """How many chunks each row of a combine through shared memory is cut
    into: the most, a power of two, that gives every chunk of every row its
    own of the ``threads`` and every chunk an element."""
    rows, length = rows_of(op)
    chunks = 1
    while chunks * 2 <= length and rows * chunks * 2 <= threads:
        chunks *= 2
    return chunks


def with_combine_strategies(kernel: Kernel) -> Kernel:
    """``kernel`` with every combine's strategy chosen (laid-out SSA written
    by hand, or from before this pass, has none), and, where no combine has
    its chunks decided (SSA from before the pass wrote them), each shared
    one's chunks; a kernel with some keeps them (the printer refuses a
    shared combine left without)."""
    combines = [op for op in walk(kernel.body) if is_combine(op)]
    if any("strategy" not in op.attrs for op in combines):
        return CombineStrategyPass().apply(kernel)
    if kernel.laid_out and not any("chunks_per_row" in op.attrs for op in combines):
        for op in combines:
            if op.attrs["strategy"] == "shared":
                op.attrs["chunks_per_row"] = chunks_per_row(op, 32 * kernel.num_warps)
    return kernel
