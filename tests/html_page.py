"""Reading a report page (mytriton/report) back in tests, with html.parser:
its columns and their lines, its scripts, images and attributes."""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "img", "input", "br", "hr", "link"}


@dataclass
class Line:
    text: str
    attrs: dict[str, str | None]

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def source_lines(self) -> list[int]:
        value = self.attrs.get("data-l")
        return [int(n) for n in value.split()] if value else []


@dataclass
class Page:
    columns: dict[str, list[Line]] = field(default_factory=dict)  # data-stage -> its .ln lines
    column_attrs: dict[str, dict[str, str | None]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)  # data-stage -> its notes
    scripts: list[str] = field(default_factory=list)
    images: list[dict[str, str | None]] = field(default_factory=list)
    all_attrs: list[tuple[str, str, str | None]] = field(default_factory=list)  # (tag, name, value)
    tags: list[str] = field(default_factory=list)
    remark_items: list[str] = field(default_factory=list)
    body_attrs: dict[str, str | None] = field(default_factory=dict)
    title: str = ""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.column: str | None = None
        self.capture: list[str] | None = None  # text of the element being read
        self.capture_depth = 0
        self.capture_kind = ""
        self.capture_attrs: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.page.tags.append(tag)
        self.page.all_attrs.extend((tag, name, value) for name, value in attrs)
        classes = set((values.get("class") or "").split())
        if tag == "img":
            self.page.images.append(values)
        if tag == "body":
            self.page.body_attrs = values
        if tag == "section" and "col" in classes:
            self.column = values.get("data-stage")
            assert self.column is not None
            self.page.columns[self.column] = []
            self.page.notes[self.column] = []
            self.page.column_attrs[self.column] = values
        if self.capture is None:
            kind = ("ln" if "ln" in classes else "note" if "note" in classes and self.column
                    else "remark" if "remark-item" in classes else "script" if tag == "script"
                    else "title" if tag == "title" else "")
            if kind:
                self.capture, self.capture_kind, self.capture_attrs = [], kind, values
                self.capture_depth = len(self.stack)
        if tag not in VOID:
            self.stack.append((tag, values))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1][0] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if self.capture is not None and len(self.stack) == self.capture_depth:
            text = "".join(self.capture)
            if self.capture_kind == "ln":
                if self.column == "source":  # the number before the text
                    number = self.capture_attrs.get("data-line") or ""
                    text = text[len(number):]
                self.page.columns[self.column or ""].append(Line(text, self.capture_attrs))
            elif self.capture_kind == "note":
                self.page.notes[self.column or ""].append(text)
            elif self.capture_kind == "remark":
                self.page.remark_items.append(text)
            elif self.capture_kind == "script":
                self.page.scripts.append(text)
            elif self.capture_kind == "title":
                self.page.title = text
            self.capture = None
        if tag == "section" and self.column is not None and not any(
                t == "section" and "col" in (a.get("class") or "") for t, a in self.stack):
            self.column = None

    def handle_data(self, data: str) -> None:
        if self.capture is not None:
            self.capture.append(data)


def read_page(text: str) -> Page:
    reader = _Reader()
    reader.feed(text)
    reader.close()
    assert not reader.stack, f"unclosed: {reader.stack}"
    return reader.page
