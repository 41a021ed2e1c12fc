"""Which Python syntax a kernel may use, checked before tracing.

What depends on values (an ``if`` on a runtime value, a loop bound that is not
a constant) is the tracer's to reject; what can be seen in the syntax alone is
rejected here, each with the place and a hint.
"""
from __future__ import annotations

import ast

from mytriton.diagnostics import CompileError, did_you_mean
from mytriton.frontend.source import KernelModule, Unresolved, python_function
from mytriton.language import CLASSES, CONSTANTS, DTYPES, FUNCTIONS, RANDOM_FUNCTIONS, UNSUPPORTED_DTYPES
from mytriton.language.extra import libdevice
from mytriton.language.extra.cuda import gdc
from mytriton.language.math import FUNCTIONS as MATH_NAMESPACE
from mytriton.limits import MAX_EXPRESSION_DEPTH

# tl.range's keyword options (Triton 3.x), beside its positional bounds.
TL_RANGE_OPTIONS = ("num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer", "flatten", "warp_specialize",
                    "disable_licm")
PYTHON_BUILTINS = ("range", "min", "max", "float", "int", "abs", "len", "bool", "print", "isinstance")
HOST_FUNCTIONS = ("mytriton.cdiv", "mytriton.next_power_of_2")
# Triton's language/standard.py helpers libraries call by their private names.
STANDARD_PRIVATE = ("standard._log2",)

_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.For, ast.If, ast.Pass, ast.Return,
               ast.While)
_EXPRESSIONS = (
    ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare,
    ast.BoolOp, ast.IfExp, ast.Subscript, ast.Tuple, ast.List, ast.Slice, ast.keyword,
)
# (``**`` on constants only, as Triton's constexpr has it: the tracer says so of a runtime operand.)
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr,
           ast.BitXor, ast.LShift, ast.RShift, ast.Pow)
_UNARY = (ast.USub, ast.UAdd, ast.Not, ast.Invert)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.IsNot)

_NAMED = {
    ast.Break: "'break' is not supported in kernels (as in Triton); put the exit test in the loop's condition",
    ast.Continue: "'continue' is not supported in kernels (as in Triton); guard the rest of the body with 'if'",
    ast.With: "'with' is not supported in kernels",
    ast.Try: "'try' is not supported in kernels",
    ast.Raise: "'raise' is not supported in kernels",
    ast.Lambda: "lambdas are not supported in kernels",
    ast.FunctionDef: "functions cannot be defined inside kernels; define a @jit function at module level",
    ast.ClassDef: "classes cannot be defined inside kernels",
    ast.Import: "imports are not supported inside kernels; import at module level",
    ast.ImportFrom: "imports are not supported inside kernels; import at module level",
    ast.Global: "'global' is not supported in kernels",
    ast.Nonlocal: "'nonlocal' is not supported in kernels",
    ast.Delete: "'del' is not supported in kernels",
    ast.Assert: "'assert' is not supported in kernels",
    ast.ListComp: "comprehensions are not supported in kernels",
    ast.GeneratorExp: "comprehensions are not supported in kernels",
    ast.DictComp: "comprehensions are not supported in kernels",
    ast.SetComp: "comprehensions are not supported in kernels",
    ast.Dict: "dicts are not supported in kernels",
    ast.Set: "sets are not supported in kernels",
    ast.JoinedStr: "f-strings are not supported in kernels",
    ast.NamedExpr: "':=' is not supported in kernels",
    ast.Starred: "'*' unpacking is not supported in kernels",
    ast.Await: "'await' is not supported in kernels",
    ast.Yield: "'yield' is not supported in kernels",
}


