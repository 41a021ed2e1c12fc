"""xDSL as the judge of the MLIR back end's text: a parser with a context
that loads the upstream dialects the back end writes (builtin, func, gpu,
arith, math, scf, memref, vector), which parses and verifies a module and
raises on any text it rejects. Needs the ``xdsl`` test extra.

xDSL 0.75 lacks three upstream ops the back end writes: ``arith.remf``
(libdevice.fmod) and, for atomic_cas, ``memref.generic_atomic_rmw`` and its
terminator ``memref.atomic_yield``. They are defined here as upstream's
ArithOps.td and MemRefOps.td do (remf: a pure binary float op like divf;
generic_atomic_rmw: one block whose one argument is the memref's element
type, ending in an atomic_yield of that type, its body free of side
effects), so that they are checked too."""
from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, math, memref, scf, vector
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.irdl import (
    IRDLOperation, irdl_op_definition, operand_def, region_def, result_def, traits_def, var_operand_def,
)
from xdsl.parser import Parser
from xdsl.traits import HasParent, IsTerminator, Pure, is_side_effect_free
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class RemfOp(arith.FloatingPointLikeBinaryOperation):
    name = "arith.remf"
    traits = traits_def(Pure())


@irdl_op_definition
class GenericAtomicRMWOp(IRDLOperation):
    name = "memref.generic_atomic_rmw"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()
    body = region_def("single_block")

    def verify_(self) -> None:
        element = self.memref.type.element_type
        if self.result.type != element:
            raise VerifyException(f"the result type {self.result.type} is not the memref's element type {element}")
        block = self.body.block
        if len(block.args) != 1 or block.args[0].type != element:
            raise VerifyException("the body takes one argument of the memref's element type")
        if len(self.indices) != len(self.memref.type.shape):
            raise VerifyException("one index per dimension of the memref")
        last = block.last_op
        if not isinstance(last, AtomicYieldOp) or last.result.type != element:
            raise VerifyException("the body ends in memref.atomic_yield of the element type")
        for op in block.ops:
            if op is not last and not is_side_effect_free(op):
                raise VerifyException(f"the body of memref.generic_atomic_rmw has a side effect: {op.name}")


@irdl_op_definition
class AtomicYieldOp(IRDLOperation):
    name = "memref.atomic_yield"
    result = operand_def()
    traits = traits_def(IsTerminator(), HasParent(GenericAtomicRMWOp))


def _context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, gpu.GPU, arith.Arith, math.Math, scf.Scf, memref.MemRef,
                    vector.Vector):
        ctx.load_dialect(dialect)
    for op in (RemfOp, GenericAtomicRMWOp, AtomicYieldOp):
        ctx.load_op(op)
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
