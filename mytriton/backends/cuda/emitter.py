"""The ``emit-cuda`` stage: SSA to CUDA C++.

One CUDA block runs one program instance with ``num_warps * 32`` threads.
Its input is laid-out SSA: the layouts stage has given every tile a layout
(``mytriton/passes/layouts.py``) and put a ``convert_layout`` wherever a tile
changes layout; the copy-widths pass has chosen each async copy's chunks,
the read-widths pass how wide each dot on CUDA cores reads its operands
(``read_widths``), the combine-strategy pass each reduce's and scan's path
and, through shared memory, its chunks (``strategy``, ``chunks_per_row``),
the hold-tiles pass which tiles keep a per-thread array (``hold=true``;
every other pure tile op is recomputed where it is used), the
allocate-shared pass has placed everything in shared memory (and padded
the A tiles of dots left in registers: ``a_pad``), and the
insert-barriers pass has decided which statements wait at a barrier before
writing their shared scratch (``scratch_barrier``, rendered by
``scratch_fence``). This module renders each block's statements
(``statements.py`` groups the ops) through the function registered for
their kind (``renderers.py``; the helper modules register theirs and see
this printer only as an ``EmitContext``), writing lines through a C
builder whose scopes own the indentation (``c_builder.py``). It follows
those decisions: a statement without its decision is refused, naming the
pass to run, and so is one its layouts no longer allow (a layout edited
after the pass). It makes no choice of its own. Scalars are locals every
thread computes alike. Tiles are
spread over the threads as their layouts say (``thread_coordinates.py``
spells that in C); each thread handles its elements, its *slots*, in loops
that nvcc unrolls:

- consecutive loads and stores over one layout share one slot loop;
- pure ops are computed inside the loops that need them (``slots.py``);
- a held load also fills a per-thread array, and a held pure value is
  computed into one just before the layout change that moves it;
- a reduction combines slots, then lanes (warp shuffles), then warps
  (shared memory) (``reductions.py``);
- a ``convert_layout`` fills a per-thread array in the new layout, through
  shared memory unless both layouts place the elements alike;
- a runtime ``for`` becomes a C ``for`` whose carried values are locals (or
  per-thread arrays) that the loop's results share.

Shared memory is one dynamic array, ``extern __shared__ smem[]``, divided
as the allocate-shared pass decided (``allocate_shared.py``): scratch
(reductions, layout conversions, unstaged dots) from byte 0, then the
stage-dots buffers at their ``offset`` attributes; scratch needed only after
the buffers' last use overlays them from byte 0. The pass learns what
scratch each statement addresses by running this emitter in its measuring
mode (``measure_scratch``), which writes nothing. The first output line
is a JSON header that names the kernel, its parameters, the buffers it stores
to, its threads per block and the shared bytes a launch must give
(``shared_bytes``; past 48 KiB the launcher raises the kernel's limit), so a
``.cu`` file can be launched on its own.
"""
from __future__ import annotations

import json
import math
from contextlib import nullcontext
from dataclasses import dataclass

from mytriton.backends.cuda.ctypes import c_element, c_literal
# The helpers register their statements' renderers as they are imported.
from mytriton.backends.cuda import atomics, gather, grid_dependency, histogram, mma, reductions, scans  # noqa: F401
from mytriton.backends.cuda import tile_stores, tma  # noqa: F401 (tile_stores registers its renderer)
from mytriton.backends.cuda.tma_copies import tensor_maps
from mytriton.backends.cuda.atomics import emit_scalar_atomic
from mytriton.backends.cuda.c_builder import CBuilder, INDENT
from mytriton.backends.cuda.dots import TOP_LEVEL, declare_shared, hoist_copy_coordinates, hoist_fma_reads, shared_array_name
from mytriton.backends.cuda.hold_tiles import accumulations, approximations_reached, combined_results, statement_results
from mytriton.backends.cuda.line_directives import with_directives
from mytriton.backends.cuda.wgmma import WARPGROUP_INDEX, warpgroup_index_line
from mytriton.backends.cuda.renderers import Group, renderer_of, renders
from mytriton.backends.cuda.shared_memory import (
    aligned, buffer_alignment, buffer_offsets, element_bytes, late_ops,
)
from mytriton.backends.cuda.statements import own_storage, statements
from mytriton.backends.cuda.spelling import CUDA
from mytriton.backends.cuda.expressions import CValue, as_type, assert_lines, print_call, render
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, Layout, tile_layout
from mytriton.backends.cuda.names import kernel_symbol, param_c_names
from mytriton.backends.cuda.slots import SlotLoop
from mytriton.diagnostics import CompileError, Location
from mytriton.ir import opdefs
from mytriton.ir.analysis import is_materialized, is_tile, stored_params
from mytriton.target import (MAX_ELEMENTS_PER_THREAD, MAX_UNROLLED_ELEMENTS_PER_THREAD, OPT_IN_SHARED_MEMORY,
                             SLOT_LOOP_UNROLL, WGMMA_BUILD_ARCH)
from mytriton.ir.ssa import BlockArg, Const, Kernel, Op, OpResult, Operand, Value, for_yield, use_counts, walk
from mytriton.ir.ssa_text import ValueNames
from mytriton.ir.layout_attributes import Blocked, Mma
from mytriton.types import BOOL, BlockType, PointerType, ScalarType, element_of

HEADER_PREFIX = "// mytriton-kernel: "
# The most shared memory a header may ask a launch for: any GPU's opt-in limit.
MAX_SHARED_BYTES = max(OPT_IN_SHARED_MEMORY.values())


@dataclass(frozen=True)
class ScratchNeed:
    """Scratch that one statement addresses from byte 0 of the shared array:
    ``nbytes``, the op a message about it names, and whether the statement
    comes after the buffers' last use (``late_ops``)."""

    nbytes: int
    op: Op | None
    late: bool
    # The statement that addresses it (``CudaEmitter.statement``): whose
    # ``scratch_barrier`` decides the barrier before its first scratch write.
    statement: Op | None = None


def source_line(op: Op | None) -> int | None:
    """The Python line ``op`` comes from, if it says."""
    return op.loc.line if op is not None and op.loc is not None else None


class Storage(dict):
    """Each value held in an array or a local -> its C name. Laid-out SSA
    edited by hand or after hold-tiles may read a load from another
    statement that no ``hold`` gave an array: that is an error at the
    load, not a KeyError."""

    def __init__(self, names: ValueNames, where: Location | None) -> None:
        super().__init__()
        self.names = names
        self.where = where  # the kernel's: where a value without a location is reported

    def __missing__(self, value: Value) -> str:
        op = getattr(value, "op", None)
        name = self.names.names.get(value, "a value")
        raise CompileError(f"{name} is read by another statement, but has no per-thread array to read it from: "
                           "its op needs hold=true (run hold-tiles again)",
                           op.loc if op is not None and op.loc else self.where)


