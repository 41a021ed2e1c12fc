"""layouts: give every tile a layout, for a number of warps per program.

    %6 = load %4, %5, -inf : vector<1024 x f32> @10:9
      =>
    #blocked0 = blocked<size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0]>
    %6 = load %4, %5, -inf : vector<1024 x f32, #blocked0> @10:9

Triton's TTGIR stage is the model. Layouts flow backwards from the ops that
consume tiles (Triton's anchors): a store spreads its tile with the default
layout of its shape (or, when it stores a tile held in registers whose
address and mask come from indices alone, with that tile's layout, so no
data moves; but a tile held in an ``mma`` layout whose store the axis
analysis proves 16 bytes wide a thread is exchanged through shared memory
just before the store into a blocked layout of 16-byte runs, as Triton's
epilogue, and one whose rows it proves contiguous but not aligned into a
warp's lanes along the row, where that scratch overlays the staged buffers
(after the K loops), fits 48 KiB, or fits the block's budget in a kernel
that already opts into more, or, inside a loop, fits beside the live
buffers (``exchange_fits``): the fragments hold two adjacent columns a thread; a tile atomic of
such a tile whose addresses run along the row is exchanged into a blocked
layout along the row, so a warp's atomic covers adjacent addresses, with 4
f32 (8 f16 or bf16) a thread where a vector atom may add them, ``mark_vector_atomics``);
each operand is asked for in the layout its consumer's rule
gives (``OpDef.layout_rule``), sliced where it broadcasts from a lower rank.
A reduction's operand takes the layout whose slice its consumers want, so a
row maximum read back against its row needs no data exchange; a ``split``'s
operand takes its halves' blocked layout with the pair held whole by each
thread (``paired``), so the halves are read in registers; a ``trans``
that a dot reads takes its operand's blocked layout with the axes swapped
(Triton's TransOp infers it), so it moves no data, and the dot writes that
operand to scratch column-major (allocate-shared's ``a_columns``,
``b_columns``); a tile atomic of a reduction's slice, which holds each element
on every lane its reduced dimension spread over, is exchanged first into a
layout spread over the block (``replicated``): one fenced atomic a thread,
not one per element its owner holds. The first
request (the latest use in program order) decides a value's layout. A later
request for another layout is met

- for a value computed elementwise (index arithmetic, ``arange``, a mask),
  or loaded with fewer elements than the block has threads:
  by a copy of its op in the new layout (*rematerialised*, as Triton's
  RemoveLayoutConversions does), since recomputing is cheaper than moving;
- for a value held in registers (a load, a reduction, a dot, a loop's
  carried value), or computed elementwise from two or more such tiles in its
  layout (the total of an unrolled loop's row sums: a copy would exchange
  each of them): by an explicit ``convert_layout`` after its definition,
  which the back end renders as an exchange through shared memory.

A dot the tensor cores can compute anchors an ``mma`` result layout, so
that the accumulator stays in its fragments across the K loop and is stored
from them; which instruction (wgmma on Hopper, mma.sync, or FMAs) and which
operand and buffer layouts it gets is ``dot_layouts.py``'s choice.

A dot computed with FMAs anchors its result's layout (Triton's anchors
again): its result gets a register-tiled layout (``fma_dot_layout``), and
that choice flows forwards, before the backward walk, to what is computed
elementwise from it at its shape and through the loops that carry it, so the
accumulator of ``acc += tl.dot(a, b)`` stays in it across the K loop. Once
those anchors settle, a reduction anchors its result in its operand's slice,
which flows the same way (attention's row max and sum, and the m_i and l_i
its loop carries, stay where acc * alpha[:, None] reads them). A use that
wants a held anchored tile in another layout gets a ``convert_layout``
(after the loop, for a loop's result) instead of moving the anchor.

Loads, stores and atomics move as many bytes a thread as the axis analysis
proves contiguous and aligned (``access_layouts.py``, Triton's Coalesce):
a shape's layout holds that many elements a thread along its contiguous
dimension, and each access that can gets ``vector=N``. A dot's result stored
column-major is exchanged into a layout whose runs go down its columns.

Shared buffers from stage-dots get a ``padded_shared`` layout: the A operand
of an FMA dot is padded so that its rows' 16-byte reads fall in distinct
banks (``fma_operand_pad``) where all staged buffers still fit the shared
budget, or swizzled instead (``nvmma_shared``, ``fma_operand_swizzle``) where
TMA would make every copy into it; other buffers are unpadded (B is read
along its rows). The kernel
records ``num_warps``: the SSA is then the CUDA back end's input, and
``emit-cuda`` renders it without choosing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from mytriton import remarks
from mytriton.diagnostics import CompileError
from mytriton.ir import opdefs
from mytriton.ir.axis_info import AxisAnalysis
from mytriton.ir.analysis import is_materialized, is_tile, reaches_materialized
from mytriton.ir.layout_attributes import (
    SWIZZLE_ALIGNMENT, WARP, Blocked, Mma, NvmmaShared, PaddedShared, SharedLayout, Slice, TileLayout, broadcast_view, default_blocked,
    fma_dot_layout, fma_operand_pad, fma_operand_swizzle, transposed_blocked,
)
from mytriton.ir.ssa import (
    Block, BlockArg, Kernel, Op, OpResult, Value, for_body, for_carried, for_inits, for_yield, insert_before,
    walk, walk_op,
)
from mytriton.target import (
    DEFAULT_ARCH, DEFAULT_SHARED_LIMIT, SHARED_MEMORY_BUDGET, has_tma, has_vector_atomics, has_wgmma,
)
from mytriton.passes.buffer_liveness import array_bytes, asynchronous
from mytriton.passes.access_layouts import (
    access_widths, atomic_runs, column_runs, mark_vector_accesses, mark_vector_atomics, preferred_layouts,
    row_runs, vectorized_blocked,
)
from mytriton.passes.dot_layouts import (
    buffer_of, column_contiguous_buffers, k_major_buffers, mma_layout, mma_shared_layout, mma_sync_choice,
    register_a_layout, wgmma_choice, wgmma_layout, wgmma_shared_layout,
)
from mytriton.types import BF16, F16, F32, BlockType, SharedType, element_of

DEFAULT_NUM_WARPS = 4
# Row-major shared buffers, unpadded unless an FMA dot reads them across rows
# (see ``shared_layouts``): B is read along its rows from consecutive banks and
# the copies write consecutive addresses.
SHARED_LAYOUT = PaddedShared(pad=0)
# The proven run along a row from which an mma-held tile's unaligned store is
# exchanged first: past the 8 columns a fragment's 4 lanes already cover.
UNALIGNED_ROW_RUN = 16


def check_num_warps(num_warps: Any) -> None:
    if type(num_warps) is not int or not 1 <= num_warps <= 32 or num_warps & (num_warps - 1):
        raise CompileError(f"num_warps must be a power of two from 1 to 32, got {num_warps}")


class _Assigner:
    def __init__(self, kernel: Kernel, num_warps: int,
                 preferred: dict[tuple[int, ...], Blocked] | None = None, wgmma: bool = False,
                 widths: dict[Op, int] | None = None,
                 atomic_runs: dict[Op, tuple[int, int]] | None = None,
                 shared_budget: int = SHARED_MEMORY_BUDGET,
                 columns: dict[Op, tuple[int, int]] | None = None,
                 rows: dict[Op, int] | None = None) -> None:
        self.kernel = kernel
        self.columns = columns or {}  # store -> (the other dimension its addresses run on, the width there)
        self.rows = rows or {}  # store -> its addresses' proven run along the last dimension, aligned or not
        self.shared_budget = shared_budget  # bytes of shared memory a block may use
        self.widths = widths or {}  # the elements each load and store may move at once (axis info)
        # tile atomic -> (its pointer's contiguous run along the last dimension, its vector width)
        self.atomic_runs = atomic_runs or {}
        # the bytes of the staged dot buffers, which scratch needed after them may overlay
        self.staged_bytes = array_bytes(kernel, lambda op: op.results[0].type.nbytes)
        self.num_warps = num_warps
        self.wgmma = wgmma  # the target has Hopper's warpgroup instructions
        self.k_major = k_major_buffers(kernel) if wgmma else frozenset()
        self.layouts: dict[Value, TileLayout] = {}
        # (value, layout) -> the value standing for it there (a copy or a conversion)
        self.variants: dict[tuple[Value, TileLayout], Value] = {}
        # Tile shapes whose accesses are vectorised: their layout.
        self.preferred = preferred or {}
        # value -> the layout a dot anchors for it (see ``anchor``)
        self.anchored: dict[Value, TileLayout] = {}
        self.reduce_defaults = False  # see ``anchor``
        self.anchor(kernel.body)

    # ---- anchors ------------------------------------------------------------------------------
    def dot_layout(self, op: Op) -> TileLayout:
        """A dot's result layout: an ``mma`` layout where the tensor cores
        compute it (``mma_layout``), else a register tile per thread whose
        column runs are 16 bytes of the operands' and result's elements."""
        mma = mma_layout(op, self.num_warps, self.wgmma, self.k_major)
        # Why not the faster instruction, for remarks: why not wgmma on an
        # mma.sync dot, why not mma.sync on an FMA one.
        if mma is None or (mma.version == 2 and self.wgmma):
            refused = wgmma_choice(op, self.num_warps, self.k_major) if mma is not None \
                else mma_sync_choice(op, self.num_warps)
            if isinstance(refused, str):
                remarks.note(self.kernel, op, remarks.INSTRUCTION, refused)
        elif mma.version == 2:
            remarks.note(self.kernel, op, remarks.INSTRUCTION, "wgmma needs sm_90 (Hopper)")
        if mma is not None:
            return mma
        types = (op.operands[0].type, op.operands[1].type, op.results[0].type)
        widest = max((t.element if isinstance(t, SharedType) else element_of(t)).nbytes for t in types)
        return fma_dot_layout(op.results[0].type.shape, self.num_warps, max(1, 16 // widest))

    def anchor(self, block: Block) -> None:
        """Forwards: each dot's result takes its FMA layout; an elementwise
        result takes the anchored layout of an operand of its own shape; the
        values a loop carries (and its results) and an if's results, the
        anchored layout of their initial or yielded values. Passes over the
        kernel in program order repeat until nothing new is anchored (a
        yield reaches its loop's next iteration in the next pass); each pass
        but the last anchors something, so there are few. A reduction whose
        operand nothing anchors is anchored in the slice of that operand's
        default layout only once the others have settled: in an earlier pass
        its operand may yet take a dot's layout (the accumulator a loop
        returns reaches the ops after the loop in the second pass)."""
        for defaults in (False, True):
            self.reduce_defaults = defaults
            while True:
                count = len(self.anchored)
                for op in walk(block):
                    self.anchor_op(op)
                if len(self.anchored) == count:
                    break

    def anchor_op(self, op: Op) -> None:
        if op.name == "for":
            carried = for_carried(op)
            terminator = for_yield(op)
            yields = terminator.operands if terminator is not None else []
            for arg, init, value, result in zip(carried, for_inits(op), yields, op.results):
                self.anchor_to(arg, init)
                self.anchor_to(arg, value)
                self.anchor_to(result, arg)
            return
        if op.name == "while":  # one layout for all its carried values (``while_op``)
            before, after = op.regions
            for index, (arg, init) in enumerate(zip(before.args, op.operands)):
                self.anchor_to(arg, init)
                self.anchor_to(arg, after.ops[-1].operands[index])
                self.anchor_to(after.args[index], arg)
                self.anchor_to(op.results[index], arg)
            return
        if op.name == "if":
            for index, result in enumerate(op.results):
                for region in op.regions:
                    self.anchor_to(result, region.ops[-1].operands[index])
            return
        definition = opdefs.lookup(op.name)
        if definition is None or not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        if definition.layout_rule == "dot" and len(result.type.shape) == 2:
            self.anchored.setdefault(result, self.dot_layout(op))
        elif definition.layout_rule == "reduce":
            # A reduction anchors its result in the slice of its operand's
            # layout, where it is made: the values computed from it and those
            # a loop carries for it (attention's m_i and l_i, an accumulator of
            # row sums `acc += tl.sum(x, axis=0)`) stay there, so the next
            # iteration and the tiles combined with it (`tl.zeros` made
            # again in that layout) read it with no exchange through shared
            # memory each time it is made.
            domain = self.anchored.get(op.operands[0])
            if domain is None:
                if not self.reduce_defaults:
                    return
                domain = self.default(op.operands[0].type.shape)
            for tile in op.results:
                if is_tile(tile):
                    self.anchored.setdefault(tile, Slice(op.attrs.get("axis"), domain))
        elif definition.layout_rule == "elementwise":
            for operand in op.operands:
                self.anchor_to(result, operand)

    def anchor_to(self, value: Value, source: object) -> None:
        if value not in self.anchored and is_tile(source) and source in self.anchored \
                and source.type.shape == value.type.shape:
            self.anchored[value] = self.anchored[source]

    def default(self, shape: tuple[int, ...]) -> TileLayout:
        found = self.preferred.get(tuple(shape))
        return found if found is not None else default_blocked(shape, self.num_warps)

    def layout(self, value: Value) -> TileLayout:
        found = self.layouts.get(value) or self.anchored.get(value)
        return found if found is not None else self.default(value.type.shape)

    def held(self, value: Value) -> TileLayout:
        """The layout a tile held in registers has, or will have if no later
        use asks otherwise: a reduction leaves its result in a slice of its
        operand's layout."""
        found = self.layouts.get(value) or self.anchored.get(value)
        if found is not None:
            return found
        op = value.op if isinstance(value, OpResult) else None
        if op is not None and opdefs.lookup(op.name).layout_rule == "reduce":
            return Slice(op.attrs["axis"], self.layout(op.operands[0]))
        return self.default(value.type.shape)

    # ---- requests ---------------------------------------------------------------------------
    def request(self, op: Op, index: int, layout: TileLayout) -> None:
        """Operand ``index`` of ``op`` is read in ``layout`` (already a view
        for the operand's rank)."""
        value = op.operands[index]
        if not is_tile(value):
            return
        have = self.layouts.get(value)
        if have is None:
            anchored = self.anchored.get(value)
            if anchored is None or anchored == layout or not self.held_there(value, anchored):
                self.layouts[value] = layout
                return
            # A held tile keeps the layout its dot anchors; this use converts.
            have = self.layouts[value] = anchored
        if have == layout:
            return
        variant = self.variants.get((value, layout))
        if variant is None:
            variant = self.rematerialize(value, layout) if not self.held_there(value, have) or self.cheap_load(value) \
                else self.convert(value, layout)
            self.variants[(value, layout)] = variant
        op.operands[index] = variant

    def held_there(self, value: Value, layout: TileLayout) -> bool:
        """Whether a use of ``value`` in another layout than ``layout`` converts
        it rather than computing it again there: it is held in registers, or
        it combines, elementwise, two or more tiles held in ``layout`` (an
        unrolled ``sumsq += tl.sum(x * x, axis=1)``: a copy of the sum chain
        in the other layout would exchange every step's sum; one exchange of
        the total costs less)."""
        if is_materialized(value):
            return True
        held, work, seen = 0, [value], set()
        while work:
            tile = work.pop()
            if tile in seen or not is_tile(tile) or tile.type.shape != value.type.shape \
                    or self.anchored.get(tile) != layout:
                continue
            seen.add(tile)
            if is_materialized(tile):
                held += not self.cheap_load(tile)
                if held > 1:
                    return True
            elif opdefs.lookup(tile.op.name).layout_rule == "elementwise":
                work.extend(tile.op.operands)
        return False

    def cheap_load(self, value: Value) -> bool:
        """Whether ``value`` is a load of fewer elements than the block has
        threads, which a later use in another layout loads again rather than
        exchanging through shared memory (two barriers), as Triton's
        RemoveLayoutConversions judges such a load cheap
        (``isExpensiveLoadOrStore``): Liger's mrope reads its cos and sin rows
        (64 elements) in the layouts of both its q and its k tiles."""
        return isinstance(value, OpResult) and value.op.name == "load" \
            and value.type.numel < self.num_warps * WARP

    def rematerialize(self, value: Value, layout: TileLayout) -> Value:
        original = value.op
        copy = Op(original.name, list(original.operands), [r.type for r in original.results],
                  dict(original.attrs), original.loc)
        _insert_after(original, copy)
        result = copy.results[value.index]
        self.layouts[result] = layout
        self.operands(copy, layout)
        return result

    def convert(self, value: Value, layout: TileLayout) -> Value:
        op = Op("convert_layout", [value], [value.type], loc=_loc_of(value))
        if isinstance(value, BlockArg):
            body = value.block
            op.parent = body
            body.ops.insert(0, op)
        else:
            _insert_after(value.op, op)
        self.layouts[op.result] = layout
        return op.result

    # ---- ops ------------------------------------------------------------------------------------
    def operands(self, op: Op, layout: TileLayout) -> None:
        """Ask for ``op``'s tile operands as its layout rule says, given the
        layout of its result (of its pointer, for a store)."""
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "expand_dims":
            self.request(op, 0, Slice(op.attrs["axis"], layout))
            return
        if rule == "dot":
            for index in (0, 1):
                operand = op.operands[index]
                if is_tile(operand):
                    wanted = self.layout(operand) if operand in self.layouts \
                        else self.register_transpose(operand) or self.layout(operand)
                    if index == 0 and op.name == "dot_rs" and isinstance(layout, Mma) and layout.version == 3:
                        wanted = register_a_layout(layout, operand, self.layouts.get(operand)
                                                   or self.anchored.get(operand))
                    self.request(op, index, wanted)
            self.request(op, 2, layout)
            return
        for index, operand in enumerate(op.operands):
            if is_tile(operand):
                self.request(op, index, broadcast_view(layout, len(operand.type.shape)))

    def block(self, block: Block) -> None:
        for op in reversed(list(block.ops)):
            self.op(op)

    def op(self, op: Op) -> None:
        if op.name == "for":
            self.loop(op)
            return
        if op.name == "if":
            self.if_op(op)
            return
        if op.name == "while":
            self.while_op(op)
            return
        rule = opdefs.lookup(op.name).layout_rule
        if rule == "store":
            if is_tile(op.operands[0]):
                self.store(op)
            return
        if rule == "reduce":
            self.reduction(op)
            return
        if rule == "scan":
            self.scan(op)
            return
        if op.name == "split":
            self.split(op)
            return
        if op.name == "trans":
            self.trans(op)
            return
        if op.name == "gather":
            self.gather(op)
            return
        if rule == "convert" or not op.results or not is_tile(op.results[0]):
            return
        result = op.results[0]
        layout = self.layout(result)
        if op.name in opdefs.ATOMIC_OPS and result not in self.layouts:
            layout = self.atomic_layout(op, layout)
        self.layouts[result] = layout
        self.operands(op, layout)

    def gather(self, op: Op) -> None:
        """tl.gather's result takes the layout its users want, and its index
        is read in that layout: each thread looks up its own result elements.
        The source stays as it is made (it goes through shared memory)."""
        result = op.results[0]
        layout = self.layout(result)
        self.layouts[result] = layout
        self.request(op, 1, layout)

    def trans(self, op: Op) -> None:
        """A transpose read by a dot is laid out as its operand is, axes
        swapped (``register_transpose``), so it moves no data; pin the operand
        there, where no later use decided otherwise."""
        result, operand = op.results[0], op.operands[0]
        layout = self.layouts.get(result)
        if isinstance(layout, Blocked) and layout == self.register_transpose(result) \
                and operand not in self.layouts:
            self.request(op, 0, transposed_blocked(layout))

    def register_transpose(self, value: Value) -> Blocked | None:
        """For a rank-2 ``trans`` whose operand is (or will be) in a blocked
        layout: that layout with its axes swapped, in which the transpose
        reads every element from the thread's own registers."""
        if not isinstance(value, OpResult) or value.op.name != "trans":
            return None
        operand = value.op.operands[0]
        have = self.layouts.get(operand) or self.anchored.get(operand) or self.default(operand.type.shape)
        return transposed_blocked(have) if isinstance(have, Blocked) else None

    def split(self, op: Op) -> None:
        """One half of ``tl.split``: its operand is asked for in the result's
        blocked layout with the pair as a last dimension each thread holds
        whole (``paired``), as Triton lays a split's operand out, so each
        thread takes its half from its own registers; a result in any other
        layout (a slice, an mma) is moved through shared memory."""
        result = op.results[0]
        layout = self.layout(result)
        if isinstance(layout, Blocked):
            self.layouts[result] = layout
            self.request(op, 0, paired(layout))

    def store(self, op: Op) -> None:
        # A store's (pointer, value, mask); device_print's and device_assert's
        # first operand stands where the pointer does.
        ptr, value, mask = (op.operands + [None, None])[:3] if op.name == "store" else (op.operands[0], None, None)
        layout = self.default(ptr.type.shape)
        if is_tile(value) and (is_materialized(value) or value in self.anchored) \
                and value.type.shape == ptr.type.shape and not any(reaches_materialized(o) for o in (ptr, mask)):
            layout = self.held(value)  # store the tile where it is: no data moves
            coalesced = self.coalesced_store(op, layout)
            if coalesced is not None:
                # A dot's result is stored 16 bytes a thread after an exchange
                # through shared memory, as Triton's epilogue: the tensor-core
                # fragments hold two adjacent columns a thread.
                layout = self.exchange_before(op, 1, layout, coalesced)
        self.request(op, 0, layout)
        self.operands(op, layout)

    def coalesced_store(self, op: Op, held: TileLayout) -> Blocked | None:
        """The layout storing 16 bytes a thread, for a store of a tile held in
        an mma layout whose accesses the axis analysis proves that wide:
        along its rows, or down its columns where it is stored column-major
        (Liger's MoE dW2 tile, `h[None, :] * stride + i[:, None]`), whose
        fragments would otherwise store 2 bytes at a time, 8 rows apart.
        A store whose rows are proven contiguous but not aligned (tutorial
        08's C, its address loaded from an array) is exchanged too, into the
        lanes of a warp along a row, as many elements a thread as are proven
        aligned: each instruction then writes one run of the row, where the
        fragments' write 8 rows' sectors in part (as Triton's coalescing
        orders such a store by its contiguity)."""
        if op.name != "store" or not isinstance(held, Mma) or not self.exchange_fits(op.operands[1], op):
            return None
        shape = op.operands[0].type.shape
        nbytes = element_of(op.operands[0].type).pointee.nbytes
        width = 16 // nbytes
        last = len(shape) - 1
        dim, proven = self.columns.get(op, (last, self.widths.get(op, 1)))
        if proven >= width and shape[dim] % width == 0:
            return vectorized_blocked(shape, self.num_warps, width, dim)
        if dim == last and self.rows.get(op, 1) >= UNALIGNED_ROW_RUN and shape[last] % max(proven, 1) == 0:
            return vectorized_blocked(shape, self.num_warps, max(proven, 1))
        return None

    def exchange_fits(self, value: Value, op: Op) -> bool:
        """Whether ``value`` may move through shared memory just before
        ``op``. At the kernel's top level (an epilogue, after the K loops)
        its scratch overlays the staged dot buffers, or fits the 48 KiB any
        block has, or, in a kernel whose buffers already take more than that
        (its launch opts into more), the block's budget, as Triton's epilogue
        takes it: a 128x256 f32 accumulator on 8 warps (128 KiB over 72 KiB
        of buffers, and 128 accumulators a thread, which hold a block to one
        an SM whatever its shared memory) is stored 16 bytes a thread, 32
        instructions where its fragments took 64 of 8 bytes, each spread over
        8 rows. Inside a loop (tutorial 08's tiles, a persistent kernel's)
        the buffers are live around it: its copy, rows padded (a quarter
        more at most), must fit beside them."""
        t = value.type
        nbytes = t.numel * element_of(t).nbytes
        if op.parent is not self.kernel.body:
            return self.staged_bytes + nbytes * 5 // 4 <= self.shared_budget
        if nbytes <= max(self.staged_bytes, DEFAULT_SHARED_LIMIT):
            return True
        return self.staged_bytes > DEFAULT_SHARED_LIMIT and nbytes <= self.shared_budget

    def atomic_layout(self, op: Op, layout: TileLayout) -> TileLayout:
        """An atomic no tile use has asked a layout of yet applies its value
        where that value is held (as a store does: no data moves), when its
        pointer and mask come from indices alone."""
        index = 1 if op.name == "atomic_rmw" else 2
        value = op.operands[index]
        others = [o for i, o in enumerate(op.operands) if i != index]
        if is_tile(value) and (is_materialized(value) or value in self.anchored) \
                and value.type.shape == op.results[0].type.shape and not any(reaches_materialized(o) for o in others):
            held = self.held(value)
            contiguity, vector = self.atomic_runs.get(op, (1, 1))
            shape = value.type.shape
            if self.replicated(held, value) and self.exchange_fits(value, op):
                # A reduction's slice holds each element on every lane (warp)
                # the reduced dimension spread over, and only its owner applies
                # it: 16 elements a thread, each an atomic behind its own fence,
                # where spread over the block's threads each adds one (Triton
                # lays an atomic out by its own access pattern, then converts).
                return self.exchange_before(op, index, held, self.atomic_runs_layout(shape, vector))
            if not isinstance(held, Mma) or contiguity < 2 or not self.exchange_fits(value, op):
                return held
            # A tensor-core fragment holds pairs of columns on 8 rows a warp:
            # its atomics would touch 8 rows' sectors per instruction, each
            # (acq_rel by default) behind a fence. Moved along the contiguous
            # rows as Triton's coalesced atomics, a warp's instruction covers
            # adjacent elements, and on sm_90 each thread adds 4 f32 at once
            # (one fence per 4 elements).
            return self.exchange_before(op, index, held, self.atomic_runs_layout(shape, vector))
        return layout

    def atomic_runs_layout(self, shape: tuple[int, ...], vector: int) -> Blocked:
        """The blocked layout an exchanged tile atomic takes: ``vector``
        elements a thread along its rows where one vector atom may add them,
        else the default one."""
        if vector > 1 and shape[-1] % vector == 0:
            return vectorized_blocked(shape, self.num_warps, vector)
        return default_blocked(shape, self.num_warps)

    def replicated(self, layout: TileLayout, value: Value) -> bool:
        """Whether ``layout`` (a reduction's slice) holds each element of
        ``value`` on several lanes or warps and so gives a thread more of its
        elements than the block's default layout would: the reduced
        dimension's lanes and warps all hold the result."""
        if not isinstance(layout, Slice) or not isinstance(layout.parent, Blocked):
            return False
        parent = layout.parent
        copies = parent.threads_per_warp[layout.dim] * parent.warps_per_cta[layout.dim]
        threads = self.num_warps * WARP
        return copies > 1 and value.type.numel * copies > max(threads, value.type.numel)

    def exchange_before(self, op: Op, index: int, held: TileLayout, layout: TileLayout) -> TileLayout:
        """``op``'s operand ``index`` (held in ``held``) moved into ``layout`` by
        a ``convert_layout`` just before ``op``: after a K loop's drain, where
        its scratch may reuse the staged buffers' memory."""
        value = op.operands[index]
        self.layouts.setdefault(value, held)
        exchange = Op("convert_layout", [value], [value.type], loc=_loc_of(value))
        insert_before(op, exchange)
        self.layouts[exchange.result] = layout
        op.operands[index] = exchange.result
        return layout

    def reduction(self, op: Op) -> None:
        """A reduction's operand (a combine ``reduce``'s first one; the others
        are read in its layout) takes the layout whose slice its users want;
        each tile result is that layout sliced along the axis."""
        x = op.operands[0]
        axis = op.attrs.get("axis")
        tiles = [r for r in op.results if is_tile(r)]
        domain = self.layouts.get(x)
        if domain is None:
            domain = self.anchored.get(x) or self.default(x.type.shape)
            wanted = self.layouts.get(tiles[0]) if tiles else None
            if isinstance(wanted, Slice) and wanted.dim == axis:
                domain = wanted.parent  # the slice consumers want is this reduction's own
            self.layouts[x] = domain
        for index in range(1, len(op.operands)):
            self.request(op, index, domain)
        for result in tiles:
            self.settle(result, Slice(axis, domain))

    def scan(self, op: Op) -> None:
        """A scan's results are held in registers in one layout (the one the
        first result's users want), which its operands are read in."""
        layout = self.layout(op.results[0])
        for result in op.results:
            self.settle(result, layout)
        for index in range(len(op.operands)):
            self.request(op, index, layout)

    def settle(self, result: Value, layout: TileLayout) -> None:
        """``result`` is made in ``layout``; users that asked for another
        before it was known read a ``convert_layout`` of it."""
        wanted = self.layouts.get(result)
        self.layouts[result] = layout
        if wanted is not None and wanted != layout:
            converted = self.convert(result, wanted)
            for user in walk(self.kernel.body):
                if user is not converted.op and not (user.name == "convert_layout" and user.operands[0] is result):
                    user.operands = [converted if o is result else o for o in user.operands]
            self.variants[(result, wanted)] = converted

    def loop(self, op: Op) -> None:
        body = for_body(op)
        for index, (arg, result, init) in enumerate(zip(for_carried(op), op.results, for_inits(op))):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[arg] = layout
                self.request(op, 3 + index, layout)
        terminator = for_yield(op)
        for index, arg in enumerate(for_carried(op)):
            if is_tile(arg):
                self.request(terminator, index, self.layouts[arg])
        self.block(_without_yield(body))


    def if_op(self, op: Op) -> None:
        """An if's tile results are held in registers, like loop-carried
        values: each keeps the layout its users want, and both branches
        yield it in that layout; then the branches are laid out."""
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = layout
                for region in op.regions:
                    self.request(region.ops[-1], index, layout)
        for region in op.regions:
            self.block(_without_yield(region))

    def while_op(self, op: Op) -> None:
        """A while loop's carried tiles: one layout for the initial value,
        both regions' arguments, the yielded value and the result."""
        before, after = op.regions
        for index, result in enumerate(op.results):
            if is_tile(result):
                layout = self.layout(result)
                self.layouts[result] = self.layouts[before.args[index]] = self.layouts[after.args[index]] = layout
                self.request(op, index, layout)
                self.request(after.ops[-1], index, layout)
        self.block(_without_yield(after))
        self.block(_without_yield(before))


