"""``triton.runtime`` as mytriton gives it: the JIT, the autotuner and the
driver (``triton.runtime.driver.active``: the current device and its
properties). Any other name is an AttributeError that names it."""
from __future__ import annotations

from typing import Any

from mytriton.as_triton.driver import driver
from mytriton.as_triton import autotuner
from mytriton.as_triton.autotuner import Autotuner, Config, Heuristics, KernelInterface, autotune, heuristics
from mytriton.runtime import jit
from mytriton.runtime.jit import JITFunction

# A package, as Triton's is, so that a submodule mytriton does not give is
# refused by name (as_triton's finder), not as "triton is not a package".
__path__: list[str] = []

__all__ = ["Autotuner", "Config", "Heuristics", "JITFunction", "KernelInterface", "autotune", "autotuner", "driver",
           "heuristics", "jit"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"mytriton does not provide triton.runtime.{name} (it gives {', '.join(__all__)})")
