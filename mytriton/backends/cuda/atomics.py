"""Atomics on the GPU: ``atomic_rmw`` (tl.atomic_add ... atomic_xchg) and
``atomic_cas``.

Each element is applied once, by the one thread that owns it (a layout's
copies of an element on spare threads skip it, as stores do); where the
layout has such copies, the old values go through shared memory so that
every holder reads the same result. A scalar atomic runs on thread 0 and its
old value reaches the whole program through shared memory (the spin lock of
Triton's layer-norm backward: ``while tl.atomic_cas(lock, 0, 1) == 1``).

CUDA's functions do the work: ``atomicAdd``, ``atomicMax``, ``atomicMin``,
``atomicAnd``, ``atomicOr``, ``atomicXor``, ``atomicExch``, ``atomicCAS``,
with the ``_block`` and ``_system`` variants for ``scope="cta"`` and
``"sys"`` (f16 and bf16 adds have no variants: theirs is always the device's
scope; bf16's needs sm_80).
64-bit integers go through the ``unsigned long long`` overloads, floats'
``max``/``min`` through the integer order of their bits (as Triton does:
a non-negative value by signed ``atomicMax``, a negative one by unsigned
``atomicMin``, and the mirror for ``min``), ``cas`` and ``xchg`` of floats
on their bits. CUDA's atomics are relaxed. An ordered one (``sem``
acquire, release or acq_rel, ``tl.atomic_add``'s default acq_rel) on 32- or
64-bit integers, or an f32/f64 add, is PTX's ``atom`` with that order and
scope on global memory (``atom.acq_rel.gpu.global.add.f32``), as Triton writes it; an f16 or bf16
add too where the target has it (a helper that tests ``__CUDA_ARCH__``: f16 from sm_70, bf16 from
sm_90); the others (float max/min/xchg/cas) keep CUDA's function between fences of the
scope, before (release, acq_rel) and after (acquire, acq_rel), unless the
layouts stage gave them ``vector=N`` (sm_90: one PTX vector atom for N
elements, f16 and bf16 too, as Triton's ``atom.add.noftz.v8.bf16``). The fences
cost far more: a split-K matmul's atomic_add epilogue, two ``membar.gl`` an
element, ran at 0.30x of Triton on the H200.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element, c_literal
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.spelling import CUDA, SCOPE_FENCES
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.slots import SlotLoop, linear_index
from mytriton.ir.ssa import Op, walk
from mytriton.types import BF16, BOOL, F16, F64, ScalarType, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

_FUNCTIONS = {"add": "atomicAdd", "max": "atomicMax", "min": "atomicMin", "and": "atomicAnd",
              "or": "atomicOr", "xor": "atomicXor", "xchg": "atomicExch", "cas": "atomicCAS"}
_SCOPE_SUFFIX = {"gpu": "", "cta": "_block", "sys": "_system"}
_U64 = "unsigned long long"
# The C functions atomics call (a parameter of that name would hide one: names.py renames it).
ATOMIC_CALLED = frozenset([f + suffix for f in _FUNCTIONS.values() for suffix in _SCOPE_SUFFIX.values()]
                          + ["signbit", "__builtin_bit_cast", "reinterpret_cast",
                             "__threadfence", "__threadfence_block", "__threadfence_system"])


def _carrier(kind: str, t: ScalarType) -> str:
    """The C type of CUDA's overload that ``kind`` on ``t`` goes through."""
    if t.is_float and kind in ("add", "xchg") and t.bits == 32:
        return "float"
    if t.is_float and kind == "add":
        return {F64: "double", BF16: "__nv_bfloat16"}.get(t, "__half")
    if t.bits == 64:
        if kind in ("max", "min") and t.is_int:
            return _U64 if t.unsigned else "long long"
        return _U64
    if t.is_float or t.unsigned:
        return "unsigned int"
    return "int"