def _without_yield(body: Block) -> Block:
    """The ops of a region but its terminator (``yield`` or ``condition``)."""
    view = Block()
    view.ops = [op for op in body.ops if op.name not in ("yield", "condition")]
    return view


def _insert_after(anchor: Op, op: Op) -> None:
    block = anchor.parent
    assert block is not None
    op.parent = block
    block.ops.insert(block.ops.index(anchor) + 1, op)


def _loc_of(value: Value):
    return value.op.loc if isinstance(value, OpResult) else value.block.parent.loc


def after_the_buffers(kernel: Kernel) -> frozenset[Op]:
    """The top-level ops after the last one that touches a shared buffer or
    waits on an asynchronous copy or wgmma group (a dot's pipelined loop):
    the epilogue, whose scratch the CUDA backend overlays on the buffers
    once a barrier has let every thread's reads finish (its late scratch)."""
    ops = kernel.body.ops
    last = max((i for i, op in enumerate(ops) if touches_shared(op)), default=-1)
    return frozenset(ops[last + 1:]) if last >= 0 else frozenset()


def touches_shared(op: Op) -> bool:
    """Whether ``op`` or an op in its regions reads or writes a shared
    buffer or waits on (or is) an asynchronous copy or wgmma group."""
    for inner in walk_op(op):
        if asynchronous(inner):
            return True
        if any(isinstance(getattr(v, "type", None), SharedType) for v in [*inner.operands, *inner.results]):
            return True
    return False