class CudaEmitter:
    """Renders a laid-out, allocated kernel; with ``measure``, a kernel not
    allocated yet, only to record the scratch its statements need
    (``scratch_needs``)."""

    def __init__(self, kernel: Kernel, measure: bool = False) -> None:
        if kernel.num_warps is None:
            raise CompileError(f"kernel '{kernel.name}' is not laid out: run the layouts stage before emit-cuda",
                               kernel.loc)
        if kernel.shared_memory is None and not measure:
            raise CompileError(f"kernel '{kernel.name}' has no shared-memory plan: run allocate-shared "
                               "before rendering it", kernel.loc)
        self.kernel = kernel
        self.num_warps = kernel.num_warps
        self.threads = 32 * kernel.num_warps
        self.ssa_names = ValueNames(kernel)
        self._use_counts: dict | None = None  # value -> its uses but wgmma_waits, when first asked
        # The store the layout change being written feeds (block, store_fed_by), and whether
        # convert_group wrote it in its own loop.
        self.fed_store: Op | None = None
        self.fed_store_written = False
        self.lang = CUDA  # every target spelling goes through it
        self.cnames: dict[Value, str] = {}
        self.storage: dict[Value, str] = Storage(self.ssa_names, kernel.loc)  # per-thread arrays; loop-carried locals
        self.groups: dict[int, list[Group]] = {}  # id(block) -> its statements (statements.py)
        self.parents: dict[tuple, tuple[str, BlockedLayout]] = {}  # placement -> (name, a layout with it)
        self.shared: dict[Value, str] = {}  # tiles copied to shared memory for the current group
        # Measuring: the scratch so far and what each statement needs; else the plan's.
        self.scratch_needs: list[ScratchNeed] | None = [] if measure else None
        plan = kernel.shared_memory
        self.shared_bytes = plan.scratch if plan and not measure else 0  # reductions, layout changes, unstaged dots
        # Scratch used only after the staged buffers' last use (an epilogue's
        # layout change), which overlays them.
        self.late_shared_bytes = plan.late_scratch if plan and not measure else 0
        self.late = False  # emitting such an op now
        self.late_ops = late_ops(kernel)
        self.held: set = set()  # tiles computed into registers though not materialised (hold_in_registers)
        self.rendered: set[Op] = set()  # the statements written so far
        # hold-tiles' running combinations of reduction results, computed as soon as those are
        # (each waits for the statements of the results it combines; one
        # combined with an earlier combination waits for that one's)
        results = statement_results(kernel)
        self.waiting: dict[Op, list[tuple[Op, list[OpResult]]]] = {}
        for op in accumulations(kernel, results, set(), decide=False):
            inputs = combined_results(op, results)
            for value in inputs:
                self.waiting.setdefault(value.op, []).append((op, inputs))
        self.shared_allocs: list[Op] = []  # buffers the stage-dots pass allocated
        # TMA's copies (tma.py): the tensor maps they read and the mbarriers of their groups, found once
        self.tensor_maps = tensor_maps(kernel)
        self.tma_ring = tma.ring_of(kernel) if self.tensor_maps else 0
        self.out = CBuilder(depth=TOP_LEVEL)  # the kernel body's lines, inside its braces
        self.vector_stores = 0  # staging arrays of vector stores, numbered
        # Copies in loops whose wrapped chunk coordinates were worked out before
        # the loop (dots.hoist_copy_coordinates): op -> {"row"|"col"|"offset": array, "uniform": axes}.
        self.hoisted_copies = 0
        self.early: set = set()  # ops emitted before their place (a loop's wgmma_wait)
        # The statement being written (a group's first op; a loop's or an if's
        # own op while it assigns carried values before its body, the region's
        # ``yield`` while it assigns them at the end of one) and how many times
        # it has begun addressing scratch (``scratch_fence``).
        self.statement: Op | None = None
        self.fences = 0
        self.hoisted_coordinates: dict = {}
        self.wrapped_arrays: dict = {}  # (dots.wrapped_chunk_coordinates)
        self._param_names()

    # ---- names ---------------------------------------------------------------------------
    def _param_names(self) -> None:
        # Names that could clash with C, CUDA, the headers or our locals are renamed (names.py).
        for p, cname in zip(self.kernel.params, param_c_names([p.name for p in self.kernel.params])):
            self.cnames[p] = cname

    def name(self, value: Value) -> str:
        if value not in self.cnames:
            self.cnames[value] = "v" + self.ssa_names.names[value][1:]
        return self.cnames[value]

    def local_name(self, value: Value, loop: SlotLoop) -> str:
        """A local for one element of ``value`` in ``loop`` (a second
        coordinate variant of the same value gets a suffix)."""
        base = self.name(value)
        name, n = base, 1
        while name in loop.locals:
            name = f"{base}_{n}"
            n += 1
        return name

    def scalar_ref(self, value: Value) -> str:
        return self.storage.get(value, self.name(value))

    def parent_name(self, parent: BlockedLayout) -> str:
        """The prefix of the variables holding this thread's position in
        ``parent``'s thread arrangement (declared once per arrangement)."""
        if parent.placement not in self.parents:
            self.parents[parent.placement] = (f"L{len(self.parents)}", parent)
        return self.parents[parent.placement][0]

    def layout_of(self, value: Value) -> Layout:
        """The layout the layouts stage gave a tile."""
        return tile_layout(value.type.layout, value.type.shape)

    def shared_name(self, value: Value) -> str:
        """The shared-memory copy of ``value`` the current slot loop reads."""
        if value not in self.shared:
            self.shared[value] = "s" + self.name(value)[1:]
        return self.shared[value]

    def line(self, text: str) -> None:
        self.out.line(text)

    def error_at(self, op: Op, message: str) -> CompileError:
        return CompileError(message, op.loc or self.kernel.loc)

    # ---- storage ---------------------------------------------------------------------------
    def plan_storage(self) -> None:
        """Arrays and locals as the IR says: the values that always have
        them (``statements.own_storage``) and the loads hold-tiles held."""
        for value, named in own_storage(self.kernel):
            self.storage[value] = ("t" if is_tile(named) else "v") + self.name(named)[1:]
        for op in walk(self.kernel.body):
            if op.name == "load" and op.attrs.get("hold") is True and is_tile(op.results[0]):
                self.storage[op.results[0]] = "t" + self.name(op.results[0])[1:]

    # ---- output --------------------------------------------------------------------------------
    def emit(self) -> str:
        found = statements(self.kernel)
        self.groups, self.shared_allocs = found.groups, found.shared_allocs
        self.plan_storage()
        for op in self.shared_allocs:
            self.storage[op.results[0]] = shared_array_name(op)
        self.block(self.groups[id(self.kernel.body)])
        return self.render() if self.scratch_needs is None else ""

    def shared_offsets(self) -> list[int]:
        """Where each stage-dots buffer starts in the shared array: the plan's
        offsets; while measuring, where they would start after the scratch
        needed so far."""
        if self.scratch_needs is not None:
            return buffer_offsets(self.shared_allocs, self.shared_bytes)
        return [op.attrs["offset"] for op in self.shared_allocs]

    def total_shared_bytes(self) -> int:
        """The dynamic shared bytes a launch must give (the plan's)."""
        return self.kernel.shared_memory.bytes

    def carried_in_place(self, op: Op) -> str | None:
        """The array of the loop-carried accumulator that ``op`` (a dot
        with ``acc``) may update in place, or None: the accumulator is a
        ``for`` loop's carried value used by this op alone, in the result's
        layout and type, and the loop carries the result on in its place
        (``acc = tl.dot(a, b, acc)``). Tensor-core instructions then read and
        write the carried registers themselves, with no copy in and out.

        The accumulator may also be an elementwise function of the carried
        value, used by this op alone (attention's ``acc * alpha[:, None]``):
        the dot's accumulator loop then rewrites each carried register in
        place (the same layout, so each slot reads only itself) before the
        products, and a dot left in flight across the loop's back edge has
        no copy that would read its registers before their wait."""
        acc = op.operands[2] if len(op.operands) > 2 else None
        result = op.results[0]
        counts = self._uses()
        rescale = opdefs.lookup(acc.op.name) if isinstance(acc, OpResult) else None
        if rescale is not None and rescale.layout_rule == "elementwise" and rescale.pure and not acc.op.regions \
                and counts.get(acc) == 1 and acc.type == result.type:
            args = [v for v in acc.op.operands if isinstance(v, BlockArg) and v.type == result.type]
            acc = args[0] if len(args) == 1 and acc.op.operands.count(args[0]) == 1 else None
        if not isinstance(acc, BlockArg) or acc not in self.storage or acc.type != result.type:
            return None
        if counts.get(acc) != 1:
            return None
        for loop in walk(self.kernel.body):
            if loop.name == "for" and loop.regions[0] is acc.block:
                yielded = for_yield(loop)
                if yielded is not None and yielded.operands[acc.index - 1] is result:
                    return self.storage[acc]
        return None

    def _uses(self) -> dict:
        """Each value's uses but by wgmma_waits (a wait names the value it
        completes, but reads no register of it)."""
        if self._use_counts is None:
            waits = [v for w in walk(self.kernel.body) if w.name == "wgmma_wait" for v in w.operands]
            self._use_counts = use_counts(self.kernel.body)
            for v in waits:
                self._use_counts[v] -= 1
        return self._use_counts

    def uses_wgmma(self) -> bool:
        return any(isinstance(r.type, BlockType) and isinstance(r.type.layout, Mma) and r.type.layout.version == 3
                   for op in walk(self.kernel.body) for r in op.results)

    def shared_alignment(self) -> int:
        return max([16] + [buffer_alignment(op) for op in self.shared_allocs])

    def render(self) -> str:
        header = {
            "kernel": self.kernel.name,
            "params": [[p.name, str(p.type)] for p in self.kernel.params],
            "constexprs": {k: (v.name if isinstance(v, ScalarType) else v)
                           for k, v in self.kernel.constexprs.items()},
            "stores": stored_params(self.kernel),
            "num_warps": self.num_warps,
            "threads": self.threads,
            "shared_bytes": self.total_shared_bytes(),  # the launch's dynamic shared memory
            "source": self.kernel.loc.file,
        }
        if self.kernel.digest is not None:
            header["source_sha256"] = self.kernel.digest
        symbol = kernel_symbol(self.kernel.name)
        if symbol != self.kernel.name:
            header["symbol"] = symbol  # what the launcher looks the kernel up by
        if self.uses_wgmma():
            header["arch"] = WGMMA_BUILD_ARCH  # nvcc builds an sm_90 kernel with wgmma for sm_90a
        maps = self.tensor_maps
        if maps:
            header["tensor_maps"] = [m.header() for m in maps]  # the launcher encodes each (tma.py)
        # json.dumps escapes control and non-ASCII characters: the header stays one line.
        out = [HEADER_PREFIX + json.dumps(header)]
        out.append(f"// Generated by mytriton from {c_comment(self.kernel.loc.file)}:{self.kernel.loc.line}; "
                   "vN holds SSA value %N; a #line holds until the next.")
        types = [p.type for p in self.kernel.params] + [r.type for op in walk(self.kernel.body) for r in op.results]
        out += self.lang.preamble(types)
        body = "\n".join(self.out.lines)
        out += [definition for name, definition in self.lang.helpers.items() if name + "(" in body]
        if maps:
            out += [tma.MAP_STRUCT] + ([tma.WAIT_HELPER] if tma.WAIT + "(" in body else [])
        out.append("")
        # From here on every line comes from a Python line: the prologue, what
        # no op says it comes from and the closing brace from the def line.
        start = len(out)
        params = [f"{c_element(p.type)} {self.cnames[p]}" for p in self.kernel.params] + tma.params(self.tensor_maps)
        out.append(self.lang.kernel_signature(symbol, params, self.threads) + " {")
        if self.total_shared_bytes():
            parts = [f"{self.shared_bytes} of scratch from 0"] if self.shared_bytes else []
            parts += ["the staged buffers"] if self.shared_allocs else []
            if self.late_shared_bytes:
                parts.append(f"{self.late_shared_bytes} of scratch from 0 after their last use")
            out.append(f"{INDENT}{self.lang.dynamic_shared_array('smem', self.shared_alignment())}  // {self.total_shared_bytes()} bytes "
                       f"at launch: {', then '.join(parts)}")
        for op, offset in zip(self.shared_allocs, self.shared_offsets()):
            out.append(INDENT + declare_shared(op, offset)[1])
        out += [INDENT + line for line in tma.prologue(self.kernel, self.tma_ring)]
        for name, parent in self.parents.values():
            out.append(f"{INDENT}// {name}: {parent.describe()}")
            for d in range(parent.rank):
                out.append(f"{INDENT}const int {name}_p{d} = {parent.thread_position(d, self.lang.thread_id)};")
        if WARPGROUP_INDEX in body:
            out.append(INDENT + warpgroup_index_line(self.lang.thread_id))
        def_line = self.kernel.loc.line
        sources = [def_line] * (len(out) - start) + self.body_sources(def_line) + [def_line]
        out += self.out.lines
        out.append("}")
        if self.kernel.loc.file:
            out[start:] = with_directives(out[start:], sources, self.kernel.loc.file)
        return "\n".join(out) + "\n"

    def body_sources(self, def_line: int) -> list[int | None]:
        """The Python line of each line of the body (None: the line before's).
        A line no op says it comes from is from the def line; one with no code
        (a closing brace, a blank) goes with the line before it, a comment
        with the line after it, so that neither gets a directive of its own."""
        lines = self.out.lines
        sources: list[int | None] = [line or def_line for line in self.out.sources]
        after = def_line
        for index in reversed(range(len(lines))):
            stripped = lines[index].strip()
            if stripped.startswith("//"):
                sources[index] = after
            elif stripped in ("", "}"):
                sources[index] = None
            else:
                after = sources[index]
        return sources

    # ---- blocks ------------------------------------------------------------------------------------
    def block(self, groups: list[Group]) -> None:
        outer = self.statement
        written: Group | None = None  # a store written in the loop of the layout change before it
        for group, following in zip(groups, [*groups[1:], None]):
            if group is written:
                continue
            self.fed_store, self.fed_store_written = self.store_fed_by(group, following), False
            self.late = group.ops[0] in self.late_ops
            # A statement's lines come from its op's Python line (a group of
            # several ops: the first that has one; tile_group refines that).
            line = next((source_line(op) for op in group.ops if op.loc is not None), None)
            self.begin_statement(group.ops[0])
            with self.out.at(line):
                for value in self.approximations_to_hold(group):
                    self.hold_in_registers(value, group.ops[0])
                renderer_of(group)(self, group)
                written = following if self.fed_store_written else None
                done = group.ops + (written.ops if written is not None else [])
                self.rendered.update(done)
                for value in self.accumulations_ready(done):
                    self.hold_in_registers(value, group.ops[0], "as soon as the results it combines are")
        self.begin_statement(outer)

    def begin_statement(self, op: Op | None) -> None:
        self.statement, self.fences = op, 0

    def host_call(self, op: Op, args: list, coords: list[str], owner: str | None) -> list[str]:
        """The lines of a ``device_print`` or ``device_assert`` for one element
        (``coords``, none for a scalar), run by the thread that owns it."""
        if op.name == "device_print":
            call = print_call(op.attrs["prefix"], coords, args[0], op.attrs["hex"])
            return [f"if ({owner}) {call}" if owner else call]
        condition, mask = args
        guard = " && ".join(c for c in (owner, mask and as_type(mask, BOOL)) if c) or None
        where = f"{op.loc.file}:{op.loc.line}" if op.loc else self.kernel.loc.file
        return assert_lines(op.attrs["msg"], where, as_type(condition, BOOL), guard)

    def scalar(self, op: Op) -> None:
        args = [self.scalar_arg(o) for o in op.operands]
        if op.name in ("device_print", "device_assert"):
            for text in self.host_call(op, args, [], f"{self.lang.thread_id} == 0"):
                self.line(text + self.where(op))
            return
        if op.name in opdefs.ATOMIC_OPS:
            emit_scalar_atomic(self, op, args)
            return
        if op.name == "store":
            ptr, value, mask = args
            target = f"*{ptr.expr} = {as_type(value, element_of(op.operands[0].type).pointee)};"
            condition = f"{self.lang.thread_id} == 0" + (f" && {as_type(mask, BOOL)}" if mask is not None else "")
            self.line(f"if ({condition}) {target}")
            return
        result = op.results[0]
        expr = load_expr(op, args) if op.name == "load" else render(op, args)
        const = "" if isinstance(element_of(result.type), PointerType) else "const "
        self.line(f"{const}{c_element(result.type)} {self.name(result)} = {expr};{self.where(op)}")

    def scalar_arg(self, operand: Operand):
        if operand is None or isinstance(operand, Const):
            return operand
        return CValue(self.scalar_ref(operand), element_of(operand.type))

    def where(self, op: Op) -> str:
        return f"  // {op.name} @{op.loc.line}:{op.loc.col}" if op.loc else ""

    # ---- slot loops ----------------------------------------------------------------------------------
    def open_loop(self, domain: Layout, op: Op, looped: bool = False) -> SlotLoop:
        """A slot loop over ``domain``; ``looped``: the caller's loop may run
        past MAX_UNROLLED_ELEMENTS_PER_THREAD slots as a real loop (loads,
        stores and what is computed between them)."""
        limit = MAX_ELEMENTS_PER_THREAD if looped else MAX_UNROLLED_ELEMENTS_PER_THREAD
        if domain.slots > limit:
            shape = "x".join(str(d) for d in domain.shape)
            what = "" if looped else f" for a {op.name}"
            raise self.error_at(op, f"a [{shape}] tile puts {domain.slots} elements on each of "
                                    f"{self.threads} threads, over the limit of {limit} per thread{what}; "
                                    "use more warps (--num-warps) or smaller tiles")
        self.shared = {}
        return SlotLoop(self, domain)

    def slot_unroll(self, slots: int) -> str:
        """The pragma before a loop over ``slots`` slots: wholly unrolled (the
        slot index a constant, the arrays in registers) up to
        MAX_UNROLLED_ELEMENTS_PER_THREAD, else by SLOT_LOOP_UNROLL."""
        return self.lang.unroll if slots <= MAX_UNROLLED_ELEMENTS_PER_THREAD else f"{self.lang.unroll} {SLOT_LOOP_UNROLL}"

    def close_loop(self, loop: SlotLoop, comment: str, declare: list[str] | None = None) -> None:
        """Write a slot loop (after copying the tiles it reads from shared
        memory there) with its declarations before it."""
        for text in declare or []:
            self.line(text)
        own = self.out.scope("{  // the shared-memory copies below are this loop's alone")
        with own if loop.staged else nullcontext():
            self.stage_shared(loop)
            self.line(f"// {comment}")
            self.line(self.slot_unroll(loop.domain.slots))
            with self.out.scope(f"for (int k = 0; k < {loop.domain.slots}; {slot_step(loop.step)}) {{"):
                for text in loop.body():
                    self.line(text)

    def tile_group(self, group: Group) -> None:
        loop = self.open_loop(group.domain, group.ops[0], looped=True)
        declare = []
        for op in group.ops:
            with self.out.at(source_line(op)):
                self.tile_op(op, group, loop, declare)
        names = ", ".join(f"{op.name} @{op.loc.line}" if op.loc else op.name for op in group.ops)
        self.close_loop(loop, f"{names} over {self.parent_name(group.domain.parent)} "
                              f"({group.domain.slots} slot(s) per thread)", declare)

    def tile_op(self, op: Op, group: Group, loop: SlotLoop, declare: list[str]) -> None:
        """One load, store, print or assert of a tile group, into its slot loop."""
        coords = loop.coords()
        if op.name == "load":
            result = op.results[0]
            args = [loop.value(o, coords) for o in op.operands]
            expr = self.vector_load(op, args, loop, declare) if "vector" in op.attrs else load_expr(op, args)
            value = loop.define(result, expr, coords)
            if result in self.storage:
                declare.append(f"{c_element(result.type)} {self.storage[result]}[{group.domain.slots}];")
                loop.lines.append(f"{self.storage[result]}[k] = {value.expr};")
        elif op.name in ("device_print", "device_assert"):
            loop.lines.extend(self.host_call(op, [loop.value(o, coords) for o in op.operands],
                                             [loop.use(c) for c in coords], loop.owner()))
        else:
            ptr, value, mask = (loop.value(o, coords) for o in op.operands)
            pointee = element_of(op.operands[0].type).pointee
            conditions = [c for c in (loop.owner(), mask and as_type(mask, BOOL)) if c]
            store = f"*{ptr.expr} = {as_type(value, pointee)};"
            if "vector" in op.attrs:
                conditions, store = self.vector_store(op, ptr, as_type(value, pointee), loop, declare, conditions)
            loop.lines.append(f"if ({' && '.join(conditions)}) {store}" if conditions else store)

    # ---- vector accesses ---------------------------------------------------------------------
    # ``vector=N`` on a load or store (the layouts stage proved each run of N
    # consecutive slots contiguous, aligned to N elements and under one mask
    # value): the first slot of a run reads the N elements into a staging
    # array with one access, the last slot of a run writes them. The slot
    # loop unrolls, so ``k`` is a constant and the arrays live in registers.
    # A load stages every slot in its own element (one array of all the
    # slots): reusing N elements for every run made each masked load depend
    # on the previous run's, so the loads waited on each other (softmax
    # 16384x8192 on the H200: 3610 GB/s staged in 4 elements, 4111 in 16).
    def vector_load(self, op: Op, args: list, loop: SlotLoop, declare: list[str]) -> str:
        ptr, mask, other = args
        n = op.attrs["vector"]
        pointee = element_of(op.operands[0].type).pointee
        buffer = "w" + self.name(op.results[0])[1:]
        declare.append(self.lang.vector_buffer(c_element(op.results[0].type), buffer, loop.domain.slots))
        first = f"{loop.index} % {n} == 0"
        copy = self.lang.vector_copy(f"&{buffer}[{loop.index}]", ptr.expr, n * pointee.nbytes)
        read = f"{buffer}[{loop.index}]"
        if mask is None:
            loop.lines.append(f"if ({first}) {copy}")
            return read
        # The run is under one mask value (the layouts stage's proof): its first
        # slot loads it or fills it, once, and every slot reads what is staged.
        # A select a slot would test the mask again at each (nvcc cannot tell
        # that the run's later offsets are in bounds when the first is).
        if fills_zero_bits(op.operands[2] if len(op.operands) > 2 else None):
            # A fill of zero bits is the run's word zeroed, then loaded over
            # where the mask holds: nvcc keeps the run one word and selects it
            # (filled element by element, it kept each 16-bit half apart and
            # merged them with byte permutes: Liger's bf16 layer norm 59
            # registers against 48, 424 instructions against 360).
            word = self.lang.vector_words[n * pointee.nbytes]
            loop.lines.append(f"if ({first}) {{ {word} {buffer}_z{{}}; if ({as_type(mask, BOOL)}) {buffer}_z = "
                              f"*reinterpret_cast<const {word}*>({ptr.expr}); "
                              f"*reinterpret_cast<{word}*>(&{buffer}[{loop.index}]) = {buffer}_z; }}")
            return read
        fill = as_type(other, pointee) if other is not None else c_literal(0, pointee)
        loop.lines.append(f"if ({first}) {{ if ({as_type(mask, BOOL)}) {copy} "
                          f"else for (int j = 0; j < {n}; ++j) {buffer}[{loop.index} + j] = {fill}; }}")
        return read

    def vector_store(self, op: Op, ptr, value: str, loop: SlotLoop, declare: list[str],
                     conditions: list[str]) -> tuple[list[str], str]:
        n = op.attrs["vector"]
        pointee = element_of(op.operands[0].type).pointee
        self.vector_stores += 1
        buffer = f"w{self.vector_stores}_st"  # the shape of a local (names.py keeps user names apart)
        declare.append(self.lang.vector_buffer(c_element(pointee), buffer, n))
        loop.lines.append(f"{buffer}[{loop.index} % {n}] = {value};")
        start = f"({ptr.expr}) - {n - 1}"
        return [f"{loop.index} % {n} == {n - 1}"] + conditions, \
            self.lang.vector_copy(start, buffer, n * pointee.nbytes, source_const=False)

    def convert_group(self, group: Group) -> None:
        """``convert_layout``: each thread fills its slots of the new layout,
        reading the old one's registers where the two place an element on the
        same thread, else a copy in shared memory (``SlotLoop.read``)."""
        (op,) = group.ops
        if op.name not in opdefs.REMAPS:
            self.hold_in_registers(op.operands[0], op)
        loop = self.open_loop(group.domain, op)
        if op.attrs.get("scratch_pad"):  # allocate-shared's: the rows of its copy in scratch apart
            loop.pads[op.operands[0]] = op.attrs["scratch_pad"]
        if op.attrs.get("scratch_columns"):  # allocate-shared's: its copy in scratch column-major
            loop.columns.add(op.operands[0])
        coords = loop.coords()
        storage = self.storage[op.results[0]]
        if op.name in opdefs.REMAPS:  # shape ops: the operand read at remapped coordinates
            sources = loop.remapped(op, coords)
            values = [loop.value(o, c) for o, c in zip(op.operands, sources)]
            if op.name == "join":  # the last coordinate picks a or b
                expr = f"({loop.use(coords[-1])} == 0 ? {values[0].expr} : {values[1].expr})"
            else:
                expr = values[0].expr
        else:
            expr = loop.value(op.operands[0], coords).expr
        run = self.scratch_run(op, loop)
        if run > 1 and expr.startswith(tuple(self.shared_name(op.operands[0]) + end for end in ("[", "_read["))):
            # Each thread's run is contiguous in the copy (along its rows, or
            # down the columns of a column-major one): one read of the run.
            nbytes = run * element_bytes(op.results[0].type)
            base, _, index = expr.partition("[")
            # From this thread's first element (``_read``): by ld.shared at its 32-bit
            # shared address, as the writes go (stage_shared).
            store = self.fed_store if self.fed_store is not None and self.fed_store.attrs.get("vector") == run \
                else None
            # Fed to its store: each run goes from scratch to memory through one word, and no
            # array of all the slots is kept (NVVM spent a fifth of a TF32 matmul's build on it).
            target = f"&{storage}_run" if store is not None else f"&{storage}[k]"
            load = self.lang.shared_load(target, f"{base}_at + (unsigned)({index[:-1]}) * "
                                         f"{element_bytes(op.results[0].type)}", nbytes) \
                if base.endswith("_read") else None
            if store is not None:
                loop.lines.append(f"{self.lang.vector_words[nbytes]} {storage}_run;")
            loop.lines.append(load or self.lang.vector_copy(target, f'&{expr}', nbytes))
            loop.step = run
            if store is not None:
                with self.out.at(source_line(store)):
                    self.store_run(store, loop, f"{storage}_run", nbytes)
                self.fed_store_written = True
                self.close_loop(loop, f"{op.name}{self.where(op).replace('  // ' + op.name, '')} into "
                                      f"{self.parent_name(group.domain.parent)}, then the{self.where(store).replace('  //', '')} "
                                      f"({group.domain.slots} slot(s) per thread, {run} at a time)")
                return
            declare = self.lang.vector_buffer(c_element(op.results[0].type), storage, group.domain.slots)
        else:
            loop.lines.append(f"{storage}[k] = {expr};")
            declare = f"{c_element(op.results[0].type)} {storage}[{group.domain.slots}];"
        self.close_loop(loop, f"{op.name}{self.where(op).replace('  // ' + op.name, '')} into "
                              f"{self.parent_name(group.domain.parent)} ({group.domain.slots} slot(s) per thread)",
                        [declare])

    def store_fed_by(self, group: Group, following: Group | None) -> Op | None:
        """The store that ``group``, a layout change, feeds as the statement
        right after it, written in the layout change's loop: the store's only
        op, over the same slots, of the changed tile itself (used nowhere
        else) in its own element type, moving as many elements at once as
        the change reads from scratch (``convert_group`` checks the run)."""
        if group.kind != "convert" or following is None or following.kind != "tile" or len(following.ops) != 1:
            return None
        (op,), (store,) = group.ops, following.ops
        result = op.results[0]
        if op.name in opdefs.REMAPS or store.name != "store" or "vector" not in store.attrs \
                or store.operands[1] is not result or following.domain != group.domain:
            return None
        if element_of(store.operands[0].type).pointee != element_of(result.type) or result in self.held:
            return None
        if self._uses().get(result) != 1 or self.approximations_to_hold(following):
            return None
        return store

    def store_run(self, store: Op, loop: SlotLoop, word: str, nbytes: int) -> None:
        """``store`` of the run that starts at ``loop``'s slot (the layouts stage
        proved it contiguous, aligned and under one mask value) from ``word``."""
        ptr, _, mask = (loop.value(o, loop.coords()) for o in store.operands)
        conditions = [c for c in (loop.owner(), mask and as_type(mask, BOOL)) if c]
        write = self.lang.vector_copy(ptr.expr, f"&{word}", nbytes)
        loop.lines.append(f"if ({' && '.join(conditions)}) {write}" if conditions else write)

    def scratch_run(self, op: Op, loop: SlotLoop) -> int:
        """The elements a thread reads at once from a ``convert_layout``'s
        copy in scratch: its new layout's run (consecutive slots) along the
        rows of a row-major copy, or down the columns of a column-major one
        (allocate-shared's ``scratch_columns``), where that is 4, 8 or 16
        bytes and each row (column), padding included, keeps the runs
        aligned; else 1."""
        value, layout = op.operands[0], op.results[0].type.layout
        # A shape op (trans, permute, reshape) reads its operand at remapped
        # coordinates: a run of its result need not be one in the copy.
        if op.name in opdefs.REMAPS or not isinstance(layout, Blocked) or not value.type.shape:
            return 1
        dim = 0 if value in loop.columns else len(value.type.shape) - 1
        if layout.order[0] != dim:
            return 1
        run, nbytes = layout.size_per_thread[dim], element_bytes(op.results[0].type)
        pitch = loop.scratch_shape(value)[-1]
        if run * nbytes not in (4, 8, 16) or (pitch * nbytes) % (run * nbytes) or value.type.shape[dim] % run:
            return 1
        return run

    def fragment_pair_bytes(self, value: Value, loop: SlotLoop) -> int:
        """The bytes of a thread's pair of adjacent columns (consecutive slots
        of an mma layout) written to a row-major copy in scratch at once:
        4 or 8 where the rows, padding included, keep the pairs aligned; else 0."""
        nbytes = element_bytes(value.type)
        if not isinstance(value.type.layout, Mma) or value in loop.columns or len(value.type.shape) != 2:
            return 0
        if 2 * nbytes not in (4, 8) or (loop.scratch_shape(value)[-1] * nbytes) % (2 * nbytes):
            return 0
        return 2 * nbytes

    def approximations_to_hold(self, group: Group) -> list[OpResult]:
        """The approximations hold-tiles held that ``group`` is the first
        statement to read (``hold_tiles.approximations_read_twice``), in
        program order."""
        reached = {value for op in group.ops for value in approximations_reached(op, frozenset(self.held))
                   if value.op.attrs.get("hold") is True and value not in self.storage}
        if not reached:
            return []
        order = {op: i for i, op in enumerate(walk(self.kernel.body))}
        return sorted(reached, key=lambda value: order[value.op])

    def accumulations_ready(self, done: list[Op]) -> list[OpResult]:
        """The running combinations hold-tiles held (``hold_tiles.accumulations``)
        that the statements ``done`` complete: each goes into registers at
        once (and, held, completes those waiting for it), so that the reduction
        results it combines die here."""
        ready: list[OpResult] = []
        work = list(done)
        while work:
            for op, inputs in self.waiting.pop(work.pop(), []):
                value = op.results[0]
                if value not in self.storage and value not in ready \
                        and all(v.op in self.rendered or v in ready for v in inputs):
                    ready.append(value)
                    self.rendered.add(op)
                    work.append(op)
        return ready

    def hold_in_registers(self, value: Value, op: Op, why: str | None = None) -> None:
        """Compute ``value`` into registers in its own layout just before
        ``op``, where hold-tiles held it: before the layout change that
        moves a narrow epilogue cast (which then crosses shared memory
        instead of its wider inputs), before the first statement that
        reads an approximation read by several, after the statement whose
        result completes a running combination (``why`` says which). A
        value held already is read where it is."""
        if not (isinstance(value, OpResult) and value.op.attrs.get("hold") is True and is_tile(value)) \
                or value in self.storage:
            return
        domain = self.layout_of(value)
        loop = self.open_loop(domain, op, looped=True)
        name = "t" + self.name(value)[1:]
        loop.lines.append(f"{name}[k] = {loop.value(value, loop.coords()).expr};")
        if why is None:
            why = "before its layout change" if op.name == "convert_layout" else "for the statements that read it"
        self.close_loop(loop, f"{self.name(value)} held in registers {why} ({domain.slots} slot(s) per thread)",
                        [f"{c_element(value.type)} {name}[{domain.slots}];"])
        self.storage[value] = name
        self.held.add(value)

    # ---- shared memory ------------------------------------------------------------------------------
    def stage_shared(self, loop: SlotLoop) -> None:
        """Copy the tiles ``loop`` reads from other threads into shared memory."""
        if not loop.staged:
            return
        offset = 0
        self.scratch_fence()
        for value in loop.staged:
            element = c_element(value.type)
            name = self.shared_name(value)
            layout = self.layout_of(value)
            self.line(f"{element}* const {name} = reinterpret_cast<{element}*>(smem + {offset});")
            writer = SlotLoop(self, layout)
            shape = loop.scratch_shape(value)
            split = writer.split_coords()
            if split is not None:
                # Each write from this thread's first element: nvcc folds each slot's
                # part (a constant once unrolled) into the store, not the thread's (the
                # reading loop's reads likewise, from its own thread's: SlotLoop.read).
                thread, slot = split
                target, index = f"{name}_write", loop.scratch_index(value, slot)
                self.line(f"{element}* const {target} = &{name}[{loop.scratch_index(value, thread)}];")
            else:
                target, index = name, loop.scratch_index(value, [writer.use(c) for c in writer.coords()])
            pair = self.fragment_pair_bytes(value, loop)
            if pair:
                # A fragment's two adjacent columns (its consecutive slots) in one write.
                first, second = f"{self.storage[value]}[k]", f"{self.storage[value]}[k + 1]"
                if element in self.lang.shared_store_elements:
                    # By st.shared at a 32-bit shared address: through a generic pointer,
                    # NVVM spent a tenth of a split-K kernel's build on the writes' addresses.
                    self.line(f"const unsigned {target}_at = (unsigned)__cvta_generic_to_shared({target});")
                    address = f"{target}_at + (unsigned)({index}) * {element_bytes(value.type)}"
                    write = self.lang.shared_store(element, address, [first, second])
                else:
                    write = self.lang.pair_write(element, f"&{target}[{index}]", first, second) or \
                        f"{{ {self.lang.vector_buffer(element, 'pair', 2)[:-1]} = {{{first}, {second}}}; " \
                        f"{self.lang.vector_copy(f'&{target}[{index}]', 'pair', pair)} }}"
                writer.lines.append(write)
                writer.step = 2
            else:
                writer.lines.append(f"{target}[{index}] = {self.storage[value]}[k];")
            self.line(self.slot_unroll(layout.slots))
            with self.out.scope(f"for (int k = 0; k < {layout.slots}; {slot_step(writer.step)}) {{"):
                for text in writer.body():
                    self.line(text)
            if value in loop.thread_reads:  # the reading loop's thread's first element (SlotLoop.read)
                # ``T const*``: for a pointer tile's ``float*`` it reads as ``float* const*``
                # (``const float**`` would not take the address); scalars keep ``const T*``.
                read_type = f"{element} const*" if element.endswith("*") else f"const {element}*"
                self.line(f"{read_type} const {name}_read = &{name}[{loop.thread_reads[value]}];")
                if any(f"{name}_read_at" in text for text in loop.lines):  # runs read by ld.shared (convert_group)
                    self.line(f"const unsigned {name}_read_at = (unsigned)__cvta_generic_to_shared({name}_read);")
            offset += aligned(math.prod(shape) * element_bytes(value.type))
        # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
        self.line(self.lang.barrier)
        self.need_shared(offset, loop.staged[0])

    def scratch_fence(self, note: str = "") -> None:
        """The barrier before the statement being written starts writing its
        scratch (every phase's scratch starts at byte 0), which earlier
        accesses may still read: the insert-barriers pass decides it for a
        statement's first phase (its ``scratch_barrier`` attribute); a later
        phase of the same statement always has it (the phase before it read
        the same bytes: a barrier internal to the op's expansion), and so do
        a loop's or an if's carried-value copies, which the pass counts as
        fenced."""
        op, first = self.statement, self.fences == 0
        self.fences += 1
        if first and op is not None and op.name not in ("for", "while", "yield") and self.scratch_needs is None:
            decided = op.attrs.get("scratch_barrier")
            if decided is None and (self.late_shared_bytes if self.late else self.shared_bytes) == 0:
                return  # a plan with no scratch for it: need_shared refuses the statement next
            if decided is None:
                raise self.error_at(op, "this statement addresses shared scratch, but has no scratch_barrier "
                                        "decision: run insert-barriers (the layouts stage) again")
            if not decided:
                return
        self.line(f"{self.lang.barrier}  // earlier readers of shared memory are done{note}")

    def need_shared(self, nbytes: int, value_or_op) -> None:
        """The statement being written addresses ``nbytes`` of scratch from
        byte 0: recorded while measuring, else checked against the plan (which
        an edit of the laid-out SSA after allocate-shared may have made stale)."""
        op = value_or_op if isinstance(value_or_op, Op) else getattr(value_or_op, "op", None)
        if self.scratch_needs is None:
            granted = self.late_shared_bytes if self.late else self.shared_bytes
            if nbytes > granted:
                raise CompileError(f"this needs {nbytes} bytes of shared scratch, but the kernel's shared_memory "
                                   f"plan gives {granted}: run allocate-shared (the layouts stage) again",
                                   op.loc if op is not None and op.loc else self.kernel.loc)
            return
        self.scratch_needs.append(ScratchNeed(nbytes, op, self.late, self.statement))
        if self.late:
            self.late_shared_bytes = max(self.late_shared_bytes, nbytes)
        else:
            self.shared_bytes = max(self.shared_bytes, nbytes)

    # ---- loops --------------------------------------------------------------------------------------------
    def loop(self, op: Op) -> None:
        body = op.regions[0]
        start, stop, step = (self.scalar_arg(o) for o in op.operands[:3])
        carried = body.args[1:]
        for arg, init in zip(carried, op.operands[3:]):
            self.assign_carried(arg, init, declare=True)
        index = self.name(body.args[0])
        index_type = body.args[0].type  # i32, or i64 where a bound is
        hoist_copy_coordinates(self, op)
        hoist_fma_reads(self, op)
        if "loop_unroll_factor" in op.attrs:  # tl.range(..., loop_unroll_factor=N)
            self.line(f"{self.lang.unroll} {op.attrs['loop_unroll_factor']}")
        # A runtime step is positive by contract; one that is not runs no
        # iteration rather than forever.
        guard = "" if isinstance(step, Const) else f" && {as_type(step, index_type)} > 0"
        # A loop that leaves a wgmma group in flight is entered only when it
        # iterates, with the wait for that group inside the same branch: on a
        # path that skips the loop and reaches the wait, ptxas serialises the
        # loop's wgmma (its note C7514).
        wait = self.wait_after(op)
        entered = self.out.scope(f"if ({as_type(start, index_type)} < {as_type(stop, index_type)}{guard}) {{"
                                 f"  // the loop and the wait for its last group")
        with entered if wait is not None else nullcontext():
            with self.out.scope(f"for ({c_element(index_type)} {index} = {as_type(start, index_type)}; "
                                f"{index} < {as_type(stop, index_type)}{guard}; "
                                f"{index} += {as_type(step, index_type)}) {{{self.where(op)}"):
                self.block(self.groups[id(body)])
                self.begin_statement(body.ops[-1])
                self.yield_values(body.ops[-1], carried)
            if wait is not None:
                tma.emit_pipelined(self, wait)
                self.early.add(wait)

    def wait_after(self, loop: Op) -> Op | None:
        """The ``wgmma_wait`` (pending=0) of one of ``loop``'s results right
        after it, if there is one."""
        ops = loop.parent.ops
        at = ops.index(loop) + 1
        following = ops[at] if at < len(ops) else None
        if following is not None and following.name == "wgmma_wait" and following.attrs.get("pending") == 0 \
                and following.operands[0] in loop.results:
            return following
        return None

    # ---- if and while ---------------------------------------------------------------------------------
    def declare_results(self, op: Op) -> None:
        """Locals for an if's results, assigned by the branch that runs."""
        for result in op.results:
            target = self.storage[result]
            if is_tile(result):
                self.line(f"{c_element(result.type)} {target}[{self.layout_of(result).slots}];")
            else:
                self.line(f"{c_element(result.type)} {target};")

    def if_op(self, op: Op) -> None:
        # The condition is one scalar per program, so every thread of it
        # takes the same branch (barriers inside a branch are safe).
        self.declare_results(op)
        cond = as_type(self.scalar_arg(op.operands[0]), BOOL)
        self.line(f"if ({cond}) {{{self.where(op)}")
        for index, region in enumerate(op.regions):
            if index == 1:
                self.line("} else {")
            with self.out.indented():
                self.block(self.groups[id(region)])
                self.begin_statement(region.ops[-1])
                for result, value in zip(op.results, region.ops[-1].operands):
                    self.assign_carried(result, value)
        self.line("}")

    def while_op(self, op: Op) -> None:
        before, after = op.regions
        for result, init in zip(op.results, op.operands):
            self.assign_carried(result, init, declare=True)
        with self.out.scope(f"while (true) {{{self.where(op)}"):
            self.block(self.groups[id(before)])
            cond = as_type(self.scalar_arg(before.ops[-1].operands[0]), BOOL)
            self.line(f"if (!({cond})) break;")
            self.block(self.groups[id(after)])
            self.begin_statement(after.ops[-1])
            self.yield_values(after.ops[-1], after.args)

    def assign_carried(self, arg: Value, value: Operand, declare: bool = False, target: str | None = None) -> None:
        target = target or self.storage[arg]
        arg_op = arg.block.parent if isinstance(arg, BlockArg) else arg.op
        if not is_tile(arg):
            text = as_type(self.scalar_arg(value), element_of(arg.type))
            self.line(f"{c_element(arg.type) + ' ' if declare else ''}{target} = {text};")
            return
        layout = self.layout_of(arg)
        if declare:
            self.line(f"{c_element(arg.type)} {target}[{layout.slots}];")
        loop = self.open_loop(layout, arg_op)
        element = value if isinstance(value, Const) else loop.value(value, loop.coords())
        loop.lines.append(f"{target}[k] = {as_type(element, element_of(arg.type))};")
        self.close_loop(loop, f"{'initial' if declare else 'next'} value of carried {target}")

    def yield_values(self, op: Op, carried: list[Value]) -> None:
        pending = [(arg, value) for arg, value in zip(carried, op.operands) if value is not arg]
        hazards = [arg for arg, value in pending if self.reads_other_lane(value, arg, carried)]
        for arg, value in pending:
            if arg in hazards:
                temp = self.storage[arg] + "_next"
                self.assign_carried(arg, value, declare=True, target=temp)
        for arg, value in pending:
            if arg not in hazards:
                self.assign_carried(arg, value)
        for arg in hazards:
            temp = self.storage[arg] + "_next"
            if is_tile(arg):
                self.line(self.lang.unroll)
                self.line(f"for (int k = 0; k < {self.layout_of(arg).slots}; ++k) "
                          f"{self.storage[arg]}[k] = {temp}[k];")
            else:
                self.line(f"{self.storage[arg]} = {temp};")

    def reads_other_lane(self, value: Operand, lane: Value, carried: list[Value]) -> bool:
        others = set(carried) - {lane}
        work, seen = [value], set()
        while work:
            v = work.pop()
            if not isinstance(v, Value) or v in seen:
                continue
            seen.add(v)
            if v in others:
                return True
            if hasattr(v, "op") and not (is_tile(v) and is_materialized(v)) \
                    and v.op.name not in ("for", "if", "while"):
                work.extend(v.op.operands)
        return False


