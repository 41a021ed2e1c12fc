"""The op table (mytriton/ir/opdefs.py) is complete and consistent: every op
has interpreter semantics or a handler and a CUDA lowering or a stated
refusal, its traits agree with each other, the groups other modules import
are derived from the traits, and every ``tl`` function maps to ops that
exist."""
from __future__ import annotations

import pytest

import mytriton.language as tl
from conftest import kernel_source
from mytriton.backends.cuda import expressions
from mytriton.backends.interp import HANDLERS
from mytriton.frontend.builtins import BUILTINS
from mytriton.frontend.stages import trace_stage
from mytriton.ir import opdefs
from mytriton.ir.tree import CombineStmt, ForRange, Node, Yield

OPS = sorted(opdefs.OPS)


@pytest.mark.parametrize("name", OPS)
def test_every_op_runs_in_the_interpreter(name):
    opdef = opdefs.OPS[name]
    # ``yield`` and ``condition`` are read by the op (for, if, while) that runs their region.
    assert name in HANDLERS or opdef.semantics is not None or name in ("yield", "condition")


@pytest.mark.parametrize("name", OPS)
def test_every_op_has_a_cuda_lowering_or_a_stated_refusal(name):
    assert expressions.lowering(name) is not None
    if expressions.lowering(name) == "refused":
        assert expressions.REFUSED[name]  # says why


@pytest.mark.parametrize("name", opdefs.MATH_FUNCTIONS)
def test_every_math_function_has_a_cuda_spelling_of_one_operand(name):
    assert expressions.MATH_SPELLINGS[name].format("x") != expressions.MATH_SPELLINGS[name]


def test_cuda_names_no_op_table_lacks():
    known = set(opdefs.OPS)
    assert set(expressions.MATH_SPELLINGS) <= set(opdefs.MATH_FUNCTIONS)
    assert expressions.EXPRESSION_OPS <= known
    assert set(expressions.STATEMENT_OPS) <= known
    assert set(expressions.REFUSED) <= known


@pytest.mark.parametrize("name", OPS)
def test_every_attribute_has_a_kind(name):
    opdef = opdefs.OPS[name]
    assert set(opdef.attrs) | set(opdef.optional_attrs) <= set(opdefs.ATTR_KINDS)


@pytest.mark.parametrize("name", OPS)
def test_memory_effects_and_purity_agree(name):
    d = opdefs.OPS[name]
    if d.writes_global or d.writes_shared or d.synchronises or d.control or d.talks_to_host:
        assert not d.pure and d.has_effect
    else:
        assert d.pure and not d.has_effect
    assert opdefs.writes_memory(name) == (d.writes_global or d.writes_shared)
    assert opdefs.reads_memory(name) == (d.reads_global or d.reads_shared)


@pytest.mark.parametrize("name", OPS)
def test_ops_with_semantics_are_elementwise_pure_and_memoryless(name):
    d = opdefs.OPS[name]
    if d.semantics is None:
        assert not d.folds  # folding evaluates the semantics
        return
    assert d.elementwise and d.pure and not d.reads_memory and not d.allocates
    assert d.computes_in in ("result", "operands", "float")
    assert d.fold_refuses is None or d.folds


@pytest.mark.parametrize("name", OPS)
def test_operand_traits_name_operands_the_op_has(name):
    d = opdefs.OPS[name]
    names = [o.rstrip("?") for o in d.operands]
    assert set(d.shared_operands) <= set(names)
    if d.address_operand is not None:
        assert d.address_operand in names and (d.reads_global or d.writes_global)
    if d.reads_global or d.writes_global:
        assert d.address_operand is not None  # analyses follow it to the parameters


def test_groups_are_derived_from_traits():
    assert opdefs.REDUCTIONS == tuple(n for n, d in opdefs.OPS.items() if d.reduction)
    assert opdefs.CMP_OPS == tuple(n for n, d in opdefs.OPS.items() if d.comparison)
    assert opdefs.MATH_FUNCTIONS == tuple(n for n, d in opdefs.OPS.items() if d.math_function)
    assert opdefs.MATERIALISED == tuple(n for n, d in opdefs.OPS.items() if d.materialised)
    assert {"sum", "max", "min"} == set(opdefs.REDUCTIONS)
    for name in opdefs.REDUCTIONS:
        assert opdefs.OPS[name].attrs == ("axis",)
    for name in opdefs.CMP_OPS:
        assert opdefs.OPS[name].arity == 2 and opdefs.OPS[name].computes_in == "operands"
    for name in opdefs.MATH_FUNCTIONS:
        assert opdefs.OPS[name].arity == 1 and opdefs.OPS[name].elementwise


