"""Lines of C, indented by the scopes they are written in.

The CUDA printer and its helpers write through one builder: ``line`` at
the current depth, and ``scope`` for a braced block, which indents what is
written inside it and closes it however the writing leaves (so no helper
counts depths by hand)::

    with out.scope("for (int k = 0; k < 4; ++k) {"):
        out.line("acc += x[k];")
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

INDENT = "  "


class CBuilder:
    def __init__(self, depth: int = 0) -> None:
        self.lines: list[str] = []
        self.depth = depth

    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text)

    @contextmanager
    def scope(self, opening: str, closing: str = "}") -> Iterator[None]:
        """``opening`` (which ends in its brace, and may carry a comment),
        the block written inside, one level deeper, then ``closing``."""
        self.line(opening)
        with self.indented():
            yield
        self.line(closing)

    @contextmanager
    def indented(self) -> Iterator[None]:
        """What is written inside, one level deeper (a scope whose braces are written apart)."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
