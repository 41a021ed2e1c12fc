"""``tl.core`` (``triton.language.core``): the language's own names, the
same objects as ``mytriton.language``'s (kernels read ``tl.core.X`` as
``tl.X``)."""
from mytriton.language import *  # noqa: F401,F403
from mytriton.language import __all__  # noqa: F401
