"""SSA passes, registered by the names the CLI uses (``opt -p fold,cse,dce``).

Each pass is a frozen dataclass in a module named after it, with a ``name``,
a one-line ``summary`` and ``apply(kernel) -> kernel``. Modules are imported
only when their pass is asked for.
"""
from __future__ import annotations

import importlib
from typing import Protocol

from mytriton.ir.ssa import Kernel


class Pass(Protocol):
    name: str
    summary: str

    def apply(self, kernel: Kernel) -> Kernel: ...


# CLI name -> (module, class)
REGISTRY: dict[str, tuple[str, str]] = {
    "verify": ("mytriton.passes.verify", "VerifyPass"),
    "fold": ("mytriton.passes.fold", "FoldPass"),
    "cse": ("mytriton.passes.cse", "CSEPass"),
    "dce": ("mytriton.passes.dce", "DCEPass"),
    "licm": ("mytriton.passes.licm", "LICMPass"),
    "hoist-held": ("mytriton.passes.hoist_held", "HoistHeldPass"),
    # The CUDA backend's preparation, not an optimisation: compile runs it
    # after opt (and `mytriton stage-dots` alone); not in the default pipeline.
    "stage-dots": ("mytriton.passes.stage_dots", "StageDotsPass"),
    # After stage-dots (compile runs it there, with the launch's num_stages).
    "software-pipeline": ("mytriton.passes.software_pipeline", "SoftwarePipelinePass"),
    # After the layouts stage (which runs it): wgmma dots overlap the next tiles' copies.
    "overlap-wgmma": ("mytriton.passes.overlap_wgmma", "OverlapWgmmaPass"),
    # The layouts stage's last passes, the CUDA back end's own: they decide for its printer.
    "copy-widths": ("mytriton.backends.cuda.copy_widths", "CopyWidthsPass"),
    "tma-copies": ("mytriton.backends.cuda.tma_copies", "TmaCopiesPass"),
    "tma-stores": ("mytriton.backends.cuda.tma_stores", "TmaStoresPass"),
    "read-widths": ("mytriton.backends.cuda.read_widths", "ReadWidthsPass"),
    "combine-strategy": ("mytriton.backends.cuda.combine_strategy", "CombineStrategyPass"),
    "hold-tiles": ("mytriton.backends.cuda.hold_tiles", "HoldTilesPass"),
    "allocate-shared": ("mytriton.backends.cuda.allocate_shared", "AllocateSharedPass"),
    "insert-barriers": ("mytriton.backends.cuda.insert_barriers", "InsertBarriersPass"),
    "proxy-fences": ("mytriton.backends.cuda.proxy_fences", "ProxyFencesPass"),
}

# licm before cse, so that hoisted copies of an op meet the ones outside the loop; hoist-held
# last, so that it moves the ops that are left, next to the operands cse has merged.
DEFAULT_PIPELINE = ("fold", "licm", "cse", "dce", "hoist-held")


def get_pass(name: str) -> Pass:
    from mytriton.diagnostics import CompileError

    if name not in REGISTRY:
        raise CompileError(f"unknown pass '{name}' (passes: {', '.join(REGISTRY)})")
    module, cls = REGISTRY[name]
    return getattr(importlib.import_module(module), cls)()
