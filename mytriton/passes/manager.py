"""Runs a pipeline of passes, verifying before and after each one."""
from __future__ import annotations

from typing import Callable, Sequence

from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Kernel
from mytriton.passes import get_pass
from mytriton.passes.verify import verify


def require_laid_out(kernel: Kernel, pass_name: str) -> None:
    """A back-end pass's first check (one that reads the layouts), located at the kernel."""
    if not kernel.laid_out:
        raise CompileError(f"kernel '{kernel.name}' is not laid out: {pass_name} runs after the layouts stage",
                           kernel.loc)


def run_passes(kernel: Kernel, names: Sequence[str],
               after_each: Callable[[str, Kernel], None] | None = None,
               before_each: Callable[[str, Kernel], None] | None = None) -> Kernel:
    passes = [get_pass(name) if isinstance(name, str) else name for name in names]  # names or Pass objects
    # A back-end pass (``after_layouts``) takes laid-out SSA (or refuses it in its own words, as layouts does);
    # the others run before the layouts stage.
    if kernel.laid_out and any(p.name != "verify" and not getattr(p, "after_layouts", False) for p in passes):
        raise CompileError(f"kernel '{kernel.name}' is laid out (num_warps={kernel.num_warps}): passes run "
                           "on SSA before the layouts stage", kernel.loc)
    verify(kernel)
    for p in passes:
        if before_each is not None:
            before_each(p.name, kernel)
        kernel = p.apply(kernel)
        try:
            verify(kernel)
        except CompileError as err:
            err.message = f"after pass '{p.name}': {err.message}"
            raise
        if after_each is not None:
            after_each(p.name, kernel)
    return kernel
