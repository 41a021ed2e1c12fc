"""The kernel language, ``import mytriton.language as tl``.

Kernels are never executed by Python: the frontend reads their source and
interprets these names itself (mytriton/frontend/builtins.py gives each one
its meaning). Calling one outside a kernel is an error.
"""
from __future__ import annotations

from mytriton.language.host_stubs import outside_kernel
from mytriton.ir.opdefs import MATH_FUNCTIONS
from mytriton.types import BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, ScalarType

int1 = BOOL
int8 = I8
int16 = I16
int32 = I32
int64 = I64
uint8 = U8
uint16 = U16
uint32 = U32
uint64 = U64
float16 = F16
bfloat16 = BF16
float32 = F32
float64 = F64
dtype = ScalarType

# Triton's names; each type's first name is the one bundles spell it by.
DTYPES = {"int1": int1, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
          "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
          "float16": float16, "bfloat16": bfloat16, "float32": float32, "float64": float64}


class PropagateNan:
    """Whether ``tl.maximum``/``tl.minimum``/``tl.clamp`` give NaN for a NaN
    operand (ALL) or the other operand (NONE, the default), Triton's values."""

    NONE = 0x0000
    ALL = 0xFFFF


# Triton's largest number of elements in one tensor (its triton._utils).
TRITON_MAX_TENSOR_NUMEL = 1048576

# Constant names of the language a kernel may read, by their path under ``tl``
# (CONSTEXPR_0: Triton's tl.core.CONSTEXPR_0, a default axis in libraries' helpers).
CONSTANTS = {"PropagateNan.NONE": PropagateNan.NONE, "PropagateNan.ALL": PropagateNan.ALL,
             "TRITON_MAX_TENSOR_NUMEL": TRITON_MAX_TENSOR_NUMEL, "CONSTEXPR_0": 0}


class constexpr:
    """Marks a kernel parameter as a compile-time constant (an annotation)."""

    def __init__(self, value=None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


CONSTEXPR_0 = constexpr(0)


class tensor:
    """Triton's tensor class, here for annotations (``x_ptr: tl.tensor``),
    which Python evaluates as it imports a kernel's module: kernels are read,
    never run, so no Python value is ever one."""

    def __init__(self, *args, **kwargs) -> None:
        raise RuntimeError("tl.tensor values exist only inside a @mytriton.jit kernel")


class const:
    """Triton's annotation of a pointer a kernel only reads (``in_ptr: tl.const``);
    the frontend reads the parameter as any other."""


class tensor_descriptor:
    """Triton's tensor descriptor class. In a kernel, ``isinstance(x,
    tl.tensor_descriptor)`` tells a descriptor (a host ``TensorDescriptor``
    argument, or ``tl.make_tensor_descriptor``'s) from a pointer, as the
    fused-attention tutorial's ``_maybe_make_tensor_desc`` asks."""

    def __init__(self, *args, **kwargs) -> None:
        raise RuntimeError("tl.tensor_descriptor values exist only inside a @mytriton.jit kernel")


# The classes a kernel may name in ``isinstance`` (and annotations).
CLASSES = ("tensor", "tensor_descriptor", "const", "constexpr")


class UnsupportedDtype:
    """A dtype of Triton's that mytriton does not have (its 8-bit floats):
    a name a kernel may spell in a branch it does not take
    (``tl.float8e5 if FP8_OUTPUT else tl.float16``); taken, it is a located
    error."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"triton.language.{self.name} (not supported by mytriton)"


UNSUPPORTED_DTYPES = ("float8e4nv", "float8e5", "float8e4b8", "float8e5b16", "float8e4b15")
for _name in UNSUPPORTED_DTYPES:
    globals()[_name] = UnsupportedDtype(_name)


# Triton's random numbers (its language/random.py): @jit helpers written in
# the kernel language, in mytriton/language/random.py (frontend/library.py
# traces them); also ``tl.random.<name>``.
RANDOM_FUNCTIONS = (
    "philox_impl", "philox", "randint", "randint4x", "uint_to_uniform_float", "rand", "rand4x",
    "pair_uniform_to_normal", "randn", "randn4x",
)

# Triton's tl.sort and tl.flip (its language/standard.py): @jit helpers
# written in the kernel language, in mytriton/language/sorting.py.
SORTING_FUNCTIONS = ("sort", "flip", "topk", "bitonic_merge")
# Triton's scans and index reductions (its language/standard.py): @jit
# helpers over tl.associative_scan and tl.reduce, in mytriton/language/standard.py.
STANDARD_FUNCTIONS = ("cumsum", "cumprod", "argmax", "argmin", "xor_sum", "reduce_or", "ravel", "swizzle2d")
# Its helpers that tl.max / tl.min call with return_indices=True.
STANDARD_HELPERS = ("max_with_indices", "min_with_indices")

# Every function a kernel may call as ``tl.NAME``; the elementwise math
# functions come from the op table (frontend/builtins.py gives them meaning
# from it too), so a new one needs no line here.
FUNCTIONS = (
    "program_id", "num_programs", "arange", "load", "store",
    *MATH_FUNCTIONS, "abs",
    "where", "maximum", "minimum",
    "clamp", "fma", "div_rn", "fdiv", "umulhi", "softmax",
    "zeros", "full", "empty", "sum", "max", "min", "dot", "expand_dims",
    "static_range", "range", "cdiv",
    # Hints, spellings and compile-time checks (Triton's names and signatures).
    "multiple_of", "max_contiguous", "max_constancy", "cast", "pointer_type",
    "static_assert", "static_print", "device_assert", "device_print", "trans", "assume",
    # Arithmetic as functions (Triton's core.add, sub, mul).
    "add", "sub", "mul",
    # Shape ops (Triton's names and signatures).
    "permute", "reshape", "view", "split", "join", "interleave", "cat", "broadcast_to", "broadcast",
    "squeeze", "unsqueeze", "zeros_like", "full_like",
    *RANDOM_FUNCTIONS, *SORTING_FUNCTIONS, "histogram", "gather", "inline_asm_elementwise",
    # Atomics (Triton's names and signatures).
    "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
    "atomic_cas", "debug_barrier",
    # Block pointers and tensor descriptors (Triton's names and signatures).
    "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor",
    # Scans and reductions with a @jit combine function (Triton's names and signatures).
    "reduce", "associative_scan", *STANDARD_FUNCTIONS,
)


for _name in FUNCTIONS:
    globals()[_name] = outside_kernel(__name__, _name, f"tl.{_name}")


def cdiv(a: int, b: int) -> int:  # noqa: F811 - also usable on the host, like triton.cdiv
    return -(-a // b)


# ``tl.math.<name>``: Triton's math namespace, the same functions as ``tl.<name>``.
from mytriton.language import extra, math  # noqa: E402



def __getattr__(name: str):
    # ``tl.random``: its @jit helpers need mytriton.jit, so it loads on first use.
    if name == "random":
        import importlib

        return importlib.import_module("mytriton.language.random")
    raise AttributeError(f"module 'mytriton.language' has no attribute '{name}'")


__all__ = ["constexpr", "const", "dtype", "extra", "math", "PropagateNan", "tensor", "tensor_descriptor",
           "TRITON_MAX_TENSOR_NUMEL", "CONSTEXPR_0", *DTYPES, *UNSUPPORTED_DTYPES, *FUNCTIONS]

# ``tl.core`` (triton.language.core) re-exports the names above, so it comes after them.
from mytriton.language import core  # noqa: E402,F401
