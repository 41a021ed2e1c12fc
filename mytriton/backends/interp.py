"""A NumPy interpreter for SSA kernels.

``run_kernel(kernel, grid, args)`` executes the program instances of the
grid in chunks, each chunk at once, vectorised over its programs: a runtime
value of SSA type ``T`` is a NumPy array of shape ``(P, *shape(T))`` where
``P`` is the number of programs in the chunk (scalars are ``(P,)``). A chunk
holds as many programs as keep ``P`` times the elements of all the values a
program holds under ``INTERP_CHUNK_ELEMENTS``, so memory stays bounded
however large the grid; programs are independent, so running them in
chunks does not change the result. Programs are numbered with grid axis 0
fastest, as CUDA numbers blocks.

Pointers are int64 words that cannot alias: a buffer id (1, 2, ... for the
pointer arguments) in bits 40-61 and the byte offset into that buffer, biased
by 2**39, in bits 0-39; bit 62 marks a *poisoned* pointer. ``addptr`` moves
only the offset; one that leaves its window (no buffer is 2**39 bytes) poisons
the pointer, which keeps its id and stays poisoned, so no offset can reach a
neighbouring buffer. ``load``/``store`` read the buffer id and offset by
shifts, check that the offset is in bounds and aligned (a poisoned pointer
is out of bounds), then gather or scatter; masked-off lanes are never looked at.

The common vector access takes a fast path with the same results and errors:
``s + tl.arange(a, b)`` (and a pointer plus it) is kept as a ``_Ramp``, one
first element per program, found from the ops that made it; ``ramp < n`` that
holds for all lanes or none is one broadcast bool; a load or store whose lanes
are all enabled and whose pointers form one in-bounds run per program is a
slice of the buffer (or one index array), with no per-lane check. A fast load
may return a view of the buffer: every store first copies the values that
still see the memory it writes (``_State.detach``). Anything else falls back
to the lane-by-lane path, which also gives the error messages.

A runtime ``for`` loop whose bounds differ between programs runs as long as
any program still iterates; an *active* mask of shape ``(P,)`` says which
programs are iterating, and gates every load and store in the body and the
update of the carried values.

A shared buffer (``shared_alloc``) is a mutable array of shape ``(P, R, C)``,
one tile per program, held in the environment under the allocation's value:
``copy_to_shared`` writes it in place and ``dot_shared`` reads it.
``barrier`` does nothing here, since all programs run in lockstep.

This is the only module of the compiler that imports NumPy.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Callable, Sequence

import numpy as np

from mytriton.diagnostics import CompileError, printable
from mytriton.ir import opdefs
from mytriton.ir.opdefs import LOWER_BOUNDS
from mytriton.ir.ssa import (
    Block, Const, Kernel, Op, OpResult, Operand, Param, Value, for_body, for_bounds, for_carried,
    for_index, for_inits, for_yield, walk,
)
from mytriton.limits import INTERP_CHUNK_ELEMENTS, MAX_INTERP_ELEMENTS, grid_error
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, BlockType, PointerType, ScalarType,
    SharedType, Type, concrete, element_of, promote, shape_of, with_element,
)

# ---- types -------------------------------------------------------------------------

_NUMPY_DTYPES: dict[ScalarType, np.dtype] = {
    BOOL: np.dtype(np.bool_),
    I8: np.dtype(np.int8),
    I16: np.dtype(np.int16),
    I32: np.dtype(np.int32),
    I64: np.dtype(np.int64),
    U8: np.dtype(np.uint8),
    U16: np.dtype(np.uint16),
    U32: np.dtype(np.uint32),
    U64: np.dtype(np.uint64),
    F16: np.dtype(np.float16),
    F32: np.dtype(np.float32),
    F64: np.dtype(np.float64),
}


def bfloat16_dtype() -> np.dtype:
    """NumPy's bfloat16, from the optional ``ml_dtypes`` package (``pip
    install mytriton[bf16]``): NumPy stays the interpreter's one hard
    dependency, and only a kernel that uses bf16 needs it."""
    try:
        import ml_dtypes
    except ImportError:
        raise CompileError("bf16 in the interpreter needs the ml_dtypes package "
                           "(pip install ml_dtypes, or mytriton[bf16])") from None
    return np.dtype(ml_dtypes.bfloat16)

ADDRESS = np.dtype(np.int64)  # how pointer values are represented
_ID_SHIFT = 40  # bits 0-39: the biased byte offset; bits 40-61: the buffer id
_OFFSET_MASK = (1 << _ID_SHIFT) - 1
_BIAS = 1 << (_ID_SHIFT - 1)  # byte offset 0 sits mid-window: offsets in [-2**39, 2**39)
_ID_MASK = (1 << 22) - 1
_POISON = 1 << 62  # set once an offset left its window; sticky
MAX_BUFFER_BYTES = _BIAS - 1
# An element offset of at least this size leaves every window even times one
# byte, and times eight bytes it cannot overflow int64.
_OFFSET_LIMIT = 1 << _ID_SHIFT


def np_dtype(t: Type) -> np.dtype:
    """The NumPy dtype holding elements of the SSA type ``t`` (pointers are
    int64 addresses; weak literal types take their default)."""
    e = element_of(t)
    if isinstance(e, PointerType):
        return ADDRESS
    e = concrete(e)
    if e == BF16:
        return bfloat16_dtype()
    try:
        return _NUMPY_DTYPES[e]
    except KeyError:
        raise CompileError(f"the interpreter does not support the type {t}") from None


def _rank(t: Type) -> int:
    return len(shape_of(t))


def _operand_type(operand: Operand) -> Type:
    assert operand is not None
    return operand.type


# ---- the entry point -------------------------------------------------------------------


def run_kernel(kernel: Kernel, grid: tuple[int, ...], args: Sequence[object]) -> None:
    """Run ``kernel`` over ``grid`` (1 to 3 ints) with ``args`` in
    ``kernel.params`` order: a C-contiguous ndarray for each pointer parameter
    (written in place), a number for each scalar parameter."""
    dims, grid_rank = _check_grid(grid, kernel)
    if len(args) != len(kernel.params):
        names = ", ".join(p.name for p in kernel.params)
        raise CompileError(f"kernel '{kernel.name}' takes {len(kernel.params)} argument(s) "
                           f"({names}), got {len(args)}", kernel.loc)
    programs = dims[0] * dims[1] * dims[2]
    if programs * program_elements(kernel) > MAX_INTERP_ELEMENTS:
        raise CompileError(f"the interpreter would hold {programs} programs x {program_elements(kernel)} elements, "
                           f"over the limit of {MAX_INTERP_ELEMENTS} (MAX_INTERP_ELEMENTS); run it on the GPU "
                           "or on a smaller grid", kernel.loc)
    chunk = programs_per_chunk(kernel)
    first = 0
    while True:
        state = _State(kernel, dims, grid_rank, first, min(chunk, programs - first))
        for param, arg in zip(kernel.params, args):  # checks the arguments even for an empty grid
            state.bind_param(param, arg)
        for arrays in _ADDRESSABLE:
            for i, array in enumerate(arrays):
                state.add_buffer(f"addressable array {i}", array)
        if state.P == 0:
            return
        with np.errstate(all="ignore"):
            state.run_block(kernel.body, np.ones(state.P, dtype=bool))
        first += state.P
        if first >= programs:
            return


# Arrays a kernel may reach only through addresses (int_to_ptr), beside the
# launch's own: ``with addressable_arrays(a, b): ...`` (the host side of
# grouped GEMM, runtime/memory.py). A stack of tuples, read by each launch;
# the arrays are held (alive) while they are on it.
_ADDRESSABLE: list[tuple[np.ndarray, ...]] = []


class addressable_arrays:
    """While in effect, launches in the interpreter also recognise addresses
    inside these C-contiguous arrays (``a.ctypes.data`` up to its end), as
    they do those of the arrays passed to them."""

    def __init__(self, *arrays: np.ndarray) -> None:
        for i, a in enumerate(arrays):
            if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
                raise CompileError(f"addressable array {i}: pass C-contiguous NumPy arrays, got "
                                   f"{type(a).__name__}")
            if a.nbytes > MAX_BUFFER_BYTES:
                raise CompileError(f"addressable array {i}: the interpreter addresses at most "
                                   f"{MAX_BUFFER_BYTES} bytes per buffer, got {a.nbytes}")
        self.arrays = arrays

    def __enter__(self) -> "addressable_arrays":
        _ADDRESSABLE.append(self.arrays)
        return self

    def __exit__(self, *exc: object) -> None:
        _ADDRESSABLE.remove(self.arrays)


def programs_per_chunk(kernel: Kernel) -> int:
    """How many programs run at once: their elements (``program_elements``)
    stay under INTERP_CHUNK_ELEMENTS; at least one program runs, whatever
    its size (MAX_TILE_ELEMENTS bounds that)."""
    if any(op.name in opdefs.ATOMIC_OPS for op in walk(kernel.body)):
        return 1  # atomics: programs in order, one at a time (see "atomics" below)
    return max(1, INTERP_CHUNK_ELEMENTS // program_elements(kernel))


def program_elements(kernel: Kernel) -> int:
    """The elements of every value one program holds: its parameters, each
    op result, each loop's index and carried values."""
    total = len(kernel.params)
    for op in walk(kernel.body):
        for value in [*op.results, *(arg for region in op.regions for arg in region.args)]:
            t = value.type
            total += t.numel if isinstance(t, (BlockType, SharedType)) else 1
    return max(total, 1)


