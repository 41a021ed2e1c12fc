"""Which Python lines each line of a stage's text comes from.

Every reader takes a stage's whole text and returns one tuple per line (the
text split at ``\\n``): the kernel file's lines that line comes from, the
main one first, empty where it comes from none.

* tree IR and SSA: the ``@line:col`` locations on the line (the kernel
  header's ``@"file":line:col`` too); the last one on a line is the
  outermost op's, so it comes first.
* CUDA: a ``#line N "file"`` directive holds until the next one; CUDA
  without directives falls back to the ``// op @line:col`` comments.
* PTX: a ``.loc FILE LINE COL`` holds until the next one, for the
  ``.file`` entries that name the kernel's file (a header's inlined
  function counts at its ``inlined_at`` line); line 0 is no line.
* the kernel bundle (``parse``'s output): its functions are the source's,
  copied verbatim from the lines its ``__mytriton_bundle__`` header names.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Callable
from urllib.parse import unquote

Lines = list[tuple[int, ...]]

_AT = re.compile(r'@(?:"(?:[^"\\\n]|\\.)*":)?(\d+):(\d+)')
_LINE_DIRECTIVE = re.compile(r'\s*#\s*line\s+(\d+)\b')
_COMMENT_AT = re.compile(r'//.*')
_COMMENT_LOC = re.compile(r'@(\d+)(?::\d+)?')
_PTX_FILE = re.compile(r'\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')
_PTX_LOC = re.compile(r'\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)')
_INLINED_AT = re.compile(r'inlined_at\s+(\d+)\s+(\d+)\s+\d+')


def _ordered(found: list[int]) -> tuple[int, ...]:
    """The last location first (the outermost op's), then the others in order, without repeats."""
    if not found:
        return ()
    return tuple(dict.fromkeys([found[-1], *found[:-1]]))


def ir_lines(text: str) -> Lines:
    """Tree IR or SSA: the ``@line:col`` locations of each line."""
    return [_ordered([int(m.group(1)) for m in _AT.finditer(line) if int(m.group(1)) > 0])
            for line in text.split("\n")]


def cuda_lines(text: str) -> Lines:
    """CUDA: each line's ``#line`` directive (the one above it, or itself)."""
    lines = text.split("\n")
    if not any(_LINE_DIRECTIVE.match(line) for line in lines):
        return [_comment_lines(line) for line in lines]
    result: Lines = []
    current: int | None = None
    for line in lines:
        directive = _LINE_DIRECTIVE.match(line)
        if directive:
            current = int(directive.group(1)) or None
        result.append((current,) if current is not None else ())
    return result


def _comment_lines(line: str) -> tuple[int, ...]:
    comment = _COMMENT_AT.search(line)
    if comment is None:
        return ()
    return _ordered([int(m.group(1)) for m in _COMMENT_LOC.finditer(comment.group(0)) if int(m.group(1)) > 0])


def ptx_lines(text: str, source_file: str) -> Lines:
    """PTX: each line's ``.loc`` (the one above it, or itself) in the kernel's file."""
    lines = text.split("\n")
    files = set()
    for line in lines:
        entry = _PTX_FILE.match(line)
        if entry and _names_the_file(entry.group(2), source_file):
            files.add(entry.group(1))
    result: Lines = []
    current: int | None = None
    for line in lines:
        loc = _PTX_LOC.match(line)
        if loc:
            current = None
            if loc.group(1) in files:
                current = int(loc.group(2)) or None
            else:
                inlined = _INLINED_AT.search(loc.group(3))
                if inlined and inlined.group(1) in files:
                    current = int(inlined.group(2)) or None
        result.append((current,) if current is not None else ())
    return result


def _names_the_file(name: str, source_file: str) -> bool:
    """Whether a ``.file`` entry (absolute, maybe percent-encoded) is the kernel's file."""
    name = unquote(name.replace('\\"', '"').replace("\\\\", "\\"))
    if not source_file or source_file.startswith("<"):
        return False
    if os.path.isabs(source_file):
        return os.path.normpath(name) == os.path.normpath(source_file)
    wanted = os.path.normpath(source_file)
    return os.path.normpath(name) == os.path.abspath(wanted) or name.endswith(os.sep + wanted.lstrip("./"))


def bundle_lines(text: str) -> Lines:
    """The kernel bundle: each copied function's lines, mapped back by its header."""
    count = text.count("\n") + 1
    result: Lines = [()] * count
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return result
    first: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__mytriton_bundle__"
                                                for t in node.targets):
            try:
                header = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                return result
            lines = header.get("lines") if isinstance(header, dict) else None
            if isinstance(lines, dict):
                first = {name: n for name, n in lines.items() if isinstance(name, str) and isinstance(n, int)}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in first:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            for bundle_line in range(start, min(end, count) + 1):
                result[bundle_line - 1] = (first[node.name] + bundle_line - start,)
    return result


def reader(kind: str, source_file: str) -> Callable[[str], Lines]:
    """The reader of a stage whose text is of ``kind`` (ast, tree, ssa, cuda, ptx)."""
    if kind == "ptx":
        return lambda text: ptx_lines(text, source_file)
    return {"ast": bundle_lines, "cuda": cuda_lines}.get(kind, ir_lines)