def shared_layouts(kernel: Kernel, num_warps: int, budget: int = SHARED_MEMORY_BUDGET,
                   wgmma: bool = False, tma: AxisAnalysis | None = None) -> dict[Value, SharedLayout]:
    """Padding for the shared operands of dots, by the buffer they read (all
    stages of a pipelined one alike), as long as every shared buffer, padding
    included, and the scratch its reductions need (``scratch_reserve``) stay
    within the shared-memory ``budget`` (a pair stage-dots let
    through at the budget's edge stays unpadded): both operands of a dot on
    tensor cores (``mma_shared_layout``), the A buffer of an FMA dot
    (``fma_operand_pad``; swizzled instead, ``fma_operand_swizzle``, where
    TMA would make every copy into it: ``tma``, the axis facts where the
    target and the options let TMA copy); both operands of a warpgroup dot are swizzled
    (``nvmma_shared``, no padding). A 16-bit operand of mma.sync contiguous
    down its columns (B of ``x @ w.T``, K^T; A of ``tl.trans(a)``) is held
    column-major, its transpose's rows padded: copied in 16-byte chunks, read
    by ldmatrix with .trans for A, without for B (as row-major, each element
    would be copied on its own); so is a TF32 one (A read element by element
    down its transpose's rows, B by ldmatrix); so is the A of an FMA dot contiguous down
    its columns (unpadded: read one value at a time down a column)."""
    from mytriton.backends.cuda.tma_copies import tma_would_copy
    from mytriton.passes.software_pipeline import scratch_reserve

    # The scratch the software-pipeline pass left room for stays free: padding never takes it. An
    # epilogue's (after the buffers' last use) overlays the buffers instead: it must fit beside none.
    used = array_bytes(kernel, lambda op: op.results[0].type.numel * op.results[0].type.element.nbytes) \
        + scratch_reserve(kernel, overlaying=after_the_buffers(kernel))
    layouts: dict[Value, SharedLayout] = {}
    k_major = k_major_buffers(kernel) if wgmma else frozenset()
    down_columns = column_contiguous_buffers(kernel)
    for op in walk(kernel.body):
        if op.name not in ("dot_shared", "dot_rs"):
            continue
        # A dot_rs's A is in registers: its B alone is a buffer.
        shared = [i for i in (0, 1) if isinstance(op.operands[i].type, SharedType)]
        if wgmma and wgmma_layout(op, num_warps, k_major) is not None:
            for index in shared:
                layouts.setdefault(buffer_of(op.operands[index]), wgmma_shared_layout(op, index, k_major))
            continue
        on_tensor_cores = mma_layout(op, num_warps) is not None
        for index in [i for i in ((0, 1) if on_tensor_cores else (0,)) if i in shared]:
            buffer = buffer_of(op.operands[index])
            if buffer in layouts:
                continue
            rows, cols = buffer.type.shape
            nbytes = buffer.type.element.nbytes
            pad = mma_shared_layout(buffer.type.element, index).pad if on_tensor_cores \
                else fma_operand_pad(cols, nbytes)
            if on_tensor_cores and buffer in down_columns and buffer.type.element in (F16, BF16, F32):
                if buffer.type.element == F32:
                    # The transpose of A is read as a row-major B is (element by element),
                    # that of B as a row-major A is (by ldmatrix): their paddings swap.
                    pad = mma_shared_layout(F32, 1 - index).pad
                fits = used + cols * pad * nbytes <= budget
                used += cols * pad * nbytes if fits else 0
                layouts[buffer] = PaddedShared(pad=pad if fits else 0, order=(0, 1))
                continue
            if not on_tensor_cores and buffer in down_columns:
                # An FMA dot reads A one value at a time down a column (a k): its
                # threads' rows are adjacent there, no padding needed.
                layouts[buffer] = PaddedShared(pad=0, order=(0, 1))
                continue
            swizzle = None if on_tensor_cores or tma is None else fma_operand_swizzle(rows, cols, nbytes)
            if swizzle is not None and used + SWIZZLE_ALIGNMENT <= budget \
                    and tma_would_copy(kernel, buffer, NvmmaShared(swizzle), tma):
                used += SWIZZLE_ALIGNMENT  # at most what its 1024-byte boundary skips
                layouts[buffer] = NvmmaShared(swizzle)
                continue
            if pad and used + rows * pad * nbytes <= budget:
                used += rows * pad * nbytes
                layouts[buffer] = PaddedShared(pad=pad)
    return layouts


