"""Kernel arguments from Python: their mytriton types and host views.

NumPy arrays and tensors become pointers to their element type; Python ints
become i32 (i64 when they do not fit, u64 from 2**63), floats f32, bools i1,
as in Triton.
"""
from __future__ import annotations

from typing import Any

from mytriton.diagnostics import CompileError, printable
from mytriton.tools.tensor_descriptor import TensorDescriptor
from mytriton.types import (
    BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, SIGNATURE_NAMES, U8, U16, U32, U64, DescriptorParam, PointerType,
    ScalarType, Type,
)

# __cuda_array_interface__ typestrs without their byte order (bf16 has none).
_TYPESTR = {"f2": F16, "f4": F32, "f8": F64, "i1": I8, "i2": I16, "i4": I32, "i8": I64,
            "u1": U8, "u2": U16, "u4": U32, "u8": U64, "b1": BOOL}
# NumPy's dtype names (bfloat16 is ml_dtypes' dtype).
_NUMPY_NAMES = {"float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64, "int8": I8, "int16": I16,
                "int32": I32, "int64": I64, "uint8": U8, "uint16": U16, "uint32": U32, "uint64": U64,
                "bool": BOOL}
_TORCH_NAMES = {"torch." + name: t for name, t in _NUMPY_NAMES.items()}


def is_tensor(value: Any) -> bool:
    """A tensor, or a tensor-like: Triton passes anything with ``data_ptr``
    (and a dtype) by that address."""
    return hasattr(value, "data_ptr") and hasattr(value, "dtype")


def tensor_view(tensor: Any) -> Any:
    """A CPU tensor's memory as a NumPy array sharing it, for the interpreter:
    detached from autograd; a strided view as the flat span its elements lie
    in (a kernel reaches them through its strides); bf16 as ml_dtypes' bfloat16."""
    if getattr(tensor, "is_cuda", False) or getattr(getattr(tensor, "device", None), "type", "cpu") != "cpu":
        raise CompileError(f"the interpreter reads host memory only; got a tensor on {tensor.device}")
    view = tensor.detach()
    if not view.is_contiguous():
        extent = 1 + sum((size - 1) * stride for size, stride in zip(view.shape, view.stride())) \
            if view.numel() else 0
        view = view.as_strided((extent,), (1,))
    if str(view.dtype) == "torch.bfloat16":
        import ml_dtypes
        import torch

        return view.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return view.numpy()


def is_device_array(value: Any) -> bool:
    if is_tensor(value):
        cuda = getattr(value, "is_cuda", None)
        return bool(cuda) if cuda is not None else getattr(getattr(value, "device", None), "type", "") == "cuda"
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


# Constant values a launch key holds as they are (hashable, equal only to
# equals): a dtype too (``tl.bfloat16`` passed to a ``tl.constexpr``, as
# Liger's norms pass their input's), else every such launch took the slow path.
_PLAIN_CONSTANTS = (int, str, float, bool, type(None), ScalarType)
_I32_RANGE = range(-2**31, 2**31)

# Whether every instance of a class is a tensor (is_tensor): true where
# data_ptr and dtype are attributes of the class itself
# (torch.Tensor), so a launch asks the class once. Where false, instances
# may still carry them: those are asked one by one.
TENSOR_CLASS: dict[type, bool] = {}
_CLASS_CACHE_LIMIT = 256
# dtype classes whose instances are equal only to themselves (torch.dtype):
# the dtype object itself tells launches apart, without str() on each.
_IDENTITY_DTYPES: dict[type, bool] = {}
# Tensor classes (TENSOR_CLASS) seen with such dtypes: a launch key takes
# their dtype as it is, without asking the class again.
_KEYED_TENSORS: set[type] = set()


def is_tensor_class(cls: type) -> bool:
    """Whether every instance of ``cls`` is a tensor (see TENSOR_CLASS)."""
    known = TENSOR_CLASS.get(cls)
    if known is None:
        known = hasattr(cls, "data_ptr") and hasattr(cls, "dtype")
        if len(TENSOR_CLASS) < _CLASS_CACHE_LIMIT:
            TENSOR_CLASS[cls] = known
    return known


