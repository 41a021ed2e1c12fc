"""The report's HTML: one self-contained page (inline style and script, no network).

Everything that comes from the input (the source, file and kernel names,
option values, IR text, remarks, picture titles) is HTML-escaped; pictures
go in as ``data:`` images, where a script in an SVG never runs; the page's
Content Security Policy allows its own script only (assets.py). Each stage's
text, and the source, is cut at ``MAX_STAGE_LINES`` lines or
``MAX_STAGE_CHARS`` characters with a note saying so, and the pictures at
``MAX_PICTURE_BYTES`` in all, so a huge kernel gives a page of some
megabytes, not hundreds.
"""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

from mytriton.report import assets
from mytriton.report.locations import Lines, reader

MAX_STAGE_LINES = 10_000
MAX_STAGE_CHARS = 400_000
MAX_PICTURE_BYTES = 4 << 20


@dataclass
class StageView:
    """One column: a stage's text (or why there is none)."""

    name: str  # compile --emit's name: tree, ssa, ..., ptx
    title: str  # what the column's heading says
    kind: str  # how its lines map to the source: ast, tree, ssa, cuda or ptx
    text: str | None = None
    note: str = ""  # why there is no text, or what to know about it
    detail: str = ""  # a smaller heading: the command and dump file
    shown: bool = True  # a column the page shows before any toggle


@dataclass
class RemarkView:
    line: int | None
    col: int | None
    where: str  # file:line:col as diagnostics print it
    message: str


@dataclass
class Report:
    file: str
    source: str
    kernel: str
    signature: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)
    stages: list[StageView] = field(default_factory=list)
    remarks: list[RemarkView] | None = None  # None: not available (remarks_note says why)
    remarks_note: str = ""
    pictures: list[tuple[str, str]] | None = None  # (title, SVG text); None: pictures_note says why
    pictures_note: str = ""


def esc(text: object) -> str:
    """Text for an element's content or a quoted attribute value."""
    return html.escape(str(text).replace("\x00", "\ufffd"), quote=True)


def bounded(text: str, what: str) -> tuple[str, str]:
    """``text`` cut at the page's limits, and a note saying where (or "")."""
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    cut = text
    if len(cut) > MAX_STAGE_CHARS:
        cut = cut[:MAX_STAGE_CHARS]
        cut = cut[:cut.rfind("\n") + 1] or cut
    lines = cut.split("\n")
    if len(lines) > MAX_STAGE_LINES:
        cut = "\n".join(lines[:MAX_STAGE_LINES]) + "\n"
    if cut == text:
        return text, ""
    shown = cut.count("\n") + (0 if cut.endswith("\n") else 1)
    return cut, (f"truncated: the page shows the first {shown:,} of {total_lines:,} lines "
                 f"({len(cut):,} of {len(text):,} characters) of {what}; the whole text is in the dump "
                 f"(--dump-dir) or on stdout (--emit)")


def _text_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _stage_column(stage: StageView, file: str) -> str:
    hidden = "" if stage.shown else " hidden"
    head = (f'<h2>{esc(stage.title)}<small>{esc(stage.detail)}</small><span class="hits"></span></h2>'
            if stage.detail else f'<h2>{esc(stage.title)}<span class="hits"></span></h2>')
    parts = [f'<section class="col stage" id="col-{esc(stage.name)}" data-stage="{esc(stage.name)}"{hidden}>',
             head, '<div class="body">']
    if stage.text is None:
        parts.append(f'<p class="note">{esc(stage.note or "not available")}</p>')
    else:
        text, cut_note = bounded(stage.text, f"the {stage.name} stage")
        mapped: Lines = reader(stage.kind, file)(text)
        rows = []
        for number, line in enumerate(_text_lines(text)):
            lines = mapped[number] if number < len(mapped) else ()
            attribute = f' data-l="{" ".join(str(n) for n in lines)}"' if lines else ""
            rows.append(f'<span class="ln"{attribute}>{esc(line)}</span>')
        parts.append("<pre>" + "".join(rows) + "</pre>")
        for note in (stage.note, cut_note):
            if note:
                parts.append(f'<p class="note">{esc(note)}</p>')
    parts.append("</div></section>")
    return "".join(parts)


