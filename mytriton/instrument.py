"""Watching the pipeline run: stage dumps (and their index.html), IR printing and pass timing.

``compile --dump-dir``, ``MYTRITON_DUMP_DIR``, ``--print-ir-after-all``,
``--print-ir-after/-before=PASS`` and ``--time-passes`` are all observers
hooked onto ``compiler.Options`` (``on_stage`` after each stage,
``before_each``/``after_each`` around each pass of any stage); the pipeline
itself does not know which are listening. Stage names, commands and dump
files are the rows of ``compiler.STAGES``.

Dump files are named so that ``ls`` lists them in pipeline order and with
extensions the stage commands read back (``mytriton emit-cuda
DIR/05-layouts.ssa`` resumes a dump): a stage's passes sort just before its
own file, as ``03-opt.01-fold.ssa``, ..., ``04-staged.01-stage-dots.ssa``.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import time
from typing import Any, Callable, TextIO

from mytriton.diagnostics import CompileError

def printable_passes() -> tuple[str, ...]:
    """The names --print-ir-after and --print-ir-before accept: every
    registered pass and every pass a stage runs."""
    from mytriton import compiler
    from mytriton.passes import REGISTRY

    names = dict.fromkeys(REGISTRY)
    for stage in compiler.STAGES:
        if stage.passes is not None:
            names.update(dict.fromkeys(p if isinstance(p, str) else p.name
                                       for p in stage.passes(compiler.Options())))
    return tuple(names)


def stage_text(name: str, value: Any) -> str | bytes:
    """A stage's result as its command prints it."""
    from mytriton import compiler

    return compiler.stage_text(value)


def _stage_running_after(reached: str | None) -> Any:
    """The stage whose passes run once ``reached`` is done (None: none yet)."""
    from mytriton import compiler

    return next((stage for stage in compiler.STAGES if stage.after == reached and stage.passes is not None), None)


def attach(options: Any, observer: Any) -> None:
    """Add ``observer``'s hooks (``on_stage``, ``before_pass``, ``after_pass``,
    any it has) to ``options``, after the hooks already there."""
    for hook, method in (("on_stage", "on_stage"), ("before_each", "before_pass"), ("after_each", "after_pass")):
        new = getattr(observer, method, None)
        if new is None:
            continue
        old = getattr(options, hook)
        setattr(options, hook, new if old is None else _both(old, new))


def _both(first: Callable[..., None], second: Callable[..., None]) -> Callable[..., None]:
    def call(*args: Any) -> None:
        first(*args)
        second(*args)

    return call


# ---- dumps -------------------------------------------------------------------------------

INDEX_PAGE = "index.html"  # every dump's page: the stages side by side (mytriton/report)


class Dumper:
    """Writes each stage (and the SSA after each pass of a stage) into
    ``directory``, atomically, replacing (never following) whatever is
    there."""

    def __init__(self, directory: str, option: str = "--dump-dir") -> None:
        self.directory = directory
        self.option = option
        self.passes = 0
        self.reached: str | None = None
        self.written: list[str] = []

    def on_stage(self, name: str, value: Any) -> None:
        from mytriton import compiler

        dump_file = compiler.STAGE[name].dump_file
        assert dump_file is not None, f"the {name} stage has no dump file"
        self._write(dump_file, stage_text(name, value))
        self.reached, self.passes = name, 0

    def after_pass(self, name: str, kernel: Any) -> None:
        from mytriton import compiler

        stage = _stage_running_after(self.reached)
        self.passes += 1
        stem = stage.dump_file.rsplit(".", 1)[0]
        self._write(f"{stem}.{self.passes:02d}-{_safe(name)}.ssa", compiler.print_ssa(kernel))

    def write_page(self, page: str) -> None:
        """The dump's ``index.html`` (mytriton/report): every stage on one page."""
        self._write(INDEX_PAGE, page)

    def _write(self, file_name: str, data: str | bytes) -> None:
        from mytriton.output_files import replace_in_directory

        payload = data.encode() if isinstance(data, str) else data
        self.written.append(replace_in_directory(self.directory, file_name, lambda handle: handle.write(payload)))


