"""The ``emit-mlir`` stage: SSA to upstream MLIR (gpu, func-like gpu.func,
arith, math, scf, memref, vector).

A kernel becomes a ``gpu.func`` kernel in a ``gpu.module``; one workgroup runs
one program instance, and its code is written at the program's level: a tile
is one ``vector`` value (tiles of pointers are vectors of i64 offsets), so the
text needs no layout (the layouts stage is the CUDA back end's business; a
vector-distribution pipeline of one's own spreads the vectors over threads).
Elementwise ops are computed per element (``ops.scalar_op``) in ``scf.for``
nests that build the result vector with ``vector.extract``/``vector.insert``
at dynamic positions: xDSL, which checks this output, takes arith's
conversions and ``select`` on scalars only, and this way every op lowers the
same on scalars and tiles. Loads and stores are guarded ``memref.load`` and
``memref.store`` on the pointer's parameter, a ``memref<?xT>``; runtime loops
are ``scf.for`` with ``iter_args``, ``if`` and ``while`` are ``scf.if`` and
``scf.while``; stage-dots' shared buffers are ``memref.global``s in workgroup
memory (address space 3, NVPTX's shared space) and its barriers
``gpu.barrier``. Each op carries its source location, ``loc("file":line:col)``.

The gpu ops are printed in MLIR's generic form (``"gpu.func"() ...``), which
both MLIR and xDSL read (xDSL has no custom syntax for them).
"""
from __future__ import annotations

from typing import Callable

from mytriton.backends.mlir import ops as table
from mytriton.backends.mlir.ops import OFFSET, constant, convert, scalar_op
from mytriton.backends.mlir.emitter_base import RegionEmitter, lowers
from mytriton.backends.mlir.text import joined, literal, mlir_loc, mlir_string, scalar_type, shaped
from mytriton.diagnostics import Location
from mytriton.ir import opdefs
from mytriton.ir.opdefs import LOWER_BOUNDS
from mytriton.ir.analysis import pointer_bases
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, Operand, Param, Value, yield_types,
)
from mytriton.types import (
    BF16, BOOL, F16, F32, I32, I64, PointerType, ScalarType, SharedType, Type, WeakType, concrete, element_of, promote,
    shape_of,
)

WORKGROUP = 3  # NVPTX's shared address space: MLIR's #gpu.address_space<workgroup> (xDSL lacks that attribute)

Coord = str | int  # an index value's name, or a constant position


def emit_mlir(kernel: Kernel) -> str:
    """MLIR text for SSA at any stage from ``opt`` on (laid-out SSA too: its
    layouts are ignored, ``convert_layout`` is the value itself)."""
    return _Emitter(kernel).emit()


def element_type(t: Type) -> ScalarType:
    """The scalar type an SSA type's elements are in MLIR (a pointer is its i64 offset)."""
    e = concrete(element_of(t))
    return OFFSET if isinstance(e, PointerType) else e


def mlir_type(t: Type) -> str:
    if isinstance(t, SharedType):
        return shared_type(t)
    return shaped(shape_of(t), scalar_type(element_type(t)))


def shared_type(t: SharedType) -> str:
    return f"memref<{t.shape[0]}x{t.shape[1]}x{scalar_type(t.element)}, {WORKGROUP}>"


def memref_type(pointee: ScalarType) -> str:
    return f"memref<?x{scalar_type(pointee)}>"


