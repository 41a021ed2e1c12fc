"""The MLIR and TTIR back ends render each op with the one method registered
for it (``@lowers``), and their op tables say which ops those are: the two
agree, and an op cannot be registered twice."""
from __future__ import annotations

import pytest

from mytriton.backends.mlir import ops as mlir_ops
from mytriton.backends.mlir.emitter import _Emitter as MlirEmitter
from mytriton.backends.mlir.emitter_base import RegionEmitter, lowers
from mytriton.backends.ttir import ops as ttir_ops
from mytriton.backends.ttir.emitter import _Emitter as TtirEmitter
from mytriton.ir.opdefs import OPS

BACK_ENDS = [pytest.param(MlirEmitter, mlir_ops, id="mlir"), pytest.param(TtirEmitter, ttir_ops, id="ttir")]


@pytest.mark.parametrize("emitter,table", BACK_ENDS)
def test_every_op_the_table_lowers_has_a_registered_lowering(emitter, table):
    lowered = {name for name in OPS if table.lowering(name) not in (None, "refused")}
    assert lowered == set(emitter.LOWERINGS)


@pytest.mark.parametrize("emitter,table", BACK_ENDS)
def test_every_registered_lowering_is_a_method_of_the_emitter(emitter, table):
    for name, method in emitter.LOWERINGS.items():
        assert callable(getattr(emitter, method)), name


def test_every_elementwise_op_of_the_mlir_table_has_a_scalar_spelling_or_its_own_lowering():
    elementwise = {name for name in OPS if mlir_ops.lowering(name) == "elementwise"}
    own = {"program_id", "num_programs", "addptr", "cast", "bitcast"}
    assert elementwise - own <= set(mlir_ops.SCALAR)


def test_an_op_registered_twice_is_an_error():
    with pytest.raises(TypeError, match="'neg' is lowered by both"):
        class Twice(RegionEmitter):
            @lowers("neg")
            def first(self, op): ...

            @lowers("neg")
            def second(self, op): ...
