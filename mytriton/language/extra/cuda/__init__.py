"""``tl.extra.cuda``: the CUDA target's libraries (``libdevice``)."""
from mytriton.language.extra.cuda import libdevice

__all__ = ["libdevice"]
