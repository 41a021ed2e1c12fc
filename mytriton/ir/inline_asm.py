"""``tl.inline_asm_elementwise``'s constraint strings, as Triton reads them.

``constraints`` lists the asm's operands in order, outputs first (``=r``),
then one input per argument (``r``), comma-separated: ``"=r,r,f"``. Each
letter names a PTX register kind, which is also CUDA's inline-asm letter:
``h`` 16 bits, ``r`` 32, ``l`` 64 (integer registers), ``f`` an f32, ``d``
an f64. A value moves into a register of its own width by its bits (an f32
in ``r``), an integer into a wider integer register by its value; the
asm's ``$N`` is its operand N. The frontend checks a call against these
rules (a located error), the CUDA back end writes the operands by them.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.types import ScalarType

# letter: (CUDA's C type of the register, its bits, whether it holds a float)
REGISTERS: dict[str, tuple[str, int, bool]] = {
    "h": ("unsigned short", 16, False),
    "r": ("unsigned int", 32, False),
    "l": ("unsigned long long", 64, False),
    "f": ("float", 32, True),
    "d": ("double", 64, True),
}


@dataclass(frozen=True)
class Constraints:
    outputs: tuple[str, ...]  # the letters, without '='
    inputs: tuple[str, ...]


def parse(text: str) -> Constraints:
    """``"=r,r,f"`` -> Constraints(("r",), ("r", "f")); ValueError saying what is wrong."""
    outputs: list[str] = []
    inputs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        output = part.startswith("=")
        letter = part[1:] if output else part
        if letter not in REGISTERS:
            raise ValueError(f"constraint {part!r} is not one of {', '.join(REGISTERS)} (an input) or "
                             f"{', '.join('=' + k for k in REGISTERS)} (an output)")
        if output and inputs:
            raise ValueError(f"the outputs come first in the constraints, got {text!r}")
        (outputs if output else inputs).append(letter)
    return Constraints(tuple(outputs), tuple(inputs))


def fit_problem(letter: str, element: ScalarType) -> str | None:
    """Why a value of ``element`` cannot move to or from a ``letter`` register, or None."""
    _, bits, is_float = REGISTERS[letter]
    if element.is_float or is_float:
        if element.bits != bits:
            return f"a {element.name} does not fit the {bits}-bit register '{letter}'"
        return None
    if element.bits > bits:
        return f"a {element.name} does not fit the {bits}-bit register '{letter}'"
    return None


def placeholders(asm: str) -> str:
    """Triton's ``$N`` operand references as CUDA's ``%N`` (a literal ``%``,
    as PTX writes ``%r1``, doubled)."""
    out, i = [], 0
    while i < len(asm):
        char = asm[i]
        if char == "%":
            out.append("%%")
        elif char == "$" and i + 1 < len(asm) and asm[i + 1].isdigit():
            j = i + 1
            while j < len(asm) and asm[j].isdigit():
                j += 1
            out.append("%" + asm[i + 1:j])
            i = j
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)