def _with_layouts(kernel: Kernel, layouts: dict[Value, TileLayout], budget: int, wgmma: bool,
                  tma: AxisAnalysis | None) -> None:
    shared = shared_layouts(kernel, kernel.num_warps, budget, wgmma, tma)
    for op in walk(kernel.body):
        values = list(op.results) + [arg for region in op.regions for arg in region.args]
        for value in values:
            if isinstance(value.type, BlockType):
                layout = layouts.get(value) or default_blocked(value.type.shape, kernel.num_warps)
                value.type = replace(value.type, layout=layout)
            elif isinstance(value.type, SharedType):
                value.type = replace(value.type, layout=stage_layout(op, shared.get(buffer_of(value), SHARED_LAYOUT)))


def stage_layout(op: Op, layout: SharedLayout) -> SharedLayout:
    """The layout of what ``op`` makes of a buffer of ``layout``: the same,
    but for a stage of a padded column-major buffer. Its stages lie one above
    the other, so each of its transpose's rows holds a run of every stage in
    turn: a stage's view is padded by the other stages' runs too."""
    if op.name != "stage_view" or not (isinstance(layout, PaddedShared) and layout.transposed):
        return layout
    rows = op.operands[0].type.shape[0] // op.attrs["stages"]
    return replace(layout, pad=layout.pad + (op.attrs["stages"] - 1) * rows)