def test_inexact_math_functions_are_interpreter_only_and_exact_ones_fold():
    folding = {n for n in opdefs.MATH_FUNCTIONS if opdefs.OPS[n].folds}
    assert folding == {"floor", "ceil"}
    assert {"erf", "tanh", "exp", "sin"} <= set(opdefs.MATH_FUNCTIONS) - folding


def test_every_math_function_is_a_tl_builtin():
    for name in opdefs.MATH_FUNCTIONS:
        assert name in tl.FUNCTIONS and name in BUILTINS and callable(getattr(tl, name))


def test_every_tl_function_has_a_builtin_and_every_builtin_a_tl_name():
    assert set(tl.FUNCTIONS) == set(BUILTINS)


def _traced_ops(stmts) -> set[str]:
    found: set[str] = set()
    work = list(stmts)
    seen: set[int] = set()

    def expr(e) -> None:
        if isinstance(e, Node) and id(e) not in seen:
            seen.add(id(e))
            found.add(e.op)
            for a in e.args:
                expr(a)

    while work:
        stmt = work.pop()
        if isinstance(stmt, ForRange):
            work.extend(stmt.body)
            for e in (stmt.start, stmt.stop, stmt.step, *stmt.carried_inputs):
                expr(e)
        elif isinstance(stmt, Yield):
            for e in stmt.values:
                expr(e)
        elif isinstance(stmt, CombineStmt):
            found.add(stmt.op)
            work.extend(stmt.body)
            for e in stmt.inputs:
                expr(e)
        else:
            expr(stmt.node)
    return found


EVERY_FUNCTION = """
@mytriton.jit
def k(x_ptr, out_ptr, n, lock_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + tl.num_programs(0) * 0
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=1.0)
    y = {math} + tl.abs(x) + tl.where(m, x, 0.0) + tl.maximum(x, 1.0) + tl.minimum(x, 2.0)
    z = tl.zeros((BLOCK,), tl.float32) + tl.full((BLOCK,), 2.0, tl.float32) + tl.empty((BLOCK,), tl.float32)
    r = tl.sum(y, axis=0) + tl.max(z, axis=0) + tl.min(z, axis=0)
    a = tl.expand_dims(y, 1) + tl.zeros((BLOCK, 16), tl.float32)
    d = tl.dot(a, tl.zeros((16, 16), tl.float32))
    for j in tl.range(0, tl.cdiv(n, BLOCK)):
        r += 1.0
    for j in tl.static_range(2):
        r += 1.0
    i = tl.max_constancy(tl.max_contiguous(tl.multiple_of(i, 16), 16), 1)
    w = tl.cast(y, tl.int32, bitcast=True).to(tl.float32, bitcast=True)
    tl.static_assert(BLOCK > 0)
    tl.static_print("", tl.pointer_type(tl.float32))
    tl.device_assert(w == w, "nan")
    tl.device_print("w", w)
    y += tl.clamp(x, 0.0, 1.0) + tl.fma(x, x, x) + tl.div_rn(x, 2.0) + tl.fdiv(x, 3.0) + tl.softmax(x)
    y += tl.umulhi(i, i).to(tl.float32)
    h = tl.permute(tl.view(tl.reshape(d, (BLOCK, 8, 2)), (BLOCK, 16)), 1, 0)
    s0, s1 = tl.split(tl.reshape(tl.join(y, y), (BLOCK, 2)))
    y += s0 + s1 + tl.sum(tl.interleave(y, y) + tl.cat(y, y), axis=0) + tl.sum(h, axis=0)
    y += tl.sum(tl.broadcast_to(y, (2, BLOCK)), axis=0)
    y += tl.zeros_like(y) + tl.full_like(y, 1.0)
    tl.assume(n > 0)
    b0, b1 = tl.broadcast(tl.unsqueeze(y, 0), tl.unsqueeze(x, 1))
    y += tl.sum(tl.squeeze(tl.unsqueeze(tl.ravel(b0 + b1), 0), 0)) + tl.sqrt_rn(x)
    y = tl.mul(tl.add(y, 1.0), tl.sub(y, 1.0))
    si, sj = tl.swizzle2d(i, i, n, n, 8)
    y += (si + sj).to(tl.float32)
    y += tl.rand(n, i) + tl.randn(n, i) + tl.uint_to_uniform_float(tl.randint(n, i)) + tl.rand4x(n, i)[1]
    y += tl.randn4x(n, i)[2] + tl.pair_uniform_to_normal(x, x)[0] + tl.randint4x(n, i)[3].to(tl.float32)
    q = tl.philox(n, i, i, i, i)
    y += tl.philox_impl(q[0], q[1], q[2], q[3], q[0], q[1])[0].to(tl.float32)
    y += tl.sort(y) + tl.flip(y, 0) + tl.bitonic_merge(y)
    y += tl.broadcast_to(tl.topk(y, 1), (BLOCK,))
    y += tl.histogram(i, BLOCK, mask=m).to(tl.float32)
    y += tl.gather(y, i % BLOCK, 0)
    y += tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [y], dtype=tl.float32, is_pure=True, pack=1)
    y += tl.inline_asm_elementwise("mov.b32 $0, 0;", "=r", [], dtype=tl.float32, is_pure=False, pack=1)
    y += tl.atomic_add(out_ptr + i, 1.0, mask=m) + tl.atomic_max(out_ptr + i, y) + tl.atomic_min(out_ptr, 0.0)
    tl.atomic_cas(lock_ptr, 0, 1) + tl.atomic_and(lock_ptr, 3) + tl.atomic_or(lock_ptr, 1) + tl.atomic_xor(lock_ptr, 2)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)
    bp = tl.advance(tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,)), (BLOCK,))
    desc = tl.make_tensor_descriptor(x_ptr, [n], [1], [BLOCK])
    tl.store_tensor_descriptor(desc, [0], tl.load(bp, boundary_check=(0,)) + tl.load_tensor_descriptor(desc, [0]))
    tl.store(out_ptr + i, y + r + tl.sum(d, axis=1) + tl.sum(tl.trans(d), axis=0), mask=m)
"""


