"""Where a GPU launch runs: the device that holds its arrays, the stream it
goes on, and each array argument's address.

As with a torch op or a Triton kernel: tensors on a GPU are passed by
address, and the launch goes on the current stream PyTorch has for their
device (CuPy's for CuPy arrays; the legacy default stream for other device
arrays), so it is ordered after the work queued there before it and before
the work queued after it, CUDA graph capture included. ``stream=`` names
another. Tensors on different GPUs, CPU tensors, and objects that are not
arrays are errors naming the argument, located at the launch. NumPy arrays
are copied to the GPU and back around a synchronous launch.
"""
from __future__ import annotations

import os
import sys
from contextvars import ContextVar
from typing import Any

from mytriton.diagnostics import CompileError, Location, printable

# What kinds of array a launch saw (a bit each): they decide its stream.
TORCH = 1
CUPY = 2

# Classes whose instances are PyTorch tensors (torch.Tensor, nn.Parameter, ...),
# added as launches meet them: the launcher reads these without asking again.
TORCH_TENSORS: set[type] = set()
_CLASS_LIMIT = 64

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# True while ``mytriton run`` launches: no caller's line launched it (the
# innermost frame outside mytriton would be click's).
FROM_COMMAND_LINE: ContextVar[bool] = ContextVar("mytriton_launch_from_command_line", default=False)


def launch_site() -> Location | None:
    """The caller's line that launched the kernel: the innermost frame
    outside mytriton (and functools, whose partial makes ``kernel[grid]``);
    None for ``mytriton run``'s launch."""
    if FROM_COMMAND_LINE.get():
        return None
    frame = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if not (os.path.abspath(file).startswith(_PACKAGE + os.sep) or file.endswith("functools.py")):
            return Location(file, frame.f_lineno, 1)
        frame = frame.f_back
    return None


def _error(kernel: str, message: str) -> CompileError:
    return CompileError(f"kernel '{printable(kernel)}': {message}", launch_site())


def not_on_gpu(kernel: str, name: str, value: Any) -> CompileError:
    device = getattr(value, "device", "cpu")
    return _error(kernel, f"argument '{name}' is a tensor on {device}, but the kernel runs on the GPU and reads "
                          f"GPU memory only (move it there first: {name}.cuda() or {name}.to('cuda'))")


def mixed_devices(kernel: str, first: str, first_device: int, name: str, device: int) -> CompileError:
    return _error(kernel, f"arguments on different GPUs: '{first}' is on cuda:{first_device} and '{name}' on "
                          f"cuda:{device} (a launch runs on one GPU; move them to one device)")


def _torch() -> Any:
    return sys.modules.get("torch")


def _is_torch_tensor(value: Any) -> bool:
    torch = _torch()
    if torch is None or not isinstance(value, torch.Tensor):
        return False
    if len(TORCH_TENSORS) < _CLASS_LIMIT:
        TORCH_TENSORS.add(type(value))
    return True


def locate(kernel: str, name: str, value: Any) -> tuple[int, int | None, int]:
    """(device, address, kind) of an array argument: kind TORCH, CUPY or 0
    (which stream it asks for); a host array is (-1, None, 0)."""
    if _is_torch_tensor(value):
        if not value.is_cuda:
            raise not_on_gpu(kernel, name, value)
        return value.get_device(), value.data_ptr(), TORCH
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        address = int(interface["data"][0])
        if type(value).__module__.split(".")[0] == "cupy":
            return int(value.device.id), address, CUPY
        return _device_of(kernel, name, value, address), address, 0
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        # Triton's tensor-likes (triton.reinterpret's wrapper, a library's own):
        # an address, on a GPU only where the driver says so.
        if getattr(value, "is_cuda", True) is False or getattr(getattr(value, "device", None), "type", "") == "cpu":
            raise not_on_gpu(kernel, name, value)
        address = int(value.data_ptr())
        torch = _torch()
        kind = TORCH if torch is not None and isinstance(getattr(value, "device", None), torch.device) else 0
        return _device_of(kernel, name, value, address), address, kind
    if hasattr(value, "__array_interface__"):
        return -1, None, 0
    raise _error(kernel, f"argument '{name}' is a {printable(type(value).__name__)}, not an array: a pointer "
                         "parameter takes a tensor (torch, CuPy), a device array or a NumPy array")