@renders("scalar")
def _scalar(em: CudaEmitter, group: Group) -> None:
    em.scalar(group.ops[0])


@renders("tile")
def _tile(em: CudaEmitter, group: Group) -> None:
    em.tile_group(group)


@renders("convert")
def _convert(em: CudaEmitter, group: Group) -> None:
    em.convert_group(group)


@renders("barrier")
def _barrier(em: CudaEmitter, group: Group) -> None:
    em.line(f"{em.lang.barrier}{em.where(group.ops[0])}")


@renders("async")
def _async(em: CudaEmitter, group: Group) -> None:
    if group.ops[0] not in em.early:  # a wait emitted with its loop (CudaEmitter.loop)
        tma.emit_pipelined(em, group.ops[0])


@renders("if")
def _if(em: CudaEmitter, group: Group) -> None:
    em.if_op(group.ops[0])


@renders("while")
def _while(em: CudaEmitter, group: Group) -> None:
    em.while_op(group.ops[0])


@renders("for")
def _for(em: CudaEmitter, group: Group) -> None:
    em.loop(group.ops[0])


def fills_zero_bits(other: Operand) -> bool:
    """Whether a masked load's fill (``other``; none fills 0) is all zero
    bits: 0, 0.0 or False, not -0.0 nor a runtime value."""
    if other is None:
        return True
    return isinstance(other, Const) and other.value == 0 and math.copysign(1.0, other.value) > 0


