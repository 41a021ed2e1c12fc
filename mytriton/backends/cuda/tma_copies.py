"""tma-copies: which copies of a pipelined loop the Tensor Memory Accelerator
makes (Hopper's TMA: ``cp.async.bulk.tensor``), where cp.async would.

A TMA copy is one instruction, issued by one thread, that moves a whole box
of a 2-D tensor into shared memory, zero-filling what lies outside the
tensor, and swizzles it on the way as wgmma reads it. The tensor is described
by a tensor map (``CUtensorMap``: the base address, the two extents, the row
stride, the box and the swizzle) that the launcher encodes on the host and
passes as a ``__grid_constant__`` parameter. A kernel built so spends no
registers or instructions on the copies' addresses and masks, and NVRTC
builds it faster (the tensor-descriptor matmul: NVVM 141 -> 114 ms, ptxas 113
-> 87 here; its speed unchanged on the H200).

The pass marks a copy ``engine="tma"`` where the IR proves what a map needs,
whatever the source's spelling (pointer arithmetic, a block pointer, a tensor
descriptor):

- an ``async_copy_to_shared`` or ``async_copy_strided_to_shared`` (gathered
  rows are no box) with a zero fill and no wraps, its walked columns
  contiguous (column stride 1);
- into an ``nvmma_shared`` buffer, whose swizzle is TMA's: a box per block of
  ``swizzle`` bytes of the walked rows, at most 256 rows;
- the base a pointer parameter proven 16-byte aligned (or one plus an i32
  offset never negative, where the columns are unbounded: the offset goes
  into the column coordinate), the row stride a parameter or a literal
  of a multiple of 16 bytes, the bounds parameters, literals or i32
  products of them: all of what the host reads to encode the map;
- i32 offsets proven never negative (TMA fills zeros at a negative
  coordinate, where the copy reads the memory there), the column offset a
  multiple of 16 bytes (TMA stops the kernel at another); and the loop's
  copy groups bounded (``ring_size``).

What only a launch knows, the launcher checks: a map needs a positive
stride of a multiple of 16 bytes and positive bounds; where a launch's
values give none, it runs the kernel built with cp.async instead. So a
stride parameter the signature leaves unhinted (K = 1000, not ``i32:16``)
does not keep a copy from TMA. The remarks say which copies got TMA, which
stride a launch tests, and why the others did not.

    async_copy_strided_to_shared %20, a_ptr, %3, 0, K, 1, M, K, 0, 0, 0.0, %19, chunk=8, chunks="whole", zero_fill="ignore_src"
  =>
    async_copy_strided_to_shared %20, a_ptr, %3, 0, K, 1, M, K, 0, 0, 0.0, %19, chunk=8, chunks="whole", zero_fill="ignore_src", engine="tma"

A copy the threads wait for at the kernel's top, before any group opens
(attention's Q, copied once before its K loop), becomes TMA's too where a
map describes it: one box in a group of its own, waited for at once
(``async_commit; async_wait pending=0``); ``without_tma`` makes it the
threads' copy again.

The ops' groups keep their meaning (``async_commit``, ``async_wait
pending``): emit-cuda completes a group of TMA copies on one of a ring of
mbarriers (``ring_size`` of them), as cp.async completes its own groups.
"""
from __future__ import annotations

from dataclasses import dataclass

from mytriton.backends.cuda.dots import _zero, copy_geometry, index_type
from mytriton.backends.cuda.copy_widths import is_async_copy
from mytriton import remarks
from mytriton.ir import opdefs
from mytriton.ir.analysis import Definitions
from mytriton.ir.axis_info import AxisAnalysis
from mytriton.ir.layout_attributes import NvmmaShared
from mytriton.ir.ssa import Block, Const, Kernel, Op, OpResult, Param, walk, walk_op
from mytriton.passes.dot_layouts import buffer_of
from mytriton.passes.manager import require_laid_out
from mytriton.remarks import note
from mytriton.passes.stage_dots import NO_BOUND, non_negative
from mytriton.target import DEFAULT_ARCH, has_tma
from mytriton.types import I32, BlockType, PointerType