def _call(function: str, scope: str, t: ScalarType, carrier: str, ptr: str, args: list[str]) -> str:
    suffix = "" if t in (F16, BF16) else _SCOPE_SUFFIX[scope]
    own = CUDA.scalar_type(t)
    if carrier == own:
        return f"{function}{suffix}({ptr}, {', '.join(args)})"
    cast_args = ", ".join(f"__builtin_bit_cast({carrier}, {a})" for a in args)
    return f"__builtin_bit_cast({own}, {function}{suffix}(reinterpret_cast<{carrier}*>({ptr}), {cast_args}))"


def _float_max_min(kind: str, scope: str, t: ScalarType, ptr: str, value: str) -> str:
    """max/min of a float by the integer order of its bits (Triton's lowering)."""
    signed, unsigned = ("long long", _U64) if t == F64 else ("int", "unsigned int")
    pos, neg = ("atomicMax", "atomicMin") if kind == "max" else ("atomicMin", "atomicMax")
    return (f"(!signbit({value}) ? {_call(pos, scope, t, signed, ptr, [value])} "
            f": {_call(neg, scope, t, unsigned, ptr, [value])})")


def atomic_expr(op: Op, ptr: str, args: list[str]) -> str:
    """The C call applying ``op`` to one element at ``ptr`` (``args``
    already of the pointee type); its value is the old element."""
    t = element_of(op.results[0].type)
    kind = op.attrs.get("kind", "cas")
    scope = op.attrs["scope"]
    if kind in ("max", "min") and t.is_float:
        return _float_max_min(kind, scope, t, ptr, args[0])
    return _call(_FUNCTIONS[kind], scope, t, _carrier(kind, t), ptr, args)


# PTX's atom: the operation per kind, the type and asm constraint per element type.
_PTX_OPS = {"add": "add", "max": "max", "min": "min", "and": "and", "or": "or", "xor": "xor", "xchg": "exch",
            "cas": "cas"}
_BITWISE = ("and", "or", "xor", "xchg", "cas")


def _ptx_type(kind: str, t: ScalarType) -> str | None:
    """The ``atom`` type of ``kind`` on ``t``, or None where CUDA's function stays."""
    if t.is_float:
        return {32: "f32", 64: "f64"}.get(t.bits) if kind == "add" else None
    if t.bits not in (32, 64) or t == BOOL:
        return None
    if kind in _BITWISE:
        return f"b{t.bits}"
    if kind == "add":
        return f"u{t.bits}"  # two's complement: the same bits signed or not
    return f"{'u' if t.unsigned else 's'}{t.bits}"


def _constraint(t: ScalarType) -> str:
    if t.is_float:
        return "f" if t.bits == 32 else "d"
    return "r" if t.bits == 32 else "l"


def ordered_atom(op: Op, target: str, ptr: str, args: list[str]) -> str | None:
    """``target = *ptr (op) args`` as one PTX ``atom`` carrying the op's order
    and scope, or None where it has no such form here."""
    sem = op.attrs["sem"]
    t = element_of(op.results[0].type)
    kind = op.attrs.get("kind", "cas")
    if sem != "relaxed" and kind == "add" and t in (F16, BF16):
        return f"{target} = {CUDA.ordered_half_add(sem, op.attrs['scope'], t, ptr, args[0])};"
    ptx_type = _ptx_type(kind, t)
    if sem == "relaxed" or ptx_type is None:
        return None
    c = _constraint(t)
    operands = ", ".join(f"%{i + 2}" for i in range(len(args)))
    inputs = ", ".join(f'"{c}"({a})' for a in args)
    # .global: a generic address makes ptxas test for shared memory at every
    # element (a CAS loop on that path); tl's pointers are all global.
    return (f'asm volatile("atom.{sem}.{op.attrs["scope"]}.global.{_PTX_OPS[kind]}.{ptx_type} %0, [%1], {operands};" '
            f': "={c}"({target}) : "l"({ptr}), {inputs} : "memory");')


