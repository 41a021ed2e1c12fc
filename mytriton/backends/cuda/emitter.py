"""The ``emit-cuda`` stage: SSA to CUDA C++.

One CUDA block runs one program instance. Scalars are ordinary locals shared
in value by every thread. A block value is distributed by its layout
(``layout.py``): each thread computes its *slots* in a loop that nvcc unrolls.
Consecutive ops with the same layout share one slot loop (a *segment*), where
each value is a local; a value read outside its segment is also kept in a
per-thread array (registers once unrolled). A runtime ``for`` becomes a C
``for`` whose carried values are locals (arrays for tiles) that the loop's
results share, as in the first seed chapter.

The first line is a machine-readable header (``// mytriton-kernel: {json}``)
naming the kernel, its parameters and its threads per block, so a ``.cu``
file can be launched on its own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from mytriton.backends.cuda.ctypes import c_cast, c_element, c_literal, c_scalar, needs_half_headers
from mytriton.backends.cuda.layout import BlockedLayout, default_layout
from mytriton.diagnostics import CompileError
from mytriton.ir.analysis import stored_params
from mytriton.ir.opdefs import CMP_OPS, MATH_FUNCTIONS
from mytriton.ir.ssa import Block, Const, Kernel, Op, Operand, Value, walk
from mytriton.ir.ssa_text import _Names
from mytriton.types import (
    BF16, BOOL, F16, F32, BlockType, PointerType, ScalarType, WeakType, concrete, element_of, promote,
)

HEADER_PREFIX = "// mytriton-kernel: "
INDENT = "  "

_C_KEYWORDS = frozenset("""
    auto bool break case char class const continue default delete do double else enum extern
    float for friend goto if inline int long new operator private protected public register
    return short signed sizeof static struct switch template this throw typedef typename union
    unsigned using virtual void volatile while half threadIdx blockIdx blockDim gridDim k
