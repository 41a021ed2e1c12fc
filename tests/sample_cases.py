"""Every sample kernel with inputs, a grid and its NumPy reference: one table
that the interpreter tests (everywhere) and the GPU tests (on the H200) share.

A case builds fresh random inputs (never zeros; sizes that are not multiples
of the tiles), launches the sample, and compares what it stored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import mytriton
from conftest import load_sample


@dataclass
class Case:
    sample: str
    kernel: str
    make: Callable[[np.random.Generator], tuple[list[Any], dict[str, np.ndarray]]]
    grid: Callable[[dict[str, Any]], tuple[int, ...]]
    meta: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5

    def run(self, backend: str, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        args, expected = self.make(rng)
        kernel = getattr(load_sample(self.sample), self.kernel)
        kernel[self.grid](*args, backend=backend, **self.meta)
        for label, reference in expected.items():
            # "name#i": the i-th argument, which the kernel stores to
            actual = args[int(label.split("#")[1])]
            np.testing.assert_allclose(actual, reference, rtol=self.rtol, atol=self.atol,
                                       err_msg=f"{self.sample}: output {label}")


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _poison(*shape, dtype=np.float32):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -12345, dtype)


def _elementwise(reference, inputs):
    def make(rng):
        n = 10_003
        xs = [_f32(rng, n) for _ in range(inputs)]
        out = _poison(n)
        return [*xs, out, n], {f"out#{inputs}": reference(*xs)}

    return make


def _rows(reference, n_rows=37, n_cols=200):
    def make(rng):
        x = _f32(rng, n_rows, n_cols)
        out = _poison(n_rows)
        return [x, out, n_rows, n_cols], {"out#1": reference(x)}

    return make


def _softmax(n_rows=19, n_cols=1000):
    def make(rng):
        x = _f32(rng, n_rows, n_cols) * 4
        out = _poison(n_rows, n_cols)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return [out, x, n_cols, n_cols, n_cols], {"out#0": e / e.sum(axis=1, keepdims=True)}

    return make


def _long_rows(make_rng_rows=5, n_cols=5000):
    def make(rng):
        x = _f32(rng, make_rng_rows, n_cols)
        out = _poison(make_rng_rows)
        return [x, out, n_cols], {"out#1": x.sum(axis=1)}

    return make


def _matmul(M=70, N=50, K=33):
    def make(rng):
        a, b = _f32(rng, M, K), _f32(rng, K, N)
        c = _poison(M, N)
        return [a, b, c, M, N, K], {"c#2": a @ b if K else np.zeros((M, N), np.float32)}

    return make


def _nested(n_outer=3, n_inner=4, width=300):
    def make(rng):
        x = _f32(rng, n_outer * n_inner, width)
        out = _poison(width)
        return [x, out, n_outer, n_inner, width], {"out#1": x.sum(axis=0)}

    return make


def _two_carried(n_chunks=7, width=1000):
    def make(rng):
        x = _f32(rng, n_chunks, width)
        best = _poison(width)
        count = _poison(mytriton.cdiv(width, 256), dtype=np.int32)
        return ([x, best, count, n_chunks, width],
                {"best#1": x.max(axis=0), "count#2": np.full(count.shape, n_chunks, np.int32)})

    return make


def _ragged(n_rows=23):
    def make(rng):
        lengths = rng.integers(0, 300, n_rows)
        lengths[3] = 0
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        values = _f32(rng, int(starts[-1]) + 1)
        out = _poison(n_rows)
        expected = np.array([values[s:e].sum() for s, e in zip(starts[:-1], starts[1:])], np.float32)
        return [values, starts, out], {"out#2": expected}

    return make


def _outer(M=37, N=150):
    def make(rng):
        x, y = _f32(rng, M), _f32(rng, N)
        out, x2 = _poison(M, N), _poison(M)
        return [x, y, out, x2, M, N], {"out#2": np.outer(x, y), "x2#3": 2 * x}

    return make


CASES: dict[str, Case] = {
    "outer": Case("outer", "outer_kernel", _outer(),
                  lambda m: (mytriton.cdiv(m["M"], m["BM"]), mytriton.cdiv(m["N"], m["BN"]))),
    "add": Case("add", "add_kernel", _elementwise(lambda x, y: x + y, 2),
                lambda m: (mytriton.cdiv(m["n"], m["BLOCK"]),)),
    "vector_copy": Case("vector_copy", "copy_kernel", _elementwise(lambda x: x, 1),
                        lambda m: (mytriton.cdiv(m["n"], m["BLOCK"]),)),
    "relu": Case("relu", "relu_kernel", _elementwise(lambda x: np.maximum(x, 0), 1),
                 lambda m: (mytriton.cdiv(m["n"], m["BLOCK"]),)),
    "sigmoid": Case("sigmoid", "sigmoid_kernel", _elementwise(lambda x: 1 / (1 + np.exp(-x)), 1),
                    lambda m: (mytriton.cdiv(m["n"], m["BLOCK"]),)),
    "row_sum": Case("row_sum", "row_sum_kernel", _rows(lambda x: x.sum(axis=1)),
                    lambda m: (mytriton.cdiv(m["n_rows"], m["BLOCK_M"]),)),
    "row_sum_64x128": Case("row_sum", "row_sum_kernel", _rows(lambda x: x.sum(axis=1), 100, 128),
                           lambda m: (mytriton.cdiv(m["n_rows"], m["BLOCK_M"]),),
                           {"BLOCK_M": 64, "BLOCK_N": 128}),
    "row_max": Case("row_max", "row_max_kernel", _rows(lambda x: x.max(axis=1), 37, 100),
                    lambda m: (mytriton.cdiv(m["n_rows"], m["BLOCK_M"]),)),
    "row_min": Case("row_min", "row_min_kernel", _rows(lambda x: x.min(axis=1), 9, 300),
                    lambda m: (mytriton.cdiv(m["n_rows"], m["BLOCK_M"]),)),
    "softmax": Case("softmax", "softmax_kernel", _softmax(), lambda m: (19,)),
    "softmax_16384_8_warps": Case("softmax", "softmax_kernel", _softmax(3, 16000), lambda m: (3,),
                                  {"BLOCK": 16384, "num_warps": 8}),
    "long_row_sum": Case("long_row_sum", "long_row_sum_kernel", _long_rows(), lambda m: (5,), rtol=1e-4, atol=1e-4),
    "matmul_runtime_k": Case("matmul_runtime_k", "matmul_runtime_k_kernel", _matmul(),
                             lambda m: (mytriton.cdiv(m["M"], m["BM"]), mytriton.cdiv(m["N"], m["BN"])),
                             rtol=1e-4, atol=1e-4),
    "matmul_runtime_k_zero_trip": Case("matmul_runtime_k", "matmul_runtime_k_kernel", _matmul(K=0),
                                       lambda m: (mytriton.cdiv(m["M"], m["BM"]), mytriton.cdiv(m["N"], m["BN"]))),
    "nested_loops": Case("nested_loops", "nested_loops_kernel", _nested(),
                         lambda m: (mytriton.cdiv(m["width"], m["BLOCK"]),), rtol=1e-4, atol=1e-4),
    "two_carried": Case("two_carried", "two_carried_kernel", _two_carried(),
                        lambda m: (mytriton.cdiv(m["width"], m["BLOCK"]),)),
    "ragged_rows": Case("ragged_rows", "ragged_rows_kernel", _ragged(), lambda m: (23,), rtol=1e-4, atol=1e-4),
}


def _tiled_matmul(M, N, K):
    def make(rng):
        a, b = _f32(rng, M, K), _f32(rng, K, N)
        c = _poison(M, N)
        return [a, b, c, M, N, K], {"c#2": a.astype(np.float64) @ b.astype(np.float64)}

    return make


def _matmul_grid(meta):
    return (mytriton.cdiv(meta["M"], meta["BM"]), mytriton.cdiv(meta["N"], meta["BN"]))


# samples/matmul.py's tl.dot has f32 operands and no precision: TF32, as in
# Triton (10 mantissa bits per operand), so the error grows like sqrt(K).
def _tf32_atol(K):
    return 6e-3 * K ** 0.5


CASES.update({
    "matmul_ragged": Case("matmul", "matmul_kernel", _tiled_matmul(70, 50, 77), _matmul_grid,
                          rtol=1e-3, atol=_tf32_atol(77)),
    "matmul_k_below_bk": Case("matmul", "matmul_kernel", _tiled_matmul(65, 130, 20), _matmul_grid,
                              rtol=1e-3, atol=_tf32_atol(20)),
    "matmul_square": Case("matmul", "matmul_kernel", _tiled_matmul(256, 256, 256), _matmul_grid,
                          rtol=1e-3, atol=_tf32_atol(256)),
})
