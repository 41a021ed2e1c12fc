"""The deep-stack runner: deep but legal inputs compile.

A 10,000-term sum or a 5,000-iteration static loop makes the compiler's
recursive walks deep. ``run_deep`` runs a stage in a worker thread with a
large stack and a raised recursion limit (limits.DEEP_STACK_BYTES,
DEEP_RECURSION_LIMIT), so those inputs compile, and turns a RecursionError or
MemoryError that still escapes into an error that names the limit instead of
a traceback. GPU work stays on the caller's thread (the launch makes its
device's context current there for each call).
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


# About 5 KiB of C stack per Python frame: the recursion limit that a stack
# of a given size carries without overflowing.
_FRAME_BYTES = 5 << 10


def run_deep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread with a large stack; its
    result, or its exception re-raised here (RecursionError and MemoryError
    as CompileErrors that name the limit). Where no such thread can start
    (too little address space), a smaller stack, then this thread's own."""
    if getattr(_state, "deep", False):  # already on a deep stack
        return _translated(fn, args, kwargs, sys.getrecursionlimit())
    outcome: dict[str, Any] = {}

    with _lock:
        old_limit = sys.getrecursionlimit()
        for stack in (DEEP_STACK_BYTES, DEEP_STACK_BYTES >> 3):
            limit = max(old_limit, min(DEEP_RECURSION_LIMIT, stack // _FRAME_BYTES))
            worker = _start(fn, args, kwargs, stack, limit, outcome)
            if worker is not None:
                break
        else:
            return _translated(fn, args, kwargs, old_limit)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _start(fn: Callable[..., T], args: tuple, kwargs: dict, stack: int, limit: int,
           outcome: dict[str, Any]) -> threading.Thread | None:
    """A started worker with a ``stack``-byte stack, or None if none starts."""
    started = threading.Event()

    def target() -> None:
        _state.deep = True
        started.wait()  # the recursion limit is raised once the thread runs
        try:
            outcome["value"] = _translated(fn, args, kwargs, limit)
        except BaseException as err:  # re-raised on the caller's thread
            outcome["error"] = err

    old_stack = threading.stack_size()
    try:
        threading.stack_size(stack)
        worker = threading.Thread(target=target, name="mytriton-deep-stack", daemon=True)
        worker.start()
    except (RuntimeError, MemoryError, ValueError):
        return None
    finally:
        threading.stack_size(old_stack)
    sys.setrecursionlimit(limit)
    started.set()
    return worker


class ResourceError(CompileError):
    """The compiler ran out of stack or memory on some input: which place in
    the input is unknown, so the CLI points at the input file."""


def _translated(fn: Callable[..., T], args: tuple, kwargs: dict, limit: int) -> T:
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        raise ResourceError(f"the input nests too deeply: over {limit} nested calls in the compiler "
                            f"(DEEP_RECURSION_LIMIT is {DEEP_RECURSION_LIMIT})") from None
    except MemoryError:
        raise ResourceError("out of memory while compiling; the input asks for too much "
                            "(see the limits in mytriton/limits.py)") from None