def load_expr(op: Op, args: list) -> str:
    ptr, mask, other = args
    pointee = element_of(op.operands[0].type).pointee
    read = f"*{ptr.expr}"
    if mask is None:
        return read
    fill = as_type(other, pointee) if other is not None else c_literal(0, pointee)
    return f"({as_type(mask, BOOL)} ? {read} : {fill})"


def c_comment(text: str) -> str:
    """``text`` safe inside a ``//`` comment: printable ASCII but for the
    backslash (which continues a comment onto the next line before a newline)
    and ``?`` (trigraphs); everything else as an escape that ends in a hex
    digit, never in a backslash."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0x20 <= code < 0x7F and ch not in "\\?":
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                       else f"\\U{code:08x}")
    return "".join(out)


def emit_cuda(kernel: Kernel) -> str:
    """CUDA C++ for laid-out SSA with its shared-memory plan (allocate-shared)."""
    return CudaEmitter(kernel).emit()


def slot_step(step: int) -> str:
    """A slot loop's increment."""
    return "++k" if step == 1 else f"k += {step}"


def measure_scratch(kernel: Kernel) -> list[ScratchNeed]:
    """What scratch each statement of laid-out ``kernel`` addresses, in
    program order: the emitter run without writing anything."""
    emitter = CudaEmitter(kernel, measure=True)
    emitter.emit()
    return emitter.scratch_needs


