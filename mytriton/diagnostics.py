"""Source locations and the one diagnostic type every stage raises.

A diagnostic renders as ``file:line:col: error: message``, followed by the
source line and a caret under the column when the file's text is known.
Columns are 1-based, as in GCC and clang.
"""
from __future__ import annotations

import codecs
import hashlib
import os
import stat
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from mytriton.limits import MAX_SOURCE_BYTES, MAX_SOURCE_LINES

# Diagnostics quote lines of the kernel's own source only: texts registered
# in memory, or a regular file that a header's digest vouches for.
DIGEST_LENGTH = 16  # hex digits of sha256 that headers carry


def source_digest(text: str) -> str:
    """The short sha256 of a kernel source text that IR headers carry, so
    that a later stage may quote that file, and no other."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_LENGTH]


def source_lines(text: str) -> list[str]:
    """The lines of ``text`` as Python's tokenizer and the IR grammars count
    them: split at newlines only (``str.splitlines`` also splits at form
    feeds, ``\\x1c``, U+2028 and more, which would shift every later line)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode_source(data: bytes, file: str) -> str:
    """``data`` as UTF-8 text, newlines as text mode reads them; bytes that
    are not UTF-8 are an error at the line and column of the first of them
    (the line is quoted, bad bytes shown as U+FFFD), as Python's own
    SyntaxError points at it. A leading byte order mark is dropped, as
    Python drops it."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as err:
        before = _as_text_mode(data[bom:bom + err.start].decode("utf-8"))
        line = before.count("\n") + 1
        col = len(before) - (before.rfind("\n") + 1) + 1
        SOURCES.register(file, _as_text_mode(data[bom:].decode("utf-8", "replace")))
        raise CompileError(f"the file is not UTF-8: byte 0x{data[bom + err.start]:02x} at offset {bom + err.start} "
                           f"({err.reason})", Location(file, line, col)) from None
    return _as_text_mode(text)


def _as_text_mode(text: str) -> str:
    """Newlines as a file opened in text mode reads them."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def is_digest(value: object) -> bool:
    return (isinstance(value, str) and len(value) == DIGEST_LENGTH
            and all(ch in "0123456789abcdef" for ch in value))


