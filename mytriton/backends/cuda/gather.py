"""``gather`` on the GPU (tl.gather): the source through shared memory.

Two steps, as Triton's general lowering takes them:
1. each thread writes the source elements it owns into scratch, row-major
   (a copy of an element on a spare thread, which the layout replicates,
   is left to its owner);
2. after a barrier, each thread reads its result elements there: at its
   own coordinates with the one along ``axis`` replaced by its index. The
   layouts stage reads the index in the result's layout, so that index is
   the thread's own.
The source's bytes are scratch: ``need_shared`` counts them against the
budget at the gather's line, and insert-barriers fences earlier readers.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.renderers import Group, renders_op
from mytriton.backends.cuda.shared_memory import element_bytes
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.ssa import Op
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


@renders_op("gather")  # a layout change of its own: elements move by their index, not their place
def render_gather(em: "EmitContext", group: Group) -> None:
    emit_gather(em, group.ops[0])


def emit_gather(em: "EmitContext", op: Op) -> None:
    src, index = op.operands
    result = op.results[0]
    axis = op.attrs["axis"]
    shape = src.type.shape
    element = c_element(result.type)
    name = em.name(result)[1:]
    where = f" @{op.loc.line}:{op.loc.col}" if op.loc else ""
    source = f"g{name}_src"  # the shapes of the emitter's locals (names.py keeps user names apart)

    # 1. the source into scratch
    em.scratch_fence()
    em.line(f"{element}* const {source} = reinterpret_cast<{element}*>(smem);")
    loop = em.open_loop(em.layout_of(src), op)
    coords = loop.coords()
    value = as_type(loop.value(src, coords), element_of(src.type))
    store = f"{source}[{linear_index([loop.use(c) for c in coords], shape)}] = {value};"
    owner = loop.owner()
    loop.lines.append(f"if ({owner}) {store}" if owner else store)
    em.close_loop(loop, f"gather{where}: the source into shared memory")
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    em.line(em.lang.barrier)

    # 2. each result element from its index
    out = em.open_loop(em.layout_of(result), op)
    coords = out.coords()
    looked_up = f"(int)({as_type(out.value(index, coords), element_of(index.type))})"
    at = [looked_up if d == axis else out.use(c) for d, c in enumerate(coords)]
    out.lines.append(f"{em.storage[result]}[k] = {source}[{linear_index(at, shape)}];")
    em.close_loop(out, f"gather{where}: each element from its index along axis {axis}",
                  [f"{element} {em.storage[result]}[{out.domain.slots}];"])
    em.need_shared(math.prod(shape) * element_bytes(src.type), op)

