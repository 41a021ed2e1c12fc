"""The MLIR back end's op table: how each SSA op becomes upstream MLIR.

Keyed by op name, as ``backends/cuda/expressions.py`` is for CUDA. Elementwise
ops are spelled here on scalars (``scalar_op``): the emitter applies them to
one element at a time, so every type the op table allows lowers the same way
on scalars and tiles. The ops with structure (loads, stores, reductions, dots,
shape ops, loops) are written by ``emitter.py``; ``STRUCTURED`` says how.
``REFUSED`` lists the ops this back end does not cover yet: they are a located
error, as is any op missing from this table (an op added to ``opdefs.py``
later, such as the atomics, until it gets a row here).

Integers are signless in MLIR: the op (``divsi``/``divui``, ``cmpi slt``/
``ult``, ``extsi``/``extui``) says how an unsigned one is read. f16 and bf16
math functions compute in f32 and round back, as the CUDA back end does.
"""
from __future__ import annotations

from typing import Callable

from mytriton.backends.mlir.text import Writer, conversion_op, joined, literal, scalar_type
from mytriton.diagnostics import Location
from mytriton.ir import math_functions
from mytriton.types import BF16, BOOL, F16, F32, I64, ScalarType

# name -> (float op, signed integer op, unsigned integer op); None where the
# type rules leave no such operands (``/`` of integers computes in f32).
BINARY: dict[str, tuple[str | None, str | None, str | None]] = {
    "add": ("arith.addf", "arith.addi", "arith.addi"),
    "sub": ("arith.subf", "arith.subi", "arith.subi"),
    "mul": ("arith.mulf", "arith.muli", "arith.muli"),
    "div": ("arith.divf", "arith.divsi", "arith.divui"),
    "div_rn": ("arith.divf", None, None),  # arith.divf is IEEE division, rounded to nearest even
    "floordiv": (None, "arith.divsi", "arith.divui"),  # rounds toward zero, as C (and the interpreter)
    "mod": (None, "arith.remsi", "arith.remui"),  # the dividend's sign, as C's %
    # Triton's default (a number beats NaN, CUDA's fmaxf) and PropagateNan.ALL.
    "maximum": ("arith.maxnumf", "arith.maxsi", "arith.maxui"),
    "minimum": ("arith.minnumf", "arith.minsi", "arith.minui"),
    "maximum_nan": ("arith.maximumf", "arith.maxsi", "arith.maxui"),
    "minimum_nan": ("arith.minimumf", "arith.minsi", "arith.minui"),
    "and": (None, "arith.andi", "arith.andi"),
    "or": (None, "arith.ori", "arith.ori"),
    "xor": (None, "arith.xori", "arith.xori"),
    "shl": (None, "arith.shli", "arith.shli"),
    "shr": (None, "arith.shrsi", "arith.shrui"),
}

# cmp_* -> (arith.cmpf predicate, signed cmpi predicate, unsigned cmpi predicate).
# Ordered float predicates, and une for !=, as C compares (NaN != x holds).
COMPARE: dict[str, tuple[str, str, str]] = {
    "cmp_lt": ("olt", "slt", "ult"),
    "cmp_le": ("ole", "sle", "ule"),
    "cmp_gt": ("ogt", "sgt", "ugt"),
    "cmp_ge": ("oge", "sge", "uge"),
    "cmp_eq": ("oeq", "eq", "eq"),
    "cmp_ne": ("une", "ne", "ne"),
}

# Math functions of one float (the tl group of ir/math_functions.py); one
# with no math-dialect op (sigmoid) is written out as its formula.
MATH: dict[str, str] = {row.name: row.expanded or row.mlir_op for row in math_functions.TABLE if row.tl}

# Other elementwise ops, spelled in ``scalar_op``.
OTHER_ELEMENTWISE = {
    "neg": "arith.negf, or 0 - x (arith.subi)",
    "abs": "math.absf / math.absi",
    "not": "arith.xori with all ones (true for i1)",
    "where": "arith.select",
    "cast": "the arith conversion between the two types (convert)",
    "bitcast": "arith.bitcast",
    "hint": "the value itself",
    "broadcast_to": "the value itself, read at broadcast coordinates",
    "full": "the value, converted to the dtype",
    "addptr": "arith.addi on the i64 element offset from the pointer's parameter",
    "fma": "math.fma",
    "clamp": "arith.minnumf(arith.maxnumf(x, lo), hi)",
    "clamp_nan": "clamp, then arith.select of x where x is NaN (arith.cmpf uno)",
    "umulhi": "both operands widened (arith.extui), multiplied, shifted right (arith.shrui), truncated",
    "program_id": "gpu.block_id, arith.index_cast to i32",
    "num_programs": "gpu.grid_dim, arith.index_cast to i32",
}