def printable(text: str, keep: str = "") -> str:
    """``text`` safe to print on a terminal: control and format characters
    (escape sequences, newlines, bidirectional overrides) spelled as escapes,
    except those in ``keep``."""
    return "".join(ch if ch in keep or not _unprintable(ch) else _escape(ch) for ch in text)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``; did you mean 'X'?`` for the candidate closest to a misspelt
    ``name`` (difflib's ratio, at least 0.6, as Python's own NameError
    suggestions are near misses), or the empty string."""
    import difflib

    close = difflib.get_close_matches(name, sorted(set(candidates) - {name}), n=1, cutoff=0.6)
    return f"; did you mean '{printable(close[0])}'?" if close else ""


def _unprintable(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{printable(self.file)}:{self.line}:{self.col}"


class _Text:
    """Known lines of one file (sparse: a bundle quotes only its functions)
    and the digest of the whole text when known."""

    def __init__(self, lines: dict[int, str], digest: str | None) -> None:
        self.lines = lines
        self.digest = digest


class SourceTexts:
    """Texts of the files diagnostics may quote: texts registered in memory
    (what is being compiled: a kernel file, IR text, a bundle's copy of its
    functions), and a file on disk only when an IR header carries the digest
    of its text and the file still matches it."""

    def __init__(self) -> None:
        self._texts: dict[str, _Text] = {}
        self._vouched: dict[str, str] = {}  # file -> digest an IR header carries

    def register(self, file: str, text: str) -> None:
        # The text being compiled now is the truth about ``file``, whatever
        # an earlier header said.
        self._vouched.pop(file, None)
        self._texts[file] = _Text(dict(enumerate(source_lines(text), 1)), source_digest(text))

    def register_lines(self, file: str, first_line: int, lines: list[str], digest: str | None = None) -> None:
        """Make lines of ``file`` known from elsewhere (a kernel bundle that
        quotes them), beside the lines known of the text with the same digest."""
        if not 1 <= first_line <= MAX_SOURCE_LINES - len(lines) + 1:
            return
        if self._vouched.get(file) != digest:
            self._vouched.pop(file, None)
        known = self._texts.get(file)
        if known is None or known.digest != digest:
            known = self._texts[file] = _Text({}, digest)
        for i, line in enumerate(lines):
            known.lines[first_line + i] = line

    def vouch(self, file: str, digest: str) -> None:
        """An IR header says ``file`` is the source whose text has ``digest``."""
        self._vouched[file] = digest

    def forget(self, file: str) -> None:
        """An IR header names ``file`` with no digest: which text it means is
        unknown, so a text an earlier compile left in memory is not quoted."""
        self._texts.pop(file, None)
        self._vouched.pop(file, None)

    def line(self, file: str, line: int) -> str | None:
        expected = self._vouched.get(file)
        known = self._texts.get(file)
        if known is not None and (expected is None or known.digest in (None, expected)):
            text = known.lines.get(line)
            if text is not None or expected is None:
                return text
        if expected is None:
            return None
        lines = _read_vouched(file, expected)
        if lines is None:
            return None
        self._texts[file] = _Text(dict(enumerate(lines, 1)), expected)
        return self._texts[file].lines.get(line)


def _read_vouched(file: str, digest: str) -> list[str] | None:
    """The lines of ``file`` if it is a regular file of bounded size whose
    text has ``digest``; None for anything else (never blocks on a FIFO or a
    device, never reads more than MAX_SOURCE_BYTES)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        chunks, size = [], 0
        while size <= MAX_SOURCE_BYTES:
            chunk = os.read(fd, MAX_SOURCE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    if size > MAX_SOURCE_BYTES:
        return None
    try:
        text = _as_text_mode(b"".join(chunks).removeprefix(codecs.BOM_UTF8).decode("utf-8"))
    except UnicodeDecodeError:
        return None
    if source_digest(text) != digest:
        return None
    return source_lines(text)


SOURCES = SourceTexts()


class CompileError(Exception):
    """An error in user input (kernel source, IR text, options), located."""

    def __init__(self, message: str, loc: Location | None = None,
                 notes: list[tuple[Location | None, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.notes = list(notes or [])

    def note(self, loc: Location | None, message: str) -> "CompileError":
        self.notes.append((loc, message))
        return self

    def at(self, loc: Location | None) -> "CompileError":
        """Attach a location if the error has none yet."""
        if self.loc is None:
            self.loc = loc
        return self

    def render(self, sources: SourceTexts = SOURCES) -> str:
        parts = [_quote(self.loc, "error", self.message, sources)]
        parts += [_quote(loc, "note", message, sources) for loc, message in self.notes]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True)
class Remark:
    """A located fact that is not an error (``--remarks``): rendered as an
    error is, ``file:line:col: remark: message`` with the source line and a
    caret, as clang's ``-Rpass`` remarks."""

    loc: Location | None
    message: str

    def render(self, sources: SourceTexts = SOURCES) -> str:
        return _quote(self.loc, "remark", self.message, sources)


def _quote(loc: Location | None, severity: str, message: str, sources: SourceTexts) -> str:
    if loc is None:
        return f"{severity}: {printable(message, keep=_MESSAGE_KEEP)}"
    head = f"{loc}: {severity}: {printable(message, keep=_MESSAGE_KEEP)}"
    text = sources.line(loc.file, loc.line)
    if text is None or not text.strip():
        return head
    text, col = _window(text, loc.col)
    caret = _caret_prefix(text, col) + "^"
    return f"{head}\n{printable(text, keep=chr(9))}\n{caret}"


# Characters of a source line a diagnostic quotes: a longer line is cut to a
# window around the column (a 100,000-character line of nested calls is no
# help on a terminal).
QUOTED_COLUMNS = 160


def _window(text: str, col: int) -> tuple[str, int]:
    """``text`` cut to QUOTED_COLUMNS around ``col`` (with "..." where cut),
    and the column in what is left."""
    if len(text) <= QUOTED_COLUMNS:
        return text, col
    start = max(0, min(col - 1 - QUOTED_COLUMNS // 2, len(text) - QUOTED_COLUMNS))
    end = start + QUOTED_COLUMNS
    lead = "..." if start else ""
    return lead + text[start:end] + ("..." if end < len(text) else ""), col - start + len(lead)


def shorten(text: str, limit: int = 40) -> str:
    """``text`` for a message: at most ``limit`` characters, cut with "..."."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Messages may span lines (nvcc's own report) and hold tabs.
_MESSAGE_KEEP = "\n\t"


def _caret_prefix(text: str, col: int) -> str:
    # Keep tabs so the caret lines up under the same column in a terminal,
    # and count an escaped character as the width it is printed with.
    prefix = printable(text[: max(col - 1, 0)], keep="\t")
    return "".join("\t" if ch == "\t" else " " for ch in prefix)
