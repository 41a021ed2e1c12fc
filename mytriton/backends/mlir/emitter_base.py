"""What the MLIR-family emitters (``backends/mlir``, ``backends/ttir``) share:
the writer and the value names, the walk over a block, located errors, the
op table's verdict on each op, the registry of each op's lowering, the naming
of a region op's results, and the ``scf`` structured ops (for, if, while and
a while's condition), written over five hooks each emitter defines for its
own values and types."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

from mytriton.backends.mlir.text import Writer, joined, scalar_type
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Block, Const, Kernel, Op, Value, for_body, for_bounds, for_inits
from mytriton.types import BOOL, ScalarType, Type, concrete


def lowers(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Registers the decorated emitter method as the lowering of the ops ``names``."""
    def mark(method: Callable[..., None]) -> Callable[..., None]:
        method.lowers = (*getattr(method, "lowers", ()), *names)  # type: ignore[attr-defined]
        return method

    return mark


class RegionEmitter(ABC):
    """A base for an emitter whose ops are checked against an op table
    (``table.lowering(name)``: a lowering kind, "refused" with
    ``table.REFUSED[name]`` saying why, or None) and rendered by the method
    registered for the op with ``@lowers`` (``LOWERINGS``, one per op)."""

    backend = "MLIR"  # how the errors name the back end
    table: Any = None
    LOWERINGS: dict[str, str] = {}  # op name -> the name of the method that lowers it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        registry: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attribute, method in vars(klass).items():
                for name in getattr(method, "lowers", ()):
                    if registry.get(name, attribute) != attribute:
                        raise TypeError(f"{cls.__name__}: '{name}' is lowered by both {registry[name]} "
                                        f"and {attribute}")
                    registry[name] = attribute
        cls.LOWERINGS = registry

    def __init__(self, kernel: Kernel, indent: int) -> None:
        self.kernel = kernel
        self.w = Writer(indent=indent)
        self.names: dict[Value, str] = {}

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def error(self, message: str, op: Op) -> CompileError:
        return CompileError(message, op.loc or self.kernel.loc)

    def render(self, op: Op) -> None:
        """Write ``op`` with the lowering registered for it."""
        getattr(self, self.LOWERINGS[op.name])(op)

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

    # ---- hooks: how each dialect spells a value and a type ---------------------------------------
    @abstractmethod
    def scalar_operand(self, operand: Any, element: ScalarType, loc: Any) -> str:
        """A scalar operand as an SSA name of ``element``."""

    @abstractmethod
    def carried_value(self, operand: Any, t: Type, loc: Any) -> str:
        """An operand carried by a loop, an if or a while, as a value of type ``t``."""

    @abstractmethod
    def carried_type(self, t: Type) -> str:
        """The dialect's spelling of a carried value's type."""

    @abstractmethod
    def index_zero(self, index_t: ScalarType, loc: Any) -> str:
        """A 0 of a loop's index type."""

    @abstractmethod
    def block_arg(self, name: str, t: Type, loc: Any) -> str:
        """A block argument's declaration in a region's ``^bb0(...)``."""

    @abstractmethod
    def region(self, block: Block, arg_names: list[str]) -> None:
        """Write ``block`` as a region whose arguments are named ``arg_names``."""

    # ---- scf: the structured ops --------------------------------------------------------------
    @lowers("condition")
    def op_condition(self, op: Op) -> None:
        cond = self.scalar_operand(op.operands[0], BOOL, op.loc)
        args = op.parent.args
        names = [self.names[a] for a in args]
        tail = f" {joined(names)} : {joined(self.carried_type(a.type) for a in args)}" if args else ""
        self.w.line(f"scf.condition({cond}){tail}", op.loc)

    @lowers("for")
    def op_for(self, op: Op) -> None:
        w, loc = self.w, op.loc
        body = for_body(op)
        index_t = concrete(body.args[0].type)
        ity = scalar_type(index_t)
        start, stop, step = (self.scalar_operand(o, index_t, loc) for o in for_bounds(op))
        inits = [self.carried_value(o, r.type, loc) for o, r in zip(for_inits(op), op.results)]
        types = [self.carried_type(r.type) for r in op.results]
        hi = stop
        if not isinstance(for_bounds(op)[2], Const):  # the verifier has made a literal step positive
            # A runtime step <= 0 runs no iteration (as mytriton's CUDA); scf.for leaves it undefined.
            zero = self.index_zero(index_t, loc)
            positive = w.op(f"arith.cmpi sgt, {step}, {zero} : {ity}", loc)
            hi = w.op(f"arith.select {positive}, {stop}, {start} : {ity}", loc)
        iv = w.fresh()
        args = [w.fresh() for _ in op.results]
        prefix = self.bind_results(op)
        head = f"scf.for {iv} = {start} to {hi} step {step}"
        if args:
            head += f" iter_args({joined(f'{a} = {i}' for a, i in zip(args, inits))}) -> ({joined(types)})"
        w.line(f"{prefix}{head} : {ity} {{", located=False)
        self.region(body, [iv, *args])
        w.line("}", loc)

    @lowers("if")
    def op_if(self, op: Op) -> None:
        w, loc = self.w, op.loc
        cond = self.scalar_operand(op.operands[0], BOOL, loc)
        types = [self.carried_type(r.type) for r in op.results]
        prefix = self.bind_results(op)
        tail = f" -> ({joined(types)})" if types else ""
        w.line(f"{prefix}scf.if {cond}{tail} {{", located=False)
        self.region(op.regions[0], [])
        w.line("} else {", located=False)
        self.region(op.regions[1], [])
        w.line("}", loc)

    @lowers("while")
    def op_while(self, op: Op) -> None:
        w, loc = self.w, op.loc
        inits = [self.carried_value(o, r.type, loc) for o, r in zip(op.operands, op.results)]
        types = joined(self.carried_type(r.type) for r in op.results)
        before = [w.fresh() for _ in op.results]
        prefix = self.bind_results(op)
        w.line(f"{prefix}scf.while ({joined(f'{a} = {i}' for a, i in zip(before, inits))}) : "
               f"({types}) -> ({types}) {{", located=False)
        self.region(op.regions[0], before)
        w.line("} do {", located=False)
        after = [w.fresh() for _ in op.results]
        w.line(f"^bb0({joined(self.block_arg(a, r.type, loc) for a, r in zip(after, op.results))}):", located=False)
        self.region(op.regions[1], after)
        w.line("}", loc)
