"""The AST frontend: interprets a kernel's syntax tree into the tree IR.

Python values (constexprs, literals, tuples, dtypes) are computed here, as
Python; everything that depends on runtime data becomes a tree expression.
``range`` with constant bounds and ``tl.static_range`` unroll; ``range`` with a
runtime bound becomes a ``ForRange`` region, traced in its own ``Region``
that records what it captures from outside, so that the loop's region is closed.

Control flow on runtime values is structured: ``if`` becomes an ``IfStmt``
whose branches yield the names they assign that exist after it; ``while``
a ``WhileLoop`` carrying the names its body assigns. An ``if`` on a
constant is resolved here. An early ``return`` in a kernel makes the rest of
the kernel part of the ``if`` that holds it: the statements after such an
``if`` are traced at the end of each branch that does not return first.
"""
from __future__ import annotations

import ast
import contextlib
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from mytriton.as_triton.modules import kernel_path
from mytriton.diagnostics import CompileError, Location, did_you_mean
from mytriton.frontend.source import KernelModule, Unresolved
from mytriton.frontend.syntax import is_constexpr
from mytriton.ir import math_functions, opdefs
from mytriton.ir.ssa import Const
from mytriton.ir.tree import (
    Arg, Effect, Expr, ForRange, IfStmt, Let, LoopCarry, LoopIndex, LoopResult, Node, ParamRef, Stmt,
    TreeKernel, WhileLoop, Yield,
)
from mytriton import language
from mytriton.language import CLASSES, CONSTANTS, DTYPES, RANDOM_FUNCTIONS, UNSUPPORTED_DTYPES, UnsupportedDtype
from mytriton.language.extra import libdevice
from mytriton.language.extra.cuda import gdc
from mytriton.language.math import FUNCTIONS as MATH_NAMESPACE
from mytriton.limits import (
    MAX_EXPRESSION_DEPTH, MAX_LOOP_NESTING, MAX_STATIC_UNROLL, MAX_TRACED_NODES, constant_result_error,
    constant_value_error,
)
from mytriton.types import (
    BOOL, F32, I32, DescriptorParam, PointerType, ScalarType, Type, TypeRuleError, broadcast_shapes, concrete, element_of,
    int_literal_type, shape_of, with_element,
)


class Region:
    """The statements of one region being traced, the expressions created in
    it, and the outer expressions its body reads (its captures)."""

    def __init__(self, parent: "Region | None") -> None:
        self.parent = parent
        self.stmts: list[Stmt] = []
        self.owned: set[int] = set()
        self.captures: dict[int, Expr] = {}
        # @jit helper calls traced in this region: their arguments' key ->
        # (the arguments, kept so that their ids stay theirs; the result).
        self.calls: dict[tuple, tuple[tuple[Any, ...], Any]] = {}

    def own(self, expr: Expr) -> None:
        self.owned.add(id(expr))

    def reference(self, expr: Arg) -> None:
        if not isinstance(expr, Expr) or isinstance(expr, ParamRef) or self.parent is None:
            return
        if id(expr) in self.owned or id(expr) in self.captures:
            return
        self.captures[id(expr)] = expr
        self.parent.reference(expr)


# A ``range`` with constant bounds and at most this many iterations unrolls
# while tracing (its index a constant in the body); a longer one is a loop, as
# every ``range`` is in Triton: unrolling a 32-step walk over a 64000-wide row
# puts every step's tile in registers at once and takes nvcc minutes.
# ``tl.static_range`` always unrolls. A short ``range`` whose body calls
# ``tl.dot`` (itself or through a @jit helper) stays a loop too, as in Triton:
# the loop is what stage-dots pipelines, and eight unrolled iterations of
# tutorial 06's backward are eight unpipelined copies of four dots.
RANGE_UNROLL_LIMIT = 8


def _iterations(start: int, stop: int, step: int) -> int:
    return max(0, (stop - start + step + (-1 if step > 0 else 1)) // step)


@dataclass(frozen=True)
class Builtin:
    """A function a kernel can call; ``impl(tracer, call, args, kwargs)``."""

    name: str
    impl: Callable[..., Any]


def _next_power_of_2(tracer: "Tracer", node: ast.Call, args: list, kwargs: dict) -> int:
    """``triton.next_power_of_2(n)`` in a kernel, as Triton's code generator
    runs it on a constexpr (flash-linear-attention sizes blocks so): on a constant."""
    if kwargs or len(args) != 1 or type(args[0]) is not int:
        raise tracer.error("triton.next_power_of_2 in a kernel takes one integer constant (a tl.constexpr)", node)
    if args[0] > 2 ** 62:
        raise tracer.error(f"triton.next_power_of_2 of {args[0]}: over 2**62", node)
    from mytriton import next_power_of_2

    return next_power_of_2(args[0])


NEXT_POWER_OF_2 = Builtin("next_power_of_2", _next_power_of_2)


def _log2_of_a_constant(tracer: "Tracer", node: ast.Call, args: list, kwargs: dict) -> int:
    """Triton's ``tl.standard._log2(i)``: log2 of a constexpr, rounded down
    (0 for i <= 1), which libraries call for bitonic sizes (fla)."""
    if kwargs or len(args) != 1 or type(args[0]) is not int:
        raise tracer.error("tl.standard._log2 takes one integer constant (a tl.constexpr)", node)
    return max(args[0], 1).bit_length() - 1


LOG2_OF_A_CONSTANT = Builtin("_log2", _log2_of_a_constant)


@dataclass(frozen=True)
class JitRef:
    """A @jit function: by name in the module being traced, or in another
    module (one imported from elsewhere, read from its own source)."""

    name: str
    module: KernelModule | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Method:
    name: str
    receiver: Any  # a runtime value (x.to) or a dtype (tl.float16.is_floating)


# The tl functions Triton also offers as methods of a tensor (its
# ``_tensor_member_fn``s): ``x.sum(axis=1)`` is ``tl.sum(x, axis=1)``.
TENSOR_METHODS = frozenset((
    "cast", "sum", "max", "min", "expand_dims", "trans", "broadcast_to", "reshape", "view", "permute", "split",
    "abs", *(row.name for row in math_functions.TABLE if row.method),
    "softmax", "sort", "flip", "histogram", "cumsum", "cumprod", "argmax", "argmin", "reduce", "associative_scan",
    "xor_sum", "reduce_or", "ravel", "gather",
))


@dataclass(frozen=True)
class ModuleRef:
    qualified: str


@dataclass(frozen=True)
class LanguageClass:
    """``tl.tensor``, ``tl.tensor_descriptor``, ``tl.const`` or ``tl.constexpr``
    as a kernel names it: a class for ``isinstance``."""

    name: str

    def holds(self, value: Any) -> bool:
        """Whether ``value`` (a traced value) is an instance, as Triton's
        JIT answers: a runtime value (a scalar or a tile) is a tensor, a
        compile-time constant a constexpr, a descriptor a tensor_descriptor;
        nothing is a const (an annotation only)."""
        from mytriton.frontend.block_pointers import BlockPointer, TensorDescriptor

        if self.name == "tensor":  # a block pointer too: Triton's is a tensor of pointers
            return isinstance(value, (Expr, BlockPointer))
        if self.name == "tensor_descriptor":
            return isinstance(value, TensorDescriptor)
        if self.name == "constexpr":
            return is_constant(value)
        return False


@dataclass(frozen=True)
class PyModuleRef:
    """A Python module that is not mytriton's, bound in a launched kernel's
    namespace (``import mylib.consts as C``): its attributes resolve as the
    module's globals do."""

    module: Any


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


_PY_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.Pow: operator.pow,
}
_TREE_BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
    ast.LShift: "shl", ast.RShift: "shr",
}
_PY_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert,
}
_PY_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Eq: operator.eq, ast.NotEq: operator.ne}
_TREE_COMPARE = {ast.Lt: "cmp_lt", ast.LtE: "cmp_le", ast.Gt: "cmp_gt", ast.GtE: "cmp_ge",
                 ast.Eq: "cmp_eq", ast.NotEq: "cmp_ne"}


def _short(value: int) -> str:
    """An integer for a message; a huge one by its size (str() of an integer
    of thousands of digits raises in Python 3.11+)."""
    if value.bit_length() <= 96:
        return str(value)
    return f"{'-' if value < 0 else ''}an integer of {value.bit_length()} bits"


