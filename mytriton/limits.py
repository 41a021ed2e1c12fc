"""The compiler's named limits.

Every limit bounds the work or memory a small input could otherwise ask
for (a 10-character constant that needs gigabytes, a loop unrolled a billion
times, a tile of 2^28 elements). Each is checked where the quantity first
becomes known and reported there as a located error that names the limit.

The checks here only say what is wrong (a message, or None); the caller
knows where, and raises. Deep but legal inputs are the deep-stack runner's
(``deep_stack.py``).
"""
from __future__ import annotations

from typing import Any

# Elements in one tile (Triton's TRITON_MAX_TENSOR_NUMEL): a 2^20 f32 tile is
# already 4 MiB per program.
MAX_TILE_ELEMENTS = 1 << 20

# Iterations unrolled while tracing one kernel, counting every iteration of
# nested constant-bound loops (range with constant bounds, tl.static_range).
MAX_STATIC_UNROLL = 10_000

# Tree IR nodes one kernel's trace may create (bounds what unrolled bodies
# times iterations can build). Every later stage costs about as much per op
# as tracing (a few thousand ops a second through to CUDA, on one core), so
# this bounds the whole compile: 30,000 nodes take about 5 s to CUDA. A
# helper called again with the same arguments reuses the first call's nodes
# (Tracer.call_jit), so the count is what the kernel builds, not how often
# its source spells it.
MAX_TRACED_NODES = 30_000

# How deeply one expression may nest, in kernel source (an a + b + ... chain
# is as deep as it has terms) and in the traced tree.
MAX_EXPRESSION_DEPTH = 20_000

# Compile-time constants: bits of an integer (4096 bits print in about 1,230
# digits, well under Python's 4,300-digit limit on int/str conversion), and
# elements of a string or tuple.
MAX_CONSTANT_BITS = 4096
MAX_CONSTANT_LENGTH = 1 << 16

# Brackets open at once in IR text (tree or SSA).
MAX_IR_NESTING = 25_000

# Runtime loops and ifs nested in one another. Python allows about 100
# levels of indentation, but an if/elif chain nests one if in the else of the
# one before without indenting, and Triton kernels dispatch on a value with
# chains of a hundred branches and more. The NumPy interpreter runs a nest on
# the caller's stack, two Python frames a level, under Python's default
# recursion limit of 1,000.
MAX_LOOP_NESTING = 256

# Inputs: bytes of one input file or stdin; the highest source line a header
# may name; bytes of a source file read back to quote a line in a diagnostic.
MAX_INPUT_BYTES = 64 << 20
MAX_SOURCE_LINES = 1_000_000
MAX_SOURCE_BYTES = 16 << 20

# CUDA's grid limits (programs per axis), on every backend; characters of a
# `run --grid` expression; elements of an array `run` generates (1 GiB of f32).
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_GRID_TEXT = 1000
MAX_GENERATED_ELEMENTS = 1 << 28

# The interpreter runs the grid in chunks of programs so that programs x the
# elements of all the values a program holds stay under this many elements.
INTERP_CHUNK_ELEMENTS = 1 << 24

# The elements a whole interpreted grid holds (programs x the elements of one
# program): 256 chunks, a few minutes. A grid of a billion programs is the
# GPU's work; the interpreter refuses it at once rather than run for days.
MAX_INTERP_ELEMENTS = 1 << 32

# The deep-stack runner (deep_stack.py): a worker thread's stack and the
# recursion limit while it runs (about 5 KiB of stack per Python frame, so
# that the recursion limit, not the stack, is what runs out).
DEEP_STACK_BYTES = 1 << 30
DEEP_RECURSION_LIMIT = 200_000


def tile_error(shape: tuple[int, ...]) -> str | None:
    """Why a tile of ``shape`` is over the limit, or None."""
    numel = 1
    for d in shape:
        numel *= d
    if numel <= MAX_TILE_ELEMENTS:
        return None
    dims = "x".join(str(d) for d in shape)
    return (f"a tile of shape {dims} has {numel} elements, over the limit of {MAX_TILE_ELEMENTS} "
            f"(MAX_TILE_ELEMENTS); split the work over more programs")


def grid_error(grid: tuple[int, ...]) -> str | None:
    """Why ``grid`` is over CUDA's limits on programs per axis, or None."""
    for axis, (size, limit) in enumerate(zip(grid, MAX_GRID)):
        if size > limit:
            return f"grid axis {axis} has {size} programs, over CUDA's limit of {limit} (MAX_GRID)"
    return None


def constant_result_error(op: type, a: Any, b: Any) -> str | None:
    """Why ``a <op> b`` (``op`` an ``ast`` operator class) on compile-time
    constants would be over the constant limits, or None; judged from the
    operands' sizes before anything is computed."""
    name = op.__name__
    if _is_int(a) and _is_int(b):
        bits = None
        if name == "LShift" and b > 0:
            bits = a.bit_length() + b
        elif name == "Mult":
            bits = a.bit_length() + b.bit_length()
        elif name == "Pow" and b > 0 and abs(a) > 1:
            bits = (a.bit_length() - 1) * b + 1
        if bits is not None and bits > MAX_CONSTANT_BITS:
            return (f"the result would have about {bits} bits, over the limit of {MAX_CONSTANT_BITS} "
                    "(MAX_CONSTANT_BITS)")
        return None
    length = None
    if name == "Mult" and isinstance(a, (str, tuple)) and _is_int(b):
        length = len(a) * max(b, 0)
    elif name == "Mult" and _is_int(a) and isinstance(b, (str, tuple)):
        length = a * len(b) if a > 0 else 0
    elif name == "Add" and isinstance(a, (str, tuple)) and isinstance(b, (str, tuple)):
        length = len(a) + len(b)
    if length is not None and length > MAX_CONSTANT_LENGTH:
        return (f"the result would have {length} elements, over the limit of {MAX_CONSTANT_LENGTH} "
                "(MAX_CONSTANT_LENGTH)")
    return None


def constant_value_error(value: Any) -> str | None:
    """Why a computed constant is over the limits, or None (a chain of
    additions grows a bit at a time, which no single operation shows)."""
    if _is_int(value) and value.bit_length() > MAX_CONSTANT_BITS:
        return f"the result has {value.bit_length()} bits, over the limit of {MAX_CONSTANT_BITS} (MAX_CONSTANT_BITS)"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int)  # bools are ints too, and as small
