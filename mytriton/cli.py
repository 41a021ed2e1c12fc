"""The ``mytriton`` command: one subcommand per stage, over text.

Every stage reads a file or ``-`` (stdin, the default) and writes stdout or
``-o FILE``; the file appears only when the stage succeeds. Errors go to
stderr as ``file:line:col: error: message``. Dumps asked for with
``--print-ir-after-all`` go to stderr so pipes stay clean.

Exit codes: 0 success, 1 an error in the input (EXIT_INPUT), 2 a usage error
(click's own, EXIT_USAGE), 3 an internal compiler error (EXIT_INTERNAL: a
bug in mytriton, never the input's fault).
"""
from __future__ import annotations

import functools
import os
import signal
import sys
import traceback
from typing import Any, BinaryIO, Callable

import click

from mytriton import compiler, scratch
from mytriton.diagnostics import CompileError, Location, decode_source, printable
from mytriton.deep_stack import ResourceError, run_deep
from mytriton.limits import MAX_INPUT_BYTES
from mytriton.output_files import write_output as write_file

EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
BUG_REPORT_NOTE = ("note: this is a bug in mytriton, not in your input; please report it with the command "
                   "and its input (MYTRITON_DEBUG=1 shows the traceback)")

# ---- input, output, errors --------------------------------------------------------------


# A larger input (``/dev/zero``, a runaway generator) is refused, not read into memory.


def read_input(path: str) -> tuple[str, str]:
    """(text, name) of a file or of stdin (``-``): UTF-8, newlines as text mode reads them."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError) as err:  # ValueError: a NUL in the name
        raise CompileError(f"cannot read {name}: {getattr(err, 'strerror', None) or err}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise CompileError(f"cannot read {name}: larger than {MAX_INPUT_BYTES >> 20} MiB")
    return decode_source(data, name), name


def write_output(path: str, data: str | bytes) -> None:
    """Write all of ``data`` to stdout (``-``) or ``path``, or nothing
    (mytriton/output_files.py: what is replaced and what is written in place)."""
    if path == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return
    write_file(path, data)


def reports_errors(fn: Callable[..., None] | None = None, *, deep: bool = True) -> Any:
    """Turn errors into diagnostics and exit codes. With ``deep`` the command
    runs on a large stack (deep_stack.run_deep), so that deep but legal inputs
    compile instead of overflowing Python's recursion; a command that
    launches on the GPU runs on the caller's thread and compiles deep itself."""
    if fn is None:
        return functools.partial(reports_errors, deep=deep)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            if deep:
                run_deep(fn, *args, **kwargs)
            else:
                fn(*args, **kwargs)
        except CompileError as err:
            if isinstance(err, ResourceError) and kwargs.get("input"):
                err.at(Location("<stdin>" if kwargs["input"] == "-" else kwargs["input"], 1, 1))
            click.echo(err.render(), err=True)
            sys.exit(EXIT_INPUT)
        except click.ClickException:  # a usage error found while running: click reports it (exit 2)
            raise
        except BrokenPipeError:
            sys.exit(EXIT_INPUT)
        except KeyboardInterrupt:
            scratch.clean_up()
            sys.exit(128 + signal.SIGINT)
        except scratch.Interrupted as stop:
            scratch.clean_up()
            sys.exit(128 + stop.signum)
        except Exception as err:  # a compiler bug, not the user's input
            if os.environ.get("MYTRITON_DEBUG", "") not in ("", "0"):
                traceback.print_exc()
            click.echo(f"error: internal compiler error: {printable(f'{type(err).__name__}: {err}')}\n"
                       f"{BUG_REPORT_NOTE}", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper


def input_argument(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.argument("input", default="-", metavar="[INPUT]")(fn)


def _output_path(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``-o`` names a file: a directory (or a name ending in ``/``) is a usage error."""
    if value != "-" and (value.endswith(("/", os.sep)) or os.path.isdir(value)):
        raise click.BadParameter(f"'{printable(value)}' is a directory; -o names the file to write", ctx, param)
    return value


def _html_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--html`` names a file (not stdout, not a directory)."""
    if value == "-":
        raise click.BadParameter("names the page's file; stdout is the emitted stage's", ctx, param)
    return None if value is None else _output_path(ctx, param, value)


def output_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("-o", "--output", default="-", show_default=True, metavar="FILE", callback=_output_path,
                        help="Where to write the result ('-' for stdout).")(fn)


def kernel_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("-k", "--kernel", default=None, metavar="NAME",
                        help="Which @jit kernel of the file (needed when it has several).")(fn)


def trace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("-D", "defines", multiple=True, metavar="NAME=VALUE",
                      help="A tl.constexpr value (repeatable).")(fn)
    fn = click.option("-s", "--signature", default=None, metavar="TYPES",
                      help='Runtime parameter types, Triton AOT style: "*fp32, *fp32, i32".')(fn)
    return fn


def stages_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--num-stages", default=None, type=click.IntRange(1, 16),
                        help="Software-pipelining stages of a staged dot's K loop (default 3; 1: none; "
                             "a loop's own num_stages wins).")(fn)


def budget_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--shared-budget", default=None, type=click.IntRange(0, None), metavar="BYTES",
                        help="Shared memory one block may use (default: the --arch's limit, sm_90 227 KiB = "
                             "232448; 49152 for GPUs that cannot opt in to more).")(fn)


def tma_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--tma/--no-tma", default=True, show_default=True,
                        help="Copy a pipelined loop's tiles (wgmma's swizzled buffers), and store a dot's "
                             "result, with TMA where the IR proves a tensor map describes them; --no-tma: "
                             "cp.async and stores as laid out, always.")(fn)


