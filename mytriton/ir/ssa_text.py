"""SSA text: the printer and the parser, side by side (grammars/ssa.lark).

Values are numbered ``%0, %1, ...`` in the order they are defined when printed
(a loop's induction variable and carried values before its body, its results
after it), so printing is deterministic and ``print(parse(text)) == text`` for
printed text. Parameters are referred to by name, literals inline, an absent
operand as ``none``.
"""
from __future__ import annotations

from typing import Any

from mytriton.ir.lark_module import lark

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.grammar import parse_text, rule
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, Operand, Param, SharedMemory, Value, is_combine, make_combine, make_for, make_if,
    make_while, walk,
)
from mytriton.ir.text_common import (
    TextReader, check_text_limits, format_attr, format_header, format_literal, format_loc, format_loop_attrs,
)
from mytriton.types import I32, ScalarType, Type, TypeRuleError, element_of

INDENT = "  "

# ---- printing ---------------------------------------------------------------------


class ValueNames:
    """The printed name of each value: parameters by name, the rest ``%N``
    in definition order."""

    def __init__(self, kernel: Kernel) -> None:
        self.names: dict[Value, str] = {p: p.name for p in kernel.params}
        self.count = 0
        self.layouts: LayoutAliases | None = None  # set when printing types with layouts
        self._number(kernel.body)

    def _define(self, value: Value) -> None:
        self.names[value] = f"%{self.count}"
        self.count += 1

    def _number(self, block: Block) -> None:
        for op in block.ops:
            for region in op.regions:
                for arg in region.args:
                    self._define(arg)
                self._number(region)
            for result in op.results:
                self._define(result)

    def operand(self, operand: Operand) -> str:
        if operand is None:
            return "none"
        if isinstance(operand, Const):
            return format_literal(operand.value)
        try:
            return self.names[operand]
        except KeyError:
            return "%<undefined>"


class LayoutAliases:
    """Names for the layouts a kernel's types carry: ``#blocked0``,
    ``#slice0``, ... numbered per kind in order of first use (a slice's
    parent before the slice), each defined on a line before the kernel."""

    def __init__(self, kernel: Kernel) -> None:
        self.names: dict[Any, str] = {}
        self.lines: list[str] = []
        for op in walk(kernel.body):
            for result in op.results:
                layout = getattr(result.type, "layout", None)
                if layout is not None:
                    self.name(layout)

    def name(self, layout: Any) -> str:
        if layout not in self.names:
            parent = getattr(layout, "parent", None)
            if parent is not None:
                self.name(parent)
            count = sum(1 for other in self.names if other.kind == layout.kind)
            alias = f"#{layout.kind}{count}"
            self.lines.append(f"{alias} = {layout.text(self.name)}")
            self.names[layout] = alias
        return self.names[layout]

    def type(self, t: Type) -> str:
        layout = getattr(t, "layout", None)
        return str(t) if layout is None else t.text(self.names[layout])


