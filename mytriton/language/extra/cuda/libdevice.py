"""``tl.extra.cuda.libdevice`` (``from triton.language.extra.cuda import libdevice``)."""
from mytriton.language.extra.libdevice import *  # noqa: F401,F403
from mytriton.language.extra.libdevice import FUNCTIONS, SIGNATURES, __all__  # noqa: F401