def arch_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--arch", default=compiler.DEFAULT_ARCH, show_default=True,
                        help="The GPU architecture: nvcc's -arch for --emit=ptx|cubin, the layouts' tensor-core "
                             "instructions (sm_90: wgmma), the default --shared-budget.")(fn)


def warps_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--num-warps", default=compiler.DEFAULT_NUM_WARPS, show_default=True, type=int,
                        help="Warps per CUDA block (a block runs one program).")(fn)


def make_options(kernel: str | None = None, defines: tuple[str, ...] = (), signature: str | None = None,
                 num_warps: int = compiler.DEFAULT_NUM_WARPS, passes: str | None = None,
                 arch: str = compiler.DEFAULT_ARCH) -> compiler.Options:
    from mytriton.frontend.stages import parse_define

    values = dict(parse_define(d) for d in defines)
    pass_list = None if passes is None else [p.strip() for p in passes.split(",") if p.strip()]
    return compiler.Options(kernel=kernel, defines=values, signature=signature, num_warps=num_warps,
                            passes=pass_list, arch=arch, f32_default=compiler.f32_default_from_env())


# ---- the command group ---------------------------------------------------------------------


def stage_command(stage: str) -> Callable[[Callable[..., Any]], Any]:
    """The subcommand that runs one stage alone, named by its row of compiler.STAGES."""
    return lambda fn: main.command(compiler.STAGE[stage].command)(fn)



@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mytriton")
def main() -> None:
    """mytriton: compile Triton-style kernels to CUDA, one stage at a time.

    \b
    Stages, each readable text that the next one reads:
      parse -> trace -> lower -> verify -> opt -> stage-dots -> layouts -> emit-cuda
                                                         stage-dots -> emit-mlir
                                                  opt -> emit-ttir
    For example:
      mytriton parse k.py | mytriton trace -D BLOCK=256 | mytriton lower \\
        | mytriton verify | mytriton opt | mytriton stage-dots | mytriton layouts | mytriton emit-cuda -o k.cu
    """
    scratch.handle_signals()


@stage_command("ast")
@input_argument
@kernel_option
@output_option
@reports_errors
def parse(input: str, kernel: str | None, output: str) -> None:
    """Read a kernel file (never running it), check its syntax, print the kernel bundle."""
    text, file = read_input(input)
    write_output(output, compiler.parse(text, file, kernel))


@stage_command("tree")
@input_argument
@trace_options
@kernel_option
@output_option
@reports_errors
def trace(input: str, defines: tuple[str, ...], signature: str | None, kernel: str | None, output: str) -> None:
    """Interpret the kernel's AST into the expression-tree IR."""
    text, file = read_input(input)
    tree = compiler.trace(text, file, make_options(kernel, defines, signature))
    write_output(output, compiler.print_tree(tree))