def header_of(source: str) -> dict | None:
    """The header's JSON object if the first line is a well-formed one, else
    None (nvcc's build reads what it needs of it; launches use read_header)."""
    first = source.split("\n", 1)[0]
    if not first.startswith(HEADER_PREFIX):
        return None
    try:
        header = json.loads(first[len(HEADER_PREFIX):])
    except (ValueError, RecursionError):
        return None
    return header if isinstance(header, dict) else None


def read_header(source: str, file: str = "<cuda>") -> dict:
    """The launch facts a ``.cu`` file from ``emit-cuda`` carries on its first
    line, checked: a kernel name, parameters as [name, type] pairs of scalar
    or pointer types, the stored parameters' names, threads per block."""
    first = source.split("\n", 1)[0]
    where = Location(file, 1, 1)
    if not first.startswith(HEADER_PREFIX):
        raise CompileError("not a mytriton CUDA file: the first line must be the "
                           f"'{HEADER_PREFIX.strip()}' header that emit-cuda writes", where)
    try:
        header = json.loads(first[len(HEADER_PREFIX):])
    except json.JSONDecodeError as err:
        raise CompileError(f"malformed mytriton-kernel header: {err.msg}",
                           Location(file, 1, len(HEADER_PREFIX) + err.pos + 1)) from None
    except (ValueError, RecursionError):  # an integer of thousands of digits, nesting too deep
        raise CompileError("malformed mytriton-kernel header: a value is too large or too deeply nested",
                           where) from None
    if not isinstance(header, dict):
        raise CompileError("malformed mytriton-kernel header: expected a JSON object", where)
    for key in ("kernel", "params", "threads", "stores"):
        if key not in header:
            raise CompileError(f"the mytriton-kernel header lacks '{key}'", where)
    _check_header(header, where)
    return header