# Ops the emitter writes with structure of their own, and how.
STRUCTURED: dict[str, str] = {
    "load": "per element: memref.load at the pointer's offset, under scf.if where masked (else `other`)",
    "store": "per element: memref.store at the pointer's offset, under scf.if where masked",
    "arange": "arith.constant dense<[start, ..., end - 1]>",
    "expand_dims": "per element: the operand read without the new axis",
    "sum": "scf.for over the reduced axis carrying the accumulator (arith.addf / arith.addi)",
    "max": "scf.for over the reduced axis carrying the accumulator (arith.maxnumf / maxsi / maxui)",
    "min": "scf.for over the reduced axis carrying the accumulator (arith.minnumf / minsi / minui)",
    "dot": "per result element: scf.for over K carrying the sum of math.fma",
    "dot_shared": "as dot, reading both operands with memref.load from the shared buffers",
    "dot_rs": "as dot, reading b with memref.load from its shared buffer",
    "shared_alloc": "memref.global in workgroup memory (address space 3) and memref.get_global",
    "copy_to_shared": "per buffer element: a guarded memref.load from global memory, memref.store into the buffer",
    "copy_strided_to_shared": "as copy_to_shared, the coordinates wrapped by arith.remsi, columns scaled by their stride",
    "copy_gathered_to_shared": "as copy_strided_to_shared, each row's index a guarded memref.load of the index array",
    "barrier": "gpu.barrier",
    "for": "scf.for with iter_args on the loop's index type (a runtime step <= 0 runs no iteration, as on the GPU)",
    "yield": "scf.yield",
    "if": "scf.if with results",
    "while": "scf.while: its before region is the condition region, scf.condition forwarding the carried values",
    "condition": "scf.condition(cond) with the condition region's arguments",
    "convert_layout": "the value itself (tiles are vectors: layouts are not this back end's business)",
    "trans": "per element: the operand read at swapped coordinates",
    "permute": "per element: the operand read at permuted coordinates",
    "reshape": "per element: the operand read at row-major re-indexed coordinates",
    "split": "per element: the operand read with the half's index as the last coordinate",
    "join": "per element: a or b (arith.select on the last coordinate) at the leading coordinates",
}

# Ops this back end refuses (a located error), and why.
REFUSED: dict[str, str] = {
    "device_print": "printing from the device is not covered by the MLIR back end yet (gpu.printf)",
    "device_assert": "device assertions are not covered by the MLIR back end yet",
}
# A pipelined K loop (the software-pipeline pass) is not lowered yet: `compile --emit=mlir`
# stages dots unpipelined; staged SSA from `stage-dots --num-stages 1` reads too.
PIPELINED = ("shared_alloc_stages", "stage_view", "async_copy_to_shared", "async_copy_strided_to_shared",
             "async_copy_gathered_to_shared", "async_commit", "async_wait", "wgmma_wait", "proxy_fence")
REFUSED.update({name: "pipelined K loops are not covered by the MLIR back end yet (stage with --num-stages 1)"
                for name in PIPELINED})
REFUSED["store_tile"] = "TMA stores (the CUDA layouts stage's tma-stores) are not covered by the MLIR back end"
REFUSED["histogram"] = "tl.histogram is not covered by the MLIR back end yet"
REFUSED["gather"] = "tl.gather is not covered by the MLIR back end yet"
REFUSED.update({name: "inline PTX (tl.inline_asm_elementwise) has no upstream MLIR op this back end writes"
                for name in ("inline_asm", "inline_asm_volatile")})
REFUSED.update({name: "grid dependency control (tl.extra.cuda.gdc_*) is not covered by the MLIR back end yet"
                for name in ("grid_dependency_wait", "grid_dependency_launch_dependents")})
# libdevice's functions that upstream MLIR has no op for: a stated refusal.
REFUSED.update({row.name: row.mlir_refused for row in math_functions.TABLE if row.mlir_refused})
# A pointer is an offset into its parameter's memref here: an address from memory has none.
REFUSED.update({name: "pointers from memory (int_to_ptr, ptr_to_int) are not covered by the MLIR back end"
                for name in ("int_to_ptr", "ptr_to_int")})


# libdevice's functions that upstream math or arith has, per element; f16
# and bf16 compute in f32 and round back once.
LIBDEVICE: dict[str, str] = {row.name: row.mlir_op for row in math_functions.TABLE
                             if not row.tl and row.answers == "float" and not row.mlir_refused}