def _device_of(kernel: str, name: str, value: Any, address: int) -> int:
    """The GPU that holds ``address`` (the driver knows every device allocation)."""
    from mytriton.runtime.driver_api import driver

    device = driver().pointer_device(address) if address else None
    if device is None:
        index = getattr(getattr(value, "device", None), "index", None)
        if address == 0 and isinstance(index, int):
            return index  # an empty tensor: no memory to ask about
        raise _error(kernel, f"argument '{name}' ({printable(type(value).__name__)}) does not point into GPU "
                             "memory: pass a tensor or array on the GPU")
    return device


def host_array(kernel: str, name: str, value: Any) -> Any:
    """A host array argument as the C-contiguous NumPy array copied to the GPU."""
    import numpy as np

    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.kind == "O":
        raise _error(kernel, f"argument '{name}' ({printable(type(value).__name__)}) is not an array of numbers")
    if not array.flags.c_contiguous:
        raise _error(kernel, f"argument '{name}' must be a C-contiguous array (np.ascontiguousarray, "
                             "then copy results back)")
    return array


def default_device(driver: Any) -> int:
    """The GPU of a launch without device arrays: ``MYTRITON_DEVICE``, else the
    device current on this thread (PyTorch's ``torch.cuda.set_device``), else 0."""
    chosen = os.environ.get("MYTRITON_DEVICE")
    if chosen:
        try:
            return int(chosen)
        except ValueError:
            raise CompileError(f"MYTRITON_DEVICE={printable(chosen)} is not a device number") from None
    current = driver.current_device()
    return 0 if current is None else current


# PyTorch's current stream of a device as a CUstream handle (the function
# Triton's launcher calls too), once a launch has looked it up.
torch_raw_stream: Any = None


def torch_stream(device: int) -> int:
    """PyTorch's current stream on ``device``, as a CUstream handle."""
    global torch_raw_stream
    if torch_raw_stream is None:
        torch = _torch()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        torch_raw_stream = raw or (lambda index: torch.cuda.current_stream(index).cuda_stream)
    return torch_raw_stream(device)


def cupy_stream(device: int) -> int:
    import cupy

    with cupy.cuda.Device(device):
        return int(cupy.cuda.get_current_stream().ptr)


def launch_stream(stream: Any, kinds: int, device: int) -> int:
    """The CUstream a launch goes on: ``stream`` where given, else the
    current stream of the arrays' framework on ``device``, else the legacy
    default stream (0)."""
    if stream is not None:
        return stream_handle(stream, device)
    if kinds & TORCH:
        return torch_stream(device)
    if kinds & CUPY:
        return cupy_stream(device)
    return 0


def stream_handle(stream: Any, device: int) -> int:
    """A ``stream=`` value as a CUstream: an int handle, a torch.cuda.Stream
    (``cuda_stream``), a CuPy stream (``ptr``), or an object of the CUDA stream
    protocol (``__cuda_stream__``)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    on = getattr(stream, "device", None)
    index = getattr(on, "index", getattr(on, "id", None))
    if isinstance(index, int) and index != device:
        raise CompileError(f"stream= is a stream of GPU {index}, but the launch runs on GPU {device}",
                           launch_site())
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    protocol = getattr(stream, "__cuda_stream__", None)
    if callable(protocol):
        _, handle = protocol()
        return int(handle)
    raise CompileError(f"stream= takes a stream handle (an int), a torch.cuda.Stream or a CuPy stream, "
                       f"got {printable(type(stream).__name__)}", launch_site())
