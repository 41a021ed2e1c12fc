"""Lines of C, indented by the scopes they are written in.

The CUDA printer and its helpers write through one builder: ``line`` at
the current depth, and ``scope`` for a braced block, which indents what is
written inside it and closes it (so no helper counts depths by hand)::

    with out.scope("for (int k = 0; k < 4; ++k) {"):
        out.line("acc += x[k];")

Each line also records the Python line it comes from (``sources``, which the
``#line`` directives are written from): the one ``at`` says while it is
written, or the one a ``Sourced`` text carries, made earlier (a slot loop's
lines are made before the loop is written).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

INDENT = "  "


class Sourced(str):
    """A line of C made before it is written, with the Python line it comes from."""

    source: int | None

    def __new__(cls, text: str, source: int | None) -> "Sourced":
        made = super().__new__(cls, text)
        made.source = source
        return made


class CBuilder:
    def __init__(self, depth: int = 0) -> None:
        self.lines: list[str] = []
        self.sources: list[int | None] = []  # each line's Python line (None: the kernel's)
        self.source: int | None = None  # the Python line of what is being written now
        self.depth = depth

    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text)
        self.sources.append(text.source if isinstance(text, Sourced) and text.source is not None
                            else self.source)

    def sourced(self, text: str) -> Sourced:
        """``text`` to be written later, from the Python line being written now."""
        return text if isinstance(text, Sourced) else Sourced(text, self.source)

    @contextmanager
    def at(self, source: int | None) -> Iterator[None]:
        """What is written inside comes from Python line ``source`` (None:
        from the line it would come from anyway)."""
        outer = self.source
        if source is not None:
            self.source = source
        try:
            yield
        finally:
            self.source = outer

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


class SourcedLines(list):
    """Lines made now and written later (a slot loop's): each appended one
    remembers the Python line ``builder`` is at."""

    def __init__(self, builder: CBuilder) -> None:
        super().__init__()
        self.builder = builder

    def append(self, text: str) -> None:
        super().append(self.builder.sourced(text))

    def extend(self, texts) -> None:  # type: ignore[override]
        for text in texts:
            self.append(text)
