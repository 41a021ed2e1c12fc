"""Kernels with runtime control flow (if/elif/else, while, early return,
runtime and negative loop steps, a rebound loop variable, conditional
expressions, long constant ranges), each with the
arguments of one launch and a NumPy reference of what it stores. Shared by
the interpreter, nvcc and GPU tests (tests/test_control_flow*.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Case:
    source: str  # a kernel body; the standard imports are added
    name: str  # the @jit function
    defines: dict
    grid: tuple
    args: Callable[[np.random.Generator], list]  # fresh arguments
    expected: Callable[[list], dict]  # argument index -> expected array, from the inputs
    signature: str | None = None


def _rand(rng, n):
    return rng.standard_normal(n).astype(np.float32)


# ---- if / elif / else: each program takes its own branch --------------------------------------

IF_ELIF_ELSE = """
@mytriton.jit
def branches(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    scale = 1.0
    if pid % 3 == 0:
        scale = 2.0
        x = x + 10.0
    elif pid % 3 == 1:
        scale = -1.0
    else:
        x = tl.abs(x)
    tl.store(out_ptr + offs, x * scale, mask=mask)
"""


def _if_expected(args):
    x, _, n = args
    out = x.copy()
    for pid in range(0, (n + 31) // 32):
        s = slice(pid * 32, min(n, pid * 32 + 32))
        if pid % 3 == 0:
            out[s] = (x[s] + 10.0) * 2.0
        elif pid % 3 == 1:
            out[s] = -x[s]
        else:
            out[s] = np.abs(x[s])
    return {1: out}


# ---- early return: rows past the end are left alone (tutorial cross-entropy style) -------------

EARLY_RETURN = """
@mytriton.jit
def row_scale(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows:
        return
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    if row % 2 == 1:
        if row % 4 == 1:
            return
        x = x * 3.0
    total = tl.sum(x, axis=0)
    tl.store(out_ptr + row * n_cols + cols, x - total, mask=mask)
"""


def _return_expected(args):
    x, out, n_rows, n_cols = args
    x = x.reshape(-1, n_cols)
    result = out.reshape(-1, n_cols).copy()
    for row in range(n_rows):
        if row % 2 == 1 and row % 4 == 1:
            continue
        v = x[row] * (3.0 if row % 2 == 1 else 1.0)
        result[row] = v - v.sum(dtype=np.float32)
    return {1: result.reshape(-1)}


# ---- while: per-program trip counts, a carried tile and a carried scalar -----------------------

WHILE_LOOP = """
@mytriton.jit
def repeat_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    acc = tl.zeros((BLOCK,), tl.float32)
    i = 0
    while i < pid + 1:
        acc = acc + x
        i += 1
    tl.store(out_ptr + offs, acc + i, mask=mask)
"""


def _while_expected(args):
    x, _, n = args
    out = np.empty_like(x)
    for pid in range(0, (n + 31) // 32):
        s = slice(pid * 32, min(n, pid * 32 + 32))
        acc = np.zeros(s.stop - s.start, np.float32)
        for _ in range(pid + 1):
            acc = acc + x[s]
        out[s] = acc + (pid + 1)
    return {1: out}


# ---- runtime step, negative constant step, rebound loop variable ------------------------------

LOOP_STEPS = """
@mytriton.jit
def steps(x_ptr, out_ptr, order_ptr, n, step, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(pid * BLOCK, n, step):
        start = start * 1
        acc += tl.load(x_ptr + start + cols, mask=start + cols < n, other=0.0)
    tl.store(out_ptr + pid * BLOCK + cols, acc)
    count = 0
    for i in range(n - 1, -1, -1):
        count += 1
        if pid == 0:
            tl.store(order_ptr + i, count)
"""


def _steps_expected(args):
    x, _, _, n, step = args
    out = np.zeros(4 * 32, np.float32)
    for pid in range(4):
        for start in range(pid * 32, n, step):
            chunk = x[start:min(n, start + 32)]
            out[pid * 32:pid * 32 + len(chunk)] += chunk
    order = np.arange(n, 0, -1).astype(np.int32)
    return {1: out, 2: order}


# ---- a conditional expression on runtime scalars: only the side it picks runs ------------------

CONDITIONAL_EXPRESSION = """
@mytriton.jit
def pick(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    first = tl.load(x_ptr + pid * BLOCK) if pid * BLOCK < n else 0.0  # past the end: not loaded
    scale = 2.0 if pid % 2 == 0 else -1.0
    tile = x * 3.0 if first > 0.0 else x - 1.0
    tl.store(out_ptr + offs, tile.to(tile.dtype) * scale + first, mask=mask)
"""


def _pick_expected(args):
    x, out, n = args
    out = out.copy()
    for pid in range(5):
        s = slice(pid * 32, min(n, pid * 32 + 32))
        first = x[pid * 32] if pid * 32 < n else 0.0
        tile = x[s] * 3.0 if first > 0.0 else x[s] - 1.0
        out[s] = tile * (2.0 if pid % 2 == 0 else -1.0) + first
    return {1: out}


# ---- a range with constant bounds and more than 8 iterations: a loop, as in Triton ------------
# A ragged walk over a 1000-wide row in 64-wide steps, and a descending one whose order matters.

LONG_CONSTANT_RANGES = """
@mytriton.jit
def walk(x_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        acc += tl.load(x_ptr + start + cols, mask=start + cols < N, other=0.0)
    tl.store(out_ptr + cols, acc)
    h = 0.0
    for i in range(N - 1, N - 13, -1):
        h = h * 0.5 + tl.load(x_ptr + i)
    tl.store(out_ptr + BLOCK, h)
"""


def _walk_expected(args):
    x, out = args
    out = out.copy()
    padded = np.concatenate([x, np.zeros(-len(x) % 64, np.float32)])
    out[:64] = padded.reshape(-1, 64).sum(axis=0)
    h = np.float32(0.0)
    for i in range(len(x) - 1, len(x) - 13, -1):
        h = h * np.float32(0.5) + x[i]
    out[64] = h
    return {1: out}


CASES = {
    "if_elif_else": Case(IF_ELIF_ELSE, "branches", {"BLOCK": 32}, (7,),
                         lambda rng: [_rand(rng, 200), np.zeros(200, np.float32), 200], _if_expected),
    "early_return": Case(EARLY_RETURN, "row_scale", {"BLOCK": 16}, (12,),
                         lambda rng: [_rand(rng, 9 * 13), np.full(12 * 13, 7.0, np.float32), 9, 13],
                         _return_expected),
    "while_loop": Case(WHILE_LOOP, "repeat_add", {"BLOCK": 32}, (5,),
                       lambda rng: [_rand(rng, 150), np.zeros(150, np.float32), 150], _while_expected),
    "loop_steps": Case(LOOP_STEPS, "steps", {"BLOCK": 32}, (4,),
                       lambda rng: [_rand(rng, 300), np.zeros(128, np.float32), np.zeros(300, np.int32), 300, 96],
                       _steps_expected, signature="*fp32, *fp32, *i32, i32, i32"),
    "conditional_expression": Case(CONDITIONAL_EXPRESSION, "pick", {"BLOCK": 32}, (5,),
                                   lambda rng: [_rand(rng, 100), np.zeros(100, np.float32), 100], _pick_expected),
    "long_constant_ranges": Case(LONG_CONSTANT_RANGES, "walk", {"N": 1000, "BLOCK": 64}, (1,),
                                 lambda rng: [_rand(rng, 1000), np.zeros(65, np.float32)], _walk_expected),
}
