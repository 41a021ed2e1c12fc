"""``tl.extra``: Triton's namespace of target libraries. ``libdevice`` is
CUDA's math library (``tl.extra.libdevice``, as Triton 3.x re-exports it, and
``tl.extra.cuda.libdevice``)."""
from mytriton.language.extra import cuda, libdevice

__all__ = ["cuda", "libdevice"]