def _dtype_tag(dtype: Any) -> Any:
    """What a launch key holds of a tensor's dtype: the dtype where dtypes
    compare by identity (one object per dtype, as torch's), else its name
    (what element_type reads)."""
    cls = type(dtype)
    identity = _IDENTITY_DTYPES.get(cls)
    if identity is None:
        identity = cls.__eq__ is object.__eq__ and cls.__hash__ is object.__hash__
        if len(_IDENTITY_DTYPES) < _CLASS_CACHE_LIMIT:
            _IDENTITY_DTYPES[cls] = identity
    return dtype if identity else str(dtype)


def launch_key(values: list[Any], on_value: frozenset, on_alignment: frozenset, names: list[str],
               constants: list[Any], rest: tuple) -> tuple | None:
    """A key that tells launches apart wherever their types, specialisation
    hints or constant values differ (what the compile cache's key holds), but
    cheaper to make: ints by range and hint, arrays by their class, element
    type and alignment; None where an argument is not one of those (the full
    key decides)."""
    return coded_launch_key(values, specialisation_codes(names, on_value, on_alignment), constants, rest)


def specialisation_codes(names: list[str], on_value: frozenset, on_alignment: frozenset) -> tuple[int, ...]:
    """Per parameter, what a launch specialises it on: 0 nothing
    (do_not_specialize), 1 the value 1 only (do_not_specialize_on_alignment),
    2 the value 1, divisibility by 16 or 8 and alignment."""
    return tuple(0 if name not in on_value else 2 if name in on_alignment else 1 for name in names)


def coded_launch_key(values: Any, codes: tuple[int, ...], constants: Any, rest: tuple) -> tuple | None:
    """launch_key with each parameter's specialisation_codes worked out
    (once per kernel): an int is one number, its width (0 i32, 4 i64, 8 u64)
    plus its hint (1 the value 1, 2 divisible by 16, 3 by 8 and not 16)."""
    parts: list[Any] = []
    append = parts.append
    for value, code in zip(values, codes):
        cls = type(value)
        if cls is int:
            part = 0 if value in _I32_RANGE else 8 if value >= 2**63 else 4
            if code:
                if value == 1:
                    part += 1
                elif code == 2 and value % 8 == 0:
                    part += 2 if value % 16 == 0 else 3
            append(part)
        elif cls in _KEYED_TENSORS:
            append((cls, value.dtype, code == 2 and value.data_ptr() % 16 == 0))
        elif cls is float or cls is bool or value is None:
            append(cls)
        elif cls is TensorDescriptor:
            descriptor = value.launch_key()
            if descriptor is None:
                return None
            append(descriptor)
        else:
            if TENSOR_CLASS.get(cls) or is_tensor_class(cls) or is_tensor(value):
                address, dtype = value.data_ptr(), value.dtype
                if _IDENTITY_DTYPES.get(type(dtype)):
                    typestr = dtype
                    if TENSOR_CLASS.get(cls) and len(_KEYED_TENSORS) < _CLASS_CACHE_LIMIT:
                        _KEYED_TENSORS.add(cls)
                else:
                    typestr = _dtype_tag(dtype)
            else:
                interface = getattr(value, "__cuda_array_interface__", None)
                if isinstance(interface, dict):
                    address = interface["data"][0]
                    typestr = interface["typestr"]
                else:
                    interface = getattr(value, "__array_interface__", None)
                    if interface is None:
                        return None
                    address, typestr = interface["data"][0], interface["typestr"]
                    typestr = f"{typestr}{getattr(value, 'dtype', '')}"  # bf16's typestr is a plain "<V2"
            append((cls, typestr, code == 2 and address % 16 == 0))
    for value in constants:
        if type(value) not in _PLAIN_CONSTANTS:
            return None
        append((type(value), value))
    return (*parts, *rest)


def check_constexpr(value: Any, name: str) -> None:
    """A tl.constexpr argument the IR can hold (and print): a number, a bool,
    a string, None, a dtype, a @jit function, or a tuple of them; else a
    CompileError at the launch."""
    from mytriton.runtime.jit import JITFunction

    if value is None or isinstance(value, (bool, int, float, str, ScalarType, JITFunction)):
        return
    if isinstance(value, tuple):
        for item in value:
            check_constexpr(item, name)
        return
    from mytriton.language import UnsupportedDtype
    from mytriton.runtime.placement import launch_site

    what = (f"tl.{value.name}, one of Triton's 8-bit float types, which mytriton does not support"
            if isinstance(value, UnsupportedDtype) else f"a value of type {printable(type(value).__name__)}")
    raise CompileError(f"argument '{name}': a tl.constexpr takes a number, a bool, a string, None, a dtype, a @jit "
                       f"function or a tuple of them, got {what}", launch_site())