def apply_atomic(op: Op, target: str, ptr: str, args: list[str]) -> str:
    """``target = `` the old element, ``op`` applied at ``ptr`` with the order it asks for."""
    return ordered_atom(op, target, ptr, args) or fenced(op, target, atomic_expr(op, ptr, args))


def fenced(op: Op, target: str, call: str) -> str:
    """``target = call;`` between the fences ``sem`` asks for."""
    sem, fence = op.attrs["sem"], SCOPE_FENCES[op.attrs["scope"]]
    before = fence + " " if sem in ("release", "acq_rel") else ""
    after = " " + fence if sem in ("acquire", "acq_rel") else ""
    return f"{before}{target} = {call};{after}"


def _operand_args(op: Op, args: list) -> tuple[str, list[str], str | None]:
    """The pointer, the value operands in the pointee type, and the mask (C)."""
    t = element_of(op.results[0].type)
    if op.name == "atomic_cas":
        ptr, cmp, value = args
        return ptr.expr, [as_type(cmp, t), as_type(value, t)], None
    ptr, value, mask = args
    return ptr.expr, [as_type(value, t)], (as_type(mask, BOOL) if mask is not None else None)


def emit_scalar_atomic(em: "EmitContext", op: Op, args: list) -> None:
    """Thread 0 applies it; the old value reaches every thread through shared memory."""
    result = op.results[0]
    t = element_of(result.type)
    ctype = c_element(result.type)
    ptr, values, mask = _operand_args(op, args)
    slot = f"(*reinterpret_cast<{ctype}*>(smem))"
    condition = f"{em.lang.thread_id} == 0" + (f" && {mask}" if mask else "")
    em.scratch_fence(em.where(op))
    em.line(f"if ({condition}) {{ {apply_atomic(op, slot, ptr, values)} }}")
    if mask:
        em.line(f"else if ({em.lang.thread_id} == 0) {slot} = {_zero(t)};  // masked off: 0")
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    em.line(em.lang.barrier)
    em.line(f"const {ctype} {em.name(result)} = {slot};")
    em.need_shared(max(t.nbytes, 4), op)


def _vector_atom(em: "EmitContext", op: Op, ptr: str, value: str, storage: str, loop: SlotLoop,
                 declare: list[str], conditions: list[str]) -> tuple[list[str], str]:
    """``vector=N`` (the layouts stage proved each run of N consecutive slots
    contiguous, aligned and under one mask value): the run's values are
    staged, and its last slot adds all N with one PTX vector ``atom`` (f32,
    f16 or bf16, sm_90), whose old values fill the run's slots. The slot loop
    unrolls, so ``k`` is a constant and the staging arrays live in registers.
    f16 and bf16 go as their 16-bit patterns (the ``h`` registers), as
    Triton's ``atom.add.noftz.v8.bf16``."""
    n = op.attrs["vector"]
    t = element_of(op.results[0].type)
    em.vector_stores += 1
    buffer = f"w{em.vector_stores}_at"  # the shape of a local (names.py keeps user names apart)
    sem, scope = op.attrs["sem"], op.attrs["scope"]
    # relaxed is PTX's default order, and a qualifier only some releases accept
    order = "" if sem == "relaxed" else f".{sem}"
    olds = ", ".join(f"%{i}" for i in range(n))
    adds = ", ".join(f"%{n + 1 + i}" for i in range(n))
    address = f'"l"(({ptr}) - {n - 1})'
    slot = [f"{storage}[{loop.index} - {n - 1 - i}]" for i in range(n)]
    if t.bits == 32:
        declare.append(f"float {buffer}[{n}];")
        loop.lines.append(f"{buffer}[{loop.index} % {n}] = {value};")
        outputs = ", ".join(f'"=f"({s})' for s in slot)
        inputs = ", ".join(f'"f"({buffer}[{i}])' for i in range(n))
        return [f"{loop.index} % {n} == {n - 1}"] + conditions, (
            f'asm volatile("atom{order}.{scope}.global.add.v{n}.f32 {{{olds}}}, [%{n}], {{{adds}}};" '
            f': {outputs} : {address}, {inputs} : "memory");')
    half = CUDA.scalar_type(t)
    declare.append(f"unsigned short {buffer}[{n}];")
    declare.append(f"unsigned short {buffer}_old[{n}];")
    loop.lines.append(f"{buffer}[{loop.index} % {n}] = __builtin_bit_cast(unsigned short, {value});")
    outputs = ", ".join(f'"=h"({buffer}_old[{i}])' for i in range(n))
    inputs = ", ".join(f'"h"({buffer}[{i}])' for i in range(n))
    back = " ".join(f"{s} = __builtin_bit_cast({half}, {buffer}_old[{i}]);" for i, s in enumerate(slot))
    ptx = "bf16" if t == BF16 else "f16"
    return [f"{loop.index} % {n} == {n - 1}"] + conditions, (
        f'asm volatile("atom{order}.{scope}.global.add.noftz.v{n}.{ptx} {{{olds}}}, [%{n}], {{{adds}}};" '
        f': {outputs} : {address}, {inputs} : "memory"); {back}')