def _check_header(header: dict, where: Location) -> None:
    from mytriton.ir.text_common import parse_type
    from mytriton.types import PointerType as Pointer, ScalarType as Scalar

    def bad(message: str) -> CompileError:
        return CompileError(f"malformed mytriton-kernel header: {message}", where)

    kernel, params, threads, stores = (header[k] for k in ("kernel", "params", "threads", "stores"))
    if not isinstance(kernel, str) or not kernel.isidentifier():
        raise bad(f"'kernel' must be a C identifier, got {json.dumps(kernel)[:80]}")
    if not isinstance(params, list):
        raise bad("'params' must be a list of [name, type] pairs")
    names: set[str] = set()
    for param in params:
        if not (isinstance(param, list) and len(param) == 2 and all(isinstance(x, str) for x in param)):
            raise bad(f"'params' must be a list of [name, type] pairs, got {json.dumps(param)[:80]}")
        name, text = param
        if not name.isidentifier() or name in names:
            raise bad(f"parameter name {json.dumps(name)[:80]} is not a new C identifier")
        names.add(name)
        try:
            t = parse_type(text, "<header>")
        except CompileError:
            t = None
        if not isinstance(t, (Scalar, Pointer)):
            raise bad(f"parameter '{name}' has type {json.dumps(text)[:80]}, not a scalar or pointer type")
    if type(threads) is not int or not 1 <= threads <= 1024:
        raise bad(f"'threads' must be an integer from 1 to 1024, got {json.dumps(threads)[:80]}")
    if not isinstance(stores, list) or not all(isinstance(x, str) for x in stores):
        raise bad("'stores' must be a list of parameter names")
    for name in stores:
        if name not in names:
            raise bad(f"'stores' names {json.dumps(name)[:80]}, which is not a parameter")
    shared = header.get("shared_bytes", 0)  # a header from before dynamic shared memory: none
    if type(shared) is not int or not 0 <= shared <= MAX_SHARED_BYTES:
        raise bad(f"'shared_bytes' must be an integer from 0 to {MAX_SHARED_BYTES}, got {json.dumps(shared)[:80]}")
    constexprs = header.get("constexprs", {})
    if not isinstance(constexprs, dict) or not all(
            v is None or isinstance(v, (bool, int, float, str)) for v in constexprs.values()):
        raise bad("'constexprs' must map names to numbers, dtype names or null")
