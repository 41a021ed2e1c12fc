"""``tl.extra.cuda``: the CUDA target's libraries (``libdevice``) and grid
dependency control (``gdc_wait``, ``gdc_launch_dependents``, from ``gdc``)."""
from mytriton.language.extra.cuda import gdc, libdevice
from mytriton.language.extra.cuda.gdc import gdc_launch_dependents, gdc_wait

__all__ = ["gdc", "gdc_launch_dependents", "gdc_wait", "libdevice"]
