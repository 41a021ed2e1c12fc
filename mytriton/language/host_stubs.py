"""What the kernel language's functions are on the host: Python never runs
a kernel (the frontend reads its source), so each name is a stand-in that
says where it belongs when called outside one, and keeps its name for the
frontend to resolve (frontend/namespace.py reads ``__module__`` and
``__qualname__``)."""
from __future__ import annotations

from typing import Any, Callable


def outside_kernel(module: str, name: str, spelled: str) -> Callable[..., Any]:
    """The host stand-in of the kernel function ``module.name``, ``spelled``
    so in its message."""
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{spelled} can only be used inside a @mytriton.jit kernel")

    stub.__module__ = module
    stub.__name__ = name
    stub.__qualname__ = name
    return stub
