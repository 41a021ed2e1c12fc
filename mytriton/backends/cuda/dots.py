"""``tl.dot`` on the GPU, on CUDA cores.

The stage-dots pass turns the canonical pair of masked tile loads into
explicit ops, and each becomes CUDA here:

- ``shared_alloc``: a ``__shared__`` array, declared once at kernel scope,
  row-major with the padding its ``padded_shared`` layout gives;
- ``copy_to_shared``: every thread copies elements ``threadIdx.x``,
  ``threadIdx.x + threads``, ... of the row-major tile, consecutive threads
  reading consecutive addresses; out-of-bounds elements get the fill value,
  so edge tiles are whole tiles padded with zeros;
- ``barrier``: ``__syncthreads()``;
- ``dot_shared``: the accumulator tile is spread over the threads by its
  layout; for each step along K a thread reads the A values of its rows and
  the B values of its columns once, then does one FMA per element it holds.
  The operands are converted as the dot's ``input_precision`` says (TF32
  rounding through the language object's ``round_tf32``; tf32x3 keeps a
  second accumulator for the hi*lo + lo*hi terms); f16 and bf16 multiply in
  f32, i8 in i32, f64 in f64; an f16 result is accumulated in f32 and
  rounded once at the end.

A ``dot`` the pass did not stage (its operands are not canonical loads) takes
the general path: both operand tiles are written from registers to shared
scratch memory, then the same FMA loop runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mytriton.backends.cuda.ctypes import c_element, c_literal, c_scalar
from mytriton.backends.cuda.language import CUDA
from mytriton.backends.cuda.expressions import as_type
from mytriton.backends.cuda.slots import linear_index
from mytriton.ir.opdefs import dot_input_precision
from mytriton.ir.ssa import Op
from mytriton.types import F32, F64, I8, I32, ScalarType, SharedType, element_of

if TYPE_CHECKING:
    from mytriton.backends.cuda.emitter import CudaEmitter


def shared_array_name(op: Op) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(op.attrs["name"]))
    return f"shared_{name}"


def pitch(buffer: SharedType) -> int:
    """Elements from one row of a shared buffer to the next (its layout's padding included)."""
    return buffer.layout.row_pitch(buffer.shape[1])


def buffer_elements(buffer: SharedType) -> int:
    return buffer.shape[0] * pitch(buffer)


def declare_shared(op: Op) -> tuple[str, str]:
    """The C name and kernel-scope declaration of a ``shared_alloc``."""
    buffer = op.results[0].type
    rows, cols = buffer.shape
    element = c_scalar(op.attrs["dtype"])
    name = shared_array_name(op)
    padding = f", {buffer.layout.pad} padding element(s) per row" if buffer.layout.pad else ""
    return name, (CUDA.shared_array(element, name, buffer_elements(buffer))
                  + f"  // {rows}x{cols}, row-major{padding}")


def emit_copies(em: "CudaEmitter", ops: list[Op]) -> None:
    """Consecutive ``copy_to_shared`` ops: every thread first loads all its
    elements of every tile into registers, so the loads are in flight
    together, then writes them to shared memory. (A load cannot move past a
    shared store to the compiler, which cannot rule out that the pointers
    alias; so loads written one after a store would wait on each other.)"""
    plans = []
    for op in ops:
        buffer, base, row_offset, col_offset, stride, row_bound, col_bound, fill = op.operands
        rows, cols = buffer.type.shape
        row_pitch = pitch(buffer.type)
        total = rows * cols
        steps = max(1, total // em.threads)
        name = em.storage[buffer]
        stage = f"{name}_staging"
        tid = em.lang.thread_id
        index = tid if steps == 1 else f"{tid} + s * {em.threads}"
        guard = total % em.threads != 0 and total < em.threads
        args = {label: as_type(em.scalar_arg(value), I32) for label, value in (
            ("row_offset", row_offset), ("col_offset", col_offset), ("stride", stride),
            ("row_bound", row_bound), ("col_bound", col_bound))}
        element = c_scalar(buffer.type.element)
        base_name = em.scalar_ref(base)
        where = em.where(op).replace("  // copy_to_shared", "")
        em.line(f"// copy_to_shared{where}: the {rows}x{cols} tile of {base_name} at "
                f"({args['row_offset']}, {args['col_offset']}) into {name}, {steps} element(s) per thread")
        em.line(f"{element} {stage}[{steps}];")
        em.line(f"{em.lang.unroll}")
        em.line(f"for (int s = 0; s < {steps}; ++s) {{")
        em.line(f"  const int i = {index};")
        em.line(f"  const int row = {args['row_offset']} + i / {cols};")
        em.line(f"  const int col = {args['col_offset']} + i % {cols};")
        in_bounds = f"row < {args['row_bound']} && col < {args['col_bound']}" + (f" && i < {total}" if guard else "")
        em.line(f"  {stage}[s] = ({in_bounds}) ? {base_name}[row * {args['stride']} + col] : "
                f"{as_type(em.scalar_arg(fill), buffer.type.element)};")
        em.line("}")
        plans.append((name, stage, steps, index, guard, total, cols, row_pitch))
    for name, stage, steps, index, guard, total, cols, row_pitch in plans:
        em.line(f"{em.lang.unroll}")
        place = index if row_pitch == cols else f"({index}) / {cols} * {row_pitch} + ({index}) % {cols}"
        store = f"{name}[{place}] = {stage}[s];"
        if guard:
            store = f"if ({index} < {total}) {store}"
        em.line(f"for (int s = 0; s < {steps}; ++s) {store}")


def emit_dot(em: "CudaEmitter", op: Op) -> None:
    """``dot_shared`` (buffers from the stage-dots pass) or a general ``dot``
    (operand tiles staged here through scratch shared memory)."""
    from mytriton.backends.cuda.mma import emit_mma_dot, is_mma

    if is_mma(em.layout_of(op.results[0])):
        emit_mma_dot(em, op)  # tensor cores (the layouts stage chose an mma layout)
        return
    a, b, acc = op.operands
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
        a_name, b_name, a_t, b_t = stage_operands(em, op)
        a_pitch, b_pitch = k, n
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

    rows_dim, cols_dim = layout.dims
    parent = layout.parent
    rows = parent.slots_per_dim(rows_dim)
    cols = parent.slots_per_dim(cols_dim)
    positions = init.positions
    row_of = parent.coordinate(rows_dim, "i", positions[rows_dim])
    col_of = parent.coordinate(cols_dim, "j", positions[cols_dim])
    digits = {rows_dim: "i", cols_dim: "j"}
    slot = layout.slot_of(digits)
    a_read = f"{a_name}[({row_of}) * {a_pitch} + kk]"
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


def dot_work_type(operand: object) -> ScalarType:
    """The type a dot of ``operand`` elements multiplies and accumulates in."""
    return F64 if operand == F64 else I32 if operand == I8 else F32


def _operand_reads(em: "CudaEmitter", name: str, index: str, count: int, read: str, element: object,
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
        em.line(f"    {em.lang.round_tf32(f'{name}[{index}]', 'x')}")
        if precision == "tf32x3":
            em.line(f"    {em.lang.round_tf32(f'{name}_lo[{index}]', f'x - {name}[{index}]')}")
    em.line("  }")


def stage_operands(em: "CudaEmitter", op: Op) -> tuple[str, str, object, object]:
    """Write a general dot's operand tiles to scratch shared memory."""
    a, b, _ = op.operands
    names = []
    offset = 0
    em.line(f"{em.lang.barrier}  // earlier readers of shared memory are done")
    for value, label in ((a, "a"), (b, "b")):
        element = c_element(value.type)
        name = f"{label}{em.name(op.results[0])[1:]}_tile"
        em.line(f"{element}* const {name} = reinterpret_cast<{element}*>(smem + {offset});")
        loop = em.open_loop(em.layout_of(value), op)
        coords = loop.coords()
        element_value = loop.value(value, coords)
        index = linear_index([loop.use(c) for c in coords], value.type.shape)
        loop.lines.append(f"{name}[{index}] = {element_value.expr};")
        em.close_loop(loop, f"dot operand {label}: registers to shared memory")
        offset += _aligned(value.type.numel * element_of(value.type).nbytes)
        names.append(name)
    em.line(em.lang.barrier)
    em.need_shared(offset, op)
    return names[0], names[1], element_of(a.type), element_of(b.type)


def _aligned(nbytes: int) -> int:
    return (nbytes + 15) // 16 * 16