def open_dump_dir(directory: str, option: str = "--dump-dir") -> Dumper:
    """A Dumper for ``directory``, made (with its parents) if missing."""
    from mytriton.output_files import prepare_directory

    prepare_directory(directory, option)
    return Dumper(directory, option)


def jit_dump_dir(root: str, kernel_name: str, key: Any, variable: str = "MYTRITON_DUMP_DIR") -> Dumper:
    """The dump folder of one JIT specialisation under ``root`` (``variable``'s
    value: MYTRITON_DUMP_DIR, or Triton's TRITON_DUMP_DIR):
    ``<kernel name>-<hash of the specialisation>``, the name reduced to
    ``[A-Za-z0-9_.-]``. A link planted there is refused, not followed."""
    from mytriton.output_files import prepare_directory

    prepare_directory(root, variable)
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    path = os.path.join(root, f"{_safe(kernel_name)[:64]}-{digest}")
    try:
        os.mkdir(path, 0o777)
    except FileExistsError:
        pass
    except OSError as err:
        raise CompileError(f"{variable}: cannot make {path}: {err.strerror or err}") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise CompileError(f"{variable}: {path} exists and is not a directory")
    return Dumper(path, variable)


def dump_jit_kernel(root: str, text: str, file: str, options: Any, key: Any, backend: str,
                    variable: str = "MYTRITON_DUMP_DIR") -> str:
    """``MYTRITON_DUMP_DIR``: every stage of one JIT specialisation, into its
    own folder (jit_dump_dir), through cubin for the GPU and through the CUDA
    source for the interpreter (which needs no nvcc). Returns the folder."""
    import dataclasses

    from mytriton import compiler

    from mytriton.report import collect

    dumper = jit_dump_dir(root, options.kernel or "kernel", key, variable)
    watched = dataclasses.replace(options, on_stage=None, before_each=None, after_each=None)
    attach(watched, dumper)
    seen = collect.watch(watched)
    emit = "cubin" if backend == "cuda" else "cuda"
    compiler.compile_source(text, file, emit, watched)
    ptxas = ("the launch runs in the interpreter" if backend != "cuda"
             else "not run for a dump's page (MYTRITON_REMARKS=1 runs it)")
    dumper.write_page(collect.dump_report(text, file, options, seen, emit, ptxas=ptxas))
    return dumper.directory


def jit_ir_printer() -> IrPrinter | None:
    """``MYTRITON_PRINT_IR=all`` (or Triton's ``MLIR_ENABLE_DUMP=1``) prints the
    SSA after every pass of each kernel the JIT compiles, ``=PASS[,PASS]``
    after those passes, to stderr; None where neither is set."""
    from mytriton.diagnostics import did_you_mean, printable

    value = os.environ.get("MYTRITON_PRINT_IR", "").strip()
    if not value and os.environ.get("MLIR_ENABLE_DUMP", "0") not in ("", "0"):
        value = "all"
    if not value:
        return None
    if value == "all":
        return IrPrinter(after_all=True)
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    known = printable_passes()
    for name in names:
        if name not in known:
            raise CompileError(f"MYTRITON_PRINT_IR: unknown pass '{printable(name)}'{did_you_mean(name, known)} "
                               f"(all, or passes: {', '.join(known)})")
    return IrPrinter(after=names)


def print_jit_kernel(printer: IrPrinter, text: str, file: str, options: Any) -> None:
    """The SSA around the passes ``printer`` asks for, of one JIT
    specialisation, compiled again to CUDA with the printer attached."""
    import dataclasses

    from mytriton import compiler

    watched = dataclasses.replace(options, on_stage=None, before_each=None, after_each=None)
    attach(watched, printer)
    compiler.compile_source(text, file, "cuda", watched)


