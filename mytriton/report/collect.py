"""Gathering a compile's report: each stage's text as it is made, then the page.

A ``Collector`` watches a compile (``instrument.attach``) and keeps each
stage's text as the stage prints it, the laid-out kernel (for the remarks and
the layout pictures) and the CUDA source. ``html_report`` (``compile
--html``) completes what the compile did not reach: the CUDA through a
compile of its own (an ``--emit`` that stops earlier or branches off to MLIR
or TTIR, as ``--remarks`` does), the PTX where nvcc is found, ptxas's
registers for the remarks. ``dump_report`` (``--dump-dir``'s and
``MYTRITON_DUMP_DIR``'s ``index.html``) shows what the dump holds, and
says why a stage is missing.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from mytriton.diagnostics import CompileError
from mytriton.report.page import RemarkView, Report, StageView, render

# The columns, in pipeline order: (stage, heading, how its lines map to the source).
COLUMNS = (
    ("ast", "bundle (parse)", "ast"),
    ("tree", "tree IR (trace)", "tree"),
    ("ssa", "SSA (lower)", "ssa"),
    ("opt", "SSA after opt", "ssa"),
    ("staged", "SSA after stage-dots", "ssa"),
    ("layouts", "laid-out SSA (layouts)", "ssa"),
    ("cuda", "CUDA (emit-cuda)", "cuda"),
    ("ptx", "PTX (nvcc -lineinfo)", "ptx"),
)
HIDDEN_AT_FIRST = ("ast",)  # the bundle is the source again: a toggle shows it


class Collector:
    """Keeps what a compile makes, stage by stage (an ``instrument`` observer)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.kernel: Any = None  # the laid-out kernel
        self.cuda: str | None = None

    def on_stage(self, name: str, value: Any) -> None:
        from mytriton import compiler

        text = compiler.stage_text(value)  # printed now: later stages change kernels in place
        if isinstance(text, str):
            self.texts[name] = text
        if name == "layouts":
            self.kernel = value
        elif name == "cuda" and isinstance(value, str):
            self.cuda = value


def watch(options: Any) -> Collector:
    """A Collector attached to ``options``."""
    from mytriton.instrument import attach

    collector = Collector()
    attach(options, collector)
    return collector


def _quiet(options: Any) -> Any:
    return dataclasses.replace(options, on_stage=None, before_each=None, after_each=None)


def html_report(text: str, file: str, options: Any, seen: Collector, emit: str) -> str:
    """The page of ``compile --html``: every stage through the CUDA (a compile
    of its own where ``seen`` stopped earlier), the PTX where nvcc is found,
    the remarks with ptxas's registers."""
    from mytriton import compiler

    if seen.cuda is None or seen.kernel is None:
        again = Collector()
        quiet = _quiet(options)
        from mytriton.instrument import attach

        attach(quiet, again)
        compiler.run_stages(text, file, "cuda", quiet)
        seen = again
    notes: dict[str, str] = {}
    if "ptx" not in seen.texts and seen.cuda is not None:
        from mytriton.backends.cuda.nvcc import NvccMissing

        try:
            seen.texts["ptx"] = compiler.ptx(seen.cuda, options)
        except NvccMissing:
            notes["ptx"] = "no PTX: nvcc is not found on PATH (mytriton doctor says what is missing)"
    return render(build_report(text, file, options, seen, notes, ptxas=None))


def dump_report(text: str, file: str, options: Any, seen: Collector, emit: str, ptxas: str) -> str:
    """The ``index.html`` of a dump: the stages the compile reached (up to
    ``emit``), no compile of its own; ``ptxas`` says why the remarks have no
    register counts."""
    from mytriton import compiler

    reached = {stage.name for stage in compiler.path_to(emit)}
    notes = {name: (f"not dumped: the compile stopped at --emit={emit}" if name not in reached
                    else "not made")
             for name, _, _ in COLUMNS if name not in seen.texts}
    if emit == "cuda" and "ptx" in notes:
        notes["ptx"] = "not built: this dump stops at the CUDA source (a launch in the interpreter needs no nvcc)"
    return render(build_report(text, file, options, seen, notes, ptxas=ptxas))