TMA = "tma"
ENGINE = "engine"
BOX_LIMIT = 256  # TMA's most elements along each side of a box
STRIDED = ("async_copy_to_shared", "async_copy_strided_to_shared")
TMA_ELEMENTS = ("f16", "bf16", "f32")  # what the fallback's element copy spells


SWIZZLES = (128, 64, 32)  # TMA's swizzle blocks, in bytes


def swizzle_of(cols: int, nbytes: int) -> int | None:
    """The swizzle block a TMA store stages rows of ``cols`` elements in: the
    widest that divides a row; None where none does."""
    return next((s for s in SWIZZLES if (cols * nbytes) % s == 0), None)


def is_tma(op: Op) -> bool:
    return op.attrs.get(ENGINE) == TMA


# A bound the host computes at a launch: a parameter's name, a literal, or the
# i32 product of such factors (the attention's rows, ``Z * H * N_CTX``).
HostBound = str | int | tuple[str | int, ...]


@dataclass(frozen=True)
class TensorMap:
    """What the launcher encodes for a TMA copy: the walked tile's base, its
    extents and row stride (parameter names, or ints), element bytes, and the
    box (``box_cols`` elements, one swizzle block, by ``box_rows``)."""

    base: str
    cols: HostBound
    rows: HostBound
    stride: str | int
    element_bytes: int
    box_cols: int
    box_rows: int
    swizzle: int

    def header(self) -> dict:
        dims = [list(d) if isinstance(d, tuple) else d for d in (self.cols, self.rows)]
        return {"base": self.base, "dims": dims, "stride": self.stride,
                "element_bytes": self.element_bytes, "box": [self.box_cols, self.box_rows], "swizzle": self.swizzle}


def _through_hints(operand: object) -> object:
    while isinstance(operand, OpResult) and operand.op.name == "hint":
        operand = operand.op.operands[0]
    return operand


def host_value(operand: object) -> str | int | None:
    """A parameter's name or a literal int: what the host knows at a launch
    (through hints: a fact about a parameter is the parameter)."""
    operand = _through_hints(operand)
    if isinstance(operand, Param):
        return operand.name
    if isinstance(operand, Const) and isinstance(operand.value, int) and not isinstance(operand.value, bool):
        return operand.value
    return None


def host_bound(operand: object) -> HostBound | None:
    """What the host computes a copy's bound from: ``host_value``'s, or the
    product of factors each of which is one (i32 ``mul``s, wrapped at a
    launch as the kernel wraps them, ``runtime/tensor_maps.py``)."""
    operand = _through_hints(operand)
    if isinstance(operand, OpResult) and operand.op.name == "mul" and operand.type == I32:
        factors: list[str | int] = []
        for side in operand.op.operands:
            found = host_bound(side)
            if found is None:
                return None
            factors.extend(found if isinstance(found, tuple) else (found,))
        return tuple(factors)
    return host_value(operand)


def map_base(base: object) -> tuple[Param, object | None] | None:
    """The pointer parameter a copy's base is, or is at plus an i32 element
    offset (a pointer the loop advances: ``a_ptr + k * BK``), and that offset."""
    if isinstance(base, Param) and isinstance(base.type, PointerType):
        return base, None
    if isinstance(base, OpResult) and base.op.name == "addptr":
        pointer, offset = base.op.operands
        if isinstance(pointer, Param) and isinstance(pointer.type, PointerType) \
                and getattr(offset, "type", I32) == I32 and not isinstance(getattr(offset, "type", None), BlockType):
            return pointer, offset
    return None


def row_stride_problem(stride: object, nbytes: int) -> str | None:
    """Why a map cannot take ``stride`` (a parameter or a literal, in elements
    of ``nbytes``), or None. A literal is a positive multiple of 16 bytes or
    no map's; a parameter is tested at each launch (runtime/tensor_maps.py):
    one whose value is not runs the kernel built with cp.async. So a stride
    the signature does not say is a multiple of 16 bytes (K = 1004, f32:
    4,016 bytes) still gets TMA, as Triton's descriptors do."""
    value = host_value(stride)
    if isinstance(value, int) and (value <= 0 or value * nbytes % 16):
        return "its row stride is not a multiple of 16 bytes"
    return None


