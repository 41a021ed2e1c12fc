"""Loading the Lark grammars and turning Lark's errors into diagnostics.

The grammars live in ``grammars/`` at the top of the repository, installed as
the package ``mytriton.grammars``. Both IR readers go through ``parse_text``.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from mytriton.ir.lark_module import lark

from mytriton.diagnostics import SOURCES, CompileError, Location, shorten, source_lines

# Literal spellings of the grammars' terminals, for "expected ..." messages.
_TERMINAL_SPELLING = {
    "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "LESSTHAN": "'<'", "MORETHAN": "'>'",
    "AT": "'@'", "MINUS": "'-'",
    "VALUE": "a value (%N)", "BINDING": "a binding ($name)", "NAME": "a name",
    "INT": "an integer", "FLOAT": "a number", "DIMS": "dimensions (RxC)",
    "ESCAPED_STRING": "a string", "$END": "end of input",
}


def grammar_dir() -> Path:
    try:
        from importlib.resources import files

        path = Path(str(files("mytriton.grammars")))
        if (path / "common.lark").exists():
            return path
    except ModuleNotFoundError:
        pass
    # Running from a checkout without installing: grammars/ sits beside mytriton/.
    return Path(__file__).resolve().parents[2] / "grammars"


_OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": True}


@functools.lru_cache(maxsize=None)
def parser(name: str, start: str = "start") -> lark.Lark:
    """Each grammar's parser, built once per process. Building costs about
    0.2 s per grammar, so the parse tables are kept as JSON in the user's
    private cache (``user_cache``), about 10 ms to load. Never Lark's own
    ``cache=``: that unpickles a file of a predictable name in the shared
    temporary directory, so whoever can write there could run code here."""
    path = grammar_dir() / f"{name}.lark"
    key = _cache_key(path, start)
    loaded = _load_tables(key)
    if loaded is not None:
        return loaded
    built = lark.Lark.open(str(path), start=start, **_OPTIONS)
    _store_tables(key, built)
    return built


def _cache_key(path: Path, start: str) -> Path:
    from mytriton.user_cache import cache_root

    texts = [p.read_bytes() for p in (path, path.with_name("common.lark"))]
    digest = hashlib.sha256(repr((lark.__version__, start, sorted(_OPTIONS.items()), texts)).encode())
    return cache_root() / "grammars" / f"{path.stem}-{start}-{digest.hexdigest()[:24]}.json"


def _load_tables(path: Path) -> lark.Lark | None:
    from mytriton.user_cache import read_private

    raw = read_private(path)
    if raw is None:
        return None
    try:
        tables = json.loads(raw, object_hook=_decode)
        return lark.Lark._load_from_dict(tables["data"], tables["memo"])
    except Exception:  # a damaged or foreign entry: rebuild it
        return None


def _store_tables(path: Path, built: lark.Lark) -> None:
    from mytriton.user_cache import write_private

    data, memo = built.memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
    write_private(path, json.dumps(_encode({"data": data, "memo": memo})).encode())


def _encode(value: Any) -> Any:
    """Lark's tables as JSON that keeps what JSON loses: dicts with integer
    keys and tuples (``{"d": [[k, v], ...]}``, ``{"t": [...]}``)."""
    if isinstance(value, dict):
        return {"d": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return str(value) if isinstance(value, str) else value  # Lark's Tokens are str subclasses


def _decode(obj: dict) -> Any:
    if "d" in obj:
        return {k: v for k, v in obj["d"]}
    return tuple(obj["t"])


def rule(tree: lark.Tree) -> str:
    """A node's rule name without the ``common__`` prefix Lark gives imports."""
    name = tree.data if isinstance(tree.data, str) else tree.data.value
    return name.rsplit("__", 1)[-1]


def parse_text(grammar: str, text: str, file: str, start: str = "start") -> lark.Tree:
    SOURCES.register(file, text)
    lark_parser = parser(grammar, start)
    try:
        return lark_parser.parse(text)
    except lark.UnexpectedEOF as err:
        lines = source_lines(text) or [""]
        loc = Location(file, len(lines), len(lines[-1]) + 1)
        raise CompileError(f"unexpected end of input{_expected(err.expected, lark_parser)}", loc) from None
    except lark.UnexpectedToken as err:
        if err.token.type == "$END":
            lines = source_lines(text) or [""]
            loc = Location(file, len(lines), len(lines[-1]) + 1)
            raise CompileError(f"unexpected end of input{_expected(err.expected, lark_parser)}", loc) from None
        loc = Location(file, err.line, err.column)
        raise CompileError(f"unexpected '{shorten(str(err.token))}'{_expected(err.expected, lark_parser)}",
                           loc) from None
    except lark.UnexpectedCharacters as err:
        loc = Location(file, err.line, err.column)
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        raise CompileError(f"unexpected character '{char}'", loc) from None


def _expected(names: set[str] | frozenset[str], lark_parser: lark.Lark) -> str:
    spelled = sorted({_spell(n, lark_parser) for n in names})
    if not spelled:
        return ""
    if len(spelled) > 6:
        spelled = spelled[:6] + ["..."]
    return "; expected " + ", ".join(spelled)


def _spell(terminal: str, lark_parser: lark.Lark) -> str:
    if terminal in _TERMINAL_SPELLING:
        return _TERMINAL_SPELLING[terminal]
    try:
        pattern = lark_parser.get_terminal(terminal).pattern
    except KeyError:
        return terminal.lower()
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return terminal.lower()


def node_loc(tree: lark.Tree | lark.Token, file: str) -> Location:
    """Where a parse-tree node starts in the IR text."""
    if isinstance(tree, lark.Token):
        return Location(file, tree.line or 1, tree.column or 1)
    meta = tree.meta
    return Location(file, getattr(meta, "line", 1), getattr(meta, "column", 1))
