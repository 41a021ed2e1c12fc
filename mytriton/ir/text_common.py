"""The text syntax both IRs share (grammars/common.lark): how types, literals,
attributes, kernel headers and locations are printed and read back."""
from __future__ import annotations

import math
import re
import string
import sys
import unicodedata
from typing import Any

from mytriton.ir.lark_module import lark

from mytriton.diagnostics import DIGEST_LENGTH, SOURCES, CompileError, Location, is_digest, printable
from mytriton.ir.grammar import node_loc, parse_text, rule
from mytriton.limits import MAX_IR_NESTING, MAX_LOOP_NESTING, tile_error
from mytriton.types import SCALARS, BlockType, PointerType, ScalarType, SharedType, Type

# Escapes in quoted strings (file names, string attributes), both ways; any
# other control or format character (ESC, NUL, U+2028) is printed as \uXXXX
# or \UXXXXXXXX, so IR text holds none raw.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {escaped[1]: char for char, escaped in _ESCAPES.items()}
_HEX_ESCAPES = {"u": 4, "U": 8}

# Bounds on integers read from IR text: literals are at most i64 (what the
# tracer accepts); a dimension or a source position beyond i32 is no real one.
_MAX_DIGITS = 20
_MAX_DIM = 2**31 - 1
_MAX_POSITION = 2**31 - 1

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# What the nesting count skips: quoted strings and `//` line comments (the
# grammars ignore COMMENT), whichever starts first, so that a comment's
# brackets neither hide real nesting nor count as nesting (a FileCheck line
# `// CHECK: for ... {` opens no loop).
_NOT_CODE = re.compile(_STRING.pattern + r"|//[^\n]*")
_BRACKET = re.compile(r"[()\[\]{}]")

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
    return '"' + "".join(_escape_char(ch) for ch in text) + '"'


def _escape_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        return f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"
    return ch


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


def format_loop_attrs(attrs: dict[str, Any]) -> str:
    """A loop's options inside its ``range(...)``: ``, num_stages=3``."""
    return "".join(f", {key}={format_attr(value)}" for key, value in attrs.items())


# Parameter attributes: facts a launch specialised on, as Triton's
# ``tt.divisibility``: a pointer's address or an integer's value is a multiple
# of ``divisibility`` (bytes for a pointer). A power of two, up to 2**30.
PARAM_ATTRS = ("divisibility",)
MAX_DIVISIBILITY = 2 ** 30


def format_param_attrs(attrs: dict[str, int] | None) -> str:
    if not attrs:
        return ""
    return " {" + ", ".join(f"{key}={attrs[key]}" for key in PARAM_ATTRS if key in attrs) + "}"