def is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def is_constant(value: Any) -> bool:
    """A compile-time value that Python's own operators apply to, as they do
    to Triton's constexprs: a number, a string, None, a dtype, or a tuple of
    them."""
    if is_number(value) or value is None or isinstance(value, (str, ScalarType, PointerType, UnsupportedDtype)):
        return True
    return isinstance(value, tuple) and all(is_constant(v) for v in value)


class TraceBudget:
    """What one kernel's trace has used of the limits on work: unrolled
    iterations, tree nodes, and the depth of each node's expression."""

    def __init__(self) -> None:
        self.unrolled = 0
        self.nodes = 0
        self.depths: dict[int, int] = {}  # id(node) -> nesting depth (leaves are 0)
        # id(expr) -> (expr, its type), for what asks (x.dtype); filled lazily. The
        # entry holds the expression too: an id is unique only while its object
        # lives, and a probe trace's nodes die, so their ids come back on new
        # nodes (a stale type then depended on the allocator: hash-seed flaky).
        self.types: dict[int, tuple[Any, Type]] = {}
        # A probe trace runs with placeholder parameter types, to find which
        # parameters are pointers; what depends on types is then a guess, so
        # nothing is printed and no static assertion fails.
        self.probing = False
        # Whether the trace depended on types (x.dtype, a static assertion or
        # print): a probe trace is then traced again with the real types.
        self.asked_types = False
        # tl.dot's precision for f32 operands where the call names none
        # (compiler.Options.f32_default).
        self.f32_default: str | None = None
        # tl.static_print calls traced (a helper that prints is not reused).
        self.prints = 0
        self.facts = StatementFacts()


