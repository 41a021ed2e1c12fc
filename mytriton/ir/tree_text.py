"""Tree text: the printer and the parser, side by side (grammars/tree.lark).

An expression is printed inline where it is used once; one used twice or
more, captured by a loop, or anchored by a ``Let`` is bound once with
``let $name = ...`` in the region that owns it, just before the first
statement that needs it. Names come from the Python variables the tracer saw.
"""
from __future__ import annotations

from mytriton.ir.lark_module import lark

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.grammar import parse_text, rule
from mytriton.ir.text_common import (
    TextReader, check_text_limits, format_attr, format_header, format_literal, format_loc, format_loop_attrs,
)
from mytriton.ir.tree import (
    Arg, CombineStmt, Effect, Expr, ForRange, IfStmt, Let, LoopCarry, LoopIndex, LoopResult, Node, ParamRef, Stmt,
    TreeKernel, WhileLoop, Yield, children, stmt_roots,
)

INDENT = "  "

def tree_op(name: str) -> opdefs.OpDef | None:
    """The op a tree call names. Tree-only spellings: ``add`` of a pointer
    becomes ``addptr`` when lowered, so the tree accepts every SSA op but the
    structural ones (``for``, ``yield``)."""
    opdef = opdefs.lookup(name)
    return None if opdef is None or opdef.control or opdef.combine else opdef


def _has_effect(name: str) -> bool:
    """Whether an op may stand as a statement on its own: it writes memory,
    synchronises or talks to the host."""
    return opdefs.writes_memory(name) or opdefs.synchronises(name) or opdefs.talks_to_host(name)


# ---- printing ---------------------------------------------------------------------


