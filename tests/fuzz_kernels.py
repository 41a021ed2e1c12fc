"""A generator of well-typed kernels for the fuzzers: kernel source text in the
supported language, with launch arguments (random non-zero data, ragged sizes,
a grid) and, for every kernel, a NumPy reference of what it stores.

The generator draws every choice through a ``Chooser``, so the same code runs
under hypothesis (``kernels()``, a strategy that shrinks) and without it
(``generate_kernel(seed)``, a seeded ``random.Random``: what ``tools/fuzz.py``
and ``tools/gpu_differential.py`` use, and what a failure report quotes).

Kernels avoid behaviour the two backends may legitimately disagree on: no
integer division or modulo by zero (divisors go through ``tl.where(b == 0, ...)``),
no integer overflow (every integer expression carries a bound on its
magnitude), no NaN or infinity (``exp`` and ``log`` only see bounded or
positive arguments), every access masked to the buffers it reads.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

FAMILIES = ("elementwise", "integer", "tile2d", "loop", "dot", "scan")
BLOCKS = (16, 32, 64, 128, 256, 512, 1024)


# ---- choices --------------------------------------------------------------------------


class RandomChooser:
    """Choices from a seeded ``random.Random`` (no hypothesis needed)."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.random.randint(lo, hi)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.random.randrange(len(options))]

    def boolean(self) -> bool:
        return self.random.random() < 0.5


class HypothesisChooser:
    """Choices drawn from hypothesis strategies (so failures shrink)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st

        return self.draw(st.integers(lo, hi))

    def choice(self, options: Sequence[Any]) -> Any:
        from hypothesis import strategies as st

        return self.draw(st.sampled_from(list(options)))

    def boolean(self) -> bool:
        from hypothesis import strategies as st

        return self.draw(st.booleans())


# ---- what a generated kernel is -------------------------------------------------------


@dataclass
class Param:
    name: str
    sig: str  # Triton AOT type: "*fp32", "i32", ...


@dataclass
class GeneratedKernel:
    """One kernel file and how to launch it.

    ``make_args(rng)`` gives fresh arguments in parameter order (non-constexpr
    ones); ``reference(args)`` maps each output's argument index to the array
    that argument must hold after the launch (computed from the arguments
    before the launch, so call it on a copy)."""

    family: str
    name: str
    source: str
    params: list[Param]
    defines: dict[str, int]
    grid: tuple[int, ...]
    outputs: list[int]
    make_args: Callable[[np.random.Generator], list[Any]]
    reference: Callable[[list[Any]], dict[int, np.ndarray]]
    rtol: float = 1e-5
    atol: float = 1e-5
    num_warps: int = 4
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        return ", ".join(p.sig for p in self.params)

    @property
    def file(self) -> str:
        return f"{self.name}.py"

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return (f"GeneratedKernel({self.family}, defines={self.defines}, grid={self.grid}, "
                f"signature={self.signature!r})\n{self.source}")


HEADER = "import mytriton\nimport mytriton.language as tl\n\n\n"


def _nonzero(values: np.ndarray) -> np.ndarray:
    return np.where(values == 0, 1, values).astype(values.dtype)


def _f32(rng: np.random.Generator, n: int) -> np.ndarray:
    return _nonzero(rng.standard_normal(n).astype(np.float32))


def _int(rng: np.random.Generator, n: int, bound: int, dtype: Any) -> np.ndarray:
    return _nonzero(rng.integers(-bound, bound + 1, n).astype(dtype))


# ---- expressions ----------------------------------------------------------------------


@dataclass
class Expr:
    """Kernel source text, the NumPy function computing the same from the
    leaves' arrays, and a bound on its magnitude (no overflow, no inf)."""

    text: str
    ref: Callable[[dict[str, np.ndarray]], np.ndarray]
    bound: float


def _leaf(name: str, bound: float, ref_name: str | None = None) -> Expr:
    key = ref_name or name
    return Expr(name, lambda env, key=key: env[key], bound)


F = np.float32


