"""xDSL as the judge of the MLIR back end's text: a parser with a context
that loads the upstream dialects the back end writes (builtin, func, gpu,
arith, math, scf, memref, vector), which parses and verifies a module and
raises on any text it rejects. Needs the ``xdsl`` test extra."""
from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, math, memref, scf, vector
from xdsl.parser import Parser


def _context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, gpu.GPU, arith.Arith, math.Math, scf.Scf, memref.MemRef,
                    vector.Vector):
        ctx.load_dialect(dialect)
    return ctx


CONTEXT = _context()


def parse_and_verify(text: str):
    """The module xDSL reads from ``text``, verified (raises ParseError or
    VerifyException where it is not valid MLIR of those dialects)."""
    module = Parser(CONTEXT, text).parse_module()
    module.verify()
    return module


def op_names(module) -> set[str]:
    return {op.name for op in module.walk()}