class Tracer:
    def __init__(self, module: KernelModule, kernel: TreeKernel, region: Region,
                 env: dict[str, Any], depth: int = 0, budget: TraceBudget | None = None,
                 site: Location | None = None) -> None:
        self.module = module
        self.kernel = kernel
        self.region = region
        self.env = env
        self.depth = depth
        self.budget = budget if budget is not None else TraceBudget()
        # Where the IR made here is located when ``module`` is another file's
        # (a @jit helper imported from elsewhere): at the kernel's call of it,
        # since the IR names the kernel's file alone. Errors keep the helper's
        # own lines.
        self.site = site

    # ---- helpers ----------------------------------------------------------------
    def loc(self, node: ast.AST) -> Location:
        return self.site or self.module.loc(node)

    def error(self, message: str, node: ast.AST) -> CompileError:
        return CompileError(message, self.module.loc(node))

    def make(self, op: str, args: tuple[Arg, ...], node: ast.AST, **attrs: Any) -> Node:
        for arg in args:
            self.check_operand(arg, op, node)
            self.region.reference(arg)
        budget = self.budget
        budget.nodes += 1
        if budget.nodes > MAX_TRACED_NODES:
            raise self.error(f"the kernel traces to more than {MAX_TRACED_NODES} operations (MAX_TRACED_NODES); "
                             "unroll fewer iterations or use a runtime loop", node)
        depth = 1 + max((budget.depths.get(id(a), 0) for a in args), default=0)
        if depth > MAX_EXPRESSION_DEPTH:
            raise self.error(f"this expression nests more than {MAX_EXPRESSION_DEPTH} operations deep "
                             "(MAX_EXPRESSION_DEPTH); bind parts of it to names or use a runtime loop", node)
        expr = Node(op, args, attrs, self.loc(node))
        budget.depths[id(expr)] = depth
        self.region.own(expr)
        return expr

    def check_operand(self, value: Any, op: str, node: ast.AST) -> None:
        if is_number(value):
            self.check_literal(value, node)
            return
        if value is None or isinstance(value, Expr):
            return
        raise self.error(f"{describe(value)} cannot be an operand of '{op}'", node)

    def check_literal(self, value: Any, node: ast.AST) -> None:
        """A Python number about to become a kernel literal: an integer must
        fit i64 or u64 (a wider one would silently wrap in C and NumPy)."""
        if type(value) is int and int_literal_type(value) is None:
            raise self.error(f"integer literal out of range: {_short(value)} does not fit i64 or u64", node)

    def type_of(self, value: Arg, node: ast.AST) -> Type | None:
        """The type ``value`` will have in the SSA, found while tracing (for
        ``x.dtype``, ``x.shape``, ``.T``): the op table's rules over the
        parameters' types, as lowering applies them. None for an absent
        operand."""
        if value is None:
            return None
        if is_number(value):
            return Const(value).type
        self.budget.asked_types = True
        return self._type_of(value, node)

    def _type_of(self, value: Expr, node: ast.AST) -> Type:
        known = self.budget.types.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if isinstance(value, ParamRef):
            found = dict(self.kernel.params)[value.name]
        elif isinstance(value, LoopIndex):
            found = I32
        elif isinstance(value, (LoopCarry, LoopResult)):
            raise self.error("internal error: a loop value's type is recorded when the loop is traced", node)
        elif isinstance(value, Node):
            operands = [self.type_of(a, node) for a in value.args]
            try:
                found = self._node_type(value, operands)
            except CompileError:
                if not self.budget.probing:
                    raise
                # The parameters' types are placeholders (i32) in a probe
                # trace: guess, to keep it going (each node guesses once, from
                # its operands): the shape is right, the element is f32, what
                # an unannotated pointer holds.
                shapes = [shape_of(t) for t in operands if t is not None]
                try:
                    found = with_element(broadcast_shapes(*shapes), F32)
                except TypeRuleError:
                    found = F32
        else:
            raise self.error(f"{describe(value)} has no type", node)
        self.budget.types[id(value)] = (value, found)
        return found

    @staticmethod
    def _node_type(value: Node, operands: list[Type | None]) -> Type:
        """A node's type by the op table, ``+``/``-`` on a pointer being ``addptr`` (as lowering reads them)."""
        name = value.op
        if name in ("add", "sub") and any(isinstance(element_of(t), PointerType) for t in operands if t):
            if name == "sub" and isinstance(element_of(operands[1]), PointerType):
                raise CompileError("only an integer can be subtracted from a pointer", value.loc)
            if not isinstance(element_of(operands[0]), PointerType):
                operands = [operands[1], operands[0]]
            name = "addptr"
        try:
            return opdefs.OPS[name].infer(operands, value.attrs)[0]
        except TypeRuleError as err:
            raise CompileError(str(err), value.loc) from None

    def anchor(self, expr: Node) -> None:
        self.region.stmts.append(Let(expr))

    def effect(self, expr: Node) -> None:
        self.region.stmts.append(Effect(expr))

    # ---- statements -------------------------------------------------------------
    def run(self, stmts: list[ast.stmt]) -> None:
        pending = list(stmts)
        i = 0
        while i < len(pending):
            stmt = pending[i]
            if isinstance(stmt, ast.If):
                condition = self.eval(stmt.test)
                rest = pending[i + 1:]
                if not isinstance(condition, Expr):
                    # Resolved while tracing: the chosen branch, then the rest.
                    pending, i = [*(stmt.body if condition else stmt.orelse), *rest], 0
                    continue
                if self.budget.facts.may_return(stmt):
                    if self.depth > 0:
                        raise self.error("a @jit helper may return inside an 'if' only when its condition is a "
                                         "compile-time constant; assign the result in both branches and return "
                                         "it at the end", stmt)
                    self.runtime_if(stmt, condition, rest)
                    return  # the rest was traced inside the branches
                self.runtime_if(stmt, condition, [])
            else:
                self.statement(stmt)
            i += 1

    def statement(self, stmt: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            raise self.error(f"'{type(stmt).__name__}' statements are not supported in kernels", stmt)
        method(stmt)

    def stmt_Expr(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # a docstring
        self.eval(stmt.value)

    def stmt_Pass(self, stmt: ast.Pass) -> None:
        pass

    def stmt_Assign(self, stmt: ast.Assign) -> None:
        value = self.eval(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        self.assign(stmt.target, self.eval(stmt.value))

    def stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        name = stmt.target.id
        if name not in self.env:
            raise self.error(f"'{name}' is updated before it is assigned", stmt.target)
        value = self.binary(stmt.op, self.env[name], self.eval(stmt.value), stmt)
        self.assign(stmt.target, value)

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Expr) and value.hint is None and not isinstance(value, ParamRef):
                value.hint = target.id
            self.env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.error("cannot unpack this value into the names on the left", target)
            for element, item in zip(target.elts, value):
                self.assign(element, item)
            return
        raise self.error("only names can be assigned in kernels", target)

    def stmt_Return(self, stmt: ast.Return) -> None:
        raise _Return(self.eval(stmt.value) if stmt.value is not None else None)

    def stmt_If(self, stmt: ast.If) -> None:
        self.run([stmt])

    def nesting(self) -> int:
        nesting, region = 0, self.region
        while region.parent is not None:
            nesting, region = nesting + 1, region.parent
        return nesting

    # A name that holds None before a loop and is assigned only in a branch the
    # tracing leaves out (``if USE_H: h = ...`` with USE_H False) is not
    # carried: as in Triton, whose loops carry what their body did assign.
    def unset_names(self, assigned: dict[str, ast.AST]) -> set[str]:
        return {n for n in assigned if n in self.env and self.env[n] is None}

    def check_unset(self, unset: set[str], body_env: dict[str, Any], assigned: dict[str, ast.AST],
                    what: str) -> None:
        for n in sorted(unset):
            if body_env.get(n) is not None:
                raise self.error(f"'{n}' holds None before the loop, which {what} cannot carry", assigned[n])

    def check_carried(self, names: list[str], assigned: dict[str, ast.AST], what: str) -> None:
        from mytriton.frontend.block_pointers import BlockPointer

        for n in names:
            if not (is_number(self.env[n]) or isinstance(self.env[n], (Expr, BlockPointer))):
                raise self.error(f"'{n}' holds {describe(self.env[n])}, which {what} cannot carry", assigned[n])

    # A block pointer is carried as its offsets, one loop value (or if result)
    # each: the names' values flatten to "leaves" and are rebuilt from them.
    @staticmethod
    def carry_plan(names: list[str], env: dict[str, Any]) -> tuple[tuple[Any, ...], list[str], list[str]]:
        """The values carried for ``names``, a hint for each, and the name each belongs to."""
        from mytriton.frontend.block_pointers import carry_leaves, leaf_hints

        leaves: list[Any] = []
        hints: list[str] = []
        owners: list[str] = []
        for n in names:
            found = carry_leaves(env[n])
            leaves += found
            hints += leaf_hints(n, env[n])
            owners += [n] * len(found)
        return tuple(leaves), hints, owners

    @staticmethod
    def rebuild_carried(names: list[str], templates: dict[str, Any], leaves: tuple[Any, ...]) -> dict[str, Any]:
        """The names' values made of ``leaves`` (carry_plan's order) in the shapes of ``templates``."""
        from mytriton.frontend.block_pointers import carry_leaves, rebuild

        values: dict[str, Any] = {}
        at = 0
        for n in names:
            count = len(carry_leaves(templates[n]))
            values[n] = rebuild(templates[n], list(leaves[at:at + count]))
            at += count
        return values

    def carried_outputs(self, names: list[str], templates: dict[str, Any], env: dict[str, Any],
                        assigned: dict[str, ast.AST], what: str, branches: bool = False) -> tuple[Any, ...]:
        """The leaves ``env`` holds for ``names`` at the end of a body (or of
        one of an if's ``branches``), which must have the shapes the names
        had on entry (``templates``)."""
        from mytriton.frontend.block_pointers import carry_leaves, carry_mismatch

        for n in names:
            mismatch = carry_mismatch(templates[n], env[n], branches)
            if mismatch:
                raise self.error(f"'{n}' {mismatch} in {what}", assigned[n])
        return tuple(leaf for n in names for leaf in carry_leaves(env[n]))

    def branch(self, stmts: list[ast.stmt]) -> tuple[Region, dict[str, Any]]:
        """Trace one branch of a runtime ``if`` in its own region and
        environment; a ``return`` ends it (the kernel's rest is not in it)."""
        region = Region(self.region)
        env = dict(self.env)
        tracer = Tracer(self.module, self.kernel, region, env, self.depth, self.budget, self.site)
        try:
            tracer.run(stmts)
        except _Return:
            env.clear()  # the kernel ended on this path: nothing flows out of it
        return region, env

    def runtime_if(self, stmt: ast.If, condition: Expr, rest: list[ast.stmt]) -> None:
        """An ``if`` on a runtime scalar: an ``IfStmt`` whose branches yield
        the values of the names either assigns that exist after it. ``rest``
        (the statements after it, when a branch returns) goes at the end of
        each branch that does not end with a return."""
        if self.nesting() >= MAX_LOOP_NESTING:
            raise self.error(f"runtime loops and ifs nest more than {MAX_LOOP_NESTING} deep (MAX_LOOP_NESTING)",
                             stmt)
        self.region.reference(condition)
        then_stmts = stmt.body if _always_returns(stmt.body) else [*stmt.body, *rest]
        else_stmts = stmt.orelse if _always_returns(stmt.orelse) else [*stmt.orelse, *rest]
        then_region, then_env = self.branch(then_stmts)
        else_region, else_env = self.branch(else_stmts)
        loc = self.loc(stmt)
        names: list[str] = []
        assigned = self.budget.facts.assigned([*stmt.body, *stmt.orelse]) if not rest else {}
        from mytriton.frontend.block_pointers import BlockPointer, carry_mismatch

        for n in assigned:
            if n not in then_env or n not in else_env:
                continue  # assigned in one branch only (or after a return): not visible after the if
            a, b = then_env[n], else_env[n]
            mismatch = None if a is b else carry_mismatch(a, b, branches=True)
            if mismatch:
                raise self.error(f"'{n}' {mismatch} in the branches of this runtime 'if'", assigned[n])
            if a is b:
                self.env[n] = a
            elif isinstance(a, BlockPointer):
                names.append(n)  # its offsets differ: yielded, one value each
            elif isinstance(a, Expr) or isinstance(b, Expr) or (is_number(a) and is_number(b)):
                names.append(n)
            elif type(a) is type(b) and a == b:
                self.env[n] = a  # the same constant (a dtype, a tuple) either way
            else:
                raise self.error(f"'{n}' holds {describe(a)} after one branch of this runtime 'if' and "
                                 f"{describe(b)} after the other; only runtime values and numbers can differ "
                                 "between branches", assigned[n])
        templates = {n: then_env[n] for n in names}
        _, hints, _ = self.carry_plan(names, templates)
        yielded = []
        for region, env in ((then_region, then_env), (else_region, else_env)):
            values = self.carried_outputs(names, templates, env, assigned, "the branches of this runtime 'if'",
                                          branches=True)
            for value in values:
                self.check_literal(value, stmt)
                region.reference(value)
            region.stmts.append(Yield(values, loc))
            yielded.append(values)
        results = self.if_node(condition, then_region, else_region, yielded[0], yielded[1], hints, stmt)
        self.env.update(self.rebuild_carried(names, templates, results))

    def if_node(self, condition: Expr, then_region: Region, else_region: Region, then_values: tuple,
                else_values: tuple, hints: list[str | None], node: ast.AST) -> tuple[LoopResult, ...]:
        """The IfStmt of two traced branches (each ending in its Yield), added
        to this region; its results, each of the type its branches yield
        (recorded for what asks: ``x.dtype`` after the if)."""
        captures = {**then_region.captures, **else_region.captures}
        stmt = IfStmt(condition, tuple(captures.values()), then_region.stmts, else_region.stmts, (), self.loc(node))
        stmt.results = tuple(LoopResult(stmt, i, hint=h) for i, h in enumerate(hints))
        for result in stmt.results:
            self.region.own(result)
        self.region.stmts.append(stmt)
        for result, a, b in zip(stmt.results, then_values, else_values):
            typed = b if is_number(a) and not is_number(b) else a  # a literal takes the other side's type
            try:
                t = self.type_of(typed, node)
            except CompileError:
                continue  # lowering reports a type error
            if t is not None:
                self.budget.types[id(result)] = (result, concrete(t))
        return stmt.results

    def stmt_While(self, stmt: ast.While) -> None:
        """A ``while`` on a runtime condition: a ``WhileLoop`` carrying the
        names its body assigns that exist before it. A condition that is a
        constant is false (no loop) or true (refused: without 'break' the
        loop could never end)."""
        if self.nesting() >= MAX_LOOP_NESTING:
            raise self.error(f"runtime loops nest more than {MAX_LOOP_NESTING} deep (MAX_LOOP_NESTING)", stmt)
        assigned = self.budget.facts.assigned(stmt.body)
        unset = self.unset_names(assigned)
        carried = [n for n in assigned if n in self.env and n not in unset]
        self.check_carried(carried, assigned, "a while loop")
        templates = {n: self.env[n] for n in carried}
        inputs, hints, owners = self.carry_plan(carried, templates)
        carried_args = tuple(LoopCarry(i, hint=h) for i, h in enumerate(hints))
        self._carried_types(carried_args, inputs, stmt)  # what the condition and body may ask (tl.dot)
        before_region, body_region = Region(self.region), Region(self.region)
        for arg in carried_args:
            before_region.own(arg)
            body_region.own(arg)
        before_env = {**self.env, **self.rebuild_carried(carried, templates, carried_args)}
        before = Tracer(self.module, self.kernel, before_region, before_env, self.depth, self.budget, self.site)
        condition = before.eval(stmt.test)
        if not isinstance(condition, Expr):
            if condition:
                raise self.error("this 'while' condition is always true, so the loop would never end "
                                 "('break' is not supported)", stmt.test)
            return  # never entered
        before_region.reference(condition)
        for n, value in zip(owners, inputs):
            self.check_literal(value, assigned[n])
            self.region.reference(value)
        body_env = {**self.env, **self.rebuild_carried(carried, templates, carried_args)}
        body = Tracer(self.module, self.kernel, body_region, body_env, self.depth, self.budget, self.site)
        body.run(stmt.body)
        self.check_unset(unset, body_env, assigned, "a while loop")
        outputs = self.carried_outputs(carried, templates, body_env, assigned, "this loop")
        for n, value in zip(owners, outputs):
            if not (is_number(value) or isinstance(value, Expr)):
                raise self.error(f"'{n}' holds {describe(value)} at the end of the loop body", assigned[n])
            self.check_literal(value, assigned[n])
            body_region.reference(value)
        loc = self.loc(stmt)
        body_region.stmts.append(Yield(outputs, loc))
        captures = {**before_region.captures, **body_region.captures}
        for arg in carried_args:
            captures.pop(id(arg), None)
        loop = WhileLoop(tuple(captures.values()), inputs, carried_args, before_region.stmts, condition,
                         body_region.stmts, (), loc)
        loop.results = tuple(LoopResult(loop, i, hint=h) for i, h in enumerate(hints))
        self._carried_types(loop.results, inputs, stmt)
        for result in loop.results:
            self.region.own(result)
        self.region.stmts.append(loop)
        self.env.update(self.rebuild_carried(carried, templates, loop.results))

    def stmt_For(self, stmt: ast.For) -> None:
        call = stmt.iter
        assert isinstance(call, ast.Call)
        static = self.module.qualname(call.func) == "mytriton.language.static_range"
        parts = [self.eval(a) for a in call.args]
        start, stop, step = _range_parts(parts)
        options = self.loop_options(call)
        # A loop given tl.range's options stays a loop, constant bounds or not.
        constant = all(type(v) is int for v in (start, stop, step)) and not options
        if static and not constant:
            bad = next(a for a, v in zip(call.args, parts) if type(v) is not int)
            raise self.error("tl.static_range needs compile-time integer bounds; "
                             "use range(...) for a runtime loop", bad)
        name = stmt.target.id
        if constant and step == 0:
            raise self.error("range step cannot be zero", call)
        if constant and (static or (_iterations(start, stop, step) <= RANGE_UNROLL_LIMIT
                                    and not self.calls_dot(stmt.body, self.module, set(), self.env))):
            self.unroll(stmt, name, start, stop, step)
            return
        self.runtime_loop(stmt, start, stop, step, options)

    def calls_dot(self, body: list[ast.stmt], module: KernelModule, seen: set[tuple[int, str]],
                  env: dict[str, Any] | None = None) -> bool:
        """Whether ``body`` calls ``tl.dot``, itself or through the @jit
        functions it calls by name (each looked at once): a global's, or
        one a name of ``env`` holds (a @jit function passed in)."""
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if not isinstance(node, ast.Call):
                continue
            if module.qualname(node.func) == "mytriton.language.dot":
                return True
            if not isinstance(node.func, ast.Name):
                continue
            bound = env.get(node.func.id) if env is not None else None
            if isinstance(bound, JitRef):  # a @jit function passed in (a constexpr activation, say)
                owner, fn_name = bound.module or self.module, bound.name
            else:
                found = module.lookup(node.func.id)
                if found is None or found[0] != "function":
                    continue
                owner, fn_name = found[1]
            if (id(owner), fn_name) in seen:
                continue
            seen.add((id(owner), fn_name))
            if self.calls_dot(owner.functions[fn_name].body, owner, seen):
                return True
        return False

    def loop_options(self, call: ast.Call) -> dict[str, Any]:
        """tl.range's keyword options, as the ``for`` op keeps them (defaults
        left out): num_stages, loop_unroll_factor and Triton's flags."""
        options: dict[str, Any] = {}
        for keyword in call.keywords:
            value = self.eval(keyword.value)
            key = keyword.arg
            if key in opdefs.LOOP_FLAGS:
                if type(value) is not bool:
                    raise self.error(f"tl.range: {key} must be True or False, got {describe(value)}", keyword)
                if value:
                    options[key] = True
                continue
            if value is None:
                continue
            if type(value) is not int:
                raise self.error(f"tl.range: {key} must be an integer constant, got {describe(value)}", keyword)
            problem = opdefs.loop_attrs_problem({key: value})
            if problem:
                raise self.error(f"tl.range: {problem}", keyword)
            options[key] = value
        return options

    def unroll(self, stmt: ast.For, name: str, start: int, stop: int, step: int) -> None:
        """A constant-bound loop, unrolled: its body traced once per
        iteration, all of them (nested loops' too) counted against
        MAX_STATIC_UNROLL before any is traced."""
        iterations = _iterations(start, stop, step)
        if self.budget.unrolled + iterations > MAX_STATIC_UNROLL:
            already = f" (after {self.budget.unrolled} already unrolled)" if self.budget.unrolled else ""
            raise self.error(f"this loop would unroll {iterations} iterations{already}, over the limit of "
                             f"{MAX_STATIC_UNROLL} (MAX_STATIC_UNROLL); tl.static_range unrolls while "
                             "tracing: use range(...) for a loop",
                             stmt.iter)
        self.budget.unrolled += iterations
        for value in range(start, stop, step):
            self.env[name] = value
            self.run(stmt.body)

    def runtime_loop(self, stmt: ast.For, start: Any, stop: Any, step: Any,
                     options: dict[str, Any] | None = None) -> None:
        """A ``range`` with a runtime bound or step, as Triton's ``scf.for``:
        a runtime step is assumed positive (a step <= 0 runs no iteration on
        the GPU; the interpreter reports it); a negative constant step counts
        down, as Triton does it: the loop runs over ``range(stop, start, -step)``
        and the body sees ``start - (i - stop)``. The loop variable may be
        rebound in the body (``i = tl.multiple_of(i, 16)``): the rebinding is
        a new value for the rest of that iteration, not a carried value."""
        call = stmt.iter
        step_node = call.args[2] if len(call.args) == 3 else call
        descending = False
        if type(step) is int:
            if step == 0:
                raise self.error("range step cannot be zero", step_node)
            if step < 0:
                descending, step = True, -step
        elif not isinstance(step, Expr):
            raise self.error(f"the loop step must be an integer, got {describe(step)}", step_node)
        for bound, what in ((start, "start"), (stop, "stop")):
            if not (type(bound) is int or isinstance(bound, Expr)):
                raise self.error(f"the loop {what} must be an integer, got {describe(bound)}", call)
        if self.nesting() >= MAX_LOOP_NESTING:  # reachable through @jit helpers that loop
            raise self.error(f"runtime loops nest more than {MAX_LOOP_NESTING} deep (MAX_LOOP_NESTING)", stmt)
        name = stmt.target.id
        assigned = self.budget.facts.assigned(stmt.body)
        unset = self.unset_names(assigned) - {name}  # (the loop variable is bound each iteration, not carried)
        carried = [n for n in assigned if n in self.env and n != name and n not in unset]
        self.check_carried(carried, assigned, "a runtime loop")
        if descending:
            start, stop = stop, start
        for bound in (start, stop, step):
            self.check_literal(bound, call)
            self.region.reference(bound)
        templates = {n: self.env[n] for n in carried}
        inputs, hints, owners = self.carry_plan(carried, templates)
        for n, value in zip(owners, inputs):
            self.check_literal(value, assigned[n])
            self.region.reference(value)
        body_region = Region(self.region)
        index = LoopIndex(hint=name)
        body_region.own(index)
        carried_args = tuple(LoopCarry(i, hint=h) for i, h in enumerate(hints))
        for arg in carried_args:
            body_region.own(arg)
        self._carried_types(carried_args, inputs, stmt)
        body_env = dict(self.env)
        body_env.update(self.rebuild_carried(carried, templates, carried_args))
        body = Tracer(self.module, self.kernel, body_region, body_env, self.depth, self.budget, self.site)
        body_env[name] = body.make("sub", (stop, body.make("sub", (index, start), stmt.target)), stmt.target) \
            if descending else index
        body.run(stmt.body)
        self.check_unset(unset, body_env, assigned, "a runtime loop")
        outputs = self.carried_outputs(carried, templates, body_env, assigned, "this loop")
        for n, value in zip(owners, outputs):
            if not (is_number(value) or isinstance(value, Expr)):
                raise self.error(f"'{n}' holds {describe(value)} at the end of the loop body", assigned[n])
            self.check_literal(value, assigned[n])
            body_region.reference(value)
        loc = self.loc(stmt)
        body_region.stmts.append(Yield(outputs, loc))
        loop = ForRange(index, start, stop, step, tuple(body_region.captures.values()), body_region.stmts,
                        inputs, carried_args, (), loc, dict(options or {}))
        loop.results = tuple(LoopResult(loop, i, hint=h) for i, h in enumerate(hints))
        self._carried_types(loop.results, inputs, stmt)
        for result in loop.results:
            self.region.own(result)
        self.region.stmts.append(loop)
        # The body ran in its own environment, so names it bound first do not
        # escape; carried names now hold the loop's results.
        self.env.update(self.rebuild_carried(carried, templates, loop.results))

    def _carried_types(self, values: tuple[Expr, ...], inputs: tuple[Any, ...], stmt: ast.stmt) -> None:
        """A loop's carried values and results have the type their initial
        value has (lowering checks the body keeps it); recorded only where the
        initial value has a type at all (a type error is lowering's to report)."""
        for value, init in zip(values, inputs):
            try:
                t = self.type_of(init, stmt)
            except CompileError:
                continue
            if t is not None:
                self.budget.types[id(value)] = (value, concrete(t))

    # ---- expressions ------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise self.error(f"'{type(node).__name__}' expressions are not supported in kernels", node)
        return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.eval(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        return self.global_name(node.id, node)

    def global_name(self, name: str, node: ast.AST) -> Any:
        found = self.module.lookup(name)
        if found is not None:
            return self.bound_value(name, found, node)
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        if name == "print":  # as in Triton, Python's print in a kernel is tl.device_print
            from mytriton.frontend.builtins import BUILTINS

            return BUILTINS["device_print"]
        known = [*self.env, *self.module.aliases, *self.module.functions, *self.module.constants,
                 *(self.module.namespace or ()), *_PY_BUILTINS]
        raise self.error(f"'{name}' is not defined{did_you_mean(name, known)}", node)

    def bound_value(self, name: str, found: tuple[str, Any], node: ast.AST) -> Any:
        """The value of a global name from its binding (KernelModule.lookup)."""
        kind, value = found
        if kind == "alias":
            return self.qualified(value, node)
        if kind == "function":
            module, fn_name = value
            return JitRef(fn_name, None if module is self.module else module)
        if kind == "module":
            return PyModuleRef(value)
        if isinstance(value, Unresolved):
            raise self.error(f"'{name}' cannot be used in a kernel: {value.reason}", node)
        return value

    def qualified(self, qualified: str, node: ast.AST) -> Any:
        from mytriton.frontend.builtins import BUILTINS

        qualified = kernel_path(qualified)  # tl.core.X is tl.X

        if qualified in ("mytriton", "mytriton.language", "mytriton.language.math", "mytriton.language.random",
                         *libdevice.NAMESPACES, gdc.MODULE_PATH):
            return ModuleRef(qualified)
        gdc_name = gdc.function_name(qualified)
        if gdc_name is not None:
            from mytriton.frontend.builtins import GRID_DEPENDENCY

            return GRID_DEPENDENCY[gdc_name]
        libdevice_name = libdevice.function_name(qualified)
        if libdevice_name is not None:
            from mytriton.frontend.builtins import LIBDEVICE

            if libdevice_name in LIBDEVICE:
                return LIBDEVICE[libdevice_name]
            raise self.error(f"'{libdevice_name}' is not part of libdevice", node)
        if qualified.startswith("mytriton.language.math."):
            name = qualified.split(".")[-1]
            if name in MATH_NAMESPACE and name in BUILTINS:
                return BUILTINS[name]
        elif qualified.startswith("mytriton.language.random."):  # tl.random.rand: tl.rand
            name = qualified[len("mytriton.language.random."):]
            if name in RANDOM_FUNCTIONS:
                return BUILTINS[name]
        elif qualified.startswith("mytriton.language."):
            path = qualified[len("mytriton.language."):]
            if path in CONSTANTS:  # tl.PropagateNan.ALL
                return CONSTANTS[path]
            if any(key.startswith(path + ".") for key in CONSTANTS):
                return ModuleRef(qualified)  # tl.PropagateNan, read by attribute
            name = qualified.split(".")[-1]
            if name in DTYPES:
                return DTYPES[name]
            if name in BUILTINS:
                return BUILTINS[name]
            if name in CLASSES:
                return LanguageClass(name)
            if name in UNSUPPORTED_DTYPES:  # compares unequal to every dtype; a located error where used as one
                return getattr(language, name)
        if qualified == "mytriton.cdiv":
            return BUILTINS["cdiv"]
        if qualified == "mytriton.next_power_of_2":
            return NEXT_POWER_OF_2
        if qualified == "mytriton.language.standard._log2":
            return LOG2_OF_A_CONSTANT
        if qualified == "mytriton.language.standard":  # read by attribute: tl.standard._log2
            return ModuleRef(qualified)
        raise self.error(f"'{qualified}' cannot be used inside a kernel", node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        attr = node.attr
        if isinstance(base, ModuleRef):
            return self.qualified(f"{base.qualified}.{attr}", node)
        if isinstance(base, PyModuleRef):
            from mytriton.frontend.namespace import binding_of

            if not hasattr(base.module, attr):
                raise self.error(f"module '{base.module.__name__}' has no attribute '{attr}'", node)
            return self.bound_value(f"{base.module.__name__}.{attr}",
                                    binding_of(self.module, attr, getattr(base.module, attr)), node)
        if isinstance(base, Expr):
            if attr == "to":
                return Method("to", base)
            if attr in TENSOR_METHODS:  # x.sum(axis=1), x.cast(tl.float32): tl.<attr>(x, ...)
                from mytriton.frontend.builtins import BUILTINS

                if attr in BUILTINS:
                    return Method(attr, base)
            if attr in ("dtype", "shape", "type"):
                t = self.type_of(base, node)
                if attr == "shape":
                    return shape_of(t)
                return concrete(element_of(t))
            if attr == "T":
                from mytriton.frontend.builtins import transpose

                return transpose(self, node, base, ())
        from mytriton.frontend import block_pointers

        if isinstance(base, (block_pointers.BlockPointer, block_pointers.TensorDescriptor)):
            return block_pointers.attribute(self, base, attr, node)
        if isinstance(base, PointerType) and attr == "element_ty":
            return base.pointee
        if self.budget.probing and isinstance(base, ScalarType) and attr == "element_ty":
            return F32  # a placeholder parameter type: guess what an unannotated pointer holds
        if isinstance(base, ScalarType) and attr == "primitive_bitwidth":
            return base.bits
        if isinstance(base, (ScalarType, PointerType)) and attr in _DTYPE_QUERIES:
            return Method(attr, base)
        raise self.error(f"{describe(base)} has no attribute '{attr}' in kernels", node)

    def expr_Call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords}
        if isinstance(func, Builtin):
            return func.impl(self, node, args, kwargs)
        if isinstance(func, JitRef):
            return self.call_jit(func.name, node, args, kwargs, func.module)
        if isinstance(func, Method):
            return self.call_method(func, node, args, kwargs)
        if func is isinstance:
            return self.kernel_isinstance(node, args, kwargs)
        if isinstance(func, LanguageClass) and func.name == "constexpr" and len(args) == 1 and not kwargs \
                and is_constant(args[0]):
            return args[0]  # tl.constexpr(3): the constant itself
        if callable(func) and func in _PY_BUILTINS.values():
            if func in (min, max) and any(isinstance(a, Expr) for a in args):
                return self.runtime_min_max(func, node, args, kwargs)
            if any(isinstance(a, Expr) for a in [*args, *kwargs.values()]):
                raise self.error(f"Python's {func.__name__}() works on constants only; "
                                 "use tl.maximum / tl.minimum on tiles", node)
            try:
                return func(*args, **kwargs)
            except (ArithmeticError, TypeError, ValueError) as err:  # float(1 << 2000): OverflowError
                raise self.error(f"{func.__name__}(): {err}", node) from None
        raise self.error(f"{describe(func)} cannot be called", node.func)

    def kernel_isinstance(self, node: ast.Call, args: list, kwargs: dict) -> bool:
        """Python's ``isinstance`` on a traced value, decided while tracing
        (a constant): the classes are the language's (LanguageClass) or
        Python's int, float and bool, one or a tuple of them."""
        if kwargs or len(args) != 2:
            raise self.error("isinstance() takes a value and a class (or a tuple of classes)", node)
        value, classes = args
        for cls in classes if isinstance(classes, tuple) else (classes,):
            if isinstance(cls, LanguageClass):
                if cls.holds(value):
                    return True
            elif cls in (int, float, bool):
                if not isinstance(value, Expr) and isinstance(value, cls):
                    return True
            else:
                raise self.error(f"isinstance() in a kernel takes tl.tensor, tl.tensor_descriptor, tl.constexpr "
                                 f"or int, float, bool; got {describe(cls)}", node)
        return False

    def runtime_min_max(self, func: Callable[..., Any], node: ast.Call, args: list, kwargs: dict) -> Any:
        """Python's min/max on runtime values: elementwise minimum/maximum of
        the arguments, left to right, as Triton maps them."""
        name = func.__name__
        if kwargs or len(args) < 2:
            raise self.error(f"Python's {name}() on runtime values takes two or more positional "
                             "arguments (no key= or default=)", node)
        for arg in args:
            if not (is_number(arg) or isinstance(arg, Expr)):
                raise self.error(f"Python's {name}() on runtime values needs numbers or tiles, "
                                 f"got {describe(arg)}", node)
        op = "minimum" if func is min else "maximum"
        result = args[0]
        for arg in args[1:]:
            if is_number(result) and is_number(arg):
                result = func(result, arg)
            else:
                result = self.make(op, (result, arg), node)
        return result

    def call_method(self, method: Method, node: ast.Call, args: list, kwargs: dict) -> Any:
        if method.name in TENSOR_METHODS:
            from mytriton.frontend.builtins import BUILTINS

            return BUILTINS[method.name].impl(self, node, [method.receiver, *args], kwargs)
        if method.name in _DTYPE_QUERIES:  # tl.float16.is_floating()
            if args or kwargs:
                raise self.error(f".{method.name}() takes no arguments", node)
            return _DTYPE_QUERIES[method.name](method.receiver)
        # x.to(dtype, fp_downcast_rounding=None, bitcast=False), as tl.cast(x, ...)
        from mytriton.frontend.builtins import cast_value

        names = ("dtype", "fp_downcast_rounding", "bitcast")
        if len(args) > len(names) or any(k not in names for k in kwargs):
            raise self.error(".to() takes a dtype and optionally fp_downcast_rounding= and bitcast=", node)
        bound = {"fp_downcast_rounding": None, "bitcast": False, **dict(zip(names, args))}
        for key, value in kwargs.items():
            if key in dict(zip(names, args)):
                raise self.error(f".to() got two values for '{key}'", node)
            bound[key] = value
        if "dtype" not in bound:
            raise self.error(".to() takes one dtype, such as tl.float16", node)
        return cast_value(self, node, method.receiver, bound["dtype"], bound["fp_downcast_rounding"],
                          bound["bitcast"], ".to()")

    def call_jit(self, name: str, node: ast.Call, args: list, kwargs: dict,
                 module: KernelModule | None = None) -> Any:
        """A call of the @jit function ``name`` of this module (or of
        ``module``, another file's), traced inline."""
        if module is not None and module is not self.module:
            return self.call_elsewhere(module, name, node, args, kwargs)
        fn = self.module.functions[name]
        if self.depth > 32:
            raise self.error(f"@jit calls nest too deeply (recursion in '{name}'?)", node)
        params = [a.arg for a in fn.args.args]
        defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
        if len(args) > len(params):
            raise self.error(f"'{name}' takes {len(params)} argument(s), got {len(args)}", node)
        env: dict[str, Any] = dict(zip(params, args))
        for key, value in kwargs.items():
            if key not in params:
                raise self.error(f"'{name}' has no parameter '{key}'", node)
            if key in env:
                raise self.error(f"'{name}' got two values for '{key}'", node)
            env[key] = value
        for param in params:
            if param not in env:
                if param not in defaults:
                    raise self.error(f"'{name}' is missing the argument '{param}'", node)
                env[param] = self.eval(defaults[param])
        # A helper's tl.constexpr annotation binds nothing in Triton, which
        # passes what the call gives (the fused-attention tutorial hands its
        # offs_m tile to `offs_m: tl.constexpr`); a use that needs a constant
        # says so where it is. mytriton's own library functions keep the
        # annotation as a contract, and say which argument broke it.
        if self.module.file.startswith("<mytriton.language."):
            for arg in fn.args.args:
                if isinstance(env[arg.arg], Expr) and is_constexpr(self.module, arg):
                    raise self.error(f"'{name}': parameter '{arg.arg}' is a tl.constexpr, but its argument is a "
                                     "value computed at run time", node)
        # A call whose arguments are the same values as an earlier call's in
        # this region gives that call's result: a helper that calls itself
        # twice per level costs one trace per level, not 2^depth. Only calls
        # that added no statement (no load, store, loop or print: nothing
        # whose place or repetition matters) are reused.
        key = _call_key(self.module, name, params, env)
        if key is not None and key in self.region.calls:
            return self.region.calls[key][1]
        # Kept with the result, so that the ids in the key stay theirs (the
        # helper may rebind its parameters' names).
        arguments = (self.module, *(env[p] for p in params))
        stmts, prints = len(self.region.stmts), self.budget.prints
        helper = Tracer(self.module, self.kernel, self.region, env, self.depth + 1, self.budget, self.site)
        result = None
        try:
            helper.run(fn.body)
        except _Return as ret:
            result = ret.value
        if key is not None and len(self.region.stmts) == stmts and self.budget.prints == prints \
                and _value_key(result) is not None:
            self.region.calls[key] = (arguments, result)
        return result

    def call_elsewhere(self, module: KernelModule, name: str, node: ast.Call, args: list, kwargs: dict) -> Any:
        """A call of a @jit function defined in another file: its syntax is
        checked there once, it is traced with that module's names, and an
        error in it says where it was called from."""
        from mytriton.frontend.syntax import check_function

        site = self.loc(node)
        try:
            if name not in module.checked:
                check_function(module, module.functions[name], entry=False)
                module.checked.add(name)
            helper = Tracer(module, self.kernel, self.region, {}, self.depth, self.budget, site)
            return helper.call_jit(name, node, args, kwargs)
        except CompileError as err:
            raise err.note(self.module.loc(node), f"in the call of '{name}' ({module.file}) from here") from None

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binary(node.op, self.eval(node.left), self.eval(node.right), node)

    def binary(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        if is_constant(a) and is_constant(b):
            # Judged before computing: 1 << 10**12 would take hours and gigabytes.
            too_large = constant_result_error(type(op), a, b)
            if too_large:
                raise self.error(f"constant arithmetic: {too_large}", node)
            try:
                result = _PY_BINOPS[type(op)](a, b)
            except ZeroDivisionError:
                raise self.error("division by zero in a constant expression", node) from None
            except (ArithmeticError, ValueError) as err:  # 1e308 / 1e-308, 1 << -1, big int / int
                raise self.error(f"constant arithmetic failed: {err}", node) from None
            except TypeError as err:  # a shift or bitwise operator on a float, as Python refuses it
                raise self.error(f"constant arithmetic: {err}", node) from None
            too_large = constant_value_error(result)
            if too_large:
                raise self.error(f"constant arithmetic: {too_large}", node)
            if isinstance(result, complex):  # (-8) ** 0.5
                raise self.error(f"constant arithmetic: the result {result} is complex", node)
            return result
        name = _TREE_BINOPS.get(type(op))
        if name is None:
            raise self.error("the operator '**' works on constants only (a runtime power: "
                             "libdevice.pow, tl.exp2)" if isinstance(op, ast.Pow)
                             else "this operator works on constants only", node)
        return self.make(name, (a, b), node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not) and not isinstance(value, Expr):
            return not value  # a constant flag (or None)
        if is_constant(value):
            try:  # -tl.float32 is Python's TypeError
                return _PY_UNARY[type(node.op)](value)
            except TypeError as err:  # ~2.5, as Python refuses it
                raise self.error(f"constant arithmetic: {err}", node) from None
        if not isinstance(value, Expr):
            raise self.error(f"{describe(value)} has no unary operators", node)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.USub):
            return self.make("neg", (value,), node)
        if isinstance(node.op, ast.Invert):
            return self.make("not", (value,), node)
        # ``not`` on a runtime value, as Triton's: the inverse of a boolean,
        # and of any other value its comparison with zero.
        if element_of(self.type_of(value, node)) == BOOL:
            return self.make("not", (value,), node)
        return self.make("cmp_eq", (value, 0), node)

    def expr_Compare(self, node: ast.Compare) -> Any:
        a, b = self.eval(node.left), self.eval(node.comparators[0])
        op = type(node.ops[0])
        if op in (ast.Is, ast.IsNot):  # ``ptr is None``: a question about constants, answered here
            if (isinstance(a, Expr) or isinstance(b, Expr)) and a is not None and b is not None:
                raise self.error("'is' compares with None or other constants; use '==' on runtime values", node)
            return (a is b) == (op is ast.Is)
        if is_constant(a) and is_constant(b):
            try:
                return _PY_COMPARE[op](a, b)
            except TypeError as err:  # 'ab' < 1, as Python refuses it
                raise self.error(f"constant comparison: {err}", node) from None
        if op in (ast.Eq, ast.NotEq) and not isinstance(a, Expr) and not isinstance(b, Expr):
            return _PY_COMPARE[op](a, b)
        return self.make(_TREE_COMPARE[op], (a, b), node)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        """``and``/``or``: Python's on constants; on runtime scalars Triton's
        logical_and/logical_or (each operand as a bool, both evaluated, no
        short circuit), as grouped GEMM's ``while (t >= a and t < b)``; on
        tiles, elementwise. A constant that decides the result still decides
        it; one that does not is dropped."""
        result: Any = None
        runtime: list[tuple[Any, ast.expr]] = []
        for operand in node.values:
            value = self.eval(operand)
            if isinstance(value, Expr):
                runtime.append((value, operand))
                continue
            result = value
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        if not runtime:
            return result
        combined: Any = None
        for value, operand in runtime:
            # As a bool (a comparison is one already; types are not known
            # yet inside a loop being traced, so nothing else is asked).
            if not (isinstance(value, Node) and value.op in _TREE_COMPARE.values()):
                value = self.make("cmp_ne", (value, 0), operand)
            combined = value if combined is None else self.make(
                "and" if isinstance(node.op, ast.And) else "or", (combined, value), node)
        return combined

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        """``a if c else b``: Python's on a constant ``c``; on a runtime
        scalar, as Triton's, an if whose branches each evaluate one side and
        yield it (only the side ``c`` picks runs)."""
        condition = self.eval(node.test)
        if not isinstance(condition, Expr):
            return self.eval(node.body if condition else node.orelse)
        if self.nesting() >= MAX_LOOP_NESTING:
            raise self.error(f"runtime loops and ifs nest more than {MAX_LOOP_NESTING} deep (MAX_LOOP_NESTING)",
                             node)
        self.region.reference(condition)
        regions, values = [], []
        for side in (node.body, node.orelse):
            region = Region(self.region)
            value = Tracer(self.module, self.kernel, region, dict(self.env), self.depth, self.budget,
                           self.site).eval(side)
            if not (is_number(value) or isinstance(value, Expr)):
                raise self.error(f"a conditional expression on a runtime value gives numbers or tiles, got "
                                 f"{describe(value)}", side)
            self.check_literal(value, side)
            region.reference(value)
            region.stmts.append(Yield((value,), self.loc(node)))
            regions.append(region)
            values.append(value)
        (result,) = self.if_node(condition, regions[0], regions[1], (values[0],), (values[1],), [None], node)
        return result

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        if isinstance(base, tuple) and isinstance(index, ast.Slice):  # x.shape[:-1], as in Triton
            bounds = [None if part is None else self.eval(part) for part in (index.lower, index.upper, index.step)]
            if not all(b is None or type(b) is int for b in bounds) or bounds[2] == 0:
                raise self.error("a tuple is sliced by integer constants (a step other than 0)", index)
            return base[slice(*bounds)]
        if isinstance(base, tuple):
            key = self.eval(index)
            if type(key) is not int:
                raise self.error("tuples are indexed by integer constants", index)
            try:
                return base[key]
            except IndexError:
                raise self.error(f"index {key} is out of range", index) from None
        if not isinstance(base, Expr):
            raise self.error(f"{describe(base)} cannot be indexed", node)
        result: Expr = base
        for axis, item in enumerate(items):
            if isinstance(item, ast.Constant) and item.value is None:
                result = self.make("expand_dims", (result,), node, axis=axis)
            elif isinstance(item, ast.Slice) and item.lower is None and item.upper is None and item.step is None:
                continue
            else:
                raise self.error("tiles are indexed only with ':' and None, as in x[:, None]", item)
        return result


# What a kernel may ask of a dtype (Triton's tl.dtype methods).
_DTYPE_QUERIES: dict[str, Callable[[Any], bool]] = {
    "is_floating": lambda t: isinstance(t, ScalarType) and t.is_float,
    "is_int": lambda t: isinstance(t, ScalarType) and not t.is_float,
    # Triton's SINT_TYPES / UINT_TYPES: int1 (bool) is neither.
    "is_int_signed": lambda t: isinstance(t, ScalarType) and not t.is_float and not t.is_bool and not t.unsigned,
    "is_int_unsigned": lambda t: isinstance(t, ScalarType) and not t.is_float and not t.is_bool and t.unsigned,
    "is_bool": lambda t: isinstance(t, ScalarType) and t.is_bool,
    "is_ptr": lambda t: isinstance(t, PointerType),
    "is_fp16": lambda t: isinstance(t, ScalarType) and t.name == "f16",
    "is_bf16": lambda t: isinstance(t, ScalarType) and t.name == "bf16",
    "is_fp32": lambda t: isinstance(t, ScalarType) and t.name == "f32",
    "is_int1": lambda t: isinstance(t, ScalarType) and t.is_bool,
    "is_int32": lambda t: isinstance(t, ScalarType) and t.name == "i32",
    "is_int64": lambda t: isinstance(t, ScalarType) and t.name == "i64",
}

_PY_BUILTINS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "float": float, "int": int, "abs": abs, "len": len, "bool": bool,
    "isinstance": isinstance,  # on traced values: Tracer.kernel_isinstance
}


def _value_key(value: Any) -> Hashable | None:
    """A key equal for two values only if a helper cannot tell them apart:
    runtime values by identity, constants by type and value (1, 1.0 and True
    differ); None for a value with no such key."""
    if isinstance(value, Expr):
        return ("expr", id(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, repr(value))
    if isinstance(value, tuple):
        keys = tuple(_value_key(v) for v in value)
        return None if any(k is None for k in keys) else ("tuple", keys)
    if isinstance(value, JitRef):  # equal by name alone: the module is part of the key
        return ("JitRef", value.name, id(value.module))
    if isinstance(value, (ScalarType, PointerType, Builtin, ModuleRef, UnsupportedDtype)):
        return (type(value).__name__, value)
    return None


def _call_key(module: KernelModule, name: str, params: list[str], env: dict[str, Any]) -> tuple | None:
    """The key of a call of ``module``'s @jit function ``name`` (a helper of
    another file may share its name) with the arguments in ``env``."""
    keys = tuple(_value_key(env[p]) for p in params)
    return None if any(k is None for k in keys) else (id(module), name, keys)


def _always_returns(stmts: list[ast.stmt]) -> bool:
    """Whether running ``stmts`` always ends in a return (so what follows
    them in the kernel is never reached from them)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _range_parts(parts: list[Any]) -> tuple[Any, Any, Any]:
    if len(parts) == 1:
        return 0, parts[0], 1
    if len(parts) == 2:
        return parts[0], parts[1], 1
    return parts[0], parts[1], parts[2]


class StatementFacts:
    """What statements' syntax says, found once per statement. A chain of
    elifs is each ``if`` nested in the previous one's ``else``: asked of
    every link about all the links below it, the questions would cost the
    square of the chain's length."""

    def __init__(self) -> None:
        # id(stmt) -> (stmt, the answer): the statement is kept so that its id stays its own.
        self._returns: dict[int, tuple[ast.stmt, bool]] = {}
        self._assigned: dict[int, tuple[ast.stmt, dict[str, ast.AST]]] = {}

    def may_return(self, stmt: ast.stmt) -> bool:
        known = self._returns.get(id(stmt))
        if known is not None and known[0] is stmt:
            return known[1]
        found = isinstance(stmt, ast.Return) or any(self.may_return(s) for s in _inner_statements(stmt))
        self._returns[id(stmt)] = (stmt, found)
        return found

    def assigned(self, body: list[ast.stmt]) -> dict[str, ast.AST]:
        """Names assigned anywhere in ``body``, in source order, with the first
        assigning node (carried values keep this order all the way down)."""
        found: dict[str, ast.AST] = {}
        for stmt in body:
            for name, node in self._assigned_by(stmt).items():
                found.setdefault(name, node)
        return found

    def _assigned_by(self, stmt: ast.stmt) -> dict[str, ast.AST]:
        known = self._assigned.get(id(stmt))
        if known is not None and known[0] is stmt:
            return known[1]
        found: dict[str, ast.AST] = {}
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For)) else []
        for target in targets:
            _add_names(found, target)
        for name, node in self.assigned(_inner_statements(stmt)).items():
            found.setdefault(name, node)
        self._assigned[id(stmt)] = (stmt, found)
        return found


def _inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside ``stmt`` (kernels nest statements only in if, for and while)."""
    if isinstance(stmt, (ast.If, ast.For, ast.While)):
        return [*stmt.body, *stmt.orelse]
    return []


def _add_names(found: dict[str, ast.AST], target: ast.expr) -> None:
    if isinstance(target, ast.Name):
        found.setdefault(target.id, target)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _add_names(found, element)


def describe(value: Any) -> str:
    if isinstance(value, Expr):
        return "a runtime value"
    if isinstance(value, UnsupportedDtype):
        return f"tl.{value.name}, one of Triton's 8-bit float types, which mytriton does not support"
    if isinstance(value, ScalarType):
        return f"the dtype {value.name}"
    if isinstance(value, PointerType):
        return f"the pointer type {value}"
    if isinstance(value, Method):
        return f"the method '{value.name}'"
    if isinstance(value, Builtin):
        return f"tl.{value.name}"
    if isinstance(value, JitRef):
        return f"the @jit function '{value.name}'"
    if isinstance(value, ModuleRef):
        return f"the module '{value.qualified}'"
    if isinstance(value, PyModuleRef):
        return f"the module '{getattr(value.module, '__name__', '?')}'"
    from mytriton.frontend.block_pointers import BlockPointer, TensorDescriptor

    if isinstance(value, BlockPointer):
        return "a block pointer"
    if isinstance(value, TensorDescriptor):
        return "a tensor descriptor"
    if isinstance(value, tuple):
        return "a tuple"
    if value is None:
        return "None"
    if isinstance(value, str):
        return f"the string {value!r}"
    if is_number(value):
        return f"the constant {value!r}"
    return f"'{type(value).__name__}'"


# ---- tracing a kernel ---------------------------------------------------------


def _descriptor_param(module: KernelModule, kernel: TreeKernel, arg: ast.arg, t: DescriptorParam,
                      names: set[str]) -> Any:
    """A parameter passed a host tensor descriptor: the kernel's parameters
    for its parts, and the descriptor they make (as tl.make_tensor_descriptor's)."""
    from mytriton.frontend.block_pointers import MAX_DESCRIPTOR_RANK, TensorDescriptor

    where = module.loc(arg)
    block = t.block_shape
    if not 1 <= len(block) <= MAX_DESCRIPTOR_RANK or any(b <= 0 or b & (b - 1) for b in block):
        raise CompileError(f"'{arg.arg}': a tensor descriptor's block_shape is 1 to {MAX_DESCRIPTOR_RANK} powers of "
                           f"two, got {list(block)}", where)
    if math.prod(block) > 1 << 20:
        raise CompileError(f"'{arg.arg}': a block of {list(block)} has more than 2**20 elements", where)
    if block[-1] * t.element.nbytes < 16:
        raise CompileError(f"'{arg.arg}': the block's last dimension must span at least 16 bytes, got {block[-1]} x "
                           f"{t.element.name}", where)
    if t.padding == "nan" and not t.element.is_float:
        raise CompileError(f"'{arg.arg}': padding 'nan' needs floating-point elements, got {t.element.name}", where)
    parts = t.parts(arg.arg)
    for part, _ in parts[1:]:
        if part in names:
            raise CompileError(f"'{arg.arg}' is a tensor descriptor, whose part '{part}' is also the name of a "
                               "parameter; rename that parameter", where)
    kernel.params.extend(parts)
    refs = [kernel.param(part) for part, _ in parts]
    rank = len(block)
    return TensorDescriptor(refs[0], tuple(refs[1:1 + rank]), (*refs[1 + rank:], 1), block, t.padding)


def _is_jit_function(value: Any) -> bool:
    if is_constant(value):
        return False
    from mytriton.runtime.jit import JITFunction

    return isinstance(value, JITFunction)


def trace_kernel(module: KernelModule, name: str, constexprs: dict[str, Any],
                 runtime_types: dict[str, Type | DescriptorParam], probing: bool = False,
                 f32_default: str | None = None) -> tuple[TreeKernel, bool]:
    """Trace ``name`` with the given constexpr values and runtime parameter
    types (already matched to the kernel's parameters); also whether the
    kernel asked for a type (``x.dtype``). A probe trace (``probing``) has
    placeholder types: it guesses types it cannot know, prints nothing and
    lets static assertions pass."""
    fn = module.functions[name]
    kernel = TreeKernel(name, [], {}, [], module.loc(fn))
    env: dict[str, Any] = {}
    region = Region(None)
    budget = TraceBudget()
    budget.probing = probing
    budget.f32_default = f32_default
    tracer = Tracer(module, kernel, region, env, budget=budget)
    names = {arg.arg for arg in fn.args.args}
    for arg in fn.args.args:
        if arg.arg in constexprs and _is_jit_function(constexprs[arg.arg]):
            # A @jit function passed as a constexpr (an activation, a combine
            # function), called in the kernel as the module's own helpers are;
            # the IR names it.
            from mytriton.frontend.namespace import binding_of

            value = constexprs[arg.arg]
            env[arg.arg] = tracer.bound_value(arg.arg, binding_of(module, arg.arg, value), arg)
            kernel.constexprs[arg.arg] = repr(value)
        elif arg.arg in constexprs:
            env[arg.arg] = constexprs[arg.arg]
            kernel.constexprs[arg.arg] = constexprs[arg.arg]
        elif isinstance(runtime_types[arg.arg], DescriptorParam):
            env[arg.arg] = _descriptor_param(module, kernel, arg, runtime_types[arg.arg], names)
        else:
            kernel.params.append((arg.arg, runtime_types[arg.arg]))
            env[arg.arg] = kernel.param(arg.arg)
    # A return at the kernel's top level: the statements after it never run.
    with contextlib.suppress(_Return):
        tracer.run(fn.body)
    kernel.body = region.stmts
    return kernel, budget.asked_types