""".split())


@dataclass
class Segment:
    kind: str  # "scalar", "slots", "loop", "yield"
    ops: list[Op] = field(default_factory=list)
    layout: BlockedLayout | None = None


def block_layout(value: Value | Op, num_warps: int) -> BlockedLayout | None:
    t = value.type if isinstance(value, Value) else None
    if isinstance(value, Op):
        if value.name == "store":
            t = value.operands[0].type
        elif value.results:
            t = value.results[0].type
    return default_layout(t.shape, num_warps) if isinstance(t, BlockType) else None


class CudaEmitter:
    def __init__(self, kernel: Kernel, num_warps: int) -> None:
        if num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
            raise CompileError(f"num_warps must be a power of two from 1 to 32, got {num_warps}")
        self.kernel = kernel
        self.num_warps = num_warps
        self.threads = 32 * num_warps
        self.ssa_names = _Names(kernel)
        self.cnames: dict[Value, str] = {}
        self.storage: dict[Value, str] = {}  # values kept in per-thread arrays or loop locals
        self.segment_of: dict[Op, int] = {}
        self.segments: dict[int, list[Segment]] = {}  # id(block) -> its segments
        self.layouts: dict[BlockedLayout, str] = {}
        self.lines: list[str] = []
        self.locals: set[Value] = set()  # tile values held as locals in the current slot loop
        self.depth = 1
        self._param_names()

    # ---- naming -------------------------------------------------------------------
    def _param_names(self) -> None:
        for p in self.kernel.params:
            name = p.name
            if name in _C_KEYWORDS or name.startswith("__") or (name[:1] in "vtL" and name[1:].isdigit()):
                name += "_"
            self.cnames[p] = name

    def name(self, value: Value) -> str:
        if value not in self.cnames:
            self.cnames[value] = "v" + self.ssa_names.names[value][1:]
        return self.cnames[value]

    def layout_name(self, layout: BlockedLayout) -> str:
        if layout not in self.layouts:
            self.layouts[layout] = f"L{len(self.layouts)}"
        return self.layouts[layout]

    # ---- planning -------------------------------------------------------------------
    def partition(self, block: Block) -> list[Segment]:
        segments: list[Segment] = []
        open_segment: Segment | None = None
        for op in block.ops:
            if op.name == "for":
                open_segment = None
                segments.append(Segment("loop", [op]))
                self.segments[id(op.regions[0])] = self.partition(op.regions[0])
                continue
            if op.name == "yield":
                open_segment = None
                segments.append(Segment("yield", [op]))
                continue
            layout = block_layout(op, self.num_warps)
            if layout is None:
                entry = Segment("scalar", [op])
                if open_segment is not None and op.name not in ("load", "store"):
                    segments.insert(len(segments) - 1, entry)  # scalars never depend on the open tile
                else:
                    open_segment = None
                    segments.append(entry)
                continue
            self._check_layouts(op, layout)
            if open_segment is None or open_segment.layout != layout:
                open_segment = Segment("slots", [], layout)
                segments.append(open_segment)
            open_segment.ops.append(op)
        for index, segment in enumerate(segments):
            for op in segment.ops:
                self.segment_of[op] = id(segment)
        return segments

    def _check_layouts(self, op: Op, layout: BlockedLayout) -> None:
        for operand in op.operands:
            if isinstance(operand, Value) and isinstance(operand.type, BlockType):
                if block_layout(operand, self.num_warps) != layout:
                    raise CompileError(
                        f"the CUDA backend cannot yet combine a {operand.type} with a "
                        f"{op.results[0].type if op.results else op.operands[0].type} in '{op.name}'", op.loc)

    def plan_storage(self) -> None:
        """Block values read outside the segment that defines them get arrays."""
        defined_in: dict[Value, int] = {}
        for op in walk(self.kernel.body):
            for result in op.results:
                defined_in[result] = self.segment_of.get(op, -1)
        for op in walk(self.kernel.body):
            for operand in op.operands:
                if not isinstance(operand, Value) or not isinstance(operand.type, BlockType):
                    continue
                if operand not in defined_in:
                    continue  # a block argument: loops give those storage
                if op.name in ("for", "yield") or self.segment_of.get(op) != defined_in[operand]:
                    self.storage[operand] = "t" + self.name(operand)[1:]
            if op.name == "for":
                for arg, result in zip(op.regions[0].args[1:], op.results):
                    store = ("t" if isinstance(result.type, BlockType) else "v") + self.name(result)[1:]
                    self.storage[arg] = store
                    self.storage[result] = store

    # ---- output ------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text)

    def emit(self) -> str:
        top = self.partition(self.kernel.body)
        self.plan_storage()
        body_lines = self.lines
        self.block_segments(top)
        prologue = []
        for layout, lname in self.layouts.items():
            prologue.append(f"// {lname}: {layout.describe()}")
            for d in range(layout.rank):
                prologue.append(f"const int {lname}_p{d} = {layout.thread_position(d)};")
        return self.render(prologue, body_lines)

    def render(self, prologue: list[str], body: list[str]) -> str:
        header = {
            "kernel": self.kernel.name,
            "params": [[p.name, str(p.type)] for p in self.kernel.params],
            "constexprs": {k: (v.name if isinstance(v, ScalarType) else v)
                           for k, v in self.kernel.constexprs.items()},
            "stores": stored_params(self.kernel),
            "num_warps": self.num_warps,
            "threads": self.threads,
            "source": self.kernel.loc.file,
        }
        out = [HEADER_PREFIX + json.dumps(header, sort_keys=False)]
        out.append(f"// Generated by mytriton from {self.kernel.loc.file}:{self.kernel.loc.line}; "
                   "value vN is SSA value %N.")
        types = [p.type for p in self.kernel.params] + [r.type for op in walk(self.kernel.body) for r in op.results]
        if needs_half_headers(types):
            out += ["#include <cuda_fp16.h>", "#include <cuda_bf16.h>"]
        out.append("#include <math_constants.h>")
        out.append("")
        params = ", ".join(f"{c_element(p.type)} {self.cnames[p]}" for p in self.kernel.params)
        out.append(f'extern "C" __global__ void __launch_bounds__({self.threads}) '
                   f"{self.kernel.name}({params}) {{")
        out += [INDENT + line for line in prologue]
        out += body
        out.append("}")
        return "\n".join(out) + "\n"

    # ---- blocks and segments ------------------------------------------------------------
    def block_segments(self, segments: list[Segment]) -> None:
        for segment in segments:
            if segment.kind == "scalar":
                self.scalar_op(segment.ops[0])
            elif segment.kind == "slots":
                self.slot_segment(segment)
            elif segment.kind == "loop":
                self.loop(segment.ops[0])

    def slot_segment(self, segment: Segment) -> None:
        layout = segment.layout
        assert layout is not None
        lname = self.layout_name(layout)
        for op in segment.ops:
            for result in op.results:
                if result in self.storage:
                    self.line(f"{c_element(result.type)} {self.storage[result]}[{layout.slots}];")
        self.line(f"#pragma unroll")
        self.line(f"for (int k = 0; k < {layout.slots}; ++k) {{")
        self.depth += 1
        positions = [f"{lname}_p{d}" for d in range(layout.rank)]
        coords = layout.coordinates("k", positions)
        needs_coords = any(op.name == "arange" for op in segment.ops)
        if needs_coords:
            for d, coord in enumerate(coords):
                self.line(f"const int {lname}_c{d} = {coord};")
        self.slot_context = (layout, lname, positions)
        self.locals: set[Value] = set()
        for op in segment.ops:
            self.slot_op(op)
        self.depth -= 1
        self.line("}")

    # ---- operands ------------------------------------------------------------------------
    def operand(self, operand: Operand, t: ScalarType, in_slots: bool) -> str:
        """``operand`` as a C expression of type ``t``."""
        if isinstance(operand, Const):
            return c_literal(operand.value, t)
        assert operand is not None
        source = element_of(operand.type)
        text = self.value_ref(operand, in_slots)
        if isinstance(source, PointerType):
            return text
        return c_cast(text, source, t)

    def value_ref(self, value: Value, in_slots: bool) -> str:
        if isinstance(value.type, BlockType):
            assert in_slots, "a tile is read only inside a slot loop"
            if value in self.locals:
                return self.name(value)
            return f"{self.storage[value]}[k]"
        return self.storage.get(value, self.name(value))

    # ---- ops ----------------------------------------------------------------------------------
    def scalar_op(self, op: Op) -> None:
        self.op_statement(op, in_slots=False)

    def slot_op(self, op: Op) -> None:
        self.op_statement(op, in_slots=True)
        for result in op.results:
            self.locals.add(result)
            if result in self.storage:
                self.line(f"{self.storage[result]}[k] = {self.name(result)};")

    def op_statement(self, op: Op, in_slots: bool) -> None:
        name = op.name
        if name == "store":
            ptr, value, mask = op.operands
            pointee = element_of(ptr.type).pointee
            conditions = []
            if in_slots:
                layout, _, positions = self.slot_context
                owner = layout.owner("k", positions)
                if owner:
                    conditions.append(owner)
            else:
                conditions.append("threadIdx.x == 0")
            if mask is not None:
                conditions.append(self.operand(mask, BOOL, in_slots))
            target = f"*{self.value_ref(ptr, in_slots)} = {self.operand(value, pointee, in_slots)};"
            if conditions:
                self.line(f"if ({' && '.join(conditions)}) {target}")
            else:
                self.line(target)
            return
        result = op.results[0]
        ctype = c_element(result.type)
        expr = self.expression(op, in_slots)
        qualifier = "" if isinstance(element_of(result.type), PointerType) else "const "
        self.line(f"{qualifier}{ctype} {self.name(result)} = {expr};  // {name} @{op.loc.line if op.loc else 0}")

    def expression(self, op: Op, in_slots: bool) -> str:
        name = op.name
        result_t = op.results[0].type
        element = element_of(result_t)
        if name == "program_id":
            return f"(int)blockIdx.{'xyz'[op.attrs['axis']]}"
        if name == "num_programs":
            return f"(int)gridDim.{'xyz'[op.attrs['axis']]}"
        if name == "arange":
            _, lname, _ = self.slot_context
            return f"{op.attrs['start']} + {lname}_c0" if op.attrs["start"] else f"{lname}_c0"
        if name == "full":
            return self.operand(op.operands[0], op.attrs["dtype"], in_slots)
        if name == "addptr":
            ptr, offset = op.operands
            off_t = concrete(element_of(offset.type)) if offset is not None else None
            return f"({self.value_ref(ptr, in_slots)} + {self.operand(offset, off_t, in_slots)})"
        if name == "load":
            ptr, mask, other = op.operands
            pointee = element_of(ptr.type).pointee
            read = f"*{self.value_ref(ptr, in_slots)}"
            if mask is None:
                return read
            fill = self.operand(other, pointee, in_slots) if other is not None else c_literal(0, pointee)
            return f"({self.operand(mask, BOOL, in_slots)} ? {read} : {fill})"
        if name == "cast":
            (x,) = op.operands
            source = concrete(element_of(x.type)) if not isinstance(x, Const) else op.attrs["dtype"]
            return c_cast(self.operand(x, source, in_slots), source, op.attrs["dtype"])
        if name == "where":
            cond, a, b = op.operands
            if isinstance(element, PointerType):
                return f"({self.operand(cond, BOOL, in_slots)} ? {self.value_ref(a, in_slots)} : " \
                       f"{self.value_ref(b, in_slots)})"
            t = _arith_type(element)
            expr = (f"({self.operand(cond, BOOL, in_slots)} ? {self.operand(a, t, in_slots)} : "
                    f"{self.operand(b, t, in_slots)})")
            return c_cast(expr, t, element)
        if name in ("sum", "max", "min", "dot", "expand_dims"):
            raise CompileError(f"the CUDA backend does not support '{name}' yet", op.loc)
        if name in CMP_OPS:
            t = _arith_type(concrete(promote(*(element_of(o.type) for o in op.operands))))
            a, b = (self.operand(o, t, in_slots) for o in op.operands)
            return f"({a} {_CMP[name]} {b})"
        t = _arith_type(element)
        args = [self.operand(o, t, in_slots) for o in op.operands]
        return c_cast(_arith_expr(name, t, args, op), t, element)

    # ---- loops ------------------------------------------------------------------------------
    def loop(self, op: Op) -> None:
        body = op.regions[0]
        start, stop, step = op.operands[:3]
        inits = op.operands[3:]
        for arg, init in zip(body.args[1:], inits):
            self.init_carried(arg, init)
        index = self.name(body.args[0])
        lo = self.operand(start, concrete(element_of(start.type)), False)
        hi = self.operand(stop, concrete(element_of(stop.type)), False)
        self.line(f"for (int {index} = {lo}; {index} < {hi}; {index} += {step.value}) {{  "
                  f"// for @{op.loc.line if op.loc else 0}")
        self.depth += 1
        segments = self.segments[id(body)]
        self.block_segments(segments[:-1])
        self.yield_values(body.ops[-1], body.args[1:])
        self.depth -= 1
        self.line("}")

    def init_carried(self, arg: Value, init: Operand) -> None:
        storage = self.storage[arg]
        t = arg.type
        if isinstance(t, BlockType):
            layout = default_layout(t.shape, self.num_warps)
            self.line(f"{c_element(t)} {storage}[{layout.slots}];")
            self.copy_slots(storage, init, t, layout)
        else:
            self.line(f"{c_element(t)} {storage} = {self.scalar_or_pointer(init, t)};")

    def scalar_or_pointer(self, value: Operand, t) -> str:
        if isinstance(element_of(t), PointerType):
            return self.value_ref(value, False)
        return self.operand(value, element_of(t), False)

    def copy_slots(self, target: str, value: Operand, t: BlockType, layout: BlockedLayout) -> None:
        self.line("#pragma unroll")
        source = self._slot_source(value, t)
        self.line(f"for (int k = 0; k < {layout.slots}; ++k) {target}[k] = {source};")

    def _slot_source(self, value: Operand, t: BlockType) -> str:
        e = element_of(t)
        if isinstance(value, Const):
            return c_literal(value.value, e)
        if isinstance(value.type, BlockType):
            return f"{self.storage[value]}[k]"
        return self.scalar_or_pointer(value, t)

    def yield_values(self, op: Op, carried: list[Value]) -> None:
        moves = [(arg, value) for arg, value in zip(carried, op.operands) if value is not arg]
        reads_carried = any(isinstance(v, Value) and v in carried for _, v in moves)
        temps: list[tuple[str, Value]] = []
        for i, (arg, value) in enumerate(moves):
            t = arg.type
            target = self.storage[arg]
            if reads_carried:
                temp = f"{target}_next"
                if isinstance(t, BlockType):
                    layout = default_layout(t.shape, self.num_warps)
                    self.line(f"{c_element(t)} {temp}[{layout.slots}];")
                    self.copy_slots(temp, value, t, layout)
                else:
                    self.line(f"const {c_element(t)} {temp} = {self.scalar_or_pointer(value, t)};")
                temps.append((temp, arg))
                continue
            self.assign_carried(target, value, t)
        for temp, arg in temps:
            t = arg.type
            if isinstance(t, BlockType):
                layout = default_layout(t.shape, self.num_warps)
                self.line("#pragma unroll")
                self.line(f"for (int k = 0; k < {layout.slots}; ++k) {self.storage[arg]}[k] = {temp}[k];")
            else:
                self.line(f"{self.storage[arg]} = {temp};")

    def assign_carried(self, target: str, value: Operand, t) -> None:
        if isinstance(t, BlockType):
            self.copy_slots(target, value, t, default_layout(t.shape, self.num_warps))
        else:
            self.line(f"{target} = {self.scalar_or_pointer(value, t)};")


_CMP = {"cmp_lt": "<", "cmp_le": "<=", "cmp_gt": ">", "cmp_ge": ">=", "cmp_eq": "==", "cmp_ne": "!="}

_MATH_F32 = {
    "exp": "expf({0})", "exp2": "exp2f({0})", "log": "logf({0})", "log2": "log2f({0})",
    "sqrt": "sqrtf({0})", "rsqrt": "rsqrtf({0})", "sin": "sinf({0})", "cos": "cosf({0})",
    "floor": "floorf({0})", "ceil": "ceilf({0})", "sigmoid": "(1.0f / (1.0f + expf(-({0}))))",
}


def _arith_type(t) -> ScalarType:
    """Half-precision values compute in f32 and are rounded back."""
    t = concrete(t) if isinstance(t, WeakType) else t
    return F32 if t in (F16, BF16) else t


def _arith_expr(name: str, t: ScalarType, args: list[str], op: Op) -> str:
    if name in MATH_FUNCTIONS:
        return _MATH_F32[name].format(args[0])
    if name == "neg":
        return f"(-{args[0]})"
    if name == "abs":
        return f"fabsf({args[0]})" if t.is_float else f"abs({args[0]})"
    if name == "not":
        return f"(!{args[0]})" if t == BOOL else f"(~{args[0]})"
    a, b = args
    if name in ("maximum", "minimum"):
        fn = {"maximum": "fmaxf", "minimum": "fminf"}[name] if t.is_float else name[:3]
        return f"{fn}({a}, {b})"
    if name == "xor" and t == BOOL:
        return f"({a} != {b})"
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "/", "mod": "%",
              "and": "&&" if t == BOOL else "&", "or": "||" if t == BOOL else "|", "xor": "^"}.get(name)
    if symbol is None:
        raise CompileError(f"the CUDA backend does not support '{name}'", op.loc)
    return f"({a} {symbol} {b})"


def emit_cuda(kernel: Kernel, num_warps: int = 4) -> str:
    return CudaEmitter(kernel, num_warps).emit()


def read_header(source: str, file: str = "<cuda>") -> dict:
    """The launch facts a ``.cu`` file from ``emit-cuda`` carries on its first line."""
    from mytriton.diagnostics import Location

    first = source.split("\n", 1)[0]
    if not first.startswith(HEADER_PREFIX):
        raise CompileError("not a mytriton CUDA file: the first line must be the "
                           f"'{HEADER_PREFIX.strip()}' header that emit-cuda writes", Location(file, 1, 1))
    try:
        header = json.loads(first[len(HEADER_PREFIX):])
    except json.JSONDecodeError as err:
        raise CompileError(f"malformed mytriton-kernel header: {err.msg}",
                           Location(file, 1, len(HEADER_PREFIX) + err.pos + 1)) from None
    for key in ("kernel", "params", "threads", "stores"):
        if key not in header:
            raise CompileError(f"the mytriton-kernel header lacks '{key}'", Location(file, 1, 1))
    return header