def build_report(text: str, file: str, options: Any, seen: Collector, notes: dict[str, str],
                 ptxas: str | None) -> Report:
    """What the page shows, from what ``seen`` kept (``notes``: why a stage has no text)."""
    from mytriton import compiler

    stages = []
    for name, title, kind in COLUMNS:
        stage = compiler.STAGE[name]
        detail = f"{stage.command} \u2192 {stage.dump_file}" if stage.dump_file else stage.command
        stages.append(StageView(name, title, kind, seen.texts.get(name), notes.get(name, "" if name in seen.texts
                                                                                 else "not made"),
                                detail, name not in HIDDEN_AT_FIRST))
    report = Report(file=file, source=text, kernel=_kernel_name(seen, options), signature=_signature(seen),
                    options=_options(options), stages=stages)
    _add_remarks(report, text, file, options, seen, ptxas)
    _add_pictures(report, seen)
    return report


def _kernel_name(seen: Collector, options: Any) -> str:
    for name in ("ssa", "tree"):
        header = _header_line(seen.texts.get(name, ""))
        if header:
            return header.split(" ", 1)[1].split("(", 1)[0]
    return options.kernel or "kernel"


def _header_line(text: str) -> str:
    for line in text.split("\n", 64)[:64]:
        if line.startswith(("kernel ", "tree ")):
            return line
    return ""


def _signature(seen: Collector) -> str:
    """The kernel's parameters and constants, as the SSA's header writes them."""
    header = _header_line(seen.texts.get("ssa", "")) or _header_line(seen.texts.get("tree", ""))
    for tail in (" num_warps=", ' @"', " @"):
        if tail in header:
            header = header.split(tail, 1)[0]
    return header.split(" ", 1)[1] if " " in header else header


def _options(options: Any) -> list[tuple[str, str]]:
    rows = []
    if options.kernel:
        rows.append(("-k", options.kernel))
    for name, value in options.defines.items():
        rows.append(("-D", f"{name}={value!r}"))
    if options.signature:
        rows.append(("-s", options.signature))
    rows.append(("--num-warps", str(options.num_warps)))
    rows.append(("--num-stages", "default (3)" if options.num_stages is None else str(options.num_stages)))
    rows.append(("--arch", options.arch))
    rows.append(("--shared-budget", f"{options.budget} bytes" + (" (the arch's limit)" if options.shared_budget
                                                                  is None else "")))
    if options.passes is not None:
        rows.append(("-p", ",".join(p if isinstance(p, str) else getattr(p, "name", str(p))
                                    for p in options.passes)))
    if options.f32_default:
        rows.append(("f32 dots", options.f32_default))
    return rows


def _add_remarks(report: Report, text: str, file: str, options: Any, seen: Collector, ptxas: str | None) -> None:
    from mytriton import remarks

    if seen.kernel is None or seen.cuda is None:
        report.remarks_note = "no remarks: the compile stopped before the CUDA source"
        return
    kept = remarks.Collector()
    kept.kernel, kept.cuda = seen.kernel, seen.cuda
    try:
        found = remarks.compile_remarks(text, file, options, kept, ptxas=ptxas)
    except CompileError as err:
        report.remarks_note = f"no remarks: {err}"
        return
    views = []
    for remark in sorted(found, key=lambda r: (r.loc is None, r.loc.line if r.loc else 0, r.loc.col if r.loc else 0)):
        loc = remark.loc
        views.append(RemarkView(loc.line if loc is not None else None, loc.col if loc is not None else None,
                                str(loc) if loc is not None else "", remark.message))
    report.remarks = views


def _add_pictures(report: Report, seen: Collector) -> None:
    try:
        from mytriton.viz import layout_svgs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        report.pictures_note = ("no layout pictures: this installation has no mytriton.viz "
                                "(mytriton.viz.layout_svgs draws them)")
        return
    if seen.kernel is None:
        report.pictures_note = "no layout pictures: the compile stopped before the layouts stage"
        return
    try:
        report.pictures = [(str(title), str(svg)) for title, svg in layout_svgs(seen.kernel)]
    except Exception as err:  # a picture's bug leaves the rest of the page as it is, and says so
        report.pictures_note = f"no layout pictures: mytriton.viz failed ({type(err).__name__}: {err})"