def float_expr(ch: Any, leaves: list[Expr], depth: int) -> Expr:
    """A float32 expression over ``leaves`` (each an f32 value of the same shape
    or broadcastable), bounded so that nothing overflows."""
    if depth <= 0 or ch.integer(0, 5) == 0:
        if ch.integer(0, 4) == 0:
            c = ch.choice((0.5, 1.5, 2.0, -0.25, 3.0, -1.0))
            return Expr(repr(c), lambda env, c=c: F(c), abs(c))
        return ch.choice(leaves)
    kind = ch.choice(("add", "sub", "mul", "div", "max", "min", "where", "unary", "unary", "scale"))
    if kind == "unary":
        a = float_expr(ch, leaves, depth - 1)
        fn = ch.choice(("neg", "abs", "sin", "cos", "exp", "exp2", "sqrt", "log", "log2", "rsqrt", "sigmoid"))
        table: dict[str, tuple[str, Callable[[Any], Any], float]] = {
            "neg": ("(-{a})", lambda x: -x, a.bound),
            "abs": ("tl.abs({a})", np.abs, a.bound),
            "sin": ("tl.sin({a})", np.sin, 1.0),
            "cos": ("tl.cos({a})", np.cos, 1.0),
            "exp": ("tl.exp(tl.minimum({a}, 4.0))", lambda x: np.exp(np.minimum(x, F(4.0))), math.exp(4)),
            "exp2": ("tl.exp2(tl.minimum({a}, 4.0))", lambda x: np.exp2(np.minimum(x, F(4.0))), 16.0),
            "sqrt": ("tl.sqrt(tl.abs({a}))", lambda x: np.sqrt(np.abs(x)), math.sqrt(a.bound) + 1),
            "log": ("tl.log(tl.abs({a}) + 1.0)", lambda x: np.log(np.abs(x) + F(1.0)), math.log(a.bound + 1) + 1),
            "log2": ("tl.log2(tl.abs({a}) + 1.0)", lambda x: np.log2(np.abs(x) + F(1.0)),
                     math.log2(a.bound + 1) + 1),
            "rsqrt": ("tl.rsqrt(tl.abs({a}) + 1.0)", lambda x: F(1.0) / np.sqrt(np.abs(x) + F(1.0)), 1.0),
            "sigmoid": ("tl.sigmoid({a})", lambda x: F(1.0) / (F(1.0) + np.exp(-x)), 1.0),
        }
        text, fn_ref, bound = table[fn]
        return Expr(text.format(a=a.text), lambda env, a=a, f=fn_ref: f(a.ref(env)), bound)
    if kind == "scale":
        a = float_expr(ch, leaves, depth - 1)
        c = ch.choice((0.5, 2.0, 0.125))
        return Expr(f"({a.text} * {c!r})", lambda env, a=a, c=c: a.ref(env) * F(c), a.bound * c)
    a = float_expr(ch, leaves, depth - 1)
    b = float_expr(ch, leaves, depth - 1)
    if kind == "add":
        return Expr(f"({a.text} + {b.text})", lambda env, a=a, b=b: a.ref(env) + b.ref(env), a.bound + b.bound)
    if kind == "sub":
        return Expr(f"({a.text} - {b.text})", lambda env, a=a, b=b: a.ref(env) - b.ref(env), a.bound + b.bound)
    if kind == "mul":
        if a.bound * b.bound > 1e4:
            return Expr(f"({a.text} + {b.text})", lambda env, a=a, b=b: a.ref(env) + b.ref(env),
                        a.bound + b.bound)
        return Expr(f"({a.text} * {b.text})", lambda env, a=a, b=b: a.ref(env) * b.ref(env), a.bound * b.bound)
    if kind == "div":
        return Expr(f"({a.text} / (tl.abs({b.text}) + 1.0))",
                    lambda env, a=a, b=b: a.ref(env) / (np.abs(b.ref(env)) + F(1.0)), a.bound)
    if kind in ("max", "min"):
        fn = np.maximum if kind == "max" else np.minimum
        return Expr(f"tl.{kind}imum({a.text}, {b.text})", lambda env, a=a, b=b, fn=fn: fn(a.ref(env), b.ref(env)),
                    max(a.bound, b.bound))
    c = float_expr(ch, leaves, depth - 1)
    op = ch.choice(("<", ">", "<=", ">="))
    cmp = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}[op]
    return Expr(f"tl.where({c.text} {op} {a.text}, {a.text}, {b.text})",
                lambda env, a=a, b=b, c=c, cmp=cmp: np.where(cmp(c.ref(env), a.ref(env)), a.ref(env), b.ref(env)),
                max(a.bound, b.bound))