def _check_grid(grid: Any, kernel: Kernel) -> tuple[tuple[int, int, int], int]:
    if isinstance(grid, Integral):
        grid = (grid,)
    grid = tuple(grid)
    if not 1 <= len(grid) <= 3:
        raise CompileError(f"a grid has 1 to 3 dimensions, got {grid}", kernel.loc)
    for g in grid:
        if not isinstance(g, Integral) or isinstance(g, bool) or g < 0:
            raise CompileError(f"grid dimensions must be non-negative integers, got {grid}", kernel.loc)
    padded = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    problem = grid_error(padded)
    if problem:
        raise CompileError(problem, kernel.loc)
    return padded, len(grid)  # type: ignore[return-value]


@dataclass
class _Buffer:
    name: str
    base: int
    data: np.ndarray  # flat view of the caller's array


class _State:
    """The values of one kernel run, and the buffers its pointers address."""

    def __init__(self, kernel: Kernel, grid: tuple[int, int, int], grid_rank: int,
                 first: int = 0, count: int | None = None) -> None:
        self.kernel = kernel
        self.grid = grid
        self.grid_rank = grid_rank
        # This run's programs: ``first`` to ``first + P - 1`` of the grid.
        self.first = first
        self.P = grid[0] * grid[1] * grid[2] if count is None else count
        self.env: dict[Value, np.ndarray] = {}
        self.buffers: list[_Buffer] = []
        self.sizes = np.zeros(1, dtype=np.int64)  # elements of buffer id i; id 0 is no buffer
        # Memory changes so far (stores, shared-memory writes, atomics that
        # changed a value): a while loop whose iteration changes neither
        # memory nor its carried values would repeat forever (_while).
        self.writes = 0

    # -- arguments --

    def bind_param(self, param: Param, arg: object) -> None:
        name = param.name
        t = param.type
        where = self.kernel.loc
        if isinstance(t, PointerType):
            if not isinstance(arg, np.ndarray):
                raise CompileError(f"parameter '{name}' is a pointer ({t}): pass a NumPy array, "
                                   f"got {type(arg).__name__}", where)
            expected = np_dtype(t.pointee)
            if arg.dtype != expected:
                raise CompileError(f"parameter '{name}' is {t}: expected an array of {expected}, "
                                   f"got {arg.dtype}", where)
            if not arg.flags.c_contiguous:
                raise CompileError(f"parameter '{name}': the array must be C-contiguous "
                                   "(use np.ascontiguousarray and copy results back)", where)
            if arg.nbytes > MAX_BUFFER_BYTES:
                raise CompileError(f"parameter '{name}': the interpreter addresses at most "
                                   f"{MAX_BUFFER_BYTES} bytes per buffer, got {arg.nbytes}", where)
            self.env[param] = np.full(self.P, self.add_buffer(name, arg), dtype=ADDRESS)
            return
        self.env[param] = np.full(self.P, _scalar_arg(name, t, arg, where), dtype=np_dtype(t))

    def add_buffer(self, name: str, array: np.ndarray) -> int:
        """Make ``array`` (C-contiguous, checked) addressable; its base pointer."""
        if len(self.buffers) >= _ID_MASK:
            raise CompileError(f"'{name}': too many buffers for the interpreter", self.kernel.loc)
        base = ((len(self.buffers) + 1) << _ID_SHIFT) | _BIAS
        self.buffers.append(_Buffer(name, base, array.reshape(-1)))
        self.sizes = np.append(self.sizes, array.size)
        return base

    # -- values --

    def get(self, operand: Operand, dtype: np.dtype, rank: int) -> Any:
        """``operand`` as an array of ``dtype`` aligned to a tile ``rank``
        (right-aligned, so it broadcasts against ``(P, *shape)``); a literal
        becomes a NumPy scalar of ``dtype``."""
        if isinstance(operand, Const):
            return _literal(operand.value, dtype)
        assert operand is not None
        arr = self.env[operand]
        if isinstance(arr, _Ramp):  # needed lane by lane after all
            arr = self.env[operand] = arr.materialise()
        return _align(arr, rank).astype(dtype, copy=False)

    def full(self, operand: Operand, t: Type) -> np.ndarray:
        """``operand`` broadcast to the full ``(P, *shape(t))`` of type ``t``."""
        shape = (self.P, *shape_of(t))
        return np.broadcast_to(self.get(operand, np_dtype(t), len(shape) - 1), shape)

    def detach(self, buffer: _Buffer) -> None:
        """Copy the values that are views of ``buffer``'s memory (fast loads
        return views), before a store changes it: a loaded value keeps what
        it read. ``may_share_memory`` compares address ranges, so views of
        views and aliased arguments are found too."""
        for key, value in self.env.items():
            if isinstance(value, np.ndarray) and not isinstance(key.type, SharedType) \
                    and np.may_share_memory(value, buffer.data):
                self.env[key] = value.copy()

    def program_coords(self, program: int) -> str:
        """The grid coordinates of the chunk's ``program``-th program."""
        program += self.first
        g0, g1, _ = self.grid
        coords = (program % g0, (program // g0) % g1, program // (g0 * g1))
        if self.grid_rank == 1:
            return str(coords[0])
        return "(" + ", ".join(str(c) for c in coords[:self.grid_rank]) + ")"

    # -- execution --

    def run_block(self, block: Block, active: np.ndarray) -> None:
        for op in block.ops:
            if op.name in ("yield", "condition"):
                continue  # read by the enclosing loop, if or while
            handler = HANDLERS.get(op.name)
            if handler is None:
                raise CompileError(f"the interpreter does not support '{op.name}'", op.loc)
            try:
                out = handler(self, op, active)
            except CompileError as err:
                raise err.at(op.loc)
            if not op.regions and op.name not in _COUNTS_ITS_OWN_WRITES and opdefs.writes_memory(op.name):
                self.writes += 1
            if not op.results:
                continue
            outs = out if isinstance(out, list) else [out]
            for result, arr in zip(op.results, outs, strict=True):
                self.env[result] = arr if isinstance(arr, _Ramp) else self._conform(arr, result.type)

    def _conform(self, arr: Any, t: Type) -> np.ndarray:
        if isinstance(t, SharedType):
            return arr  # the buffer itself, written in place by copy_to_shared
        shape = (self.P, *shape_of(t))
        arr = np.asarray(arr).astype(np_dtype(t), copy=False)
        if arr.shape != shape:
            arr = np.broadcast_to(arr, shape)
        return arr


def _scalar_arg(name: str, t: Type, arg: object, where: Any) -> Any:
    st = concrete(element_of(t))
    if isinstance(arg, np.ndarray) or not isinstance(arg, (Real, np.bool_)):
        raise CompileError(f"parameter '{name}' is a scalar ({t}): pass a number, "
                           f"got {type(arg).__name__}", where)
    if st.is_float:
        return float(arg)  # type: ignore[arg-type]
    if not isinstance(arg, (Integral, np.bool_)):
        raise CompileError(f"parameter '{name}' is {t}: pass an integer, got {arg!r}", where)
    value = int(arg)  # type: ignore[arg-type]
    if st.is_bool:
        if value not in (0, 1):
            raise CompileError(f"parameter '{name}' is bool: got {arg!r}", where)
        return bool(value)
    info = np.iinfo(np_dtype(st))
    if not info.min <= value <= info.max:
        raise CompileError(f"parameter '{name}' is {t}: {value} is out of range", where)
    return value


def _literal(value: bool | int | float, dtype: np.dtype) -> Any:
    """A weak literal as a NumPy scalar of ``dtype`` (converted as C would)."""
    return np.array(value).astype(dtype)[()]


def _align(arr: np.ndarray, rank: int) -> np.ndarray:
    """Reshape ``(P, *shape)`` to ``(P, 1, ..., 1, *shape)`` of tile ``rank``."""
    missing = rank - (arr.ndim - 1)
    if missing <= 0:
        return arr
    return arr.reshape((arr.shape[0],) + (1,) * missing + arr.shape[1:])


def _lanes(active: np.ndarray, rank: int) -> np.ndarray:
    """The per-program mask ``active`` shaped to broadcast over a tile."""
    return active.reshape((active.shape[0],) + (1,) * rank)


Handler = Callable[[_State, Op, np.ndarray], Any]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


# ---- watching memory accesses (mytriton viz) ----------------------------------------------
# ``observing_accesses(observe)`` swaps the handlers of the ops that address
# global memory for ones that first call ``observe(access)``; outside it the
# handler table is the plain one, so a run that is not watched costs nothing.

ACCESS_OPS = {"load": (1, "load"), "store": (2, "store"), "atomic_rmw": (2, "atomic"), "atomic_cas": (None, "atomic")}


@dataclass(frozen=True)
class Access:
    """The lanes of one global-memory op in one chunk of programs, before it
    runs (an access that faults is seen too). Arrays are ``(P, *shape)``."""

    op: Op
    kind: str  # "load", "store" or "atomic"
    first: int  # the linear id of the chunk's first program
    buffers: list[tuple[str, int]]  # (name, elements) of buffer id i + 1
    buffer: np.ndarray  # each lane's buffer id (0: none)
    element: np.ndarray  # each lane's element index in it (valid where in_bounds or outside)
    in_bounds: np.ndarray  # the lane points at an element of its buffer
    enabled: np.ndarray  # the lane accesses memory (its mask and its program)
    running: np.ndarray  # the lane's program is active (masked lanes: running & ~enabled)


def _access(st: _State, op: Op, active: np.ndarray, mask_index: int | None, kind: str) -> Access:
    ptr = op.operands[0]
    pt = _operand_type(ptr)
    shape = (st.P, *shape_of(pt))
    value = st.env.get(ptr) if isinstance(ptr, Value) else None
    if isinstance(value, _Ramp):  # materialised for the observer only: the run keeps its ramp
        ptrs = np.broadcast_to(_align(value.materialise(), len(shape) - 1), shape)
    else:
        ptrs = st.full(ptr, pt)
    mask = op.operands[mask_index] if mask_index is not None else None
    enabled = _enabled(st, mask, active, pt)
    running = np.broadcast_to(_lanes(active, len(shape) - 1), shape)
    which = (ptrs >> _ID_SHIFT) & _ID_MASK
    itemsize = np_dtype(_pointee(pt)).itemsize
    element = ((ptrs & _OFFSET_MASK) - _BIAS) // itemsize
    known = (which > 0) & (which < len(st.sizes)) & ((ptrs & _POISON) == 0)
    in_bounds = known & (element >= 0) & (element < st.sizes[np.where(known, which, 0)])
    buffers = [(b.name, b.data.size) for b in st.buffers]
    return Access(op, kind, st.first, buffers, np.where(known, which, 0), element, in_bounds, enabled, running)


class observing_accesses:
    """``with observing_accesses(observe): run_kernel(...)`` calls
    ``observe(access)`` before every load, store and atomic of the runs
    inside it (not thread-safe: the handler table is the module's)."""

    def __init__(self, observe: Callable[[Access], None]) -> None:
        self.observe = observe
        self.saved: dict[str, Handler] = {}

    def __enter__(self) -> "observing_accesses":
        self.saved = {name: HANDLERS[name] for name in ACCESS_OPS}
        for name, handler in self.saved.items():
            HANDLERS[name] = self._watched(handler, *ACCESS_OPS[name])
        return self

    def _watched(self, handler: Handler, mask_index: int | None, kind: str) -> Handler:
        def watched(st: _State, op: Op, active: np.ndarray) -> Any:
            self.observe(_access(st, op, active, mask_index, kind))
            return handler(st, op, active)

        return watched

    def __exit__(self, *exc: object) -> None:
        HANDLERS.update(self.saved)


# ---- program geometry and tile factories -------------------------------------------------


@handles("program_id")
def _program_id(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    g0, g1, _ = st.grid
    p = st.first + np.arange(st.P, dtype=np.int64)
    axis = op.attrs["axis"]
    pid = [p % g0, (p // g0) % g1, p // (g0 * g1)][axis]
    return pid.astype(np.int32)


@handles("num_programs")
def _num_programs(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    return np.full(st.P, st.grid[op.attrs["axis"]], dtype=np.int32)


@handles("arange")
def _arange(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    row = np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)
    return np.broadcast_to(row, (st.P, row.size))


@handles("full")
def _full(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    return st.full(op.operands[0], op.result.type)


@handles("convert_layout")
def _convert_layout(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    return st.env[op.operands[0]]  # layouts place values on GPU threads; here a tile is one array


@handles("expand_dims")
def _expand_dims(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    return np.expand_dims(st.get(x, np_dtype(x.type), _rank(x.type)), op.attrs["axis"] + 1)


# ---- elementwise ---------------------------------------------------------------------------


# The ops the op table gives NumPy semantics (the ones folding evaluates too).
_SEMANTICS = {name: d for name, d in opdefs.OPS.items() if d.semantics is not None}


@handles(*_SEMANTICS)
def _elementwise(st: _State, op: Op, active: np.ndarray) -> Any:
    opdef = _SEMANTICS[op.name]
    t = op.result.type
    rank = _rank(t)
    if rank == 1 and op.name in ("add", "cmp_lt"):
        ramp = _ramp_op(st, op)
        if ramp is not None:
            return ramp
    if opdef.computes_in == "operands":  # comparisons (and isnan, llrint...): in the operands' common type
        elements = [element_of(_operand_type(x)) for x in op.operands]
        common = elements[0] if len(elements) == 1 else promote(*elements)
        dtype = np_dtype(common)
    elif opdef.computes_in == "float":  # math functions: in at least float32
        dtype = np.promote_types(np_dtype(t), np.float32)
    else:
        dtype = np_dtype(t)
    return opdef.semantics(np, *(st.get(x, dtype, rank) for x in op.operands))


@handles("where")
def _where(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    cond, a, b = op.operands
    t = op.result.type
    dtype, rank = np_dtype(t), _rank(t)
    return np.where(st.get(cond, np.dtype(np.bool_), rank), st.get(a, dtype, rank), st.get(b, dtype, rank))


@handles("cast")
def _cast(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    t = op.result.type
    target = np_dtype(t)
    source = np_dtype(_operand_type(x))
    value = st.get(x, source, _rank(t))
    if target.kind == "b":
        return value != 0
    return value.astype(target)  # float -> int truncates toward zero


@handles("ptr_to_int")
def _ptr_to_int(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    """The real address a pointer holds: its buffer's (the launch array's
    ``ctypes.data``) plus its byte offset. A pointer into no buffer, or a
    poisoned one (its offset is gone), gives 0."""
    (x,) = op.operands
    ptrs = st.get(x, ADDRESS, _rank(op.result.type))
    which = (ptrs >> _ID_SHIFT) & _ID_MASK
    known = ((ptrs & _POISON) == 0) & (which > 0) & (which < len(st.sizes))
    starts = np.array([0] + [b.data.ctypes.data for b in st.buffers], dtype=np.int64)
    offsets = (ptrs & _OFFSET_MASK) - _BIAS
    return np.where(known, starts[np.where(known, which, 0)] + offsets, 0).astype(np_dtype(op.result.type))


@handles("int_to_ptr")
def _int_to_ptr(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    """An address as a pointer: into the launch array whose memory holds it
    (from its first byte to one past its last; the first such array where
    arrays overlap), at that byte offset. An address in no launch array
    gives a pointer into no buffer, which a load or store through it reports
    (masked-off lanes are never looked at): never a read of other memory."""
    (x,) = op.operands
    addrs = st.get(x, np.dtype(np.uint64), _rank(op.result.type))
    out = np.zeros(addrs.shape, dtype=ADDRESS)
    found = np.zeros(addrs.shape, dtype=bool)
    for index, buf in enumerate(st.buffers):
        start = np.uint64(buf.data.ctypes.data)
        inside = ~found & (addrs >= start) & (addrs <= start + np.uint64(buf.data.nbytes))
        if not inside.any():
            continue
        offset = (addrs - start).astype(np.int64)  # within MAX_BUFFER_BYTES
        base = ((index + 1) << _ID_SHIFT) | _BIAS
        out = np.where(inside, base + offset, out)
        found |= inside
    return out


@dataclass
class _Ramp:
    """A vector ``first + i * itemsize`` for ``i`` in ``range(length)``, one
    ``first`` per program, kept unmaterialised: the offsets ``s +
    tl.arange(0, N)`` (``itemsize`` 1, in their integer ``dtype``) and the
    pointers ``ptr + offsets`` (int64 addresses), so that a load or store of
    them is a slice of its buffer. A value that is one was checked not to
    wrap (offsets) or be poisoned (pointers: both ends were checked in their
    windows, and the window is contiguous). Any other use materialises it
    (``_State.get``)."""

    first: np.ndarray  # (P,) int64
    length: int
    itemsize: int
    dtype: np.dtype = ADDRESS

    def materialise(self) -> np.ndarray:
        lanes = np.arange(self.length, dtype=np.int64) * self.itemsize
        return (self.first[:, None] + lanes[None, :]).astype(self.dtype, copy=False)


def _ramp_start(st: _State, operand: Operand) -> np.ndarray | None:
    """For a rank-1 integer tile that is ``s + tl.arange(a, b)`` (``s``
    one scalar per program, any number of them added): each program's first
    element, as int64 of shape ``(P,)``; None for any other value. Found
    from the ops that made it (static) and the scalars' values (small)."""
    if not isinstance(operand, OpResult) or _rank(operand.type) != 1 or np_dtype(operand.type).kind != "i":
        return None  # a float ramp (0.5 + arange) rounds: it is computed lane by lane
    op = operand.op
    if op.name == "arange":
        return np.full(st.P, op.attrs["start"], dtype=np.int64)
    if op.name != "add":
        return None
    a, b = op.operands
    scalar, ramp = (a, b) if _rank(_operand_type(b)) == 1 else (b, a)
    if _rank(_operand_type(scalar)) != 0:
        return None
    start = _ramp_start(st, ramp)
    if start is None:
        return None
    start = start + st.get(scalar, np.dtype(np.int64), 0)
    # The ramp's lanes must not wrap in the add's own integer type.
    info = np.iinfo(np_dtype(operand.type))
    length = shape_of(operand.type)[0]
    if int(start.min()) < info.min or int(start.max()) + length - 1 > info.max:
        return None
    return start


def _ramp_op(st: _State, op: Op) -> Any:
    """Without a pass over the lanes: ``s + tl.arange(a, b)`` as a ``_Ramp``,
    and ``ramp < n`` (integers) where it is the same for every lane of each
    program, as one broadcast value; None otherwise."""
    if op.name == "add":
        start = _ramp_start(st, op.result)
        return None if start is None else _Ramp(start, shape_of(op.result.type)[0], 1, np_dtype(op.result.type))
    ramp, bound = op.operands
    if _rank(_operand_type(bound)) != 0 or np_dtype(_operand_type(bound)).kind not in "iu":
        return None
    start = _ramp_start(st, ramp)
    if start is None:
        return None
    n = st.get(bound, np.dtype(np.int64), 0)
    length = shape_of(op.result.type)[0]
    if (start + (length - 1) < n).all():
        below = True
    elif (start >= n).all():
        below = False
    else:
        return None
    return np.broadcast_to(np.bool_(below), (st.P, length))


@handles("addptr")
def _addptr(st: _State, op: Op, active: np.ndarray) -> np.ndarray | _Ramp:
    ptr, offset = op.operands
    t = op.result.type
    element = element_of(t)
    assert isinstance(element, PointerType)
    rank = _rank(t)
    size = np_dtype(element.pointee).itemsize
    if rank == 1 and _rank(_operand_type(ptr)) == 0:
        start = _ramp_start(st, offset)
        if start is not None:
            base = st.get(ptr, ADDRESS, 0)
            length = shape_of(t)[0]
            first, last = advance(base, start, size), advance(base, start + (length - 1), size)
            if not ((first | last) & _POISON).any():
                return _Ramp(first, length, size)
    offsets = st.get(offset, np_dtype(_operand_type(offset)) if isinstance(offset, Value) else ADDRESS, rank)
    return advance(st.get(ptr, ADDRESS, rank), offsets, size)


def advance(ptrs: Any, offsets: Any, itemsize: int) -> np.ndarray:
    """``ptrs`` moved by ``offsets`` elements of ``itemsize`` bytes. A pointer
    whose offset leaves its buffer's window is poisoned (and stays so): it
    can never come back in bounds, nor reach another buffer."""
    ptrs, offsets = np.asarray(ptrs, ADDRESS), np.asarray(offsets)
    moved = _advance_in_window(ptrs, offsets, itemsize)
    if moved is not None:
        return moved
    ptrs, offsets = np.broadcast_arrays(ptrs, offsets.astype(np.int64, copy=False))
    far = (offsets >= _OFFSET_LIMIT) | (offsets <= -_OFFSET_LIMIT)
    moved = (ptrs & _OFFSET_MASK) + np.where(far, 0, offsets) * itemsize
    poisoned = far | (moved < 0) | (moved > _OFFSET_MASK) | ((ptrs & _POISON) != 0)
    kept = ptrs & ~_OFFSET_MASK
    return np.where(poisoned, (kept | _POISON) & ~_OFFSET_MASK, kept | (moved & _OFFSET_MASK))


def _advance_in_window(ptrs: np.ndarray, offsets: np.ndarray, itemsize: int) -> np.ndarray | None:
    """The fast path of ``advance``: ``ptrs + offsets * itemsize`` where no
    pointer is poisoned and no moved offset can leave its window (checked on
    the extremes of each side, the pointers usually being one per program);
    None where that does not hold, for the lane-by-lane rule."""
    if ptrs.size == 0 or offsets.size == 0:
        return None
    low, high = int(offsets.min()), int(offsets.max())
    if low <= -_OFFSET_LIMIT or high >= _OFFSET_LIMIT:
        return None
    if ptrs.size <= offsets.size:
        if ((ptrs & _POISON) != 0).any():
            return None
        within = ptrs & _OFFSET_MASK
        if int(within.min()) + low * itemsize < 0 or int(within.max()) + high * itemsize > _OFFSET_MASK:
            return None
    else:
        return None  # wide pointers, narrow offsets: rare, and the general rule handles it
    scaled = np.multiply(offsets, itemsize, dtype=np.int64)
    if scaled.shape == np.broadcast_shapes(scaled.shape, ptrs.shape):
        return np.add(scaled, ptrs, out=scaled)
    return scaled + ptrs


# ---- memory ----------------------------------------------------------------------------------


def _locate(st: _State, op: Op, what: str, ptrs: np.ndarray, enabled: np.ndarray,
            itemsize: int, dtype: np.dtype | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For the enabled lanes of ``ptrs``: the id of the buffer each points
    into and the element index inside it. Raises on a pointer to no buffer,
    out of bounds (poisoned included) or misaligned, naming the buffer and a
    program. The id and offset are bit fields: no search."""
    addrs = ptrs[enabled]
    which = (addrs >> _ID_SHIFT) & _ID_MASK
    nowhere = (which == 0) | (which >= len(st.sizes))
    if nowhere.any():
        _fault(st, op, f"{what.split()[0]} through a pointer that addresses no buffer (an address converted to a "
                       "pointer must lie in an array passed to the launch)", ptrs, enabled, nowhere)
    for b, sel in _by_buffer(which):
        buf = st.buffers[b - 1]
        if dtype is not None and buf.data.dtype != dtype:
            # An address cast to a pointer of another element type: the
            # interpreter keeps each array's own element type.
            _fault(st, op, f"{what.split()[0]} of {dtype} from '{buf.name}', an array of {buf.data.dtype}: the "
                           "interpreter reads an array only as its own element type", ptrs, enabled,
                   np.isin(which, [b]))
    offset = (addrs & _OFFSET_MASK) - _BIAS
    poisoned = (addrs & _POISON) != 0
    misaligned = ~poisoned & (offset % itemsize != 0)
    elem = offset // itemsize
    outside = poisoned | (elem < 0) | (elem >= st.sizes[which])
    if misaligned.any():
        k = int(np.argmax(misaligned))
        buf = st.buffers[int(which[k]) - 1]
        _fault(st, op, f"misaligned {what} '{buf.name}': byte offset {int(offset[k])} is not a "
                       f"multiple of {itemsize}", ptrs, enabled, misaligned)
    if outside.any():
        k = int(np.argmax(outside))
        buf = st.buffers[int(which[k]) - 1]
        if poisoned[k]:
            detail = "its offset left the buffer's address range in pointer arithmetic"
        else:
            detail = f"element offset {int(elem[k])} is outside the buffer of {buf.data.size} element(s)"
        _fault(st, op, f"out-of-bounds {what} '{buf.name}': {detail}", ptrs, enabled, outside)
    return which, elem


def _contiguous(st: _State, ptrs: np.ndarray, itemsize: int) -> tuple[_Buffer, int] | None:
    """Where every lane of ``ptrs`` is enabled and they address one run of
    consecutive elements of one buffer in order (a vector's load or store),
    in bounds and aligned: that buffer and the run's first element index;
    else None, for the lane-by-lane checks of ``_locate``."""
    flat = ptrs.reshape(-1)
    first, last = int(flat[0]), int(flat[-1])
    if first & _POISON or (first >> _ID_SHIFT) != (last >> _ID_SHIFT):
        return None
    which = (first >> _ID_SHIFT) & _ID_MASK
    if which == 0 or which >= len(st.sizes):
        return None
    offset = (first & _OFFSET_MASK) - _BIAS
    if offset < 0 or offset % itemsize or last - first != (flat.size - 1) * itemsize:
        return None
    start = offset // itemsize
    if start + flat.size > st.sizes[which]:
        return None
    if flat.size > 1 and not (np.subtract(flat[1:], flat[:-1]) == itemsize).all():
        return None
    return st.buffers[which - 1], start


def _by_buffer(which: np.ndarray) -> list[tuple[int, Any]]:
    """(buffer id, lane selection) pairs covering ``which``: one slice-free
    pair in the usual case of a single buffer, else one mask per buffer."""
    if which.size == 0:
        return []
    first = int(which[0])
    if (which == first).all():
        return [(first, slice(None))]
    return [(int(b), which == b) for b in np.unique(which)]


def _fault(st: _State, op: Op, message: str, ptrs: np.ndarray, enabled: np.ndarray,
           bad: np.ndarray) -> None:
    """Raise ``message``, adding the program and tile element of the first bad lane."""
    lanes = np.argwhere(enabled)[np.argmax(bad)]
    where = f"in program {st.program_coords(int(lanes[0]))}"
    if lanes.size > 1:
        where += " at tile element [" + ", ".join(str(int(i)) for i in lanes[1:]) + "]"
    raise CompileError(f"{message} ({where})", op.loc)


def _enabled(st: _State, mask: Operand, active: np.ndarray, t: Type) -> np.ndarray:
    """The lanes of a memory access of type ``t`` that happen: its mask (if
    any) and-ed with the programs that are active."""
    shape = (st.P, *shape_of(t))
    if mask is not None and _all(active):  # the usual case: the mask itself (read, never written)
        return st.full(mask, with_element(shape_of(t), BOOL))
    lanes = np.broadcast_to(_lanes(active, len(shape) - 1), shape)
    if mask is None:
        return lanes
    return lanes & st.full(mask, with_element(shape_of(t), BOOL))


def _pointee(t: Type) -> ScalarType:
    element = element_of(t)
    assert isinstance(element, PointerType)
    return element.pointee


def _all(a: np.ndarray) -> bool:
    """``a.all()``, reading a broadcast axis (stride 0) once instead of once per lane."""
    return bool(_unbroadcast(a).all())


def _any(a: np.ndarray) -> bool:
    return bool(_unbroadcast(a).any())


def _unbroadcast(a: np.ndarray) -> np.ndarray:
    return a[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in a.strides)]


def _fast_access(st: _State, ptr: Operand, enabled: np.ndarray, itemsize: int) -> tuple[_Buffer, Any] | None:
    """The common access, found without a check per lane: every lane is
    enabled and each program's pointers are one run of consecutive, aligned,
    in-bounds elements of one buffer (a ``_Ramp``, or a plain array that
    ``_contiguous`` recognises). Gives that buffer and an index into its flat
    data: a slice where the programs' runs follow each other, else an index
    array of shape ``(P, length)``. None for anything else, which then takes
    the lane-by-lane path (and its exact error messages)."""
    if not (enabled.size and _all(enabled)) or not isinstance(ptr, Value):
        return None
    value = st.env[ptr]
    if not isinstance(value, _Ramp):
        ptrs = st.full(ptr, _operand_type(ptr))
        run = _contiguous(st, ptrs, itemsize)
        if run is None:
            return None
        return run[0], slice(run[1], run[1] + ptrs.size)
    first, length = value.first, value.length
    ids = first >> _ID_SHIFT  # no poison bit: a ramp has none
    which = int(ids[0]) & _ID_MASK
    if which == 0 or which >= len(st.sizes) or value.itemsize != itemsize or (ids != ids[0]).any():
        return None
    offsets = (first & _OFFSET_MASK) - _BIAS
    if (offsets % itemsize).any():
        return None
    starts = offsets // itemsize
    if int(starts.min()) < 0 or int(starts.max()) + length > st.sizes[which]:
        return None
    buf = st.buffers[which - 1]
    start = int(starts[0])
    if (starts == start + length * np.arange(st.P, dtype=np.int64)).all():
        return buf, slice(start, start + st.P * length)
    return buf, starts[:, None] + np.arange(length, dtype=np.int64)[None, :]


@handles("load")
def _load(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    ptr, mask, other = op.operands
    t = op.result.type
    enabled = _enabled(st, mask, active, _operand_type(ptr))
    dtype = np_dtype(_pointee(_operand_type(ptr)))
    shape = (st.P, *shape_of(t))
    fast = _fast_access(st, ptr, enabled, dtype.itemsize)
    if fast is not None and fast[0].data.dtype != dtype:
        fast = None  # another element type's pointer (int_to_ptr): refused lane by lane
    if fast is not None:
        # Possibly a view of the buffer: a store to it first detaches the
        # values that still see it (_State.detach).
        buf, index = fast
        loaded = buf.data[index].reshape(shape)
        loaded.flags.writeable = False
        return loaded
    ptrs = st.full(ptr, _operand_type(ptr))
    out = np.array(np.broadcast_to(st.full(other if other is not None else Const(0), t), ptrs.shape))
    if not _any(enabled):
        return out
    out[enabled] = _gather(st, op, "load from", ptrs, enabled, dtype)
    return out


def _gather(st: _State, op: Op, what: str, ptrs: np.ndarray, enabled: np.ndarray,
            dtype: np.dtype) -> np.ndarray:
    """The elements of ``dtype`` at the enabled lanes of ``ptrs``, bounds-checked."""
    which, elem = _locate(st, op, what, ptrs, enabled, dtype.itemsize, dtype)
    values = np.empty(elem.shape, dtype=dtype)
    for b, sel in _by_buffer(which):
        values[sel] = st.buffers[b - 1].data[elem[sel]]
    return values


@handles("store")
def _store(st: _State, op: Op, active: np.ndarray) -> None:
    ptr, value, mask = op.operands
    pt = _operand_type(ptr)
    enabled = _enabled(st, mask, active, pt)
    if not _any(enabled):
        return
    dtype = np_dtype(_pointee(pt))
    fast = _fast_access(st, ptr, enabled, dtype.itemsize)
    if fast is not None and fast[0].data.dtype != dtype:
        fast = None
    if fast is not None:
        buf, index = fast
        if not buf.data.flags.writeable:
            raise CompileError(f"store to '{buf.name}': the array is read-only", op.loc)
        values = np.broadcast_to(st.get(value, dtype, _rank(pt)), enabled.shape)
        st.detach(buf)
        if isinstance(index, slice):
            buf.data[index] = values.reshape(-1)
        else:
            buf.data[index] = values
        return
    ptrs = st.full(ptr, pt)
    _scatter(st, op, ptrs, enabled, np.broadcast_to(st.get(value, dtype, _rank(pt)), ptrs.shape)[enabled], dtype)


def _scatter(st: _State, op: Op, ptrs: np.ndarray, enabled: np.ndarray, values: np.ndarray,
             dtype: np.dtype) -> None:
    """``values`` (one per enabled lane) written at the enabled lanes of ``ptrs``, bounds-checked."""
    which, elem = _locate(st, op, "store to", ptrs, enabled, dtype.itemsize, dtype)
    for b, sel in _by_buffer(which):
        buf = st.buffers[b - 1]
        if not buf.data.flags.writeable:
            raise CompileError(f"store to '{buf.name}': the array is read-only", op.loc)
        st.detach(buf)
        buf.data[elem[sel]] = values[sel]


@handles("store_tile")
def _store_tile(st: _State, op: Op, active: np.ndarray) -> None:
    """``store_tile`` (tma-stores'): the tile written where its rows and columns are in bounds."""
    base, row_offset, col_offset, row_stride, row_bound, col_bound, value = op.operands
    n_rows, n_cols = value.type.shape
    shape = (st.P, n_rows, n_cols)

    def scalar(operand: Operand) -> Any:
        return st.get(operand, np.dtype(np.int64), 2)

    rows = scalar(row_offset) + np.arange(n_rows).reshape(1, -1, 1)
    cols = scalar(col_offset) + np.arange(n_cols).reshape(1, 1, -1)
    enabled = np.broadcast_to(_lanes(active, 2), shape) & np.broadcast_to(
        (rows < scalar(row_bound)) & (cols < scalar(col_bound)), shape)
    if not enabled.any():
        return
    dtype = np_dtype(value.type.element)
    ptrs = np.broadcast_to(advance(st.get(base, ADDRESS, 2), rows * scalar(row_stride) + cols, dtype.itemsize), shape)
    _scatter(st, op, ptrs, enabled, np.broadcast_to(st.get(value, dtype, 2), shape)[enabled], dtype)


# ---- atomics ------------------------------------------------------------------------------------
# A kernel with atomics runs one program at a time (``programs_per_chunk``),
# and each atomic applies its enabled elements one at a time in order, so
# repeated addresses accumulate with no lost update and a spin lock taken by
# one program is released before the next program runs. ``sem`` and
# ``scope`` change nothing here: the order is already sequential.


def _float_max_min(kind: str, old: Any, value: Any) -> Any:
    """max/min of floats as the GPU computes them, by the integer order of
    their bits (a value with its sign bit clear compared as signed integers,
    one with it set as unsigned, reversed): signed zeros and NaNs too."""
    size = old.dtype.itemsize
    if not np.signbit(value):
        a, b = value.view(f"i{size}"), old.view(f"i{size}")
        wins = a > b if kind == "max" else a < b
    else:
        a, b = value.view(f"u{size}"), old.view(f"u{size}")
        wins = a < b if kind == "max" else a > b
    return value if wins else old


def _rmw(kind: str, old: Any, value: Any) -> Any:
    if kind == "add":
        return old + value
    if kind in ("max", "min") and old.dtype.kind == "f":
        return _float_max_min(kind, old, value)
    if kind == "max":
        return value if value > old else old
    if kind == "min":
        return value if value < old else old
    if kind == "and":
        return old & value
    if kind == "or":
        return old | value
    if kind == "xor":
        return old ^ value
    return value  # xchg


def _atomic_lanes(st: _State, op: Op, ptr: Operand, enabled: np.ndarray, dtype: np.dtype) -> tuple:
    """The buffer id and element index of each enabled lane, in program then element order."""
    ptrs = st.full(ptr, _operand_type(ptr))
    return _locate(st, op, f"atomic_{op.attrs.get('kind', 'cas')} on", ptrs, enabled, dtype.itemsize)


def _writable(st: _State, op: Op, which: np.ndarray) -> None:
    for b in np.unique(which):
        buf = st.buffers[int(b) - 1]
        if not buf.data.flags.writeable:
            raise CompileError(f"atomic on '{buf.name}': the array is read-only", op.loc)
        st.detach(buf)


# Atomics count as a memory change only where one happened: a spin lock's
# failed compare-and-swap changes nothing, so a program spinning on a lock no
# earlier program released is found (_while) instead of spinning forever.
_COUNTS_ITS_OWN_WRITES = frozenset({"atomic_rmw", "atomic_cas"})


def _changed(olds: np.ndarray, which: np.ndarray, elem: np.ndarray, st: _State) -> int:
    """1 if any element an atomic touched now differs, bit for bit, from the
    value it returned as old, else 0."""
    bits = np.dtype(f"u{olds.dtype.itemsize}")
    for lane, (b, e) in enumerate(zip(which.tolist(), elem.tolist())):
        if st.buffers[b - 1].data.view(bits)[e] != olds[lane:lane + 1].view(bits)[0]:
            return 1
    return 0


@handles("atomic_rmw")
def _atomic_rmw(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    ptr, value, mask = op.operands
    pt = _operand_type(ptr)
    dtype = np_dtype(_pointee(pt))
    shape = (st.P, *shape_of(pt))
    out = np.zeros(shape, dtype=dtype)
    enabled = np.broadcast_to(_enabled(st, mask, active, pt), shape)
    if not _any(enabled):
        return out
    which, elem = _atomic_lanes(st, op, ptr, enabled, dtype)
    values = np.broadcast_to(st.get(value, dtype, _rank(pt)), shape)[enabled]
    _writable(st, op, which)
    kind = op.attrs["kind"]
    olds = np.empty(elem.shape, dtype=dtype)
    for lane, (b, e) in enumerate(zip(which.tolist(), elem.tolist())):
        data = st.buffers[b - 1].data
        old = data[e]
        data[e] = _rmw(kind, old, values[lane])
        olds[lane] = old
    st.writes += _changed(olds, which, elem, st)
    out[enabled] = olds
    return out


@handles("atomic_cas")
def _atomic_cas(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    ptr, cmp, value = op.operands
    pt = _operand_type(ptr)
    dtype = np_dtype(_pointee(pt))
    bits = np.dtype(f"u{dtype.itemsize}")  # compared bit for bit, as atomicCAS does
    shape = (st.P, *shape_of(pt))
    out = np.zeros(shape, dtype=dtype)
    enabled = np.broadcast_to(_enabled(st, None, active, pt), shape)
    if not _any(enabled):
        return out
    which, elem = _atomic_lanes(st, op, ptr, enabled, dtype)
    cmps = np.ascontiguousarray(np.broadcast_to(st.get(cmp, dtype, _rank(pt)), shape)[enabled]).view(bits)
    values = np.broadcast_to(st.get(value, dtype, _rank(pt)), shape)[enabled]
    _writable(st, op, which)
    olds = np.empty(elem.shape, dtype=dtype)
    for lane, (b, e) in enumerate(zip(which.tolist(), elem.tolist())):
        data = st.buffers[b - 1].data
        old = data[e]
        if data.view(bits)[e] == cmps[lane]:
            data[e] = values[lane]
        olds[lane] = old
    st.writes += _changed(olds, which, elem, st)
    out[enabled] = olds
    return out


# ---- reductions and dot ------------------------------------------------------------------------


@handles("sum", "max", "min")
def _reduce(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    rank = _rank(_operand_type(x))
    axis = op.attrs.get("axis")
    axes = tuple(range(1, rank + 1)) if axis is None else (axis + 1,)
    dtype = np_dtype(op.result.type)
    is_float = element_of(op.result.type).is_float  # bf16's NumPy kind is "V", not "f"
    if op.name == "sum":
        # Accumulate half precision (f16, bf16) in float32, as a GPU would.
        acc = np.promote_types(dtype, np.float32) if is_float else dtype
        return np.sum(st.get(x, acc, rank), axis=axes, dtype=acc).astype(dtype)
    values = st.get(x, dtype, rank)
    if is_float:
        # fmaxf's rule, as tl.max (Triton's default PropagateNan.NONE): NaN loses to a number.
        reduce = np.fmax if op.name == "max" else np.fmin
        return reduce.reduce(values, axis=axes)
    return (np.max if op.name == "max" else np.min)(values, axis=axes)


_F32 = np.dtype(np.float32)


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to TF32 (10 mantissa bits) as the GPU's
    ``cvt.rna.tf32.f32`` rounds: to nearest, ties away from zero (adding half
    of the dropped part to the magnitude's bits, then clearing it); a
    carry may reach infinity; NaN stays NaN."""
    x = np.asarray(x, dtype=_F32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(_F32)
    return np.where(np.isnan(x), x, rounded)


def truncate_to_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values as the tensor cores read them for a TF32 product: the top
    19 bits, the low 13 mantissa bits dropped (toward zero), as mma.sync and
    wgmma do with f32 bits given as TF32 operands, which Triton gives them
    unrounded; NaN stays NaN."""
    x = np.asarray(x, dtype=_F32)
    truncated = (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(_F32)
    return np.where(np.isnan(x), x, truncated)


def dot_product(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None, precision: str,
                out: np.dtype) -> np.ndarray:
    """``a @ b (+ acc)`` over the last two axes, as the GPU computes tl.dot:
    f32 operands per ``precision`` (opdefs.DOT_INPUT_PRECISIONS) with f32
    accumulation; f16 and bf16 operands multiplied exactly and accumulated in
    f32, the result rounded once to ``out`` (f32 or f16); i8 accumulated
    exactly in i32 (wrapping as the GPU's int32 adds); f64 in f64."""
    if a.dtype == np.int8:
        product = np.matmul(a.astype(np.int32), b.astype(np.int32))
        return product if acc is None else product + acc.astype(np.int32)
    work = np.dtype(np.float64) if a.dtype == np.float64 else _F32
    a, b = a.astype(work, copy=False), b.astype(work, copy=False)
    total = None if acc is None else acc.astype(work)
    if precision == "tf32":
        product = np.matmul(truncate_to_tf32(a), truncate_to_tf32(b))
    elif precision == "tf32x3":
        a_hi, b_hi = round_to_tf32(a), round_to_tf32(b)
        a_lo, b_lo = round_to_tf32(a - a_hi), round_to_tf32(b - b_hi)
        small = np.matmul(a_lo, b_hi) + np.matmul(a_hi, b_lo)
        # An infinite operand makes its lo part NaN; the hi product alone carries it.
        small = np.where(np.isnan(small), np.zeros((), work), small)
        product = np.matmul(a_hi, b_hi) + small
    else:
        product = np.matmul(a, b)
    total = product if total is None else total + product
    return total.astype(out, copy=False)


def _matmul(st: _State, op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    acc = op.operands[2]
    out = np_dtype(op.result.type)
    accumulator = None if acc is None else st.get(acc, out, 2)
    with np.errstate(over="ignore", invalid="ignore"):
        return dot_product(a, b, accumulator, opdefs.dot_input_precision(op.attrs), out)


@handles("dot")
def _dot(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    a, b, _ = op.operands
    return _matmul(st, op, st.get(a, np_dtype(a.type), 2), st.get(b, np_dtype(b.type), 2))


# ---- shared memory -------------------------------------------------------------------------------


@handles("shared_alloc", "shared_alloc_stages")
def _shared_alloc(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    rows, cols = op.results[0].type.shape  # shared_alloc_stages: its stages, one above the other
    return np.zeros((st.P, rows, cols), dtype=np_dtype(op.attrs["dtype"]))


@handles("copy_to_shared")
def _copy_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    buffer = op.operands[0]
    tile = st.env[buffer]
    values = _copied_tile(st, op, op.operands[1:], buffer.type, active)
    tile[active] = values[active]  # programs outside the loop's trip keep their tiles


def _copied_tile(st: _State, op: Op, operands: list[Operand], buffer_type: SharedType,
                 active: np.ndarray) -> np.ndarray:
    """What ``copy_to_shared`` (with these operands after the buffer) puts in
    a ``buffer_type`` tile of each program; global memory is read only for
    the ``active`` programs."""
    base, row_offset, col_offset, row_stride, row_bound, col_bound, fill = operands
    element = buffer_type.element
    n_rows, n_cols = buffer_type.shape
    shape = (st.P, n_rows, n_cols)

    def scalar(operand: Operand) -> Any:  # (P, 1, 1): one per program, over the tile
        return st.get(operand, np.dtype(np.int64), 2)

    rows = scalar(row_offset) + np.arange(n_rows).reshape(1, -1, 1)
    cols = scalar(col_offset) + np.arange(n_cols).reshape(1, 1, -1)
    inside = (rows < scalar(row_bound)) & (cols < scalar(col_bound))
    enabled = np.broadcast_to(_lanes(active, 2), shape) & inside
    values = np.array(st.full(fill, BlockType((n_rows, n_cols), element)))
    if enabled.any():
        offsets = rows * scalar(row_stride) + cols
        ptrs = np.broadcast_to(advance(st.get(base, ADDRESS, 2), offsets, np_dtype(element).itemsize), shape)
        values[enabled] = _gather(st, op, "copy from", ptrs, enabled, np_dtype(element))
    return values


@handles("copy_strided_to_shared")
def _copy_strided_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    buffer = op.operands[0]
    tile = st.env[buffer]
    values = _copied_strided_tile(st, op, op.operands[1:], buffer.type, active)
    tile[active] = values[active]


def _copied_strided_tile(st: _State, op: Op, operands: list[Operand], buffer_type: SharedType,
                         active: np.ndarray, index: Operand | None = None) -> np.ndarray:
    """What ``copy_strided_to_shared`` (with these operands after the
    buffer) puts in a ``buffer_type`` tile of each program; with ``index``,
    ``copy_gathered_to_shared``'s (its rows gathered, unwrapped)."""
    base, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound, row_wrap, col_wrap, fill = operands
    element = buffer_type.element
    n_rows, n_cols = buffer_type.shape
    shape = (st.P, n_rows, n_cols)

    def scalar(operand: Operand) -> Any:  # (P, 1, 1): one per program, over the tile
        return st.get(operand, np.dtype(np.int64), 2)

    def wrapped(coordinate: np.ndarray, wrap: Operand) -> np.ndarray:
        w = np.broadcast_to(scalar(wrap), coordinate.shape)
        with np.errstate(all="ignore"):  # a 0 wrap is none
            return np.where(w != 0, np.fmod(coordinate, np.where(w != 0, w, 1)), coordinate)

    rows = wrapped(scalar(row_offset) + np.arange(n_rows).reshape(1, -1, 1), row_wrap)
    cols = wrapped(scalar(col_offset) + np.arange(n_cols).reshape(1, 1, -1), col_wrap)
    row_lower, col_lower = op.attrs.get(LOWER_BOUNDS, (0, 0))
    inside = (rows < scalar(row_bound)) & (cols < scalar(col_bound))
    if row_lower:
        inside &= rows >= 0
    if col_lower:
        inside &= cols >= 0
    inside = np.broadcast_to(inside, shape)
    enabled = np.broadcast_to(_lanes(active, 2), shape) & inside
    values = np.array(st.full(fill, BlockType((n_rows, n_cols), element)))
    if enabled.any():
        if index is not None:  # gathered: row P is the index array's element P, read where P is in bounds
            rows = _gathered_rows(st, op, index, np.broadcast_to(rows, (st.P, n_rows, 1)),
                                  enabled.any(axis=2, keepdims=True))
        offsets = rows * scalar(row_stride) + cols * scalar(col_stride)
        ptrs = np.broadcast_to(advance(st.get(base, ADDRESS, 2), offsets, np_dtype(element).itemsize), shape)
        values[enabled] = _gather(st, op, "copy from", ptrs, enabled, np_dtype(element))
    return values


def _gathered_rows(st: _State, op: Op, index: Operand, positions: np.ndarray, enabled: np.ndarray) -> np.ndarray:
    """The index array's elements at ``positions`` (P, R, 1) where ``enabled``, 0 elsewhere, as int64."""
    dtype = np_dtype(index.type.pointee)
    ptrs = advance(st.get(index, ADDRESS, 2), positions, dtype.itemsize)
    rows = np.zeros(positions.shape, np.int64)
    rows[enabled] = _gather(st, op, "index from", np.broadcast_to(ptrs, positions.shape), enabled, dtype)
    return rows


def _gathered_operands(op: Op, operands: list[Operand]) -> tuple[list[Operand], Operand]:
    """A gathered copy's operands after the buffer as a strided copy's (no wraps), and its index."""
    base, index, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound, fill = operands
    return [base, row_offset, col_offset, row_stride, col_stride, row_bound, col_bound, Const(0), Const(0),
            fill], index


@handles("copy_gathered_to_shared")
def _copy_gathered_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    buffer = op.operands[0]
    operands, index = _gathered_operands(op, op.operands[1:])
    values = _copied_strided_tile(st, op, operands, buffer.type, active, index)
    st.env[buffer][active] = values[active]


@handles("barrier")
def _barrier(st: _State, op: Op, active: np.ndarray) -> None:
    return None  # the programs already run in lockstep


@handles("grid_dependency_wait")
@handles("grid_dependency_launch_dependents")
def _grid_dependency(st: _State, op: Op, active: np.ndarray) -> None:
    return None  # a launch here starts once the one before it has finished


@handles("dot_shared")
def _dot_shared(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    a, b, _ = op.operands
    return _matmul(st, op, _shared_tiles(st.env[a]), _shared_tiles(st.env[b]))


@handles("dot_rs")
def _dot_rs(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    a, b, _ = op.operands
    return _matmul(st, op, st.get(a, np_dtype(a.type), 2), _shared_tiles(st.env[b]))


# ---- pipelined K loops (the software-pipeline pass) --------------------------------------------------------
# A stage view is the buffer and each program's stage; copies write through it
# into the buffer, and a dot reads each program's stage out of it. An async
# copy completes at once here: programs run in lockstep, so the waits and
# commits that order it on the GPU have nothing to wait for.


@dataclass(frozen=True)
class _StageView:
    buffer: np.ndarray  # (P, stages * R, C)
    stage: np.ndarray  # (P,) int64
    rows: int

    def row_indices(self) -> np.ndarray:  # (P, R)
        return self.stage[:, None] * self.rows + np.arange(self.rows)[None, :]


def _shared_tiles(value: Any) -> np.ndarray:
    """Each program's (R, C) tile of a buffer or of a stage view of one."""
    if isinstance(value, _StageView):
        return value.buffer[np.arange(value.buffer.shape[0])[:, None], value.row_indices()]
    return value


@handles("stage_view")
def _stage_view(st: _State, op: Op, active: np.ndarray) -> _StageView:
    buffer, stage = op.operands
    stages = op.attrs["stages"]
    index = np.broadcast_to(st.get(stage, np.dtype(np.int64), 0), (st.P,)).copy()
    outside = active & ((index < 0) | (index >= stages))
    if outside.any():
        raise CompileError(f"stage {int(index[outside][0])} of a buffer of {stages} stages")
    index[~active] = 0  # programs not running this op read nothing through it
    return _StageView(st.env[buffer], index, op.results[0].type.shape[0])


@handles("async_copy_to_shared")
def _async_copy_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    target, *operands, pred = op.operands
    copying = active & np.broadcast_to(st.get(pred, np.dtype(bool), 0), (st.P,))
    _write_through(st, target, _copied_tile(st, op, operands, target.type, copying), copying)


@handles("async_copy_strided_to_shared")
def _async_copy_strided_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    target, *operands, pred = op.operands
    copying = active & np.broadcast_to(st.get(pred, np.dtype(bool), 0), (st.P,))
    _write_through(st, target, _copied_strided_tile(st, op, operands, target.type, copying), copying)


@handles("async_copy_gathered_to_shared")
def _async_copy_gathered_to_shared(st: _State, op: Op, active: np.ndarray) -> None:
    target, *rest, pred = op.operands
    copying = active & np.broadcast_to(st.get(pred, np.dtype(bool), 0), (st.P,))
    operands, index = _gathered_operands(op, rest)
    _write_through(st, target, _copied_strided_tile(st, op, operands, target.type, copying, index), copying)


def _write_through(st: _State, target: Operand, values: np.ndarray, copying: np.ndarray) -> None:
    """An async copy's tiles into its buffer or stage view, for the ``copying`` programs."""
    view = st.env[target]
    programs = np.nonzero(copying)[0]
    if isinstance(view, _StageView):
        view.buffer[programs[:, None], view.row_indices()[programs]] = values[programs]
    else:
        view[programs] = values[programs]


@handles("async_commit", "async_wait", "wgmma_wait", "proxy_fence")
def _async_order(st: _State, op: Op, active: np.ndarray) -> None:
    return None  # every copy is already complete


# ---- loops ----------------------------------------------------------------------------------------


@handles("for")
def _for(st: _State, op: Op, active: np.ndarray) -> list[np.ndarray]:
    index_type = for_index(op).type
    # Copies: a store in the body must not change what the loop read before it.
    start, stop, step = (np.array(st.full(x, index_type)) for x in for_bounds(op))
    carried = [np.array(st.full(init, result.type)) for init, result in zip(for_inits(op), op.results)]
    body, terminator = for_body(op), for_yield(op)
    yields = terminator.operands if terminator is not None else []
    if len(yields) != len(carried):
        raise CompileError(f"a loop carries {len(carried)} value(s) but yields {len(yields)}", op.loc)
    index = start
    running = active & (index < stop)
    if (running & (step <= 0)).any():
        raise CompileError("a runtime loop needs a positive step", op.loc)
    while running.any():
        st.env[for_index(op)] = index
        for arg, value in zip(for_carried(op), carried):
            st.env[arg] = value
        st.run_block(body, running)
        carried = [
            np.where(_lanes(running, _rank(result.type)), st.full(y, result.type), old)
            for y, old, result in zip(yields, carried, op.results)
        ]
        index = np.where(running, index + step, index)
        running = running & (index < stop)
    return carried


# ---- lang-surface: hints, bitcasts, printing and assertions ----------------------------------


@handles("hint")
def _hint(st: _State, op: Op, active: np.ndarray) -> Any:
    (x,) = op.operands
    if isinstance(x, Const):
        return st.full(x, op.result.type)
    return st.env[x]  # the value itself (a ramp stays a ramp)


@handles("trans")
def _trans(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    return np.swapaxes(st.full(x, _operand_type(x)), 1, 2)  # axis 0 is the program


# ---- shape ops: axis 0 of every tile is the program ---------------------------------------


@handles("permute")
def _permute(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    return np.transpose(st.full(x, _operand_type(x)), (0, *(d + 1 for d in op.attrs["dims"])))


@handles("reshape")
def _reshape(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    return np.reshape(st.full(x, _operand_type(x)), (st.P, *op.attrs["shape"]))  # row-major


@handles("split")
def _split(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    return st.full(x, _operand_type(x))[..., op.attrs["index"]]


@handles("join")
def _join(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    a, b = op.operands
    return np.stack([st.full(a, _operand_type(a)), st.full(b, _operand_type(b))], axis=-1)


@handles("broadcast_to")
def _broadcast_to(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    return st.full(op.operands[0], op.result.type)


@handles("histogram")
def _histogram(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    """Each program's counts (opdefs.histogram_counts: np.bincount of the
    counted values)."""
    x, mask = op.operands
    values = st.full(x, _operand_type(x))
    counted = None if mask is None else st.full(mask, BlockType(_operand_type(x).shape, BOOL))
    return opdefs.histogram_counts(np, values, counted, op.attrs["num_bins"])


@handles("inline_asm")
@handles("inline_asm_volatile")
def _inline_asm(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    raise CompileError("tl.inline_asm_elementwise runs PTX, which the interpreter cannot: launch the kernel on "
                       "the GPU (backend='cuda')", op.loc)


@handles("gather")
def _gather_op(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    """Each program's gather; an index outside the source's axis is an error
    naming the program and element (on the GPU it reads what is there)."""
    src, index = op.operands
    axis = op.attrs["axis"]
    values = st.full(src, _operand_type(src))
    indices = st.full(index, _operand_type(index)).astype(np.int64)
    size = shape_of(_operand_type(src))[axis]
    enabled = np.broadcast_to(_lanes(active, indices.ndim - 1), indices.shape)
    outside = enabled & ((indices < 0) | (indices >= size))
    if outside.any():
        first = int(indices[outside][0])
        _fault(st, op, f"gather index {first} is outside the source's axis {axis} (0 to {size - 1})",
               indices, enabled, outside)
    return opdefs.gather_values(np, values, np.where(enabled, indices, 0), axis)


@handles("bitcast")
def _bitcast(st: _State, op: Op, active: np.ndarray) -> np.ndarray:
    (x,) = op.operands
    t = op.result.type
    value = st.full(x, _operand_type(x))
    return np.ascontiguousarray(value).view(np_dtype(t))


def _element_text(value: Any, t: ScalarType, hex_: bool) -> str:
    """One element as the CUDA backend's printf spells it (%f, %d, %lld, 0x%x)."""
    if isinstance(t, PointerType):
        return "0x%x" % int(value)
    if hex_ and not t.is_float:
        return "0x%x" % (int(value) & ((1 << max(t.bits, 8)) - 1))
    if t.is_float:
        return "%f" % float(value)
    return "%d" % int(value)


def device_print_line(coords: tuple[int, int, int], index: tuple[int, ...], prefix: str, value: str) -> str:
    """One line of tl.device_print, as the interpreter and the GPU print it."""
    where = f"pid ({coords[0]}, {coords[1]}, {coords[2]})"
    if index:
        where += " idx (" + ", ".join(str(i) for i in index) + ")"
    if not value:
        return f"{where}{prefix}"
    return f"{where}{opdefs.device_print_label(prefix)} {value}"


@handles("device_print")
def _device_print(st: _State, op: Op, active: np.ndarray) -> None:
    (value,) = op.operands
    prefix = printable(op.attrs["prefix"])
    g0, g1, _ = st.grid
    lines: list[str] = []
    if value is None:
        values, t, shape = None, None, ()
    else:
        t = _operand_type(value)
        shape = shape_of(t)
        values = st.full(value, t)
    element = element_of(t) if t is not None else None
    for p in np.flatnonzero(np.broadcast_to(active, (st.P,))):
        program = st.first + int(p)
        coords = (program % g0, (program // g0) % g1, program // (g0 * g1))
        if values is None:
            lines.append(device_print_line(coords, (), prefix, ""))
            continue
        row = values[p]
        for index in np.ndindex(*shape):
            lines.append(device_print_line(coords, index, prefix,
                                           _element_text(row[index], concrete(element), op.attrs["hex"])))
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


@handles("device_assert")
def _device_assert(st: _State, op: Op, active: np.ndarray) -> None:
    cond, mask = op.operands
    t = with_element(shape_of(_operand_type(cond)), BOOL)
    enabled = _enabled(st, mask, active, t)
    failed = enabled & ~st.full(cond, t)
    if _any(failed):
        msg = printable(op.attrs["msg"])
        _fault(st, op, "device_assert failed" + (f": {msg}" if msg else ""), failed, enabled, failed[enabled])


# ---- if and while ---------------------------------------------------------------------------------
# Each program takes its own branch and runs its own number of iterations:
# a region runs for the programs whose mask is set (stores are masked by it);
# values are computed for every program and chosen per program.


@handles("if")
def _if(st: _State, op: Op, active: np.ndarray) -> list[np.ndarray]:
    cond = np.array(st.full(op.operands[0], BOOL))
    chosen = []
    for region, mask in zip(op.regions, (active & cond, active & ~cond)):
        if not mask.any():
            chosen.append(None)
            continue
        st.run_block(region, mask)
        terminator = region.ops[-1]
        # Copies: a later store must not change a yielded load.
        chosen.append([np.array(st.full(y, r.type)) for y, r in zip(terminator.operands, op.results)])
    then_values, else_values = chosen
    results = []
    for i, result in enumerate(op.results):
        if then_values is None and else_values is None:
            results.append(np.zeros((st.P, *shape_of(result.type)), np_dtype(result.type)))
        elif else_values is None:
            results.append(then_values[i])
        elif then_values is None:
            results.append(else_values[i])
        else:
            results.append(np.where(_lanes(cond, _rank(result.type)), then_values[i], else_values[i]))
    return results


@handles("while")
def _while(st: _State, op: Op, active: np.ndarray) -> list[np.ndarray]:
    before, after = op.regions
    carried = [np.array(st.full(init, result.type)) for init, result in zip(op.operands, op.results)]
    condition, terminator = before.ops[-1], after.ops[-1]
    running = active.copy()
    while True:
        writes, was_running = st.writes, running
        for arg, value in zip(before.args, carried):
            st.env[arg] = value
        st.run_block(before, running)
        running = running & np.array(st.full(condition.operands[0], BOOL))
        if not running.any():
            return carried
        for arg, value in zip(after.args, carried):
            st.env[arg] = value
        st.run_block(after, running)
        previous = carried
        carried = [
            np.where(_lanes(running, _rank(result.type)), st.full(y, result.type), old)
            for y, old, result in zip(terminator.operands, carried, op.results)
        ]
        if st.writes == writes and np.array_equal(running, was_running) \
                and all(new.tobytes() == old.tobytes() for new, old in zip(carried, previous)):
            # The next iteration would repeat this one exactly: on the GPU
            # another program may change the memory it waits for, but here
            # programs run one after another and the ones after it have not.
            raise CompileError("this while loop never ends in the interpreter: an iteration changed neither "
                               "memory nor its carried values (it waits for memory only another program can "
                               "change; the interpreter runs programs one after another, so a program cannot "
                               "wait for a later one)", op.loc)


# ---- scans: reduce and scan with a combine region ---------------------------------------------
# The combine region runs on whole arrays at once: its arguments are bound to
# every pair being combined (flattened, program-major, so the kernel's scalar
# parameters repeat per program), and its ops run as they would on scalars.


def _run_combine(st: _State, op: Op, left: list[np.ndarray], right: list[np.ndarray]) -> list[np.ndarray]:
    body = op.regions[0]
    shape = np.broadcast_shapes(*(a.shape for a in (*left, *right)))
    size = int(np.prod(shape))
    sub = _State.__new__(_State)
    sub.__dict__.update(st.__dict__)
    sub.P = size
    sub.env = {}
    per = size // st.P
    for inner in walk(body):
        for operand in inner.operands:
            if isinstance(operand, Param) and operand not in sub.env:
                sub.env[operand] = np.repeat(st.env[operand], per)
    for arg, value in zip(body.args, (*left, *right)):
        sub.env[arg] = np.broadcast_to(value, shape).reshape(size).astype(np_dtype(arg.type), copy=False)
    sub.run_block(body, np.ones(size, dtype=bool))
    terminator = body.ops[-1]
    return [np.array(sub.full(y, arg.type)).reshape(shape) for y, arg in zip(terminator.operands, body.args)]


def _along(x: np.ndarray, axis: int, part: slice) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[axis] = part
    return x[tuple(index)]


@handles("reduce")
def _reduce_combine(st: _State, op: Op, active: np.ndarray) -> list[np.ndarray]:
    """A pairwise tree along the axis, neighbours combined in order (an odd
    last element joins the next round), so an associative combine that does
    not commute is still right."""
    xs = [np.array(st.full(x, x.type)) for x in op.operands]
    axis = op.attrs.get("axis")
    if axis is None:
        xs = [x.reshape(st.P, -1) for x in xs]
    ax = 1 if axis is None else axis + 1
    while xs[0].shape[ax] > 1:
        n = xs[0].shape[ax]
        even = n - n % 2
        combined = _run_combine(st, op, [_along(x, ax, slice(0, even, 2)) for x in xs],
                                [_along(x, ax, slice(1, even, 2)) for x in xs])
        if n % 2:
            combined = [np.concatenate([c, _along(x, ax, slice(n - 1, n))], axis=ax) for c, x in zip(combined, xs)]
        xs = combined
    return [np.squeeze(x, axis=ax) for x in xs]


@handles("scan")
def _scan(st: _State, op: Op, active: np.ndarray) -> list[np.ndarray]:
    """An inclusive scan in log2(n) rounds (each element combined with the
    one d before it: combine(earlier, later)), which keeps the order of an
    associative combine; reverse scans the flipped tiles and flips back."""
    xs = [np.array(st.full(x, x.type)) for x in op.operands]
    ax = op.attrs["axis"] + 1
    reverse = op.attrs.get("reverse", False)
    if reverse:
        xs = [np.flip(x, ax) for x in xs]
    n = xs[0].shape[ax]
    d = 1
    while d < n:
        combined = _run_combine(st, op, [_along(x, ax, slice(0, n - d)) for x in xs],
                                [_along(x, ax, slice(d, n)) for x in xs])
        xs = [np.concatenate([_along(x, ax, slice(0, d)), c], axis=ax) for x, c in zip(xs, combined)]
        d *= 2
    if reverse:
        xs = [np.flip(x, ax) for x in xs]
    return xs