class _TreePrinter:
    def __init__(self, kernel: TreeKernel) -> None:
        self.kernel = kernel
        self.counts: dict[int, int] = {}
        self.named: set[int] = set()
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.printed: set[int] = set()
        self.lines: list[str] = []
        self._count_region(kernel.body, set())

    # -- which expressions need a name
    def _count_region(self, stmts: list[Stmt], seen: set[int]) -> None:
        for stmt in stmts:
            if isinstance(stmt, Let):
                self.named.add(id(stmt.node))
            if isinstance(stmt, ForRange):
                for capture in stmt.captures:
                    self.named.add(id(capture))
                for roots in (stmt.start, stmt.stop, stmt.step, *stmt.carried_inputs):
                    self._count(roots, seen)
                self._count_region(stmt.body, seen)
            elif isinstance(stmt, IfStmt):
                for capture in stmt.captures:
                    self.named.add(id(capture))
                self._count(stmt.condition, seen)
                self._count_region(stmt.then_body, seen)
                self._count_region(stmt.else_body, seen)
            elif isinstance(stmt, CombineStmt):
                for root in stmt.inputs:
                    self._count(root, seen)
                self._count_region(stmt.body, seen)
            elif isinstance(stmt, WhileLoop):
                for capture in stmt.captures:
                    self.named.add(id(capture))
                for root in stmt.carried_inputs:
                    self._count(root, seen)
                self._count_region(stmt.before, seen)
                self._count(stmt.condition, seen)
                self._count_region(stmt.body, seen)
            else:
                for root in stmt_roots(stmt):
                    self._count(root, seen)

    def _count(self, expr: Arg, seen: set[int]) -> None:
        if not isinstance(expr, Node):
            return
        key = id(expr)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] == 2:
            self.named.add(key)
        if key in seen:
            return
        seen.add(key)
        for child in children(expr):
            self._count(child, seen)

    def _name(self, expr: Expr) -> str:
        key = id(expr)
        if key not in self.names:
            base = expr.hint or ""
            name = f"${base}" if base else f"${len(self.names)}"
            n = 1
            while name in self.taken:
                name = f"${base}.{n}" if base else f"${len(self.names)}.{n}"
                n += 1
            self.taken.add(name)
            self.names[key] = name
        return self.names[key]

    # -- rendering
    def render(self, expr: Arg) -> str:
        if expr is None:
            return "none"
        if isinstance(expr, (bool, int, float)):
            return format_literal(expr)
        if isinstance(expr, ParamRef):
            return expr.name
        if id(expr) in self.names and (id(expr) in self.printed or not isinstance(expr, Node)):
            return self.names[id(expr)]
        assert isinstance(expr, Node), f"unprintable expression {expr!r}"
        return self.render_node(expr)

    def render_node(self, node: Node) -> str:
        args = [self.render(a) for a in node.args]
        opdef = opdefs.lookup(node.op)
        order = list(opdef.attrs) if opdef else []
        order += [k for k in node.attrs if k not in order]
        args += [f"{k}={format_attr(node.attrs[k])}" for k in order if k in node.attrs]
        return f"{node.op}({', '.join(args)}){format_loc(node.loc)}"

    def ensure(self, expr: Arg, depth: int) -> None:
        """Print ``let`` lines for the named expressions ``expr`` needs."""
        if not isinstance(expr, Node) or id(expr) in self.printed:
            return
        for child in children(expr):
            self.ensure(child, depth)
        if id(expr) in self.named:
            name = self._name(expr)
            self.lines.append(f"{INDENT * depth}let {name} = {self.render_node(expr)}")
            self.printed.add(id(expr))

    def region(self, stmts: list[Stmt], depth: int) -> None:
        pad = INDENT * depth
        for stmt in stmts:
            if isinstance(stmt, Let):
                self.ensure(stmt.node, depth)
            elif isinstance(stmt, Effect):
                for child in children(stmt.node):
                    self.ensure(child, depth)
                self.lines.append(pad + self.render_node(stmt.node))
            elif isinstance(stmt, Yield):
                for value in stmt.values:
                    self.ensure(value, depth)
                values = ", ".join(self.render(v) for v in stmt.values)
                self.lines.append(f"{pad}yield{' ' + values if values else ''} {format_loc(stmt.loc)}")
            elif isinstance(stmt, IfStmt):
                self.if_stmt(stmt, depth)
            elif isinstance(stmt, WhileLoop):
                self.while_loop(stmt, depth)
            elif isinstance(stmt, CombineStmt):
                self.combine(stmt, depth)
            else:
                self.loop(stmt, depth)

    def combine(self, stmt: CombineStmt, depth: int) -> None:
        pad = INDENT * depth
        for root in stmt.inputs:
            self.ensure(root, depth)
        args = [self.render(x) for x in stmt.inputs]
        order = list(opdefs.OPS[stmt.op].attrs)
        args += [f"{k}={format_attr(stmt.attrs[k])}" for k in order if k in stmt.attrs]
        head = f"{pad}{stmt.op}({', '.join(args)})"
        head += " combine(" + ", ".join(self._name(a) for a in stmt.args) + ")"
        head += " -> (" + ", ".join(self._name(r) for r in stmt.results) + ")"
        self.lines.append(f"{head} {format_loc(stmt.loc)} {{")
        self.region(stmt.body, depth + 1)
        self.lines.append(f"{pad}}}")

    def if_stmt(self, stmt: IfStmt, depth: int) -> None:
        pad = INDENT * depth
        for root in (stmt.condition, *stmt.captures):
            self.ensure(root, depth)
        head = f"{pad}if {self.render(stmt.condition)}"
        head += " captures(" + ", ".join(self.render(c) for c in stmt.captures) + ")"
        head += " -> (" + ", ".join(self._name(r) for r in stmt.results) + ")"
        self.lines.append(f"{head} {format_loc(stmt.loc)} {{")
        self.region(stmt.then_body, depth + 1)
        self.lines.append(f"{pad}}} else {{")
        self.region(stmt.else_body, depth + 1)
        self.lines.append(f"{pad}}}")

    def while_loop(self, loop: WhileLoop, depth: int) -> None:
        pad = INDENT * depth
        for root in (*loop.captures, *loop.carried_inputs):
            self.ensure(root, depth)
        head = f"{pad}while captures(" + ", ".join(self.render(c) for c in loop.captures) + ")"
        carried = ", ".join(f"{self._name(arg)} = {self.render(init)}"
                            for arg, init in zip(loop.carried_args, loop.carried_inputs))
        head += f" iter_args({carried})"
        head += " -> (" + ", ".join(self._name(r) for r in loop.results) + ")"
        self.lines.append(f"{head} {format_loc(loop.loc)} {{")
        self.region(loop.before, depth + 1)
        self.ensure(loop.condition, depth + 1)
        self.lines.append(f"{pad}}} condition {self.render(loop.condition)} do {{")
        self.region(loop.body, depth + 1)
        self.lines.append(f"{pad}}}")

    def loop(self, loop: ForRange, depth: int) -> None:
        pad = INDENT * depth
        for root in (loop.start, loop.stop, loop.step, *loop.captures, *loop.carried_inputs):
            self.ensure(root, depth)
        index = self._name(loop.index)
        head = (f"{pad}for {index} in range({self.render(loop.start)}, {self.render(loop.stop)}, "
                f"{self.render(loop.step)}{format_loop_attrs(loop.attrs)})")
        head += " captures(" + ", ".join(self.render(c) for c in loop.captures) + ")"
        carried = ", ".join(f"{self._name(arg)} = {self.render(init)}"
                            for arg, init in zip(loop.carried_args, loop.carried_inputs))
        head += f" iter_args({carried})"
        head += " -> (" + ", ".join(self._name(r) for r in loop.results) + ")"
        self.lines.append(f"{head} {format_loc(loop.loc)} {{")
        self.region(loop.body, depth + 1)
        self.lines.append(f"{pad}}}")


