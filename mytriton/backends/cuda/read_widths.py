"""read-widths: how many elements each shared-memory read of a dot on CUDA
cores moves, of A and of B.

Runs in the layouts stage, on laid-out SSA (the widths read the dot's
layout and its buffers' padding), before allocate-shared, whose measuring
run of the printer renders what it decides. A dot whose result is not in
an ``mma`` layout is a loop of FMAs (``dots.py``): per step along K each
thread reads its rows' A values and its columns' B values from shared
memory. Where the products are exact (ieee) and of the result's own float
type, a read moves 16 bytes (4 f32, 2 f64) wherever it stays aligned
(``dots.fma_read_widths``): A along K where K and the row pitch (padding
included) are whole vectors, B along a thread's run of columns where the
run and B's row pitch are. The pass writes both widths on the dot, A's then
B's:

    %17 = dot_shared %0, %1, %16, input_precision="ieee", out_dtype=f32 : block<64x64 x f32, #blocked0> @24:16
  =>
    %17 = dot_shared %0, %1, %16, input_precision="ieee", out_dtype=f32, read_widths=(4, 4) : ... @24:16

``(1, 1)``: every value is read one at a time (f16 operands, TF32
rounding, a pitch or run that is no whole vector). A ``dot`` or ``dot_rs``
that stage-dots left in registers writes its operand tiles to scratch
first, A's rows padded by whole vectors or not at all (allocate-shared's
``a_pad``, decided after this pass): a pitch of K either way, for the widths. Dots on
tensor cores get no attribute.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.dots import fma_read_widths, pitch
from mytriton.backends.cuda.mma import is_mma
from mytriton.backends.cuda.thread_coordinates import tile_layout
from mytriton.passes.manager import require_laid_out
from mytriton.ir.ssa import Kernel, Op, walk
from mytriton.types import SharedType

ATTR = "read_widths"
DOTS = ("dot", "dot_shared", "dot_rs")


def is_fma_dot(op: Op) -> bool:
    """A dot the CUDA back end runs on CUDA cores: its result is in no mma layout."""
    if op.name not in DOTS:
        return False
    result = op.results[0].type
    return not is_mma(tile_layout(result.layout, result.shape))


@dataclass(frozen=True)
class ReadWidthsPass:
    name: str = "read-widths"
    summary: str = "give each dot on CUDA cores the width of its shared-memory reads of A and of B"
    after_layouts: bool = True  # it reads the layouts: the pass manager lets it take laid-out SSA

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        for op in walk(kernel.body):
            op.attrs.pop(ATTR, None)
            if is_fma_dot(op):
                op.attrs[ATTR] = read_widths(op)
        return kernel


def read_widths(op: Op) -> tuple[int, int]:
    """The widest reads of ``op``'s A and B: a buffer's rows are its pitch
    apart, a tile written to scratch has rows of K (A, padded by whole
    vectors or not at all) or of N (B)."""
    a, b, _ = op.operands
    a_pitch = pitch(a.type) if isinstance(a.type, SharedType) else a.type.shape[1]
    b_pitch = pitch(b.type) if isinstance(b.type, SharedType) else b.type.shape[1]
    return fma_read_widths(op, a_pitch, b_pitch)


def with_read_widths(kernel: Kernel) -> Kernel:
    """``kernel`` with its dots' read widths decided where no dot has any
    (laid-out SSA written by hand, or from before this pass); a kernel with
    some keeps them (the printer refuses a dot on CUDA cores left without)."""
    if not kernel.laid_out or any(ATTR in op.attrs for op in walk(kernel.body)):
        return kernel
    return ReadWidthsPass().apply(kernel)