@stage_command("ssa")
@input_argument
@output_option
@reports_errors
def lower(input: str, output: str) -> None:
    """Infer types and lower the tree IR to typed SSA."""
    text, file = read_input(input)
    write_output(output, compiler.print_ssa(compiler.lower(compiler.read_tree(text, file))))


@main.command()
@input_argument
@output_option
@reports_errors
def verify(input: str, output: str) -> None:
    """Check SSA invariants; print the input unchanged when they hold."""
    text, file = read_input(input)
    compiler.verify(compiler.read_ssa(text, file))
    write_output(output, text)


def _pass_names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:  # knowing every pass's name imports every pass: only when a name is given
        return ()
    from mytriton.instrument import printable_passes

    known = printable_passes()
    names = tuple(name.strip() for item in value for name in item.split(",") if name.strip())
    for name in names:
        if name not in known:
            raise click.BadParameter(f"unknown pass '{printable(name)}' (passes: {', '.join(known)})", ctx, param)
    return names


def ir_printing_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The SSA printed around passes and their times, to stderr (compile and opt)."""
    for option in reversed([
        click.option("--print-ir-after-all", is_flag=True, help="Print the SSA after every pass to stderr."),
        click.option("--print-ir-after", "print_after", multiple=True, metavar="PASS", callback=_pass_names,
                     help="Print the SSA after PASS to stderr (repeatable, or comma-separated)."),
        click.option("--print-ir-before", "print_before", multiple=True, metavar="PASS", callback=_pass_names,
                     help="Print the SSA before PASS to stderr (repeatable, or comma-separated)."),
        click.option("--print-ir-after-change", is_flag=True,
                     help="Print the SSA after each pass that changed it, to stderr."),
        click.option("--time-passes", is_flag=True, help="Print each stage's and each pass's wall time to stderr."),
    ]):
        fn = option(fn)
    return fn


def attach_ir_printing(options: Any, print_ir_after_all: bool, print_after: tuple[str, ...],
                       print_before: tuple[str, ...], print_ir_after_change: bool, time_passes: bool) -> Any:
    """The observers ir_printing_options asks for, on ``options``; the timer
    (attached last, so that it leaves the printing's time out) or None."""
    from mytriton import instrument

    if print_ir_after_all or print_after or print_before or print_ir_after_change:
        instrument.attach(options, instrument.IrPrinter(print_ir_after_all, print_after, print_before,
                                                        after_change=print_ir_after_change))
    return instrument.attach_timer(options) if time_passes else None


@stage_command("opt")
@input_argument
@click.option("-p", "--passes", default=None, metavar="LIST",
              help="Comma-separated passes (default: fold,licm,cse,dce,hoist-held; see 'mytriton passes').")
@ir_printing_options
@output_option
@reports_errors
def opt(input: str, passes: str | None, print_ir_after_all: bool, print_after: tuple[str, ...],
        print_before: tuple[str, ...], print_ir_after_change: bool, time_passes: bool, output: str) -> None:
    """Optimise SSA, verifying before and after every pass."""
    text, file = read_input(input)
    options = make_options(passes=passes)
    kernel = compiler.read_ssa(text, file)
    timer = attach_ir_printing(options, print_ir_after_all, print_after, print_before, print_ir_after_change,
                               time_passes)
    try:
        kernel = compiler.optimize(kernel, options)
        if options.on_stage is not None:
            options.on_stage("opt", kernel)  # the stage's row of --time-passes
    finally:
        if timer is not None:
            click.echo(timer.report(), err=True, nl=False)
    write_output(output, compiler.print_ssa(kernel))


@stage_command("staged")
@input_argument
@stages_option
@budget_option
@output_option
@reports_errors
def stage_dots(input: str, num_stages: int | None, shared_budget: int | None, output: str) -> None:
    """Stage canonical tl.dot operand loads through shared memory and pipeline their K loops (SSA in, SSA out)."""
    text, file = read_input(input)
    options = compiler.Options(num_stages=num_stages, shared_budget=shared_budget)
    write_output(output, compiler.print_ssa(compiler.stage_dots(compiler.read_ssa(text, file), options)))


@main.command()
def passes() -> None:
    """List the passes 'opt -p' accepts."""
    from mytriton.passes import REGISTRY, get_pass

    for name in REGISTRY:
        click.echo(f"{name:10} {get_pass(name).summary}")


def known_ops(ctx: click.Context, param: click.Parameter, names: tuple[str, ...]) -> tuple[str, ...]:
    from mytriton.ir.opdefs import OPS

    unknown = [f"'{printable(name)}'" for name in names if name not in OPS]
    if unknown:
        raise click.BadParameter(f"no op named {', '.join(unknown)} ('mytriton ops' lists them)")
    return names


def complete_ops(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    from mytriton.ir.opdefs import OPS

    return [name for name in OPS if name.startswith(incomplete)]


@main.command()
@click.argument("names", nargs=-1, metavar="[OP]...", callback=known_ops, shell_complete=complete_ops)
@click.option("--markdown", is_flag=True, help="Print the reference as Markdown (all of it is docs/ir.md).")
@output_option
@reports_errors
def ops(names: tuple[str, ...], markdown: bool, output: str) -> None:
    """List the IR ops (or the ones named): operands, attributes, traits, what each does."""
    from mytriton.ir import reference

    chosen = list(names) or None
    write_output(output, reference.markdown(chosen) if markdown else reference.text(chosen))


@stage_command("layouts")
@input_argument
@warps_option
@arch_option
@budget_option
@tma_option
@output_option
@reports_errors
def layouts(input: str, num_warps: int, arch: str, shared_budget: int | None, tma: bool, output: str) -> None:
    """Give every tile of SSA a GPU layout (the CUDA back end's input)."""
    text, file = read_input(input)
    kernel = compiler.read_ssa(text, file)
    compiler.verify(kernel)
    options = make_options(num_warps=num_warps, arch=arch)
    options.shared_budget = shared_budget
    options.tma = tma
    write_output(output, compiler.print_ssa(compiler.layouts(kernel, options)))


@stage_command("cuda")
@input_argument
@click.option("--num-warps", default=None, type=int,
              help="Warps per CUDA block, for SSA that is not laid out yet (laid-out SSA names its own).")
@arch_option
@budget_option
@output_option
@reports_errors
def emit_cuda(input: str, num_warps: int | None, arch: str, shared_budget: int | None, output: str) -> None:
    """Render laid-out SSA as CUDA C++ (with a header that lets 'run' launch it alone).

    SSA that is not laid out goes through the layouts stage first."""
    text, file = read_input(input)
    kernel = compiler.read_ssa(text, file)
    compiler.verify(kernel)
    options = make_options(num_warps=num_warps or compiler.DEFAULT_NUM_WARPS, arch=arch)
    options.shared_budget = shared_budget
    if not kernel.laid_out:
        kernel = compiler.layouts(kernel, options)
    elif num_warps is not None and num_warps != kernel.num_warps:
        raise CompileError(f"this SSA is laid out for num_warps={kernel.num_warps}, not {num_warps}; "
                           "run the layouts stage again with --num-warps", kernel.loc)
    write_output(output, compiler.emit_cuda(kernel, options))


@stage_command("mlir")
@input_argument
@output_option
@reports_errors
def emit_mlir(input: str, output: str) -> None:
    """Render SSA (opt or staged) as upstream MLIR: gpu, arith, math, scf, memref, vector."""
    text, file = read_input(input)
    kernel = compiler.read_ssa(text, file)
    compiler.verify(kernel)
    write_output(output, compiler.emit_mlir(kernel))


@stage_command("ttir")
@input_argument
@output_option
@reports_errors
def emit_ttir(input: str, output: str) -> None:
    """Render optimised SSA (from opt, before stage-dots) as Triton's TTIR (the tt dialect)."""
    text, file = read_input(input)
    kernel = compiler.read_ssa(text, file)
    compiler.verify(kernel)
    write_output(output, compiler.emit_ttir(kernel))


@main.command("compile")
@click.argument("input", metavar="KERNEL")
@click.option("--emit", default=None, type=click.Choice(compiler.EMITS),
              help="The stage to stop after and print (default: cuda). cubin is binary: give -o or a pipe.")
@kernel_option
@trace_options
@warps_option
@stages_option
@click.option("-p", "--passes", default=None, metavar="LIST", help="Passes for the opt stage.")
@arch_option
@budget_option
@tma_option
@click.option("--dump-dir", default=None, metavar="DIR",
              help="Write every stage into DIR (00-ast.py ... 08-cubin.cubin, each opt pass's SSA too); "
                   "without --emit, the pipeline runs to cubin.")
@click.option("--remarks", is_flag=True,
              help="Print to stderr, for each tl.dot at its source line, what it got on the CUDA path (staged, "
                   "stages, wgmma / mma.sync / FMA, operand layouts, shared bytes; registers and spills from "
                   "ptxas where nvcc is found) and why not more, whatever --emit is.")
@click.option("--html", default=None, metavar="FILE", callback=_html_path,
              help="Write one self-contained HTML page: the source, every stage, the CUDA and the PTX side by side, "
                   "linked by source line, with the remarks (compiles through the CUDA source whatever --emit is).")
@ir_printing_options
@output_option
@reports_errors
def compile_command(input: str, emit: str | None, kernel: str | None, defines: tuple[str, ...],
                    signature: str | None, num_warps: int, num_stages: int | None, passes: str | None, arch: str,
                    shared_budget: int | None, tma: bool, dump_dir: str | None, remarks: bool, html: str | None,
                    print_ir_after_all: bool, print_after: tuple[str, ...], print_before: tuple[str, ...],
                    print_ir_after_change: bool, time_passes: bool, output: str) -> None:
    """Run the pipeline up to one stage in one process."""
    if emit is None:
        emit = "cubin" if dump_dir is not None else "cuda"
        printed = "cuda"
    else:
        printed = emit
    if printed in compiler.BINARY_EMITS and output == "-" and sys.stdout.isatty():
        raise click.UsageError(f"--emit={printed} is binary: write it with -o FILE or into a pipe, "
                               "not to a terminal")
    text, file = read_input(input)
    options = make_options(kernel, defines, signature, num_warps, passes, arch)
    options.num_stages = num_stages
    options.shared_budget = shared_budget
    options.tma = tma
    from mytriton import instrument

    results: dict[str, Any] = {}
    if emit != printed:
        instrument.attach(options, _Keep(printed, results))
    dumper = None
    if dump_dir is not None:
        dumper = instrument.open_dump_dir(dump_dir)
        instrument.attach(options, dumper)
    page_seen = None
    if html is not None or dumper is not None:
        from mytriton.report.collect import watch as watch_for_page

        page_seen = watch_for_page(options)
    timer = attach_ir_printing(options, print_ir_after_all, print_after, print_before, print_ir_after_change,
                               time_passes)
    seen = None
    if remarks:
        from mytriton.remarks import watch

        seen = watch(options)
    try:
        result = compiler.compile_source(text, file, emit, options)
    finally:
        if timer is not None:
            click.echo(timer.report(), err=True, nl=False)
    if emit != printed:
        result = instrument.stage_text(printed, results[printed])
    if seen is not None:
        from mytriton.remarks import compile_remarks, render

        click.echo(render(compile_remarks(text, file, options, seen)), err=True, nl=False)
    if page_seen is not None:
        from mytriton.report import collect

        if html is not None:
            page = collect.html_report(text, file, options, page_seen, emit)
        else:
            page = collect.dump_report(text, file, options, page_seen, emit,
                                       ptxas="not run for a dump's page (compile --html or --remarks runs it)")
        if dumper is not None:
            dumper.write_page(page)
        if html is not None:
            write_file(html, page)
    write_output(output, result)


class _Keep:
    """Keeps one stage's text while the pipeline runs on (a dump past --emit)."""

    def __init__(self, stage: str, into: dict[str, Any]) -> None:
        self.stage = stage
        self.into = into

    def on_stage(self, name: str, value: Any) -> None:
        from mytriton.instrument import stage_text

        if name == self.stage:
            self.into[name] = stage_text(name, value)  # printed now: later stages change kernels in place


@main.command()
@click.argument("input", metavar="KERNEL.py|FILE.ssa|FILE.cu")
@click.option("--grid", required=True, metavar="G[,G[,G]]",
              help="Programs per axis: integers or expressions over arguments, e.g. 'cdiv(n, BLOCK)'.")
@click.option("--arg", "args", multiple=True, metavar="NAME=SPEC",
              help="An argument: a number, a .npy file, or rand:N, randn:N, zeros:N, ones:N, arange:N "
                   "(shape NxM..., optional :dtype).")
@kernel_option
@trace_options
@warps_option
@click.option("--backend", default=None, type=click.Choice(["auto", "cuda", "interp"]),
              help="Where to run (default: $MYTRITON_BACKEND or auto).")
@click.option("--out-dir", default=".", show_default=True, metavar="DIR",
              help="Where NAME.npy is written for each buffer the kernel stores to or run generated.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for generated inputs.")
@click.option("--expect", "expects", multiple=True, metavar="NAME=FILE.npy",
              help="Fail unless buffer NAME matches this reference (allclose).")
@reports_errors(deep=False)
def run(input: str, grid: str, args: tuple[str, ...], kernel: str | None, defines: tuple[str, ...],
        signature: str | None, num_warps: int, backend: str | None, out_dir: str, seed: int,
        expects: tuple[str, ...]) -> None:
    """Launch a kernel on inputs from .npy files or generated ones; write outputs as .npy."""
    from mytriton.runtime.launch_cli import run_file

    if backend == "cuda":
        from mytriton.runtime.jit import BackendUnavailable, explain_backend

        try:
            explain_backend("cuda")
        except BackendUnavailable as err:
            raise click.BadParameter(f"cuda needs a usable GPU, but {err.reason}", param_hint="'--backend'") from None

    options = make_options(kernel, defines, signature, num_warps)
    for line in run_file(input, grid, args, options, backend, out_dir, seed, expects):
        click.echo(line)


@main.group()
def viz() -> None:
    """Pictures (SVG) of a kernel's layouts and shared buffers, and of its memory accesses."""


def _write_bytes(data: bytes, handle: Any) -> None:
    handle.write(data)


def _write_pictures(pictures: list[tuple[str, str]], out_dir: str) -> None:
    """Every picture into OUT_DIR under a name made from its index and title,
    each replaced atomically (a link there is replaced, never followed)."""
    from mytriton.output_files import prepare_directory, replace_in_directory
    from mytriton.viz import picture_file_names

    prepare_directory(out_dir, "-o")
    for name, (_, svg) in zip(picture_file_names([t for t, _ in pictures]), pictures):
        data = svg.encode()
        target = replace_in_directory(out_dir, name, functools.partial(_write_bytes, data))
        click.echo(f"wrote {printable(target)}")


@viz.command("layouts")
@click.argument("input", default="-", metavar="KERNEL.py|FILE.ssa")
@kernel_option
@trace_options
@warps_option
@arch_option
@budget_option
@click.option("-o", "--out-dir", required=True, metavar="DIR", help="Where the SVG files are written.")
@reports_errors
def viz_layouts(input: str, kernel: str | None, defines: tuple[str, ...], signature: str | None, num_warps: int,
                arch: str, shared_budget: int | None, out_dir: str) -> None:
    """One SVG per tile layout (thread, lane and register of each element) and per
    shared buffer (banks, padding or swizzle, bank conflicts), from a kernel or SSA."""
    from mytriton.viz import layout_svgs

    text, file = read_input(input)
    options = make_options(kernel, defines, signature, num_warps, arch=arch)
    options.shared_budget = shared_budget
    if input.endswith(".py"):
        laid_out = compiler.run_stages(text, file, "layouts", options)
    else:
        laid_out = compiler.verify(compiler.read_ssa(text, file))
        if not laid_out.laid_out:
            laid_out = compiler.layouts(compiler.stage_dots(laid_out, options), options)
    pictures = layout_svgs(laid_out)
    _write_pictures(pictures, out_dir)


def _programs(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
    if value is None:
        return ()
    try:
        programs = tuple(int(p) for p in value.split(",") if p.strip())
    except ValueError:
        raise click.BadParameter(f"'{printable(value)}' is not a list of program numbers like 0,3", ctx, param) from None
    if any(p < 0 for p in programs) or len(programs) > 16:
        raise click.BadParameter("give up to 16 non-negative program numbers", ctx, param)
    return programs


@viz.command("accesses")
@click.argument("input", metavar="KERNEL.py|FILE.ssa")
@click.option("--grid", required=True, metavar="G[,G[,G]]",
              help="Programs per axis: integers or expressions over arguments, e.g. 'cdiv(n, BLOCK)'.")
@click.option("--arg", "args", multiple=True, metavar="NAME=SPEC",
              help="An argument, as mytriton run takes it.")
@kernel_option
@trace_options
@click.option("--program", "programs", default=None, metavar="P[,P...]", callback=_programs,
              help="Also draw what these programs (linear ids) access, each on its own.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for generated inputs.")
@click.option("-o", "--out-dir", required=True, metavar="DIR", help="Where the SVG files are written.")
@reports_errors(deep=False)
def viz_accesses(input: str, grid: str, args: tuple[str, ...], kernel: str | None, defines: tuple[str, ...],
                 signature: str | None, programs: tuple[int, ...], seed: int, out_dir: str) -> None:
    """Run the kernel in the interpreter and draw, per tensor, the accesses per element
    (loads, stores, masked lanes, out-of-bounds attempts)."""
    from mytriton.runtime.launch_cli import prepare_run
    from mytriton.viz import access_svgs, record_accesses

    if input.endswith(".cu"):
        raise CompileError("viz accesses runs the interpreter: give the kernel's .py or an .ssa file")
    options = make_options(kernel, defines, signature)
    run = prepare_run(input, grid, args, options, None, seed)
    total = 1
    for g in run.grid:
        total *= g
    for p in programs:
        if p >= total:
            raise CompileError(f"--program {p}: the grid has {total} program(s)")
    log = record_accesses(run.kernel, run.grid, [run.values[n] for n, _ in run.params], programs)
    _write_pictures(access_svgs(log, programs), out_dir)


@main.command()
@click.argument("directory", default="samples", type=click.Path(file_okay=False, dir_okay=True))
def samples(directory: str) -> None:
    """Write the sample kernels (samples/add.py, matmul.py, ...) into DIRECTORY
    (default: ./samples), so that the README's commands run where mytriton was
    installed from a wheel. A file of the same name there is replaced."""
    from mytriton.bundled_samples import sample_sources
    from mytriton.output_files import prepare_directory, replace_in_directory

    sources = sample_sources()
    if not sources:
        raise CompileError("this installation carries no sample kernels")
    prepare_directory(directory, "samples")
    for name, text in sources.items():
        data = text.encode("utf-8")

        def write(handle: BinaryIO, data: bytes = data) -> None:
            handle.write(data)

        click.echo(f"wrote {printable(replace_in_directory(directory, name, write))}")


@main.command()
@click.option("--build", is_flag=True, help="Also time a new kernel's build here (a 128x128x64 f16 matmul: "
              "mytriton's stages, then NVRTC or nvcc; caches bypassed).")
def doctor(build: bool) -> None:
    """Report Python, mytriton, NumPy, Lark, click, the CUDA driver, nvcc, the GPUs,
    the cache, and which backend 'auto' picks and why."""
    from mytriton.doctor import render, report

    click.echo(render(report(build)), nl=False)


@main.group()
def cache() -> None:
    """The on-disk cache of nvcc builds, grammar tables and autotuning choices
    ($MYTRITON_CACHE_DIR, else $XDG_CACHE_HOME/mytriton, else ~/.cache/mytriton)."""


@cache.command("info")
def cache_info() -> None:
    """Print the cache's location, entry count and size."""
    from mytriton.doctor import describe_size
    from mytriton.user_cache import cache_root, cache_usage

    count, size = cache_usage()
    click.echo(f"location: {printable(str(cache_root()))}\nentries:  {count}\nsize:     {describe_size(size)}")


@cache.command("clear")
def cache_clear() -> None:
    """Remove mytriton's own entries from the cache (nothing else in its folder)."""
    from mytriton.doctor import describe_size
    from mytriton.user_cache import cache_root, clear_cache

    count, size = clear_cache()
    click.echo(f"removed {count} entries ({describe_size(size)}) from {printable(str(cache_root()))}")


if __name__ == "__main__":
    main()
