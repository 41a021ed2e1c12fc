"""The ``lower`` stage: type inference and lowering of the tree IR to SSA.

Expressions are lowered lazily, when a statement needs them, and memoised by
identity; loads are anchored where the kernel wrote them. A loop lowers its
captures and carried inputs in the enclosing block before entering its body,
so nothing defined inside a body is needed outside it: regions are closed, as MLIR's are.
Type rules come from the op table (``ir/opdefs.py``); a broken rule is
reported at the kernel source line of the expression.
"""
from __future__ import annotations

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.literals import carried_type_fits, literal_conversion_error, operand_type
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, Operand, Param, combine_region_problem, make_combine, make_for, make_if, make_while,
)
from mytriton.ir.tree import (
    Arg, CombineStmt, Effect, Expr, ForRange, IfStmt, Let, LoopCarry, LoopIndex, LoopResult, Node, ParamRef, Stmt,
    TreeKernel, WhileLoop, Yield,
)
from mytriton.types import BOOL, BlockType, PointerType, TypeRuleError, concrete, element_of


class Lowerer:
    def __init__(self, tree: TreeKernel) -> None:
        self.tree = tree
        self.params = {name: Param(name, t, tree.param_attrs.get(name)) for name, t in tree.params}
        self.block = Block()
        self.scopes: list[dict[int, Operand]] = [{}]

    def lower(self) -> Kernel:
        self.region(self.tree.body, self.block)
        return Kernel(self.tree.name, list(self.params.values()), dict(self.tree.constexprs),
                      self.block, self.tree.loc)

    # ---- statements ---------------------------------------------------------------
    def region(self, stmts: list[Stmt], block: Block) -> None:
        outer = self.block
        self.block = block
        for stmt in stmts:
            if isinstance(stmt, Let):
                if opdefs.reads_memory(stmt.node.op) or opdefs.has_effect(stmt.node.op):
                    self.expr(stmt.node)  # anchored: memory may change after this point
            elif isinstance(stmt, Effect):
                self.expr(stmt.node)
            elif isinstance(stmt, ForRange):
                self.loop(stmt)
            elif isinstance(stmt, IfStmt):
                self.if_stmt(stmt)
            elif isinstance(stmt, WhileLoop):
                self.while_loop(stmt)
            elif isinstance(stmt, CombineStmt):
                self.combine(stmt)
        self.block = outer

    def scalar_condition(self, expr: Arg, loc, what: str) -> Operand:
        """A runtime condition: a bool scalar (an integer scalar compares
        unequal to 0, as in Python); a tile is refused, as in Triton."""
        value = self.expr(expr)
        t = operand_type(value)
        where = expr.loc if isinstance(expr, Node) and expr.loc is not None else loc
        if t is None or isinstance(t, BlockType):
            got = "None" if t is None else f"a tile ({t})"
            raise CompileError(f"the condition of {what} must be a scalar, got {got}; "
                               "use tl.where(condition, a, b) on tiles", where)
        if concrete(t) == BOOL:
            return value
        if isinstance(element_of(t), PointerType) or concrete(t).is_float:
            raise CompileError(f"the condition of {what} must be a bool or integer scalar, got {t}", where)
        return self.emit("cmp_ne", [value, Const(0)], {}, Node("cmp_ne", (), {}, where))

    def region_yields(self, stmts: list[Stmt], block: Block, scope: dict) -> list[Operand]:
        """Lower a region's statements into ``block`` under ``scope``; the
        values its final ``Yield`` gives (lowered in the region)."""
        self.scopes.append(scope)
        self.region([s for s in stmts if not isinstance(s, Yield)], block)
        last = stmts[-1] if stmts and isinstance(stmts[-1], Yield) else None
        outer = self.block
        self.block = block
        yields = [self.expr(v) for v in (last.values if last else ())]
        self.block = outer
        self.scopes.pop()
        return yields

    def if_stmt(self, stmt: IfStmt) -> None:
        cond = self.scalar_condition(stmt.condition, stmt.loc, "an 'if'")
        for capture in stmt.captures:
            self.expr(capture)
        then_block, else_block = Block(), Block()
        then_values = self.region_yields(stmt.then_body, then_block, {})
        else_values = self.region_yields(stmt.else_body, else_block, {})
        types = []
        for result, a, b in zip(stmt.results, then_values, else_values):
            name = result.hint or f"#{result.index}"
            if a is None or b is None:
                raise CompileError(f"'{name}' is None after a branch of this 'if'", stmt.loc)
            # A literal takes the type of the other branch's value.
            declared = concrete(b.type if isinstance(a, Const) and not isinstance(b, Const) else a.type)
            for value in (a, b):
                if not carried_type_fits(declared, value):
                    raise CompileError(f"'{name}' is {concrete(a.type)} after one branch of this 'if' and "
                                       f"{concrete(b.type)} after the other; give it the same type in both",
                                       stmt.loc)
            types.append(declared)
        op = make_if(cond, types, stmt.loc)
        op.regions = [then_block, else_block]  # lowered before the result types were known
        for block, values in zip(op.regions, (then_values, else_values)):
            block.parent = op
            block.append(Op("yield", values, [], loc=stmt.loc))
        self.block.append(op)
        for result, value in zip(stmt.results, op.results):
            self.scopes[-1][id(result)] = value

    def combine(self, stmt: CombineStmt) -> None:
        """A reduce or scan: its tiles lowered here, its combine region on
        scalars of their element types."""
        inputs = [self.expr(x) for x in stmt.inputs]
        opdef = opdefs.OPS[stmt.op]
        try:
            result_types = opdef.infer([operand_type(o) for o in inputs], stmt.attrs)
        except TypeRuleError as err:
            raise CompileError(str(err), stmt.loc) from None
        elements = [concrete(element_of(o.type)) for o in inputs]
        if len(stmt.args) != 2 * len(inputs):
            raise CompileError(f"the combine function of '{stmt.op}' over {len(inputs)} tile(s) takes "
                               f"{2 * len(inputs)} scalars, got {len(stmt.args)}", stmt.loc)
        op = make_combine(stmt.op, inputs, elements, result_types, dict(stmt.attrs), stmt.loc)
        body = op.regions[0]
        yields = self.region_yields(stmt.body, body, {id(a): v for a, v in zip(stmt.args, body.args)})
        if len(yields) != len(inputs):
            raise CompileError(f"the combine function of '{stmt.op}' over {len(inputs)} tile(s) must return "
                               f"{len(inputs)} value(s), got {len(yields)}", stmt.loc)
        for i, (element, value) in enumerate(zip(elements, yields)):
            if not carried_type_fits(element, value):
                got = "None" if value is None else value.type
                raise CompileError(f"the combine function returns {got} for value {i}, but the tile holds "
                                   f"{element}; combine values of their own type (cast them)", stmt.loc)
        body.append(Op("yield", yields, [], loc=stmt.loc))
        problem = combine_region_problem(op)
        if problem is not None:
            inner, message = problem
            raise CompileError(message, inner.loc or stmt.loc)
        self.block.append(op)
        for result, value in zip(stmt.results, op.results):
            self.scopes[-1][id(result)] = value

    def while_loop(self, loop: WhileLoop) -> None:
        for capture in loop.captures:
            self.expr(capture)
        inits = [self.expr(v) for v in loop.carried_inputs]
        types = []
        for init, arg in zip(inits, loop.carried_args):
            if init is None:
                raise CompileError("a loop cannot carry None", loop.loc)
            types.append(concrete(init.type))
        op = make_while(inits, types, loop.loc)
        before, after = op.regions
        self.scopes.append({id(arg): value for arg, value in zip(loop.carried_args, before.args)})
        self.region(loop.before, before)
        outer = self.block
        self.block = before
        cond = self.scalar_condition(loop.condition, loop.loc, "a 'while'")
        self.block = outer
        self.scopes.pop()
        before.append(Op("condition", [cond], [], loc=loop.loc))
        yields = self.region_yields(loop.body, after, {id(arg): value
                                                       for arg, value in zip(loop.carried_args, after.args)})
        names = [arg.hint or f"#{arg.index}" for arg in loop.carried_args]
        for name, declared, value in zip(names, types, yields):
            if not carried_type_fits(declared, value):
                got = "None" if value is None else value.type
                raise CompileError(f"loop-carried '{name}' changes type in the loop: it enters as {declared} "
                                   f"and the body makes it {got}", loop.loc)
        after.append(Op("yield", yields, [], loc=loop.loc))
        self.block.append(op)
        for result, value in zip(loop.results, op.results):
            self.scopes[-1][id(result)] = value

    def loop(self, loop: ForRange) -> None:
        bounds = [self.expr(b) for b in (loop.start, loop.stop, loop.step)]
        try:
            index_type = opdefs.loop_index_type([operand_type(b) for b in bounds])
        except TypeRuleError as err:
            raise CompileError(str(err), loop.loc) from None

        def in_index_type(bound: Operand) -> Operand:
            """A bound in the index's type, as Triton casts them (an i32 stop
            of a loop that starts at an i64)."""
            if isinstance(bound, Const) or concrete(bound.type) == index_type:
                return bound
            cast = Op("cast", [bound], [index_type], {"dtype": index_type}, loop.loc)
            self.block.append(cast)
            return cast.results[0]

        start, stop, step = (in_index_type(b) for b in bounds)
        for capture in loop.captures:
            self.expr(capture)
        inits = [self.expr(v) for v in loop.carried_inputs]
        types = []
        for init, value in zip(inits, loop.carried_inputs):
            if init is None:
                raise CompileError("a loop cannot carry None", loop.loc)
            types.append(concrete(init.type))
        op = make_for(start, stop, step, inits, types, loop.loc, index_type)
        op.attrs = dict(loop.attrs)
        body = op.regions[0]
        scope: dict[int, Operand] = {id(loop.index): body.args[0]}
        scope.update({id(arg): value for arg, value in zip(loop.carried_args, body.args[1:])})
        self.scopes.append(scope)
        self.region([s for s in loop.body if not isinstance(s, Yield)], body)
        outputs = loop.carried_outputs
        outer = self.block
        self.block = body
        yields = [self.expr(v) for v in outputs]
        self.block = outer
        self.scopes.pop()
        names = [arg.hint or f"#{arg.index}" for arg in loop.carried_args]
        for name, declared, value, tree_value in zip(names, types, yields, outputs):
            if not carried_type_fits(declared, value):
                got = "None" if value is None else value.type
                where = tree_value.loc if isinstance(tree_value, Node) else loop.loc
                raise CompileError(
                    f"loop-carried '{name}' changes type in the loop: it enters as {declared} "
                    f"and the body makes it {got}", where)
        body.append(Op("yield", yields, [], loc=loop.loc))
        self.block.append(op)
        for result, value in zip(loop.results, op.results):
            self.scopes[-1][id(result)] = value

    # ---- expressions ----------------------------------------------------------------
    def lookup(self, expr: Expr) -> Operand | None:
        for scope in reversed(self.scopes):
            if id(expr) in scope:
                return scope[id(expr)]
        return None

    def expr(self, expr: Arg) -> Operand:
        if expr is None:
            return None
        if isinstance(expr, (bool, int, float)):
            return Const(expr)
        if isinstance(expr, ParamRef):
            return self.params[expr.name]
        found = self.lookup(expr)
        if found is not None:
            return found
        if isinstance(expr, (LoopIndex, LoopCarry, LoopResult)):
            raise CompileError(f"internal error: loop value {expr!r} used out of its scope")
        assert isinstance(expr, Node)
        operands = [self.expr(a) for a in expr.args]
        value = self.build(expr, operands)
        self.scopes[-1][id(expr)] = value
        return value

    def build(self, node: Node, operands: list[Operand]) -> Operand:
        name = node.op
        types = [operand_type(o) for o in operands]
        # ``+`` and ``-`` on a pointer are pointer arithmetic.
        if name in ("add", "sub") and any(isinstance(element_of(t), PointerType) for t in types if t):
            ptr_first = isinstance(element_of(types[0]), PointerType) if types[0] else False
            if name == "sub":
                if not ptr_first or isinstance(element_of(types[1]), PointerType):
                    raise CompileError("only an integer can be subtracted from a pointer", node.loc)
                operands = [operands[0], self.emit("neg", [operands[1]], {}, node)]
            elif not ptr_first:
                operands = [operands[1], operands[0]]
            name = "addptr"
        if name == "store":
            operands = self.stored_as_pointee(operands, node)
        return self.emit(name, operands, node.attrs, node)

    def stored_as_pointee(self, operands: list[Operand], node: Node) -> list[Operand]:
        """A stored value converted to the pointer's element type by a
        ``cast`` of its own, as Triton's ``tl.store`` converts it: the passes
        after see the narrow value (layouts exchange an f32 accumulator
        stored to f16 as f16, at half the shared memory). A literal stays
        as it is: the store converts it exactly."""
        ptr, value, mask = operands
        pointer = element_of(operand_type(ptr)) if ptr is not None else None
        if isinstance(value, Const) or value is None or not isinstance(pointer, PointerType):
            return operands
        source = element_of(concrete(value.type))
        if isinstance(source, PointerType) or source == pointer.pointee:
            return operands
        return [ptr, self.emit("cast", [value], {"dtype": pointer.pointee}, node), mask]

    def emit(self, name: str, operands: list[Operand], attrs: dict, node: Node) -> Operand:
        opdef = opdefs.lookup(name)
        assert opdef is not None, name
        try:
            result_types = opdef.infer([operand_type(o) for o in operands], attrs)
        except TypeRuleError as err:
            raise CompileError(str(err), node.loc) from None
        op = Op(name, operands, result_types, attrs, node.loc)
        problem = literal_conversion_error(op)
        if problem is not None:
            raise CompileError(problem, node.loc)
        self.block.append(op)
        return op.results[0] if op.results else None


def lower_tree(tree: TreeKernel) -> Kernel:
    return Lowerer(tree).lower()
