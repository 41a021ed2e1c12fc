"""``tl.dot`` on the GPU, on CUDA cores.

The stage-dots pass turns the canonical pair of masked tile loads into
explicit ops, and each becomes CUDA here:

- ``shared_alloc``: a pointer into the kernel's one dynamic shared array
  (``smem``), declared once at kernel scope at the offset the allocate-shared
  pass gave it (its ``offset`` attribute), row-major with the padding its
  ``padded_shared`` layout gives;
- ``copy_to_shared``: every thread copies elements ``threadIdx.x``,
  ``threadIdx.x + threads``, ... of the row-major tile, consecutive threads
  reading consecutive addresses; out-of-bounds elements get the fill value,
  so edge tiles are whole tiles padded with zeros;
- ``barrier``: ``__syncthreads()``;
- ``dot_shared``: the accumulator tile is spread over the threads by its
  layout, which the layouts stage makes a register tile per thread
  (``fma_dot_layout``): per step of 4 along K (f32) a thread reads each of
  its rows' 4 A values in one 16-byte read, then for each k its B columns,
  16 bytes per run of 4, and does one FMA per element it holds. How wide
  each operand's reads are is the read-widths pass's decision
  (``read_widths=(4, 4)``, A's then B's); where the layout, the padding,
  the types or the precision do not allow 16-byte reads (an edited layout,
  f16 operands, TF32 rounding), ``(1, 1)``: the same loop reads one value at
  a time.
  The operands are converted as the dot's ``input_precision`` says (TF32
  truncation through the language object's ``truncate_tf32``, as the tensor
  cores read a TF32 operand; tf32x3 rounds (``round_tf32``) and keeps a
  second accumulator for the hi*lo + lo*hi terms); f16 and bf16 multiply in
  f32, i8 in i32, f64 in f64; an f16 result is accumulated in f32 and
  rounded once at the end.

A ``dot`` the pass did not stage (its operands are not canonical loads) takes
the general path: both operand tiles are written from registers to shared
scratch memory, each row of A followed by the padding allocate-shared gave
it (``a_pad``), then the same FMA loop runs.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element, c_literal, c_scalar
from mytriton.backends.cuda.spelling import CUDA
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.shared_memory import buffer_bytes, element_bytes
from mytriton.backends.cuda.renderers import Group, renders
from mytriton.backends.cuda.slots import linear_index
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, tile_layout
from mytriton.ir.layout_attributes import Blocked, Mma, NvmmaShared, PaddedShared, thread_run
from mytriton.ir import opdefs
from mytriton.ir.opdefs import LOWER_BOUNDS, dot_input_precision
from mytriton.ir.ssa import BlockArg, Const, Op, OpResult, Value, walk
from mytriton.passes.dot_layouts import column_major_problem, reads_down_columns
from mytriton.types import BOOL, F32, F64, I8, I32, I64, ScalarType, SharedType, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.context import EmitContext

A_PAD = "a_pad"  # allocate-shared's padding of an unstaged dot's A rows in scratch
B_PAD = "b_pad"  # allocate-shared's padding of a column-major B tile's rows in scratch
COLUMNS = {"a": "a_columns", "b": "b_columns"}  # allocate-shared's: that tile is written column-major


def shared_array_name(op: Op) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(op.attrs["name"]))
    return f"shared_{name}"


def pitch(buffer: SharedType) -> int:
    """Elements from one row of a shared buffer to the next (its layout's padding included)."""
    return buffer.layout.row_pitch(buffer.shape[1])


def place(buffer: SharedType, row: str, col: str) -> str:
    """The element index of (row, col) in a shared buffer, as its layout
    stores it: row-major with padding, or ``nvmma_shared``'s 128-byte swizzle
    (column blocks of 128 bytes, R rows each; 16-byte chunk c of row r at
    chunk c ^ (r % 8)). A 16-byte run of a row starting at a multiple of 16
    bytes stays contiguous either way (cp.async's chunks)."""
    layout = buffer.layout
    row, col = (x if x.isidentifier() else f"({x})" for x in (row, col))
    if getattr(layout, "transposed", False):  # column-major: the transpose's (col, row), row-major
        return place(transposed(buffer), col, row)
    if not isinstance(layout, NvmmaShared):
        return f"{row} * {pitch(buffer)} + {col}"
    return swizzled_place(buffer, row, col, layout.xor_of_row(row))


def swizzled_place(buffer: SharedType, row: str, col: str, xor: str) -> str:
    """``place`` in a row-major ``nvmma_shared`` buffer, with ``xor`` (a C
    expression) standing for row's chunk XOR: one worked out once for rows
    that share it."""
    layout = buffer.layout
    assert isinstance(layout, NvmmaShared)
    rows = buffer.shape[0]
    per_block = layout.swizzle // buffer.element.nbytes  # elements in a 128-byte row of a block
    per_chunk = 16 // buffer.element.nbytes
    swizzled = f"(({col} % {per_block} / {per_chunk}) ^ {xor}) * {per_chunk} + {col} % {per_chunk}"
    block = f"{col} / {per_block} * {rows * per_block} + " if buffer.shape[1] > per_block else ""
    return f"{block}{row} * {per_block} + {swizzled}"


def transposed(buffer: SharedType) -> SharedType:
    """The row-major buffer of the transposed tile that an ``order=[0, 1]``
    buffer is, element for element."""
    return replace(buffer, shape=buffer.shape[::-1], layout=replace(buffer.layout, order=(1, 0)))


def declare_shared(op: Op, offset: int) -> tuple[str, str]:
    """The C name and kernel-scope declaration of a ``shared_alloc``: a
    pointer to byte ``offset`` (a multiple of 16) of the dynamic array ``smem``."""
    buffer = op.results[0].type
    rows, cols = buffer.shape
    element = c_scalar(op.attrs["dtype"])
    name = shared_array_name(op)
    padding = f", {buffer.layout.pad} padding element(s) per row" if getattr(buffer.layout, "pad", 0) else ""
    major = "column-major" if _column_major(buffer) else "row-major"
    if isinstance(buffer.layout, NvmmaShared):
        padding = f", {buffer.layout.swizzle}-byte swizzle (nvmma_shared)"
    return name, (CUDA.shared_view(element, name, "smem", offset)
                  + f"  // {rows}x{cols}, {major}{padding}, {buffer_bytes(op)} bytes")


@dataclass(frozen=True)
class CopyGeometry:
    """A copy's operands as the threads walk the tile: row by row. Into a
    column-major (``order=[0, 1]``) buffer from a tile contiguous down its
    columns (row stride 1), the walk is the transposed tile's (``view_type``,
    row-major): rows and columns, offsets, bounds and wraps swap, and its row
    stride is the tile's column stride, so that the copy moves chunks. From
    any other tile, the walk is the tile's own, element by element (its rows
    are not runs of the buffer), coalesced in global memory."""
    view: Value
    view_type: SharedType
    base: object
    row_offset: object
    col_offset: object
    stride: object  # between the walked rows
    col_stride: object  # between the walked columns
    row_bound: object
    col_bound: object
    row_wrap: object
    col_wrap: object
    fill: object
    index: object = None  # gathered rows: the index array (row_offset + r is a position in it)
    # (walked rows, walked columns): the copy tests that axis's coordinates >= 0 too (lower_bounds)
    lower: tuple[bool, bool] = (False, False)


def copy_geometry(op: Op) -> CopyGeometry:
    if op.name in ("copy_to_shared", "async_copy_to_shared"):
        buffer, base, row_offset, col_offset, stride, row_bound, col_bound, fill = op.operands[:8]
        col_stride, row_wrap, col_wrap = Const(1), Const(0), Const(0)
    elif op.name in GATHERED_COPIES:  # never transposed: gathered rows are no run down the columns
        buffer, base, index, row_offset, col_offset, stride, col_stride, row_bound, col_bound, fill = op.operands[:10]
        return CopyGeometry(buffer, buffer.type, base, row_offset, col_offset, stride, col_stride, row_bound,
                            col_bound, Const(0), Const(0), fill, index)
    else:
        (buffer, base, row_offset, col_offset, stride, col_stride, row_bound, col_bound, row_wrap, col_wrap,
         fill) = op.operands[:11]
    row_lower, col_lower = (bool(flag) for flag in op.attrs.get(LOWER_BOUNDS, (0, 0)))
    layout = buffer.type.layout
    if getattr(layout, "transposed", False) and isinstance(stride, Const) and stride.value == 1:
        return CopyGeometry(buffer, transposed(buffer.type), base, col_offset, row_offset, col_stride, stride,
                            col_bound, row_bound, col_wrap, row_wrap, fill, lower=(col_lower, row_lower))
    return CopyGeometry(buffer, buffer.type, base, row_offset, col_offset, stride, col_stride, row_bound,
                        col_bound, row_wrap, col_wrap, fill, lower=(row_lower, col_lower))


GATHERED_COPIES = ("copy_gathered_to_shared", "async_copy_gathered_to_shared")


def _walked(g: CopyGeometry) -> str:
    if g.view_type is not g.view.type:
        return ", column by column (a column-major buffer)"
    return ", element by element (a column-major buffer)" if _column_major(g.view_type) else ""


def _column_major(buffer: SharedType) -> bool:
    return getattr(buffer.layout, "transposed", False)


def copy_operands(em: "EmitContext", op: Op) -> tuple:
    """A copy's geometry and its index operands as C expressions
    (``copy_to_shared``'s with column stride 1 and no wraps)."""
    g = copy_geometry(op)
    args = {label: as_type(em.scalar_arg(getattr(g, label)), index_type(getattr(g, label)))
            for label in ("row_offset", "col_offset", "stride", "row_bound", "col_bound")}
    # A literal 1 stride and 0 wraps are left out of the C; a runtime wrap of 0 is none too.
    for label, absent in (("col_stride", 1), ("row_wrap", 0), ("col_wrap", 0)):
        value = getattr(g, label)
        args[label] = None if isinstance(value, Const) and value.value == absent else \
            as_type(em.scalar_arg(value), index_type(value))
    args["index"] = None if g.index is None else em.scalar_ref(g.index)
    for axis, lower, bound in zip(("row", "col"), g.lower, (g.row_bound, g.col_bound)):
        args[f"{axis}_lower"] = "0" if lower else None
        args[f"{axis}_unbounded"] = "1" if _unbounded(bound) else None
    return g, args


def axis_tests(args: dict, axis: str, coordinate: str, upper: bool = True) -> list[str]:
    """The C tests that ``coordinate`` is inside the copy's ``axis`` ("row",
    "col"): from 0 where the copy has that lower bound, below its bound
    unless ``upper`` is False."""
    tests = [f"{coordinate} >= 0"] if args.get(f"{axis}_lower") else []
    upper = upper and not args.get(f"{axis}_unbounded")  # (no mask on the axis: every i32 coordinate is in)
    return tests + ([f"{coordinate} < {args[f'{axis}_bound']}"] if upper else [])


def bounds_test(args: dict, row: str = "row", col: str = "col") -> str:
    """The C test that an element (or a chunk, at its first element) is inside the copy's bounds."""
    return " && ".join(axis_tests(args, "row", row) + axis_tests(args, "col", col)) or "true"


def index_type(operand: object) -> ScalarType:
    """The C type a copy's index operand is computed in: i64 for a stride the
    kernel widened (its products then in 64 bits, as the kernel's were), else i32."""
    return I64 if isinstance(operand, Value) and operand.type == I64 else I32


def wide_offsets(g: "CopyGeometry") -> bool:
    """Whether a copy's element offsets need 64 bits (a stride is i64, or the
    rows are gathered from an array of i64)."""
    gathered = getattr(g.index, "type", None)
    return I64 in (index_type(g.stride), index_type(g.col_stride)) or getattr(gathered, "pointee", None) == I64


def wrapped(coordinate: str, wrap: str | None) -> str:
    """``coordinate`` taken modulo ``wrap`` (C's %, as the mod op), a wrap of 0
    being none. A coordinate already in [0, wrap) (all but the last tile's
    wrapped rows) skips the division, which would cost more than the copy."""
    if wrap is None:
        return coordinate
    x = f"({coordinate})"
    # One branch: a wrap of 0 divides by INT_MAX, as wrapped_once's does (a
    # second branch around the division was a sixth of a ragged matmul's build).
    return f"(({wrap} > 0 && (unsigned){x} < (unsigned){wrap}) ? {x} : {x} % ({wrap} != 0 ? {wrap} : 2147483647))"


def wrapped_once(coordinate: str, wrap: str) -> str:
    """``wrapped`` without its branch, for coordinates worked out once before
    the copies that read them: a wrap of 0 divides by INT_MAX, which leaves
    every coordinate but INT_MIN as it is. Each skipped division was a branch
    of its own, which ptxas took 15 % of a tutorial matmul's build over."""
    return f"(({coordinate}) % ({wrap} != 0 ? {wrap} : 2147483647))"


def element_offset(args: dict, row: str = "row", col: str = "col") -> str:
    scaled = col if args["col_stride"] is None else f"{col} * {args['col_stride']}"
    return f"{address_row(args, row)} * {args['stride']} + {scaled}"


def address_row(args: dict, row: str) -> str:
    """The row an address takes at coordinate ``row``: the coordinate, or for
    gathered rows the index array's element there, read only inside the row
    bound (past it the element is not read, and the index array may end)."""
    if args.get("index") is None:
        return row
    return f"({row} < {args['row_bound']} ? {args['index']}[{row}] : 0)"


@renders("copies")
def render_copies(em: "EmitContext", group: Group) -> None:
    emit_copies(em, group.ops)


def emit_copies(em: "EmitContext", ops: list[Op]) -> None:
    """Consecutive ``copy_to_shared`` ops: every thread first loads all its
    elements of every tile into registers, so the loads are in flight
    together, then writes them to shared memory. (A load cannot move past a
    shared store to the compiler, which cannot rule out that the pointers
    alias; so loads written one after a store would wait on each other.)
    A copy whose chunks the copy-widths pass proved whole (``chunk`` over 1)
    moves them as single 8- or 16-byte accesses; others element by element.
    The run is a C scope of its own: its staging arrays die with it, and a
    later run into the same buffers (top-level dots sharing a pair) declares
    its own."""
    em.out.open("{")
    stores = [_stage_copy(em, op) for op in ops if op.attrs.get("chunks") != "checked"]
    for store in stores:
        em.line(f"{em.lang.unroll}")
        em.line(store)
    for op in ops:
        if op.attrs.get("chunks") == "checked":
            _checked_copy(em, op)
    em.out.close()


def _checked_copy(em: "EmitContext", op: Op) -> None:
    """A waited-for copy whose alignment the kernel tests (copy-widths'
    ``"checked"``: attention's Q, its strides runtime values): whole chunks
    through registers where it holds, else element by element in a loop
    left rolled. (Unrolled, the 128x128 f16 Q's 128 elements a thread were a
    third of the causal kernel's PTX, and of NVRTC's time.)"""
    g, args = copy_operands(em, op)
    view_type = g.view_type
    width, nbytes = op.attrs["chunk"], view_type.element.nbytes
    base_name = em.scalar_ref(g.base)
    em.out.open(f"if ({alignment_test(args, base_name, width, nbytes)}) {{  // {width * nbytes}-byte chunks")
    store = _stage_copy(em, op)
    em.line(em.lang.unroll)
    em.line(store)
    em.out.switch("} else {  // element by element")
    dst, fill_c = em.storage[g.view], as_type(em.scalar_arg(g.fill), view_type.element)

    def one(i, in_bounds, row, col, r, c):
        return [f"{dst}[{place(view_type, r, c)}] = ({in_bounds}) ? "
                f"{base_name}[{element_offset(args, row, col)}] : {fill_c};"]

    rows, cols = view_type.shape
    _copy_loop(em, rows, cols, 1, pitch(view_type), args, one, unroll=1)
    em.out.close()


def alignment_test(args: dict, base_name: str, width: int, nbytes: int) -> str:
    """The C test that a copy's chunks of ``width`` elements are aligned runs of
    its rows: the base address, the row stride and the column offset multiples
    of the chunk, the columns contiguous, and any wrap (the tutorial's % N) a
    multiple of the chunk, so that no chunk straddles it."""
    test = (f"reinterpret_cast<unsigned long long>({base_name}) % {width * nbytes} == 0 && "
            f"{args['stride']} % {width} == 0 && {args['col_offset']} % {width} == 0")
    if args["col_stride"] is not None:
        test += f" && {args['col_stride']} == 1"
    if args["col_wrap"] is not None:
        test += f" && {args['col_wrap']} % {width} == 0"
    return test


def _stage_copy(em: "EmitContext", op: Op) -> str:
    """Emit the loads of one copy into a staging array; return the loop that stores it."""
    g, args = copy_operands(em, op)
    buffer, base, fill, view_type = g.view, g.base, g.fill, g.view_type
    rows, cols = view_type.shape
    width = op.attrs.get("chunk", 1)
    per_row = cols // width
    total = rows * per_row  # the thread-sized pieces: elements, or chunks of width
    steps = -(-total // em.threads)
    name = em.storage[buffer]
    stage = f"{name}_staging"
    tid = em.lang.thread_id
    index = tid if steps == 1 else f"{tid} + s * {em.threads}"
    guard = total % em.threads != 0
    element = view_type.element
    base_name = em.scalar_ref(base)
    where = em.where(op).replace(f"  // {op.name}", "")
    piece = f"{width * element.nbytes}-byte chunk(s)" if width > 1 else "element(s)"
    em.line(f"// {op.name}{where}: the {rows}x{cols} tile of {base_name} at "
            f"({args['row_offset']}, {args['col_offset']}) into {name}{_walked(g)}, "
            f"{steps} {piece} per thread")
    word = em.lang.vector_words[width * element.nbytes] if width > 1 else c_scalar(element)
    em.line(f"{word} {stage}[{steps}];")
    em.line(f"{em.lang.unroll}")
    em.line(f"for (int s = 0; s < {steps}; ++s) {{")
    em.line(f"  const int i = {index};")
    column = f"i % {per_row}" if width == 1 else f"i % {per_row} * {width}"
    em.line(f"  const int row = {wrapped(args['row_offset'] + ' + i / ' + str(per_row), args['row_wrap'])};")
    em.line(f"  const int col = {wrapped(args['col_offset'] + ' + ' + column, args['col_wrap'])};")
    in_bounds = bounds_test(args) + (f" && i < {total}" if guard else "")
    if width > 1:
        # Whole chunks (copy-widths): each is in bounds or out whole, and aligned;
        # the fill is zero (vector_width), so an all-zero word.
        em.line(f"  {stage}[s] = {word}{{}};")
        em.line(f"  if ({in_bounds}) {stage}[s] = *reinterpret_cast<const {word}*>({base_name} + "
                f"({element_offset(args)}));")
    else:
        em.line(f"  {stage}[s] = ({in_bounds}) ? {base_name}[{element_offset(args)}] : "
                f"{as_type(em.scalar_arg(fill), element)};")
    em.line("}")
    r, c = f"({index}) / {per_row}", f"({index}) % {per_row}" + (f" * {width}" if width > 1 else "")
    if width > 1:
        store = f"*reinterpret_cast<{word}*>(&{name}[{place(view_type, r, c)}]) = {stage}[s];"
    else:
        at = index if pitch(view_type) == cols and not isinstance(view_type.layout, NvmmaShared) \
            else place(view_type, r, c)
        store = f"{name}[{at}] = {stage}[s];"
    if guard:
        store = f"if ({index} < {total}) {store}"
    return f"for (int s = 0; s < {steps}; ++s) {store}"


# ---- the pipelined K loop's ops (the software-pipeline pass) ---------------------------------

def emit_async(em: "EmitContext", op: Op) -> None:
    """One op of a pipelined K loop: a stage view is a pointer into its
    buffer; a copy is cp.async; commit and wait are cp.async's groups
    (tma.emit_pipelined takes TMA's copies and groups first)."""
    where = em.where(op)
    if op.name == "stage_view":
        buffer, stage = op.operands
        result = op.results[0]
        rows = result.type.shape[0]
        name = em.name(result)
        em.storage[result] = name
        # Stage s: rows s * R.. of the buffer; in a padded column-major one,
        # the columns s * R.. of its transpose's rows (stage_layout).
        step = rows if isinstance(result.type.layout, PaddedShared) and result.type.layout.transposed \
            else rows * pitch(result.type)
        offset = f"{as_type(em.scalar_arg(stage), I32)} * {step}"
        em.line(f"{c_scalar(result.type.element)}* const {name} = {em.storage[buffer]} + {offset};{where}")
    elif op.name == "async_commit":
        em.line(f"{CUDA.cp_async_commit}{where}")
    elif op.name == "proxy_fence":
        em.line(f"{CUDA.proxy_fence}{where}")
    elif op.name == "async_wait":
        em.line(f"{CUDA.cp_async_wait(op.attrs['pending'])}{where}")
    elif op.name == "wgmma_wait":
        from mytriton.backends.cuda.wgmma import wait_asm

        (acc,) = op.operands
        layout = getattr(acc.type, "layout", None)
        if not (isinstance(layout, Mma) and layout.version == 3):
            raise em.error_at(op, "'wgmma_wait' waits for a dot in a version-3 (wgmma) mma layout")
        em.line(f"{wait_asm(op.attrs['pending'])}{where}")
    else:
        emit_async_copy(em, op)


def _zero(fill: object) -> bool:
    """A literal +0 fill: what cp.async's zero-fill writes (a -0.0 fill is not)."""
    return isinstance(fill, Const) and fill.value == 0 and math.copysign(1.0, fill.value) > 0


def vector_width(buffer: SharedType, fill: object) -> int:
    """Elements per cp.async of a copy into ``buffer`` when its rows are
    aligned (16 bytes where the row and padding allow, else 8 or 4); 1 when
    only element by element is possible. A non-zero fill is written by the
    threads themselves: cp.async fills with zeros."""
    nbytes = buffer.element.nbytes
    rows, cols = buffer.shape
    if not _zero(fill) or _column_major(buffer):  # a row of a column-major buffer is no run
        return 1
    for chunk in (16, 8):
        width = chunk // nbytes
        if width > 1 and cols % width == 0 and pitch(buffer) % width == 0:
            return width
    return 1


def emit_async_copy(em: "EmitContext", op: Op) -> None:
    """``async_copy_to_shared``, where its predicate holds: each thread
    issues cp.async for its chunks of the row-major tile, consecutive
    threads on consecutive chunks; the elements out of bounds are
    zero-filled by cp.async (src-size short of the chunk, 0 for a chunk
    wholly outside). Whole chunks of ``chunk`` elements (the copy-widths
    pass's attribute) need the base address, the row stride and the column
    offset aligned to them, which the pass proved or the kernel checks at
    run time (the same answer for every thread); otherwise,
    element by element (4- and 8-byte elements by cp.async, others, and
    non-zero fills, by plain loads and shared stores, which the same wait and
    barrier order)."""
    hoist_prologue_coordinates(em, op)
    g, args = copy_operands(em, op)
    view, base, fill, view_type = g.view, g.base, g.fill, g.view_type
    pred = op.operands[-1]
    rows, cols = view_type.shape
    row_pitch = pitch(view_type)
    element = view_type.element
    nbytes = element.nbytes
    dst = em.storage[view]
    base_name = em.scalar_ref(base)
    width = op.attrs["chunk"]
    where = em.where(op).replace(f"  // {op.name}", "")
    hoisted = em.hoisted_coordinates.get(op, {})

    def chunk(i, in_bounds, row, col, r, c, dst_address=None, src=None):
        dst_address = dst_address or f"(unsigned)__cvta_generic_to_shared(&{dst}[{place(view_type, r, c)}])"
        if src is None:
            gathered = f"{hoisted['gathered']}[s]" if "gathered" in hoisted else address_row(args, row)
            src = f"{base_name} + ({gathered} * {args['stride']} + {col})"
        if whole_chunks:  # the column bound cuts no chunk: each is all in or all out
            return [CUDA.cp_async_or_zeros(dst_address, src, width * nbytes, in_bounds, guard)]
        inside = " && ".join(axis_tests(args, "row", row) + axis_tests(args, "col", col, upper=False)) or "true"
        return [f"const int n = {inside} ? "
                f"min(max({args['col_bound']} - {col}, 0), {width}) : 0;",
                CUDA.cp_async(dst_address, f"n > 0 ? {src} : {base_name}",  # col_stride 1
                              width * nbytes, f"n * {nbytes}")]

    em.line(f"// {op.name}{where}: the {rows}x{cols} tile of {base_name} at "
            f"({args['row_offset']}, {args['col_offset']}) into {dst}{_walked(g)}")
    proven = width > 1 and op.attrs["chunks"] in ("aligned", "whole")
    # Whole chunks are zero-filled by cp.async's ignore-src predicate unless copy-widths chose the source size.
    whole_chunks = width > 1 and op.attrs["chunks"] == "whole" \
        and op.attrs.get(opdefs.ZERO_FILL, "ignore_src") == "ignore_src"
    condition = as_type(em.scalar_arg(pred), BOOL)
    # Whole chunks carry the predicate as each cp.async's guard (a pipeline's last
    # prefetches predicated off, as Triton's are, where a branch went around them).
    guard = condition if whole_chunks and condition != "true" else None
    em.out.open("{" if guard else f"if ({condition}) {{")
    if proven:
        em.line(f"// {width * nbytes}-byte chunks: the base, row stride and column offset are multiples (axis info)")
        if not _chunk_walk(em, op, g, args, chunk):
            _copy_loop(em, rows, cols, width, row_pitch, args, chunk, hoisted=em.hoisted_coordinates.get(op))
    elif width > 1:
        # The chunks walked as a proven copy's are, from the coordinates and
        # offsets worked out before the loop (a ragged tutorial matmul tests
        # A's alignment at run time: its build was twice a proven one's).
        em.out.open(f"if ({alignment_test(args, base_name, width, nbytes)}) {{  // {width * nbytes}-byte chunks")
        if not _chunk_walk(em, op, g, args, chunk):
            _copy_loop(em, rows, cols, width, row_pitch, args, chunk, hoisted=em.hoisted_coordinates.get(op))
        em.out.switch("} else {  // element by element")
    fill_c = as_type(em.scalar_arg(fill), element)

    def one(i, in_bounds, row, col, r, c):
        at = f"{dst}[{place(view_type, r, c)}]"
        if nbytes in (4, 8) and _zero(fill):
            return [f"const bool in = {in_bounds};",
                    CUDA.cp_async(f"(unsigned)__cvta_generic_to_shared(&{at})", f"in ? {base_name} + ({element_offset(args, row, col)}) : {base_name}",
                                  nbytes, f"in ? {nbytes} : 0")]
        return [f"{at} = ({in_bounds}) ? {base_name}[{element_offset(args, row, col)}] : {fill_c};"]

    if proven:
        em.out.close()
        return
    # The slow path's plain loads stay a loop: unrolled, they would all be in
    # flight at once, in registers the loop's accumulators need. cp.async's
    # hold none, but each its 64-bit address: unrolled by 4 (wholly, the
    # 32 of a 32x128 f32 tile spill). Behind a failed alignment test (width > 1)
    # the loop stays rolled: only a misaligned launch runs it, and unrolled it
    # was an eighth of a ragged TF32 matmul's build (NVRTC 0.39 -> 0.365 s here).
    unroll = 4 if nbytes in (4, 8) and _zero(fill) and width == 1 else 1
    _copy_loop(em, rows, cols, 1, row_pitch, args, one, unroll=unroll, down_columns=reads_down_columns(op))
    if width > 1:
        em.out.close()
    em.out.close()


# Tutorial 03 wraps a tile's rows and columns (``% M``, ``% N``) outside its K
# loop; staged, the wrap sits in each copy, behind the copy's predicate, where
# nvcc keeps C's % (it may not run a division the program would skip): 8
# branches and divisions an iteration for 128x128x32. The wrapped coordinates
# of a thread's chunks do not change from one iteration to the next, so they
# are worked out once, before the loop.
TOP_LEVEL = 1  # the emitter's depth for the kernel body's own lines
ASYNC_COPIES = ("async_copy_to_shared", "async_copy_strided_to_shared",  # the pipelined loop's copies
                "async_copy_gathered_to_shared")
WRAPPED_COPY_OPERANDS = {"row": ("row_offset", "row_wrap"), "col": ("col_offset", "col_wrap")}  # of its geometry


def hoist_copy_coordinates(em: "EmitContext", loop: Op) -> None:
    """Before ``loop``: for every chunked copy in its body, each thread's
    wrapped chunk rows (and columns) where the loop changes neither the
    offset nor the wrap, and its chunks' element offsets where the loop
    does not change them (``_hoist_offsets``)."""
    body = loop.regions[0]
    inside = set(walk(body))
    blocks = {body} | {region for o in inside for region in o.regions}

    def invariant(value) -> bool:
        if isinstance(value, OpResult):
            return value.op not in inside
        return not (isinstance(value, BlockArg) and value.block in blocks)

    def before_loop(value):
        """``value``, or where it is a hint the software pipeliner recomputes in
        the loop (``tl.multiple_of(ptrs, ...)``), the value the hint is of."""
        while isinstance(value, OpResult) and value.op in inside and opdefs.lookup(value.op.name).identity:
            value = value.op.operands[0]
        return value

    for op in body.ops:
        if op.name not in ASYNC_COPIES or op.attrs.get("engine") == "tma":  # TMA: the map holds the addresses
            continue
        g = copy_geometry(op)
        g = replace(g, stride=before_loop(g.stride))
        width = op.attrs["chunk"]
        if width < 2:
            continue  # the element-by-element path keeps its own coordinates (a checked copy's fallback too)
        rows, cols = g.view_type.shape
        per_row = cols // width
        steps = max(1, rows * per_row // em.threads)
        hoisted = {}
        number = em.hoisted_copies + 1  # this copy's arrays: h<number>_row, _col, _offset
        for axis, (at_offset, at_wrap) in WRAPPED_COPY_OPERANDS.items():
            offset, wrap = getattr(g, at_offset), getattr(g, at_wrap)
            if isinstance(wrap, Const) and wrap.value == 0 or not (invariant(offset) and invariant(wrap)):
                continue
            hoisted[axis] = wrapped_chunk_coordinates(em, op, axis, offset, wrap, (rows, cols, width),
                                                      f"h{number}_{axis}", "the same every iteration")
        if g.index is not None and all(invariant(v) for v in (g.row_offset, g.index, g.row_bound)):
            hoisted["gathered"] = _hoist_gathered_rows(em, op, g, steps, f"h{number}_gathered")
        hoisted.update(_hoist_offsets(em, op, g, hoisted, invariant, f"h{number}_offset"))
        if hoisted:
            em.hoisted_copies = number
            em.hoisted_coordinates[op] = hoisted


def wrapped_chunk_coordinates(em: "EmitContext", op: Op, axis: str, offset, wrap, walk: tuple[int, int, int],
                              name: str, why: str) -> str:
    """The array of a thread's chunks' wrapped rows (or columns) of a copy of
    ``walk`` (rows, cols, chunk width), chunk s at [s]: one the kernel's top
    level already declared for the same offset, wrap and walk (a pipeline's
    prologue copies and its loop's copies wrap the same rows), else ``name``,
    declared here."""
    rows, cols, width = walk
    key = (axis, _operand_key(offset), _operand_key(wrap), walk)
    if key in em.wrapped_arrays:
        return em.wrapped_arrays[key]
    per_row = cols // width
    steps = max(1, rows * per_row // em.threads)
    i = f"({em.lang.thread_id} + s * {em.threads})"
    within = f"{i} / {per_row}" if axis == "row" else f"{i} % {per_row} * {width}"
    linear = _linear_walk(em, rows, cols, width)
    if linear:  # the same column for all a thread's chunks: nvcc sees it so
        within = (f"({em.lang.thread_id} / {per_row} + s * {linear[1]})" if axis == "row"
                  else f"{em.lang.thread_id} % {per_row} * {width}")
    start = as_type(em.scalar_arg(offset), I32)
    em.line(f"// the wrapped {axis}s of each chunk of {op.name}{em.where(op).replace('  // ' + op.name, '')}, {why}")
    em.line(f"int {name}[{steps}];")
    em.line(em.lang.unroll)
    em.line(f"for (int s = 0; s < {steps}; ++s) "
            f"{name}[s] = {wrapped_once(f'{start} + {within}', as_type(em.scalar_arg(wrap), I32))};")
    if em.out.depth == TOP_LEVEL:  # seen by everything after it in the kernel
        em.wrapped_arrays[key] = name
    return name


def _operand_key(value) -> object:
    """An operand as a key: a literal by its value, an SSA value by identity."""
    return ("literal", value.value) if isinstance(value, Const) else id(value)


def hoist_prologue_coordinates(em: "EmitContext", op: Op) -> None:
    """A chunked copy at the kernel's top level (a pipeline's prologue) that
    wraps its rows or columns: the wrapped coordinates in an array before
    it, which the pipeline's other prologue copies and its loop's copies
    take again (C's % behind each chunk's predicate is a branch and a
    division a chunk, which nvcc keeps: 32 of them in a 128x128x64
    split-K prologue, NVRTC's time up by a tenth)."""
    if op.name not in ASYNC_COPIES or em.out.depth != TOP_LEVEL or op in em.hoisted_coordinates \
            or op.attrs["chunk"] < 2 or op.attrs.get("engine") == "tma":
        return
    g = copy_geometry(op)
    rows, cols = g.view_type.shape
    hoisted = {}
    number = em.hoisted_copies + 1
    for axis, (at_offset, at_wrap) in WRAPPED_COPY_OPERANDS.items():
        offset, wrap = getattr(g, at_offset), getattr(g, at_wrap)
        if not (isinstance(wrap, Const) and wrap.value == 0):
            hoisted[axis] = wrapped_chunk_coordinates(em, op, axis, offset, wrap, (rows, cols, op.attrs["chunk"]),
                                                      f"h{number}_{axis}", "the same for the copies after it")
    if hoisted:
        em.hoisted_coordinates[op] = hoisted
        if any(name.startswith(f"h{number}_") for name in hoisted.values()):
            em.hoisted_copies = number


def _hoist_gathered_rows(em: "EmitContext", op: Op, g: CopyGeometry, steps: int, name: str) -> str:
    """Before a loop that moves neither a gathered copy's positions nor its
    index array: each of a thread's chunks' row, read from the index array
    once (Liger's fused MoE reads its token indices once, before the K loop)."""
    _, args = copy_operands(em, op)
    rows, cols = g.view_type.shape
    per_row = cols // op.attrs["chunk"]
    tid = em.lang.thread_id
    linear = _linear_walk(em, rows, cols, op.attrs["chunk"])
    within = f"({tid} / {per_row} + s * {linear[1]})" if linear else f"({tid} + s * {em.threads}) / {per_row}"
    position = f"{as_type(em.scalar_arg(g.row_offset), I32)} + {within}"
    em.line(f"// the gathered row of each chunk of {op.name}{em.where(op).replace('  // ' + op.name, '')}, "
            "read from the index array once")
    em.line(f"{c_scalar(g.index.type.pointee)} {name}[{steps}];")
    em.line(em.lang.unroll)
    em.line(f"for (int s = 0; s < {steps}; ++s) {name}[s] = {address_row(args, f'({position})')};")
    return name


def _linear_walk(em: "EmitContext", rows: int, cols: int, width: int) -> tuple[int, int] | None:
    """(chunks a thread, rows between them) where the threads cover whole rows
    of chunks: thread t then copies rows t / (chunks a row) + s * (rows
    between them), s = 0, 1, ..., always at the same column; else None."""
    per_row = cols // width
    if em.threads % per_row:
        return None
    step_rows = em.threads // per_row
    if rows % step_rows:
        return None
    return rows // step_rows, step_rows


def place_step(buffer: SharedType, rows: int) -> int | None:
    """Elements from (r, c) to (r + ``rows``, c) in ``buffer`` when the same
    for every r and c (padded row-major: always; the 128-byte swizzle: for
    rows a multiple of its period of 8), else None."""
    layout = buffer.layout
    if _column_major(buffer):
        return None
    if not isinstance(layout, NvmmaShared):
        return rows * pitch(buffer)
    if rows % 8:
        return None
    return rows * (layout.swizzle // buffer.element.nbytes)


def _hoist_offsets(em: "EmitContext", op: Op, g: CopyGeometry, hoisted: dict[str, str], invariant,
                   name: str) -> dict:
    """Before a loop: each of a thread's chunks' element offsets from the
    copy's base, ``row * stride + col``, where the loop changes neither the
    stride nor a chunk's wrapped coordinates; a coordinate whose offset the
    loop moves, unwrapped, keeps that offset out (``uniform``: the same for
    every thread, added to the base pointer once an iteration). Three
    instructions of address arithmetic a chunk fewer in the loop (nvcc does
    not hoist them itself: they sit behind the copy's predicate). Where an
    axis's offset and bound are both fixed (A's M rows, B's N columns), its
    bounds test too: bit s of ``inside`` for chunk s (``inside_axes`` says
    which tests it holds; the others stay in the loop)."""
    rows, cols = g.view_type.shape
    width = op.attrs["chunk"]
    walk_ = _linear_walk(em, rows, cols, width)
    if walk_ is None or not invariant(g.stride) or not (isinstance(g.col_stride, Const) and g.col_stride.value == 1):
        return {}
    steps, step_rows = walk_
    per_row = cols // width
    tid = em.lang.thread_id
    local = {"row": f"({tid} / {per_row} + s * {step_rows})", "col": f"({tid} % {per_row} * {width})"}
    coordinates, uniform = {}, []
    for axis, (at_offset, at_wrap) in WRAPPED_COPY_OPERANDS.items():
        start, wrap = getattr(g, at_offset), getattr(g, at_wrap)
        if not (isinstance(wrap, Const) and wrap.value == 0):
            if axis not in hoisted:
                return {}
            coordinates[axis] = f"{hoisted[axis]}[s]"
        elif invariant(start):
            coordinates[axis] = f"({as_type(em.scalar_arg(start), I32)} + {local[axis]})"
        else:
            coordinates[axis] = local[axis]
            uniform.append(axis)
    # Gathered rows: the offsets from the rows read once, the bounds tests on their positions.
    positions = dict(coordinates)
    if g.index is not None:
        if "gathered" not in hoisted:
            return {}
        coordinates["row"] = f"{hoisted['gathered']}[s]"
    stride = as_type(em.scalar_arg(g.stride), index_type(g.stride))
    wide = wide_offsets(g)
    em.line(f"// each chunk's element offset from the base of {op.name}"
            f"{em.where(op).replace('  // ' + op.name, '')}, the same every iteration"
            + (f" (the {' and '.join(uniform)} offset{'s' if len(uniform) > 1 else ''} added to the base)"
               if uniform else ""))
    em.line(f"{'long long' if wide else 'int'} {name}[{steps}];")
    em.line(em.lang.unroll)
    em.line(f"for (int s = 0; s < {steps}; ++s) {name}[s] = {coordinates['row']} * {stride} + {coordinates['col']};")
    # Held opaque, as src0 in the loop: nvcc would otherwise work them out
    # again each iteration from the thread's index (registers for instructions).
    em.line(em.lang.unroll)
    em.line(f'for (int s = 0; s < {steps}; ++s) asm("" : "+{"l" if wide else "r"}"({name}[s]));')
    hoisted_offsets = {"offset": name, "uniform": tuple(uniform)}
    # The bounds test of an axis the loop moves nothing on (M's rows of A,
    # N's columns of B) is the same every iteration: one bit a chunk.
    fixed = [(axis, positions[axis], bound, lower) for axis, bound, lower
             in (("row", g.row_bound, g.lower[0]), ("col", g.col_bound, g.lower[1]))
             if axis not in uniform and invariant(bound) and (lower or not _unbounded(bound))]
    if fixed and steps <= 32:
        mask = name.replace("_offset", "_inside")
        tests = " && ".join((f"{coordinate} >= 0 && " if lower else "")
                            + f"{coordinate} < {as_type(em.scalar_arg(bound), I32)}"
                            for _, coordinate, bound, lower in fixed)
        em.line(f"// which of them are inside the {' and '.join(axis for axis, _, _, _ in fixed)} "
                "bound, the same every iteration: bit s for chunk s")
        em.line(f"unsigned {mask} = 0;")
        em.line(em.lang.unroll)
        em.line(f"for (int s = 0; s < {steps}; ++s) {mask} |= (unsigned)({tests}) << s;")
        em.line(f'asm("" : "+r"({mask}));')
        hoisted_offsets["inside"] = mask
        hoisted_offsets["inside_axes"] = tuple(axis for axis, _, _, _ in fixed)
    return hoisted_offsets


def _unbounded(bound: object) -> bool:
    """A bound of i32's largest value: the axis has no mask."""
    return isinstance(bound, Const) and bound.value >= 2 ** 31 - 1


def _in_bounds(g: CopyGeometry, args: dict[str, str], row: str, col: str) -> str:
    """A chunk's bounds test, leaving out an axis bounded by i32's largest value (no mask on it)."""
    tests = [test for coordinate, axis, bound, lower in ((row, "row", g.row_bound, g.lower[0]),
                                                          (col, "col", g.col_bound, g.lower[1]))
             for test in axis_tests({**args, f"{axis}_lower": "0" if lower else None}, axis, coordinate,
                                    upper=not _unbounded(bound))]
    return " && ".join(tests) or "true"


def _chunk_walk(em: "EmitContext", op: Op, g: CopyGeometry, args: dict[str, str], body) -> bool:
    """A proven chunked copy where the threads cover whole rows of chunks
    (``_linear_walk``): each thread's column, and the shared address of its
    first chunk, worked out once, the next chunks a constant number of
    bytes on (the swizzle repeats every 8 rows); the global addresses from
    the offsets hoisted before the loop, where they were. False where the
    walk is not linear (``_copy_loop`` then)."""
    rows, cols = g.view_type.shape
    width = op.attrs["chunk"]
    walk_ = _linear_walk(em, rows, cols, width)
    if walk_ is None:
        return False
    steps, step_rows = walk_
    per_row = cols // width
    tid = em.lang.thread_id
    hoisted = em.hoisted_coordinates.get(op, {})
    dst = em.storage[g.view]
    base_name = em.scalar_ref(g.base)
    delta = place_step(g.view_type, step_rows)
    em.line(f"const int r0 = {tid} / {per_row};  // this thread's first row; then every {step_rows}th")
    em.line(f"const int c = {tid} % {per_row} * {width};  // its column, the same for all its chunks")
    if delta is not None:
        em.line(f"const unsigned dst0 = (unsigned)__cvta_generic_to_shared(&{dst}[{place(g.view_type, 'r0', 'c')}]);")
    src = None
    if "offset" in hoisted:
        terms = [f"{args['row_offset']} * {args['stride']}" if axis == "row" else args["col_offset"]
                 for axis in hoisted["uniform"]]
        moved = f" + ({' + '.join(terms)})" if terms else ""
        # The base (with the moving offsets) held opaque: nvcc would otherwise
        # fold its offset into each chunk's, two more instructions a chunk.
        em.line(f"auto* src0 = {base_name}{moved};")
        em.line('asm("" : "+l"(src0));  // the same pointer, as nvcc cannot see through')
        src = f"src0 + {hoisted['offset']}[s]"
    row = f"{hoisted['row']}[s]" if "row" in hoisted else wrapped(args['row_offset'] + ' + r', args['row_wrap'])
    col = f"{hoisted['col']}[s]" if "col" in hoisted else wrapped(args['col_offset'] + ' + c', args['col_wrap'])
    dst_address = None if delta is None else f"dst0 + s * {delta * g.view_type.element.nbytes}"
    in_bounds = _in_bounds(g, args, "row", "col")
    if "inside" in hoisted:  # the fixed axes' tests, hoisted; an axis whose offset or bound moves, here
        unbounded = Const(2 ** 31 - 1)
        moving = replace(g, **{f"{axis}_bound": unbounded for axis in hoisted["inside_axes"]},
                         lower=tuple(lower and axis not in hoisted["inside_axes"]
                                     for axis, lower in zip(("row", "col"), g.lower)))
        tests = [f"({hoisted['inside']} >> s & 1u)", _in_bounds(moving, args, "row", "col")]
        in_bounds = " && ".join(t for t in tests if t != "true")
    texts = body("i", in_bounds, "row", "col", "r", "c", dst_address, src)
    def names(text: str) -> set[str]:
        return set(re.findall(r"(?<!\")\b(row|col|r)\b(?!\")", text))  # not asm's "r" constraint

    used = names(" ".join(texts))
    used |= {name for coordinate, text in (("row", row), ("col", col)) if coordinate in used for name in names(text)}
    em.line(em.lang.unroll)
    em.line(f"for (int s = 0; s < {steps}; ++s) {{")
    if "r" in used:
        em.line(f"  const int r = r0 + s * {step_rows};")
    for name, value in (("row", row), ("col", col)):
        if name in used:
            em.line(f"  const int {name} = {value};")
    for text in texts:
        em.line(f"  {text}")
    em.line("}")
    return True


def _copy_loop(em: "EmitContext", rows: int, cols: int, width: int, row_pitch: int, args: dict[str, str],
               body, unroll: int | None = None, hoisted: dict[str, str] | None = None,
               down_columns: bool = False) -> None:
    """A loop over a thread's chunks of ``width`` elements of a row-major tile
    (``hoisted``: arrays of the chunks' wrapped rows or columns, by axis).
    ``down_columns`` (single elements of a tile whose rows are adjacent in
    memory): consecutive threads take consecutive rows of a column, so that a
    warp's loads are one run, not 32 rows' sectors."""
    hoisted = hoisted or {}
    if down_columns:
        assert width == 1 and not hoisted
        total = rows * cols
        tid = em.lang.thread_id
        em.line(em.lang.unroll if unroll is None else f"{em.lang.unroll} {unroll}")
        em.line(f"for (int s = 0; s < {max(1, total // em.threads)}; ++s) {{")
        em.line(f"  const int i = {tid} + s * {em.threads};")
        if total < em.threads:
            em.line(f"  if (i >= {total}) break;")
        em.line(f"  const int r = i % {rows};")
        em.line(f"  const int c = i / {rows};")
        em.line(f"  const int row = {wrapped(args['row_offset'] + ' + r', args['row_wrap'])};")
        em.line(f"  const int col = {wrapped(args['col_offset'] + ' + c', args['col_wrap'])};")
        for text in body("i", bounds_test(args), "row", "col", "r", "c"):
            em.line(f"  {text}")
        em.line("}")
        return
    per_row = cols // width
    total = rows * per_row
    steps = max(1, total // em.threads)
    guard = total < em.threads
    tid = em.lang.thread_id
    em.line(em.lang.unroll if unroll is None else f"{em.lang.unroll} {unroll}")  # None: wholly
    em.line(f"for (int s = 0; s < {steps}; ++s) {{")
    em.line(f"  const int i = {tid} + s * {em.threads};")
    if guard:
        em.line(f"  if (i >= {total}) break;")
    em.line(f"  const int r = i / {per_row};")
    em.line(f"  const int c = i % {per_row} * {width};")
    row = f"{hoisted['row']}[s]" if "row" in hoisted else wrapped(args['row_offset'] + ' + r', args['row_wrap'])
    col = f"{hoisted['col']}[s]" if "col" in hoisted else wrapped(args['col_offset'] + ' + c', args['col_wrap'])
    em.line(f"  const int row = {row};")
    em.line(f"  const int col = {col};")
    in_bounds = bounds_test(args)
    for text in body("i", in_bounds, "row", "col", "r", "c"):
        em.line(f"  {text}")
    em.line("}")


def emit_fma_dot(em: "EmitContext", op: Op) -> None:
    """``dot_shared`` (buffers from the stage-dots pass) or a general ``dot``
    (operand tiles staged here through scratch shared memory) on CUDA cores."""
    a, b, acc = op.operands
    if isinstance(b.type, SharedType) and isinstance(b.type.layout, NvmmaShared):
        raise em.error_at(op, "a dot on CUDA cores reads its A, not its B, from a swizzled buffer: only a dot in "
                              "a version-3 (wgmma) mma layout reads nvmma_shared B buffers")
    widths = op.attrs.get("read_widths")
    if widths is None:
        raise em.error_at(op, f"this {op.name} on CUDA cores has no read_widths decision: run read-widths "
                              "(the layouts stage) again")
    result = op.results[0]
    m, k = a.type.shape
    n = b.type.shape[1]
    layout = em.layout_of(result)
    storage = em.storage[result]
    where = em.where(op)
    if op.name == "dot_shared":
        a_name, b_name = em.storage[a], em.storage[b]
        a_t, b_t = a.type.element, b.type.element
        a_pitch, b_pitch = pitch(a.type), pitch(b.type)
    else:
        a_name, b_name, a_t, b_t, a_pitch, b_pitch, _, _ = stage_operands(em, op)  # never column-major here
        b_pitch = pitch(b.type) if isinstance(b.type, SharedType) else b_pitch  # dot_rs: B is a staged buffer
    widest = fma_read_widths(op, a_pitch, b_pitch)
    for operand, width, most in zip("AB", widths, widest):
        if width not in (1, most):
            raise em.error_at(op, f"this {op.name} cannot read {operand} {width} elements at a time (its types, "
                                  f"precision, row pitch or layout allow {most}): run read-widths again")
    precision = dot_input_precision(op.attrs)
    out_t = element_of(result.type)
    work_t = dot_work_type(a_t)  # what products accumulate in
    work = c_scalar(work_t)
    em.line(f"// {op.name}{where.replace('  // ', ' ')}: [{m}x{k}] x [{k}x{n}] {a_t}, {precision}, "
            f"{layout.slots} output(s) per thread")
    # f16 results accumulate in f32 over the whole K and round once at the end.
    total = storage if out_t == work_t else f"{storage}_acc"
    em.line(f"{work} {total}[{layout.slots}];")
    if precision == "tf32x3":
        em.line(f"float {storage}_small[{layout.slots}];  // the hi*lo + lo*hi terms")
    init = em.open_loop(layout, op)
    if acc is not None:
        value = init.value(acc, init.coords())
        init.lines.append(f"{total}[k] = {as_type(value, work_t)};")
    else:
        init.lines.append(f"{total}[k] = {c_literal(0, work_t)};")
    if precision == "tf32x3":
        init.lines.append(f"{storage}_small[k] = 0.0f;")
    em.close_loop(init, f"{op.name}: the accumulator")

    # Vector reads of either operand (the read-widths pass's decision) take the 16-byte loop.
    if widths != (1, 1):
        _vector_fma_loop(em, op, storage, layout, init.positions, (a_name, a_pitch, widths[0]),
                         (b_name, b_pitch, widths[1]), k)
        return

    rows_dim, cols_dim = layout.dims
    parent = layout.parent
    rows = parent.slots_per_dim(rows_dim)
    cols = parent.slots_per_dim(cols_dim)
    positions = init.positions
    row_of = parent.coordinate(rows_dim, "i", positions[rows_dim])
    col_of = parent.coordinate(cols_dim, "j", positions[cols_dim])
    digits = {rows_dim: "i", cols_dim: "j"}
    slot = layout.slot_of(digits)
    a_read = f"{a_name}[{_a_index(a.type, row_of, a_pitch)}]"
    b_read = f"{b_name}[kk * {b_pitch} + {col_of}]"
    em.line(f"{em.lang.unroll} 4")
    em.line(f"for (int kk = 0; kk < {k}; ++kk) {{")
    _operand_reads(em, "a_col", "i", rows, a_read, a_t, work_t, precision)
    _operand_reads(em, "b_row", "j", cols, b_read, b_t, work_t, precision)
    em.line(f"  {em.lang.unroll}")
    em.line(f"  for (int i = 0; i < {rows}; ++i)")
    em.line(f"    {em.lang.unroll}")
    if precision == "tf32x3":
        big = em.lang.fma("a_col[i]", "b_row[j]", f"{total}[{slot}]")
        small = em.lang.fma("a_col_lo[i]", "b_row[j]",
                            em.lang.fma("a_col[i]", "b_row_lo[j]", f"{storage}_small[{slot}]"))
        em.line(f"    for (int j = 0; j < {cols}; ++j) {{")
        em.line(f"      {total}[{slot}] = {big};")
        em.line(f"      {storage}_small[{slot}] = {small};")
        em.line("    }")
    else:
        update = em.lang.fma("a_col[i]", "b_row[j]", f"{total}[{slot}]", work_t)
        em.line(f"    for (int j = 0; j < {cols}; ++j) {total}[{slot}] = {update};")
    em.line("}")
    if precision == "tf32x3":
        # An infinite operand makes its lo part NaN: the hi product alone carries it (as Triton masks it).
        small = f"{storage}_small[k]"
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {layout.slots}; ++k) {total}[k] += {em.lang.is_nan(small)} ? 0.0f : {small};")
    if total != storage:
        em.line(f"{c_scalar(out_t)} {storage}[{layout.slots}];")
        em.line(em.lang.unroll)
        em.line(f"for (int k = 0; k < {layout.slots}; ++k) {storage}[k] = {em.lang.cast(f'{total}[k]', work_t, out_t)};")


def _a_index(a_type: object, row: str, a_pitch: int) -> str:
    """The index of A's (``row``, kk) in its buffer: row-major, swizzled, or
    down a column of a column-major one."""
    if isinstance(a_type, SharedType) and (_column_major(a_type) or isinstance(a_type.layout, NvmmaShared)):
        return place(a_type, row, "kk")
    return f"({row}) * {a_pitch} + kk"


def _shared_row_xor(parent: object, rows_dim: int) -> bool:
    """Whether a thread's rows along ``rows_dim`` of ``parent`` are a multiple
    of 8 apart, the period of every swizzle's pattern: they share one chunk XOR."""
    return isinstance(parent, BlockedLayout) and parent.size_per_thread[rows_dim] == 1 \
        and parent.tile(rows_dim) % 8 == 0 and not parent.replicated(rows_dim)


def hoist_fma_reads(em: "EmitContext", loop: Op) -> None:
    """Before a loop: for each dot on CUDA cores in it that reads a swizzled
    A (``nvmma_shared``) 16 bytes at a time by ``ld.shared``, where the
    thread's rows share one chunk XOR (``_shared_row_xor``), the byte offset
    of each 16-byte chunk of its first row in a stage, swizzled: chunk c at
    [c]. In the loop each read is then the stage's address, one of these and
    a constant (its row, its column block). With the XOR worked out at each
    read, the exact-f32 sample's K loop had 1,249 instructions in its SASS
    against the padded buffer's 1,206 (whose reads are one register and
    constants); so, 1,236."""
    for op in walk(loop.regions[0]):
        if op.name != "dot_shared" or op in em.hoisted_coordinates or isinstance(op.results[0].type.layout, Mma):
            continue
        a = op.operands[0]
        widths = op.attrs.get("read_widths") or (1, 1)
        if not (isinstance(a.type.layout, NvmmaShared) and not _column_major(a.type) and min(widths) > 1):
            continue  # the reads by ld.shared are where both operands are vectors (_vector_fma_loop)
        layout = em.layout_of(op.results[0])
        rows_dim, parent = layout.dims[0], layout.parent
        if not _shared_row_xor(parent, rows_dim):
            continue
        first = parent.coordinate(rows_dim, "0", f"{em.parent_name(parent)}_p{rows_dim}")
        nbytes = a.type.element.nbytes
        per_block, per_chunk = a.type.layout.swizzle // nbytes, 16 // nbytes
        number = em.hoisted_copies + 1
        name = f"h{number}_a_chunk"
        em.line(f"// the byte offset of this thread's 16-byte chunk c of A's first row in a stage of the dot "
                f"{em.where(op).replace('  // ', '')}, swizzled: the same every iteration")
        em.line(f"unsigned {name}[{per_block // per_chunk}];")
        em.line(em.lang.unroll)
        em.line(f"for (int c = 0; c < {per_block // per_chunk}; ++c) {name}[c] = (unsigned)("
                f"{swizzled_place(a.type, first, f'c * {per_chunk}', a.type.layout.xor_of_row(first))}) * {nbytes};")
        em.line(em.lang.unroll)
        em.line(f'for (int c = 0; c < {per_block // per_chunk}; ++c) asm("" : "+r"({name}[c]));  '
                "// held: NVVM would work them out again in the loop")
        em.hoisted_copies = number
        em.hoisted_coordinates[op] = {"a_chunks": name}


def dot_work_type(operand: object) -> ScalarType:
    """The type a dot of ``operand`` elements multiplies and accumulates in."""
    return F64 if operand == F64 else I32 if operand == I8 else F32


def _operand_reads(em: "EmitContext", name: str, index: str, count: int, read: str, element: object,
                   work_t: ScalarType, precision: str) -> None:
    """Declare ``name[count]`` and fill it with this K step's operand values,
    converted per the dot's precision (``name``_lo too for tf32x3)."""
    work = c_scalar(work_t)
    em.line(f"  {work} {name}[{count}];")
    if precision == "tf32x3":
        em.line(f"  {work} {name}_lo[{count}];")
    em.line(f"  {em.lang.unroll}")
    em.line(f"  for (int {index} = 0; {index} < {count}; ++{index}) {{")
    value = em.lang.cast(read, element, work_t)
    if precision == "ieee":
        em.line(f"    {name}[{index}] = {value};")
    else:
        em.line(f"    const float x = {value};")
        convert = em.lang.round_tf32 if precision == "tf32x3" else em.lang.truncate_tf32
        em.line(f"    {convert(f'{name}[{index}]', 'x')}")
        if precision == "tf32x3":
            em.line(f"    {em.lang.round_tf32(f'{name}_lo[{index}]', f'x - {name}[{index}]')}")
    em.line("  }")


# ---- the register-tiled FMA loop with 16-byte shared reads ----------------------------------

# Elements of each float type in one 16-byte shared-memory read.
_VECTORS = {"f32": 4, "f64": 2}
# A 16-byte read by ``ld.shared`` of each float type: its PTX type and output constraint.
_SHARED_READS = {"f32": ("f32", "f"), "f64": ("f64", "d")}


def fma_read_widths(op: Op, a_pitch: int, b_pitch: int) -> tuple[int, int]:
    """The widest shared reads (elements) a dot on CUDA cores may make of
    A (along k) and of B (along a thread's run of columns, the size per
    thread of the result's layout), whose rows are ``a_pitch`` and
    ``b_pitch`` elements apart: a 16-byte vector where the products are
    exact (ieee) and of the result's own float type (f32, f64) and every
    such read is aligned (the pitch and the run whole vectors), else 1."""
    a, b, _ = op.operands
    acc_t = element_of(op.results[0].type)
    if dot_input_precision(op.attrs) != "ieee" or not (_element(a.type) == _element(b.type) == acc_t) \
            or str(acc_t) not in _VECTORS:
        return 1, 1
    width = _VECTORS[str(acc_t)]
    layout = tile_layout(op.results[0].type.layout, op.results[0].type.shape)
    cols_dim, parent = layout.dims[1], layout.parent
    b_run = parent.size_per_thread[cols_dim] if parent.slots_per_dim(cols_dim) > 1 else 1

    def widest(pitch: int, run: int) -> int:
        return 1 if pitch % width or run % width else width

    # A column-major A (contiguous down its columns in memory) is read one value at a time down a k.
    a_width = 1 if isinstance(a.type, SharedType) and _column_major(a.type) else widest(a_pitch, a.type.shape[1])
    return a_width, widest(b_pitch, b_run)


# FMAs per thread in one unrolled stretch of a vector FMA loop. A whole unroll of a 128x128 exact-f32
# tile's K step (32 k, 4,096 FMAs a thread) made NVVM and ptxas take 1.4 s here, 0.54 s at 1,024
# (0.38 at 512); on an H100 the tutorial form runs as fast either way (3.23 ms at 4096^3). A loop that
# reads A one value at a time (trans_a: A M-major) is unrolled whole all the same: rolled it ran 3.62
# ms at 4096^3, 3.69 at 2,048 FMAs, 2.99 whole (benchmarks/NOTES.md, twenty-fourth session).
FMAS_UNROLLED = 1024


def _kk_unroll(steps: int, fmas_per_step: int) -> int:
    """How many of a vector FMA loop's ``steps`` iterations to unroll: the
    most that divide ``steps`` and stay within FMAS_UNROLLED FMAs (all of
    them where the whole loop does, at least one)."""
    return max((d for d in range(1, steps + 1) if steps % d == 0 and d * fmas_per_step <= FMAS_UNROLLED),
               default=1)


def _vector_fma_loop(em: "EmitContext", op: Op, storage: str, layout, positions: dict,
                     a: tuple[str, int, int], b: tuple[str, int, int], k: int) -> None:
    """The FMA loop over k with 16-byte shared reads of A (``wa`` elements
    along k), of B (``wb`` along a thread's columns) or of both, as the
    read-widths pass decided (the other operand read one value at a time).

    The result's layout gives each thread a register tile of ``rows`` x
    ``cols`` outputs. Per step of ``wa`` k values, each of its rows' A values
    is read once (16 bytes along k), then for each k its B columns (16 bytes
    per run of ``wb`` columns), then rows x cols FMAs."""
    a_name, a_pitch, wa = a
    b_name, b_pitch, wb = b
    acc_t = element_of(op.results[0].type)
    rows_dim, cols_dim = layout.dims
    parent = layout.parent
    rows = parent.slots_per_dim(rows_dim)
    cols = parent.slots_per_dim(cols_dim)
    row_of = parent.coordinate(rows_dim, "i", positions[rows_dim])
    col_of = parent.coordinate(cols_dim, "j", positions[cols_dim])
    slot = layout.slot_of({rows_dim: "i", cols_dim: "j"})
    value_t = c_scalar(acc_t)
    ptx_type, constraint = _SHARED_READS[str(acc_t)]
    nbytes = acc_t.nbytes
    # Only where both operands are read 16 bytes at a time, the case measured as fast on the
    # H200: beside A's reads one by one (a transposed A), B's by ld.shared measured 2% slower
    # (the exact-f32 trans_a form, one run).
    by_asm = wa > 1 and wb > 1

    def read(name: str, index: str, width: int, target: str, label: str, address: str | None = None) -> str:
        """A statement reading ``width`` elements at ``index`` into ``target``'s slots 0..width-1.

        Where both are vectors, they go by ``ld.shared`` at the operands' 32-bit
        shared addresses (``a_at``, ``b_at``): read through generic pointers,
        NVVM spent a third of an exact-f32 matmul's build on their addresses
        (the SASS and the speed are the same)."""
        if width == 1:
            return f"{target.format(0)} = {name}[{index}];"
        if not by_asm:
            parts = " ".join(f"{target.format(c)} = v.{'xyzw'[c]};" for c in range(width))
            vector = f"{'float' if nbytes == 4 else 'double'}{width}"
            return f"const {vector} v = *reinterpret_cast<const {vector}*>(&{name}[{index}]); {parts}"
        outputs = ", ".join(f'"={constraint}"({target.format(c)})' for c in range(width))
        registers = ", ".join(f"%{c}" for c in range(width))
        address = address or f"{label}_at + (unsigned)({index}) * {nbytes}"
        return f'asm volatile("ld.shared.v{width}.{ptx_type} {{{registers}}}, [%{width}];" : {outputs} : "r"({address}));'

    unroll = em.lang.unroll
    if by_asm:
        em.out.open("{")
        for label, name in (("a", a_name), ("b", b_name)):
            em.line(f"const unsigned {label}_at = (unsigned)__cvta_generic_to_shared({name});")
    a_type = op.operands[0].type
    chunks = em.hoisted_coordinates.get(op, {}).get("a_chunks") if by_asm else None
    # Hoisted chunk offsets are a register array indexed by kk: only a whole unroll keeps them in registers.
    # A read one value at a time runs fast only wholly unrolled (FMAS_UNROLLED).
    steps = k // wa if chunks is not None or wa == 1 else _kk_unroll(k // wa, rows * cols * wa)
    em.line(f"// {rows}x{cols} outputs per thread; per k: {rows} A value(s) "
            f"{'in 16-byte reads along k' if wa > 1 else 'read one by one'}, {cols} B value(s) "
            f"{'in 16-byte reads' if wb > 1 else 'read one by one'}")
    em.line(unroll if steps == k // wa else f"{unroll} {steps}")
    em.line(f"for (int kk = 0; kk < {k}; kk += {wa}) {{")
    em.line(f"  {value_t} a_tile[{rows}][{wa}];")
    em.line(f"  {unroll}")
    em.line(f"  for (int i = 0; i < {rows}; ++i) {{")
    a_address = None
    if chunks is not None:  # hoist_fma_reads: the chunk's offset in the row, then the row's and the block's
        per_block, per_chunk = a_type.layout.swizzle // nbytes, 16 // nbytes
        block = f" + kk / {per_block} * {a_type.shape[0] * per_block * nbytes}" if a_type.shape[1] > per_block else ""
        a_address = (f"a_at + {chunks}[kk % {per_block} / {per_chunk}] + "
                     f"(unsigned)(i * {parent.tile(rows_dim) * per_block * nbytes}{block})")
    em.line(f"    {read(a_name, _a_index(a_type, row_of, a_pitch), wa, 'a_tile[i][{}]', 'a', a_address)}")
    em.line("  }")
    em.line(f"  {unroll}")
    em.line(f"  for (int q = 0; q < {wa}; ++q) {{")
    em.line(f"    {value_t} b_row[{cols}];")
    em.line(f"    {unroll}")
    em.line(f"    for (int j = 0; j < {cols}; j += {wb}) {{")
    em.line(f"      {read(b_name, f'(kk + q) * {b_pitch} + {col_of}', wb, 'b_row[j + {}]', 'b')}")
    em.line("    }")
    em.line(f"    {unroll}")
    em.line(f"    for (int i = 0; i < {rows}; ++i)")
    em.line(f"      {unroll}")
    update = em.lang.fma("a_tile[i][q]", "b_row[j]", f"{storage}[{slot}]", acc_t)
    em.line(f"      for (int j = 0; j < {cols}; ++j) {storage}[{slot}] = {update};")
    em.line("  }")
    em.line("}")
    if by_asm:
        em.out.close("}")


def writes_scratch_first(op: Op) -> bool:
    """Whether ``op``'s rendering touches shared memory first with its
    scratch writes, then its own barrier: a ``dot`` or ``dot_rs`` off wgmma,
    whose register operands ``stage_operands`` writes to scratch before the
    barrier after which anything (its scratch, a ``dot_rs``'s B buffer) is
    read."""
    if op.name not in ("dot", "dot_rs"):
        return False
    layout = getattr(op.results[0].type, "layout", None)
    return not (isinstance(layout, Mma) and layout.version == 3)


def stage_operands(em: "EmitContext", op: Op) -> tuple[str, str, object, object, int, int, bool, bool]:
    """Write a general dot's operand tiles to scratch shared memory, each
    row of A followed by the ``a_pad`` elements allocate-shared gave it (none
    where the dot has no ``a_pad``); an operand allocate-shared marked
    ``a_columns``/``b_columns`` is written column-major (its transpose
    row-major, each row padded by ``a_pad``/``b_pad``), each thread's run
    down its columns at once. Returns the tiles' names, their element types,
    their row pitches and whether each is column-major. A ``dot_rs``'s B is
    a staged buffer already: it is read where it is."""
    a, b, _ = op.operands
    names, pitches, columns = [], [], []
    offset = 0
    em.scratch_fence()
    for value, label in ((a, "a"), (b, "b")):
        if isinstance(value.type, SharedType):
            names.append(em.storage[value])
            pitches.append(0)
            columns.append(False)
            continue
        element = c_element(value.type)
        name = f"{label}{em.name(op.results[0])[1:]}_tile"
        em.line(f"{element}* const {name} = reinterpret_cast<{element}*>(smem + {offset});")
        column_major = bool(op.attrs.get(COLUMNS[label]))
        rows, cols = value.type.shape
        pad = op.attrs.get(A_PAD if label == "a" else B_PAD, 0) if label == "a" or column_major else 0
        # the tile as it is stored: row-major, or its transpose row-major
        stored, dim = ((cols, rows + pad), 0) if column_major else ((rows, cols + pad), 1)
        loop = em.open_loop(em.layout_of(value), op)
        coords = [loop.use(c) for c in loop.coords()]
        element_value = loop.value(value, loop.coords())
        index = linear_index(coords[::-1] if column_major else coords, stored)
        run = operand_write_run(value.type.layout, value.type.shape, stored[1], element_bytes(value.type), dim)
        declare = []
        if run > 1:
            # A thread's run of consecutive elements, gathered as it is computed, written at once.
            buffer = f"w{name}"
            declare.append(em.lang.vector_buffer(element, buffer, run))
            loop.lines.append(f"{buffer}[k % {run}] = {element_value.expr};")
            copy = em.lang.vector_copy(f"&{name}[{index}] - {run - 1}", buffer, run * element_bytes(value.type),
                                       source_const=False)
            loop.lines.append(f"if (k % {run} == {run - 1}) {copy}")
        else:
            loop.lines.append(f"{name}[{index}] = {element_value.expr};")
        order = "column-major " if column_major else ""
        em.close_loop(loop, f"dot operand {label}: registers to shared memory {order}".rstrip(), declare)
        offset += _aligned(stored[0] * stored[1] * element_of(value.type).nbytes)
        names.append(name)
        pitches.append(stored[1])
        columns.append(column_major)
    # internal to this op (its scratch writes, then its reads): the renderer's, not insert-barriers'
    em.line(em.lang.barrier)
    em.need_shared(offset, op)
    return names[0], names[1], element_of(a.type), _element(b.type), pitches[0], pitches[1], columns[0], columns[1]


def operand_write_run(layout, shape: tuple[int, ...], pitch: int, nbytes: int, dim: int | None = None) -> int:
    """The elements a thread writes at once into a dot operand's tile in
    scratch: its layout's run of consecutive slots along ``dim`` (by default
    the rows; dimension 0 for a tile written column-major), where that is 4,
    8 or 16 bytes and each stored row, padding included (``pitch``), keeps
    the runs aligned; else 1."""
    dim = len(shape) - 1 if dim is None else dim
    along = thread_run(layout) if isinstance(layout, Blocked) else None
    if along is None or along[0] != dim:
        return 1
    run = along[1]
    if run * nbytes not in (4, 8, 16) or (pitch * nbytes) % (run * nbytes) or shape[dim] % run:
        return 1
    return run


def writes_columns(op: Op, label: str) -> bool:
    """Whether ``op``'s operand ``label`` ("a" or "b") is written to scratch
    column-major (``dot_layouts.column_major_problem`` says where it may be):
    where its register tile's run down the columns (a ``tl.trans`` of a
    row-major tile, which the layouts stage lays out in its operand's
    registers) is 4 to 16 bytes, so each thread writes it at once, where
    row-major its elements lie a row apart."""
    if (op.name == "dot_rs" and label == "b") or column_major_problem(op, label) is not None:
        return False
    value = op.operands[0 if label == "a" else 1]
    return operand_write_run(value.type.layout, value.type.shape, value.type.shape[0], 2, 0) > 1


def columns_pad(rows: int, nbytes: int) -> int:
    """The padding after each row of a column-major operand tile (``rows``
    elements of ``nbytes``): ldmatrix reads 16 bytes from each of 8 rows at
    once, in distinct banks only where a row spans an odd number of 16-byte
    units; 16 bytes more where it spans an even one."""
    return 16 // nbytes if (rows * nbytes // 16) % 2 == 0 else 0


def _element(t) -> ScalarType:
    return t.element if isinstance(t, SharedType) else element_of(t)


def _aligned(nbytes: int) -> int:
    return (nbytes + 15) // 16 * 16