def _safe(name: str) -> str:
    """A file-name part made of ``[A-Za-z0-9_.-]`` only (never ``.`` or ``..``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".")
    return cleaned or "_"


# ---- printing IR -------------------------------------------------------------------------


def dump_header(when: str, name: str) -> str:
    """MLIR's header for a dump (``--mlir-print-ir-after-all``)."""
    return f"// -----// IR Dump {when} {name} //----- //\n"


class IrPrinter:
    """Prints the SSA before or after chosen passes (or all) to ``stream``."""

    def __init__(self, after_all: bool = False, after: tuple[str, ...] = (), before: tuple[str, ...] = (),
                 stream: TextIO | None = None, after_change: bool = False) -> None:
        self.after_all = after_all
        self.after = set(after)
        self.before = set(before)
        self.stream = stream
        self.after_change = after_change  # MLIR's --mlir-print-ir-after-change
        self._text_before = ""

    def _print(self, when: str, name: str, kernel: Any) -> None:
        from mytriton import compiler

        stream = self.stream or sys.stderr
        stream.write(dump_header(when, name) + compiler.print_ssa(kernel))
        stream.flush()

    def before_pass(self, name: str, kernel: Any) -> None:
        if name in self.before:
            self._print("Before", name, kernel)
        if self.after_change:
            from mytriton import compiler

            self._text_before = compiler.print_ssa(kernel)

    def after_pass(self, name: str, kernel: Any) -> None:
        if self.after_all or name in self.after:
            self._print("After", name, kernel)
        elif self.after_change:
            from mytriton import compiler

            if compiler.print_ssa(kernel) != self._text_before:
                self._print("After", name, kernel)

# ---- timing ------------------------------------------------------------------------------


class PassTimer:
    """Wall time of each stage and, inside opt, of each pass, printed as
    MLIR's ``--mlir-timing`` report. It wraps the hooks already on the
    options (``attach_timer``), so that the time the other observers spend
    (printing, dumping) is left out of every row."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, float]] = []  # (depth, name, seconds)
        self.pass_rows: list[tuple[int, str, float]] = []
        self.hook_time = 0.0  # spent in hooks so far
        self.stage_mark = (time.perf_counter(), 0.0)  # (clock, hook_time) when the stage began
        self.pass_mark = self.stage_mark

    def _since(self, mark: tuple[float, float], now: float) -> float:
        return (now - mark[0]) - (self.hook_time - mark[1])

    def on_stage(self, name: str, now: float) -> None:
        from mytriton import compiler

        self.rows.append((0, compiler.stage_label(name), self._since(self.stage_mark, now)))
        self.rows.extend(self.pass_rows)
        self.pass_rows = []

    def before_pass(self, name: str, now: float) -> None:
        self.pass_mark = (now, self.hook_time)

    def after_pass(self, name: str, now: float) -> None:
        self.pass_rows.append((1, name, self._since(self.pass_mark, now)))

    def wrap(self, mine: Callable[[str, float], None], other: Callable[..., None] | None,
             restart_stage: bool = False) -> Callable[..., None]:
        def hook(name: str, value: Any) -> None:
            now = time.perf_counter()
            mine(name, now)
            if other is not None:
                other(name, value)
            self.hook_time += time.perf_counter() - now
            if restart_stage:
                self.stage_mark = (time.perf_counter(), self.hook_time)

        return hook

    def report(self) -> str:
        total = sum(seconds for depth, _, seconds in self.rows if depth == 0)
        rule = "===" + "-" * 73 + "==="
        lines = [rule, "Execution time report".center(79).rstrip(), rule,
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]
        for depth, name, seconds in self.rows:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {'  ' * depth}{name}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


def attach_timer(options: Any) -> PassTimer:
    """Time the pipeline that ``options`` drives; attach it after every
    other observer, so that it can leave their time out."""
    timer = PassTimer()
    options.on_stage = timer.wrap(timer.on_stage, options.on_stage, restart_stage=True)
    options.before_each = timer.wrap(timer.before_pass, options.before_each)
    options.after_each = timer.wrap(timer.after_pass, options.after_each)
    return timer
