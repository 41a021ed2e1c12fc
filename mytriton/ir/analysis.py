"""Small analyses over SSA that several stages share."""
from __future__ import annotations

from mytriton.ir.ssa import BlockArg, Kernel, OpResult, Param, Value, walk


def pointer_bases(value: Value) -> set[Param]:
    """The pointer parameters a pointer value can be derived from (through
    ``addptr``, ``where`` and loop-carried pointers)."""
    found: set[Param] = set()
    seen: set[Value] = set()
    work: list[Value] = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, Param):
            found.add(v)
        elif isinstance(v, OpResult):
            op = v.op
            if op.name == "addptr":
                work.append(op.operands[0])
            elif op.name == "where":
                work.extend(o for o in op.operands[1:] if isinstance(o, Value))
            elif op.name == "for":
                work.append(op.operands[3 + v.index])
                yielded = op.regions[0].ops[-1].operands[v.index]
                if isinstance(yielded, Value):
                    work.append(yielded)
        elif isinstance(v, BlockArg) and v.index > 0:
            loop = v.block.parent
            if loop is not None:
                work.append(loop.operands[3 + v.index - 1])
                yielded = v.block.ops[-1].operands[v.index - 1] if v.block.ops else None
                if isinstance(yielded, Value):
                    work.append(yielded)
    return found


def stored_params(kernel: Kernel) -> list[str]:
    """Names of the pointer parameters the kernel may store through, in
    parameter order (the buffers a launcher copies back)."""
    stored: set[Param] = set()
    for op in walk(kernel.body):
        if op.name == "store" and isinstance(op.operands[0], Value):
            stored |= pointer_bases(op.operands[0])
    return [p.name for p in kernel.params if p in stored]
