"""Axis information: what is known about the integers and addresses a tile
holds, per dimension, as Triton's AxisInfo analysis computes it.

Along dimension ``d`` of a tile (every 1-D fibre along ``d``):

- ``contiguity[d] = c``: the fibre splits into groups of ``c`` elements
  starting at multiples of ``c``, each group ``a, a+1, ..., a+c-1``;
- ``divisibility[d] = v``: the first element of each such group is a
  multiple of ``v`` (for ``c == 1``: every element); for pointers in bytes;
- ``constancy[d] = k``: the fibre splits into groups of ``k`` equal elements
  starting at multiples of ``k``.

All three are powers of two. The facts come from parameters
(``{divisibility=16}``: what a launch specialised on), literals, ``arange``,
``program_id``, broadcasting, ``add``/``sub``/``mul``/``addptr``,
comparisons, ``expand_dims``, widening integer casts, a loop's induction variable and the ``hint``
ops (``tl.multiple_of``, ``tl.max_contiguous``, ``tl.max_constancy``);
anything else knows nothing (1, 1, 1). Wrong facts would make the CUDA back
end issue misaligned vector accesses, so every rule errs towards 1.

``vector_width`` turns the facts into the number of elements a thread may
move with one access of at most 16 bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Any

from mytriton.ir.ssa import Const, Kernel, Op, Operand, walk
from mytriton.types import BlockType, PointerType, ScalarType, element_of

# What "divisible by everything" (the literal 0, arange from 0) is capped at.
MAX_DIVISIBILITY = 2 ** 30
# The widest global access a thread makes: 16 bytes (LDG.E.128 / STG.E.128).
MAX_ACCESS_BYTES = 16


def pow2_divisor(n: int) -> int:
    """The largest power of two dividing ``n`` (capped; 0 is divisible by all)."""
    if n == 0:
        return MAX_DIVISIBILITY
    return min(abs(n) & -abs(n), MAX_DIVISIBILITY)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    # A scalar (rank 0): its divisibility; tiles broadcast it.
    scalar_divisibility: int = 1
    # A literal's value, when known (``mul`` by 1 keeps contiguity).
    constant: Any = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)


def unknown(shape: tuple[int, ...]) -> AxisInfo:
    ones = (1,) * len(shape)
    return AxisInfo(ones, ones, ones)


def scalar(divisibility: int, constant: Any = None) -> AxisInfo:
    return AxisInfo((), (), (), divisibility, constant)


def shape_of(value: Operand) -> tuple[int, ...]:
    t = getattr(value, "type", None)
    return t.shape if isinstance(t, BlockType) else ()


def broadcast(info: AxisInfo, own: tuple[int, ...], shape: tuple[int, ...]) -> AxisInfo:
    """``info`` of a value of shape ``own`` read as ``shape`` (NumPy
    broadcasting: shapes align on the right; an extent-1 dimension repeats,
    so it is constant along the broadcast)."""
    if not shape:
        return info
    if not own:
        return AxisInfo((1,) * len(shape), (info.scalar_divisibility,) * len(shape), tuple(shape),
                        constant=info.constant)
    lead = len(shape) - len(own)
    contiguity, divisibility, constancy = [], [], []
    for d, extent in enumerate(shape):
        e = d - lead
        if e < 0:
            # A dimension the operand lacks: each of its elements repeats, and
            # every element is one of the operand's (whose facts hold for all).
            contiguity.append(1)
            divisibility.append(_every_element(info))
            constancy.append(extent)
        elif own[e] == 1 and extent > 1:
            contiguity.append(1)
            divisibility.append(info.divisibility[e])
            constancy.append(extent)
        else:
            contiguity.append(info.contiguity[e])
            divisibility.append(info.divisibility[e])
            constancy.append(info.constancy[e])
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant=info.constant)


def _every_element(info: AxisInfo) -> int:
    """A power of two dividing every element: along a dimension without
    contiguous groups, the divisibility holds for each element."""
    found = [v for c, v in zip(info.contiguity, info.divisibility) if c == 1]
    return max(found) if found else 1


class AxisAnalysis:
    """Axis information of every value of a kernel, computed once in
    program order (regions after the op that owns them)."""

    def __init__(self, kernel: Kernel) -> None:
        self.info: dict[Any, AxisInfo] = {}
        for p in kernel.params:
            divisibility = p.attrs.get("divisibility", 1)
            if isinstance(p.type, PointerType):
                divisibility = max(divisibility, p.type.pointee.nbytes)  # C's alignment of the element
            self.info[p] = scalar(divisibility)
        for op in walk(kernel.body):
            self.visit(op)

    # ---- reading ------------------------------------------------------------------------
    def of(self, operand: Operand, shape: tuple[int, ...] | None = None) -> AxisInfo:
        """``operand``'s facts, broadcast to ``shape`` when given."""
        own = shape_of(operand)
        if isinstance(operand, Const):
            value = operand.value
            exact = isinstance(value, int) and not isinstance(value, bool)
            found = scalar(pow2_divisor(value) if exact else 1, value)
        else:
            found = self.info.get(operand) or unknown(own)
        return broadcast(found, own, shape) if shape is not None else found

    # ---- rules ---------------------------------------------------------------------------
    def visit(self, op: Op) -> None:
        if op.name == "for":
            start, step = self.of(op.operands[0]), self.of(op.operands[2])
            index = op.regions[0].args[0]
            self.info[index] = scalar(gcd(start.scalar_divisibility, step.scalar_divisibility))
            return
        if not op.results or len(op.results) != 1:
            return
        result = op.results[0]
        shape = shape_of(result)
        rule = getattr(self, "_" + op.name, None)
        found = rule(op, shape) if rule is not None else None
        if found is None:
            found = self._elementwise_default(op, shape)
        self.info[result] = _capped(found, shape)

    def _elementwise_default(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        return unknown(shape) if shape else scalar(1)

    def _arange(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        start = op.attrs["start"]
        return AxisInfo((shape[0],), (pow2_divisor(start),), (1,))

    def _full(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        return self.of(op.operands[0], shape)

    def _broadcast_to(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        return self.of(op.operands[0], shape)

    def _expand_dims(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        x = self.of(op.operands[0])
        axis = op.attrs["axis"]
        if not x.rank:
            return broadcast(x, (), shape)
        every = _every_element(x)

        def insert(values: tuple[int, ...], new: int) -> tuple[int, ...]:
            return values[:axis] + (new,) + values[axis:]

        return AxisInfo(insert(x.contiguity, 1), insert(x.divisibility, every), insert(x.constancy, 1))

    def _hint(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        x = self.of(op.operands[0], shape)
        values = tuple(pow2_divisor(v) for v in op.attrs["values"])
        kind = op.attrs["kind"]
        if not shape:
            return scalar(values[0]) if kind == "multiple_of" else x
        if kind == "multiple_of":
            return AxisInfo(x.contiguity, values, x.constancy)
        if kind == "max_contiguous":
            return AxisInfo(values, x.divisibility, x.constancy)
        return AxisInfo(x.contiguity, x.divisibility, values)

    def _cast(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        """A widening integer cast (``.to(tl.int64)`` against overflow) keeps
        the facts: the same values, in more bits."""
        source, target = element_of(op.operands[0].type), element_of(op.result.type)
        if isinstance(source, ScalarType) and isinstance(target, ScalarType) and source.is_int and target.is_int \
                and not source.is_bool and target.bits >= source.bits:
            return self.of(op.operands[0], shape)
        return None

    def _binary(self, op: Op, shape: tuple[int, ...]) -> tuple[AxisInfo, AxisInfo]:
        return self.of(op.operands[0], shape), self.of(op.operands[1], shape)

    def _add(self, op: Op, shape: tuple[int, ...], scale: int = 1) -> AxisInfo:
        a, b = self._binary(op, shape)
        if not shape:
            return scalar(gcd(a.scalar_divisibility, b.scalar_divisibility * scale))
        return AxisInfo(
            tuple(max(gcd(ac, bk), gcd(ak, bc)) for ac, ak, bc, bk in
                  zip(a.contiguity, a.constancy, b.contiguity, b.constancy)),
            tuple(gcd(ad, bd * scale) for ad, bd in zip(a.divisibility, b.divisibility)),
            tuple(gcd(ak, bk) for ak, bk in zip(a.constancy, b.constancy)))

    def _sub(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        a, b = self._binary(op, shape)
        if not shape:
            return scalar(gcd(a.scalar_divisibility, b.scalar_divisibility))
        # Only a contiguous minus a constant stays contiguous.
        return AxisInfo(
            tuple(gcd(ac, bk) for ac, bk in zip(a.contiguity, b.constancy)),
            tuple(gcd(ad, bd) for ad, bd in zip(a.divisibility, b.divisibility)),
            tuple(gcd(ak, bk) for ak, bk in zip(a.constancy, b.constancy)))

    def _addptr(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        pointee = element_of(op.operands[0].type).pointee
        return self._add(op, shape, scale=pointee.nbytes)

    def _mul(self, op: Op, shape: tuple[int, ...]) -> AxisInfo:
        a, b = self._binary(op, shape)
        if b.constant == 1 and not isinstance(b.constant, bool):
            return a
        if a.constant == 1 and not isinstance(a.constant, bool):
            return b
        if not shape:
            return scalar(min(a.scalar_divisibility * b.scalar_divisibility, MAX_DIVISIBILITY))
        # A contiguous group's elements are not all multiples of its first's divisor.
        da = tuple(d if c == 1 else 1 for c, d in zip(a.contiguity, a.divisibility))
        db = tuple(d if c == 1 else 1 for c, d in zip(b.contiguity, b.divisibility))
        return AxisInfo((1,) * len(shape), tuple(min(x * y, MAX_DIVISIBILITY) for x, y in zip(da, db)),
                        tuple(gcd(ak, bk) for ak, bk in zip(a.constancy, b.constancy)))

    def _cmp(self, op: Op, shape: tuple[int, ...], left_contiguous_ok: bool,
             right_contiguous_ok: bool) -> AxisInfo | None:
        if not shape:
            return None
        a, b = self._binary(op, shape)
        constancy = []
        for d in range(len(shape)):
            k = gcd(a.constancy[d], b.constancy[d])
            # a contiguous, b constant over groups whose first elements and b
            # are multiples of m: a + t (t < m) lies on one side of b for all t.
            if left_contiguous_ok and a.contiguity[d] > 1:
                k = max(k, min(a.contiguity[d], a.divisibility[d], b.divisibility[d], b.constancy[d]))
            if right_contiguous_ok and b.contiguity[d] > 1:
                k = max(k, min(b.contiguity[d], b.divisibility[d], a.divisibility[d], a.constancy[d]))
            constancy.append(k)
        return AxisInfo((1,) * len(shape), (1,) * len(shape), tuple(constancy))

    # x < n and x >= n keep their value over [m*j, m*j + m) when n is a multiple
    # of m; n <= x and n > x likewise. (x <= n, x > n, ==, != need both constant.)
    def _cmp_lt(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, True, False)

    def _cmp_ge(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, True, False)

    def _cmp_le(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, False, True)

    def _cmp_gt(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, False, True)

    def _cmp_eq(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, False, False)

    def _cmp_ne(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        return self._cmp(op, shape, False, False)

    def _logical(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        if not shape:
            return None
        a, b = self._binary(op, shape)
        return AxisInfo((1,) * len(shape), (1,) * len(shape),
                        tuple(gcd(ak, bk) for ak, bk in zip(a.constancy, b.constancy)))

    _and = _or = _logical

    def _where(self, op: Op, shape: tuple[int, ...]) -> AxisInfo | None:
        if not shape:  # a scalar choice: a multiple of what both choices are
            a, b = (self.of(o) for o in op.operands[1:])
            return scalar(gcd(a.scalar_divisibility, b.scalar_divisibility))
        c, a, b = (self.of(o, shape) for o in op.operands)
        every_a, every_b = _every_element(a), _every_element(b)
        return AxisInfo((1,) * len(shape), (gcd(every_a, every_b),) * len(shape),
                        tuple(gcd(gcd(ck, ak), bk) for ck, ak, bk in zip(c.constancy, a.constancy, b.constancy)))


def _capped(info: AxisInfo, shape: tuple[int, ...]) -> AxisInfo:
    """Groups no longer than the dimension; every fact a power of two."""
    if not shape:
        return info
    def p2(n: int) -> int:
        return 1 << (max(1, n).bit_length() - 1)
    return AxisInfo(tuple(min(p2(c), e) for c, e in zip(info.contiguity, shape)),
                    tuple(pow2_divisor(v) for v in info.divisibility),
                    tuple(min(p2(k), e) for k, e in zip(info.constancy, shape)),
                    constant=info.constant)


def vector_width(analysis: AxisAnalysis, op: Op, dim: int | None = None) -> int:
    """How many consecutive elements of a load's or a store's tile (along
    ``dim``, by default its last dimension) one thread may move with a single
    access of at most 16 bytes: contiguous, aligned to the access size, and
    under one mask value (Triton's getPtrContiguity, getPtrAlignment and
    getMaskAlignment). 1 when the facts are missing."""
    ptr = op.operands[0]
    shape = shape_of(ptr)
    if not shape:
        return 1
    pointee = element_of(ptr.type).pointee
    if not isinstance(pointee, ScalarType):
        return 1
    nbytes = pointee.nbytes
    info = analysis.of(ptr, shape)
    d = len(shape) - 1 if dim is None else dim
    width = min(info.contiguity[d], max(1, info.divisibility[d] // nbytes), MAX_ACCESS_BYTES // nbytes, shape[d])
    mask = op.operands[1] if op.name == "load" else (op.operands[2] if len(op.operands) > 2 else None)
    if mask is not None and not isinstance(mask, Const):
        width = min(width, analysis.of(mask, shape).constancy[d])
    if isinstance(mask, Const) and mask.value is not True:
        return 1
    return max(1, width)


def contiguous_dim(analysis: AxisAnalysis, op: Op) -> int:
    """The dimension along which a load's or a store's addresses run
    contiguously, as Triton's coalescing orders an access by its pointer's
    contiguity: the last one unless another proves a longer run (a tile
    stored column-major, `ptr + rows[:, None] + cols[None, :] * stride`)."""
    ptr = op.operands[0]
    shape = shape_of(ptr)
    if not shape:
        return 0
    contiguity = analysis.of(ptr, shape).contiguity
    last = len(shape) - 1
    best = max(range(len(shape)), key=lambda d: (contiguity[d], d == last))
    return best if contiguity[best] > contiguity[last] else last
