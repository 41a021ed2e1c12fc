"""Pictures of a kernel: its layouts and shared buffers, and its memory accesses.

The API (each SVG a complete document, every text in it escaped):

``layout_svgs(kernel) -> list[tuple[str, str]]``
    For a laid-out ``Kernel`` (``compiler.layouts``, or ``compiler.read_ssa``
    of a laid-out dump): one ``(title, svg)`` per distinct register-tile
    layout and shape (the thread, lane and register slot of every element,
    coloured by warp), then one per shared buffer (each element's bank and
    16-byte chunk, padding or swizzle, and the bank conflicts of the copies
    that write it and the mma reads that read it). Raises ``ValueError`` for
    a kernel that is not laid out.

``access_svgs(log, programs=()) -> list[tuple[str, str]]``
    For an ``AccessLog`` from ``record_accesses(kernel, grid, args,
    programs=...)`` (the NumPy interpreter run with its loads, stores and
    atomics recorded): a heat map per tensor (accesses per element, loads and
    stores, masked lanes and masked out-of-bounds attempts marked), then a
    picture per tensor of each program in ``programs`` (linear program ids
    the log recorded).

``picture_file_names(titles) -> list[str]`` gives safe, distinct file
names (``[a-z0-9_-]``, never a path from the IR) for a list of titles.

Tiles larger than 64x64 are drawn as their top-left corner with a note;
pictures stay bounded in size whatever the kernel. ``mytriton viz`` (cli.py)
writes these files; docs/cli.md ("Pictures") shows it.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

__all__ = ["layout_svgs", "access_svgs", "record_accesses", "picture_file_names"]


def layout_svgs(kernel: Any) -> list[tuple[str, str]]:
    from mytriton.viz.kernel_pictures import layout_svgs as build

    return build(kernel)


def access_svgs(log: Any, programs: Sequence[int] = ()) -> list[tuple[str, str]]:
    from mytriton.viz.accesses import access_svgs as build

    return build(log, programs)


def record_accesses(kernel: Any, grid: Any, args: Sequence[object], programs: Sequence[int] = ()) -> Any:
    from mytriton.viz.accesses import record_accesses as record

    return record(kernel, grid, args, programs)


def picture_file_names(titles: Sequence[str], suffix: str = ".svg") -> list[str]:
    """``NN-words.svg`` for each title: its index, then up to 60 characters of
    ``[a-z0-9_-]`` taken from it (anything else becomes ``-``)."""
    names = []
    for i, title in enumerate(titles):
        words = re.sub(r"[^a-z0-9_]+", "-", title.lower()).strip("-")[:60].strip("-") or "picture"
        names.append(f"{i:03d}-{words}{suffix}")
    return names