def _source_column(report: Report) -> str:
    text, cut_note = bounded(report.source, "the source")
    by_line: dict[int, list[RemarkView]] = {}
    for remark in report.remarks or []:
        if remark.line is not None:
            by_line.setdefault(remark.line, []).append(remark)
    rows = []
    for number, line in enumerate(_text_lines(text), 1):
        rows.append(f'<span class="ln" data-line="{number}">'
                    f'<a class="n" href="#L{number}">{number}</a>{esc(line)}</span>')
        for remark in by_line.get(number, ()):
            rows.append(f'<span class="remark{_missed(remark)}">remark: {esc(remark.message)}</span>')
    note = f'<p class="note">{esc(cut_note)}</p>' if cut_note else ""
    return (f'<section class="col source" id="col-source" data-stage="source">'
            f'<h2>source<small>{esc(report.file)}</small><span class="hits"></span></h2>'
            f'<div class="body"><pre>{"".join(rows)}</pre>{note}</div></section>')


# What a remark says where a dot fell back (remarks.py's words): the page marks it.
_FELL_BACK = ("not staged", "not pipelined", "FMA", "not wgmma", "not overlapped", "fewer")


def _missed(remark: RemarkView) -> str:
    """" missed" for a remark that says what a dot did not get."""
    return " missed" if any(words in remark.message for words in _FELL_BACK) else ""


def _header(report: Report) -> str:
    rows = [("file", report.file), *report.options]
    items = "".join(f"<div><dt>{esc(key)}</dt><dd><code>{esc(value)}</code></dd></div>" for key, value in rows)
    if report.signature:
        items = (f'<div class="wide"><dt>signature</dt><dd><code>{esc(report.signature)}</code></dd></div>'
                 + items)
    toggles = "".join(
        f'<label><input type="checkbox" data-stage="{esc(stage.name)}"{" checked" if stage.shown else ""}> '
        f'{esc(stage.name)}</label>' for stage in report.stages)
    return (f"<header><h1>mytriton: kernel <code>{esc(report.kernel)}</code></h1>"
            f'<dl class="options">{items}</dl>'
            f'<nav class="toggles">columns: {toggles}</nav>'
            "<p class=\"note\">Click a Python line to see its lines in every stage; click a stage's line to "
            "see its Python line.</p></header>")


def _remarks_panel(report: Report) -> str:
    parts = ['<section class="panel" id="remarks"><h2>Remarks: the tl.dot path</h2>']
    if report.remarks is None:
        parts.append(f'<p class="note">{esc(report.remarks_note or "no remarks")}</p>')
    elif not report.remarks:
        parts.append('<p class="note">no tl.dot in this kernel: no remarks</p>')
    else:
        parts.append("<ul>")
        for remark in report.remarks:
            where = (f'<a href="#L{remark.line}">{esc(remark.where)}</a>' if remark.line is not None
                     else esc(remark.where))
            parts.append(f'<li class="remark-item{_missed(remark)}">{where}: remark: {esc(remark.message)}</li>')
        parts.append("</ul>")
        if report.remarks_note:
            parts.append(f'<p class="note">{esc(report.remarks_note)}</p>')
    parts.append("</section>")
    return "".join(parts)


def _pictures_panel(report: Report) -> str:
    count = f" ({len(report.pictures)})" if report.pictures else ""
    parts = [f'<details class="panel" id="pictures"><summary>Layout pictures{count}</summary>']
    if report.pictures is None:
        parts.append(f'<p class="note">{esc(report.pictures_note or "no layout pictures")}</p>')
    else:
        used = 0
        left_out = 0
        for title, svg in report.pictures:
            data = svg.encode("utf-8", "replace")
            if used + len(data) > MAX_PICTURE_BYTES:
                left_out += 1
                continue
            used += len(data)
            uri = "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
            parts.append(f'<figure><figcaption>{esc(title)}</figcaption><img alt="{esc(title)}" src="{uri}">'
                         "</figure>")
        if not report.pictures:
            parts.append('<p class="note">no tiles with a layout in this kernel</p>')
        if left_out:
            parts.append(f'<p class="note">{left_out} more pictures left out: the page holds at most '
                         f'{MAX_PICTURE_BYTES >> 20} MiB of them</p>')
        if report.pictures_note:
            parts.append(f'<p class="note">{esc(report.pictures_note)}</p>')
    parts.append("</details>")
    return "".join(parts)


def render(report: Report) -> str:
    """The page, as one string."""
    columns = [_source_column(report)] + [_stage_column(stage, report.file) for stage in report.stages]
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{assets.CONTENT_SECURITY_POLICY}">',  # a constant
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="mytriton">',
        f"<title>mytriton: {esc(report.kernel)} ({esc(report.file)})</title>",
        f"<style>{assets.CSS}</style></head>\n<body>",
        _header(report),
        _remarks_panel(report),
        f'<main id="columns">{"".join(columns)}</main>',
        _pictures_panel(report),
        f"<script>{assets.JS}</script>",
        "</body></html>\n",
    ])
