"""``tl.math``: Triton's math namespace. Each name here is the same function
as ``tl.<name>`` (kernels reach both through frontend/builtins.py); the
names of Triton's namespace that mytriton.language lacks are left out, so
``tl.math.<name>`` is available exactly where ``tl.<name>`` is."""
from __future__ import annotations

import mytriton.language as _tl
from mytriton.ir.opdefs import MATH_FUNCTIONS

# triton.language.math's functions (Triton 3.x) besides the math group's,
# which are all here.
TRITON_MATH = (
    "abs", "cdiv", "clamp", "div_rn", "fdiv", "fma", "maximum", "minimum", "softmax", "umulhi",
)

FUNCTIONS = tuple(dict.fromkeys(name for name in (*TRITON_MATH, *MATH_FUNCTIONS) if name in _tl.FUNCTIONS))

for _name in FUNCTIONS:
    globals()[_name] = getattr(_tl, _name)

__all__ = list(FUNCTIONS)