class _Emitter(RegionEmitter):
    backend = "MLIR"
    table = table

    def __init__(self, kernel: Kernel) -> None:
        super().__init__(kernel, indent=3)
        self.globals: list[tuple[str, SharedType, Location | None]] = []
        self.param_names: dict[Param, str] = {}
        self.zero_offset: str | None = None

    # ---- the module --------------------------------------------------------------------

    def emit(self) -> str:
        kernel = self.kernel
        args = []
        for index, param in enumerate(kernel.params):
            name = _param_name(param.name, index)
            self.param_names[param] = name
            if isinstance(param.type, PointerType):
                t = memref_type(param.type.pointee)
            else:
                t = scalar_type(concrete(param.type))
                self.names[param] = name
            args.append((name, t))
        self.zero_offset = constant(self.w, 0, OFFSET, kernel.loc)
        self.block(kernel.body)
        self.w.line('"gpu.return"() : () -> ()', kernel.loc)
        loc = mlir_loc(kernel.loc)
        out = [f"// mytriton kernel {mlir_string(kernel.name)}: upstream MLIR, one program instance per workgroup",
               "module attributes {gpu.container_module} {",
               '  "gpu.module"() <{sym_name = "mytriton"}> ({']
        for name, t, gloc in self.globals:
            out.append(f'    "memref.global"() <{{sym_name = {mlir_string(name)}, sym_visibility = "private", '
                       f'type = {shared_type(t)}, initial_value, alignment = 16 : i64}}> : () -> () {mlir_loc(gloc)}')
        signature = joined(t for _, t in args)
        out.append(f'    "gpu.func"() <{{function_type = ({signature}) -> ()}}> ({{')
        out.append(f"    ^bb0({joined(f'{n}: {t} {loc}' for n, t in args)}):")
        out.extend(self.w.lines)
        out.append(f"    }}) {{gpu.kernel, sym_name = {mlir_string(kernel.name)}, workgroup_attributions = 0 : i64}} "
                   f": () -> () {loc}")
        out.append(f"  }}) : () -> () {loc}")
        out.append(f"}} {loc}")
        return "\n".join(out) + "\n"

    def op(self, op: Op) -> None:
        self.lowering(op)
        for operand in op.operands:
            if isinstance(operand, Value) and isinstance(element_of(operand.type), PointerType):
                self.base(operand, op)  # one parameter per pointer, checked where it is used
        self.render(op)

    # ---- values ------------------------------------------------------------------------

    def base(self, value: Value, op: Op) -> str:
        """The memref parameter a pointer value offsets."""
        bases = pointer_bases(value)
        if len(bases) != 1:
            names = ", ".join(sorted(p.name for p in bases)) or "none"
            raise self.error("the MLIR back end needs each pointer to come from one pointer parameter; "
                             f"this one may come from: {names}", op)
        return self.param_names[next(iter(bases))]

    def value(self, operand: Operand, t: Type, loc: Location | None) -> str:
        """A whole operand as an MLIR value of the type ``t`` stands for
        (a literal becomes a constant; a tile of one, a dense vector)."""
        if isinstance(operand, Const):
            e = element_type(t)
            shape = shape_of(t)
            if shape:
                return self.w.op(f"arith.constant dense<{literal(operand.value, e)}> : {mlir_type(t)}", loc)
            return constant(self.w, operand.value, e, loc)
        if isinstance(operand, Param) and isinstance(operand.type, PointerType):
            return self.zero_offset
        assert isinstance(operand, Value)
        return self.names[operand]

    def element(self, operand: Operand, coords: list[Coord], want: ScalarType | None,
                loc: Location | None) -> str:
        """The operand's element at the result coordinates ``coords``
        (broadcast: aligned on the right, a dimension of 1 read at 0),
        converted to ``want`` (None: left in its own type)."""
        if isinstance(operand, Const):
            t = want or concrete(operand.type)
            return constant(self.w, operand.value, t, loc)
        assert isinstance(operand, Value)
        source = element_type(operand.type)
        shape = shape_of(operand.type)
        if shape:
            aligned = coords[len(coords) - len(shape):]
            position = [c if d != 1 else 0 for c, d in zip(aligned, shape)]
            name = self.w.op(f"vector.extract {self.names[operand]}[{joined(str(p) for p in position)}] : "
                             f"{scalar_type(source)} from {mlir_type(operand.type)}", loc)
        else:
            name = self.value(operand, operand.type, loc)
        return name if want is None else convert(self.w, name, source, want, loc)

    def source_type(self, operand: Operand) -> ScalarType:
        if isinstance(operand, Const):
            return concrete(operand.type)
        return element_type(operand.type)

    # ---- loops over elements -----------------------------------------------------------

    def index(self, n: int, loc: Location | None) -> str:
        return self.w.op(f"arith.constant {n} : index", loc)

    def counted(self, n: int, carried: list[tuple[str, str]], loc: Location | None,
                body: Callable[[str, list[str]], list[str]]) -> list[str]:
        """``scf.for %i = 0 to n`` carrying ``carried`` (initial value, type);
        ``body(i, carried values)`` returns the yielded values."""
        w = self.w
        lo, hi, one = self.index(0, loc), self.index(n, loc), self.index(1, loc)
        iv = w.fresh()
        args = [w.fresh() for _ in carried]
        types = [t for _, t in carried]
        head = f"scf.for {iv} = {lo} to {hi} step {one}"
        if carried:
            head += f" iter_args({joined(f'{a} = {init}' for a, (init, _) in zip(args, carried))}) " \
                    f"-> ({joined(types)})"
        results = [w.fresh()] if carried else []
        prefix = f"{results[0]}:{len(carried)} = " if len(carried) > 1 else f"{results[0]} = " if carried else ""
        w.line(prefix + head + " {", located=False)
        with w.nested():
            out = body(iv, args)
            w.line(f"scf.yield {joined(out)} : {joined(types)}" if out else "scf.yield", loc)
        w.line("}", loc)
        if len(carried) > 1:
            return [f"{results[0]}#{i}" for i in range(len(carried))]
        return results

    def build(self, shape: tuple[int, ...], element: ScalarType, loc: Location | None,
              compute: Callable[[list[Coord]], str]) -> str:
        """A vector of ``shape`` whose element at each coordinate is ``compute(coords)``."""
        vtype = shaped(shape, scalar_type(element))
        init = self.w.op(f"arith.constant dense<{literal(0, element)}> : {vtype}", loc)

        def level(depth: int, coords: list[Coord], acc: str) -> str:
            def body(i: str, args: list[str]) -> list[str]:
                here = coords + [i]
                if depth + 1 == len(shape):
                    x = compute(here)
                    return [self.w.op(f"vector.insert {x}, {args[0]} [{joined(str(c) for c in here)}] : "
                                      f"{scalar_type(element)} into {vtype}", loc)]
                return [level(depth + 1, here, args[0])]

            return self.counted(shape[depth], [(acc, vtype)], loc, body)[0]

        return level(0, [], init)

    def each(self, shape: tuple[int, ...], loc: Location | None, body: Callable[[list[Coord]], None]) -> None:
        """Run ``body(coords)`` for every coordinate of ``shape`` (nothing carried)."""
        def level(depth: int, coords: list[Coord]) -> None:
            if depth == len(shape):
                body(coords)
                return

            def step(i: str, args: list[str]) -> list[str]:
                level(depth + 1, coords + [i])
                return []

            self.counted(shape[depth], [], loc, step)

        level(0, [])

    def fold(self, shape: tuple[int, ...], init: str, t: ScalarType, loc: Location | None,
             combine: Callable[[list[Coord], str], str]) -> str:
        """A scalar carried over every coordinate of ``shape``: ``combine(coords, acc)``."""
        def level(depth: int, coords: list[Coord], acc: str) -> str:
            if depth == len(shape):
                return combine(coords, acc)
            return self.counted(shape[depth], [(acc, scalar_type(t))], loc,
                                lambda i, args: [level(depth + 1, coords + [i], args[0])])[0]

        return level(0, [], init)

    def per_element(self, op: Op, compute: Callable[[list[Coord]], str]) -> None:
        """The op's one result, a scalar or a tile built element by element."""
        result = op.result
        shape = shape_of(result.type)
        if shape:
            self.names[result] = self.build(shape, element_type(result.type), op.loc, compute)
        else:
            self.names[result] = compute([])

    # ---- elementwise -------------------------------------------------------------------
    # Each op is computed one element at a time (``scalar``: its operands read
    # in the type the op computes in, then ops.scalar_op); the ops that arith
    # and math take on whole vectors are written so where they can be.

    def elementwise(self, op: Op, element: Callable[[Op, list[Coord], ScalarType], str] | None = None) -> None:
        """The op's result built element by element with ``element`` (by
        default ``scalar``)."""
        result_t = element_type(op.result.type)
        compute = element or self.scalar
        self.per_element(op, lambda coords: compute(op, coords, result_t))

    def scalar(self, op: Op, coords: list[Coord], result_t: ScalarType) -> str:
        """One element: the operands read as the result's type, then the op's scalar lowering."""
        args = [self.element(o, coords, result_t, op.loc) for o in op.operands]
        return scalar_op(self.w, op.name, args, result_t, op.loc)

    @lowers("not", "fma", "clamp", "clamp_nan", "umulhi", "sigmoid", *table.LIBDEVICE)
    def op_elementwise(self, op: Op) -> None:
        self.elementwise(op)

    @lowers(*table.BINARY, "broadcast_to")
    def op_binary(self, op: Op) -> None:
        if not self.whole_vector(op):
            self.elementwise(op)

    @lowers(*(name for name in table.MATH if name != "sigmoid"))
    def op_math(self, op: Op) -> None:
        t = element_type(op.result.type)
        if not (t.is_float and t.bits >= 32 and self.whole_vector(op)):
            self.elementwise(op)

    @lowers("neg", "abs")
    def op_sign(self, op: Op) -> None:
        if not (element_type(op.result.type).is_float and self.whole_vector(op)):
            self.elementwise(op)

    @lowers("program_id")
    def op_program_id(self, op: Op) -> None:
        self.grid_index(op, "gpu.block_id")

    @lowers("num_programs")
    def op_num_programs(self, op: Op) -> None:
        self.grid_index(op, "gpu.grid_dim")

    def grid_index(self, op: Op, gpu: str) -> None:
        raw = self.w.op(f'"{gpu}"() <{{dimension = #gpu<dim {"xyz"[op.attrs["axis"]]}>}}> : () -> index', op.loc)
        self.names[op.result] = self.w.op(f"arith.index_cast {raw} : index to i32", op.loc)

    @lowers("hint")
    def op_hint(self, op: Op) -> None:
        if shape_of(op.result.type):
            self.names[op.result] = self.names[op.operands[0]]
        else:
            self.elementwise(op)

    @lowers("full")
    def op_full(self, op: Op) -> None:
        """A literal is a dense constant, a runtime scalar is broadcast."""
        loc, shape, t = op.loc, shape_of(op.result.type), op.attrs["dtype"]
        value = op.operands[0]
        if not shape:
            self.elementwise(op, lambda op, coords, _: self.element(value, coords, t, loc))
            return
        vtype = shaped(shape, scalar_type(t))
        if isinstance(value, Const):
            self.names[op.result] = self.w.op(f"arith.constant dense<{literal(value.value, t)}> : {vtype}", loc)
        else:
            x = self.element(value, [], t, loc)
            self.names[op.result] = self.w.op(f"vector.broadcast {x} : {scalar_type(t)} to {vtype}", loc)

    def whole_vector(self, op: Op) -> bool:
        """Write an elementwise op on whole vectors where the arith or math op
        takes them and no operand tile needs converting (its scalars and
        literals are broadcast); False where it must go element by element.
        Not comparisons: xDSL types arith.cmpi/cmpf on vectors as one i1."""
        loc, shape, t = op.loc, shape_of(op.result.type), element_type(op.result.type)
        if not shape or t == BOOL:
            return False
        if any(isinstance(o, Value) and shape_of(o.type) and element_type(o.type) != t for o in op.operands):
            return False
        vtype = shaped(shape, scalar_type(t))
        args = []
        for operand in op.operands:
            if isinstance(operand, Value) and shape_of(operand.type) == shape:
                args.append(self.names[operand])
                continue
            x = self.value(operand, operand.type, loc) if isinstance(operand, Value) else None
            if isinstance(operand, Const):
                args.append(self.w.op(f"arith.constant dense<{literal(operand.value, t)}> : {vtype}", loc))
                continue
            if not shape_of(operand.type):
                x = convert(self.w, x, element_type(operand.type), t, loc)
            source = mlir_type(operand.type) if shape_of(operand.type) else scalar_type(t)
            args.append(self.w.op(f"vector.broadcast {x} : {source} to {vtype}", loc))
        self.names[op.result] = scalar_op(self.w, op.name, args, t, loc, spelled=vtype)
        return True

    @lowers("addptr")
    def op_addptr(self, op: Op) -> None:
        def element(op: Op, coords: list[Coord], _: ScalarType) -> str:
            loc, (ptr, offset) = op.loc, op.operands
            extra = self.element(offset, coords, None, loc)
            wide = convert(self.w, extra, self.source_type(offset), OFFSET, loc)
            base = self.element(ptr, coords, OFFSET, loc)
            return self.w.op(f"arith.addi {base}, {wide} : i64", loc)

        self.elementwise(op, element)

    @lowers("cast")
    def op_cast(self, op: Op) -> None:
        def element(op: Op, coords: list[Coord], _: ScalarType) -> str:
            x = self.element(op.operands[0], coords, None, op.loc)
            return convert(self.w, x, self.source_type(op.operands[0]), op.attrs["dtype"], op.loc)

        self.elementwise(op, element)

    @lowers("bitcast")
    def op_bitcast(self, op: Op) -> None:
        def element(op: Op, coords: list[Coord], result_t: ScalarType) -> str:
            x = self.element(op.operands[0], coords, None, op.loc)
            source = self.source_type(op.operands[0])
            if source == result_t:
                return x
            return self.w.op(f"arith.bitcast {x} : {scalar_type(source)} to {scalar_type(result_t)}", op.loc)

        self.elementwise(op, element)

    @lowers(*table.COMPARE)
    def op_compare(self, op: Op) -> None:
        """The operands compared in their promoted type (pointers as offsets)."""
        def element(op: Op, coords: list[Coord], _: ScalarType) -> str:
            t = concrete(promote(*(_element(o) for o in op.operands)))
            t = OFFSET if isinstance(t, PointerType) else t
            args = [self.element(o, coords, t, op.loc) for o in op.operands]
            return scalar_op(self.w, op.name, args, t, op.loc)

        self.elementwise(op, element)

    @lowers("where")
    def op_where(self, op: Op) -> None:
        def element(op: Op, coords: list[Coord], result_t: ScalarType) -> str:
            cond = self.element(op.operands[0], coords, BOOL, op.loc)
            args = [self.element(o, coords, result_t, op.loc) for o in op.operands[1:]]
            return scalar_op(self.w, op.name, [cond, *args], result_t, op.loc)

        self.elementwise(op, element)

    @lowers(*table.LIBDEVICE_OTHER)
    def op_float_test(self, op: Op) -> None:
        """A float operand and a bool or i64 answer: computed in the operand's type."""
        def element(op: Op, coords: list[Coord], _: ScalarType) -> str:
            t = self.source_type(op.operands[0])
            return scalar_op(self.w, op.name, [self.element(op.operands[0], coords, t, op.loc)], t, op.loc)

        self.elementwise(op, element)

    # ---- structured ops ----------------------------------------------------------------

    @lowers("arange")
    def op_arange(self, op: Op) -> None:
        start, end = op.attrs["start"], op.attrs["end"]
        values = ", ".join(str(i) for i in range(start, end))
        self.names[op.result] = self.w.op(f"arith.constant dense<[{values}]> : {mlir_type(op.result.type)}",
                                          op.loc)

    @lowers("load")
    def op_load(self, op: Op) -> None:
        ptr, mask, other = op.operands
        pointee = element_of(ptr.type).pointee
        base = self.base(ptr, op)
        loc = op.loc
        ty = scalar_type(pointee)

        def compute(coords: list[Coord]) -> str:
            offset = self.element(ptr, coords, OFFSET, loc)
            where = self.w.op(f"arith.index_cast {offset} : i64 to index", loc)
            read = f"memref.load {base}[{where}] : {memref_type(pointee)}"
            if mask is None:
                return self.w.op(read, loc)
            m = self.element(mask, coords, BOOL, loc)
            return self.guarded(m, ty, loc, lambda: self.w.op(read, loc),
                                lambda: self.fill(other, coords, pointee, loc))

        self.per_element(op, compute)

    def fill(self, other: Operand, coords: list[Coord], t: ScalarType, loc: Location | None) -> str:
        if other is None:  # masked-off elements are undefined in Triton; zero here
            return constant(self.w, 0, t, loc)
        return self.element(other, coords, t, loc)

    def guarded(self, cond: str, ty: str, loc: Location | None, then: Callable[[], str],
                otherwise: Callable[[], str]) -> str:
        w = self.w
        name = w.fresh()
        w.line(f"{name} = scf.if {cond} -> ({ty}) {{", located=False)
        with w.nested():
            w.line(f"scf.yield {then()} : {ty}", loc)
        w.line("} else {", located=False)
        with w.nested():
            w.line(f"scf.yield {otherwise()} : {ty}", loc)
        w.line("}", loc)
        return name

    @lowers("store")
    def op_store(self, op: Op) -> None:
        ptr, value, mask = op.operands
        pointee = element_of(ptr.type).pointee
        base = self.base(ptr, op)
        loc = op.loc

        def body(coords: list[Coord]) -> None:
            offset = self.element(ptr, coords, OFFSET, loc)
            where = self.w.op(f"arith.index_cast {offset} : i64 to index", loc)
            x = self.element(value, coords, pointee, loc)
            write = f"memref.store {x}, {base}[{where}] : {memref_type(pointee)}"
            if mask is None:
                self.w.line(write, loc)
                return
            m = self.element(mask, coords, BOOL, loc)
            self.w.line(f"scf.if {m} {{", located=False)
            with self.w.nested():
                self.w.line(write, loc)
                self.w.line("scf.yield", loc)
            self.w.line("}", loc)

        self.each(shape_of(ptr.type), loc, body)

    # ---- atomics ---------------------------------------------------------------------

    @lowers("atomic_rmw")
    def op_atomic_rmw(self, op: Op) -> None:
        ptr, value, mask = op.operands
        pointee = element_of(ptr.type).pointee
        base = self.base(ptr, op)
        loc = op.loc
        ty = scalar_type(pointee)
        kinds = table.ATOMIC_KIND[op.attrs["kind"]]
        kind = kinds[0] if pointee.is_float else kinds[2] if pointee.unsigned else kinds[1]
        assert kind is not None, f"the type rules give atomic_{op.attrs['kind']} no {pointee}"

        def compute(coords: list[Coord]) -> str:
            offset = self.element(ptr, coords, OFFSET, loc)
            x = self.element(value, coords, pointee, loc)

            def update() -> str:
                where = self.w.op(f"arith.index_cast {offset} : i64 to index", loc)
                return self.w.op(f'"memref.atomic_rmw"({x}, {base}, {where}) '
                                 f"<{{kind = {table.ATOMIC_RMW_KINDS[kind]} : i64}}> : "
                                 f"({ty}, {memref_type(pointee)}, index) -> {ty}", loc)

            if mask is None:
                return update()
            m = self.element(mask, coords, BOOL, loc)
            return self.guarded(m, ty, loc, update, lambda: constant(self.w, 0, pointee, loc))

        self.per_element(op, compute)

    @lowers("atomic_cas")
    def op_atomic_cas(self, op: Op) -> None:
        ptr, cmp, value = op.operands
        pointee = element_of(ptr.type).pointee
        base = self.base(ptr, op)
        loc, w = op.loc, self.w
        ty = scalar_type(pointee)
        it = f"i{pointee.bits}"

        def compute(coords: list[Coord]) -> str:
            offset = self.element(ptr, coords, OFFSET, loc)
            expected = self.element(cmp, coords, pointee, loc)
            x = self.element(value, coords, pointee, loc)
            where = w.op(f"arith.index_cast {offset} : i64 to index", loc)
            if pointee.is_float:  # compared by their bits, as the hardware's cas
                expected = w.op(f"arith.bitcast {expected} : {ty} to {it}", loc)
            name, current = w.fresh(), w.fresh()
            w.line(f'{name} = "memref.generic_atomic_rmw"({base}, {where}) ({{', located=False)
            w.line(f"^bb0({current}: {ty} {mlir_loc(loc)}):", located=False)
            with w.nested():
                bits = w.op(f"arith.bitcast {current} : {ty} to {it}", loc) if pointee.is_float else current
                same = w.op(f"arith.cmpi eq, {bits}, {expected} : {it}", loc)
                new = w.op(f"arith.select {same}, {x}, {current} : {ty}", loc)
                w.line(f'"memref.atomic_yield"({new}) : ({ty}) -> ()', loc)
            w.line(f"}}) : ({memref_type(pointee)}, index) -> {ty}", loc)
            return name

        self.per_element(op, compute)

    @lowers("expand_dims")
    def op_expand_dims(self, op: Op) -> None:
        axis = op.attrs["axis"]
        x = op.operands[0]
        self.per_element(op, lambda c: self.element(x, c[:axis] + c[axis + 1:], None, op.loc))

    @lowers("convert_layout")
    def op_convert_layout(self, op: Op) -> None:
        self.names[op.result] = self.value(op.operands[0], op.result.type, op.loc)

    @lowers("trans", "permute", "reshape", "split", "join")
    def op_remap(self, op: Op) -> None:
        """A shape op: each result element is an operand element at remapped coordinates."""
        loc = op.loc
        operands = op.operands
        shapes = [shape_of(o.type) for o in operands]
        out_shape = shape_of(op.result.type)

        def linear(coords: list[Coord], to_shape: tuple[int, ...]) -> list[Coord]:
            flat = self.index(0, loc)
            for c, d in zip(coords, out_shape):
                scaled = self.w.op(f"arith.muli {flat}, {self.index(d, loc)} : index", loc)
                flat = self.w.op(f"arith.addi {scaled}, {self.coord(c, loc)} : index", loc)
            out: list[Coord] = []
            stride = 1
            for d in reversed(to_shape):
                q = self.w.op(f"arith.divui {flat}, {self.index(stride, loc)} : index", loc)
                out.append(self.w.op(f"arith.remui {q}, {self.index(d, loc)} : index", loc))
                stride *= d
            return out[::-1]

        def compute(coords: list[Coord]) -> str:
            sources = opdefs.source_coords(op.name, op.attrs, shapes, coords, linear)
            values = []
            for operand, at in zip(operands, sources):
                full = [c if d != 1 else 0 for c, d in zip(at, shape_of(operand.type))]
                values.append(self.element(operand, full, None, loc))
            if op.name != "join":
                return values[0]
            first = self.w.op(f"arith.cmpi eq, {self.coord(coords[-1], loc)}, {self.index(0, loc)} : index", loc)
            return self.w.op(f"arith.select {first}, {values[0]}, {values[1]} : "
                             f"{scalar_type(element_type(op.result.type))}", loc)

        self.per_element(op, compute)

    def coord(self, c: Coord, loc: Location | None) -> str:
        return self.index(c, loc) if isinstance(c, int) else c

    # ---- reductions and dots ---------------------------------------------------------

    @lowers("sum", "max", "min")
    def op_reduction(self, op: Op) -> None:
        x = op.operands[0]
        loc = op.loc
        axis = op.attrs.get("axis")
        shape = shape_of(x.type)
        result_t = element_type(op.result.type)
        # f16 and bf16 sum in f32 and round the result, as the CUDA back end does
        t = combining_type(result_t)
        identity = constant(self.w, table.reduce_identity(op.name, t), t, loc)

        def compute(coords: list[Coord]) -> str:
            reduced = shape if axis is None else (shape[axis],)

            def combine(inner: list[Coord], acc: str) -> str:
                at = inner if axis is None else coords[:axis] + inner + coords[axis:]
                return table.reduce_combine(self.w, op.name, acc, self.element(x, at, t, loc), t, loc)

            total = self.fold(reduced, identity, t, loc, combine)
            return convert(self.w, total, t, result_t, loc)

        self.per_element(op, compute)

    @lowers("dot", "dot_shared", "dot_rs")
    def op_dot(self, op: Op) -> None:
        a, b, acc = op.operands
        loc = op.loc
        k = _tile_shape(a.type)[1]
        f32 = element_type(op.result.type)

        def read(operand: Operand, i: Coord, j: Coord) -> str:
            if isinstance(operand.type, SharedType):
                source = operand.type.element
                x = self.w.op(f"memref.load {self.names[operand]}[{i}, {j}] : {shared_type(operand.type)}", loc)
                return convert(self.w, x, source, f32, loc)
            return self.element(operand, [i, j], f32, loc)

        def compute(coords: list[Coord]) -> str:
            i, j = coords
            init = constant(self.w, 0.0, f32, loc) if acc is None else self.element(acc, coords, f32, loc)

            def step(inner: list[Coord], total: str) -> str:
                (kk,) = inner
                return self.w.op(f"math.fma {read(a, i, kk)}, {read(b, kk, j)}, {total} : f32", loc)

            return self.fold((k,), init, f32, loc, step)

        self.per_element(op, compute)

    # ---- shared memory ---------------------------------------------------------------

    @lowers("shared_alloc")
    def op_shared_alloc(self, op: Op) -> None:
        taken = {name for name, _, _ in self.globals}
        name, n = op.attrs["name"], 1
        while name in taken:
            name, n = f"{op.attrs['name']}_{n}", n + 1
        self.globals.append((name, op.result.type, op.loc))
        self.names[op.result] = self.w.op(f"memref.get_global @{name} : {shared_type(op.result.type)}", op.loc)

    @lowers("barrier")
    def op_barrier(self, op: Op) -> None:
        self.w.line('"gpu.barrier"() : () -> ()', op.loc)

    @lowers("copy_to_shared")
    def op_copy_to_shared(self, op: Op) -> None:
        buf, base_ptr, row_offset, col_offset, stride, row_bound, col_bound, fill = op.operands
        self._copy(op, buf, base_ptr, row_offset, col_offset, stride, Const(1), row_bound, col_bound,
                   Const(0), Const(0), fill)

    @lowers("copy_strided_to_shared")
    def op_copy_strided_to_shared(self, op: Op) -> None:
        self._copy(op, *op.operands)

    @lowers("copy_gathered_to_shared")
    def op_copy_gathered_to_shared(self, op: Op) -> None:
        buf, base_ptr, index, row_offset, col_offset, stride, col_stride, row_bound, col_bound, fill = op.operands
        self._copy(op, buf, base_ptr, row_offset, col_offset, stride, col_stride, row_bound, col_bound,
                   Const(0), Const(0), fill, index)

    def _copy(self, op: Op, buf, base_ptr, row_offset, col_offset, stride, col_stride, row_bound, col_bound,
              row_wrap, col_wrap, fill, index=None) -> None:
        """Every element of the buffer, read where in bounds; ``index``: the
        rows are gathered, row P the index array's element P."""
        loc = op.loc
        t = buf.type.element
        ty = scalar_type(t)
        base = self.base(base_ptr, op) if isinstance(base_ptr, Value) else None
        w = self.w

        def wrapped(coordinate: str, wrap) -> str:
            """``coordinate`` remsi ``wrap`` (as the mod op), a wrap of 0 being none."""
            if wrap == Const(0):
                return coordinate
            by = self.element(wrap, [], I32, loc)
            zero = w.op("arith.constant 0 : i32", loc)
            one = w.op("arith.constant 1 : i32", loc)
            none = w.op(f"arith.cmpi eq, {by}, {zero} : i32", loc)
            safe = w.op(f"arith.select {none}, {one}, {by} : i32", loc)
            rem = w.op(f"arith.remsi {coordinate}, {safe} : i32", loc)
            return w.op(f"arith.select {none}, {coordinate}, {rem} : i32", loc)

        def body(coords: list[Coord]) -> None:
            r, c = coords
            ri = w.op(f"arith.index_cast {r} : index to i32", loc)
            ci = w.op(f"arith.index_cast {c} : index to i32", loc)
            row = wrapped(w.op(f"arith.addi {self.element(row_offset, [], I32, loc)}, {ri} : i32", loc), row_wrap)
            col = wrapped(w.op(f"arith.addi {self.element(col_offset, [], I32, loc)}, {ci} : i32", loc), col_wrap)
            row_in = w.op(f"arith.cmpi slt, {row}, {self.element(row_bound, [], I32, loc)} : i32", loc)
            col_in = w.op(f"arith.cmpi slt, {col}, {self.element(col_bound, [], I32, loc)} : i32", loc)
            inside = w.op(f"arith.andi {row_in}, {col_in} : i1", loc)
            for coordinate, lower in zip((row, col), op.attrs.get(LOWER_BOUNDS, (0, 0))):
                if lower:  # the copy tests that axis from 0 too
                    zero = w.op("arith.constant 0 : i32", loc)
                    from_zero = w.op(f"arith.cmpi sge, {coordinate}, {zero} : i32", loc)
                    inside = w.op(f"arith.andi {inside}, {from_zero} : i1", loc)

            def read() -> str:
                # An i64 stride scales its coordinates in 64 bits (the kernel widened them).
                it = OFFSET if I64 in (stride.type, col_stride.type) else I32
                if index is not None:
                    r = self.gathered_row(op, index, row, it)
                else:
                    r = row if it == I32 else convert(w, row, I32, it, loc)
                c = col if it == I32 else convert(w, col, I32, it, loc)
                scaled = w.op(f"arith.muli {r}, {self.element(stride, [], it, loc)} : {scalar_type(it)}", loc)
                if col_stride != Const(1):
                    scaled_col = w.op(f"arith.muli {c}, {self.element(col_stride, [], it, loc)} : {scalar_type(it)}",
                                      loc)
                else:
                    scaled_col = c
                flat = w.op(f"arith.addi {scaled}, {scaled_col} : {scalar_type(it)}", loc)
                wide = convert(w, flat, it, OFFSET, loc)
                start = self.element(base_ptr, [], OFFSET, loc)
                offset = w.op(f"arith.addi {start}, {wide} : i64", loc)
                where = w.op(f"arith.index_cast {offset} : i64 to index", loc)
                return w.op(f"memref.load {base}[{where}] : {memref_type(t)}", loc)

            x = self.guarded(inside, ty, loc, read, lambda: self.element(fill, [], t, loc))
            w.line(f"memref.store {x}, {self.names[buf]}[{r}, {c}] : {shared_type(buf.type)}", loc)

        self.each(buf.type.shape, loc, body)

    def gathered_row(self, op: Op, index: Value, position: str, t: ScalarType) -> str:
        """The index array's element at ``position`` (read in bounds: the caller's guard), as ``t``."""
        loc = op.loc
        pointee = index.type.pointee
        memref = self.base(index, op)
        start = self.element(index, [], OFFSET, loc)
        at = self.w.op(f"arith.addi {start}, {convert(self.w, position, I32, OFFSET, loc)} : i64", loc)
        where = self.w.op(f"arith.index_cast {at} : i64 to index", loc)
        loaded = self.w.op(f"memref.load {memref}[{where}] : {memref_type(pointee)}", loc)
        return convert(self.w, loaded, pointee, t, loc)

    # ---- control flow ----------------------------------------------------------------

    def carried_types(self, values: list[Value]) -> list[str]:
        return [mlir_type(v.type) for v in values]

    def region(self, block: Block, arg_names: list[str]) -> None:
        for arg, name in zip(block.args, arg_names):
            self.names[arg] = name
        with self.w.nested():
            self.block(block)

    @lowers("yield")
    def op_yield(self, op: Op) -> None:
        expected = yield_types(op)
        types = [mlir_type(t) for t in expected]
        values = [self.value(o, t, op.loc) for o, t in zip(op.operands, expected)]
        self.w.line(f"scf.yield {joined(values)} : {joined(types)}" if values else "scf.yield", op.loc)

    # ---- the structured ops' hooks (emitter_base.RegionEmitter) ---------------------------------
    def scalar_operand(self, operand, element, loc) -> str:
        return self.element(operand, [], element, loc)

    def carried_value(self, operand, t, loc) -> str:
        return self.value(operand, t, loc)

    def carried_type(self, t) -> str:
        return mlir_type(t)

    def index_zero(self, index_t, loc) -> str:
        return constant(self.w, 0, index_t, loc)

    def block_arg(self, name: str, t, loc) -> str:
        return f"{name}: {mlir_type(t)}"


def combining_type(t: ScalarType) -> ScalarType:
    """The type a reduction combines in: f32 for f16 and bf16 (rounded once at the end)."""
    return F32 if t in (F16, BF16) else t


def _element(operand: Operand) -> ScalarType | PointerType | WeakType:
    return operand.type if isinstance(operand, Const) else element_of(operand.type)


def _tile_shape(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, SharedType) else shape_of(t)


def _param_name(name: str, index: int) -> str:
    """A parameter's SSA name: its own where MLIR's syntax takes it, else argN."""
    if name.isascii() and name.isidentifier() and not name[0].isdigit():
        return f"%{name}"
    return f"%arg{index}"
