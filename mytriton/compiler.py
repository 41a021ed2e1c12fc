"""The compiler's stages as one linear pipeline.

Each stage is a function from one IR to the next; the CLI's subcommands call
them one at a time over text, ``compile`` calls them in one process, and both
print the same bytes. Nothing here imports NumPy, the CUDA driver or nvcc's wrapper
until a stage needs it.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, replace, field
from typing import Any, Callable, Mapping, Sequence

from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Kernel
from mytriton.ir.tree import TreeKernel

# The stages in pipeline order; mlir branches off after staged and ttir after opt
# (back ends beside CUDA).
EMITS = ("ast", "tree", "ssa", "opt", "staged", "layouts", "cuda", "ptx", "cubin", "mlir", "ttir")
BINARY_EMITS = ("cubin",)
DEFAULT_NUM_WARPS = 4
DEFAULT_ARCH = "sm_90"  # mytriton.target.DEFAULT_ARCH


@dataclass
class Options:
    kernel: str | None = None
    defines: dict[str, Any] = field(default_factory=dict)
    signature: str | None = None
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int | None = None  # a launch's software-pipelining depth (None: the software-pipeline pass's default, 3)
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
    # The globals of the kernel's module, for a kernel launched from Python:
    # its names resolve there, as Python resolved them (frontend/namespace.py).
    # None (the CLI): names resolve from the file's text alone.
    namespace: Mapping[str, Any] | None = None
    after_each: Callable[[str, Kernel], None] | None = None
    before_each: Callable[[str, Kernel], None] | None = None
    # Called with each stage's name and result as compile_source makes it
    # (dumps, --time-passes: mytriton/instrument.py).
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
    from mytriton.passes import DEFAULT_PIPELINE
    from mytriton.passes.manager import run_passes

    names = DEFAULT_PIPELINE if options.passes is None else options.passes
    return run_passes(kernel, names, options.after_each, options.before_each)


def stage_dots(kernel: Kernel, options: Options | None = None) -> Kernel:
    """Stage canonical tl.dot operands through shared memory (the CUDA
    backend's input), then software-pipeline their K loops over
    ``options.num_stages`` buffers (the software-pipeline pass's default without it);
    verified before and after."""
    from mytriton.passes.manager import run_passes
    from mytriton.passes.software_pipeline import SoftwarePipelinePass
    from mytriton.passes.verify import verify as run_verifier

    from mytriton.passes.stage_dots import StageDotsPass

    options = options if options is not None else Options()
    kernel = run_passes(kernel, [StageDotsPass(shared_budget=options.budget)])
    kernel = SoftwarePipelinePass(num_stages=options.num_stages, shared_budget=options.budget).apply(kernel)
    try:
        return run_verifier(kernel)
    except CompileError as err:
        err.message = f"after pass 'software-pipeline': {err.message}"
        raise


def layouts(kernel: Kernel, options: Options) -> Kernel:
    """Give every tile a layout for ``options.num_warps`` warps (CUDA's
    input) on ``options.arch``, and let wgmma dots overlap their loops'
    copies (overlap-wgmma); verified after."""
    from mytriton.passes.layouts import LayoutsPass
    from mytriton.passes.verify import verify as run_verifier

    from mytriton.passes.overlap_wgmma import OverlapWgmmaPass

    kernel = LayoutsPass(num_warps=options.num_warps, shared_budget=options.budget, arch=options.arch).apply(kernel)
    kernel = OverlapWgmmaPass().apply(kernel)
    try:
        return run_verifier(kernel)
    except CompileError as err:
        err.message = f"after the layouts stage: {err.message}"
        raise


def emit_cuda(kernel: Kernel, options: Options | None = None) -> str:
    """Render laid-out SSA as CUDA C++, within the options' shared-memory budget."""
    from mytriton.backends.cuda.emitter import emit_cuda as emit

    return emit(kernel, (options if options is not None else Options()).budget)


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


def ptx(cuda_source: str, options: Options) -> str:
    from mytriton.backends.cuda.nvcc import compile_ptx

    return compile_ptx(cuda_source, options.arch)


def cubin(cuda_source: str, options: Options) -> bytes:
    from mytriton.backends.cuda.nvcc import compile_cubin

    return compile_cubin(cuda_source, options.arch)


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


# ---- in one process ---------------------------------------------------------------------


def compile_source(text: str, file: str, emit: str, options: Options) -> str | bytes:
    """The pipeline up to ``emit``, printed as that stage prints it (bytes
    for a binary stage, ``BINARY_EMITS``)."""
    if emit not in EMITS:
        raise CompileError(f"unknown stage '{emit}' (stages: {', '.join(EMITS)})")
    reached = options.on_stage or (lambda name, value: None)
    bundle = parse(text, file, options.kernel, options.namespace)
    reached("ast", bundle)
    if emit == "ast":
        return bundle
    tree = trace(bundle, "<bundle>", options)
    reached("tree", tree)
    if emit == "tree":
        return print_tree(tree)
    kernel = lower(tree)
    reached("ssa", kernel)
    if emit == "ssa":
        return print_ssa(kernel)
    kernel = optimize(kernel, options)
    reached("opt", kernel)
    if emit == "opt":
        return print_ssa(kernel)
    if emit == "ttir":
        return emit_ttir(kernel)
    if emit == "mlir":
        # The MLIR back end has no lowering of pipelined K loops (async copies
        # into multi-stage buffers) yet: it takes the staged dots unpipelined.
        return emit_mlir(stage_dots(kernel, replace(options, num_stages=1)))
    kernel = stage_dots(kernel, options)
    reached("staged", kernel)
    if emit == "staged":
        return print_ssa(kernel)
    kernel = layouts(kernel, options)
    reached("layouts", kernel)
    if emit == "layouts":
        return print_ssa(kernel)
    cuda = emit_cuda(kernel, options)
    reached("cuda", cuda)
    if emit == "cuda":
        return cuda
    ptx_text = ptx(cuda, options)
    reached("ptx", ptx_text)
    if emit == "ptx":
        return ptx_text
    binary = cubin(cuda, options)
    reached("cubin", binary)
    return binary


def source_to_ssa(text: str, file: str, options: Options, optimized: bool = True) -> Kernel:
    kernel = lower(trace(parse(text, file, options.kernel, options.namespace), "<bundle>", options))
    return optimize(kernel, options) if optimized else kernel
