"""The text syntax both IRs share (grammars/common.lark): how types, literals,
attributes, kernel headers and locations are printed and read back."""
from __future__ import annotations

import math
import re
from typing import Any

import lark

from mytriton.diagnostics import CompileError, Location
from mytriton.ir.grammar import node_loc, parse_text, rule
from mytriton.limits import MAX_IR_NESTING, MAX_LITERAL_DIGITS, MAX_LOOP_NESTING, MAX_TILE_ELEMENTS, tile_error
from mytriton.types import SCALARS, BlockType, PointerType, ScalarType, SharedType, Type

# Escapes in quoted strings (file names, string attributes), both ways.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {escaped[1]: char for char, escaped in _ESCAPES.items()}

_MAX_DIM_DIGITS = len(str(MAX_TILE_ELEMENTS))
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_BRACKET = re.compile(r"[()\[\]{}]")
_LONG_NUMBER = re.compile(r"\d{%d,}" % (MAX_LITERAL_DIGITS + 1))

# ---- printing -------------------------------------------------------------------


def format_literal(value: bool | int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


def format_string(text: str) -> str:
    """``text`` in double quotes, as ``ESCAPED_STRING`` reads it back."""
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def format_attr(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, ScalarType):
        return value.name
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({format_attr(value[0])},)"
        return "(" + ", ".join(format_attr(v) for v in value) + ")"
    if isinstance(value, (bool, int, float)):
        return format_literal(value)
    raise TypeError(f"cannot print attribute {value!r}")


def format_header(keyword: str, name: str, params: list[tuple[str, Type]],
                  constexprs: dict[str, Any], loc: Location) -> str:
    plist = ", ".join(f"{pname}: {ptype}" for pname, ptype in params)
    text = f"{keyword} {name}({plist})"
    if constexprs:
        text += " constexpr(" + ", ".join(f"{k} = {format_attr(v)}" for k, v in constexprs.items()) + ")"
    return f"{text} @{format_string(loc.file)}:{loc.line}:{loc.col} {{"


def format_loc(loc: Location | None) -> str:
    if loc is None:
        return "@0:0"
    return f"@{loc.line}:{loc.col}"


# ---- reading ---------------------------------------------------------------------


class TextReader:
    """Builds common pieces (types, literals, attributes, locations) from
    parse-tree nodes; each IR reader subclasses it."""

    def __init__(self, file: str) -> None:
        self.file = file  # the IR text's own name, for syntax-level errors
        self.source_file = file  # the kernel source, named by the header

    def error(self, message: str, node: lark.Tree | lark.Token) -> CompileError:
        return CompileError(message, node_loc(node, self.file))

    def type(self, tree: lark.Tree) -> Type:
        kind = rule(tree)
        if kind == "scalar_type":
            return self.scalar(tree.children[0])
        if kind == "ptr_type":
            return PointerType(self.scalar(tree.children[0]))
        if kind == "vector_type":
            size, element = tree.children
            return self.tile((self.dim(size),), self.element(element), size)
        if kind == "block_type":
            dims, element = tree.children
            return self.tile(tuple(self.dim(d, dims) for d in str(dims).split("x")), self.element(element), dims)
        if kind == "shared_type":
            dims, element = tree.children
            shape = tuple(self.dim(d, dims) for d in str(dims).split("x"))
            if len(shape) != 2:
                raise self.error(f"a shared buffer has two dimensions (RxC), got {dims}", dims)
            scalar = self.type(element)
            if not isinstance(scalar, ScalarType):
                raise self.error(f"a shared buffer holds scalars, not {scalar}", element)
            return SharedType(shape, scalar)  # type: ignore[arg-type]
        raise self.error(f"unknown type syntax {kind}", tree)

    def scalar(self, token: lark.Token) -> ScalarType:
        t = SCALARS.get(str(token))
        if t is None:
            known = ", ".join(SCALARS)
            raise self.error(f"unknown element type '{token}' (known: {known})", token)
        return t

    def element(self, tree: lark.Tree) -> ScalarType | PointerType:
        t = self.type(tree)
        if isinstance(t, BlockType):
            raise self.error("a block cannot hold blocks", tree)
        return t

    def tile(self, shape: tuple[int, ...], element: ScalarType | PointerType, where: Any) -> BlockType:
        problem = tile_error(shape)
        if problem:
            raise self.error(problem, where)
        return BlockType(shape, element)

    def dim(self, text: str, where: Any = None) -> int:
        if len(str(text).lstrip("0")) > _MAX_DIM_DIGITS:
            raise self.error(f"block dimension {str(text)[:20]}... is too large "
                             f"(a tile holds at most {MAX_TILE_ELEMENTS} elements)", where or text)
        value = int(text)
        if value <= 0:
            raise self.error(f"block dimensions must be positive, got {value}", where or text)
        return value

    def literal(self, tree: lark.Tree) -> bool | int | float:
        kind = rule(tree)
        if kind == "int_lit":
            return int(tree.children[0])
        if kind == "float_lit":
            return float(tree.children[0])
        return {"inf_lit": math.inf, "neg_inf_lit": -math.inf, "nan_lit": math.nan,
                "true_lit": True, "false_lit": False}[kind]

    def attr_value(self, tree: lark.Tree) -> Any:
        kind = rule(tree)
        if kind == "attr_value":  # a bare literal
            return self.literal(tree.children[0])
        if kind == "none_attr":
            return None
        if kind == "string_attr":
            return self.string(tree.children[0])
        if kind == "tuple_attr":
            return tuple(self.attr_value(c) for c in tree.children if c is not None)
        if kind == "name_attr":
            token = tree.children[0]
            dtype = SCALARS.get(str(token))
            if dtype is None:
                raise self.error(f"unknown attribute value '{token}'", token)
            return dtype
        raise self.error(f"unknown attribute syntax {kind}", tree)

    def string(self, token: lark.Token) -> str:
        """The text of an ``ESCAPED_STRING`` token, its escapes undone."""
        out: list[str] = []
        chars = iter(str(token)[1:-1])
        for ch in chars:
            if ch == "\\":
                escaped = next(chars, "")
                if escaped not in _UNESCAPES:
                    known = ", ".join(sorted(_ESCAPES.values()))
                    raise self.error(f"unknown escape '\\{escaped}' in a string (known: {known})", token)
                ch = _UNESCAPES[escaped]
            out.append(ch)
        return "".join(out)

    def attribute(self, tree: lark.Tree, opdef, op_name: str, attrs: dict) -> None:
        """Read one ``key=value`` argument of an op into ``attrs``, checking
        that the op has that attribute."""
        key, value = tree.children
        if str(key) not in opdef.attrs:
            raise self.error(f"'{op_name}' has no attribute '{key}'", key)
        attrs[str(key)] = self.attr_value(value)

    def read_params(self, trees: list[lark.Tree | None]) -> list[tuple[str, Type, lark.Tree]]:
        out = []
        seen: set[str] = set()
        for tree in trees:
            if tree is None:
                continue
            name, ty = tree.children
            if str(name) in seen:
                raise self.error(f"parameter '{name}' is declared twice", name)
            seen.add(str(name))
            out.append((str(name), self.type(ty), tree))
        return out

    def constexprs(self, tree: lark.Tree | None) -> dict[str, Any]:
        if tree is None:
            return {}
        out: dict[str, Any] = {}
        for item in tree.children:
            if item is None:
                continue
            name, value = item.children
            out[str(name)] = self.attr_value(value)
        return out

    def file_loc(self, tree: lark.Tree) -> Location:
        string, line, col = tree.children
        file = self.string(string)
        self.source_file = file
        return Location(file, int(line), int(col))

    def loc(self, tree: lark.Tree | None) -> Location | None:
        if tree is None:
            return None
        line, col = int(tree.children[0]), int(tree.children[1])
        if line == 0:
            return None
        return Location(self.source_file, line, col)


def parse_type(text: str, file: str = "<type>") -> Type:
    """A type on its own, as the IRs spell it (``ptr<f32>``, ``vector<4 x i32>``)."""
    return TextReader(file).type(parse_text("common", text, file, start="type"))


def check_text_limits(text: str, file: str) -> None:
    """Refuse IR text whose brackets nest deeper than MAX_IR_NESTING (or
    MAX_LOOP_NESTING loops) before the parser recurses into it, and numbers
    longer than MAX_LITERAL_DIGITS before anything converts them (brackets
    and digits in quoted strings do not count)."""
    code = _STRING.sub(_blank, text)
    too_long = _LONG_NUMBER.search(code)
    if too_long:
        raise CompileError(f"a number of more than {MAX_LITERAL_DIGITS} digits (MAX_LITERAL_DIGITS)",
                           _text_loc(text, file, too_long.start()))
    depth = regions = 0
    for match in _BRACKET.finditer(code):
        bracket = match.group()
        if bracket in "([{":
            depth += 1
            regions += bracket == "{"
            # Braces open the kernel's body and each loop's.
            if depth > MAX_IR_NESTING or regions > MAX_LOOP_NESTING + 1:
                message = (f"the IR nests more than {MAX_IR_NESTING} brackets deep (MAX_IR_NESTING)"
                           if depth > MAX_IR_NESTING else
                           f"loops nest more than {MAX_LOOP_NESTING} deep (MAX_LOOP_NESTING)")
                raise CompileError(message, _text_loc(text, file, match.start()))
        else:
            depth -= 1
            regions -= bracket == "}"


def _text_loc(text: str, file: str, offset: int) -> Location:
    line = text.count("\n", 0, offset) + 1
    return Location(file, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def _blank(match: re.Match) -> str:
    """A quoted string as spaces (offsets, and so locations, are kept)."""
    return " " * len(match.group())
