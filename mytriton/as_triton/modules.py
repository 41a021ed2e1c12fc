"""Which mytriton module stands for each of Triton's, and how a Triton path
reads in the kernel language.

Kept free of imports: the frontend reads this table to resolve a kernel
file's ``import triton...`` statements without running anything, and
``install_as_triton`` to fill ``sys.modules``.
"""
from __future__ import annotations

import importlib

# Triton's modules that libraries import -> the mytriton module behind each.
# The kernel language is mytriton's own (``triton.language`` is
# ``mytriton.language``); the host-side modules are shims that give Triton's
# names and refuse any other by name.
MODULES: dict[str, str] = {
    "triton": "mytriton.as_triton.api",
    "triton.language": "mytriton.language",
    "triton.language.core": "mytriton.language.core",
    "triton.language.math": "mytriton.language.math",
    "triton.language.random": "mytriton.language.random",
    "triton.language.extra": "mytriton.language.extra",
    "triton.language.extra.libdevice": "mytriton.language.extra.libdevice",
    "triton.language.extra.cuda": "mytriton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "mytriton.language.extra.cuda.libdevice",
    "triton.language.extra.cuda.gdc": "mytriton.language.extra.cuda.gdc",
    "triton.runtime": "mytriton.as_triton.runtime",
    "triton.runtime.jit": "mytriton.runtime.jit",
    "triton.runtime.autotuner": "mytriton.as_triton.autotuner",
    "triton.runtime.driver": "mytriton.as_triton.driver",
    "triton.testing": "mytriton.as_triton.testing",
    "triton.tools": "mytriton.tools",
    "triton.tools.tensor_descriptor": "mytriton.tools.tensor_descriptor",
}

# How the kernel language spells a Triton path: ``triton.X`` is ``mytriton.X``
# (``triton.jit``, ``triton.cdiv``, ``triton.language.load``), and Triton's
# ``language.core`` holds the language's own names.
_SPELLINGS = (("triton", "mytriton"), ("mytriton.language.core", "mytriton.language"))


def kernel_path(path: str) -> str:
    """``triton.language.extra.libdevice.rsqrt`` ->
    ``mytriton.language.extra.libdevice.rsqrt``; any other path unchanged."""
    for old, new in _SPELLINGS:
        if path == old or path.startswith(old + "."):
            path = new + path[len(old):]
    return path


def is_language_path(path: str) -> bool:
    """Whether ``path`` (Triton's or mytriton's spelling) names mytriton or Triton."""
    return path.split(".")[0] in ("mytriton", "triton")


def provides(module: str, name: str | None = None) -> bool:
    """Whether ``import module`` (and ``from module import name``) succeeds
    where ``triton`` is mytriton: Triton's modules by the table above,
    mytriton's by importing them (mytriton's own code, nothing of the user's)."""
    provider = MODULES.get(module) if module.split(".")[0] == "triton" else module
    if provider is None or not all(part.isidentifier() for part in provider.split(".")):
        return False
    try:
        found = importlib.import_module(provider)
    except ImportError:
        return False
    if name is None or hasattr(found, name):
        return True
    return provides(f"{module}.{name}")