@dataclass(frozen=True)
class LayoutsPass:
    name: str = "layouts"
    after_layouts: ClassVar[bool] = True  # to refuse it in its own words: a kernel is laid out once
    summary: str = "give every tile a layout for --num-warps warps (CUDA's input; not an optimisation)"
    num_warps: int = DEFAULT_NUM_WARPS
    shared_budget: int = SHARED_MEMORY_BUDGET  # bytes of shared memory a block may use (the target's)
    arch: str = DEFAULT_ARCH  # sm_90 and sm_90a dots may use wgmma
    tma: bool = True  # whether tma-copies will let TMA copy (compile --no-tma: False)

    def apply(self, kernel: Kernel) -> Kernel:
        check_num_warps(self.num_warps)
        if kernel.laid_out:
            raise CompileError(f"kernel '{kernel.name}' is already laid out (num_warps={kernel.num_warps})",
                               kernel.loc)
        analysis = AxisAnalysis(kernel)
        widths = access_widths(kernel, analysis)
        wgmma = has_wgmma(self.arch)
        runs = atomic_runs(kernel, analysis, has_vector_atomics(self.arch))
        columns = column_runs(kernel, analysis)
        assigner = _Assigner(kernel, self.num_warps, preferred_layouts(kernel, widths, self.num_warps), wgmma, widths,
                             runs, self.shared_budget, columns, row_runs(kernel, analysis))
        assigner.block(kernel.body)
        kernel.num_warps = self.num_warps
        _with_layouts(kernel, assigner.layouts, self.shared_budget, wgmma,
                      analysis if self.tma and has_tma(self.arch) else None)
        mark_vector_accesses(kernel, widths, columns)
        mark_vector_atomics(kernel, runs)
        return kernel


def paired(layout: Blocked) -> Blocked:
    """``layout`` with one more, last dimension of 2 that each thread holds
    whole: the layout of a ``tl.split`` operand whose halves are in
    ``layout``, each thread's pair adjacent in its registers."""
    return Blocked(layout.size_per_thread + (2,), layout.threads_per_warp + (1,), layout.warps_per_cta + (1,),
                   (layout.rank,) + layout.order)
