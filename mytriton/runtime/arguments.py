"""Kernel arguments from Python: their mytriton types and host views.

NumPy arrays and tensors become pointers to their element type; Python ints
become i32 (i64 when they do not fit), floats f32, bools i1, as in Triton.
"""
from __future__ import annotations

from typing import Any

from mytriton.diagnostics import CompileError
from mytriton.types import BF16, BOOL, F16, F32, I32, I64, PointerType, ScalarType, Type

_TYPESTR = {"f4": F32, "f2": F16, "i4": I32, "i8": I64, "b1": BOOL}
_NUMPY_NAMES = {"float32": F32, "float16": F16, "int32": I32, "int64": I64, "bool": BOOL,
                "bfloat16": BF16}
_TORCH_NAMES = {"torch.float32": F32, "torch.float16": F16, "torch.bfloat16": BF16,
                "torch.int32": I32, "torch.int64": I64, "torch.bool": BOOL}
_SIGNATURE = {F32: "fp32", F16: "fp16", BF16: "bf16", I32: "i32", I64: "i64", BOOL: "i1"}


def is_tensor(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "dtype") and hasattr(value, "is_cuda")


def is_device_array(value: Any) -> bool:
    if is_tensor(value):
        return bool(value.is_cuda)
    return hasattr(value, "__cuda_array_interface__")


def element_type(value: Any, name: str) -> ScalarType:
    if is_tensor(value):
        t = _TORCH_NAMES.get(str(value.dtype))
    elif hasattr(value, "__cuda_array_interface__"):
        typestr = value.__cuda_array_interface__["typestr"]
        t = _TYPESTR.get(typestr[1:])
    else:
        t = _NUMPY_NAMES.get(str(getattr(value, "dtype", "")))
    if t is None:
        raise CompileError(f"argument '{name}': unsupported element type {getattr(value, 'dtype', '?')}")
    return t


def arg_type(value: Any, name: str) -> Type:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I32 if -2**31 <= value < 2**31 else I64
    if isinstance(value, float):
        return F32
    # Tensors first: asking a tensor for __cuda_array_interface__ builds a dict.
    if is_tensor(value):
        return PointerType(element_type(value, name))
    if getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        return element_type(value, name)  # a NumPy scalar
    if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
        return PointerType(element_type(value, name))
    raise CompileError(f"argument '{name}': cannot pass {type(value).__name__} to a kernel "
                       "(use an array, a tensor, an int, a float or a bool)")


def signature_of(types: list[Type]) -> str:
    """A Triton AOT signature string for these types (``*fp32, i32``)."""
    parts = []
    for t in types:
        if isinstance(t, PointerType):
            parts.append("*" + _SIGNATURE[t.pointee])
        else:
            parts.append(_SIGNATURE[t])
    return ", ".join(parts)