def launch_tested_stride(stride: object, nbytes: int, facts: AxisAnalysis) -> str | None:
    """The parameter whose value a launch tests for TMA's row stride (a
    multiple of 16 bytes the IR does not prove), or None."""
    value = host_value(stride)
    if isinstance(value, str) and facts.of(stride).scalar_divisibility * nbytes % 16:
        return value
    return None


def tensor_map_of(op: Op) -> TensorMap:
    """The map a TMA copy reads or a TMA ``store_tile`` writes through."""
    if op.name == "store_tile":
        return store_map_of(op)
    g = copy_geometry(op)
    nbytes = g.view_type.element.nbytes
    rows = g.view_type.shape[0]
    based = map_base(g.base)
    assert based is not None, "a TMA copy's base is a pointer parameter (tma_problem)"
    return TensorMap(based[0].name, host_bound(g.col_bound), host_bound(g.row_bound),  # type: ignore[arg-type]
                     host_value(g.stride), nbytes, g.view_type.layout.swizzle // nbytes, rows,  # type: ignore[arg-type]
                     g.view_type.layout.swizzle)


def store_map_of(op: Op) -> TensorMap:
    """A ``store_tile``'s map: its tile in boxes of one swizzle block of its rows (tma_stores.swizzle_of)."""
    base, _, _, stride, row_bound, col_bound, value = op.operands
    rows, cols = value.type.shape
    nbytes = value.type.element.nbytes
    swizzle = swizzle_of(cols, nbytes)
    assert isinstance(base, Param) and swizzle is not None, "a TMA store's base is a parameter (tma_stores)"
    return TensorMap(base.name, host_bound(col_bound), host_bound(row_bound), host_value(stride),  # type: ignore[arg-type]
                     nbytes, swizzle // nbytes, rows, swizzle)


def tensor_maps(kernel: Kernel) -> list[TensorMap]:
    """The kernel's tensor maps, each once, in the order its TMA copies and stores first name them."""
    maps: list[TensorMap] = []
    for op in walk(kernel.body):
        if is_tma(op):
            m = tensor_map_of(op)
            if m not in maps:
                maps.append(m)
    return maps


def tma_problem(op: Op, facts: AxisAnalysis, defs: Definitions, layout: object = None) -> str | None:
    """Why TMA cannot make ``op`` (a copy into shared memory), or None;
    ``layout``: the buffer's, where the buffer has none yet (the layouts
    pass asking whether to swizzle it)."""
    if op.name not in STRIDED:
        return "its rows are gathered" if "gathered" in op.name else "the threads wait for it (no pipelined loop)"
    g = copy_geometry(op)
    layout = layout or g.view_type.layout
    if not isinstance(layout, NvmmaShared):
        return "its buffer is not swizzled for wgmma (nvmma_shared)"
    if g.view_type.element.name not in TMA_ELEMENTS:
        return f"TMA copies {', '.join(TMA_ELEMENTS)} here, not {g.view_type.element.name}"
    nbytes = g.view_type.element.nbytes
    rows, cols = g.view_type.shape
    per_block = layout.swizzle // nbytes
    if rows > BOX_LIMIT or per_block > BOX_LIMIT or cols % per_block:
        return f"a {rows}x{cols} tile is no whole number of boxes of at most {BOX_LIMIT} by {BOX_LIMIT}"
    if not _zero(g.fill):
        return "it fills with a value other than 0"
    if not (isinstance(g.col_stride, Const) and g.col_stride.value == 1):
        return "its walked columns are not contiguous"
    if not all(isinstance(w, Const) and w.value == 0 for w in (g.row_wrap, g.col_wrap)):
        return "its coordinates wrap (% M)"
    based = map_base(g.base)
    if based is None:
        return "its base is not a pointer parameter, or one plus an i32 offset"
    base, shift = based
    if facts.of(base).scalar_divisibility % 16:
        return "its base is not proven 16-byte aligned"
    if host_value(g.stride) is None:
        return "its row stride is not a parameter or a literal"
    problem = row_stride_problem(g.stride, nbytes)
    if problem:
        return problem
    for bound, what in ((g.row_bound, "row"), (g.col_bound, "column")):
        if host_bound(bound) is None or index_type(bound) != I32:
            return f"its {what} bound is not an i32 parameter, a literal or a product of them"
    if index_type(g.row_offset) != I32 or index_type(g.col_offset) != I32:
        return "its offsets are i64"
    # A box's first column is a multiple of 16 bytes, or the copy stops the
    # kernel (an illegal instruction on the H100; a column shift of 5 f16).
    if facts.of(g.col_offset).scalar_divisibility * nbytes % 16:
        return "its column offset is not proven a multiple of 16 bytes"
    # A map is made only for a positive stride and bounds (the launcher's test): assume them.
    assumed = frozenset(v for v in (g.stride, g.row_bound, g.col_bound) if isinstance(v, Param))
    # TMA reads zeros before coordinate 0, as a copy with that lower bound does (a descriptor's rows).
    if not all(lower or non_negative(defs, offset, assumed=assumed)
               for offset, lower in zip((g.row_offset, g.col_offset), g.lower)):
        return "its offsets are not proven never negative (TMA would fill zeros where the copy reads)"
    if shift is not None:
        # base + shift + R * stride + C is the element at column C + shift of the map at base:
        # the same element where the columns are unbounded.
        if g.col_bound != NO_BOUND or g.lower[1]:
            return "its base moves (a pointer the loop advances) and its columns are bounded"
        if not non_negative(defs, shift, assumed=assumed):
            return "its base's offset is not proven never negative"
        if facts.of(shift).scalar_divisibility * nbytes % 16:
            return "its base's offset is not proven a multiple of 16 bytes"
    return None


def tma_would_copy(kernel: Kernel, buffer: object, layout: NvmmaShared, facts: AxisAnalysis) -> bool:
    """Whether TMA would make every copy into ``buffer`` (a ``shared_alloc``
    or its stages' result), were it of ``layout``: there is at least one,
    each is pipelined and has what a tensor map needs, and the kernel's copy
    groups are bounded."""
    defs = Definitions(kernel)
    copies = [op for op in walk(kernel.body) if getattr(opdefs.lookup(op.name), "writes_shared", False)
              and op.operands and buffer_of(op.operands[0]) is buffer]
    return bool(copies) and ring_size(kernel) is not None \
        and all(tma_problem(op, facts, defs, layout) is None for op in copies)


def ring_size(kernel: Kernel) -> int | None:
    """How many copy groups can be in flight at once, at most (the mbarriers a
    ring of TMA groups needs): each ``async_commit`` adds one, ``async_wait
    pending=P`` leaves at most P; a loop's body is followed twice (its
    count after one pass is where the next starts). None: unbounded (a loop
    that commits and never waits)."""
    most = 0

    def follow(block: Block, flying: int) -> int | None:
        nonlocal most
        for op in block.ops:
            if op.name == "async_commit":
                flying += 1
                most = max(most, flying)
            elif op.name == "async_wait":
                flying = min(flying, op.attrs["pending"])
            for region in op.regions:  # a loop's body, or a branch: run none, once or again
                once = follow(region, flying)
                twice = None if once is None else follow(region, max(flying, once))
                if twice is None or once is None or twice > once:
                    return None  # more in flight with each trip
                flying = max(flying, twice)
        return flying

    return None if follow(kernel.body, 0) is None else max(most, 1)


@dataclass(frozen=True)
class TmaCopiesPass:
    name: str = "tma-copies"
    summary: str = "copy with TMA (one thread, a tensor map) what the IR proves a tensor map can describe"
    after_layouts: bool = True  # the swizzle that TMA must match is a layout
    enabled: bool = True  # False: every copy by cp.async (compile --no-tma)
    arch: str = DEFAULT_ARCH  # TMA from sm_90

    def apply(self, kernel: Kernel) -> Kernel:
        require_laid_out(kernel, self.name)
        copies = [op for op in walk(kernel.body) if is_async_copy(op)]
        for op in copies:
            op.attrs.pop(ENGINE, None)
        if self.enabled and has_tma(self.arch):
            _copy_once_by_tma(kernel)
            copies = [op for op in walk(kernel.body) if is_async_copy(op)]
        if not copies:
            return kernel
        if not self.enabled or not has_tma(self.arch):
            why = "TMA is off (--no-tma)" if not self.enabled else f"{self.arch} has no TMA (sm_90 has)"
            for op in copies:
                note(kernel, op, remarks.TMA, why)
            return kernel
        if ring_size(kernel) is None:
            for op in copies:
                note(kernel, op, remarks.TMA, "a loop commits copy groups without waiting for them")
            return kernel
        facts, defs = AxisAnalysis(kernel), Definitions(kernel)
        for op in copies:
            problem = tma_problem(op, facts, defs)
            if problem is None:
                op.attrs[ENGINE] = TMA
                g = copy_geometry(op)
                tested = launch_tested_stride(g.stride, g.view_type.element.nbytes, facts)
                if tested:
                    note(kernel, op, remarks.TMA_TESTED, tested)
            else:
                note(kernel, op, remarks.TMA, problem)  # the dot's remark says it
        return kernel


# A copy the threads wait for, and its TMA form (a group of its own, waited for at once).
ONCE = {"copy_to_shared": "async_copy_to_shared", "copy_strided_to_shared": "async_copy_strided_to_shared"}
WAITED_FOR = {async_name: name for name, async_name in ONCE.items()}


def _copy_once_by_tma(kernel: Kernel) -> None:
    """A copy the threads wait for at the kernel's top, before any copy group
    opens (attention's Q, copied once before its K loop), made by TMA where
    a tensor map describes it: one thread's box, a group of its own, waited
    for at once (``async_commit; async_wait pending=0``). Its threads then
    spend no registers or instructions on addresses and masks: a descriptor
    attention's Q, copied element by element (its column bound not proven a
    multiple of 8), was 5,700 of its 10,300 SASS lines."""
    candidates = []
    for op in kernel.body.ops:
        if any(o.name in ("async_commit", "async_wait") or is_async_copy(o) for o in walk_op(op)):
            break  # a group may be open from here on
        if op.name in ONCE:
            candidates.append(op)
    if not candidates:
        return
    facts, defs = AxisAnalysis(kernel), Definitions(kernel)
    for op in candidates:
        copy = Op(ONCE[op.name], [*op.operands, Const(True)], [], {**op.attrs, ENGINE: TMA}, op.loc)
        if tma_problem(copy, facts, defs) is not None:
            continue
        block = op.parent
        at = block.ops.index(op)
        replaced = [copy, Op("async_commit", [], [], {}, op.loc), Op("async_wait", [], [], {"pending": 0}, op.loc)]
        for new in replaced:
            new.parent = block
        block.ops[at:at + 1] = replaced
        op.parent = None


def without_tma(kernel: Kernel) -> Kernel:
    """``kernel`` with every copy made by cp.async (allocate-shared's way back
    when the ring's mbarriers would not fit the budget), and a copy TMA made
    once (``_copy_once_by_tma``) the threads' own again."""
    block = kernel.body
    for at, op in enumerate(block.ops):  # (each replacement shortens the list past ``at``)
        if op.name in WAITED_FOR and is_tma(op) and isinstance(op.operands[-1], Const) \
                and op.operands[-1].value is True and [o.name for o in block.ops[at + 1:at + 3]] == \
                ["async_commit", "async_wait"] and block.ops[at + 2].attrs.get("pending") == 0:
            attrs = {k: v for k, v in op.attrs.items() if k not in (ENGINE, "proxy_fence")}
            copy = Op(WAITED_FOR[op.name], op.operands[:-1], [], attrs, op.loc)
            copy.parent = block
            for old in block.ops[at:at + 3]:
                old.parent = None
            block.ops[at:at + 3] = [copy]
    for op in walk(kernel.body):
        if op.attrs.pop(ENGINE, None) is not None and is_async_copy(op):
            op.attrs.pop("proxy_fence", None)  # (proxy-fences' decision is a TMA copy's)
    return kernel
