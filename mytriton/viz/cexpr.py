"""Evaluating the CUDA back end's index expressions in NumPy.

The layouts' coordinates (``thread_coordinates.py``), a shared buffer's
element placement (``dots.place``) and the mma fragments' addresses
(``mma.py``) are C expressions over names such as ``threadIdx.x``, ``k``,
``lane``. The pictures evaluate those very expressions for every thread
and slot at once, so they show what the generated CUDA does, not a second
account of it. The grammar is the small subset those modules write:
integers, names (dots allowed), parentheses, ``+ - * / %`` (C's integer
division on non-negative values), ``^``, ``<``, ``==`` and ``&&``.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(&&|==|<=|>=|[-+*/%^()<>]))")
# Binding power of each binary operator, loosest first (C's order).
_POWER = {"&&": 1, "==": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "^": 2, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


class ExpressionError(ValueError):
    """An expression outside the subset (a bug in the caller, never user input)."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        out.append(match.group(match.lastindex or 0))
        pos = match.end()
    return out


def evaluate(text: str, env: Mapping[str, Any]) -> Any:
    """``text`` with its names bound by ``env`` (ints or integer arrays, which
    broadcast); comparisons give booleans."""
    tokens = _tokens(text)
    pos = 0

    def atom() -> Any:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token == "(":
            value = binary(0)
            if pos >= len(tokens) or tokens[pos] != ")":
                raise ExpressionError(f"unbalanced parentheses in {text!r}")
            pos += 1
            return value
        if token == "-":
            return -atom()
        if token.isdigit():
            return int(token)
        if token in env:
            return env[token]
        raise ExpressionError(f"unknown name {token!r} in {text!r}")

    def binary(floor: int) -> Any:
        nonlocal pos
        left = atom()
        while pos < len(tokens) and tokens[pos] in _POWER and _POWER[tokens[pos]] > floor:
            op = tokens[pos]
            pos += 1
            right = binary(_POWER[op])
            left = _apply(op, left, right)
        return left

    value = binary(0)
    if pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[pos]!r} in {text!r}")
    return value


def _apply(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return np.floor_divide(a, b)  # C's division on the non-negative indices these are
    if op == "%":
        return np.remainder(a, b)
    if op == "^":
        return np.bitwise_xor(a, b)
    if op == "<":
        return np.less(a, b)
    if op == "<=":
        return np.less_equal(a, b)
    if op == ">":
        return np.greater(a, b)
    if op == ">=":
        return np.greater_equal(a, b)
    if op == "==":
        return np.equal(a, b)
    return np.logical_and(a, b)  # &&