def with_leaf(expr: Expr, leaf: Expr) -> Expr:
    """``expr``, or ``expr + leaf`` when it reads no leaf (a constant would
    store a scalar where a tile is meant)."""
    if re.search(r"[A-Za-z_]", expr.text.replace("tl.", "")):
        return expr
    return Expr(f"({expr.text} + {leaf.text})", lambda env, e=expr, f=leaf: e.ref(env) + f.ref(env),
                expr.bound + leaf.bound)


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C, CUDA, Triton)."""
    return (a - np.fmod(a, b)) // b


def int_expr(ch: Any, leaves: list[Expr], depth: int, limit: int, np_type: Any) -> Expr:
    """An integer expression whose magnitude stays below ``limit``."""
    T = np_type
    if depth <= 0 or ch.integer(0, 5) == 0:
        if ch.integer(0, 4) == 0:
            c = ch.choice((1, 2, 3, 7, -5, 100))
            return Expr(str(c), lambda env, c=c: T(c), abs(c))
        return ch.choice(leaves)
    kind = ch.choice(("add", "sub", "mul", "div", "mod", "and", "or", "xor", "max", "min", "where", "neg", "not"))
    a = int_expr(ch, leaves, depth - 1, limit, T)
    if kind == "neg":
        return Expr(f"(-{a.text})", lambda env, a=a: -a.ref(env), a.bound)
    if kind == "not":
        return Expr(f"(~{a.text})", lambda env, a=a: ~a.ref(env), a.bound + 1)
    b = int_expr(ch, leaves, depth - 1, limit, T)
    fallback = Expr(f"({a.text} - {b.text})", lambda env, a=a, b=b: a.ref(env) - b.ref(env), a.bound + b.bound)
    if kind == "add":
        result = Expr(f"({a.text} + {b.text})", lambda env, a=a, b=b: a.ref(env) + b.ref(env), a.bound + b.bound)
    elif kind == "sub":
        result = fallback
    elif kind == "mul":
        result = Expr(f"({a.text} * {b.text})", lambda env, a=a, b=b: a.ref(env) * b.ref(env), a.bound * b.bound)
    elif kind in ("div", "mod"):
        divisor = f"tl.where({b.text} == 0, 3, {b.text})"
        ref_b = lambda env, b=b: np.where(b.ref(env) == 0, T(3), b.ref(env))  # noqa: E731
        if kind == "div":
            result = Expr(f"({a.text} // {divisor})", lambda env, a=a, rb=ref_b: _c_div(a.ref(env), rb(env)), a.bound)
        else:
            result = Expr(f"({a.text} % {divisor})", lambda env, a=a, rb=ref_b: np.fmod(a.ref(env), rb(env)),
                          a.bound)
    elif kind in ("and", "or", "xor"):
        sym = {"and": "&", "or": "|", "xor": "^"}[kind]
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        bound = 2 ** int(math.ceil(math.log2(max(a.bound, b.bound) + 2)))
        result = Expr(f"({a.text} {sym} {b.text})", lambda env, a=a, b=b, fn=fn: fn(a.ref(env), b.ref(env)), bound)
    elif kind in ("max", "min"):
        fn = np.maximum if kind == "max" else np.minimum
        result = Expr(f"tl.{kind}imum({a.text}, {b.text})", lambda env, a=a, b=b, fn=fn: fn(a.ref(env), b.ref(env)),
                      max(a.bound, b.bound))
    else:
        c = int_expr(ch, leaves, depth - 1, limit, T)
        op = ch.choice(("<", ">", "==", "!=", "<=", ">="))
        cmp = {"<": np.less, ">": np.greater, "==": np.equal, "!=": np.not_equal, "<=": np.less_equal,
               ">=": np.greater_equal}[op]
        result = Expr(f"tl.where({c.text} {op} {b.text}, {a.text}, {b.text})",
                      lambda env, a=a, b=b, c=c, cmp=cmp: np.where(cmp(c.ref(env), b.ref(env)), a.ref(env),
                                                                    b.ref(env)),
                      max(a.bound, b.bound))
    if result.bound >= limit:
        return a if a.bound < limit else Expr("1", lambda env: T(1), 1)
    return result


def _as(values: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.asarray(values).astype(dtype), shape)


# ---- families ---------------------------------------------------------------------------


def _elementwise(ch: Any, index: int) -> GeneratedKernel:
    block = ch.choice(BLOCKS)
    n = ch.integer(1, 3 * block + 7)
    extra_programs = ch.integer(0, 2)
    grid = (-(-n // block) + extra_programs,)
    use_helper = ch.boolean()
    use_scalar = ch.boolean()
    use_int_leaf = ch.boolean()
    use_half = ch.boolean()
    leaves = [_leaf("x", 5.0), _leaf("y", 5.0)]
    body = [
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n",
        f"    x = tl.load(x_ptr + offs, mask=mask, other={ch.choice(('0.0', '1.0'))})",
        "    y = tl.load(y_ptr + offs, mask=mask, other=1.0)",
    ]
    params = [Param("x_ptr", "*fp32"), Param("y_ptr", "*fp32")]
    if use_int_leaf:
        params.append(Param("i_ptr", "*i32"))
        body.append("    ii = tl.load(i_ptr + offs, mask=mask, other=0)")
        body.append("    xi = ii.to(tl.float32)")
        leaves.append(_leaf("xi", 100.0, "i_as_f"))
        # an int tile meeting a float one: promoted to f32 without a cast
        leaves.append(Expr("(ii + x)", lambda env: env["i_as_f"] + env["x"], 105.0))
    if use_half:
        body.append("    xh = x.to(tl.float16).to(tl.float32)")
        leaves.append(_leaf("xh", 5.0, "x_as_h"))
        body.append("    xf = tl.floor(y * 2.0) + tl.ceil(x)")
        leaves.append(_leaf("xf", 16.0, "floors"))
    if use_scalar:
        params.append(Param("s", "fp32"))
        leaves.append(_leaf("s", 3.0))
    helper = ""
    if use_helper:
        helper = ("@mytriton.jit\ndef combine(a, b):\n    return a * 0.5 + tl.maximum(a, b)\n\n\n")
        inner = with_leaf(float_expr(ch, leaves, 2), leaves[0])
        body.append(f"    h = combine({inner.text}, x)")
        leaves.append(Expr("h", lambda env, e=inner: e.ref(env) * F(0.5) + np.maximum(e.ref(env), env["x"]),
                           inner.bound * 1.5 + 5))
    expr = with_leaf(float_expr(ch, leaves, ch.integer(1, 4)), leaves[0])
    body.append(f"    out = {expr.text}")
    if ch.boolean():
        body.append("    out += x")
        final = lambda env: expr.ref(env) + env["x"]  # noqa: E731
    else:
        final = expr.ref
    body.append("    tl.store(out_ptr + offs, out, mask=mask)")
    params += [Param("out_ptr", "*fp32"), Param("n", "i32")]
    store_flags = ch.boolean()
    if store_flags:
        params.append(Param("flags_ptr", "*i1"))
        body.append("    tl.store(flags_ptr + offs, x < y, mask=mask)")
    names = [p.name for p in params]
    pad = 5

    def make_args(rng: np.random.Generator) -> list[Any]:
        values: dict[str, Any] = {"x_ptr": _f32(rng, n + pad) * 2, "y_ptr": _f32(rng, n + pad) * 2,
                                  "i_ptr": _int(rng, n + pad, 100, np.int32), "s": float(rng.uniform(0.5, 3.0)),
                                  "out_ptr": _f32(rng, n + pad), "n": n,
                                  "flags_ptr": rng.integers(0, 2, n + pad).astype(np.bool_)}
        return [values[name] for name in names]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        a = dict(zip(names, args))
        x = a["x_ptr"][:n]
        env = {"x": x, "y": a["y_ptr"][:n], "s": F(a.get("s", 0.0))}
        if use_int_leaf:
            env["i_as_f"] = a["i_ptr"][:n].astype(np.float32)
        env["x_as_h"] = x.astype(np.float16).astype(np.float32)
        env["floors"] = np.floor(env["y"] * F(2.0)) + np.ceil(x)
        out = a["out_ptr"].copy()
        out[:n] = _as(final(env), np.float32, (n,))
        result = {names.index("out_ptr"): out}
        if store_flags:
            flags = a["flags_ptr"].copy()
            flags[:n] = x < env["y"]
            result[names.index("flags_ptr")] = flags
        return result

    name = f"fz_elementwise_{index}"
    signature_line = ", ".join(names)
    source = (HEADER + helper + f"@mytriton.jit\ndef {name}({signature_line}, BLOCK: tl.constexpr):\n"
              + "\n".join(body) + "\n")
    outputs = [names.index("out_ptr")] + ([names.index("flags_ptr")] if store_flags else [])
    return GeneratedKernel("elementwise", name, source, params, {"BLOCK": block}, grid, outputs, make_args,
                           reference, rtol=1e-4, atol=1e-4, num_warps=ch.choice((1, 2, 4, 8)))


def _integer(ch: Any, index: int) -> GeneratedKernel:
    wide = ch.boolean()
    sig, T, limit, data_bound = ("*i64", np.int64, 2 ** 62, 2 ** 20) if wide else ("*i32", np.int32, 2 ** 30, 1000)
    block = ch.choice(BLOCKS)
    n = ch.integer(1, 2 * block + 3)
    grid = (-(-n // block) + ch.integer(0, 1),)
    leaves = [_leaf("a", data_bound), _leaf("b", data_bound), _leaf("pid", 256), _leaf("n", 4 * 1024),
              _leaf("tl.num_programs(0)", 256, "programs"), _leaf("tl.cdiv(n, BLOCK)", 256, "blocks")]
    expr = with_leaf(int_expr(ch, leaves, ch.integer(1, 4), limit // 2, T), leaves[0])
    to_float = ch.boolean() and not wide
    out_sig = "*fp32" if to_float else sig
    body = [
        "    pid = tl.program_id(0)",
        "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n",
        "    a = tl.load(a_ptr + offs, mask=mask, other=0)",
        "    b = tl.load(b_ptr + offs, mask=mask, other=1)",
        f"    r = {expr.text}",
        f"    tl.store(out_ptr + offs, {'r.to(tl.float32)' if to_float else 'r'}, mask=mask)",
    ]
    params = [Param("a_ptr", sig), Param("b_ptr", sig), Param("out_ptr", out_sig), Param("n", "i32")]
    out_dtype = np.float32 if to_float else T

    def make_args(rng: np.random.Generator) -> list[Any]:
        return [_int(rng, n + 3, data_bound, T), _int(rng, n + 3, data_bound, T),
                _int(rng, n + 3, 99, out_dtype), n]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        a, b, out, _ = args
        pid = (np.arange(n) // block).astype(np.int32)
        env = {"a": a[:n], "b": b[:n], "pid": pid, "n": np.int32(n), "programs": np.int32(grid[0]),
               "blocks": np.int32(-(-n // block))}
        with np.errstate(all="ignore"):
            values = expr.ref(env)
        result = out.copy()
        result[:n] = _as(np.asarray(values).astype(T), out_dtype, (n,))
        return {2: result}

    name = f"fz_integer_{index}"
    source = (HEADER + f"@mytriton.jit\ndef {name}(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
              + "\n".join(body) + "\n")
    return GeneratedKernel("integer", name, source, params, {"BLOCK": block}, grid, [2], make_args, reference,
                           rtol=0, atol=0, num_warps=ch.choice((1, 2, 4, 8)))


def _tile2d(ch: Any, index: int) -> GeneratedKernel:
    bm = ch.choice((1, 2, 4, 8, 16, 32))
    bn = ch.choice((16, 32, 64, 128))
    m = ch.integer(1, 3 * bm + 2)
    n = ch.integer(1, bn)  # one column tile covers a row
    grid = (-(-m // bm),)
    leaves = [_leaf("x", 4.0), _leaf("v[None, :]", 4.0, "v"), _leaf("u[:, None]", 4.0, "u")]
    expr = float_expr(ch, leaves, ch.integer(1, 3))
    reduction = ch.choice(("none", "sum", "max", "min"))
    axis = ch.choice((0, 1, None)) if reduction != "none" else None
    keep = ch.boolean() and axis is not None
    body = [
        "    pid = tl.program_id(0)",
        "    rows = pid * BM + tl.arange(0, BM)",
        "    cols = tl.arange(0, BN)",
        "    rmask = rows < M",
        "    cmask = cols < N",
        "    mask = rmask[:, None] & cmask[None, :]" if ch.boolean() else
        "    mask = tl.expand_dims(rmask, 1) & tl.expand_dims(cmask, 0)",
        "    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)",
        "    v = tl.load(v_ptr + cols, mask=cmask, other=0.0)",
        "    u = tl.load(u_ptr + rows, mask=rmask, other=0.0)",
        f"    t = {expr.text} + tl.zeros((BM, BN), tl.float32)",
    ]
    fill = {"sum": "0.0", "max": "-1e30", "min": "1e30", "none": "0.0"}[reduction]
    n_programs = grid[0]
    if reduction == "none":
        body.append("    tl.store(out_ptr + rows[:, None] * N + cols[None, :], t, mask=mask)")
        out_size = m * n
    else:
        call_axis = "None" if axis is None else str(axis)
        keep_text = ", keep_dims=True" if keep else ""
        axis_text = "" if axis is None and ch.boolean() else f", axis={call_axis}"
        body.append(f"    r = tl.{reduction}(tl.where(mask, t, {fill}){axis_text}{keep_text})")
        if axis == 1:
            if keep:
                body.append("    tl.store(out_ptr + rows[:, None], r, mask=rmask[:, None])")
            else:
                body.append("    tl.store(out_ptr + rows, r, mask=rmask)")
            out_size = m
        elif axis == 0:
            if keep:
                body.append("    tl.store(out_ptr + pid * N + cols[None, :], r, mask=cmask[None, :])")
            else:
                body.append("    tl.store(out_ptr + pid * N + cols, r, mask=cmask)")
            out_size = n_programs * n
        else:
            body.append("    tl.store(out_ptr + pid, r)")
            out_size = n_programs
    params = [Param("x_ptr", "*fp32"), Param("v_ptr", "*fp32"), Param("u_ptr", "*fp32"), Param("out_ptr", "*fp32"),
              Param("M", "i32"), Param("N", "i32")]

    def make_args(rng: np.random.Generator) -> list[Any]:
        return [_f32(rng, m * n) * 2, _f32(rng, n) * 2, _f32(rng, m) * 2, _f32(rng, out_size + 2), m, n]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        x, v, u, out, _, _ = args
        env = {"x": x.reshape(m, n), "v": v[None, :], "u": u[:, None]}
        t = _as(expr.ref(env), np.float32, (m, n))
        result = out.copy()
        if reduction == "none":
            result[:m * n] = t.reshape(-1)
            return {3: result}
        fn = {"sum": np.sum, "max": np.max, "min": np.min}[reduction]
        if axis == 1:
            result[:m] = fn(t, axis=1)
        else:
            blocks = [t[p * bm:(p + 1) * bm] for p in range(n_programs)]
            if axis == 0:
                result[:n_programs * n] = np.concatenate([fn(blk, axis=0) for blk in blocks])
            else:
                result[:n_programs] = [fn(blk) for blk in blocks]
        return {3: result}

    name = f"fz_tile2d_{index}"
    source = (HEADER + f"@mytriton.jit\ndef {name}(x_ptr, v_ptr, u_ptr, out_ptr, M, N, "
              "BM: tl.constexpr, BN: tl.constexpr):\n" + "\n".join(body) + "\n")
    return GeneratedKernel("tile2d", name, source, params, {"BM": bm, "BN": bn}, grid, [3], make_args, reference,
                           rtol=1e-4, atol=1e-3, num_warps=ch.choice((1, 2, 4, 8)),
                           description={"reduction": reduction, "axis": axis, "keep_dims": keep})


def _loop(ch: Any, index: int) -> GeneratedKernel:
    block = ch.choice((32, 64, 128, 256))
    width = ch.integer(1, 2 * block + 5)
    n_chunks = ch.integer(0, 5)
    grid = (-(-width // block),)
    per_program = ch.boolean()  # trip counts loaded per program
    nested = ch.boolean()
    n_inner = ch.integer(0, 3) if nested else 1
    static = ch.choice(("none", "static_range", "range"))
    static_count = ch.integer(1, 3)
    update = ch.choice(("add", "max", "decay"))
    x_leaves = [_leaf("x", 3.0)]
    step_expr = with_leaf(float_expr(ch, x_leaves, ch.integer(0, 2)), x_leaves[0])
    start = ch.choice((0, 1)) if not per_program else 0
    step = ch.choice((1, 2)) if not nested else 1
    range_text = {(0, 1): "range({end})", (1, 1): "range(1, {end})", (0, 2): "range(0, {end}, 2)",
                  (1, 2): "range(1, {end}, 2)"}[(start, step)]
    end_text = "trips" if per_program else "n_chunks"
    body = [
        "    pid = tl.program_id(0)",
        "    cols = pid * BLOCK + tl.arange(0, BLOCK)",
        "    mask = cols < width",
        "    acc = tl.zeros((BLOCK,), tl.float32)" if ch.boolean() else "    acc = tl.full((BLOCK,), 0.0, tl.float32)",
        "    count = 0",
    ]
    if per_program:
        body.append("    trips = tl.load(trips_ptr + pid)")
    body.append(f"    for chunk in {range_text.format(end=end_text)}:")
    indent = "        "
    row = "chunk"
    if nested:
        body.append(f"{indent}for j in range(0, n_inner):")
        indent += "    "
        row = "chunk * n_inner + j"
    body.append(f"{indent}x = tl.load(x_ptr + ({row}) * width + cols, mask=mask, other=0.0)")
    update_text = {"add": "acc = acc + {e}", "max": "acc = tl.maximum(acc, {e})",
                   "decay": "acc = acc * 0.5 + {e}"}[update]
    body.append(indent + update_text.format(e=step_expr.text))
    if static != "none":
        loop = "tl.static_range" if static == "static_range" else "range"
        body.append(f"{indent}for s in {loop}({static_count}):")
        body.append(f"{indent}    acc += x * (s + 1)")
    body.append(f"{indent}count += 1")
    body.append("    tl.store(out_ptr + cols, acc, mask=mask)")
    body.append("    tl.store(count_ptr + pid, count)")
    params = [Param("x_ptr", "*fp32"), Param("out_ptr", "*fp32"), Param("count_ptr", "*i32")]
    if per_program:
        params.append(Param("trips_ptr", "*i32"))
    params += [Param("n_chunks", "i32"), Param("n_inner", "i32"), Param("width", "i32")]
    names = [p.name for p in params]
    n_programs = grid[0]
    max_rows = max(n_chunks, 6) * max(n_inner, 1) + 1

    def make_args(rng: np.random.Generator) -> list[Any]:
        values = {"x_ptr": _f32(rng, max_rows * width), "out_ptr": _f32(rng, width + 3),
                  "count_ptr": _int(rng, n_programs + 2, 50, np.int32),
                  "trips_ptr": rng.integers(0, 6, n_programs).astype(np.int32),
                  "n_chunks": n_chunks, "n_inner": n_inner, "width": width}
        return [values[k] for k in names]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        a = dict(zip(names, args))
        x = a["x_ptr"].reshape(max_rows, width)
        out = a["out_ptr"].copy()
        counts = a["count_ptr"].copy()
        for p in range(n_programs):
            cols = slice(p * block, min((p + 1) * block, width))
            end = int(a["trips_ptr"][p]) if per_program else n_chunks
            acc = np.zeros(cols.stop - cols.start, np.float32)
            count = 0
            for chunk in range(start, end, step):
                for j in range(n_inner if nested else 1):
                    xr = x[chunk * n_inner + j if nested else chunk, cols]
                    e = _as(step_expr.ref({"x": xr}), np.float32, xr.shape)
                    acc = {"add": lambda: acc + e, "max": lambda: np.maximum(acc, e),
                           "decay": lambda: acc * F(0.5) + e}[update]()
                    if static != "none":
                        for s in range(static_count):
                            acc = acc + xr * F(s + 1)
                    count += 1
            out[cols] = acc
            counts[p] = count
        return {names.index("out_ptr"): out, names.index("count_ptr"): counts}

    name = f"fz_loop_{index}"
    source = (HEADER + f"@mytriton.jit\ndef {name}({', '.join(names)}, BLOCK: tl.constexpr):\n"
              + "\n".join(body) + "\n")
    return GeneratedKernel("loop", name, source, params, {"BLOCK": block}, grid,
                           [names.index("out_ptr"), names.index("count_ptr")], make_args, reference,
                           rtol=1e-4, atol=1e-4, num_warps=ch.choice((1, 2, 4, 8)),
                           description={"per_program": per_program, "nested": nested, "static": static})


# How a dot operand is read: its tile as stored ("rows"), its transpose stored
# and read back with tl.trans ("trans"), or that transpose scaled first
# (computed in registers, so the dot is not staged: "scaled trans").
OPERAND_FORMS = ("rows", "trans", "scaled trans")


def _operand(form: str, name: str, rows: str, cols: str, n_rows: str, n_cols: str, cast: str) -> str:
    """The lines that load operand ``name`` (a tile of ``rows`` x ``cols``
    indices, ``n_rows`` x ``n_cols`` bounds) in ``form``."""
    if form == "rows":
        return (f"        {name}_rows = {rows}\n        {name}_cols = {cols}\n"
                f"        {name} = tl.load({name}_ptr + {name}_rows * {n_cols} + {name}_cols, "
                f"mask=({name}_rows < {n_rows}) & ({name}_cols < {n_cols}), other=0.0){cast}\n")
    # the transpose is stored: index it with the axes swapped, then read it back transposed
    t_rows, t_cols = cols.replace("[None, :]", "[:, None]"), rows.replace("[:, None]", "[None, :]")
    tile = (f"tl.load({name}_ptr + {name}_t_rows * {n_rows} + {name}_t_cols, "
            f"mask=({name}_t_rows < {n_cols}) & ({name}_t_cols < {n_rows}), other=0.0){cast}")
    if form == "scaled trans":
        tile = f"({tile} * 2.0)"
    return (f"        {name}_t_rows = {t_rows}\n        {name}_t_cols = {t_cols}\n"
            f"        {name} = tl.trans({tile})\n")


def _operand_values(form: str, flat: np.ndarray, n_rows: int, n_cols: int, dtype: Any) -> np.ndarray:
    """The operand the kernel reads in ``form`` from its argument ``flat``."""
    if form == "rows":
        tile = flat[:n_rows * n_cols].reshape(n_rows, n_cols)
    else:
        tile = flat[:n_rows * n_cols].reshape(n_cols, n_rows).T
    tile = tile.astype(dtype).astype(np.float64)
    return tile * 2.0 if form == "scaled trans" else tile


def _dot(ch: Any, index: int) -> GeneratedKernel:
    bm, bn, bk = ch.choice((16, 32, 64)), ch.choice((16, 32, 64)), ch.choice((16, 32))
    m, n = ch.integer(1, 2 * bm + 3), ch.integer(1, 2 * bn + 3)
    k = ch.choice((0, ch.integer(1, 3 * bk + 5)))
    grid = (-(-m // bm), -(-n // bn))
    accumulate = ch.choice(("+=", "acc_arg"))
    epilogue = ch.choice(("acc", "acc * alpha", "tl.maximum(acc, 0.0)", "acc + bias[None, :]"))
    a_form, b_form = ch.choice(OPERAND_FORMS), ch.choice(OPERAND_FORMS)
    # f32 operands, or f16 ones (rounded as they are loaded: the tensor cores' mma.sync or wgmma).
    operands = ch.choice(("fp32", "fp16"))
    # tl.dot's precision for f32 (TF32 by default, as in Triton): spelled out
    # in the call, the tolerance scaled to it (TF32 keeps 10 mantissa bits).
    precision = ch.choice(("tf32", "tf32x3", "ieee")) if operands == "fp32" else "ieee"
    spelled = f', input_precision="{precision}"' if operands == "fp32" else ""
    update = f"acc += tl.dot(a, b{spelled})" if accumulate == "+=" else f"acc = tl.dot(a, b, acc{spelled})"
    tol = 2e-3 if precision == "tf32" else 1e-4
    cast = ".to(tl.float16)" if operands == "fp16" else ""
    a_lines = _operand(a_form, "a", "offs_m[:, None]", "k + offs_k[None, :]", "M", "K", cast)
    b_lines = _operand(b_form, "b", "k + offs_k[:, None]", "offs_n[None, :]", "K", "N", cast)
    body = f"""    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
{a_lines}{b_lines}        {update}
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    out = {epilogue}
    c_rows = offs_m[:, None]
    c_cols = offs_n[None, :]
    tl.store(c_ptr + c_rows * N + c_cols, out, mask=(c_rows < M) & (c_cols < N))
