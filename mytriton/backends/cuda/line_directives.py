"""``#line`` directives: which Python line each statement of the CUDA comes from.

The emitter writes ``#line N "samples/add.py"`` where the Python line of the
statements changes, and nowhere else: in mytriton's CUDA a directive holds for
every line below it up to the next one (the header comment says so). C's
``#line`` numbers the lines after it consecutively instead, so the build
(``for_nvcc``) writes each directive again before every line it holds for;
that is also where a relative file name is made absolute, against the current
working directory, as a C compiler reads a relative ``#line`` name. nvcc runs
in a temporary directory and would prefix a relative name with that; a
profiler (Nsight Compute's source view, ``nvdisasm -g``) needs the file
where the user has it. The emitted text keeps the name as the user gave it,
so it stays the same on every machine.

A file name comes from input, so the directive spells it with characters
that mean nothing special to C or PTX: printable ASCII but for
``"``, ``\\``, ``?`` (trigraphs) and ``%``; any other character (a quote, a
backslash, a newline, non-ASCII) is percent-encoded, ``%XX`` for each of its
UTF-8 bytes. C escapes cannot be used: cicc writes the name into the PTX's
``.file`` line with its own escapes, which ptxas does not read back (a ``\\"``
there is a syntax error, ``\\303`` is kept as four characters), so a
percent-encoded name is what reaches the line table whole.
"""
from __future__ import annotations

import os
import re

# Characters a #line name keeps as they are.
_KEPT = frozenset(chr(c) for c in range(0x20, 0x7F)) - set('"\\?%')
# A directive as the emitter writes it (indented like the line after it).
DIRECTIVE = re.compile(r'[ \t]*#line ([1-9][0-9]{0,9}) "([^"\\]*)"[ \t]*\Z')
# The root a relative name is read against when the working directory is gone.
FALLBACK_ROOT = "/mytriton"


def file_name(name: str) -> str:
    """``name`` as a ``#line`` directive spells it (percent-encoded where it must be)."""
    out = []
    for ch in name:
        if ch in _KEPT:
            out.append(ch)
        else:
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def directive(line: int, name: str) -> str:
    """``#line`` for ``line`` of ``name`` (a line outside C's 1..2**31-1 is clamped)."""
    return f'#line {min(max(line, 1), 2**31 - 1)} "{file_name(name)}"'


def with_directives(lines: list[str], sources: list[int | None], name: str) -> list[str]:
    """``lines``, each from Python line ``sources[i]`` of ``name`` (None:
    the line before's), with a directive before each run of lines from one
    Python line (indented as the run's first line)."""
    out: list[str] = []
    current = None
    for text, source in zip(lines, sources):
        if source is not None and source != current:
            indent = text[:len(text) - len(text.lstrip(" "))]
            out.append(indent + directive(source, name))
            current = source
        out.append(text)
    return out


def for_nvcc(source: str, cwd: str | None = None) -> str:
    """The CUDA text nvcc is given: ``source`` with each of mytriton's
    ``#line`` directives written again before every line it holds for, and
    relative names made absolute against ``cwd`` (the working directory).
    Lines before the first directive are left alone, as is the line after one
    that ends in a backslash (it continues that line)."""
    lines = source.split("\n")
    if not any(DIRECTIVE.match(text) for text in lines):
        return source
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:  # the working directory was removed
            cwd = FALLBACK_ROOT
    root = file_name(cwd).rstrip("/")
    out: list[str] = []
    current: str | None = None
    continued = False
    for text in lines:
        found = DIRECTIVE.match(text)
        if found is not None and not continued:
            line, name = found.groups()
            current = f'#line {line} "{name if name.startswith("/") else root + "/" + name}"'
            continue
        if current is not None and text.strip() and not continued:
            out.append(current)
        out.append(text)
        continued = text.endswith("\\")
    return "\n".join(out)
