"""The SSA verifier: what every stage's SSA must satisfy.

- every op is known, has its operands and attributes, and declares the result
  types its type rule gives;
- a value is used only after its definition, in its own region or one nested
  inside it: nothing defined in a loop body is used after the loop;
- every value is defined once;
- a loop's bounds are i32 scalars and its step a positive integer constant
  or an i32 scalar value (a runtime step, positive by contract);
  its carried inputs, block arguments, yields and results agree in number and
  type; its body ends with ``yield``, and ``yield`` appears nowhere else;
- a float literal meets an integer type only where it has a value there (no
  ``load %p, %m, -inf : i64``);
- kernel parameters are scalars or pointers;
- layouts appear only in laid-out SSA (whose header gives ``num_warps``),
  and there on every tile and shared buffer: each fits its shape and the
  warp count, and each op reads its tile operands in the layouts its
  ``layout_rule`` says (a tile changes layout only through ``convert_layout``);
- an ``if`` reads one bool scalar and has two regions without arguments
  (then, else), each ending with a ``yield`` of values of the op's result
  types; a ``while`` has a condition region and a body region, both taking
  the carried values (of the op's result types, as its initial values), the
  first ending with ``condition`` of a bool scalar, the second with a
  ``yield`` of the next carried values; ``yield`` and ``condition`` appear
  nowhere else;
- shared buffers are allocated at the kernel's top level (never in a loop),
  each under its own name, and are operands only where an op expects one
  (``copy_to_shared``, ``dot_shared``): no loop carries one;
- the CUDA back end's decisions have their values: an async copy's ``chunk``
  a power of two of at most 16 bytes, its ``zero_fill`` only on whole chunks, a combine's ``strategy`` shuffle or shared
  and, through shared memory, its ``chunks_per_row`` a power of two dividing
  its rows, no more chunks in all than threads, a dot's ``read_widths`` (on
  CUDA cores) 1 or a 16-byte vector of its f32 or f64 result for each operand,
  a dot's ``a_pad`` whole 16-byte units of A's elements, on a dot that writes a
  register A tile to scratch (not a wgmma ``dot_rs``), a statement's ``scratch_barrier`` true or false, only on an op that may
  address shared scratch, a wgmma dot's ``proxy_fence`` true or false, both in
  a kernel with a shared-memory plan;
- a laid-out kernel's ``shared_memory`` plan gives every buffer an offset past
  its scratch, within its bytes and apart from the other buffers (but those
  whose live ranges a drained barrier separates); without a plan no buffer
  has an offset;
- a ``reduce`` or ``scan`` reads N >= 1 tiles of one shape and has one region
  taking 2N scalars (the tiles' element types, twice) and ending with a
  ``yield`` of N values of those types; the region is closed (its arguments,
  the kernel's parameters and literals) and holds pure scalar ops only.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, OpResult, Param, Value, combine_region_problem, defining_block, is_combine, is_within,
    walk, walk_op,
)
from mytriton.ir.ssa_text import op_text
from mytriton.limits import MAX_EXPRESSION_DEPTH, tile_error
from mytriton.ir.layout_attributes import SHARED_KINDS, Mma, NvmmaShared, Slice, broadcast_view, shape_problem
from mytriton.ir.literals import carried_type_fits, literal_conversion_error
from mytriton.passes.buffer_liveness import Liveness
from mytriton.passes.dot_layouts import column_major_problem, computed_by_wgmma
from mytriton.types import BF16, BOOL, F16, F32, F64, BlockType, SharedType, TypeRuleError, concrete, element_of, without_layout


class Verifier:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.defined: set[Value] = set()
        self.everywhere: set[Value] = set()  # every value defined anywhere, to explain misuse
        self.buffer_names: dict[str, Op] = {}
        self.depths: dict[Value, int] = {}  # op results -> the length of the chain of ops that computes them
        self.ops: list[Op] = []

    def error(self, message: str, op: Op | None) -> CompileError:
        loc = op.loc if op is not None and op.loc is not None else self.kernel.loc
        err = CompileError(f"invalid SSA: {message}", loc)
        if op is not None:
            err.note(None, f"in: {op_text(self.kernel, op)}")
        return err

    def run(self) -> None:
        for param in self.kernel.params:
            if isinstance(param.type, (BlockType, SharedType)):
                kind = "a block" if isinstance(param.type, BlockType) else "a shared buffer"
                raise CompileError(f"invalid SSA: parameter '{param.name}' cannot be {kind}",
                                   self.kernel.loc)
        self.ops = list(walk(self.kernel.body))  # every op, in program order: each check below reads it
        for op in self.ops:
            for value in op.results:
                self.everywhere.add(value)
            for region in op.regions:
                self.everywhere.update(region.args)
        if self.kernel.laid_out:
            problem = _num_warps_problem(self.kernel.num_warps)
            if problem:
                raise CompileError(f"invalid SSA: {problem}", self.kernel.loc)
        visible = set(self.kernel.params)
        self.block(self.kernel.body, visible, in_loop=False)
        self.shared_memory_plan()
        self.copy_chunks()
        self.combine_chunks()
        self.dot_read_widths()
        self.dot_a_pads()
        self.dot_columns()
        self.scratch_barriers()
        self.proxy_fences()
        self.held_tiles()

    def scratch_barriers(self) -> None:
        """``scratch_barrier`` (insert-barriers'): true or false, in a kernel
        with a shared_memory plan, on a statement that may address shared
        scratch: a load, store, atomic, reduction, scan, dot, layout change or
        an op staged through scratch (never a loop, an if, a yield, a barrier, a buffer or a pure op)."""
        for op in self.ops:
            if "scratch_barrier" not in op.attrs:
                continue
            value = op.attrs["scratch_barrier"]
            if type(value) is not bool:
                raise self.error(f"scratch_barrier must be true or false, got {value!r}", op)
            if self.kernel.shared_memory is None:
                raise self.error("a statement has a scratch_barrier, but the kernel has no shared_memory plan "
                                 "(insert-barriers runs after allocate-shared)", op)
            opdef = opdefs.lookup(op.name)
            if opdef.layout_rule not in ("load", "store", "reduce", "scan", "dot", "convert") \
                    and not opdef.stages_through_scratch:
                raise self.error(f"'{op.name}' never addresses shared scratch: it cannot have a scratch_barrier "
                                 "(a barrier op orders what it must)", op)

    def proxy_fences(self) -> None:
        """``proxy_fence`` (proxy-fences'): true or false, on a dot that wgmma
        computes (its result in a version-3 mma layout) or a TMA copy, in a kernel with a
        shared-memory plan; a ``proxy_fence`` op (the pass's, before a loop)
        in such a kernel too."""
        for op in self.ops:
            if op.name == "proxy_fence" and self.kernel.shared_memory is None:
                raise self.error("a proxy_fence is the proxy-fences pass's, in a kernel with a shared_memory plan "
                                 "(it runs after allocate-shared)", op)
            if "proxy_fence" not in op.attrs:
                continue
            if type(op.attrs["proxy_fence"]) is not bool:
                raise self.error(f"proxy_fence must be true or false, got {op.attrs['proxy_fence']!r}", op)
            if not computed_by_wgmma(op) and not opdefs.is_tma_copy(op):
                raise self.error("proxy_fence is for a dot that wgmma computes (its result in a version-3 mma "
                                 "layout) or a TMA copy", op)
            if self.kernel.shared_memory is None:
                raise self.error(f"{'a dot' if computed_by_wgmma(op) else 'a TMA copy'} has a proxy_fence, but the kernel has no shared_memory plan "
                                 "(proxy-fences runs after allocate-shared)", op)

    def copy_chunks(self) -> None:
        """An async copy's ``chunk`` (copy-widths'): a power of two of at most
        16 bytes of its elements; ``chunks`` with it where it is over 1;
        ``zero_fill`` only with ``chunks="whole"``, one of ``ZERO_FILLS``. A
        combine's ``strategy`` (combine-strategy's): shuffle or shared."""
        for op in self.ops:
            if op.attrs.get("strategy", "shared") not in ("shuffle", "shared"):
                raise self.error(f"strategy={op.attrs['strategy']!r} is neither 'shuffle' nor 'shared'", op)
            if "chunk" not in op.attrs and "chunks" not in op.attrs:
                continue
            chunk, chunks = op.attrs.get("chunk"), op.attrs.get("chunks")
            nbytes = op.operands[0].type.element.nbytes
            if type(chunk) is not int or chunk < 1 or chunk & (chunk - 1) or chunk * nbytes > 16:
                raise self.error(f"chunk={chunk!r} is not a power of two of at most 16 bytes "
                                 f"({nbytes}-byte elements)", op)
            if (chunk > 1) != (chunks is not None) or chunks not in (None, "whole", "aligned", "checked"):
                raise self.error(f"a copy of chunk={chunk} has chunks={chunks!r}: 'whole', 'aligned' or "
                                 "'checked' with chunks over 1 element, none with 1", op)
            opdef = opdefs.lookup(op.name)
            if chunks not in (None, "whole", "checked") and opdef is not None and opdef.operands[-1:] != ("pred",):
                raise self.error(f"a copy waited for moves chunks only where they are whole, proven or checked at "
                                 f"run time, not {chunks!r} (an async copy trusts an alignment with no bound)", op)
            zero_fill = op.attrs.get(opdefs.ZERO_FILL)
            if zero_fill is not None and zero_fill not in opdefs.ZERO_FILLS:
                raise self.error(f"zero_fill={zero_fill!r} is neither 'ignore_src' nor 'src_size'", op)
            if zero_fill is not None and chunks != "whole":
                raise self.error(f"zero_fill={zero_fill!r} on a copy of chunks={chunks!r}: only whole chunks "
                                 "choose how cp.async zero-fills them (others take a source size)", op)

    def combine_chunks(self) -> None:
        """A combine's ``chunks_per_row`` (combine-strategy's, with
        ``strategy="shared"``, in a laid-out kernel): a power of two that
        divides its rows' length, and where it is over 1, no more chunks in
        all than the kernel has threads (each combines one)."""
        for op in self.ops:
            if "chunks_per_row" not in op.attrs:
                continue
            chunks = op.attrs["chunks_per_row"]
            if op.attrs.get("strategy") != "shared":
                raise self.error('chunks_per_row is for a combine through shared memory (strategy="shared")', op)
            if not self.kernel.laid_out:
                raise self.error("chunks_per_row is the combine-strategy pass's decision, on laid-out SSA only "
                                 "(num_warps)", op)
            shape = op.operands[0].type.shape
            numel = prod(shape)
            length = numel if op.attrs.get("axis") is None else shape[op.attrs["axis"]]
            rows, threads = numel // length, 32 * self.kernel.num_warps
            if type(chunks) is not int or chunks < 1 or chunks & (chunks - 1) or length % chunks:
                raise self.error(f"chunks_per_row={chunks!r} is not a power of two that divides the rows' "
                                 f"{length} elements", op)
            if chunks > 1 and rows * chunks > threads:
                raise self.error(f"chunks_per_row={chunks} cuts {rows} row(s) into {rows * chunks} chunks, "
                                 f"more than the kernel's {threads} threads", op)

    def dot_read_widths(self) -> None:
        """A dot's ``read_widths`` (read-widths'), in a laid-out kernel, on a
        dot on CUDA cores (its result in no mma layout): two widths, A's and
        B's, each 1 or, for an f32 or f64 result, a 16-byte vector of it."""
        for op in self.ops:
            if "read_widths" not in op.attrs:
                continue
            if not self.kernel.laid_out:
                raise self.error("read_widths is the read-widths pass's decision, on laid-out SSA only (num_warps)",
                                 op)
            result = op.results[0].type
            if isinstance(result.layout, Mma):
                raise self.error("read_widths is for a dot on CUDA cores, but this one's result is in an mma "
                                 "layout (tensor cores)", op)
            element = element_of(result)
            vector = {F32: 4, F64: 2}.get(element)
            widths = op.attrs["read_widths"]
            if len(widths) != 2 or any(w not in (1, vector or 1) for w in widths):
                each = f"1 or {vector} (16 bytes of {element})" if vector else f"1 ({element} results are read " \
                    "one value at a time)"
                raise self.error(f"read_widths={widths} must be two widths, A's and B's, each {each}", op)

    def dot_a_pads(self) -> None:
        """A dot's ``a_pad`` (allocate-shared's), in a laid-out kernel: whole
        16-byte units of A's elements, so that the rows of A in scratch stay
        as aligned as the FMA loop's reads and ldmatrix need them; not on a
        ``dot_rs`` in a wgmma layout, whose A is never written to scratch."""
        for op in self.ops:
            if "a_pad" not in op.attrs:
                continue
            if not self.kernel.laid_out:
                raise self.error("a_pad is the allocate-shared pass's decision, on laid-out SSA only (num_warps)", op)
            layout = op.results[0].type.layout
            if op.name == "dot_rs" and isinstance(layout, Mma) and layout.version == 3:
                raise self.error("a_pad is for a dot whose A tile is written to scratch, but a dot_rs in a wgmma "
                                 "layout reads A from registers", op)
            element = element_of(op.operands[0].type)
            unit = max(1, 16 // element.nbytes)
            row = 0 if op.attrs.get("a_columns") else -1  # a column-major tile's rows are A's columns
            pad, most = op.attrs["a_pad"], max(unit, op.operands[0].type.shape[row])
            if pad < 0 or pad % unit or pad > most:
                raise self.error(f"a_pad={pad} must be whole 16-byte units of A's {element} elements (a multiple "
                                 f"of {unit}), at most {most}", op)

    def dot_columns(self) -> None:
        """``a_columns``/``b_columns`` (allocate-shared's) only on an operand
        the CUDA back end can write column-major
        (``dot_layouts.column_major_problem``); ``b_pad`` only with
        ``b_columns``, whole 16-byte units."""
        for op in self.ops:
            for label in ("a", "b"):
                if not op.attrs.get(f"{label}_columns"):
                    continue
                problem = column_major_problem(op, label)
                if problem:
                    raise self.error(f"{label}_columns: {problem}", op)
            if "b_pad" not in op.attrs:
                continue
            if not op.attrs.get("b_columns"):
                raise self.error("b_pad pads the rows of a column-major B tile: it needs b_columns", op)
            b = op.operands[1]
            unit, most = max(1, 16 // element_of(b.type).nbytes), b.type.shape[0]
            pad = op.attrs["b_pad"]
            if pad < 0 or pad % unit or pad > max(unit, most):
                raise self.error(f"b_pad={pad} must be whole 16-byte units of B's {element_of(b.type)} elements "
                                 f"(a multiple of {unit}), at most {max(unit, most)}", op)

    def held_tiles(self) -> None:
        """``hold`` (hold-tiles'): on a load of a tile, or a pure op with a
        tile result, in a laid-out kernel: the CUDA back end's per-thread
        arrays are of laid-out tiles, and the other ops' results have theirs
        whatever it decides (its type, a boolean, the reader checks)."""
        for op in self.ops:
            if "hold" not in op.attrs:
                continue
            if not self.kernel.laid_out:
                raise self.error("hold is the hold-tiles pass's decision, on laid-out SSA only (num_warps)", op)
            opdef = opdefs.lookup(op.name)
            tile = bool(op.results) and isinstance(op.results[0].type, BlockType)
            pure = opdef is not None and not (opdef.materialised or opdef.has_effect or opdef.reads_memory)
            if not (tile and (op.name == "load" or pure)):
                raise self.error(f"'{op.name}' cannot be held: hold is for a load of a tile or a pure op "
                                 "with a tile result", op)

    def shared_memory_plan(self) -> None:
        """With a ``shared_memory`` plan (allocate-shared's), every buffer has
        an offset and lies past the scratch, within the plan's bytes, apart
        from the others but those a drained barrier separates it from
        (``buffer_liveness``); without one, no buffer has an offset."""
        plan = self.kernel.shared_memory
        buffers = [op for op in self.ops if opdefs.lookup(op.name).allocates]
        if plan is None:
            for op in buffers:
                if "offset" in op.attrs:
                    raise self.error("a buffer has an offset, but the kernel has no shared_memory plan", op)
            return
        if not self.kernel.laid_out:
            raise CompileError("invalid SSA: a shared_memory plan needs a laid-out kernel (num_warps)",
                               self.kernel.loc)
        if plan.late_scratch > plan.bytes or plan.scratch > plan.bytes:
            raise CompileError(f"invalid SSA: shared_memory's scratch ({plan.scratch}) and late_scratch "
                               f"({plan.late_scratch}) must fit in its bytes ({plan.bytes})", self.kernel.loc)
        taken: list[tuple[int, int, Op]] = []
        liveness = Liveness(self.kernel)
        for op in buffers:
            if "offset" not in op.attrs:
                raise self.error("the kernel has a shared_memory plan, but this buffer has no offset", op)
            start = op.attrs["offset"]
            end = start + op.results[0].type.allocated_bytes
            if start < plan.scratch or end > plan.bytes:
                raise self.error(f"the buffer takes bytes {start} to {end}, but the shared_memory plan leaves "
                                 f"buffers bytes {plan.scratch} to {plan.bytes} (past its scratch)", op)
            for other_start, other_end, other in taken:
                if start < other_end and other_start < end and not liveness.may_overlay(op, other):
                    raise self.error(f"the buffer takes bytes {start} to {end}, which overlap "
                                     f"'{other.attrs['name']}' ({other_start} to {other_end}), and no drained "
                                     "barrier separates their uses", op)
            taken.append((start, end, op))

    def block(self, block: Block, visible: set[Value], in_loop: bool, ends_with: str | None = None,
              in_flight: set[Value] | None = None) -> None:
        """Check ``block``; ``ends_with`` names the terminator it needs
        (``yield`` or ``condition``), None for the kernel's body. ``in_loop``:
        inside any region (allocations stay at the top level)."""
        if ends_with is None and in_loop:
            ends_with = "yield"
        visible = set(visible)
        # Values the tensor cores still write: in_flight dots' results (and a
        # loop's carried values and results that are one) not yet waited for.
        in_flight = set(in_flight or ())
        for i, op in enumerate(block.ops):
            for operand in op.operands:
                if isinstance(operand, Value) and operand not in visible:
                    raise self.error(self.explain(operand, block), op)
            self.in_flight_order(op, in_flight)
            for result in op.results:  # before the type rules, which would refuse it less clearly
                problem = tile_error(result.type.shape) if isinstance(result.type, (BlockType, SharedType)) else None
                if problem:
                    raise self.error(problem, op)
            self.chain_depth(op)
            if op.name in ("yield", "condition"):
                if ends_with != op.name or i != len(block.ops) - 1:
                    where = "a loop body or an if branch" if op.name == "yield" else "a while loop's condition region"
                    raise self.error(f"'{op.name}' may only end {where}", op)
                if op.name == "condition":
                    self.check_condition(op, "condition")
            elif op.name == "for":
                self.loop(op, visible)
                in_flight |= {op.results[j] for j in carried_in_flight(op.regions[0])}
            elif op.name == "if":
                self.if_op(op, visible)
            elif op.name == "while":
                self.while_op(op, visible)
            elif is_combine(op):
                self.combine_op(op)
            else:
                self.check_op(op, in_loop)
            for value in [*op.results, *(arg for region in op.regions for arg in region.args)]:
                self.check_layout(value, op)
            if self.kernel.laid_out:
                self.layout_rule(op)
            for result in op.results:
                self.define(result, op)
                visible.add(result)
        if in_flight:
            dot = next(iter(in_flight)).op
            raise self.error("the result of an in_flight dot is never completed by a 'wgmma_wait' in its block", dot)
        if ends_with is not None and (not block.ops or block.ops[-1].name != ends_with):
            what = {"for": "a loop body", "if": "an if branch", "while": "a while loop's body"}.get(
                block.parent.name, "a region")
            if ends_with == "condition":
                what = "a while loop's condition region"
            raise self.error(f"{what} must end with '{ends_with}'", block.parent)

    def results_match_type_rule(self, op: Op, opdef, operand_types: list) -> None:
        """The result types ``op`` declares are the ones its type rule gives."""
        try:
            expected = opdef.infer(operand_types, op.attrs)
        except TypeRuleError as err:
            raise self.error(str(err), op) from None
        declared = [without_layout(r.type) for r in op.results]
        if declared != expected:
            want = ", ".join(str(t) for t in expected) or "no result"
            got = ", ".join(str(t) for t in declared) or "no result"
            raise self.error(f"'{op.name}' declares {got} but its operands give {want}", op)

    def in_flight_order(self, op: Op, in_flight: set[Value]) -> None:
        """A value the tensor cores still write is read only by a
        ``wgmma_wait`` (pending=0 completes it), by a loop's ``yield`` that
        carries it on, or by another in_flight dot as its accumulator (the
        groups chain on the tensor cores): before that the registers are
        theirs."""
        if in_flight:
            used = {o for inner in walk_op(op) for o in inner.operands if isinstance(o, Value)}
            early = used & in_flight
            if early:
                chained = op.name in IN_FLIGHT_DOTS and op.attrs.get("in_flight") and not op.regions \
                    and early == {op.operands[2]} and op.operands[:2].count(op.operands[2]) == 0
                carried = op.name == "yield" and op.parent is not None and op.parent.parent is not None \
                    and op.parent.parent.name == "for" and not op.regions
                if op.name == "wgmma_wait":
                    if op.attrs.get("pending") == 0:
                        in_flight -= early
                elif chained or carried:
                    in_flight -= early
                else:
                    raise self.error("the result of an in_flight dot is read before its 'wgmma_wait' (pending=0)", op)
        if op.name in IN_FLIGHT_DOTS and op.attrs.get("in_flight"):
            in_flight.add(op.results[0])

    def chain_depth(self, op: Op) -> None:
        """How many dependent ops lead to ``op``'s results: the backend
        evaluates a chain recursively, so it is bounded as the tracer bounds
        an expression's depth (parameters and loop arguments start chains)."""
        depth = 1 + max((self.depths.get(o, 0) for o in op.operands if isinstance(o, Value)), default=0)
        if depth > MAX_EXPRESSION_DEPTH:
            raise self.error(f"a chain of more than {MAX_EXPRESSION_DEPTH} dependent operations "
                             "(MAX_EXPRESSION_DEPTH)", op)
        for result in op.results:
            self.depths[result] = depth

    def explain(self, value: Value, use_block: Block) -> str:
        if isinstance(value, Param):
            return f"'{value.name}' is not a parameter of this kernel"
        if value not in self.everywhere:
            return "use of a value that is never defined"
        home = defining_block(value)
        owner = use_block.parent
        while owner is not None:
            if is_combine(owner) and (home is None or not is_within(home, owner.regions[0])):
                return (f"the combine region of '{owner.name}' reads only its arguments, the kernel's "
                        "parameters and literals")
            owner = owner.parent.parent if owner.parent is not None else None
        if home is not None and not is_within(use_block, home):
            where = "an if branch" if home.parent is not None and home.parent.name == "if" else "a loop body"
            return f"a value defined inside {where} is used outside it (yield it instead)"
        op = value.op if isinstance(value, OpResult) else None
        return "a value is used before it is defined" + (f" (by '{op.name}')" if op else "")

    def define(self, value: Value, op: Op) -> None:
        if value in self.defined:
            raise self.error("a value is defined twice", op)
        self.defined.add(value)

    def check_op(self, op: Op, in_loop: bool) -> None:
        opdef = opdefs.lookup(op.name)
        if opdef is None:
            raise self.error(f"unknown op '{op.name}'", op)
        if not opdef.takes(len(op.operands)):
            raise self.error(f"'{op.name}' takes {opdef.arity} operand(s), got {len(op.operands)}", op)
        for i, operand in enumerate(op.operands):
            name = opdef.operand_name(i)
            if operand is None and not opdef.optional(i):
                raise self.error(f"operand '{name}' of '{op.name}' cannot be none", op)
            if operand is not None and isinstance(operand.type, SharedType) and name not in opdef.shared_operands:
                raise self.error(f"operand '{name}' of '{op.name}' cannot be a shared buffer ({operand.type})", op)
        if opdef.allocates:
            self.allocation(op, in_loop)
        unknown = set(op.attrs) - set(opdef.attrs) - set(opdef.optional_attrs) - set(opdefs.ANY_OP_ATTRS)
        if unknown:
            raise self.error(f"'{op.name}' has no attribute '{sorted(unknown)[0]}'", op)
        if op.regions:
            raise self.error(f"'{op.name}' cannot have regions", op)
        self.results_match_type_rule(op, opdef, [None if o is None else without_layout(o.type) for o in op.operands])
        problem = literal_conversion_error(op)
        if problem is not None:
            raise self.error(problem, op)
        if "vector" in op.attrs:
            problem = vector_access_problem(op, self.kernel.laid_out)
            if problem:
                raise self.error(problem, op)

    # ---- layouts -------------------------------------------------------------------------------
    def check_layout(self, value: Value, op: Op) -> None:
        t = value.type
        if not isinstance(t, (BlockType, SharedType)):
            return
        if not self.kernel.laid_out:
            if t.layout is not None:
                raise self.error(f"{t} has a layout, but the kernel is not laid out (its header gives no "
                                 "num_warps; the layouts stage adds both)", op)
            return
        if t.layout is None:
            raise self.error(f"every tile of a laid-out kernel has a layout; {t} has none", op)
        if isinstance(t, SharedType) != isinstance(t.layout, SHARED_KINDS):
            kind = "a shared buffer" if isinstance(t, SharedType) else "a tile"
            raise self.error(f"{t}: {t.layout.text()} is not a layout for {kind}", op)
        problem = shape_problem(t.layout, t.shape, self.kernel.num_warps)
        if problem is None and isinstance(t.layout, NvmmaShared):
            problem = t.layout.buffer_problem(t.shape, t.element.nbytes)
        if problem:
            raise self.error(f"{t}: {problem}", op)

    def layout_rule(self, op: Op) -> None:
        """Each tile operand is in the layout the op's rule gives it."""
        opdef = opdefs.lookup(op.name)
        rule = opdef.layout_rule if opdef is not None else "none"
        tiles = [(i, o) for i, o in enumerate(op.operands) if isinstance(o, Value) and isinstance(o.type, BlockType)]
        result = op.results[0].type if op.results and isinstance(op.results[0].type, BlockType) else None
        wanted: dict[int, object] = {}
        if rule in ("elementwise", "load") and result is not None:
            wanted = {i: broadcast_view(result.layout, len(o.type.shape)) for i, o in tiles}
        elif rule == "expand_dims" and result is not None:
            wanted = {i: Slice(op.attrs["axis"], result.layout) for i, _ in tiles}
        elif rule == "store" and tiles and tiles[0][0] == 0:
            pointer = tiles[0][1].type.layout
            wanted = {i: broadcast_view(pointer, len(o.type.shape)) for i, o in tiles[1:]}
        elif rule == "dot" and result is not None:
            wanted = {i: result.layout for i, _ in tiles if i == 2}
            self.register_a(op, result)
        elif rule in ("reduce", "scan") and tiles:
            domain = tiles[0][1].type.layout
            wanted = {i: domain for i, _ in tiles[1:]}  # a combine op reads all its tiles in one layout
            expected = Slice(op.attrs.get("axis"), domain) if rule == "reduce" else domain
            for r in op.results:
                if isinstance(r.type, BlockType) and r.type.layout != expected:
                    what = "its operand's layout sliced along the axis" if rule == "reduce" else "its operands' layout"
                    raise self.error(f"the result of '{op.name}' must be in {expected.text()} ({what}), "
                                     f"not {r.type.layout.text()}", op)
        for i, operand in tiles:
            if i in wanted and operand.type.layout != wanted[i]:
                name = opdef.operand_name(i) if i < len(opdef.operands) or opdef.variadic else str(i)
                raise self.error(f"operand '{name}' of '{op.name}' is in {operand.type.layout.text()} but is read "
                                 f"in {wanted[i].text()}; a tile changes layout only through convert_layout", op)

    def register_a(self, op: Op, result: BlockType) -> None:
        """A warpgroup ``dot_rs`` reads its A tile as wgmma's register
        fragment: A must be held in a version-3 mma layout of the result's warps."""
        from mytriton.ir.layout_attributes import Mma

        layout, a = result.layout, op.operands[0]
        if op.name != "dot_rs" or not (isinstance(layout, Mma) and layout.version == 3) \
                or not isinstance(a.type, BlockType):
            return
        held = a.type.layout
        if not (isinstance(held, Mma) and held.version == 3 and tuple(held.warps_per_cta) == tuple(layout.warps_per_cta)):
            raise self.error(f"operand 'a' of a warpgroup 'dot_rs' is read as wgmma's register fragment: it must be in "
                             f"a version-3 mma layout with warps_per_cta={list(layout.warps_per_cta)}, not "
                             f"{held.text()}", op)

    def allocation(self, op: Op, in_loop: bool) -> None:
        if in_loop:
            raise self.error(f"'{op.name}' must be at the kernel's top level, not inside a loop", op)
        name = op.attrs.get("name")
        if isinstance(name, str):
            if name in self.buffer_names:
                raise self.error(f"two shared buffers are named '{name}'", op)
            self.buffer_names[name] = op

    def loop(self, op: Op, visible: set[Value]) -> None:
        if len(op.regions) != 1:
            raise self.error("a loop has exactly one body", op)
        body = op.regions[0]
        start, stop, step = op.operands[:3]
        inits = op.operands[3:]
        try:
            index_type = opdefs.loop_index_type([None if o is None else o.type for o in (start, stop, step)])
        except TypeRuleError as err:
            raise self.error(str(err), op) from None
        for operand, what in ((start, "start"), (stop, "stop"), (step, "step")):
            if not isinstance(operand, Const) and concrete(operand.type) != index_type:
                raise self.error(f"the loop {what} is {operand.type}, but the loop counts in {index_type} "
                                 "(cast it)", op)
        # A runtime step is positive by contract, as in Triton's scf.for; a
        # literal step is checked here.
        if isinstance(step, Const):
            if type(step.value) is not int:
                raise self.error("the loop step must be an integer", op)
            if step.value <= 0:
                raise self.error(f"the loop step must be positive, got {step.value}", op)
        if not body.args or body.args[0].type != index_type:
            raise self.error(f"the induction variable must be {index_type}, the type of the loop's bounds", op)
        problem = opdefs.loop_attrs_problem(op.attrs)
        if problem:
            raise self.error(problem, op)
        carried = body.args[1:]
        lanes = (len(inits), len(carried), len(op.results))
        if len(set(lanes)) != 1:
            raise self.error(f"a loop needs as many carried inputs, carried values and results; got "
                             f"{lanes[0]}, {lanes[1]} and {lanes[2]}", op)
        for i, (init, arg, result) in enumerate(zip(inits, carried, op.results)):
            if isinstance(arg.type, SharedType):
                raise self.error(f"carried value {i} is a shared buffer ({arg.type}); a loop cannot carry one", op)
            if arg.type != result.type:
                raise self.error(f"carried value {i} is {arg.type} in the body but the loop returns "
                                 f"{result.type}", op)
            if not carried_type_fits(arg.type, init):
                got = "none" if init is None else init.type
                raise self.error(f"carried value {i} is {arg.type} but enters the loop as {got}", op)
        for arg in body.args:
            self.define(arg, op)
        inner = set(visible) | set(body.args)
        self.block(body, inner, in_loop=True, in_flight={body.args[1 + j] for j in carried_in_flight(body)})
        terminator = body.ops[-1]
        if len(terminator.operands) != len(carried):
            raise self.error(f"the loop carries {len(carried)} value(s) but yields "
                             f"{len(terminator.operands)}", terminator)
        for i, (arg, value) in enumerate(zip(carried, terminator.operands)):
            if not carried_type_fits(arg.type, value):
                got = "none" if value is None else value.type
                raise self.error(f"carried value {i} is {arg.type} but the body yields {got}", terminator)


    # ---- reduce and scan ------------------------------------------------------------------------
    def combine_op(self, op: Op) -> None:
        opdef = opdefs.OPS[op.name]
        if len(op.regions) != 1:
            raise self.error(f"'{op.name}' has exactly one region (its combine function)", op)
        unknown = set(op.attrs) - set(opdef.attrs) - set(opdef.optional_attrs) - set(opdefs.ANY_OP_ATTRS)
        if unknown:
            raise self.error(f"'{op.name}' has no attribute '{sorted(unknown)[0]}'", op)
        if "axis" not in op.attrs:
            raise self.error(f"'{op.name}' needs the attribute 'axis'", op)
        if any(o is None for o in op.operands):
            raise self.error(f"the tiles of '{op.name}' cannot be none", op)
        self.results_match_type_rule(op, opdef, [without_layout(o.type) for o in op.operands])
        body = op.regions[0]
        elements = [concrete(element_of(o.type)) for o in op.operands]
        if [arg.type for arg in body.args] != elements * 2:
            want = ", ".join(str(e) for e in elements * 2)
            got = ", ".join(str(arg.type) for arg in body.args) or "none"
            raise self.error(f"the combine region of '{op.name}' takes ({want}), the tiles' element types "
                             f"twice; it declares ({got})", op)
        for arg in body.args:
            self.define(arg, op)
        # Closed: the region sees its arguments and the kernel's parameters only.
        self.block(body, set(self.kernel.params) | set(body.args), in_loop=True, ends_with="yield")
        terminator = body.ops[-1]
        if len(terminator.operands) != len(elements):
            raise self.error(f"the combine region of '{op.name}' over {len(elements)} tile(s) yields "
                             f"{len(terminator.operands)} value(s)", terminator)
        for i, (element, value) in enumerate(zip(elements, terminator.operands)):
            if not carried_type_fits(element, value):
                got = "none" if value is None else value.type
                raise self.error(f"combined value {i} of '{op.name}' is {element} but the region yields {got}",
                                 terminator)
        problem = combine_region_problem(op)
        if problem is not None:
            inner, message = problem
            raise self.error(message, inner)

    # ---- if and while ------------------------------------------------------------------------
    def check_condition(self, op: Op, what: str) -> None:
        if len(op.operands) != 1 or op.operands[0] is None:
            raise self.error(f"'{op.name}' takes one operand (its condition)", op)
        if op.name == "condition" and op.results:
            raise self.error("'condition' has no results", op)
        t = op.operands[0].type
        if isinstance(t, (BlockType, SharedType)):
            raise self.error(f"the {what} must be a bool scalar, not a tile ({t}); use tl.where on tiles", op)
        if concrete(t) != BOOL:
            raise self.error(f"the {what} must be a bool scalar, got {t}", op)

    def check_yields(self, op: Op, terminator: Op, types: list) -> None:
        if len(terminator.operands) != len(types):
            raise self.error(f"'{op.name}' has {len(types)} result(s) but a region yields "
                             f"{len(terminator.operands)}", terminator)
        for i, (t, value) in enumerate(zip(types, terminator.operands)):
            if not carried_type_fits(t, value):
                got = "none" if value is None else value.type
                raise self.error(f"result {i} of '{op.name}' is {t} but a region yields {got}", terminator)

    def if_op(self, op: Op, visible: set[Value]) -> None:
        if len(op.regions) != 2 or any(region.args for region in op.regions):
            raise self.error("an 'if' has two regions (then, else) without arguments", op)
        self.check_condition(op, "condition of an 'if'")
        for result in op.results:
            if isinstance(result.type, SharedType):
                raise self.error(f"an 'if' cannot yield a shared buffer ({result.type})", op)
        for region in op.regions:
            self.block(region, visible, in_loop=True, ends_with="yield")
            self.check_yields(op, region.ops[-1], [r.type for r in op.results])

    def while_op(self, op: Op, visible: set[Value]) -> None:
        if len(op.regions) != 2:
            raise self.error("a 'while' has two regions (condition, body)", op)
        before, after = op.regions
        types = [r.type for r in op.results]
        lanes = (len(op.operands), len(before.args), len(after.args), len(types))
        if len(set(lanes)) != 1:
            raise self.error(f"a while loop needs as many carried inputs, condition arguments, body arguments and "
                             f"results; got {lanes[0]}, {lanes[1]}, {lanes[2]} and {lanes[3]}", op)
        for i, (init, t) in enumerate(zip(op.operands, types)):
            if isinstance(t, SharedType):
                raise self.error(f"carried value {i} is a shared buffer ({t}); a loop cannot carry one", op)
            if before.args[i].type != t or after.args[i].type != t:
                raise self.error(f"carried value {i} is {t} but a region takes it as "
                                 f"{before.args[i].type if before.args[i].type != t else after.args[i].type}", op)
            if not carried_type_fits(t, init):
                got = "none" if init is None else init.type
                raise self.error(f"carried value {i} is {t} but enters the loop as {got}", op)
        for region, ends_with in ((before, "condition"), (after, "yield")):
            for arg in region.args:
                self.define(arg, op)
            self.block(region, set(visible) | set(region.args), in_loop=True, ends_with=ends_with)
        self.check_yields(op, after.ops[-1], types)


def _num_warps_problem(num_warps: int) -> str | None:
    if not 1 <= num_warps <= 32 or num_warps & (num_warps - 1):
        return f"num_warps must be a power of two from 1 to 32, got {num_warps}"
    return None


def verify(kernel: Kernel) -> Kernel:
    Verifier(kernel).run()
    return kernel


@dataclass(frozen=True)
class VerifyPass:
    name: str = "verify"
    summary: str = "check SSA invariants; the IR passes through unchanged"

    def apply(self, kernel: Kernel) -> Kernel:
        return verify(kernel)


def vector_access_problem(op: Op, laid_out: bool) -> str | None:
    """Why a load's or store's ``vector=N`` cannot be rendered as N-element
    accesses, or None: N is a power of two of at most 16 bytes, and each
    thread's slots hold runs of N consecutive elements along the tile's last
    dimension, its fastest (the layouts stage proved them aligned)."""
    from mytriton.ir.layout_attributes import Blocked, Mma, thread_run

    n = op.attrs["vector"]
    ptr = op.operands[0]  # the type rule has checked it is a pointer or a tile of pointers
    if not laid_out:
        return f"'{op.name}' has vector={n!r}, a layout decision, but the kernel is not laid out"
    if not isinstance(getattr(ptr, "type", None), BlockType):
        return f"'{op.name}' of a scalar has no vector width"
    if op.name == "atomic_rmw" and (op.attrs.get("kind") != "add" or ptr.type.element.pointee not in (F32, F16, BF16)
                                    or n not in ((2, 4) if ptr.type.element.pointee == F32 else (2, 4, 8))):
        return (f"'{op.name}': vector={n!r} is an f32 add of 2 or 4 elements or an f16/bf16 add of 2, 4 or 8 "
                "(PTX's vector atom)")
    nbytes = ptr.type.element.pointee.nbytes
    if type(n) is not int or n < 2 or n & (n - 1) or n * nbytes > 16:
        return f"'{op.name}': vector={n!r} is not a power of two from 2 to {16 // nbytes} ({nbytes}-byte elements, 16-byte accesses)"
    layout = ptr.type.layout
    last = len(ptr.type.shape) - 1
    if isinstance(layout, Mma):
        # an accumulator's thread holds pairs of adjacent columns, in consecutive slots
        if n != 2 or last != 1:
            return f"'{op.name}': vector={n} in an mma layout must be 2 (a thread's pair of adjacent columns)"
        return None
    run = thread_run(layout)
    if run is None:
        return f"'{op.name}': vector={n} needs a blocked or mma layout, or a slice of a blocked one"
    # A load's or store's runs may go down another dimension than the last (a
    # tile stored column-major); an atomic's, as PTX's vector atom is rendered, not.
    fastest, per_thread = run
    if op.name not in ("load", "store") and (fastest != last or not isinstance(layout, Blocked)):
        return f"'{op.name}': vector={n} needs a blocked layout whose fastest dimension is the last"
    if per_thread % n or ptr.type.shape[fastest] % n:
        return (f"'{op.name}': vector={n} needs a multiple of {n} elements per thread along "
                f"the layout's fastest dimension ({fastest})")
    return None


# The dots overlap-wgmma may leave in flight: wgmma reads B (and A) from shared
# memory, or A from registers.
IN_FLIGHT_DOTS = ("dot_shared", "dot_rs")


def carried_in_flight(body: Block) -> set[int]:
    """The carried values (by index) a loop body yields while the tensor cores
    still write them: an in_flight dot's result, or a carried value that is
    one, not completed by a ``wgmma_wait`` pending=0 before the yield."""
    carried: set[int] = set()
    while True:
        pending = {body.args[1 + j] for j in carried}
        for op in body.ops:
            if op.name == "wgmma_wait" and op.attrs.get("pending") == 0:
                pending.difference_update(op.operands)
            elif op.name in IN_FLIGHT_DOTS and op.attrs.get("in_flight"):
                pending.add(op.results[0])
        yielded = body.ops[-1] if body.ops and body.ops[-1].name == "yield" else None
        found = {j for j, v in enumerate(yielded.operands) if v in pending} if yielded is not None else set()
        if found <= carried:
            return carried
        carried |= found
