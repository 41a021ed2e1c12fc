"""A small SVG writer: rectangles, lines, text and tooltips, nothing else.

Every piece of text goes through ``text`` (control characters spelled as
escapes, then XML-escaped), so a name from an IR file cannot close an element
or start a script. Numbers are written as numbers; no attribute takes text
from the kernel except through ``text``.
"""
from __future__ import annotations

import colorsys
import html

from mytriton.diagnostics import printable



def text(value: object) -> str:
    """``value`` as XML character data (and attribute value) safe in SVG."""
    return html.escape(printable(str(value)), quote=True)


def warp_colour(warp: int) -> str:
    """A light colour per warp, neighbours far apart on the colour wheel."""
    return hsl((warp * 137.508) % 360, 0.62, 0.80)


def bank_colour(bank: int) -> str:
    """32 distinguishable colours for the 32 shared-memory banks."""
    return hsl((bank * 360 / 32 * 11) % 360, 0.55 + 0.2 * (bank % 2), 0.72 + 0.1 * (bank % 3 == 0))


def heat_colour(fraction: float) -> str:
    """White (0) through yellow to dark red (1)."""
    f = min(max(fraction, 0.0), 1.0)
    return hsl(55 - 55 * f, 0.95, 0.95 - 0.35 * f)


def hsl(hue: float, saturation: float, lightness: float) -> str:
    r, g, b = colorsys.hls_to_rgb(hue / 360, lightness, saturation)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


class Svg:
    """Drawing commands collected in order; ``render`` gives the document,
    sized to what was drawn."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.styles: dict[tuple, str] = {}  # (size, anchor, bold, fill) -> CSS class of texts
        self.width = 0.0
        self.height = 0.0

    def _extend(self, x: float, y: float) -> None:
        self.width = max(self.width, x)
        self.height = max(self.height, y)

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "none", stroke: str = "#888",
             stroke_width: float = 0.5, tooltip: str | None = None, dash: bool = False,
             pattern: str | None = None) -> None:
        self._extend(x + w, y + h)
        fill_attr = f"url(#{pattern})" if pattern else fill
        extra = ' stroke-dasharray="3,2"' if dash else ""
        tip = f"<title>{text(tooltip)}</title>" if tooltip else ""
        close = f">{tip}</rect>" if tip else "/>"
        self.parts.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill_attr}" '
                          f'stroke="{stroke}" stroke-width="{stroke_width:g}"{extra}{close}')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#000", width: float = 1.0) -> None:
        self._extend(max(x1, x2), max(y1, y2))
        self.parts.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"/>')

    def text(self, x: float, y: float, value: object, size: float = 10, anchor: str = "start",
             bold: bool = False, fill: str = "#000") -> None:
        content = text(value)
        self._extend(x + (len(content) * size * 0.62 if anchor == "start" else size), y + 3)
        key = (size, anchor, bold, fill)
        if key not in self.styles:
            self.styles[key] = f"t{len(self.styles)}"
        self.parts.append(f'<text class="{self.styles[key]}" x="{x:g}" y="{y:g}">{content}</text>')

    def render(self) -> str:
        w, h = int(self.width) + 10, int(self.height) + 10
        defs = ('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
                'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eee"/>'
                '<line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern></defs>')
        css = " ".join(f".{name}{{font:{'bold ' if bold else ''}{size:g}px monospace;text-anchor:{anchor};fill:{fill}}}"
                       for (size, anchor, bold, fill), name in self.styles.items())
        defs = defs.replace("<defs>", f"<defs><style>{css}</style>")
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">\n'
                f"<title>{text(self.title)}</title>\n{defs}\n"
                f'<rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/>\n'
                + "\n".join(self.parts) + "\n</svg>\n")
