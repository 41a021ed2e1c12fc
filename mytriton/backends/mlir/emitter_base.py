"""What the MLIR-family emitters (``backends/mlir``, ``backends/ttir``) share:
the writer and the value names, the walk over a block, located errors, the
op table's verdict on each op and the naming of a region op's results."""
from __future__ import annotations

from typing import Any

from mytriton.backends.mlir.text import Writer
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Block, Kernel, Op, Value


class RegionEmitter:
    """A base for an emitter whose ops are dispatched through an op table
    (``table.lowering(name)``: a lowering kind, "refused" with
    ``table.REFUSED[name]`` saying why, or None); the subclass's ``op``
    renders one op."""

    backend = "MLIR"  # how the errors name the back end
    table: Any = None

    def __init__(self, kernel: Kernel, indent: int) -> None:
        self.kernel = kernel
        self.w = Writer(indent=indent)
        self.names: dict[Value, str] = {}

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def error(self, message: str, op: Op) -> CompileError:
        return CompileError(message, op.loc or self.kernel.loc)

    def lowering(self, op: Op) -> str:
        """The table's lowering kind of ``op``; a located error where it is refused or unknown."""
        how = self.table.lowering(op.name)
        if how == "refused":
            raise self.error(self.table.REFUSED[op.name], op)
        if how is None:
            raise self.error(f"the {self.backend} back end has no lowering for '{op.name}'", op)
        return how

    def bind_results(self, op: Op) -> str:
        """The ``%r = `` (or ``%r:n = ``) prefix of a region op, naming its results."""
        if not op.results:
            return ""
        name = self.w.fresh()
        if len(op.results) == 1:
            self.names[op.results[0]] = name
            return f"{name} = "
        for i, result in enumerate(op.results):
            self.names[result] = f"{name}#{i}"
        return f"{name}:{len(op.results)} = "
