"""Lines of C, indented by the scopes they are written in.

The CUDA printer and its helpers write through one builder: ``line`` at
the current depth, and ``scope`` for a braced block, which indents what is
written inside it and closes it (so no helper counts depths by hand)::

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
        self.open(opening)
        yield
        self.close(closing)

    # Where a block's end is not where the code that opened it ends (a
    # branch closes it, or a helper's own ``end``), these write the two
    # halves of a scope.
    def open(self, opening: str) -> None:
        self.line(opening)
        self.depth += 1

    def close(self, closing: str = "}") -> None:
        self.depth -= 1
        self.line(closing)

    def switch(self, text: str) -> None:
        """Close the open block and open the next on one line (``} else {``)."""
        self.close(text)
        self.depth += 1

    @contextmanager
    def indented(self) -> Iterator[None]:
        """What is written inside, one level deeper (a scope whose braces are written apart)."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