# libdevice's predicates and llrint, written by hand in ``scalar_op``.
LIBDEVICE_OTHER: dict[str, str] = {
    "isnan": "arith.cmpf uno, x, x",
    "isinf": "arith.cmpf oeq, math.absf(x), inf",
    "signbit": "arith.bitcast to the integer of its width, arith.cmpi slt 0",
    "llrint": "math.roundeven, arith.fptosi to i64 where it is inside i64's range, else i64's max or min "
              "(NaN: min), as libdevice's llrint saturates",
}


# The atomics: per element, under scf.if where masked (0 where off).
# memref.atomic_rmw is printed in MLIR's generic form (xDSL 0.75 has no custom
# syntax for it), its kind the arith.atomic_rmw_kind enum's integer as upstream
# MLIR numbers it today (mlir/Dialect/Arith/IR/ArithBase.td, with xori).
ATOMIC_RMW_KINDS: dict[str, int] = {
    "addf": 0, "addi": 1, "andi": 2, "assign": 3, "maximumf": 4, "maxnumf": 5, "maxs": 6, "maxu": 7,
    "minimumf": 8, "minnumf": 9, "mins": 10, "minu": 11, "mulf": 12, "muli": 13, "ori": 14, "xori": 15,
}
# tl.atomic_<kind> -> (float kind, signed integer kind, unsigned integer kind)
ATOMIC_KIND: dict[str, tuple[str | None, str | None, str | None]] = {
    "add": ("addf", "addi", "addi"),
    "max": ("maxnumf", "maxs", "maxu"),
    "min": ("minnumf", "mins", "minu"),
    "and": (None, "andi", "andi"),
    "or": (None, "ori", "ori"),
    "xor": (None, "xori", "xori"),
    "xchg": ("assign", "assign", "assign"),
}
MEMORY: dict[str, str] = {
    "atomic_rmw": "per element: \"memref.atomic_rmw\" (addf/addi, maxnumf/maxs/maxu, minnumf/mins/minu, "
                  "andi, ori, xori, assign) on the pointer's parameter, under scf.if where masked (0 where off); "
                  "sem and scope have no upstream spelling (upstream lowers memref atomics acq_rel)",
    "atomic_cas": "per element: \"memref.generic_atomic_rmw\" whose body selects value where the current "
                  "element equals cmp (floats compared by their bits)",
}


def lowering(name: str) -> str | None:
    """How this back end lowers the op ``name``: "elementwise", "structured"
    or "refused"; None where it has no lowering."""
    if name in REFUSED:
        return "refused"
    if name in BINARY or name in COMPARE or name in MATH or name in OTHER_ELEMENTWISE:
        return "elementwise"
    if name in LIBDEVICE or name in LIBDEVICE_OTHER:
        return "elementwise"
    if name in STRUCTURED or name in MEMORY:
        return "structured"
    if name in REFUSED:
        return "refused"
    return None


# ---- scalars -------------------------------------------------------------------------------


def constant(w: Writer, value: bool | int | float, t: ScalarType, loc: Location | None) -> str:
    if t == BOOL:  # a bool attribute has its type (i1) built in
        return w.op(f"arith.constant {literal(value, t)}", loc)
    return w.op(f"arith.constant {literal(value, t)} : {scalar_type(t)}", loc)


def convert(w: Writer, x: str, source: ScalarType, target: ScalarType, loc: Location | None) -> str:
    """The arith ops converting the scalar ``x`` from ``source`` to ``target``
    as C and Triton convert: to bool by comparing with zero, from bool as
    0 or 1, integers by their signedness, floats to integers toward zero."""
    if source == target:
        return x
    s, t = scalar_type(source), scalar_type(target)
    if target == BOOL:
        zero = constant(w, 0, source, loc)
        if source.is_float:
            return w.op(f"arith.cmpf une, {x}, {zero} : {s}", loc)
        return w.op(f"arith.cmpi ne, {x}, {zero} : {s}", loc)
    if {source, target} == {F16, BF16}:  # no direct conversion: through f32
        return convert(w, convert(w, x, source, F32, loc), F32, target, loc)
    op = conversion_op(source, target)
    return x if op is None else w.op(f"{op} {x} : {s} to {t}", loc)  # None: signless, the same bits


def _pick(ops: tuple[str | None, ...], t: ScalarType, name: str) -> str:
    op = ops[0] if t.is_float else ops[2] if t.unsigned else ops[1]
    assert op is not None, f"the type rules give '{name}' no {t} operands"
    return op