def _zero(t: ScalarType) -> str:
    return c_literal(0.0 if t.is_float else 0, t)


@renders("atomic")
def render_tile_atomic(em: "EmitContext", group: Group) -> None:
    emit_tile_atomic(em, group.ops[0], group.domain)


def emit_tile_atomic(em: "EmitContext", op: Op, domain) -> None:
    """Each owned element once; copies of an element read its old value back
    through shared memory."""
    result = op.results[0]
    t = element_of(result.type)
    ctype = c_element(result.type)
    storage = em.storage[result]
    loop = em.open_loop(domain, op)
    coords = loop.coords()
    ptr, values, mask = _operand_args(op, [loop.value(o, coords) for o in op.operands])
    owner = loop.owner()
    conditions = [c for c in (owner, mask) if c]
    declare = [f"{ctype} {storage}[{domain.slots}];"]
    loop.lines.append(f"{storage}[k] = {_zero(t)};")
    if "vector" in op.attrs:
        conditions, apply = _vector_atom(em, op, ptr, values[0], storage, loop, declare, conditions)
    else:
        apply = apply_atomic(op, f"{storage}[k]", ptr, values)
    loop.lines.append(f"if ({' && '.join(conditions)}) {{ {apply} }}" if conditions else apply)
    where = f" @{op.loc.line}" if op.loc else ""
    em.close_loop(loop, f"{op.name}{where} over {em.parent_name(domain.parent)} ({domain.slots} slot(s) per thread), "
                        "each element by its owner", declare)
    if owner is None or not any(result in user.operands for user in walk(em.kernel.body)):
        return
    # Copies of an element on spare threads take its owner's old value.
    shared = "s" + em.name(result)[1:]
    with em.out.scope("{  // the old values, from each element's owner to its copies"):
        em.scratch_fence()
        em.line(f"{ctype}* const {shared} = reinterpret_cast<{ctype}*>(smem);")
        for direction in ("write", "read"):
            loop = SlotLoop(em, domain)
            index = linear_index([loop.use(c) for c in loop.coords()], result.type.shape)
            if direction == "write":
                loop.lines.append(f"if ({loop.owner()}) {shared}[{index}] = {storage}[k];")
            else:
                loop.lines.append(f"{storage}[k] = {shared}[{index}];")
            em.line(em.lang.unroll)
            em.line(f"for (int k = 0; k < {domain.slots}; ++k) {{")
            for text in loop.body():
                em.line("  " + text)  # the emitter's indent
            em.line("}")
            if direction == "write":
                # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
                em.line(em.lang.barrier)
    em.need_shared(result.type.numel * max(t.nbytes, 1), op)