class SyntaxChecker(ast.NodeVisitor):
    def __init__(self, module: KernelModule, fn: ast.FunctionDef, entry: bool) -> None:
        self.module = module
        self.fn = fn
        self.entry = entry
        self._locals: set[str] | None = None

    def error(self, message: str, node: ast.AST) -> CompileError:
        return CompileError(message, self.module.loc(node))

    def check(self) -> None:
        args = self.fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("kernel parameters must be plain positional names", self.fn)
        self.check_depth()
        self.check_jit_options()
        for stmt in self.fn.body:
            self.visit(stmt)

    def check_jit_options(self) -> None:
        """``@jit(...)`` takes Triton's options by keyword, as the Python API
        (``mytriton.jit``) does; an unknown one is refused here as it is there."""
        from mytriton.runtime.jit import JIT_OPTIONS

        for decorator in self.fn.decorator_list:
            if not (isinstance(decorator, ast.Call) and self.module.is_jit_decorator(decorator)):
                continue
            if decorator.args:
                raise self.error("@jit(...) takes its options by keyword", decorator.args[0])
            for keyword in decorator.keywords:
                if keyword.arg is None:
                    raise self.error("'**' options are not supported in @jit(...)", keyword.value)
                if keyword.arg not in JIT_OPTIONS:
                    raise self.error(f"@jit of '{self.fn.name}': unknown option '{keyword.arg}' "
                                     f"(options: {', '.join(JIT_OPTIONS)})", keyword)

    def check_depth(self) -> None:
        """Refuse expressions nested deeper than MAX_EXPRESSION_DEPTH (an
        ``a + b + ...`` chain is as deep as it has terms) before any
        recursive walk; the walk here is iterative."""
        stack: list[tuple[ast.AST, int, ast.AST]] = [(self.fn, 0, self.fn)]
        while stack:
            node, depth, outermost = stack.pop()
            if isinstance(node, ast.expr):
                depth += 1
                outermost = node if depth == 1 else outermost
                if depth > MAX_EXPRESSION_DEPTH:
                    raise self.error(f"this expression nests more than {MAX_EXPRESSION_DEPTH} levels deep "
                                     "(MAX_EXPRESSION_DEPTH); bind parts of it to names", outermost)
            stack.extend((child, depth, outermost) for child in ast.iter_child_nodes(node))

    def generic_visit(self, node: ast.AST) -> None:
        if type(node) in _NAMED:
            raise self.error(_NAMED[type(node)], node)
        if isinstance(node, ast.stmt) and not isinstance(node, _STATEMENTS):
            raise self.error(f"'{type(node).__name__}' statements are not supported in kernels", node)
        if isinstance(node, ast.expr) and not isinstance(node, _EXPRESSIONS):
            raise self.error(f"'{type(node).__name__}' expressions are not supported in kernels", node)
        super().generic_visit(node)

    # Operators are AST nodes too; only some are kernel operators.
    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, _BINOPS):
            raise self.error(f"the operator '{_op_text(node.op)}' is not supported in kernels", node)
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if not isinstance(node.op, _UNARY):
            raise self.error("this unary operator is not supported in kernels", node)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) != 1:
            raise self.error("chained comparisons are not supported; combine them with '&'", node)
        if not isinstance(node.ops[0], _COMPARE):
            raise self.error(f"the comparison '{_op_text(node.ops[0])}' is not supported in kernels", node)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if self.entry and node.value is not None:
            raise self.error("a kernel cannot return a value; store results through pointers", node)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error("'while/else' is not supported in kernels", node.orelse[0])
        self._no_return_inside(node)
        self.generic_visit(node)

    def _no_return_inside(self, loop: ast.For | ast.While) -> None:
        """An early return leaves the kernel; inside a loop it would need
        'break', which kernels do not have (as in Triton)."""
        for node in ast.walk(loop):
            if isinstance(node, ast.Return):
                raise self.error("'return' inside a loop is not supported in kernels", node)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error("'for/else' is not supported in kernels", node.orelse[0])
        self._no_return_inside(node)
        if not isinstance(node.target, ast.Name):
            raise self.error("a loop variable must be a single name", node.target)
        call = node.iter
        name = self._callee(call.func) if isinstance(call, ast.Call) else None
        if name not in ("range", "mytriton.language.range", "mytriton.language.static_range"):
            raise self.error("kernels loop only over range(...) or tl.static_range(...)", node.iter)
        for keyword in call.keywords:
            if name != "mytriton.language.range":
                raise self.error("range bounds are positional: range(start, stop, step)", call)
            if keyword.arg not in TL_RANGE_OPTIONS:
                raise self.error(f"tl.range() has no parameter '{keyword.arg}'", keyword)
        if not 1 <= len(call.args) <= 3:
            raise self.error("range takes one to three arguments", call)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("only names can be updated with an augmented assignment", node.target)
        if not isinstance(node.op, _BINOPS):
            raise self.error(f"the operator '{_op_text(node.op)}=' is not supported in kernels", node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        if node.value is None:
            raise self.error("a declaration without a value is not supported in kernels", node)
        self.visit(node.value)

    def _check_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element)
            return
        if isinstance(target, ast.Subscript):
            raise self.error("kernels cannot assign into a tile element; build a new value instead", target)
        raise self.error("only names can be assigned in kernels", target)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        qualified = self.module.qualname(node)
        if qualified and qualified.startswith("mytriton.language.extra"):
            if qualified in libdevice.NAMESPACES or qualified == gdc.MODULE_PATH or gdc.function_name(qualified):
                return
            name = libdevice.function_name(qualified)
            if name is None:
                raise self.error(f"'{qualified}' is not part of mytriton (mytriton.language.extra has "
                                 "libdevice, cuda.libdevice, cuda.gdc_wait and cuda.gdc_launch_dependents)", node)
            if name not in libdevice.FUNCTIONS:
                raise self.error(f"'{name}' is not part of libdevice{did_you_mean(name, libdevice.FUNCTIONS)}", node)
            return
        if qualified and qualified.startswith("mytriton.language.math."):
            name = qualified[len("mytriton.language.math."):]
            if name not in MATH_NAMESPACE:
                raise self.error(f"'{name}' is not part of mytriton.language.math"
                                 f"{did_you_mean(name, MATH_NAMESPACE)}", node)
            return
        if qualified and qualified.startswith("mytriton.language.random."):
            name = qualified[len("mytriton.language.random."):]
            if name not in RANDOM_FUNCTIONS:
                raise self.error(f"'{name}' is not part of mytriton.language.random"
                                 f"{did_you_mean(name, RANDOM_FUNCTIONS)}", node)
            return
        if qualified and qualified.startswith("mytriton.language."):
            name = qualified[len("mytriton.language."):]
            if (name not in FUNCTIONS and name not in DTYPES and name not in CONSTANTS and name not in CLASSES
                    and name not in UNSUPPORTED_DTYPES and name not in ("math", "random", "extra")
                    and name not in STANDARD_PRIVATE):
                known = [*FUNCTIONS, *DTYPES, *CONSTANTS, *CLASSES, "math", "random", "extra"]
                raise self.error(f"'{name}' is not part of mytriton.language{did_you_mean(name, known)}", node)
            return
        if qualified and qualified.startswith("mytriton."):
            if qualified not in HOST_FUNCTIONS and qualified not in ("mytriton.jit", "mytriton.language"):
                raise self.error(f"'{qualified}' cannot be used inside a kernel", node)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.error("'**' arguments are not supported in kernels", keyword.value)
        if isinstance(node.func, ast.Name) and not self._callable_name(node.func.id):
            name = node.func.id
            found = self.module.lookup(name)
            if found is None:
                raise self.error(f"unknown function '{name}'", node.func)
            if isinstance(found[1], Unresolved) and found[1].reason != python_function(name):
                raise self.error(f"'{name}' cannot be used in a kernel: {found[1].reason}", node.func)
            raise self.error(f"'{name}' is not a @jit function", node.func)
        self.generic_visit(node)

    def _callable_name(self, name: str) -> bool:
        """@jit functions, Python's constant builtins, mytriton names imported
        directly, modules, and locals (checked when traced)."""
        if name in PYTHON_BUILTINS or self._local(name):
            return True
        found = self.module.lookup(name)
        return found is not None and found[0] != "value"

    def _local(self, name: str) -> bool:
        if self._locals is None:  # one walk of the function, not one per call it makes
            self._locals = {n.id for n in ast.walk(self.fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            self._locals |= {a.arg for a in self.fn.args.args}
        return name in self._locals

    def _callee(self, func: ast.expr) -> str | None:
        if isinstance(func, ast.Name) and func.id == "range" and func.id not in self.module.aliases:
            return "range"
        return self.module.qualname(func)


def _op_text(op: ast.AST) -> str:
    return {ast.Pow: "**", ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
            ast.NotIn: "not in"}.get(type(op), type(op).__name__)


def check_function(module: KernelModule, fn: ast.FunctionDef, entry: bool) -> None:
    SyntaxChecker(module, fn, entry).check()


def is_constexpr(module: KernelModule, arg: ast.arg) -> bool:
    """Whether a parameter is annotated ``tl.constexpr``, spelled as a name or
    as a string (every annotation is one under ``from __future__ import
    annotations``, and Triton reads them both)."""
    annotation = arg.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False  # Python does not read a string annotation either
    return annotation is not None and module.qualname(annotation) == "mytriton.language.constexpr"