def print_tree(kernel: TreeKernel) -> str:
    printer = _TreePrinter(kernel)
    printer.lines.append(format_header("tree", kernel.name, kernel.params, kernel.constexprs, kernel.loc,
                                       kernel.digest, param_attrs=kernel.param_attrs))
    printer.region(kernel.body, 1)
    printer.lines.append("}")
    return "\n".join(printer.lines) + "\n"


# ---- parsing -----------------------------------------------------------------------


class _Scope:
    """Bindings visible in one region. A loop body sees its own bindings, its
    index and carried values, and only the outer bindings it captures."""

    def __init__(self, parent: "_Scope | None", captures: dict[str, Expr] | None = None) -> None:
        self.parent = parent
        self.bindings: dict[str, Expr] = dict(captures or {})

    def lookup(self, name: str) -> tuple[Expr | None, bool]:
        """(expression, visible): an outer binding the loop did not capture is
        found but not visible."""
        if name in self.bindings:
            return self.bindings[name], True
        scope = self.parent
        while scope is not None:
            if name in scope.bindings:
                return scope.bindings[name], False
            scope = scope.parent
        return None, False


class _TreeReader(TextReader):
    def kernel(self, tree: lark.Tree) -> TreeKernel:
        kernel_tree = tree.children[0]
        name, *rest = kernel_tree.children
        trees = [c for c in rest if isinstance(c, lark.Tree)]
        params = [c for c in trees if rule(c) == "param"]
        constexprs = next((c for c in trees if rule(c) == "constexprs"), None)
        file_loc = next(c for c in trees if rule(c) == "file_loc")
        loc = self.file_loc(file_loc)
        read = self.read_params(params)
        self.out = TreeKernel(str(name), [(n, t) for n, t, _ in read],
                              self.constexprs(constexprs), [], loc, digest=self.source_digest)
        for pname, ptype, ptree in read:
            attrs = self.param_attrs(ptree, ptype)
            if attrs:
                self.out.param_attrs[pname] = attrs
        self.param_names = {n for n, _ in self.out.params}
        stmts = [c for c in trees if rule(c) in _STMTS]
        self.out.body = self.region(stmts, _Scope(None), in_loop=None)
        return self.out

    def region(self, stmts: list[lark.Tree], scope: _Scope, in_loop: list | None,
               owner: lark.Tree | None = None) -> list[Stmt]:
        """``in_loop``: what a final ``yield`` must give one value for (a
        loop's carried values, an if's results); None where no yield may be."""
        out: list[Stmt] = []
        for i, stmt in enumerate(stmts):
            kind = rule(stmt)
            if kind == "let":
                token, expr_tree = stmt.children
                expr = self.expr(expr_tree, scope)
                if not isinstance(expr, Node):
                    raise self.error("'let' must bind an operation", expr_tree)
                self.bind(scope, token, expr)
                out.append(Let(expr))
            elif kind == "effect":
                node = self.call(stmt, scope)
                if not _has_effect(node.op):
                    raise self.error(f"'{node.op}' has no effect; bind it with 'let' or use it", stmt)
                out.append(Effect(node))
            elif kind == "yield_stmt":
                *values, loc = stmt.children
                if in_loop is None:
                    raise self.error("'yield' outside a loop body or an if branch", stmt)
                if i != len(stmts) - 1:
                    raise self.error("'yield' must end its region", stmt)
                exprs = tuple(self.expr(v, scope) for v in values if v is not None)
                if len(exprs) != len(in_loop):
                    raise self.error(f"the region gives {len(in_loop)} value(s) but yields {len(exprs)}", stmt)
                out.append(Yield(exprs, self.loc(loc)))
            elif kind == "if_stmt":
                out.append(self.if_stmt(stmt, scope))
            elif kind == "while_stmt":
                out.append(self.while_loop(stmt, scope))
            elif kind == "combine_stmt":
                out.append(self.combine(stmt, scope))
            else:
                out.append(self.loop(stmt, scope))
        if in_loop and not (out and isinstance(out[-1], Yield)):
            what = "an if branch that gives values" if owner is not None and rule(owner) == "tree_region" \
                else "a loop that carries values"
            raise self.error(f"{what} must end with 'yield'", stmts[-1] if stmts else owner)
        return out

    def bind(self, scope: _Scope, token: lark.Token, expr: Expr) -> None:
        name = str(token)
        if name in scope.bindings:
            raise self.error(f"{name} is already bound", token)
        scope.bindings[name] = expr
        expr.hint = _hint(name)

    def loop(self, tree: lark.Tree, scope: _Scope) -> ForRange:
        index_token, start, stop, step, attrs_tree, captures_tree, iter_tree, results_tree, loc, *body = tree.children
        bounds = [self.expr(b, scope) for b in (start, stop, step)]
        attrs = self.loop_attrs(attrs_tree)
        captures = self.captures(captures_tree, scope)
        carried_args: list[LoopCarry] = []
        inits: list[Arg] = []
        body_scope = _Scope(scope, captures)
        for item in (iter_tree.children if iter_tree is not None else []):
            if item is None:
                continue
            token, init = item.children
            inits.append(self.expr(init, scope))
            carry = LoopCarry(len(carried_args))
            carried_args.append(carry)
            self.bind(body_scope, token, carry)
        index = LoopIndex()
        self.bind(body_scope, index_token, index)
        loop = ForRange(index, bounds[0], bounds[1], bounds[2], tuple(captures.values()), [],
                        tuple(inits), tuple(carried_args), (), self.loc(loc), attrs)
        loop.body = self.region([b for b in body if isinstance(b, lark.Tree)], body_scope, carried_args, tree)
        result_tokens = self.result_tokens(results_tree)
        if len(result_tokens) != len(carried_args):
            raise self.error(f"the loop carries {len(carried_args)} value(s) but names "
                             f"{len(result_tokens)} result(s)", tree)
        loop.results = tuple(LoopResult(loop, i) for i in range(len(result_tokens)))
        for token, result in zip(result_tokens, loop.results):
            self.bind(scope, token, result)
        return loop

    def captures(self, tree: lark.Tree | None, scope: _Scope) -> dict[str, Expr]:
        found: dict[str, Expr] = {}
        for token in (tree.children if tree is not None else []):
            if token is not None:
                found[str(token)] = self.resolve(token, scope)
        return found

    def result_tokens(self, tree: lark.Tree | None) -> list[lark.Token]:
        return [t for t in (tree.children if tree is not None else []) if t is not None]

    def if_stmt(self, tree: lark.Tree, scope: _Scope) -> IfStmt:
        cond_tree, captures_tree, results_tree, loc, then_tree, else_tree = tree.children
        condition = self.expr(cond_tree, scope)
        captures = self.captures(captures_tree, scope)
        tokens = self.result_tokens(results_tree)
        stmt = IfStmt(condition, tuple(captures.values()), [], [], (), self.loc(loc))
        expect = [None] * len(tokens)
        stmt.then_body = self.region(_region_stmts(then_tree), _Scope(scope, captures), expect, then_tree)
        stmt.else_body = self.region(_region_stmts(else_tree), _Scope(scope, captures), expect, else_tree)
        stmt.results = tuple(LoopResult(stmt, i) for i in range(len(tokens)))
        for token, result in zip(tokens, stmt.results):
            self.bind(scope, token, result)
        return stmt

    def while_loop(self, tree: lark.Tree, scope: _Scope) -> WhileLoop:
        captures_tree, iter_tree, results_tree, loc, before_tree, cond_tree, body_tree = tree.children
        captures = self.captures(captures_tree, scope)
        before_scope, body_scope = _Scope(scope, captures), _Scope(scope, captures)
        carried_args: list[LoopCarry] = []
        inits: list[Arg] = []
        for item in (iter_tree.children if iter_tree is not None else []):
            if item is None:
                continue
            token, init = item.children
            inits.append(self.expr(init, scope))
            carry = LoopCarry(len(carried_args))
            carried_args.append(carry)
            self.bind(before_scope, token, carry)
            body_scope.bindings[str(token)] = carry
        loop = WhileLoop(tuple(captures.values()), tuple(inits), tuple(carried_args), [], None, [], (),
                         self.loc(loc))
        loop.before = self.region(_region_stmts(before_tree), before_scope, None, before_tree)
        loop.condition = self.expr(cond_tree, before_scope)
        loop.body = self.region(_region_stmts(body_tree), body_scope, carried_args, tree)
        tokens = self.result_tokens(results_tree)
        if len(tokens) != len(carried_args):
            raise self.error(f"the loop carries {len(carried_args)} value(s) but names "
                             f"{len(tokens)} result(s)", tree)
        loop.results = tuple(LoopResult(loop, i) for i in range(len(tokens)))
        for token, result in zip(tokens, loop.results):
            self.bind(scope, token, result)
        return loop

    def combine(self, tree: lark.Tree, scope: _Scope) -> CombineStmt:
        kind_tree, *rest = tree.children
        name = "reduce" if rule(kind_tree) == "reduce_kind" else "scan"
        opdef = opdefs.OPS[name]
        loc_index = next(i for i, c in enumerate(rest) if isinstance(c, lark.Tree) and rule(c) == "loc")
        body_tree = rest[loc_index + 1]
        results_tree = rest[loc_index - 1]
        inputs: list[Arg] = []
        attrs: dict = {}
        tokens: list[lark.Token] = []
        for item in rest[:loc_index - 1]:
            if item is None:
                continue
            if isinstance(item, lark.Token):
                tokens.append(item)
            elif rule(item) == "attr":
                self.attribute(item, opdef, name, attrs)
            else:
                inputs.append(self.expr(item.children[0], scope))
        if not inputs:
            raise self.error(f"'{name}' needs at least one tile", tree)
        if len(inputs) > opdefs.MAX_COMBINE_OPERANDS:
            raise self.error(f"'{name}' takes at most {opdefs.MAX_COMBINE_OPERANDS} tiles, got {len(inputs)}", tree)
        if len(tokens) != 2 * len(inputs):
            raise self.error(f"the combine region of '{name}' over {len(inputs)} tile(s) takes "
                             f"{2 * len(inputs)} argument(s), got {len(tokens)}", tree)
        # Closed: the region sees its own arguments, and no outer binding.
        body_scope = _Scope(scope)
        args = []
        for token in tokens:
            arg = LoopCarry(len(args))
            args.append(arg)
            self.bind(body_scope, token, arg)
        stmt = CombineStmt(name, tuple(inputs), attrs, tuple(args), [], (), self.loc(rest[loc_index]))
        stmt.body = self.region(_region_stmts(body_tree), body_scope, [None] * len(inputs), body_tree)
        result_tokens = self.result_tokens(results_tree)
        if len(result_tokens) != len(inputs):
            raise self.error(f"'{name}' over {len(inputs)} tile(s) has {len(inputs)} result(s), but names "
                             f"{len(result_tokens)}", tree)
        stmt.results = tuple(LoopResult(stmt, i) for i in range(len(result_tokens)))
        for token, result in zip(result_tokens, stmt.results):
            self.bind(scope, token, result)
        return stmt

    def resolve(self, token: lark.Token, scope: _Scope) -> Expr:
        expr, visible = scope.lookup(str(token))
        if expr is None:
            raise self.error(f"{token} is not bound", token)
        if not visible:
            raise self.error(f"{token} is bound outside this region but not listed in its captures", token)
        return expr

    def expr(self, tree: lark.Tree, scope: _Scope) -> Arg:
        kind = rule(tree)
        if kind == "call":
            return self.call(tree, scope)
        if kind == "binding":
            return self.resolve(tree.children[0], scope)
        if kind == "param_ref":
            token = tree.children[0]
            if str(token) not in self.param_names:
                raise self.error(f"'{token}' is not a parameter of this kernel", token)
            return self.out.param(str(token))
        if kind == "none_expr":
            return None
        return self.literal(tree.children[0])

    def call(self, tree: lark.Tree, scope: _Scope) -> Node:
        name, *rest = tree.children
        loc = rest[-1]
        opdef = tree_op(str(name))
        if opdef is None:
            raise self.error(f"unknown operation '{name}'", name)
        args: list[Arg] = []
        attrs: dict = {}
        for arg in rest[:-1]:
            if arg is None:
                continue
            if rule(arg) == "attr":
                self.attribute(arg, opdef, str(name), attrs)
            else:
                args.append(self.expr(arg.children[0], scope))
        if not opdef.takes(len(args)):
            raise self.error(f"'{name}' takes {opdef.arity} argument(s), got {len(args)}", name)
        return Node(str(name), tuple(args), attrs, self.loc(loc))


_STMTS = ("let", "effect", "for_stmt", "yield_stmt", "if_stmt", "while_stmt", "combine_stmt")


def _region_stmts(tree: lark.Tree) -> list[lark.Tree]:
    return [c for c in tree.children if isinstance(c, lark.Tree) and rule(c) in _STMTS]


def _hint(binding: str) -> str | None:
    base = binding[1:].split(".")[0]
    return None if not base or base[0].isdigit() else base


def parse_tree(text: str, file: str = "<stdin>") -> TreeKernel:
    check_text_limits(text, file)
    return _TreeReader(file).kernel(parse_text("tree", text, file))


__all__ = ["print_tree", "parse_tree", "CompileError"]
