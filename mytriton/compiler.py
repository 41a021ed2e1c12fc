"""The compiler's stages, as one declarative list (``STAGES``).

Each stage is a function from one IR to the next, and a row of ``STAGES``
says which stage it follows, which CLI subcommand runs it alone, which file
``--dump-dir`` writes it to and which passes it runs (every pass goes
through ``passes.manager.run_passes``, verified and watched by the hooks).
``compile`` walks the rows up to the stage asked for; the CLI's subcommands
run them one at a time over text, and both print the same bytes. Nothing
here imports NumPy, the CUDA driver or nvcc's wrapper until a stage needs it.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, replace, field
from typing import Any, Callable, Mapping, Sequence

from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Kernel
from mytriton.ir.tree import TreeKernel

DEFAULT_NUM_WARPS = 4
DEFAULT_ARCH = "sm_90"  # mytriton.target.DEFAULT_ARCH


@dataclass
class Options:
    kernel: str | None = None
    defines: dict[str, Any] = field(default_factory=dict)
    signature: str | None = None
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int | None = None  # a launch's software-pipelining depth (None: the pass's default, 3)
    passes: Sequence[str] | None = None  # None: the default pipeline
    arch: str = DEFAULT_ARCH
    # Bytes of shared memory one block may use; None: the arch's opt-in limit
    # (mytriton.target.shared_memory_budget: sm_90 227 KiB, unknown 48 KiB).
    shared_budget: int | None = None
    # tl.dot's precision for f32 operands where the call names none (Triton's
    # TRITON_F32_DEFAULT): "tf32", "tf32x3" or "ieee"; None: Triton's rule
    # (tf32, or ieee with allow_tf32=False). The CLI and the JIT read it from
    # MYTRITON_F32_DEFAULT (f32_default_from_env).
    f32_default: str | None = None
    # Copies that TMA can make go by TMA (the tma-copies pass); False: by cp.async (compile --no-tma).
    tma: bool = True
    # The verifier after every pass of every stage (the CLI, the tests); False: once after each stage's
    # passes (the JIT's launches, unless MYTRITON_VERIFY_EACH=1: a third of a launch's compile time).
    verify_each: bool = True
    # The globals of the kernel's module, for a kernel launched from Python:
    # its names resolve there, as Python resolved them (frontend/namespace.py).
    # None (the CLI): names resolve from the file's text alone.
    namespace: Mapping[str, Any] | None = None
    # Called with a pass's name and its output (input) around each pass of
    # every stage, and with each stage's name and result as run_stages makes
    # it (dumps, --print-ir-*, --time-passes: mytriton/instrument.py).
    after_each: Callable[[str, Kernel], None] | None = None
    before_each: Callable[[str, Kernel], None] | None = None
    on_stage: Callable[[str, Any], None] | None = None


    @property
    def budget(self) -> int:
        """The shared-memory budget the stages plan and check against."""
        from mytriton.target import shared_memory_budget

        return self.shared_budget if self.shared_budget is not None else shared_memory_budget(self.arch)


F32_DEFAULT_ENV = "MYTRITON_F32_DEFAULT"


def f32_default_from_env() -> str | None:
    """``MYTRITON_F32_DEFAULT``, checked: tl.dot's default precision for f32
    operands (unset or empty: None, Triton's own default). Read at every
    launch (it is part of the JIT's key): its check is done once per value."""
    import os

    value = os.environ.get(F32_DEFAULT_ENV, "")
    if not value:
        return None
    return _checked_f32_default(value)


@functools.lru_cache(maxsize=16)
def _checked_f32_default(value: str) -> str:
    from mytriton.ir.opdefs import DOT_INPUT_PRECISIONS

    if value.lower() not in DOT_INPUT_PRECISIONS:
        raise CompileError(f"{F32_DEFAULT_ENV} must be one of {', '.join(DOT_INPUT_PRECISIONS)}, "
                           f"got {value!r}")
    return value.lower()


VERIFY_EACH_ENV = "MYTRITON_VERIFY_EACH"


def verify_each_from_env() -> bool:
    """Whether the JIT verifies after every pass: ``MYTRITON_VERIFY_EACH`` set
    and not ``0`` (as ``compile`` always does), so that an error names the
    pass that broke the SSA."""
    from mytriton.knobs import flag

    return flag(VERIFY_EACH_ENV)


# ---- the stages ------------------------------------------------------------------------


def parse(text: str, file: str, kernel: str | None = None, namespace: Mapping[str, Any] | None = None) -> str:
    from mytriton.frontend.stages import parse_stage

    return parse_stage(text, file, kernel, namespace)


def trace(text: str, file: str, options: Options) -> TreeKernel:
    from mytriton.frontend.stages import trace_stage

    return trace_stage(text, file, options.defines, options.signature, options.kernel, options.f32_default,
                       options.namespace)


def lower(tree: TreeKernel) -> Kernel:
    from mytriton.lower import lower_tree
    from mytriton.passes.verify import verify

    kernel = lower_tree(tree)
    kernel.digest = tree.digest  # the source stays quotable in later stages' errors
    return verify(kernel)


def verify(kernel: Kernel) -> Kernel:
    from mytriton.passes.verify import verify as run_verifier

    return run_verifier(kernel)


def optimize(kernel: Kernel, options: Options) -> Kernel:
    return run_stage_passes("opt", kernel, options)


def stage_dots(kernel: Kernel, options: Options | None = None) -> Kernel:
    """Stage canonical tl.dot operands through shared memory (the CUDA
    backend's input), then software-pipeline their K loops over
    ``options.num_stages`` buffers (the pass's default without it)."""
    return run_stage_passes("staged", kernel, options if options is not None else Options())


def layouts(kernel: Kernel, options: Options) -> Kernel:
    """Give every tile a layout for ``options.num_warps`` warps (CUDA's
    input) on ``options.arch`` and make the CUDA back end's decisions: copy
    widths, which copies TMA makes, wgmma dots left in flight over their
    loops' copies (overlap-wgmma, after tma-copies: it asks which refills are
    TMA's), the FMA dots' read widths, combine strategies, held tiles, the
    shared-memory plan (allocate-shared), the barriers and wgmma's proxy
    fences."""
    return run_stage_passes("layouts", kernel, options)


def run_stage_passes(stage: str, kernel: Kernel, options: Options) -> Kernel:
    """The passes of ``stage`` (its row's ``passes``) over ``kernel``,
    verified before and after each (or their result, without
    ``options.verify_each``), with the options' pass hooks."""
    from mytriton.passes.manager import run_passes

    passes = STAGE[stage].passes
    assert passes is not None, f"the {stage} stage runs no passes"
    return run_passes(kernel, passes(options), options.after_each, options.before_each, options.verify_each)


def _opt_passes(options: Options) -> Sequence[Any]:
    from mytriton.passes import DEFAULT_PIPELINE

    return DEFAULT_PIPELINE if options.passes is None else options.passes


def _staging_passes(options: Options) -> Sequence[Any]:
    from mytriton.passes.software_pipeline import SoftwarePipelinePass
    from mytriton.passes.stage_dots import StageDotsPass

    return [StageDotsPass(shared_budget=options.budget),
            SoftwarePipelinePass(num_stages=options.num_stages, shared_budget=options.budget)]


def _layout_passes(options: Options) -> Sequence[Any]:
    from mytriton.backends.cuda.allocate_shared import AllocateSharedPass
    from mytriton.backends.cuda.combine_strategy import CombineStrategyPass
    from mytriton.backends.cuda.copy_widths import CopyWidthsPass
    from mytriton.backends.cuda.insert_barriers import InsertBarriersPass
    from mytriton.backends.cuda.hold_tiles import HoldTilesPass
    from mytriton.backends.cuda.proxy_fences import ProxyFencesPass
    from mytriton.backends.cuda.read_widths import ReadWidthsPass
    from mytriton.backends.cuda.tma_copies import TmaCopiesPass
    from mytriton.backends.cuda.tma_stores import TmaStoresPass
    from mytriton.passes.layouts import LayoutsPass
    from mytriton.passes.overlap_wgmma import OverlapWgmmaPass

    return [LayoutsPass(num_warps=options.num_warps, shared_budget=options.budget, arch=options.arch,
                        tma=options.tma),
            CopyWidthsPass(), TmaCopiesPass(enabled=options.tma, arch=options.arch), OverlapWgmmaPass(),
            TmaStoresPass(enabled=options.tma, arch=options.arch, shared_budget=options.budget),
            ReadWidthsPass(), CombineStrategyPass(), HoldTilesPass(), AllocateSharedPass(shared_budget=options.budget),
            InsertBarriersPass(), ProxyFencesPass()]


def emit_cuda(kernel: Kernel, options: Options | None = None) -> str:
    """Render laid-out SSA as CUDA C++, within the options' shared-memory
    budget (placing it in shared memory first where the SSA has no plan)."""
    from mytriton.backends.cuda.allocate_shared import allocated
    from mytriton.backends.cuda.combine_strategy import with_combine_strategies
    from mytriton.backends.cuda.copy_widths import with_copy_widths
    from mytriton.backends.cuda.emitter import emit_cuda as emit
    from mytriton.backends.cuda.hold_tiles import with_held_tiles
    from mytriton.backends.cuda.insert_barriers import with_barriers
    from mytriton.backends.cuda.proxy_fences import with_proxy_fences
    from mytriton.backends.cuda.read_widths import with_read_widths

    budget = (options if options is not None else Options()).budget
    decided = with_held_tiles(with_combine_strategies(with_read_widths(with_copy_widths(kernel))))
    return emit(with_proxy_fences(with_barriers(allocated(decided, budget))))


def emit_mlir(kernel: Kernel) -> str:
    """Render SSA (from ``opt`` on; staged SSA keeps its shared buffers and
    barriers) as upstream MLIR. It needs no layouts: tiles are vectors."""
    from mytriton.backends.mlir.emitter import emit_mlir as emit

    return emit(kernel)


def emit_ttir(kernel: Kernel) -> str:
    """Render optimised SSA (before stage-dots: Triton stages, lays out and
    pipelines its own dots) as Triton's TTIR."""
    from mytriton.backends.ttir.emitter import emit_ttir as emit

    return emit(kernel)


def to_cuda(kernel: Kernel, options: Options) -> str:
    """CUDA C++ for SSA at any stage from ``opt`` on: what is not staged and
    laid out yet is (stage-dots changes nothing on staged SSA)."""
    if not kernel.laid_out:
        kernel = layouts(stage_dots(kernel, options), options)
    return emit_cuda(kernel, options)


def cuda_without_tma(ssa_text: str, file: str, options: Options) -> str:
    """The CUDA of a kernel's optimised SSA with every copy made by cp.async
    (``compile --no-tma``): what a launch runs where no tensor map describes
    its values (runtime/tensor_maps.py). Not the laid-out SSA with its copies'
    engine taken away: the decisions made after tma-copies rest on TMA's
    copies (insert-barriers erased the barrier that cp.async's writes need
    before a pipelined loop's dot; proxy-fences fenced nothing before a
    wgmma reading what TMA wrote)."""
    return to_cuda(read_ssa(ssa_text, file), replace(options, tma=False))


def ptx(cuda_source: str, options: Options) -> str:
    from mytriton.backends.cuda.nvcc import compile_ptx

    return compile_ptx(cuda_source, options.arch)


def cubin(ptx_text: str, options: Options) -> bytes:
    """The cubin of the ptx stage's PTX (the cubin NVRTC made with it, or
    ptxas alone: the CUDA is compiled once); the same bytes as the JIT's
    build of the CUDA."""
    from mytriton.backends.cuda.nvcc import cubin_from_ptx

    return cubin_from_ptx(ptx_text)


# ---- reading each stage's text ----------------------------------------------------------


def read_tree(text: str, file: str) -> TreeKernel:
    from mytriton.ir.tree_text import parse_tree

    return parse_tree(text, file)


def read_ssa(text: str, file: str) -> Kernel:
    from mytriton.ir.ssa_text import parse_kernel

    return parse_kernel(text, file)


def print_tree(tree: TreeKernel) -> str:
    from mytriton.ir.tree_text import print_tree as printer

    return printer(tree)


def print_ssa(kernel: Kernel) -> str:
    from mytriton.ir.ssa_text import print_kernel

    return print_kernel(kernel)


# ---- the stages ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One stage: its ``compile --emit`` name, the subcommand that runs it
    alone (its ``--time-passes`` row), the stage it follows, and how it runs
    on that stage's result (``reads`` names another earlier stage whose
    result it takes instead). A stage with ``passes`` runs them on SSA; one
    with a ``dump_file`` is reported to ``Options.on_stage`` and dumped."""

    name: str
    command: str
    after: str | None
    run: Callable[[Any, Options], Any] | None = None
    passes: Callable[[Options], Sequence[Any]] | None = None
    dump_file: str | None = None
    reads: str | None = None
    binary: bool = False

    def apply(self, value: Any, options: Options) -> Any:
        if self.passes is not None:
            return run_stage_passes(self.name, value, options)
        assert self.run is not None
        return self.run(value, options)


def _unpipelined_mlir(kernel: Kernel, options: Options) -> str:
    # The MLIR back end has no lowering of pipelined K loops (async copies
    # into multi-stage buffers) yet: it takes the staged dots unpipelined.
    quiet = replace(options, num_stages=1, before_each=None, after_each=None)
    return emit_mlir(stage_dots(kernel, quiet))


# In pipeline order; ttir and mlir branch off after opt (back ends beside CUDA),
# ptx after cuda, cubin after ptx (ptxas on the PTX: the CUDA is compiled once).
STAGES: tuple[Stage, ...] = (
    Stage("ast", "parse", None, lambda source, o: parse(source[0], source[1], o.kernel, o.namespace), dump_file="00-ast.py"),
    Stage("tree", "trace", "ast", lambda bundle, o: trace(bundle, "<bundle>", o), dump_file="01-tree.tree"),
    Stage("ssa", "lower", "tree", lambda tree, o: lower(tree), dump_file="02-ssa.ssa"),
    Stage("opt", "opt", "ssa", passes=_opt_passes, dump_file="03-opt.ssa"),
    Stage("staged", "stage-dots", "opt", passes=_staging_passes, dump_file="04-staged.ssa"),
    Stage("layouts", "layouts", "staged", passes=_layout_passes, dump_file="05-layouts.ssa"),
    Stage("cuda", "emit-cuda", "layouts", lambda kernel, o: emit_cuda(kernel, o), dump_file="06-cuda.cu"),
    Stage("ptx", "nvcc (ptx)", "cuda", lambda cuda, o: ptx(cuda, o), dump_file="07-ptx.ptx"),
    Stage("cubin", "nvcc (cubin, ptxas alone)", "ptx", lambda ptx_text, o: cubin(ptx_text, o), dump_file="08-cubin.cubin",
          binary=True),
    Stage("mlir", "emit-mlir", "opt", _unpipelined_mlir),
    Stage("ttir", "emit-ttir", "opt", lambda kernel, o: emit_ttir(kernel)),
)
STAGE: dict[str, Stage] = {stage.name: stage for stage in STAGES}
# The ptx and cubin rows of --time-passes when NVRTC built them: one compile gives both, in the ptx stage.
NVRTC_LABELS = {"ptx": "nvrtc (ptx + cubin)", "cubin": "nvrtc (cubin, from the ptx stage's compile)"}
EMITS = tuple(STAGE)
BINARY_EMITS = tuple(stage.name for stage in STAGES if stage.binary)


def stage_label(name: str) -> str:
    """Stage ``name``'s row in ``--time-passes``: its command, or, for the
    ptx and cubin stages this thread's last build made with NVRTC, NVRTC's row."""
    if name in NVRTC_LABELS:
        from mytriton.backends.cuda.nvcc import last_toolchain

        if last_toolchain() == "nvrtc":
            return NVRTC_LABELS[name]
    return STAGE[name].command


def path_to(emit: str) -> list[Stage]:
    """The stages ``compile --emit=emit`` runs, in order."""
    path = [STAGE[emit]]
    while path[-1].after is not None:
        path.append(STAGE[path[-1].after])
    return path[::-1]


def stage_text(value: Any) -> str | bytes:
    """A stage's result as its command prints it."""
    if isinstance(value, Kernel):
        return print_ssa(value)
    if isinstance(value, TreeKernel):
        return print_tree(value)
    return value


# ---- in one process ---------------------------------------------------------------------


def compile_source(text: str, file: str, emit: str, options: Options) -> str | bytes:
    """The pipeline up to ``emit``, printed as that stage prints it (bytes
    for a binary stage, ``BINARY_EMITS``)."""
    return stage_text(run_stages(text, file, emit, options))


def run_stages(text: str, file: str, emit: str, options: Options) -> Any:
    """The result of stage ``emit`` for the kernel source ``text``: the
    stages on the way run in order, each reported to ``options.on_stage``."""
    if emit not in STAGE:
        raise CompileError(f"unknown stage '{emit}' (stages: {', '.join(EMITS)})")
    reached = options.on_stage or (lambda name, value: None)
    results: dict[str | None, Any] = {None: (text, file)}
    for stage in path_to(emit):
        value = stage.apply(results[stage.reads or stage.after], options)
        results[stage.name] = value
        if stage.dump_file is not None:
            reached(stage.name, value)
    return results[emit]


def source_to_ssa(text: str, file: str, options: Options, optimized: bool = True) -> Kernel:
    return run_stages(text, file, "opt" if optimized else "ssa", options)