def arg_type(value: Any, name: str) -> Type | DescriptorParam | None:
    """The type an argument is passed as; None for None, which Triton
    compiles in as a constant (a pointer the kernel does not use, or a
    scalar it tests with ``is None``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        # Triton's specialisation of a Python int (u64 only where i64 cannot hold it).
        return I32 if -2**31 <= value < 2**31 else U64 if value >= 2**63 else I64
    if isinstance(value, float):
        return F32
    # Tensors first: asking a tensor for __cuda_array_interface__ builds a dict.
    if is_tensor(value):
        return PointerType(element_type(value, name))
    if getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        return element_type(value, name)  # a NumPy scalar
    if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
        return PointerType(element_type(value, name))
    if isinstance(value, TensorDescriptor):
        return value.param_type(name)
    from mytriton.runtime.placement import launch_site

    raise CompileError(f"argument '{name}': cannot pass {printable(type(value).__name__)} to a kernel "
                       "(use an array, a tensor, an int, a float, a bool or a TensorDescriptor)", launch_site())


def address_of(value: Any) -> int | None:
    """The address of an array argument's first element, where the argument
    has one: a tensor's ``data_ptr()``, a device array's or a NumPy array's
    interface pointer (NumPy arrays are copied to a fresh, aligned device
    buffer on the GPU; their own address is the conservative fact)."""
    if is_tensor(value):
        return int(value.data_ptr())
    for name in ("__cuda_array_interface__", "__array_interface__"):
        interface = getattr(value, name, None)
        if isinstance(interface, dict) and isinstance(interface.get("data"), tuple):
            return int(interface["data"][0])
    return None


def specialization(value: Any, t: Type, on_value: bool = True, on_alignment: bool = True) -> str:
    """Triton's specialisation of one runtime argument (runtime/jit.py,
    ``specialize_impl``): ``"1"`` for an integer equal to 1 (compiled in as a
    constant), ``"16"`` for an integer divisible by 16 or a pointer whose
    address is a multiple of 16 bytes, else ``""``; and, as Triton 2 did
    (``divisible_by_8``), ``"8"`` for an integer divisible by 8 and not 16.
    A row stride or K of 1000 then proves 16-byte rows of f16 (and 32-byte
    of f32): whole cp.async chunks, not ones the kernel tests at run time,
    which made the grouped matmul at 3000x2000x1000 build 0.05 s longer.
    ``on_value`` False is ``do_not_specialize``; ``on_alignment`` False is
    ``do_not_specialize_on_alignment`` (the value 1 is still specialised)."""
    if not on_value:
        return ""
    if isinstance(t, PointerType):
        address = address_of(value)
        return "16" if on_alignment and address is not None and address % 16 == 0 else ""
    if isinstance(t, ScalarType) and t.is_int and isinstance(value, int) and not isinstance(value, bool):
        if value == 1:
            return "1"
        return integer_hint(value) if on_alignment else ""
    return ""


def integer_hint(value: int) -> str:
    """An integer's divisibility hint: "16", "8" or ""."""
    return "16" if value % 16 == 0 else "8" if value % 8 == 0 else ""


def signature_of(types: list[Type | DescriptorParam | None], hints: list[str] | None = None) -> str:
    """A Triton AOT signature string for these types (``*fp32:16, i32``),
    with each argument's specialisation as its hint; ``None`` for an
    argument passed as None (arg_type), which the signature binds."""
    parts = []
    for index, t in enumerate(types):
        if t is None:
            parts.append("None")
            continue
        if isinstance(t, DescriptorParam):
            parts.append(str(t))
            continue
        text = "*" + SIGNATURE_NAMES[t.pointee] if isinstance(t, PointerType) else SIGNATURE_NAMES[t]
        hint = hints[index] if hints else ""
        parts.append(f"{text}:{hint}" if hint else text)
    return ", ".join(parts)
