"""C expressions for ops on one element: the CUDA renderer's op table.

Which ops are expressions, statements or refused is kept here, keyed by op;
every spelling (operators aside) comes from the target-language object
(``spelling.py``), whose ``math_f32`` holds the math functions.

``render(op, args)`` spells one element of ``op``'s result given its operands
(already C expressions of known element types, literals, or None). Operands
are converted to the type the op computes in; half-precision values compute
in f32 and are rounded back, as Triton does.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.ctypes import c_cast, c_literal
from mytriton.backends.cuda.spelling import CUDA, GLOBAL_POINTER
from mytriton.diagnostics import CompileError
from mytriton.ir import inline_asm, math_functions
from mytriton.ir.opdefs import CMP_OPS, LIBDEVICE_OPS, MATH_FUNCTIONS, device_print_label
from mytriton.ir.ssa import Const, Op
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I32, I64, PointerType, ScalarType, WeakType, concrete, element_of, promote,
)


@dataclass(frozen=True)
class CValue:
    """A C expression and the element type it has."""

    expr: str
    type: ScalarType | PointerType


Arg = CValue | Const | None

_CMP = {"cmp_lt": "<", "cmp_le": "<=", "cmp_gt": ">", "cmp_ge": ">=", "cmp_eq": "==", "cmp_ne": "!="}
_HALF_ARITH = {"add": "__hadd_rn", "sub": "__hsub_rn", "mul": "__hmul_rn"}
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "/", "mod": "%", "xor": "^",
           "shl": "<<", "shr": ">>"}
# Math functions, computed in f32: one spelling per op of the op table's
# math group, in the language object (from ir/math_functions.py's rows).
MATH_SPELLINGS = CUDA.math_f32

# Math, spelled by the language object's methods (opdefs.py's "math and
# dtypes" section): op -> the method and whether it propagates NaN.
_NAN_AWARE = {"maximum_nan": "maximum", "minimum_nan": "minimum"}
_LANGUAGE_OPS = ("maximum_nan", "minimum_nan", "clamp", "clamp_nan", "fma", "div_rn", "umulhi")

# Ops whose one element ``render`` spells, besides the math functions.
EXPRESSION_OPS = frozenset({
    "program_id", "num_programs", "full", "addptr", "cast", "where", *_CMP, *_BINARY,
    "neg", "abs", "not", "maximum", "minimum", "and", "or", "hint", "bitcast", "broadcast_to", *_LANGUAGE_OPS,
    *LIBDEVICE_OPS, "int_to_ptr", "ptr_to_int", "inline_asm", "inline_asm_volatile",
})
# libdevice ops whose result type is not the type they compute in (that of their operand).
_LIBDEVICE_ANSWERS = {row.name: {"bool": BOOL, "i64": I64}[row.answers]
                      for row in math_functions.TABLE if row.answers != "float"}

# Ops the emitter writes as statements of their own rather than as one
# element's expression, and where.
STATEMENT_OPS = {
    "load": "emitter.py: a guarded read of the tile (load_expr)",
    "store": "emitter.py: a guarded write of the tile",
    "arange": "slots.py: each element's index along the tile",
    "expand_dims": "slots.py: a re-indexing of its operand",
    "sum": "reductions.py, with reduce_identity and reduce_combine",
    "max": "reductions.py, with reduce_identity and reduce_combine",
    "min": "reductions.py, with reduce_identity and reduce_combine",
    "dot": "dots.py: operands through shared scratch, then an FMA loop",
    "dot_shared": "dots.py: a product of two shared buffers",
    "dot_rs": "dots.py: a register tile times a shared buffer (wgmma.py: A from registers on Hopper)",
    "shared_alloc": "dots.py: a pointer into the dynamic shared array at kernel scope",
    "copy_to_shared": "dots.py: a cooperative copy",
    "barrier": "emitter.py: __syncthreads()",
    "grid_dependency_wait": "grid_dependency.py: griddepcontrol.wait (sm_90 and later; nothing before)",
    "grid_dependency_launch_dependents": "grid_dependency.py: griddepcontrol.launch_dependents (sm_90 and later; "
                                         "nothing before)",
    "shared_alloc_stages": "dots.py: a pointer into the dynamic shared array holding every stage",
    "stage_view": "dots.py: a pointer to one stage of its buffer (emit_async)",
    "async_copy_to_shared": "dots.py: cp.async of 16, 8 or 4 bytes per chunk, zero-filled past the bounds; "
                            "tma.py: with engine=\"tma\", one thread's cp.async.bulk.tensor per box",
    "copy_strided_to_shared": "dots.py: a cooperative copy through both strides and the wraps",
    "async_copy_strided_to_shared": "dots.py: cp.async per chunk where the column stride is 1, else per element; "
                                    "tma.py: with engine=\"tma\", one thread's cp.async.bulk.tensor per box",
    "copy_gathered_to_shared": "dots.py: as copy_strided_to_shared, each row's index read from the index array",
    "async_copy_gathered_to_shared": "dots.py: as async_copy_strided_to_shared, each row's index read from the "
                                     "index array (once before the loop, where the loop does not move it)",
    "async_commit": "dots.py: cp.async.commit_group; tma.py: with TMA copies, an arrival on the group's mbarrier",
    "async_wait": "dots.py: cp.async.wait_group pending; tma.py: with TMA copies, a wait on each older group's "
                  "mbarrier",
    "wgmma_wait": "dots.py: wgmma.wait_group pending",
    "store_tile": "tile_stores.py: with engine=\"tma\", the tile staged swizzled in scratch, then one thread's "
                  "cp.async.bulk.tensor per box; else each thread's elements where in bounds",
    "proxy_fence": "dots.py: fence.proxy.async.shared::cta",
    "for": "emitter.py: a C for loop",
    "yield": "emitter.py: the loop's carried assignments, an if's result assignments",
    "if": "emitter.py: a C if/else assigning result locals declared before it",
    "while": "emitter.py: while (true) { condition region; if (!cond) break; body }",
    "condition": "emitter.py: the break test of a while loop",
    "convert_layout": "emitter.py: a slot loop in the new layout, through shared memory where threads differ",
    "trans": "emitter.py: like convert_layout, a slot loop reading its operand at swapped coordinates",
    "permute": "emitter.py: like trans, a slot loop reading its operand at permuted coordinates",
    "reshape": "emitter.py: like trans, its operand read at row-major re-indexed coordinates (slots.py remapped)",
    "split": "emitter.py: like trans, its operand read with the half's index as the last coordinate",
    "join": "emitter.py: like trans, a or b read at the leading coordinates, picked by the last",
    "device_print": "emitter.py: a printf per element (print_call), by the thread owning it",
    "device_assert": "emitter.py: a printf of the message and a trap where an element fails (assert_lines)",
    "atomic_rmw": "atomics.py: atomicAdd/Max/Min/And/Or/Xor/Exch per owned element, fenced by sem",
    "atomic_cas": "atomics.py: atomicCAS per owned element (a scalar: thread 0, broadcast through shared memory)",
    "gather": "gather.py: the source written to shared memory by its owners, then each result slot read at its "
              "index along the axis",
    "histogram": "histogram.py: shared-memory atomicAdd of each owned element's bin, then each result slot read",
    "reduce": "scans.py: owned elements into shared memory, each row's chunks combined in order, then the chunks",
    "scan": "scans.py: owned elements into shared memory, each row's chunks scanned in order, then the prefixes",
}

# Ops the CUDA backend refuses, and why (none today).
REFUSED: dict[str, str] = {}


def lowering(name: str) -> str | None:
    """How the CUDA backend lowers the op ``name``: "math", "expression",
    "statement" or "refused"; None where it has no lowering."""
    if name in MATH_SPELLINGS:
        return "math"
    if name in EXPRESSION_OPS:
        return "expression"
    if name in STATEMENT_OPS:
        return "statement"
    if name in REFUSED:
        return "refused"
    return None


def _called(spelling: str) -> set[str]:
    """The C functions a spelling calls: each name right before a '('."""
    names, word = set(), ""
    for ch in spelling:
        if ch.isalnum() or ch == "_":
            word += ch
            continue
        if ch == "(" and word and not word[0].isdigit():
            names.add(word)
        word = ""
    return names


def _language_spellings() -> list[str]:
    """Every spelling the language object gives the math ops, in each type."""
    out = [*CUDA.math_f32.values(), *CUDA.math_f64.values(), *CUDA.libdevice_f32.values(),
           *CUDA.libdevice_f64.values()]
    for t in (F32, F64):
        out += [CUDA.min_max_nan("max", "a", "b", t), CUDA.min_max_nan("min", "a", "b", t),
                CUDA.clamp("x", "a", "b", t, True), CUDA.fma("a", "b", "c", t), CUDA.div_rn("a", "b", t),
                CUDA.divide("a", "b", t),
                CUDA.abs("x", t)]
    out += [CUDA.umulhi("a", "b", I32), CUDA.umulhi("a", "b", I64)]
    return out


# The C functions the math spellings call (a parameter of that name would hide one).
MATH_CALLED = frozenset(name for spelling in _language_spellings() for name in _called(spelling))


def compute_type(t: ScalarType | WeakType) -> ScalarType:
    """The type arithmetic on ``t`` is done in."""
    t = concrete(t)
    return F32 if t in (F16, BF16) else t


def as_type(arg: Arg, t: ScalarType) -> str:
    if isinstance(arg, Const):
        return c_literal(arg.value, t)
    assert arg is not None
    if isinstance(arg.type, PointerType):
        return arg.expr
    return c_cast(arg.expr, arg.type, t)


def render(op: Op, args: list[Arg]) -> str:
    name = op.name
    element = element_of(op.results[0].type)
    if name == "program_id":
        return CUDA.program_id(op.attrs["axis"])
    if name == "num_programs":
        return CUDA.num_programs(op.attrs["axis"])
    if name == "full":
        return as_type(args[0], op.attrs["dtype"])
    if name == "addptr":
        ptr, offset = args
        offset_t = concrete(offset.type if isinstance(offset, CValue) else offset.type)
        return f"({as_type(ptr, element)} + {as_type(offset, offset_t)})"
    if name == "cast":
        (x,) = args
        # A literal converts from its own type (i32, i64 or f32), as in the interpreter.
        source = x.type if isinstance(x, CValue) else concrete(x.type)
        return c_cast(as_type(x, source), source, op.attrs["dtype"])
    if name in ("hint", "broadcast_to"):  # the value itself (broadcast_to: read at broadcast coordinates)
        return as_type(args[0], element)
    if name == "int_to_ptr":  # an address loaded or computed as a 64-bit integer
        (x,) = args
        source = x.type if isinstance(x, CValue) else concrete(x.type)
        return f"{GLOBAL_POINTER}(({CUDA.element_type(op.results[0].type)})({as_type(x, source)}))"
    if name == "ptr_to_int":
        return f"(({CUDA.scalar_type(element)})({as_type(args[0], args[0].type)}))"
    if name == "bitcast":
        (x,) = args
        source = x.type if isinstance(x, CValue) else concrete(x.type)
        return CUDA.bitcast(as_type(x, source), element)
    if name in ("inline_asm", "inline_asm_volatile"):
        return inline_asm_expr(op, args)
    if name == "where":
        cond, a, b = args
        if isinstance(element, PointerType):
            return f"({as_type(cond, BOOL)} ? {as_type(a, element)} : {as_type(b, element)})"
        t = compute_type(element)
        return c_cast(f"({as_type(cond, BOOL)} ? {as_type(a, t)} : {as_type(b, t)})", t, element)
    if name in _LIBDEVICE_ANSWERS:
        (x,) = args
        t = compute_type(x.type if isinstance(x, CValue) else concrete(x.type))
        return c_cast(_libdevice(name, t, [as_type(x, t)], op), _LIBDEVICE_ANSWERS[name], element)
    if name in CMP_OPS:
        t = compute_type(promote(*(element_of(a.type) for a in args)))
        return f"({as_type(args[0], t)} {_CMP[name]} {as_type(args[1], t)})"
    if name in _HALF_ARITH and element in (F16, BF16):
        # Half arithmetic in one instruction (HMUL2, HADD2; bf16 on sm_80 as an fma), where f32 would
        # take two widenings and a rounding: the same result, as f32 holds the exact product, and a sum
        # rounds twice innocuously (24 bits >= 2 x 11 + 2). The _rn forms are never contracted into an
        # fma (rounded once: the interpreter rounds the product), as the f32 path's rounding kept them.
        return f"{_HALF_ARITH[name]}({as_type(args[0], element)}, {as_type(args[1], element)})"
    t = compute_type(element)
    values = [as_type(a, t) for a in args]
    expr = _arith(name, t, values, op)
    if t.is_int and t.bits < 32:
        # C computes on narrow integers in int: wrap each result to its type, as Triton's i8/u8 do.
        expr = f"(({CUDA.scalar_type(t)}){expr})"
    return c_cast(expr, t, element)


def _arith(name: str, t: ScalarType, args: list[str], op: Op) -> str:
    if name in MATH_FUNCTIONS:
        spelling = CUDA.math_function(name, t)
        if spelling is None:
            raise CompileError(f"the CUDA backend has no spelling for the math function '{name}'", op.loc)
        return spelling.format(args[0])
    if name in LIBDEVICE_OPS:
        return _libdevice(name, t, args, op)
    if name in _NAN_AWARE:
        return CUDA.min_max_nan(_NAN_AWARE[name], *args, t)
    if name in ("clamp", "clamp_nan"):
        return CUDA.clamp(*args, t, propagate_nan=name == "clamp_nan")
    if name == "fma":
        return CUDA.fma(*args, t)
    if name == "div_rn":
        return CUDA.div_rn(*args, t)
    if name == "div" and t.is_float:
        return CUDA.divide(*args, t)
    if name == "umulhi":  # computed unsigned; read back as the operands' type
        return f"(({CUDA.scalar_type(t)}){CUDA.umulhi(*args, t)})"
    if name == "neg":
        return f"(-{args[0]})"
    if name == "abs":
        return CUDA.abs(args[0], t)
    if name == "not":
        return f"(!{args[0]})" if t == BOOL else f"(~{args[0]})"
    a, b = args
    if name in ("maximum", "minimum"):
        return CUDA.min_max(name, a, b, t)
    if name in ("and", "or"):
        symbol = {"and": "&", "or": "|"}[name]
        return f"({a} {symbol * 2 if t == BOOL else symbol} {b})"
    if name == "xor" and t == BOOL:
        return f"({a} != {b})"
    if name == "shl" and not t.unsigned:
        # Shift the bits unsigned: C leaves a negative left operand undefined; Triton's shl wraps.
        wide = "unsigned long long" if t.bits == 64 else "unsigned int"
        return f"(({CUDA.scalar_type(t)})(({wide})({a}) << {b}))"
    if name in _BINARY:
        return f"({a} {_BINARY[name]} {b})"
    raise CompileError(f"the CUDA backend has no rendering for '{name}'", op.loc)


def _libdevice(name: str, t: ScalarType, args: list[str], op: Op) -> str:
    spelling = CUDA.libdevice(name, t)
    if spelling is None:
        raise CompileError(f"the CUDA backend has no spelling for the libdevice function '{name}' in {t}", op.loc)
    return spelling.format(*args)


# ---- reductions ------------------------------------------------------------------------------


def reduce_identity(name: str, t: ScalarType) -> str:
    if name == "sum":
        return c_literal(0, t)
    if t.is_float:
        return c_literal(float("-inf") if name == "max" else float("inf"), t)
    low, high = t.int_range
    return c_literal(low if name == "max" else high, t)


def reduce_combine(name: str, t: ScalarType, a: str, b: str) -> str:
    if name == "sum":
        return f"({a} + {b})"
    return CUDA.min_max(name, a, b, t)



# ---- inline assembly (tl.inline_asm_elementwise) ----------------------------------------------


def _into_register(value: str, element: ScalarType, letter: str) -> str:
    """A value of ``element`` as the ``letter`` register's C type: a float
    register of its own type as it is, another of the same width by its
    bits, an integer into a wider integer register by its value."""
    c_type, bits, is_float = inline_asm.REGISTERS[letter]
    if (element, letter) in ((F32, "f"), (F64, "d")):
        return value
    if element.is_float or is_float:
        return f"__builtin_bit_cast({c_type}, {value})"
    return f"(({c_type})({value}))"


def _from_register(register: str, element: ScalarType, letter: str) -> str:
    c_type, bits, is_float = inline_asm.REGISTERS[letter]
    if (element, letter) in ((F32, "f"), (F64, "d")):
        return register
    if element.is_float or is_float:
        return CUDA.bitcast(register, element)
    return f"(({CUDA.scalar_type(element)})({register}))"


def inline_asm_expr(op: Op, args: list[Arg]) -> str:
    """One element of a ``tl.inline_asm_elementwise``: CUDA's inline asm,
    its ``$N`` as ``%N``, in a lambda called where it is made (NVRTC takes
    no GNU statement expression, which nvcc's host compiler does)."""
    constraints = inline_asm.parse(op.attrs["constraints"])
    (out,) = constraints.outputs
    inputs = []
    for letter, arg in zip(constraints.inputs, args):
        source = arg.type if isinstance(arg, CValue) else concrete(arg.type)
        inputs.append(f'"{letter}"({_into_register(as_type(arg, source), source, letter)})')
    volatile = " volatile" if op.name == "inline_asm_volatile" else ""
    operands = f' : "={out}"(asm_out)' + (f" : {', '.join(inputs)}" if inputs else "")
    asm = c_string(inline_asm.placeholders(op.attrs["asm"]))
    result = _from_register("asm_out", op.attrs["dtype"], out)
    return f"[&]() {{ {inline_asm.REGISTERS[out][0]} asm_out; asm{volatile}({asm}{operands}); return {result}; }}()"


# ---- printing and assertions (tl.device_print, tl.device_assert) -------------------------------


def c_string(text: str) -> str:
    """``text`` as a C string literal: printable ASCII as itself, anything
    else (quotes, backslashes, control characters, UTF-8 bytes) escaped, and
    '?' escaped against trigraphs."""
    out = []
    for byte in text.encode("utf-8", "backslashreplace"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def print_call(prefix: str, coords: list[str], value: Arg, hex_: bool) -> str:
    """The printf of one element, as the interpreter prints it
    (``device_print_line``): pid (x, y, z) idx (i, j) prefix: value."""
    fmt = "pid (%d, %d, %d)"
    args = [CUDA.program_id(0), CUDA.program_id(1), CUDA.program_id(2)]
    if coords:
        fmt += " idx (" + ", ".join("%d" for _ in coords) + ")"
        args += coords
    fmt += "%s"
    args.append(c_string(prefix if value is None else device_print_label(prefix)))
    if value is not None:
        spec, expr = _print_spec(value, hex_)
        fmt += " " + spec
        args.append(expr)
    return f"printf({c_string(fmt + chr(10))}, {', '.join(args)});"


def _print_spec(value: Arg, hex_: bool) -> tuple[str, str]:
    t = value.type if isinstance(value, CValue) else concrete(value.type)
    if isinstance(t, PointerType):
        return "0x%llx", f"(unsigned long long)({as_type(value, t)})"
    if t.is_float:
        return "%f", f"(double)({as_type(value, F32)})"
    if hex_:
        return "0x%llx", f"(unsigned long long)({as_type(value, t)}) & {hex((1 << max(t.bits, 8)) - 1)}ULL"
    return "%lld", f"(long long)({as_type(value, t)})"


def assert_lines(message: str, loc_text: str, condition: str, guard: str | None) -> list[str]:
    """Where ``condition`` fails (and ``guard`` holds): print the message once
    per failing element and stop the kernel (a trap: the launch fails)."""
    test = f"!({condition})" if guard is None else f"({guard}) && !({condition})"
    text = f"{loc_text}: device_assert failed" + (f": {message}" if message else "") + chr(10)
    return [f"if ({test}) {{ printf({c_string('%s')}, {c_string(text)}); __trap(); }}"]
