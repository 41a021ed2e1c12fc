"""How mytriton's types and literals are spelled in CUDA C++: the CUDA
language object's methods (``spelling.py``) under their short names."""
from __future__ import annotations

from mytriton.backends.cuda.spelling import CUDA

c_scalar = CUDA.scalar_type
c_element = CUDA.element_type
c_literal = CUDA.literal
c_cast = CUDA.cast
