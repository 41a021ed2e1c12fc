"""combine-strategy: whether a ``reduce`` or ``scan`` with a combine region
runs by warp shuffles or through shared memory.

Runs in the layouts stage, on laid-out SSA (the choice reads the layouts).
Where the operands' layout is a blocked one whose axis (power-of-two
extents, sizes per thread, lanes and warps) lies along one parent
dimension, and the results keep the layout the shuffles leave them in
(``warp_scan.plan``), each thread combines its own slots, the lanes of a
warp combine by shuffles, and only the warps' totals cross shared memory:
``strategy="shuffle"``. Otherwise every element goes through shared memory,
a chunk per thread (``scans.py``): ``strategy="shared"``.

    %5 = scan %4, axis=0, reverse=false : vector<256 x f32, #blocked0> @7:9 combine(...)
  =>
    %5 = scan %4, axis=0, reverse=false, strategy="shuffle" : vector<256 x f32, #blocked0> @7:9 combine(...)
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.thread_coordinates import tile_layout
from mytriton.backends.cuda.warp_scan import plan
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Kernel, is_combine, walk


@dataclass(frozen=True)
class CombineStrategyPass:
    name: str = "combine-strategy"
    summary: str = "choose warp shuffles or shared memory for each reduce and scan with a combine region"
    after_layouts: bool = True  # it reads the layouts: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        if not kernel.laid_out:
            raise CompileError(f"kernel '{kernel.name}' is not laid out: combine-strategy runs after the "
                               "layouts stage", kernel.loc)
        for op in walk(kernel.body):
            if is_combine(op):
                tile = op.operands[0].type
                fast = plan(op, tile_layout(tile.layout, tile.shape))
                op.attrs["strategy"] = "shuffle" if fast is not None else "shared"
        return kernel


def with_combine_strategies(kernel: Kernel) -> Kernel:
    """``kernel`` with every combine's strategy chosen (laid-out SSA written
    by hand, or from before this pass, has none)."""
    if any(is_combine(op) and "strategy" not in op.attrs for op in walk(kernel.body)):
        return CombineStrategyPass().apply(kernel)
    return kernel
