"""The ``emit-ttir`` stage: optimised SSA as Triton's TTIR (the ``tt``
dialect with ``arith``, ``math`` and ``scf``), the text ``triton.compile``
reads from a ``.ttir`` file.

It reads SSA from ``opt`` (before ``stage-dots``): Triton stages its dots
through shared memory, lays tiles out and pipelines K loops itself
(TTGIR), so the kernel goes in as ``tl.dot`` on tiles in registers. A tile
is a ``tensor<64x64xf32>``, a tile of pointers ``tensor<64x!tt.ptr<f32>>``;
the SSA's implicit broadcasts and literals become explicit ``tt.splat``,
``tt.expand_dims``, ``tt.broadcast`` and ``arith.constant`` ops, and element
types the SSA converts implicitly become arith conversions, as Triton's front
end writes them. Op spellings are in ``ops.py``; each op ends in its source
location, ``loc("file":line:col)``.
"""
from __future__ import annotations

from typing import Callable

from mytriton.backends.mlir.emitter_base import RegionEmitter, lowers
from mytriton.backends.mlir.text import conversion_op, joined, literal, mlir_loc, mlir_string, scalar_type
from mytriton.backends.ttir import ops as table
from mytriton.diagnostics import CompileError, Location
from mytriton.ir import math_functions
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, Operand, Value, is_combine, yield_types,
)
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I32, I64, PointerType, ScalarType, Type, WeakType, broadcast_shapes,
    concrete, element_of, promote, shape_of,
)

Element = ScalarType | PointerType

# The binary op each reduction combines with.
_COMBINED_BY = {"sum": "add", "max": "maximum", "min": "minimum"}


def emit_ttir(kernel: Kernel) -> str:
    """TTIR text for SSA from ``opt`` (not staged; laid-out SSA is refused too)."""
    return _Emitter(kernel).emit()


def element_text(e: Element) -> str:
    if isinstance(e, PointerType):
        return f"!tt.ptr<{scalar_type(e.pointee)}>"
    return scalar_type(e)


def ttir_type(shape: tuple[int, ...], e: Element) -> str:
    if not shape:
        return element_text(e)
    return f"tensor<{'x'.join(str(d) for d in shape)}x{element_text(e)}>"


def type_of(t: Type) -> tuple[tuple[int, ...], Element]:
    return shape_of(t), concrete(element_of(t))


def kernel_symbol(name: str) -> str:
    """The ``tt.func``'s symbol, which becomes the cubin's entry: the kernel's
    name where it is ASCII, else ``mytriton_`` and the name in letters, digits
    and underscores (non-ASCII as ``uXXXX``): LLVM's NVPTX back end aborts
    on any other character in a symbol."""
    if name.isascii() and name.isidentifier():
        return name
    spelled = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else f"_u{ord(ch):04x}_" for ch in name)
    return f"mytriton_{spelled}"


