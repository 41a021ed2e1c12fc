"""``tl.extra.cuda.gdc``: grid dependency control, the kernel's side of
programmatic dependent launch (Triton's ``triton.language.extra.cuda``
``gdc_wait`` and ``gdc_launch_dependents``).

A kernel launched with ``launch_pdl=True`` may start while the kernel
launched before it on the stream is still running: ``gdc_wait()`` waits
until that kernel has finished and its writes are visible, so the loads
after it read what it wrote; ``gdc_launch_dependents()`` lets the next such
launch start once every program has called it or finished. Both do nothing
in a launch that did not ask for it, and in the interpreter, whose launches
run one after another. As with ``mytriton.language``, Python never runs
these: the frontend reads the calls (frontend/builtins.py, GRID_DEPENDENCY).
"""
from __future__ import annotations

from mytriton.language.host_stubs import outside_kernel

FUNCTIONS = ("gdc_wait", "gdc_launch_dependents")
# A kernel reaches them as tl.extra.cuda.NAME or tl.extra.cuda.gdc.NAME.
MODULE_PATH = "mytriton.language.extra.cuda.gdc"
_OWNERS = ("mytriton.language.extra.cuda", MODULE_PATH)


def function_name(qualified: str) -> str | None:
    """``mytriton.language.extra.cuda[.gdc].gdc_wait`` -> ``gdc_wait``; None otherwise."""
    owner, _, name = qualified.rpartition(".")
    return name if owner in _OWNERS and name in FUNCTIONS else None


gdc_wait = outside_kernel(__name__, "gdc_wait", "tl.extra.cuda.gdc_wait")
gdc_launch_dependents = outside_kernel(__name__, "gdc_launch_dependents", "tl.extra.cuda.gdc_launch_dependents")

__all__ = list(FUNCTIONS)