# The scans and index reductions, in a kernel of their own (the MLIR and TTIR
# back ends refuse them, and their tests compile EVERY_FUNCTION).
EVERY_SCAN_FUNCTION = """

@mytriton.jit
def _add(a, b):
    return a + b


@mytriton.jit
def k_scans(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.cumsum(x, 0) + tl.cumprod(x, 0, reverse=True) + tl.associative_scan(x, 0, _add)
    r = tl.argmax(y, 0) + tl.argmin(y, 0) + tl.reduce(y, 0, _add)
    r += tl.xor_sum(y.to(tl.int32, bitcast=True), 0) + tl.reduce_or(y.to(tl.int32, bitcast=True), 0)
    tl.store(out_ptr + tl.arange(0, BLOCK), y + r)
"""


def test_a_kernel_calling_every_tl_function_traces_to_ops_of_the_table():
    math = " + ".join(f"tl.{name}(x)" for name in opdefs.MATH_FUNCTIONS)
    source = kernel_source(EVERY_FUNCTION.format(math=math) + EVERY_SCAN_FUNCTION)
    called = {name for name in tl.FUNCTIONS if f"tl.{name}(" in source}
    assert called == set(tl.FUNCTIONS)
    tree = trace_stage(source, "k.py", {"BLOCK": 16}, None, "k")
    scans = trace_stage(source, "k.py", {"BLOCK": 16}, None, "k_scans")
    ops = _traced_ops(tree.body) | _traced_ops(scans.body)
    assert set(opdefs.MATH_FUNCTIONS) <= ops
    assert ops <= set(opdefs.OPS)


@pytest.mark.parametrize("name", OPS)
def test_every_op_has_a_layout_rule_the_layouts_stage_knows(name):
    d = opdefs.OPS[name]
    assert d.layout_rule in opdefs.LAYOUT_RULES
    if d.elementwise:
        assert d.layout_rule == "elementwise"  # operands read in the result's layout
    if d.layout_rule == "elementwise":
        assert d.pure and not d.reads_memory  # so the layouts stage may compute it twice
    if d.layout_rule in ("load", "reduce", "dot", "convert"):
        assert d.materialised  # held in registers, converted rather than recomputed