def print_kernel(kernel: Kernel) -> str:
    names = ValueNames(kernel)
    names.layouts = LayoutAliases(kernel)
    extra = f" num_warps={kernel.num_warps}" if kernel.num_warps is not None else ""
    if kernel.shared_memory is not None and kernel.shared_memory.bytes:  # an empty plan is no plan's text
        extra += " shared_memory(" + ", ".join(f"{key}={getattr(kernel.shared_memory, key)}"
                                               for key in SHARED_MEMORY_SIZES) + ")"
    lines = names.layouts.lines + [format_header("kernel", kernel.name, [(p.name, p.type) for p in kernel.params],
                                                 kernel.constexprs, kernel.loc, kernel.digest, extra,
                                                 {p.name: p.attrs for p in kernel.params if p.attrs})]
    _print_block(kernel.body, names, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def op_text(kernel: Kernel, op: Op) -> str:
    """One op of ``kernel`` on one line (a loop's header for ``for``), named
    as the printed kernel names it; for messages."""
    lines: list[str] = []
    _print_op(op, ValueNames(kernel), 0, lines, header_only=True)
    return lines[0]


def _print_block(block: Block, names: ValueNames, depth: int, lines: list[str]) -> None:
    for op in block.ops:
        _print_op(op, names, depth, lines)


def _print_op(op: Op, names: ValueNames, depth: int, lines: list[str], header_only: bool = False) -> None:
    pad = INDENT * depth
    results = ", ".join(names.operand(r) for r in op.results)
    prefix = f"{results} = " if results else ""
    spell = names.layouts.type if names.layouts is not None else str
    types = ", ".join(spell(r.type) for r in op.results)
    suffix = f" : {types}" if types else ""
    if op.name == "for":
        body = op.regions[0]
        start, stop, step = (names.operand(o) for o in op.operands[:3])
        head = (f"{pad}{prefix}for {names.operand(body.args[0])} in range({start}, {stop}, {step}"
                f"{format_loop_attrs(op.attrs)})")
        carried = list(zip(body.args[1:], op.operands[3:]))
        if carried:
            head += " iter_args(" + ", ".join(
                f"{names.operand(arg)} = {names.operand(init)}" for arg, init in carried) + ")"
        lines.append(f"{head}{suffix} {format_loc(op.loc)} {{")
        if header_only:
            return
        _print_block(body, names, depth + 1, lines)
        lines.append(f"{pad}}}")
        return
    if op.name == "if" and len(op.regions) == 2 and len(op.operands) == 1:
        lines.append(f"{pad}{prefix}if {names.operand(op.operands[0])}{suffix} {format_loc(op.loc)} {{")
        if header_only:
            return
        _print_block(op.regions[0], names, depth + 1, lines)
        lines.append(f"{pad}}} else {{")
        _print_block(op.regions[1], names, depth + 1, lines)
        lines.append(f"{pad}}}")
        return
    if op.name == "while" and len(op.regions) == 2:
        before, after = op.regions
        carried = ", ".join(f"{names.operand(arg)} = {names.operand(init)}"
                            for arg, init in zip(before.args, op.operands))
        lines.append(f"{pad}{prefix}while ({carried}){suffix} {format_loc(op.loc)} {{")
        if header_only:
            return
        _print_block(before, names, depth + 1, lines)
        lines.append(f"{pad}}} do ({', '.join(names.operand(arg) for arg in after.args)}) {{")
        _print_block(after, names, depth + 1, lines)
        lines.append(f"{pad}}}")
        return
    args = [names.operand(o) for o in op.operands]
    opdef = opdefs.lookup(op.name)
    attr_order = list(opdef.attrs) if opdef else []
    attr_order += [k for k in op.attrs if k not in attr_order]
    args += [f"{k}={format_attr(op.attrs[k])}" for k in attr_order if k in op.attrs]
    arg_text = " " + ", ".join(args) if args else ""
    if is_combine(op) and len(op.regions) == 1:
        region = op.regions[0]
        region_args = ", ".join(names.operand(arg) for arg in region.args)
        lines.append(f"{pad}{prefix}{op.name}{arg_text}{suffix} {format_loc(op.loc)} combine({region_args}) {{")
        if header_only:
            return
        _print_block(region, names, depth + 1, lines)
        lines.append(f"{pad}}}")
        return
    lines.append(f"{pad}{prefix}{op.name}{arg_text}{suffix} {format_loc(op.loc)}")


# ---- parsing -----------------------------------------------------------------------


def parse_kernel(text: str, file: str = "<stdin>") -> Kernel:
    check_text_limits(text, file)
    return _SSAReader(file).kernel(parse_text("ssa", text, file))


class _SSAReader(TextReader):
    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.params: dict[str, Param] = {}
        # Every value defined so far in text order, whatever its scope: scoping
        # is the verifier's rule to check, so it can say what went wrong.
        self.values: dict[str, Value] = {}
        self.defined_at: dict[str, int] = {}

    def kernel(self, tree: lark.Tree) -> Kernel:
        *layout_defs, kernel_tree = tree.children
        for definition in layout_defs:
            self.layout_def(definition)
        name, *rest = kernel_tree.children
        params = [c for c in rest if isinstance(c, lark.Tree) and rule(c) == "param"]
        constexprs = next((c for c in rest if isinstance(c, lark.Tree) and rule(c) == "constexprs"), None)
        file_loc = next(c for c in rest if isinstance(c, lark.Tree) and rule(c) == "file_loc")
        items = [c for c in rest if isinstance(c, lark.Tree) and rule(c) in _ITEMS]
        warps = next((c for c in rest if isinstance(c, lark.Tree) and rule(c) == "num_warps"), None)
        shared = next((c for c in rest if isinstance(c, lark.Tree) and rule(c) == "shared_memory"), None)
        loc = self.file_loc(file_loc)
        for pname, ptype, ptree in self.read_params(params):
            self.params[pname] = Param(pname, ptype, self.param_attrs(ptree, ptype))
        body = Block()
        for item in items:
            body.append(self.item(item))
        num_warps = None
        if warps is not None:
            token = warps.children[0]
            num_warps = self.integer(str(token), token, "num_warps", 1, 1024)
        return Kernel(str(name), list(self.params.values()), self.constexprs(constexprs), body, loc,
                      digest=self.source_digest, num_warps=num_warps, shared_memory=self.shared_memory(shared))

    def shared_memory(self, tree: lark.Tree | None) -> SharedMemory | None:
        """The kernel header's ``shared_memory(bytes=B, scratch=S, late_scratch=L)``: all three, in that order."""
        if tree is None:
            return None
        sizes = [size.children for size in tree.children]
        names = [str(key) for key, _ in sizes]
        if names != list(SHARED_MEMORY_SIZES):
            raise self.error(f"shared_memory gives {', '.join(SHARED_MEMORY_SIZES)}, in that order; "
                             f"got {', '.join(names)}", sizes[0][0])
        return SharedMemory(*(self.integer(str(value), value, f"shared_memory's {key}", 0, 2**31 - 1)
                              for key, value in sizes))

    def layout_def(self, tree: lark.Tree) -> None:
        token, attr = tree.children
        if str(token) in self.layouts:
            raise self.error(f"layout {token} is defined twice", token)
        self.layouts[str(token)] = self.layout_attr(attr)

    def define(self, token: lark.Token, value: Value) -> None:
        name = str(token)
        if name in self.values:
            raise self.error(f"{name} is already defined (line {self.defined_at[name]})", token)
        self.values[name] = value
        self.defined_at[name] = token.line

    def operand(self, tree: lark.Tree) -> Operand:
        kind = rule(tree)
        if kind == "value_ref":
            token = tree.children[0]
            value = self.values.get(str(token))
            if value is None:
                raise self.error(f"use of undefined value {token}", token)
            return value
        if kind == "param_ref":
            token = tree.children[0]
            param = self.params.get(str(token))
            if param is None:
                raise self.error(f"'{token}' is not a parameter of this kernel", token)
            return param
        if kind == "none_operand":
            return None
        return Const(self.literal(tree.children[0]))

    def item(self, tree: lark.Tree) -> Op:
        kind = rule(tree)
        if kind == "for_op":
            return self.for_op(tree)
        if kind == "if_op":
            return self.if_op(tree)
        if kind == "while_op":
            return self.while_op(tree)
        if kind == "combine_op":
            return self.combine_op(tree)
        return self.op(tree)

    def combine_op(self, tree: lark.Tree) -> Op:
        results_tree, kind_tree, *rest = tree.children
        name = "reduce" if rule(kind_tree) == "reduce_kind" else "scan"
        opdef = opdefs.OPS[name]
        loc_index = next(i for i, c in enumerate(rest) if isinstance(c, lark.Tree) and rule(c) == "loc")
        loc_tree = rest[loc_index]
        head = [c for c in rest[:loc_index] if c is not None]
        args = [c for c in head if rule(c) in ("arg", "attr")]
        types = [self.type(c) for c in head if rule(c) not in ("arg", "attr")]
        region_tokens = [c for c in rest[loc_index + 1:] if isinstance(c, lark.Token)]
        (region_tree,) = [c for c in rest[loc_index + 1:] if isinstance(c, lark.Tree) and rule(c) == "region"]
        operands: list[Operand] = []
        attrs: dict = {}
        for arg in args:
            if rule(arg) == "attr":
                self.attribute(arg, opdef, name, attrs)
            else:
                if attrs:
                    raise self.error("operands must come before attributes", arg)
                operands.append(self.operand(arg.children[0]))
        where = loc_tree
        if not operands:
            raise self.error(f"'{name}' needs at least one tile", where)
        if len(operands) > opdefs.MAX_COMBINE_OPERANDS:
            raise self.error(f"'{name}' takes at most {opdefs.MAX_COMBINE_OPERANDS} tiles, got {len(operands)}", where)
        if any(o is None for o in operands):
            raise self.error(f"the tiles of '{name}' cannot be none", where)
        if "axis" not in attrs:
            raise self.error(f"'{name}' needs the attribute 'axis'", where)
        result_tokens = results_tree.children if results_tree is not None else []
        if not (len(result_tokens) == len(types) == len(operands)):
            raise self.error(f"'{name}' over {len(operands)} tile(s) needs as many results and types; got "
                             f"{len(result_tokens)} and {len(types)}", where)
        if len(region_tokens) != 2 * len(operands):
            raise self.error(f"the combine region of '{name}' over {len(operands)} tile(s) takes "
                             f"{2 * len(operands)} argument(s), got {len(region_tokens)}", where)
        elements = [element_of(o.type) for o in operands]
        if any(not isinstance(e, ScalarType) for e in elements):
            raise self.error(f"the tiles of '{name}' must hold numbers", where)
        op = make_combine(name, operands, elements, types, attrs, self.loc(loc_tree))
        body = op.regions[0]
        for token, arg in zip(region_tokens, body.args):
            self.define(token, arg)
        for item in region_tree.children:
            if isinstance(item, lark.Tree):
                body.append(self.item(item))
        for token, result in zip(result_tokens, op.results):
            self.define(token, result)
        return op

    def if_op(self, tree: lark.Tree) -> Op:
        results_tree, cond, *rest = tree.children
        loc_index = next(i for i, c in enumerate(rest) if isinstance(c, lark.Tree) and rule(c) == "loc")
        types = [self.type(c) for c in rest[:loc_index] if c is not None]
        result_tokens = results_tree.children if results_tree is not None else []
        if len(result_tokens) != len(types):
            raise self.error(f"'if' names {len(result_tokens)} result(s) but gives {len(types)} type(s)",
                             rest[loc_index])
        then_items, else_items = _split_regions(rest[loc_index + 1:])
        op = make_if(self.operand(cond), types, self.loc(rest[loc_index]))
        for region, items in zip(op.regions, (then_items, else_items)):
            for item in items:
                region.append(self.item(item))
        for token, result in zip(result_tokens, op.results):
            self.define(token, result)
        return op

    def while_op(self, tree: lark.Tree) -> Op:
        results_tree, *rest = tree.children
        loc_index = next(i for i, c in enumerate(rest) if isinstance(c, lark.Tree) and rule(c) == "loc")
        pairs = [(c.children[0], c.children[1]) for c in rest[:loc_index]
                 if isinstance(c, lark.Tree) and rule(c) == "iter_arg"]
        types = [self.type(c) for c in rest[:loc_index]
                 if isinstance(c, lark.Tree) and rule(c) != "iter_arg"]
        before_items, after_items = _split_regions(rest[loc_index + 1:])
        after_tokens = [c for c in rest[loc_index + 1:] if isinstance(c, lark.Token)]
        result_tokens = results_tree.children if results_tree is not None else []
        loc_tree = rest[loc_index]
        if not (len(result_tokens) == len(types) == len(pairs) == len(after_tokens)):
            raise self.error(
                f"a while loop needs as many results, carried values, types and body arguments; got "
                f"{len(result_tokens)}, {len(pairs)}, {len(types)} and {len(after_tokens)}", loc_tree)
        inits = [self.operand(init) for _, init in pairs]
        op = make_while(inits, types, self.loc(loc_tree))
        before, after = op.regions
        for (token, _), arg in zip(pairs, before.args):
            self.define(token, arg)
        for item in before_items:
            before.append(self.item(item))
        for token, arg in zip(after_tokens, after.args):
            self.define(token, arg)
        for item in after_items:
            after.append(self.item(item))
        for token, result in zip(result_tokens, op.results):
            self.define(token, result)
        return op

    def op(self, tree: lark.Tree) -> Op:
        results_tree, name, *rest = tree.children
        loc_tree = rest[-1]
        args = [c for c in rest[:-1] if isinstance(c, lark.Tree) and rule(c) in ("arg", "attr")]
        types = [self.type(c) for c in rest[:-1] if isinstance(c, lark.Tree) and rule(c) not in ("arg", "attr")]
        opdef = opdefs.lookup(str(name))
        if opdef is None or str(name) == "for":
            raise self.error(f"unknown op '{name}'", name)
        operands: list[Operand] = []
        attrs: dict = {}
        for arg in args:
            if rule(arg) == "attr":
                self.attribute(arg, opdef, str(name), attrs)
            else:
                if attrs:
                    raise self.error("operands must come before attributes", arg)
                operands.append(self.operand(arg.children[0]))
        if str(name) != "yield":
            self.check_arity(opdef, operands, name)
        for key in opdef.attrs:
            if key not in attrs and key not in opdef.optional_attrs \
                    and not (opdef.name in opdefs.REDUCTIONS and key == "axis"):
                raise self.error(f"'{name}' needs the attribute '{key}'", name)
        result_tokens = results_tree.children if results_tree is not None else []
        if len(result_tokens) != len(types):
            raise self.error(f"'{name}' names {len(result_tokens)} result(s) but gives {len(types)} type(s)", name)
        op = Op(str(name), operands, types, attrs, self.loc(loc_tree))
        for token, result in zip(result_tokens, op.results):
            self.define(token, result)
        return op

    def check_arity(self, opdef: opdefs.OpDef, operands: list[Operand], name: lark.Token) -> None:
        if not opdef.takes(len(operands)):
            spelled = ", ".join(n.rstrip("?") for n in opdef.operands) or "no operands"
            raise self.error(f"'{name}' takes {opdef.arity} operand(s) ({spelled}), got {len(operands)}", name)
        for i, operand in enumerate(operands):
            if operand is None and not opdef.optional(i):
                raise self.error(f"operand '{opdef.operand_name(i)}' of '{name}' cannot be none", name)

    def for_op(self, tree: lark.Tree) -> Op:
        results_tree, index_token, start, stop, step, attrs_tree, iter_args, *rest = tree.children
        loc_tree = next(c for c in rest if isinstance(c, lark.Tree) and rule(c) == "loc")
        types = [self.type(c) for c in rest if isinstance(c, lark.Tree) and rule(c) not in ("loc", *_ITEMS)]
        items = [c for c in rest if isinstance(c, lark.Tree) and rule(c) in _ITEMS]
        pairs = [(a.children[0], a.children[1]) for a in iter_args.children] if iter_args is not None else []
        result_tokens = results_tree.children if results_tree is not None else []
        if not (len(result_tokens) == len(types) == len(pairs)):
            raise self.error(
                f"a loop needs as many results, carried values and types; got {len(result_tokens)}, "
                f"{len(pairs)} and {len(types)}", index_token)
        bounds = [self.operand(b) for b in (start, stop, step)]
        inits = [self.operand(init) for _, init in pairs]
        try:
            index_type = opdefs.loop_index_type([b.type if b is not None else None for b in bounds])
        except TypeRuleError:
            index_type = I32  # the verifier says what is wrong with the bounds
        op = make_for(bounds[0], bounds[1], bounds[2], inits, types, self.loc(loc_tree), index_type)
        op.attrs = self.loop_attrs(attrs_tree)
        body = op.regions[0]
        self.define(index_token, body.args[0])
        for (token, _), arg in zip(pairs, body.args[1:]):
            self.define(token, arg)
        for item in items:
            body.append(self.item(item))
        for token, result in zip(result_tokens, op.results):
            self.define(token, result)
        return op


SHARED_MEMORY_SIZES = ("bytes", "scratch", "late_scratch")  # SharedMemory's fields, as the header gives them
_ITEMS = ("op", "for_op", "if_op", "while_op", "combine_op")


def _split_regions(children: list) -> tuple[list[lark.Tree], list[lark.Tree]]:
    """The items of the two ``region`` subtrees of an ``if`` or ``while``."""
    regions = [c for c in children if isinstance(c, lark.Tree) and rule(c) == "region"]
    return tuple([c for c in r.children if isinstance(c, lark.Tree)] for r in regions)  # type: ignore[return-value]


__all__ = ["print_kernel", "op_text", "parse_kernel", "CompileError"]
