"""A ``reduce``'s or ``scan``'s combine region as C lines, for the shared-memory
path (``scans.py``) and the warp-shuffle path (``warp_scan.py``) alike."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element
from mytriton.backends.cuda.expressions import CValue, as_type, render
from mytriton.ir.ssa import Const, Op, Param
from mytriton.types import element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext


def combine_lines(em: "EmitContext", op: Op, left: list[str], right: list[str], outs: list[str]) -> list[str]:
    """C lines setting ``outs[i]`` to the combine region of ``op`` applied to
    the values ``left`` and ``right`` (C expressions of the tiles' element
    types); every result is computed before any is assigned, so ``outs`` may
    be among the inputs."""
    body = op.regions[0]
    values: dict = {arg: CValue(expr, arg.type) for arg, expr in zip(body.args, (*left, *right))}
    lines = ["{"]

    def arg_of(operand):
        if operand is None or isinstance(operand, Const):
            return operand
        if operand in values:
            return values[operand]
        assert isinstance(operand, Param), "a combine region reads its arguments, parameters and literals"
        return CValue(em.scalar_ref(operand), element_of(operand.type))

    for inner in body.ops[:-1]:
        result = inner.results[0]
        name = em.name(result)
        lines.append(f"  const {c_element(result.type)} {name} = {render(inner, [arg_of(o) for o in inner.operands])};")
        values[result] = CValue(name, element_of(result.type))
    yields = body.ops[-1].operands
    temps = []
    for i, (value, arg) in enumerate(zip(yields, body.args)):
        temp = f"y{i}_{em.name(op.results[0])}"
        lines.append(f"  const {c_element(arg.type)} {temp} = {as_type(arg_of(value), arg.type)};")
        temps.append(temp)
    lines += [f"  {out} = {temp};" for out, temp in zip(outs, temps)]
    lines.append("}")
    return lines
