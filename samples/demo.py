"""The demo: launch the vector-add sample from Python, Triton-style, and check it
against NumPy. Runs on the GPU when the CUDA driver sees one, else in the NumPy interpreter."""
import importlib.util
import pathlib
import time

import numpy as np

import mytriton
from mytriton.runtime.jit import explain_backend

here = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("add", here / "add.py")
add = importlib.util.module_from_spec(spec)
spec.loader.exec_module(add)

n = 1_000_003  # not a multiple of BLOCK: the last program is masked
rng = np.random.default_rng(2026)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)

backend, why = explain_backend()
if backend == "interp":
    print(f"running in the NumPy interpreter: {why}")  # the same reason `mytriton doctor` gives
start = time.perf_counter()
add.add_kernel[lambda meta: (mytriton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
elapsed = time.perf_counter() - start

expected = x + y
if np.array_equal(out, expected):
    print(f"add_kernel on {backend} ({n} elements, {elapsed * 1e3:.0f} ms with compilation): matches NumPy")
else:
    bad = int(np.sum(out != expected))
    raise SystemExit(f"add_kernel on {backend}: {bad} of {n} elements differ from NumPy")