class _Emitter(RegionEmitter):
    backend = "TTIR"
    table = table

    def __init__(self, kernel: Kernel) -> None:
        super().__init__(kernel, indent=2)

    # ---- the module --------------------------------------------------------------------

    def emit(self) -> str:
        kernel = self.kernel
        if kernel.laid_out:
            raise CompileError("the TTIR back end reads SSA before the layouts stage (Triton lays tiles out "
                               "itself): give it the output of 'opt'", kernel.loc)
        args = []
        for index, param in enumerate(kernel.params):
            name = f"%arg{index}"
            self.names[param] = name
            t = element_text(concrete(param.type))
            attrs = ""
            if param.attrs.get("divisibility"):
                attrs = f" {{tt.divisibility = {int(param.attrs['divisibility'])} : i32}}"
            args.append(f"{name}: {t}{attrs} {mlir_loc(kernel.loc)}")
        self.block(kernel.body)
        self.w.line("tt.return", kernel.loc)
        loc = mlir_loc(kernel.loc)
        out = [f"// mytriton kernel {mlir_string(kernel.name)}: Triton's TTIR (triton.compile reads it as a .ttir file)",
               "module {",
               f"  tt.func public @{kernel_symbol(kernel.name)}({joined(args)}) attributes {{noinline = false}} {{"]
        out.extend(self.w.lines)
        out.append(f"  }} {loc}")
        out.append(f"}} {loc}")
        return "\n".join(out) + "\n"

    def op(self, op: Op) -> None:
        self.lowering(op)
        self.render(op)

    # ---- values ------------------------------------------------------------------------

    def constant(self, value: bool | int | float, shape: tuple[int, ...], e: ScalarType,
                 loc: Location | None) -> str:
        text = literal(value, e)
        if shape:
            return self.w.op(f"arith.constant dense<{text}> : {ttir_type(shape, e)}", loc)
        if e == BOOL:
            return self.w.op(f"arith.constant {text}", loc)
        return self.w.op(f"arith.constant {text} : {scalar_type(e)}", loc)

    def operand_type(self, operand: Operand, weak_as: Element | None = None) -> tuple[tuple[int, ...], Element]:
        if isinstance(operand, Const):
            t = operand.type
            if isinstance(t, WeakType):
                return (), weak_as if weak_as is not None else concrete(t)
            return (), concrete(t)
        return type_of(operand.type)

    def get(self, operand: Operand, shape: tuple[int, ...], e: Element, loc: Location | None) -> str:
        """``operand`` as a value of ``shape`` and element ``e``: converted,
        then splat (a scalar) or expanded and broadcast (a smaller tile)."""
        if isinstance(operand, Const):
            assert isinstance(e, ScalarType)
            return self.constant(operand.value, shape, e, loc)
        src_shape, src_e = type_of(operand.type)
        name = self.names[operand]
        name = self.convert(name, src_shape, src_e, e, loc)
        return self.reshape_to(name, src_shape, shape, e, loc)

    def reshape_to(self, name: str, src: tuple[int, ...], shape: tuple[int, ...], e: Element,
                   loc: Location | None) -> str:
        if src == shape:
            return name
        if not src:
            return self.w.op(f"tt.splat {name} : {element_text(e)} -> {ttir_type(shape, e)}", loc)
        while len(src) < len(shape):  # aligned on the right, as the SSA broadcasts
            grown = (1, *src)
            name = self.w.op(f"tt.expand_dims {name} {{axis = 0 : i32}} : {ttir_type(src, e)} -> "
                             f"{ttir_type(grown, e)}", loc)
            src = grown
        if src != shape:
            name = self.w.op(f"tt.broadcast {name} : {ttir_type(src, e)} -> {ttir_type(shape, e)}", loc)
        return name

    def convert(self, x: str, shape: tuple[int, ...], source: Element, target: Element,
                loc: Location | None) -> str:
        """The arith ops converting ``x`` (of ``shape``) from ``source`` to
        ``target`` as C and Triton convert: to bool by comparing with zero,
        from bool as 0 or 1, integers by their signedness, floats to integers
        toward zero."""
        if source == target:
            return x
        if isinstance(source, PointerType) or isinstance(target, PointerType):
            raise CompileError(f"the TTIR back end cannot convert {source} to {target}", loc)
        s, t = ttir_type(shape, source), ttir_type(shape, target)
        w = self.w
        if target == BOOL:
            zero = self.constant(0, shape, source, loc)
            op = "arith.cmpf une" if source.is_float else "arith.cmpi ne"
            return w.op(f"{op}, {x}, {zero} : {s}", loc)
        if {source, target} == {F16, BF16}:  # no direct conversion: through f32
            return self.convert(self.convert(x, shape, source, F32, loc), shape, F32, target, loc)
        op = conversion_op(source, target)
        return x if op is None else w.op(f"{op} {x} : {s} to {t}", loc)  # None: signless, the same bits

    # ---- elementwise -------------------------------------------------------------------

    def result_of(self, op: Op) -> tuple[tuple[int, ...], Element, str]:
        """The result's shape, element type and TTIR type."""
        shape, e = type_of(op.result.type)
        return shape, e, ttir_type(shape, e)

    def args(self, op: Op, e: Element) -> list[str]:
        """The operands as values of the result's shape and element ``e``."""
        shape = type_of(op.result.type)[0]
        return [self.get(o, shape, e, op.loc) for o in op.operands]

    @lowers("hint", "broadcast_to", "full")
    def op_same_value(self, op: Op) -> None:
        shape, e, _ = self.result_of(op)
        self.names[op.result] = self.get(op.operands[0], shape, e, op.loc)

    @lowers(*table.COMPARE)
    def op_compare(self, op: Op) -> None:
        shape, loc, w, operands = type_of(op.result.type)[0], op.loc, self.w, op.operands
        t = concrete(promote(*(_element(o) for o in operands)))
        if isinstance(t, PointerType):
            t = I64
            ints = [w.op(f"tt.ptr_to_int {self.get(o, shape, _element(o), loc)} : "
                         f"{ttir_type(shape, _element(o))} -> {ttir_type(shape, I64)}", loc)
                    for o in operands]
            a, b = ints
        else:
            a, b = self.args(op, t)
        at = ttir_type(shape, t)
        if t.is_float:
            pred = table.COMPARE[op.name][0]
            self.names[op.result] = w.op(f"arith.cmpf {pred}, {a}, {b} : {at}", loc)
        else:
            pred = table.COMPARE[op.name][2 if (t.unsigned or t == BOOL) else 1]
            self.names[op.result] = w.op(f"arith.cmpi {pred}, {a}, {b} : {at}", loc)

    @lowers("where")
    def op_where(self, op: Op) -> None:
        shape, e, ty = self.result_of(op)
        cond = self.get(op.operands[0], shape, BOOL, op.loc)
        a, b = (self.get(o, shape, e, op.loc) for o in op.operands[1:])
        spelled = f"{ttir_type(shape, BOOL)}, {ty}" if shape else ty
        self.names[op.result] = self.w.op(f"arith.select {cond}, {a}, {b} : {spelled}", op.loc)

    @lowers("addptr")
    def op_addptr(self, op: Op) -> None:
        shape, e, ty = self.result_of(op)
        loc, operands = op.loc, op.operands
        ptr = self.get(operands[0], shape, e, loc)
        offset_e = self.operand_type(operands[1], I32)[1]
        if offset_e == BOOL or (offset_e.unsigned and offset_e.bits < 64):
            offset_e_to = I64 if offset_e.unsigned and offset_e.bits >= 32 else I32
        else:
            offset_e_to = offset_e
        offset = self.get(operands[1], shape, offset_e, loc) if not isinstance(operands[1], Const) \
            else self.constant(operands[1].value, shape, offset_e_to, loc)
        offset = self.convert(offset, shape, offset_e, offset_e_to, loc)
        self.names[op.result] = self.w.op(f"tt.addptr {ptr}, {offset} : {ty}, {ttir_type(shape, offset_e_to)}", loc)

    @lowers("program_id")
    def op_program_id(self, op: Op) -> None:
        self.names[op.result] = self.w.op(f"tt.get_program_id {'xyz'[op.attrs['axis']]} : i32", op.loc)

    @lowers("num_programs")
    def op_num_programs(self, op: Op) -> None:
        self.names[op.result] = self.w.op(f"tt.get_num_programs {'xyz'[op.attrs['axis']]} : i32", op.loc)

    @lowers("cast")
    def op_cast(self, op: Op) -> None:
        shape, e, _ = self.result_of(op)
        x = op.operands[0]
        src_e = self.operand_type(x)[1]
        value = self.get(x, shape, src_e, op.loc)
        self.names[op.result] = self.convert(value, shape, src_e, e, op.loc)

    @lowers("bitcast")
    def op_bitcast(self, op: Op) -> None:
        shape, e, ty = self.result_of(op)
        x = op.operands[0]
        src_e = self.operand_type(x)[1]
        value = self.get(x, shape, src_e, op.loc)
        self.names[op.result] = value if src_e == e else \
            self.w.op(f"tt.bitcast {value} : {ttir_type(shape, src_e)} -> {ty}", op.loc)

    @lowers(*(name for name in table.BINARY if name != "div_rn"))
    def op_binary(self, op: Op) -> None:
        shape, t, ty = self.result_of(op)
        assert isinstance(t, ScalarType)
        a = self.args(op, t)
        name = op.name
        if t == BOOL and name in ("maximum", "minimum", "maximum_nan", "minimum_nan"):
            spelled = {"maximum": "arith.maxui", "minimum": "arith.minui",
                       "maximum_nan": "arith.maxui", "minimum_nan": "arith.minui"}[name]
        elif t == BOOL:
            spelled = table.BINARY[name][1]
        else:
            ops = table.BINARY[name]
            spelled = ops[0] if t.is_float else ops[2] if t.unsigned else ops[1]
        self.names[op.result] = self.w.op(f"{spelled} {a[0]}, {a[1]} : {ty}", op.loc)

    @lowers("neg")
    def op_neg(self, op: Op) -> None:
        shape, t, ty = self.result_of(op)
        assert isinstance(t, ScalarType)
        (a,) = self.args(op, t)
        if t.is_float:
            # -0.0 - x is -x exactly (signed zeros too); Triton 3.6 cannot legalize arith.negf.
            zero = self.constant(-0.0, shape, t, op.loc)
            self.names[op.result] = self.w.op(f"arith.subf {zero}, {a} : {ty}", op.loc)
        else:
            zero = self.constant(0, shape, t, op.loc)
            self.names[op.result] = self.w.op(f"arith.subi {zero}, {a} : {ty}", op.loc)

    @lowers("abs")
    def op_abs(self, op: Op) -> None:
        shape, t, ty = self.result_of(op)
        assert isinstance(t, ScalarType)
        (a,) = self.args(op, t)
        if t.is_float:
            self.names[op.result] = self.w.op(f"math.absf {a} : {ty}", op.loc)
        elif t.unsigned or t == BOOL:
            self.names[op.result] = a
        else:
            self.names[op.result] = self.w.op(f"math.absi {a} : {ty}", op.loc)

    @lowers("not")
    def op_not(self, op: Op) -> None:
        shape, t, ty = self.result_of(op)
        assert isinstance(t, ScalarType)
        (a,) = self.args(op, t)
        ones = self.constant(True if t == BOOL else -1, shape, t, op.loc)
        self.names[op.result] = self.w.op(f"arith.xori {a}, {ones} : {ty}", op.loc)

    @lowers("umulhi")
    def op_umulhi(self, op: Op) -> None:
        _, t, ty = self.result_of(op)
        a, b = self.args(op, t)
        self.names[op.result] = self.w.op(f"tt.mulhiui {a}, {b} : {ty}", op.loc)

    @lowers("clamp", "clamp_nan")
    def op_clamp(self, op: Op) -> None:
        _, t, ty = self.result_of(op)
        x, low, high = self.args(op, t)
        nan = "all" if op.name == "clamp_nan" else "none"
        self.names[op.result] = self.w.op(f"tt.clampf {x}, {low}, {high}, propagateNan = {nan} : {ty}", op.loc)

    def in_f32(self, op: Op, body: Callable[[list[str], str, ScalarType], str]) -> None:
        """The result of ``body`` (given the widened operands, their TTIR
        type and element type): f16 and bf16 in f32, rounded back once."""
        shape, t, _ = self.result_of(op)
        assert isinstance(t, ScalarType)
        wide_t = F32 if t in (F16, BF16) else t
        wide = [self.convert(a, shape, t, wide_t, op.loc) for a in self.args(op, t)]
        out = body(wide, ttir_type(shape, wide_t), wide_t)
        self.names[op.result] = self.convert(out, shape, wide_t, t, op.loc)

    @lowers("fma")
    def op_fma(self, op: Op) -> None:
        self.in_f32(op, lambda a, ty, _: self.w.op(f"math.fma {a[0]}, {a[1]}, {a[2]} : {ty}", op.loc))

    @lowers("div_rn")
    def op_div_rn(self, op: Op) -> None:
        self.in_f32(op, lambda a, ty, _: self.w.op(f"tt.precise_divf {a[0]}, {a[1]} : {ty}", op.loc))

    @lowers(*(row.name for row in math_functions.TABLE if row.tl and not row.expanded))
    def op_math(self, op: Op) -> None:
        row = math_functions.BY_NAME[op.name]
        if row.triton_extern:
            self.in_f32(op, lambda a, ty, wide_t: self.w.op(
                f'tt.extern_elementwise {a[0]} {{libname = "", libpath = "", pure = true, '
                f'symbol = "{row.symbol(wide_t == F64)}"}} : ({ty}) -> {ty}', op.loc))
        else:
            self.in_f32(op, lambda a, ty, _: self.w.op(f"{row.ttir or row.mlir_op} {a[0]} : {ty}", op.loc))

    @lowers("sigmoid")
    def op_sigmoid(self, op: Op) -> None:
        shape, w, loc = type_of(op.result.type)[0], self.w, op.loc

        def body(a: list[str], ty: str, wide_t: ScalarType) -> str:
            neg = w.op(f"arith.subf {self.constant(-0.0, shape, wide_t, loc)}, {a[0]} : {ty}", loc)
            e = w.op(f"math.exp {neg} : {ty}", loc)
            one = self.constant(1.0, shape, wide_t, loc)
            denominator = w.op(f"arith.addf {one}, {e} : {ty}", loc)
            return w.op(f"arith.divf {one}, {denominator} : {ty}", loc)

        self.in_f32(op, body)

    @lowers(*table.LIBDEVICE)
    def op_libdevice(self, op: Op) -> None:
        """A libdevice function as tt.extern_elementwise: the operands in
        their float type (f16 and bf16 widened to f32), the answer rounded
        back, compared != 0 (the predicates' i32) or kept (llrint's i64)."""
        loc, w = op.loc, self.w
        shape = type_of(op.result.type)[0]
        answers = math_functions.BY_NAME[op.name].answers
        t = type_of(op.result.type)[1] if answers == "float" else concrete(_element(op.operands[0]))
        assert isinstance(t, ScalarType) and t.is_float
        wide_t = F32 if t in (F16, BF16, F32) else t
        args = [self.convert(self.get(o, shape, t, loc), shape, t, wide_t, loc) for o in op.operands]
        symbol = table.LIBDEVICE[op.name][0 if wide_t == F32 else 1]
        ty = ttir_type(shape, wide_t)
        answer = {"bool": I32, "i64": I64}.get(answers, wide_t)
        out_ty = ttir_type(shape, answer)
        out = w.op(f'tt.extern_elementwise {joined(args)} {{libname = "", libpath = "", pure = true, '
                   f'symbol = "{symbol}"}} : ({joined(ty for _ in args)}) -> {out_ty}', loc)
        if answers == "bool":
            out = self.convert(out, shape, I32, BOOL, loc)
        elif answers != "i64":
            out = self.convert(out, shape, wide_t, t, loc)
        self.names[op.result] = out

    # ---- memory: atomics, pointer casts, the barrier --------------------------------------

    @lowers("barrier")
    def op_barrier(self, op: Op) -> None:
        self.w.line("gpu.barrier", op.loc)

    @lowers("grid_dependency_wait")
    @lowers("grid_dependency_launch_dependents")
    def op_grid_dependency(self, op: Op) -> None:
        self.w.line(f"tt.{op.name}", op.loc)

    @lowers("int_to_ptr")
    def op_int_to_ptr(self, op: Op) -> None:
        x = op.operands[0]
        shape, e = type_of(op.result.type)
        src_e = self.operand_type(x, I64)[1]
        value = self.get(x, shape, src_e, op.loc)
        self.names[op.result] = self.w.op(f"tt.int_to_ptr {value} : {ttir_type(shape, src_e)} -> "
                                          f"{ttir_type(shape, e)}", op.loc)

    @lowers("ptr_to_int")
    def op_ptr_to_int(self, op: Op) -> None:
        x = op.operands[0]
        shape, e = type_of(op.result.type)
        src_e = self.operand_type(x)[1]
        value = self.get(x, shape, src_e, op.loc)
        # tt.ptr_to_int gives i64; u64 is the same bits (signless)
        self.names[op.result] = self.w.op(f"tt.ptr_to_int {value} : {ttir_type(shape, src_e)} -> "
                                          f"{ttir_type(shape, I64)}", op.loc)

    def _atomic(self, kind: str, sem: str, scope: str, ptr: str, operands: list[str], shape: tuple[int, ...],
                ptr_e: PointerType, loc: Location | None) -> str:
        e = ptr_e.pointee
        types = [ttir_type(shape, ptr_e), *(ttir_type(shape, e) for _ in operands[:1]),
                 *(ttir_type(shape, BOOL) for _ in operands[1:])]
        return self.w.op(f"tt.atomic_rmw {kind}, {sem}, {scope}, {joined([ptr, *operands])} : "
                         f"({joined(types)}) -> {ttir_type(shape, e)}", loc)

    @lowers("atomic_rmw")
    def op_atomic_rmw(self, op: Op) -> None:
        ptr, value, mask = op.operands
        loc, w = op.loc, self.w
        shape, e = type_of(op.result.type)
        assert isinstance(e, ScalarType)
        ptr_e = element_of(ptr.type)
        kind, sem, scope = op.attrs["kind"], op.attrs["sem"], op.attrs["scope"]
        p = self.get(ptr, shape, ptr_e, loc)
        v = self.get(value, shape, e, loc)
        m = self.get(mask, shape, BOOL, loc) if mask is not None else self.constant(True, shape, BOOL, loc)
        bty = ttir_type(shape, BOOL)
        if e.is_float and kind in ("max", "min"):
            out = self.float_max_min(kind, sem, scope, p, v, m, shape, ptr_e, loc)
        else:
            spelled = {"add": "fadd" if e.is_float else "add", "xchg": "exch",
                       "max": "umax" if e.unsigned else "max", "min": "umin" if e.unsigned else "min"}.get(kind, kind)
            out = self._atomic(spelled, sem, scope, p, [v, m], shape, ptr_e, loc)
        # mytriton's rule: 0 where the mask is off
        zero = self.constant(0, shape, e, loc)
        spelled_types = f"{bty}, {ttir_type(shape, e)}" if shape else ttir_type(shape, e)
        self.names[op.result] = w.op(f"arith.select {m}, {out}, {zero} : {spelled_types}", loc)

    def float_max_min(self, kind: str, sem: str, scope: str, p: str, v: str, m: str, shape: tuple[int, ...],
                      ptr_e: PointerType, loc: Location | None) -> str:
        """A float atomic max/min as Triton's front end writes it: on the
        bits as integers, a signed max (min) where the value's sign bit is
        clear and an unsigned min (max) where it is set. (Triton's front end
        splits on ``value >= 0.0``, which sends -0.0 down the signed path and
        makes min(x, -0.0) give -0.0 for a negative x; the sign bit orders
        signed zeros as mytriton's interpreter and CUDA do.)"""
        w = self.w
        e = ptr_e.pointee
        it = I32 if e.bits == 32 else I64
        ity, fty, bty = ttir_type(shape, it), ttir_type(shape, e), ttir_type(shape, BOOL)
        ip_e = PointerType(it)
        ip = w.op(f"tt.bitcast {p} : {ttir_type(shape, ptr_e)} -> {ttir_type(shape, ip_e)}", loc)
        iv = w.op(f"tt.bitcast {v} : {fty} -> {ity}", loc)
        zero = self.constant(0, shape, it, loc)
        pos = w.op(f"arith.cmpi sge, {iv}, {zero} : {ity}", loc)
        neg = w.op(f"arith.cmpi slt, {iv}, {zero} : {ity}", loc)
        pos_mask = w.op(f"arith.andi {m}, {pos} : {bty}", loc)
        neg_mask = w.op(f"arith.andi {m}, {neg} : {bty}", loc)
        signed, unsigned = ("max", "umin") if kind == "max" else ("min", "umax")
        pos_old = self._atomic(signed, sem, scope, ip, [iv, pos_mask], shape, ip_e, loc)
        neg_old = self._atomic(unsigned, sem, scope, ip, [iv, neg_mask], shape, ip_e, loc)
        spelled = f"{bty}, {ity}" if shape else ity
        old = w.op(f"arith.select {pos}, {pos_old}, {neg_old} : {spelled}", loc)
        return w.op(f"tt.bitcast {old} : {ity} -> {fty}", loc)

    @lowers("atomic_cas")
    def op_atomic_cas(self, op: Op) -> None:
        ptr, cmp, value = op.operands
        loc = op.loc
        shape, e = type_of(op.result.type)
        ptr_e = element_of(ptr.type)
        p = self.get(ptr, shape, ptr_e, loc)
        c, v = (self.get(o, shape, e, loc) for o in (cmp, value))
        ty = ttir_type(shape, e)
        self.names[op.result] = self.w.op(
            f"tt.atomic_cas {op.attrs['sem']}, {op.attrs['scope']}, {p}, {c}, {v} : "
            f"({ttir_type(shape, ptr_e)}, {ty}, {ty}) -> {ty}", loc)

    # ---- structured ops ----------------------------------------------------------------

    @lowers("arange")
    def op_arange(self, op: Op) -> None:
        start, end = op.attrs["start"], op.attrs["end"]
        self.names[op.result] = self.w.op(f"tt.make_range {{end = {end} : i32, start = {start} : i32}} : "
                                          f"{ttir_type((end - start,), I32)}", op.loc)

    @lowers("expand_dims")
    def op_expand_dims(self, op: Op) -> None:
        x = op.operands[0]
        src_shape, e = self.operand_type(x)
        shape = shape_of(op.result.type)
        value = self.get(x, src_shape, e, op.loc)
        if not src_shape:  # a scalar grows to a tile of one element
            self.names[op.result] = self.reshape_to(value, (), shape, e, op.loc)
            return
        self.names[op.result] = self.w.op(f"tt.expand_dims {value} {{axis = {op.attrs['axis']} : i32}} : "
                                          f"{ttir_type(src_shape, e)} -> {ttir_type(shape, e)}", op.loc)

    @lowers("convert_layout")
    def op_convert_layout(self, op: Op) -> None:
        shape, e = type_of(op.result.type)
        self.names[op.result] = self.get(op.operands[0], shape, e, op.loc)

    @lowers("load")
    def op_load(self, op: Op) -> None:
        ptr, mask, other = op.operands
        shape, e = type_of(op.result.type)
        ptr_e = element_of(ptr.type)
        loc = op.loc
        p = self.get(ptr, shape, ptr_e, loc)
        memory_e = I8 if e == BOOL else e  # bools live in memory as bytes, as Triton's front end loads them
        p = self.byte_pointer(p, shape, ptr_e, loc)
        parts = [p]
        if mask is not None:
            parts.append(self.get(mask, shape, BOOL, loc))
            if other is not None:
                parts.append(self.convert(self.get(other, shape, e, loc), shape, e, memory_e, loc))
        loaded = self.w.op(f"tt.load {joined(parts)} : {ttir_type(shape, PointerType(memory_e))}", loc)
        self.names[op.result] = self.convert(loaded, shape, memory_e, e, loc)

    def byte_pointer(self, p: str, shape: tuple[int, ...], ptr_e: PointerType, loc: Location | None) -> str:
        """A pointer to bools as a pointer to i8: Triton's front end reads and
        writes an i1 as one byte (LLVM cannot store an i1 tensor)."""
        if ptr_e.pointee != BOOL:
            return p
        return self.w.op(f"tt.bitcast {p} : {ttir_type(shape, ptr_e)} -> {ttir_type(shape, PointerType(I8))}", loc)

    @lowers("store")
    def op_store(self, op: Op) -> None:
        ptr, value, mask = op.operands
        loc = op.loc
        ptr_e = element_of(ptr.type)
        shapes = [shape_of(o.type) for o in (ptr, value, mask) if isinstance(o, Value)]
        shape = broadcast_shapes(*shapes) if shapes else ()
        memory_e = I8 if ptr_e.pointee == BOOL else ptr_e.pointee  # a bool is stored as a byte, 0 or 1
        p = self.byte_pointer(self.get(ptr, shape, ptr_e, loc), shape, ptr_e, loc)
        x = self.convert(self.get(value, shape, ptr_e.pointee, loc), shape, ptr_e.pointee, memory_e, loc)
        parts = [p, x]
        if mask is not None:
            parts.append(self.get(mask, shape, BOOL, loc))
        self.w.line(f"tt.store {joined(parts)} : {ttir_type(shape, PointerType(memory_e))}", loc)

    @lowers("sum", "max", "min")
    def op_reduction(self, op: Op) -> None:
        x = op.operands[0]
        loc, w = op.loc, self.w
        axis = op.attrs.get("axis")
        shape, e = type_of(x.type)
        result_shape, result_e = type_of(op.result.type)
        t = F32 if result_e in (F16, BF16) else result_e  # f16 and bf16 combine in f32, as mytriton's CUDA
        value = self.get(x, shape, t, loc)
        if axis is None:
            if len(shape) > 1:
                flat = (_numel(shape),)
                value = w.op(f"tt.reshape {value} : {ttir_type(shape, t)} -> {ttir_type(flat, t)}", loc)
                shape = flat
            axis = 0
        reduced = shape[:axis] + shape[axis + 1:]
        st = scalar_type(t)
        ops = table.BINARY[_COMBINED_BY[op.name]]
        combine = ops[0] if t.is_float else ops[2] if (t.unsigned or t == BOOL) else ops[1]
        name = w.fresh()
        lhs, rhs = w.fresh(), w.fresh()
        w.line(f'{name} = "tt.reduce"({value}) <{{axis = {axis} : i32}}> ({{', located=False)
        w.line(f"^bb0({lhs}: {st} {mlir_loc(loc)}, {rhs}: {st} {mlir_loc(loc)}):", located=False)
        with w.nested():
            combined = w.op(f"{combine} {lhs}, {rhs} : {st}", loc)
            w.line(f"tt.reduce.return {combined} : {st}", loc)
        w.line(f"}}) : ({ttir_type(shape, t)}) -> {ttir_type(reduced, t)}", loc)
        assert reduced == result_shape
        self.names[op.result] = self.convert(name, reduced, t, result_e, loc)

    @lowers("reduce", "scan")
    def op_combine(self, op: Op) -> None:
        """``reduce`` and ``scan``: ``tt.reduce`` / ``tt.scan`` over the N
        tiles, the combine region as its body (left arguments, then right),
        ending in ``tt.reduce.return`` / ``tt.scan.return``; a whole-tile
        reduce of rank 2 or more reshapes its tiles to rank 1 first."""
        w, loc = self.w, op.loc
        axis = op.attrs.get("axis")
        shape, _ = type_of(op.operands[0].type)
        elements = [type_of(x.type)[1] for x in op.operands]
        values = [self.get(x, shape, e, loc) for x, e in zip(op.operands, elements)]
        if axis is None:
            if len(shape) > 1:
                flat = (_numel(shape),)
                values = [w.op(f"tt.reshape {v} : {ttir_type(shape, e)} -> {ttir_type(flat, e)}", loc)
                          for v, e in zip(values, elements)]
                shape = flat
            axis = 0
        out_shape = shape if op.name == "scan" else shape[:axis] + shape[axis + 1:]
        attrs = f"axis = {axis} : i32"
        if op.name == "scan":
            attrs += f", reverse = {'true' if op.attrs.get('reverse', False) else 'false'}"
        prefix = self.bind_results(op)
        w.line(f'{prefix}"tt.{op.name}"({joined(values)}) <{{{attrs}}}> ({{', located=False)
        body = op.regions[0]
        names = [w.fresh() for _ in body.args]
        w.line(f"^bb0({joined(f'{n}: {element_text(a.type)} {mlir_loc(loc)}' for n, a in zip(names, body.args))}):",
               located=False)
        self.region(body, names)
        w.line(f"}}) : ({joined(ttir_type(shape, e) for e in elements)}) -> "
               f"({joined(ttir_type(out_shape, e) for e in elements)})", loc)

    @lowers("dot")
    def op_dot(self, op: Op) -> None:
        a, b, acc = op.operands
        loc, w = op.loc, self.w
        shape, result_e = type_of(op.result.type)
        a_shape, a_e = self.operand_type(a)
        b_shape, b_e = self.operand_type(b)
        # f16 results accumulate in f32 over the whole K and round once (mytriton's rule)
        acc_e = F32 if result_e in (F16, BF16) else result_e
        c = self.constant(0, shape, acc_e, loc) if acc is None else self.get(acc, shape, acc_e, loc)
        precision = op.attrs.get("input_precision") or "ieee"
        if a_e != F32:
            precision = "ieee"
        out = w.op(f"tt.dot {self.names[a]}, {self.names[b]}, {c}, inputPrecision = {precision} : "
                   f"{ttir_type(a_shape, a_e)} * {ttir_type(b_shape, b_e)} -> {ttir_type(shape, acc_e)}", loc)
        self.names[op.result] = self.convert(out, shape, acc_e, result_e, loc)

    @lowers("trans")
    def op_trans(self, op: Op) -> None:
        self._transpose(op, [1, 0])

    @lowers("permute")
    def op_permute(self, op: Op) -> None:
        self._transpose(op, list(op.attrs["dims"]))

    def _transpose(self, op: Op, order: list[int]) -> None:
        x = op.operands[0]
        src_shape, e = self.operand_type(x)
        shape = shape_of(op.result.type)
        self.names[op.result] = self.w.op(
            f"tt.trans {self.names[x]} {{order = array<i32: {joined(str(d) for d in order)}>}} : "
            f"{ttir_type(src_shape, e)} -> {ttir_type(shape, e)}", op.loc)

    @lowers("reshape")
    def op_reshape(self, op: Op) -> None:
        x = op.operands[0]
        src_shape, e = self.operand_type(x)
        shape = shape_of(op.result.type)
        value = self.get(x, src_shape, e, op.loc)
        if not src_shape:
            self.names[op.result] = self.reshape_to(value, (), shape, e, op.loc)
            return
        self.names[op.result] = self.w.op(f"tt.reshape {value} : {ttir_type(src_shape, e)} -> "
                                          f"{ttir_type(shape, e)}", op.loc)

    @lowers("split")
    def op_split(self, op: Op) -> None:
        x = op.operands[0]
        src_shape, e = self.operand_type(x)
        shape = shape_of(op.result.type)
        halves = self.w.op(f"tt.split {self.names[x]} : {ttir_type(src_shape, e)} -> {ttir_type(shape, e)}",
                           op.loc, results=2)
        self.names[op.result] = halves[op.attrs["index"]]

    @lowers("join")
    def op_join(self, op: Op) -> None:
        shape, e = type_of(op.result.type)
        half = shape[:-1]
        a, b = (self.get(o, half, e, op.loc) for o in op.operands)
        self.names[op.result] = self.w.op(f"tt.join {a}, {b} : {ttir_type(half, e)} -> {ttir_type(shape, e)}",
                                          op.loc)

    @lowers("inline_asm")
    @lowers("inline_asm_volatile")
    def op_inline_asm(self, op: Op) -> None:
        shape, e = type_of(op.result.type)
        values, types = [], []
        for operand in op.operands:
            _, element = self.operand_type(operand)
            values.append(self.get(operand, shape, element, op.loc))
            types.append(ttir_type(shape, element))
        pure = "true" if op.name == "inline_asm" else "false"
        signature = f" : {', '.join(types)}" if types else ""
        arguments = f" {', '.join(values)}" if values else ""
        self.names[op.result] = self.w.op(
            f"tt.elementwise_inline_asm {mlir_string(op.attrs['asm'])} {{constraints = "
            f"{mlir_string(op.attrs['constraints'])}, packed_element = 1 : i32, pure = {pure}}}{arguments}"
            f"{signature} -> {ttir_type(shape, e)}", op.loc)

    @lowers("gather")
    def op_gather(self, op: Op) -> None:
        src, index = op.operands
        src_shape, e = self.operand_type(src)
        index_shape, i = self.operand_type(index)
        value, indices = self.get(src, src_shape, e, op.loc), self.get(index, index_shape, i, op.loc)
        self.names[op.result] = self.w.op(
            f"tt.gather {value}[{indices}] {{axis = {op.attrs['axis']} : i32}} : ({ttir_type(src_shape, e)}, "
            f"{ttir_type(index_shape, i)}) -> {ttir_type(*type_of(op.result.type))}", op.loc)

    @lowers("histogram")
    def op_histogram(self, op: Op) -> None:
        x, mask = op.operands
        shape, e = self.operand_type(x)
        value = self.get(x, shape, e, op.loc)
        if mask is None:
            self.names[op.result] = self.w.op(f"tt.histogram {value} : {ttir_type(shape, e)} -> "
                                              f"{ttir_type(*type_of(op.result.type))}", op.loc)
            return
        m = self.get(mask, shape, BOOL, op.loc)
        self.names[op.result] = self.w.op(f"tt.histogram {value}, {m} : {ttir_type(shape, e)} -> "
                                          f"{ttir_type(*type_of(op.result.type))}", op.loc)

    # ---- talking to the host ------------------------------------------------------------

    @lowers("device_assert")
    def op_device_assert(self, op: Op) -> None:
        cond, mask = op.operands
        loc, w = op.loc, self.w
        shape = self.operand_type(cond)[0]
        ok = self.get(cond, shape, BOOL, loc)
        ty = ttir_type(shape, BOOL)
        if mask is not None:  # masked-off elements pass
            off = w.op(f"arith.xori {self.get(mask, shape, BOOL, loc)}, {self.constant(True, shape, BOOL, loc)} "
                       f": {ty}", loc)
            ok = w.op(f"arith.ori {ok}, {off} : {ty}", loc)
        w.line(f"tt.assert {ok}, {mlir_string(op.attrs['msg'])} : {ty}", loc)

    @lowers("device_print")
    def op_device_print(self, op: Op) -> None:
        (value,) = op.operands
        prefix = triton_print_prefix(op.attrs["prefix"], value is not None)
        attrs = f"hex = {'true' if op.attrs['hex'] else 'false'}"
        if value is None:
            self.w.line(f"tt.print {mlir_string(prefix)} {{{attrs}, isSigned = array<i32>}}", op.loc)
            return
        shape, e = self.operand_type(value)
        signed = int(isinstance(e, ScalarType) and e.is_int and not e.unsigned)
        x = self.get(value, shape, e, op.loc)
        self.w.line(f"tt.print {mlir_string(prefix)} {{{attrs}, isSigned = array<i32: {signed}>}} : {x} : "
                    f"{ttir_type(shape, e)}", op.loc)

    # ---- control flow ----------------------------------------------------------------

    def region(self, block: Block, arg_names: list[str]) -> None:
        for arg, name in zip(block.args, arg_names):
            self.names[arg] = name
        with self.w.nested():
            self.block(block)

    def carried(self, t: Type) -> str:
        return ttir_type(*type_of(t))

    @lowers("yield")
    def op_yield(self, op: Op) -> None:
        expected = yield_types(op)
        values = [self.get(o, *type_of(t), op.loc) for o, t in zip(op.operands, expected)]
        types = [self.carried(t) for t in expected]
        owner = op.parent.parent
        if is_combine(owner):  # a combine region's end
            self.w.line(f"tt.{owner.name}.return {joined(values)} : {joined(types)}", op.loc)
            return
        self.w.line(f"scf.yield {joined(values)} : {joined(types)}" if values else "scf.yield", op.loc)

    # ---- the structured ops' hooks (emitter_base.RegionEmitter) ---------------------------------
    def scalar_operand(self, operand, element, loc) -> str:
        return self.get(operand, (), element, loc)

    def carried_value(self, operand, t, loc) -> str:
        return self.get(operand, *type_of(t), loc)

    def carried_type(self, t) -> str:
        return self.carried(t)

    def index_zero(self, index_t, loc) -> str:
        return self.constant(0, (), index_t, loc)

    def block_arg(self, name: str, t, loc) -> str:
        return f"{name}: {self.carried(t)} {mlir_loc(loc)}"


def triton_print_prefix(prefix: str, has_value: bool) -> str:
    """The prefix Triton's front end gives ``tt.print`` for ``tl.device_print(prefix, ...)``:
    ending in ": " before a value, and starting with a space when longer than two characters."""
    if has_value and not prefix.endswith(" "):
        prefix += " "
    if has_value and not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    if len(prefix) > 2 and not prefix.startswith(" "):
        prefix = " " + prefix
    return prefix


def _element(operand: Operand) -> Element | WeakType:
    return operand.type if isinstance(operand, Const) else element_of(operand.type)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
