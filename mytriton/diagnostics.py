"""Source locations and the one diagnostic type every stage raises.

A diagnostic renders as ``file:line:col: error: message``, followed by the
source line and a caret under the column when the file's text is known.
Columns are 1-based, as in GCC and clang.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

class SourceTexts:
    """Texts of the files diagnostics may quote: registered in-memory texts
    (stdin, IR being parsed) first, then files read from disk on demand."""

    def __init__(self) -> None:
        self._texts: dict[str, list[str]] = {}

    def register(self, file: str, text: str) -> None:
        self._texts[file] = text.splitlines()

    def register_lines(self, file: str, first_line: int, lines: list[str]) -> None:
        """Make lines of ``file`` known from elsewhere (a kernel bundle that
        quotes them), unless the file itself can be read."""
        known = self._texts.get(file)
        if known is None:
            known = self._read(file)
            if known:
                return
        elif any(known):
            if len(known) >= first_line - 1 + len(lines) and known[first_line - 1:first_line - 1 + len(lines)] == lines:
                return
        end = first_line - 1 + len(lines)
        if len(known) < end:
            known.extend([""] * (end - len(known)))
        known[first_line - 1:end] = lines

    def _read(self, file: str) -> list[str]:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        self._texts[file] = lines
        return lines

    def line(self, file: str, line: int) -> str | None:
        lines = self._texts.get(file)
        if lines is None:
            lines = self._read(file)
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return None


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


def _quote(loc: Location | None, severity: str, message: str, sources: SourceTexts) -> str:
    if loc is None:
        return f"{severity}: {message}"
    head = f"{loc}: {severity}: {message}"
    text = sources.line(loc.file, loc.line)
    if text is None or not text.strip():
        return head
    caret = _caret_prefix(text, loc.col) + "^"
    return f"{head}\n{text}\n{caret}"


def _caret_prefix(text: str, col: int) -> str:
    # Keep tabs so the caret lines up under the same column in a terminal.
    prefix = text[: max(col - 1, 0)]
    return "".join("\t" if ch == "\t" else " " for ch in prefix)
