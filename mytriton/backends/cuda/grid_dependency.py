"""Grid dependency control on the GPU (tl.extra.cuda.gdc_wait,
gdc_launch_dependents): PTX's ``griddepcontrol``, which Hopper introduced.
Every thread runs it, as Triton's lowering does. Where the kernel is built
for an older GPU it is left out: there is no programmatic dependent launch
there, so there is nothing to wait for or to let start."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.renderers import Group, renders_op

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

INSTRUCTIONS = {
    # The memory clobber: no load the compiler sees may move above the wait.
    "grid_dependency_wait": 'asm volatile("griddepcontrol.wait;" ::: "memory");',
    "grid_dependency_launch_dependents": 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");',
}


def render_grid_dependency(em: "EmitContext", group: Group) -> None:
    op = group.ops[0]
    where = f"  // {op.name} @{op.loc.line}:{op.loc.col}" if op.loc else ""
    em.line("#if __CUDA_ARCH__ >= 900")
    em.line(INSTRUCTIONS[op.name] + where)
    em.line("#endif")


for _name in INSTRUCTIONS:
    renders_op(_name)(render_grid_dependency)