# One element of an elementwise op, by op: (writer, op name, operands already
# converted to the type computed in, that type, location, its spelled type)
# -> the result's name. Filled by @scalar_lowering.
ScalarLowering = Callable[[Writer, str, list[str], ScalarType, "Location | None", str], str]
SCALAR: dict[str, ScalarLowering] = {}


def scalar_lowering(*names: str) -> Callable[[ScalarLowering], ScalarLowering]:
    """Registers the decorated function as one element of the ops ``names``."""
    def register(fn: ScalarLowering) -> ScalarLowering:
        for name in names:
            assert name not in SCALAR, f"'{name}' has two scalar lowerings"
            SCALAR[name] = fn
        return fn

    return register


def scalar_op(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None,
              spelled: str | None = None) -> str:
    """One element of the elementwise op ``name``, its operands ``args``
    already converted to ``t``, the type it computes in (for comparisons, the
    operands' promoted type; for ``where``, the condition is i1). With
    ``spelled`` (a vector type of ``t``), the binary, comparison, math, neg
    and abs ops apply to whole vectors of that type."""
    return SCALAR[name](w, name, args, t, loc, spelled or scalar_type(t))


@scalar_lowering(*COMPARE)
def _compare(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    pred = _pick(COMPARE[name], t, name) if t != BOOL else COMPARE[name][2]  # bools compare as 0 and 1
    op = "arith.cmpf" if t.is_float else "arith.cmpi"
    return w.op(f"{op} {pred}, {args[0]}, {args[1]} : {ty}", loc)


@scalar_lowering(*BINARY)
def _binary(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    if t == BOOL and name in ("and", "or", "xor", "maximum", "minimum", "maximum_nan", "minimum_nan"):
        # min/max of i1: unsigned, so true is the larger
        op = {"maximum": "arith.maxui", "minimum": "arith.minui", "maximum_nan": "arith.maxui",
              "minimum_nan": "arith.minui"}.get(name, BINARY[name][1])
    else:
        op = _pick(BINARY[name], t, name)
    return w.op(f"{op} {args[0]}, {args[1]} : {ty}", loc)


@scalar_lowering("neg")
def _neg(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    if t.is_float:
        return w.op(f"arith.negf {args[0]} : {ty}", loc)
    return w.op(f"arith.subi {constant(w, 0, t, loc)}, {args[0]} : {ty}", loc)


@scalar_lowering("abs")
def _abs(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    if t.is_float:
        return w.op(f"math.absf {args[0]} : {ty}", loc)
    if t.unsigned or t == BOOL:
        return args[0]
    return w.op(f"math.absi {args[0]} : {ty}", loc)


@scalar_lowering("not")
def _not(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    ones = constant(w, True if t == BOOL else -1, t, loc)
    return w.op(f"arith.xori {args[0]}, {ones} : {ty}", loc)


@scalar_lowering("where")
def _where(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    return w.op(f"arith.select {args[0]}, {args[1]}, {args[2]} : {ty}", loc)


@scalar_lowering("hint", "broadcast_to", "full")
def _same_value(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    return args[0]


@scalar_lowering("fma")
def _fma(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    return _in_f32(w, t, args, loc, lambda a, ft: w.op(f"math.fma {a[0]}, {a[1]}, {a[2]} : {ft}", loc))


@scalar_lowering("clamp", "clamp_nan")
def _clamp(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    low = w.op(f"arith.maxnumf {args[0]}, {args[1]} : {ty}", loc)
    out = w.op(f"arith.minnumf {low}, {args[2]} : {ty}", loc)
    if name == "clamp":
        return out
    nan = w.op(f"arith.cmpf uno, {args[0]}, {args[0]} : {ty}", loc)
    return w.op(f"arith.select {nan}, {args[0]}, {out} : {ty}", loc)


@scalar_lowering(*LIBDEVICE)
def _libdevice(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    spelled_op = LIBDEVICE[name]
    return _in_f32(w, t, args, loc, lambda a, ft: w.op(f"{spelled_op} {joined(a)} : {ft}", loc))


@scalar_lowering("isnan")
def _isnan(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    return w.op(f"arith.cmpf uno, {args[0]}, {args[0]} : {ty}", loc)


@scalar_lowering("isinf")
def _isinf(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    magnitude = w.op(f"math.absf {args[0]} : {ty}", loc)
    inf = constant(w, float("inf"), t, loc)
    return w.op(f"arith.cmpf oeq, {magnitude}, {inf} : {ty}", loc)


@scalar_lowering("signbit")
def _signbit(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    it = f"i{t.bits}"
    bits = w.op(f"arith.bitcast {args[0]} : {ty} to {it}", loc)
    zero = w.op(f"arith.constant 0 : {it}", loc)
    return w.op(f"arith.cmpi slt, {bits}, {zero} : {it}", loc)


@scalar_lowering("umulhi")
def _umulhi(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    wide = f"i{2 * t.bits}"
    a = w.op(f"arith.extui {args[0]} : {ty} to {wide}", loc)
    b = w.op(f"arith.extui {args[1]} : {ty} to {wide}", loc)
    product = w.op(f"arith.muli {a}, {b} : {wide}", loc)
    shift = w.op(f"arith.constant {t.bits} : {wide}", loc)
    high = w.op(f"arith.shrui {product}, {shift} : {wide}", loc)
    return w.op(f"arith.trunci {high} : {wide} to {ty}", loc)


@scalar_lowering("llrint")
def _llrint(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    """x to the nearest integer (halves to even) as i64, saturating, NaN i64's
    minimum: arith.fptosi of a value outside i64 is poison, so it is chosen
    only inside the range."""
    x = args[0]
    wide = convert(w, x, t, F32, loc) if t in (F16, BF16) else x
    ft = "f32" if t in (F16, BF16) else scalar_type(t)
    whole = w.op(f"math.roundeven {wide} : {ft}", loc)
    low = w.op(f"arith.constant {literal(-2.0 ** 63, F32 if ft == 'f32' else t)} : {ft}", loc)
    high = w.op(f"arith.constant {literal(2.0 ** 63, F32 if ft == 'f32' else t)} : {ft}", loc)
    above_low = w.op(f"arith.cmpf oge, {whole}, {low} : {ft}", loc)
    below_high = w.op(f"arith.cmpf olt, {whole}, {high} : {ft}", loc)
    inside = w.op(f"arith.andi {above_low}, {below_high} : i1", loc)
    converted = w.op(f"arith.fptosi {whole} : {ft} to i64", loc)
    zero = w.op(f"arith.constant 0.0 : {ft}", loc)
    positive = w.op(f"arith.cmpf ogt, {whole}, {zero} : {ft}", loc)
    top = w.op("arith.constant 9223372036854775807 : i64", loc)
    bottom = w.op("arith.constant -9223372036854775808 : i64", loc)
    saturated = w.op(f"arith.select {positive}, {top}, {bottom} : i64", loc)
    return w.op(f"arith.select {inside}, {converted}, {saturated} : i64", loc)


def _in_f32(w: Writer, t: ScalarType, args: list[str], loc: Location | None,
            body: Callable[[list[str], str], str]) -> str:
    """``body`` computed in f32 for f16 and bf16 (rounded back once), else in ``t``."""
    if t not in (F16, BF16):
        return body(args, scalar_type(t))
    wide = [convert(w, a, t, F32, loc) for a in args]
    return convert(w, body(wide, "f32"), F32, t, loc)


@scalar_lowering(*(name for name in MATH if name != "sigmoid"))
def _math(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    if t not in (F16, BF16):
        return w.op(f"{MATH[name]} {args[0]} : {ty}", loc)
    return _in_f32(w, t, args, loc, lambda a, ft: w.op(f"{MATH[name]} {a[0]} : {ft}", loc))


@scalar_lowering("sigmoid")
def _sigmoid(w: Writer, name: str, args: list[str], t: ScalarType, loc: Location | None, ty: str) -> str:
    def body(a: list[str], ft: str) -> str:
        neg = w.op(f"arith.negf {a[0]} : {ft}", loc)
        e = w.op(f"math.exp {neg} : {ft}", loc)
        one = w.op(f"arith.constant 1.0 : {ft}", loc)
        denominator = w.op(f"arith.addf {one}, {e} : {ft}", loc)
        return w.op(f"arith.divf {one}, {denominator} : {ft}", loc)

    return _in_f32(w, t, args, loc, body)


def reduce_combine(w: Writer, name: str, a: str, b: str, t: ScalarType, loc: Location | None) -> str:
    op = {"sum": "add", "max": "maximum", "min": "minimum"}[name]
    return scalar_op(w, op, [a, b], t, loc)


def reduce_identity(name: str, t: ScalarType) -> bool | int | float:
    if name == "sum":
        return 0
    if t.is_float:
        return float("-inf") if name == "max" else float("inf")
    low, high = t.int_range
    return low if name == "max" else high


OFFSET = I64  # a pointer is its parameter's memref and an i64 element offset


# reduce and scan with a combine region (tl.reduce, tl.associative_scan, tl.cumsum, tl.argmax...).
REFUSED.update({name: f"'{name}' with a combine function (tl.reduce, tl.associative_scan, tl.cumsum, tl.argmax) "
                      "is not covered by the MLIR back end"
                for name in ("reduce", "scan")})
