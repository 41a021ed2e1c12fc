"""Runs a pipeline of passes, verifying before and after each one (or, for
the JIT, the pipeline's result once: see ``run_passes``)."""
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
               before_each: Callable[[str, Kernel], None] | None = None,
               verify_each: bool = True) -> Kernel:
    """``names``' passes over ``kernel``. With ``verify_each`` (the CLI, the
    tests) the verifier runs before the first pass and after every pass, and
    an error names the pass that broke the SSA. Without it (the JIT's launches,
    unless MYTRITON_VERIFY_EACH=1) it runs once, on the pipeline's result: the
    same checks of what reaches the back end, for a third of a launch's
    compile time (what LLVM does outside ``-verify-each``)."""
    passes = [get_pass(name) if isinstance(name, str) else name for name in names]  # names or Pass objects
    # A back-end pass (``after_layouts``) takes laid-out SSA (or refuses it in its own words, as layouts does);
    # the others run before the layouts stage.
    if kernel.laid_out and any(p.name != "verify" and not getattr(p, "after_layouts", False) for p in passes):
        raise CompileError(f"kernel '{kernel.name}' is laid out (num_warps={kernel.num_warps}): passes run "
                           "on SSA before the layouts stage", kernel.loc)
    if verify_each:
        verify(kernel)
    for p in passes:
        if before_each is not None:
            before_each(p.name, kernel)
        kernel = p.apply(kernel)
        if verify_each:
            try:
                verify(kernel)
            except CompileError as err:
                err.message = f"after pass '{p.name}': {err.message}"
                raise
        if after_each is not None:
            after_each(p.name, kernel)
    if not verify_each:
        try:
            verify(kernel)
        except CompileError as err:
            named = ", ".join(p.name for p in passes)
            err.message = (f"after passes {named} (MYTRITON_VERIFY_EACH=1 names the one that broke it): "
                           f"{err.message}")
            raise
    return kernel
