"""The deep-stack runner: deep but legal inputs compile.

A 10,000-term sum or a 5,000-iteration static loop makes the compiler's
recursive walks deep. ``run_deep`` runs a stage in a worker thread with a
large stack and a raised recursion limit (limits.DEEP_STACK_BYTES,
DEEP_RECURSION_LIMIT), so those inputs compile, and turns a RecursionError or
MemoryError that still escapes into an error that names the limit instead of
a traceback. GPU work stays on the caller's thread (PyCUDA ties a context to
the thread that made it).
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable, TypeVar

from mytriton.diagnostics import CompileError
from mytriton.limits import DEEP_RECURSION_LIMIT, DEEP_STACK_BYTES

T = TypeVar("T")
_state = threading.local()
_lock = threading.Lock()  # the recursion limit is one per process


def run_deep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread with a large stack; its
    result, or its exception re-raised here (RecursionError and MemoryError
    as CompileErrors that name the limit)."""
    if getattr(_state, "deep", False):  # already on a deep stack
        return _translated(fn, args, kwargs)
    outcome: dict[str, Any] = {}

    def target() -> None:
        _state.deep = True
        try:
            outcome["value"] = _translated(fn, args, kwargs)
        except BaseException as err:  # re-raised on the caller's thread
            outcome["error"] = err

    with _lock:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            worker = threading.Thread(target=target, name="mytriton-deep-stack", daemon=True)
            worker.start()
        finally:
            threading.stack_size(old_stack)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class ResourceError(CompileError):
    """The compiler ran out of stack or memory on some input: which place in
    the input is unknown, so the CLI points at the input file."""


def _translated(fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        raise ResourceError(f"the input nests too deeply: over {DEEP_RECURSION_LIMIT} nested calls "
                            "(DEEP_RECURSION_LIMIT) in the compiler") from None
    except MemoryError:
        raise ResourceError("out of memory while compiling; the input asks for too much "
                            "(see the limits in mytriton/limits.py)") from None