"""
    params = [Param("a_ptr", "*fp32"), Param("b_ptr", "*fp32"), Param("c_ptr", "*fp32"), Param("bias_ptr", "*fp32"),
              Param("M", "i32"), Param("N", "i32"), Param("K", "i32"), Param("alpha", "fp32")]

    def make_args(rng: np.random.Generator) -> list[Any]:
        return [_f32(rng, max(m * k, 1)), _f32(rng, max(k * n, 1)), _f32(rng, m * n + 2), _f32(rng, n),
                m, n, k, float(rng.uniform(0.5, 2.0))]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        a, b, c, bias, _, _, _, alpha = args
        dtype = np.float16 if operands == "fp16" else np.float32
        acc = _operand_values(a_form, a, m, k, dtype) @ _operand_values(b_form, b, k, n, dtype)
        out = {"acc": acc, "acc * alpha": acc * np.float32(alpha), "tl.maximum(acc, 0.0)": np.maximum(acc, 0),
               "acc + bias[None, :]": acc + bias[None, :]}[epilogue]
        result = c.copy()
        result[:m * n] = out.astype(np.float32).reshape(-1)
        return {2: result}

    name = f"fz_dot_{index}"
    source = (HEADER + f"@mytriton.jit\ndef {name}(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, alpha, "
              "BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n" + body)
    return GeneratedKernel("dot", name, source, params, {"BM": bm, "BN": bn, "BK": bk}, grid, [2], make_args,
                           reference, rtol=tol, atol=tol * max(k, 1), num_warps=ch.choice((1, 2, 4, 8)),
                           description={"epilogue": epilogue, "accumulate": accumulate, "precision": precision,
                                        "a": a_form, "b": b_form, "operands": operands})


SCAN_COMBINES = {
    "add": ("return a + b", np.add),
    "max": ("return tl.maximum(a, b)", np.maximum),
}


def _sequential_scan(values: np.ndarray, axis: int, reverse: bool, step: Callable[[Any, Any], Any]) -> np.ndarray:
    """An inclusive scan along ``axis``, one element after the other, in float64."""
    values = np.moveaxis(values.astype(np.float64), axis, 0)
    if reverse:
        values = values[::-1]
    out = values.copy()
    for i in range(1, len(out)):
        out[i] = step(out[i - 1], values[i])
    if reverse:
        out = out[::-1]
    return np.moveaxis(out, 0, axis)


def _scan(ch: Any, index: int) -> GeneratedKernel:
    """Scans and index reductions over a tile of rows: tl.cumsum, tl.cumprod,
    tl.associative_scan (with a @jit combine, or a first-order recurrence
    over a tuple), tl.argmax and tl.argmin, along either axis, either way."""
    bm = ch.choice((1, 2, 4, 8, 16))
    bn = ch.choice((16, 32, 64, 128))
    m = ch.integer(1, 3 * bm + 2)
    n = ch.integer(1, bn)
    grid = (-(-m // bm),)
    op = ch.choice(("cumsum", "cumprod", "associative_scan", "recurrence", "argmax", "argmin"))
    axis = ch.choice((0, 1))
    reverse = ch.boolean() and op not in ("argmax", "argmin")
    combine = ch.choice(tuple(SCAN_COMBINES))
    # What masked elements hold: the identity of the scan, which a reverse
    # scan meets before any element in range.
    fill = {"cumprod": "1.0", "argmax": "-float('inf')", "argmin": "float('inf')"}.get(op, "0.0")
    if op == "associative_scan" and combine == "max":
        fill = "-float('inf')"
    helper = ""
    body = [
        "    rows = tl.program_id(0) * BM + tl.arange(0, BM)",
        "    cols = tl.arange(0, BN)",
        "    mask = (rows[:, None] < M) & (cols[None, :] < N)",
        "    offs = rows[:, None] * N + cols[None, :]",
        f"    x = tl.load(x_ptr + offs, mask=mask, other={fill})",
    ]
    flag = f", reverse={reverse}" if reverse or ch.boolean() else ""
    if op in ("cumsum", "cumprod"):
        body.append(f"    r = tl.{op}(x, axis={axis}{flag})")
    elif op == "associative_scan":
        helper = f"@mytriton.jit\ndef combine(a, b):\n    {SCAN_COMBINES[combine][0]}\n\n\n"
        body.append(f"    r = tl.associative_scan(x, {axis}, combine{flag})")
    elif op == "recurrence":
        # h_t = a_t * h_(t-1) + b_t, with a_t = y_t (in [0.5, 1]) and b_t = x_t
        helper = ("@mytriton.jit\ndef first_order(l_a, l_b, r_a, r_b):\n"
                  "    return r_a * l_a, r_a * l_b + r_b\n\n\n")
        body.append("    y = tl.load(y_ptr + offs, mask=mask, other=1.0)")
        body.append(f"    _, r = tl.associative_scan((y, x), axis={axis}, combine_fn=first_order{flag})")
    else:
        body.append(f"    r = tl.{op}(x, axis={axis})")
    if op in ("argmax", "argmin"):
        if axis == 1:
            body.append("    tl.store(out_ptr + rows, r, mask=rows < M)")
        else:
            body.append("    tl.store(out_ptr + tl.program_id(0) * N + cols, r, mask=cols < N)")
    else:
        body.append("    tl.store(out_ptr + offs, r, mask=mask)")
    params = [Param("x_ptr", "*fp32"), Param("y_ptr", "*fp32"),
              Param("out_ptr", "*i32" if op in ("argmax", "argmin") else "*fp32"), Param("M", "i32"), Param("N", "i32")]
    out_size = m if op in ("argmax", "argmin") and axis == 1 else grid[0] * n if op in ("argmax", "argmin") else m * n

    def make_args(rng: np.random.Generator) -> list[Any]:
        x = rng.uniform(0.9, 1.1, m * n).astype(np.float32) if op == "cumprod" else _f32(rng, m * n)
        y = rng.uniform(0.5, 1.0, m * n).astype(np.float32)
        out = _int(rng, out_size + 2, 99, np.int32) if op in ("argmax", "argmin") else _f32(rng, out_size + 2)
        return [x, y, out, m, n]

    def reference(args: list[Any]) -> dict[int, np.ndarray]:
        x, y, out, _, _ = args
        x, y = x.reshape(m, n), y.reshape(m, n)
        result = out.copy()
        # A program scans its own BM rows: along axis 0 the rows of each program form one scan.
        blocks = [slice(p * bm, min((p + 1) * bm, m)) for p in range(grid[0])]
        if op in ("argmax", "argmin"):
            pick = np.argmax if op == "argmax" else np.argmin
            if axis == 1:
                result[:m] = pick(x, axis=1)
            else:
                result[:grid[0] * n] = np.concatenate([pick(x[b], axis=0) for b in blocks])
            return {2: result}
        step = {"cumsum": np.add, "cumprod": np.multiply, "associative_scan": SCAN_COMBINES[combine][1]}.get(op)
        scanned = np.empty((m, n))
        for b in (blocks if axis == 0 else [slice(0, m)]):
            if op == "recurrence":
                h = np.moveaxis(x[b].astype(np.float64), axis, 0)
                a = np.moveaxis(y[b].astype(np.float64), axis, 0)
                if reverse:
                    h, a = h[::-1], a[::-1]
                h = h.copy()
                for i in range(1, len(h)):
                    h[i] = a[i] * h[i - 1] + h[i]
                if reverse:
                    h = h[::-1]
                scanned[b] = np.moveaxis(h, 0, axis)
            else:
                scanned[b] = _sequential_scan(x[b], axis, reverse, step)
        result[:m * n] = scanned.astype(np.float32).reshape(-1)
        return {2: result}

    name = f"fz_scan_{index}"
    source = (HEADER + helper + f"@mytriton.jit\ndef {name}(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, "
              "BN: tl.constexpr):\n" + "\n".join(body) + "\n")
    return GeneratedKernel("scan", name, source, params, {"BM": bm, "BN": bn}, grid, [2], make_args, reference,
                           rtol=1e-4, atol=1e-4, num_warps=ch.choice((1, 2, 4, 8)),
                           description={"op": op, "axis": axis, "reverse": reverse})


BUILDERS: dict[str, Callable[[Any, int], GeneratedKernel]] = {
    "elementwise": _elementwise, "integer": _integer, "tile2d": _tile2d, "loop": _loop, "dot": _dot, "scan": _scan,
}


def draw_kernel(ch: Any, index: int = 0, family: str | None = None) -> GeneratedKernel:
    """One kernel, every choice made by ``ch``."""
    return BUILDERS[family or ch.choice(FAMILIES)](ch, index)


def generate_kernel(seed: int, family: str | None = None) -> GeneratedKernel:
    """The kernel of ``seed``: the same source, sizes and grid on every machine."""
    return draw_kernel(RandomChooser(seed), seed, family)


def kernels(family: str | None = None) -> Any:
    """A hypothesis strategy of generated kernels."""
    from hypothesis import strategies as st

    @st.composite
    def strategy(draw: Any) -> GeneratedKernel:
        return draw_kernel(HypothesisChooser(draw), 0, family)

    return strategy()
