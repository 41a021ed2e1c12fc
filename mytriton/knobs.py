"""Triton's environment variables, read where mytriton has the same knob.

Triton code and its users set ``TRITON_CACHE_DIR``, ``TRITON_ALWAYS_COMPILE``,
``TRITON_KERNEL_DUMP``/``TRITON_DUMP_DIR`` and ``TRITON_PRINT_AUTOTUNING``;
each means here what it means there, and mytriton's own variable wins where
both are set (``TRITON_INTERPRET`` is read with the backend choice, in
runtime/jit.py). ``variable`` names the one that was read, so that an error
about its value names what the user set.
"""
from __future__ import annotations

import os
from pathlib import Path

# mytriton's variable -> Triton's for the same knob.
TRITON_SPELLINGS = {
    "MYTRITON_CACHE_DIR": "TRITON_CACHE_DIR",
    "MYTRITON_ALWAYS_COMPILE": "TRITON_ALWAYS_COMPILE",
    "MYTRITON_PRINT_AUTOTUNING": "TRITON_PRINT_AUTOTUNING",
}


def variable(name: str) -> tuple[str, str | None]:
    """(the variable read, its value): mytriton's ``name`` where it is set
    (to anything but the empty string), else Triton's spelling of it."""
    value = os.environ.get(name)
    if value or name not in TRITON_SPELLINGS:
        return name, value or None
    triton = TRITON_SPELLINGS[name]
    return triton, os.environ.get(triton) or None


def flag(name: str) -> bool:
    """A switch: set, and not "0"."""
    return variable(name)[1] not in (None, "0")


def dump_dir() -> tuple[str, str | None]:
    """(the variable read, the folder) where each JIT specialisation is
    dumped: ``MYTRITON_DUMP_DIR``; else, where ``TRITON_KERNEL_DUMP`` is set
    (not "0"), ``TRITON_DUMP_DIR`` or Triton's default ``~/.triton/dump``."""
    own = os.environ.get("MYTRITON_DUMP_DIR")
    if own:
        return "MYTRITON_DUMP_DIR", own
    if os.environ.get("TRITON_KERNEL_DUMP", "0") in ("", "0"):
        return "MYTRITON_DUMP_DIR", None
    folder = os.environ.get("TRITON_DUMP_DIR") or str(Path.home() / ".triton" / "dump")
    return "TRITON_DUMP_DIR", folder


# Triton's variables that mean nothing here, and what to use instead (where
# anything): each warned of once per process, at the first compile it is set for.
UNMAPPED_TRITON_KNOBS = {
    "TRITON_F32_DEFAULT": "set MYTRITON_F32_DEFAULT (read at every launch) instead",
    "TRITON_DEBUG": "tl.device_assert always checks here, in the interpreter and on the GPU",
    "TRITON_DISABLE_LINE_INFO": "mytriton always builds with -lineinfo, which maps the GPU code to the "
                                "kernel's Python lines (#line directives; no effect on the code)",
    "TRITON_DEFAULT_FP_FUSION": "mytriton always lets nvcc fuse multiplies and adds (--fmad=true)",
    "TRITON_PTXAS_PATH": "mytriton runs the nvcc found on PATH, and its ptxas",
    "TRITON_KERNEL_OVERRIDE": "edit a dump and run it with `mytriton run` or `emit-cuda` instead",
    "MLIR_ENABLE_TIMING": "use `mytriton compile --time-passes`",
}
# Values that ask for what mytriton does anyway: nothing to warn of.
AS_MYTRITON_DOES = {"TRITON_DEFAULT_FP_FUSION": "1"}
_warned: set[str] = set()


def warn_unmapped_triton_knobs() -> None:
    import warnings

    for name, instead in UNMAPPED_TRITON_KNOBS.items():
        value = os.environ.get(name)
        if value and value != AS_MYTRITON_DOES.get(name) and name not in _warned:
            _warned.add(name)
            warnings.warn(f"{name} is set, but mytriton has no such knob and ignores it: {instead}",
                          stacklevel=3)
