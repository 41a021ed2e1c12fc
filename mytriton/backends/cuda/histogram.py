"""``histogram`` on the GPU (tl.histogram): counts in shared memory.

Four steps:
1. each thread finds the bin of each of its slots of the input, or -1 where
   the element is not counted: a copy of an element on a spare thread (the
   layout replicates it: only its owner counts it), a masked-off element, or
   a value outside 0 .. num_bins - 1;
2. the program zeroes an int array of num_bins in shared memory;
3. each thread adds its bins with shared-memory ``atomicAdd``;
4. each thread reads its slots of the result (in the result's own layout).
Barriers separate the steps (and the first write from earlier readers of
shared memory). The bin array is scratch: ``need_shared`` counts it against
the budget, at the histogram's line.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.renderers import Group, renders_op
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.ssa import Op
from mytriton.types import BOOL, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

# What the emitted code calls (a parameter of that name would hide it: names.py renames it).
HISTOGRAM_CALLED = frozenset(["atomicAdd", "reinterpret_cast"])


@renders_op("histogram")  # a layout change of its own: counts, not elements, move
def render_histogram(em: "EmitContext", group: Group) -> None:
    emit_histogram(em, group.ops[0])


def emit_histogram(em: "EmitContext", op: Op) -> None:
    x, mask = op.operands
    result = op.results[0]
    num_bins = op.attrs["num_bins"]
    storage = em.storage[result]
    name = em.name(result)[1:]
    where = f" @{op.loc.line}:{op.loc.col}" if op.loc else ""
    domain = em.layout_of(x)
    out_layout = em.layout_of(result)

    # 1. this thread's bins, -1 where not counted
    bin_of = f"h{name}_bin"  # the shapes of the emitter's locals (names.py keeps user names apart)
    loop = em.open_loop(domain, op)
    coords = loop.coords()
    value = as_type(loop.value(x, coords), element_of(x.type))
    # As a 64-bit integer an i32 and a u32 alike keep their order against the bins.
    conditions = [c for c in (loop.owner(), as_type(loop.value(mask, coords), BOOL) if mask is not None else None)
                  if c]
    loop.lines.append(f"const long long h{name}_v = (long long)({value});")
    conditions.append(f"h{name}_v >= 0 && h{name}_v < {num_bins}")
    loop.lines.append(f"{bin_of}[k] = ({' && '.join(conditions)}) ? (int)h{name}_v : -1;")
    em.close_loop(loop, f"histogram{where}: the bin of each of this thread's elements (-1: not counted)",
                  [f"int {bin_of}[{domain.slots}];"])

    # 2.-4. the counts, through shared memory
    out_loop = em.open_loop(out_layout, op)
    em.line(f"int {storage}[{out_layout.slots}];")
    with em.out.scope(f"{{  // histogram{where}: {num_bins} bins in shared memory"):
        bins = f"h{name}_counts"
        tid = em.lang.thread_id
        em.scratch_fence()
        em.line(f"int* const {bins} = reinterpret_cast<int*>(smem);")
        em.line(f"for (int k = {tid}; k < {num_bins}; k += {em.threads}) {bins}[k] = 0;")
        # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
        em.line(em.lang.barrier)
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {domain.slots}; ++k) if ({bin_of}[k] >= 0) atomicAdd(&{bins}[{bin_of}[k]], 1);")
        # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
        em.line(em.lang.barrier)
        index = linear_index([out_loop.use(c) for c in out_loop.coords()], result.type.shape)
        out_loop.lines.append(f"{storage}[k] = {bins}[{index}];")
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {out_layout.slots}; ++k) {{")
        for text in out_loop.body():
            em.line("  " + text)  # the emitter's indent
        em.line("}")
    em.need_shared(num_bins * 4, op)