def format_header(keyword: str, name: str, params: list[tuple[str, Type]],
                  constexprs: dict[str, Any], loc: Location, digest: str | None = None,
                  extra: str = "", param_attrs: dict[str, dict[str, int]] | None = None) -> str:
    param_attrs = param_attrs or {}
    plist = ", ".join(f"{pname}: {ptype}{format_param_attrs(param_attrs.get(pname))}" for pname, ptype in params)
    text = f"{keyword} {name}({plist})"
    if constexprs:
        text += " constexpr(" + ", ".join(f"{k} = {format_attr(v)}" for k, v in constexprs.items()) + ")"
    text += extra
    text += f" @{format_string(loc.file)}:{loc.line}:{loc.col}"
    if digest is not None:
        text += f" sha256={format_string(digest)}"
    return text + " {"


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
        self.source_digest: str | None = None  # of the source's text, when the header gives it
        self.layouts: dict[str, Any] = {}  # layout aliases defined so far (SSA text only)

    def error(self, message: str, node: lark.Tree | lark.Token) -> CompileError:
        return CompileError(message, node_loc(node, self.file))

    def type(self, tree: lark.Tree) -> Type:
        kind = rule(tree)
        if kind == "scalar_type":
            return self.scalar(tree.children[0])
        if kind == "ptr_type":
            return PointerType(self.scalar(tree.children[0]))
        if kind == "vector_type":
            size, element, layout = tree.children
            return self.tile((self.dim(size),), self.element(element), size, self.layout_ref(layout))
        if kind == "block_type":
            dims, element, layout = tree.children
            return self.tile(tuple(self.dim(d, dims) for d in str(dims).split("x")), self.element(element), dims,
                             self.layout_ref(layout))
        if kind == "shared_type":
            dims, element, layout = tree.children
            shape = tuple(self.dim(d, dims) for d in str(dims).split("x"))
            if len(shape) != 2:
                raise self.error(f"a shared buffer has two dimensions (RxC), got {dims}", dims)
            scalar = self.type(element)
            if not isinstance(scalar, ScalarType):
                raise self.error(f"a shared buffer holds scalars, not {scalar}", element)
            return SharedType(shape, scalar, self.layout_ref(layout))  # type: ignore[arg-type]
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
        if not isinstance(t, (ScalarType, PointerType)):
            raise self.error(f"a tile holds scalars or pointers, not {t}", tree)
        return t

    def integer(self, text: str, where: Any, what: str, low: int, high: int) -> int:
        """An integer token, within ``[low, high]``. Its digits are counted
        before ``int()`` reads them: Python refuses integers of more than 4300
        digits with a ValueError, and no bound here needs more than 20."""
        digits = text.lstrip("-").lstrip("0")
        if len(digits) > _MAX_DIGITS:
            raise self.error(f"{what} out of range: an integer of {len(digits)} digits "
                             f"(at most {high})", where)
        value = int(text)
        if not low <= value <= high:
            raise self.error(f"{what} out of range: {value} (from {low} to {high})", where)
        return value

    def tile(self, shape: tuple[int, ...], element: ScalarType | PointerType, where: Any,
             layout: Any = None) -> BlockType:
        problem = tile_error(shape)
        if problem:
            raise self.error(problem, where)
        return BlockType(shape, element, layout)

    def layout_ref(self, token: lark.Token | None) -> Any:
        """The layout an alias (``#blocked0``) names; it must be defined above."""
        if token is None:
            return None
        found = self.layouts.get(str(token))
        if found is None:
            raise self.error(f"layout {token} is not defined (define it before the kernel: "
                             f"{token} = blocked<...>)", token)
        return found

    def layout_attr(self, tree: lark.Tree) -> Any:
        """A layout attribute: ``blocked<size_per_thread=[1], ...>``, ``slice<dim=1, parent=#b>``..."""
        from mytriton.ir.layout_attributes import FIELDS, KINDS, LayoutSyntaxError

        kind, *fields = tree.children
        if str(kind) not in KINDS:
            raise self.error(f"unknown layout '{kind}' (layouts: {', '.join(KINDS)})", kind)
        params: dict[str, Any] = {}
        for field in fields:
            if field is None:
                continue
            key, value = field.children
            if str(key) not in FIELDS[str(kind)]:
                raise self.error(f"'{kind}' has no field '{key}' (fields: {', '.join(FIELDS[str(kind)])})", key)
            if str(key) in params:
                raise self.error(f"'{kind}' gives the field '{key}' twice", key)
            params[str(key)] = self.layout_value(value)
        missing = [k for k in FIELDS[str(kind)] if k not in params]
        if missing:
            raise self.error(f"'{kind}' needs the field '{missing[0]}'", kind)
        try:
            return KINDS[str(kind)].from_params(params)
        except LayoutSyntaxError as err:
            raise self.error(str(err), kind) from None

    def layout_value(self, tree: lark.Tree) -> Any:
        kind = rule(tree)
        if kind == "layout_ref":
            return self.layout_ref(tree.children[0])
        tokens = [t for t in tree.children if t is not None]
        values = tuple(self.integer(str(t), t, "a layout field", 0, 1 << 20) for t in tokens)
        return values[0] if kind == "layout_int" else values

    def dim(self, text: str, where: Any = None) -> int:
        value = self.integer(str(text), where or text, "block dimension", -_MAX_DIM, _MAX_DIM)
        if value <= 0:
            raise self.error(f"block dimensions must be positive, got {value}", where or text)
        return value

    def literal(self, tree: lark.Tree) -> bool | int | float:
        kind = rule(tree)
        if kind == "int_lit":
            token = tree.children[0]
            # i64's range and u64's: the frontend takes either (the type rules check the fit).
            return self.integer(str(token), token, "integer literal", -2**63, 2**64 - 1)
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
                if escaped in _HEX_ESCAPES:
                    digits = "".join(next(chars, "") for _ in range(_HEX_ESCAPES[escaped]))
                    valid = len(digits) == _HEX_ESCAPES[escaped] and all(c in string.hexdigits for c in digits)
                    ch = chr(int(digits, 16)) if valid and int(digits, 16) <= sys.maxunicode else None
                    if ch is None:
                        raise self.error(f"bad escape '\\{escaped}{printable(digits)}' in a string "
                                         f"(\\u takes 4 hex digits, \\U 8)", token)
                elif escaped in _UNESCAPES:
                    ch = _UNESCAPES[escaped]
                else:
                    known = ", ".join(sorted(_ESCAPES.values()) + ["\\uXXXX", "\\UXXXXXXXX"])
                    raise self.error(f"unknown escape '\\{escaped}' in a string (known: {known})", token)
            out.append(ch)
        return "".join(out)

    def attribute(self, tree: lark.Tree, opdef, op_name: str, attrs: dict) -> None:
        """Read one ``key=value`` argument of an op into ``attrs``, checking
        that the op has that attribute."""
        key, value = tree.children
        from mytriton.ir.opdefs import ANY_OP_ATTRS

        if str(key) not in opdef.attrs and str(key) not in opdef.optional_attrs and str(key) not in ANY_OP_ATTRS:
            raise self.error(f"'{op_name}' has no attribute '{key}'", key)
        attrs[str(key)] = self.attr_value(value)

    def loop_attrs(self, tree: lark.Tree | None) -> dict[str, Any]:
        """A loop's ``key=value`` options (the verifier checks their values)."""
        from mytriton.ir.opdefs import LOOP_ATTRS

        attrs: dict[str, Any] = {}
        for item in (tree.children if tree is not None else []):
            key, value = item.children
            if str(key) not in LOOP_ATTRS:
                raise self.error(f"a loop has no attribute '{key}' (it has {', '.join(LOOP_ATTRS)})", key)
            if str(key) in attrs:
                raise self.error(f"the loop attribute '{key}' is given twice", key)
            attrs[str(key)] = self.attr_value(value)
        return attrs

    def read_params(self, trees: list[lark.Tree | None]) -> list[tuple[str, Type, lark.Tree]]:
        out = []
        seen: set[str] = set()
        for tree in trees:
            if tree is None:
                continue
            name, ty, _ = tree.children
            if str(name) in seen:
                raise self.error(f"parameter '{name}' is declared twice", name)
            seen.add(str(name))
            out.append((str(name), self.type(ty), tree))
        return out

    def param_attrs(self, tree: lark.Tree, ptype: Type) -> dict[str, int]:
        """A parameter's ``{divisibility=16}``: known keys, each once, a power
        of two on a pointer or integer parameter."""
        attrs_tree = tree.children[2]
        attrs: dict[str, int] = {}
        for item in (attrs_tree.children if attrs_tree is not None else []):
            key, value = item.children
            if str(key) not in PARAM_ATTRS:
                raise self.error(f"a parameter has no attribute '{key}' (it has {', '.join(PARAM_ATTRS)})", key)
            if str(key) in attrs:
                raise self.error(f"the parameter attribute '{key}' is given twice", key)
            number = self.integer(str(value), value, str(key), 1, MAX_DIVISIBILITY)
            if number & (number - 1):
                raise self.error(f"{key} must be a power of two, got {number}", value)
            if not (isinstance(ptype, PointerType) or (isinstance(ptype, ScalarType) and ptype.is_int)):
                raise self.error(f"{key} is a fact about a pointer or an integer, not {ptype}", key)
            attrs[str(key)] = number
        return attrs

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
        quoted, line, col, digest = tree.children
        file = self.string(quoted)
        self.source_file = file
        if digest is not None:
            token = digest.children[0]
            value = self.string(token)
            if not is_digest(value):
                raise self.error(f"a source digest is {DIGEST_LENGTH} lowercase hex digits, got {format_string(value)}",
                                 token)
            self.source_digest = value
            SOURCES.vouch(file, value)
        elif file != self.file:  # (the IR text's own lines, registered as it was read, stay)
            SOURCES.forget(file)
        return Location(file, self.position(line, "line"), self.position(col, "column"))

    def position(self, token: lark.Token, what: str) -> int:
        return self.integer(str(token), token, f"source {what}", 0, _MAX_POSITION)

    def loc(self, tree: lark.Tree | None) -> Location | None:
        if tree is None:
            return None
        line, col = self.position(tree.children[0], "line"), self.position(tree.children[1], "column")
        if line == 0:
            return None
        return Location(self.source_file, line, col)


def parse_type(text: str, file: str = "<type>") -> Type:
    """A type on its own, as the IRs spell it (``ptr<f32>``, ``vector<4 x i32>``).
    A scalar or a pointer to one, spelled as the printer spells them (every
    kernel parameter in a CUDA file's header), is looked up: building the
    grammar's parser costs a process's first launch ~0.1 s."""
    known = _PARAMETER_TYPES.get(text)
    if known is not None:
        return known
    return TextReader(file).type(parse_text("common", text, file, start="type"))


# Every scalar type and pointer to one, by its printed spelling.
_PARAMETER_TYPES: dict[str, Type] = {
    **{str(t): t for t in SCALARS.values()},
    **{str(PointerType(t)): PointerType(t) for t in SCALARS.values()},
}


def check_text_limits(text: str, file: str) -> None:
    """Refuse IR text whose brackets nest deeper than MAX_IR_NESTING (or
    MAX_LOOP_NESTING loops) before the parser recurses into it (brackets in
    quoted strings and comments do not count). Integers are bounded where
    they are read (``TextReader.integer``)."""
    code = _NOT_CODE.sub(_blank, text)
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
    """A quoted string or a comment as spaces (offsets, and so locations, are kept)."""
    return " " * len(match.group())
