"""Which function renders each statement of laid-out SSA as CUDA.

The printer groups a block's ops into statements (``statements.Group``: a
scalar op, loads and stores sharing one slot loop, a reduction, a loop,
...) and renders each through the function registered for its kind, or
for its op where one op has its own (``histogram`` among the layout
changes). The
helper modules register theirs as they are imported, as the interpreter's
handlers do; each gets the printer as an ``EmitContext``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from mytriton.backends.cuda.statements import Group

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

Renderer = Callable[["EmitContext", Group], None]
BY_KIND: dict[str, Renderer] = {}
BY_OP: dict[str, Renderer] = {}  # an op rendered apart from the rest of its kind


def renders(kind: str) -> Callable[[Renderer], Renderer]:
    def register(function: Renderer) -> Renderer:
        assert kind not in BY_KIND, f"two renderers of {kind} statements"
        BY_KIND[kind] = function
        return function
    return register


def renders_op(name: str) -> Callable[[Renderer], Renderer]:
    def register(function: Renderer) -> Renderer:
        assert name not in BY_OP, f"two renderers of '{name}'"
        BY_OP[name] = function
        return function
    return register


def renderer_of(group: Group) -> Renderer:
    return BY_OP.get(group.ops[0].name) or BY_KIND[group.kind]
