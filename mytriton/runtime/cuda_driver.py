"""Loading and launching generated CUDA through PyCUDA.

PyCUDA is imported only here, and only when a kernel runs on the GPU. The
process uses the device's primary context, the one PyTorch and CuPy use, so
their tensors can be passed without copies.
"""
from __future__ import annotations

import atexit
import functools
import math
import os
import struct
from typing import Any, Sequence

from mytriton.backends.cuda.emitter import read_header
from mytriton.backends.cuda.nvcc import compile_cubin
from mytriton.diagnostics import CompileError
from mytriton.ir.text_common import parse_type
from mytriton.runtime.arguments import TENSOR_CLASS, is_tensor, is_tensor_class
from mytriton.target import DEFAULT_SHARED_LIMIT
from mytriton.types import BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, PointerType

_context = None


INSTALL_HINT = "pip install 'mytriton[cuda]' (PyCUDA builds from source against the CUDA toolkit)"


def pycuda_import_error() -> str | None:
    """Why PyCUDA cannot be imported (the exception, as Python names it), or None."""
    try:
        import pycuda.driver  # noqa: F401
    except Exception as err:  # ImportError, or a PyCUDA built for another CUDA
        return f"{type(err).__name__}: {err}"
    return None


@functools.lru_cache(maxsize=None)
def cuda_status() -> tuple[bool, str]:
    """(whether a GPU is usable, why): PyCUDA importable, the driver
    started, at least one device. The reason says what failed, exactly."""
    problem = pycuda_import_error()
    if problem is not None:
        return False, f"PyCUDA cannot be imported ({problem}); install it with {INSTALL_HINT}"
    import pycuda.driver as drv

    try:
        drv.init()
        count = drv.Device.count()
    except Exception as err:  # no driver, no device node
        return False, f"PyCUDA could not start the CUDA driver ({type(err).__name__}: {err})"
    if count == 0:
        return False, "PyCUDA sees no GPU"
    return True, f"PyCUDA sees {count} GPU(s)"


def cuda_available() -> bool:
    return cuda_status()[0]


def context() -> Any:
    global _context
    if _context is None:
        import pycuda.driver as drv

        drv.init()
        device = drv.Device(int(os.environ.get("MYTRITON_DEVICE", "0")))
        _context = device.retain_primary_context()
        _context.push()
        atexit.register(_release)
    return _context


def _release() -> None:
    global _context
    if _context is not None:
        try:
            _context.pop()
        except Exception:
            pass
        _context = None


# struct formats of scalar kernel parameters
_FORMAT = {I8: "b", I16: "h", I32: "i", I64: "q", U8: "B", U16: "H", U32: "I", U64: "Q",
           F32: "f", F64: "d", F16: "e", BOOL: "?", BF16: "H"}


def bf16_bits(value: float) -> int:
    """The bits of ``value`` as a bf16 (the top half of its f32, rounded to
    nearest even; NaN stays a quiet NaN), which the launcher passes as a
    16-bit integer."""
    import math
    import struct

    value = float(value)
    if math.isfinite(value) and abs(value) > 3.4028234663852886e38:  # beyond f32: struct refuses it
        value = math.copysign(math.inf, value)
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def _converter(t: Any) -> Any:
    """The function turning a Python value into the launch value of scalar type ``t``."""
    if t == BF16:
        return bf16_bits
    return bool if t == BOOL else float if t in (F32, F64, F16) else int


def f16_value(value: Any) -> float:
    """``value`` as a float that packs as an f16: beyond the largest f16
    (65504, rounded), infinity, as a cast to f16 gives (struct refuses it)."""
    value = float(value)
    if math.isfinite(value) and abs(value) >= 65520.0:
        return math.copysign(math.inf, value)
    return value


def _packed_converter(t: Any) -> Any:
    """What a scalar of type ``t`` needs before struct packs it, or None:
    struct takes ints, floats and bools as they are (and refuses what the
    prepared call would convert: those launches take the prepared call)."""
    if t == BF16:
        return bf16_bits
    return f16_value if t == F16 else None


def _device_address(value: Any) -> int | None:
    """A device array's address (a CUDA tensor's, a CUDA array interface's),
    None for a host array."""
    if is_tensor(value):
        return int(value.data_ptr()) if value.is_cuda else None
    interface = getattr(value, "__cuda_array_interface__", None)
    return None if interface is None else int(interface["data"][0])


def device_pointer(value: Any) -> int:
    if is_tensor(value):
        return int(value.data_ptr())
    return int(value.__cuda_array_interface__["data"][0])


# Modules loaded in this process, by the SHA-256 of their cubin, kept for the
# life of the process (as Triton keeps its kernels). PyCUDA can free a module
# only on the thread that holds its context, and the garbage collector may run
# on any thread (the compiler's deep-stack worker, say), so none is freed.
_MODULES: dict[str, Any] = {}


def _load_module(cubin: bytes) -> Any:
    import hashlib

    import pycuda.driver as drv

    key = hashlib.sha256(cubin).hexdigest()
    module = _MODULES.get(key)
    if module is None:
        context()
        module = _MODULES[key] = drv.module_from_buffer(cubin)
    return module


def device_shared_limit() -> int:
    """The most shared memory a block may opt in to on the current device
    (sm_90: 232448 bytes); 48 KiB where the driver does not say."""
    import pycuda.driver as drv

    attribute = getattr(drv.device_attribute, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", None)
    if attribute is None:
        return DEFAULT_SHARED_LIMIT
    return int(drv.Context.get_device().get_attribute(attribute))


def allow_dynamic_shared(function: Any, nbytes: int, kernel: str, limit: int | None = None) -> None:
    """Let ``function`` take ``nbytes`` of dynamic shared memory at launch:
    past the 48 KiB every kernel may use, CUDA launches only a kernel whose
    MAX_DYNAMIC_SHARED_SIZE_BYTES was raised first (cuFuncSetAttribute).
    More than the device allows is an error naming the kernel."""
    if nbytes <= DEFAULT_SHARED_LIMIT:
        return
    import pycuda.driver as drv

    limit = device_shared_limit() if limit is None else limit
    if nbytes > limit:
        raise CompileError(f"kernel '{kernel}' needs {nbytes} bytes of shared memory, more than this GPU "
                           f"allows a block ({limit}); compile it with --shared-budget {limit} or smaller tiles")
    function.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)


class CudaKernel:
    """A compiled kernel, loaded on the device and ready to launch."""

    def __init__(self, cuda_source: str, arch: str = "sm_90", file: str = "<cuda>") -> None:
        self.header = read_header(cuda_source, file)
        self.params = [(name, parse_type(text)) for name, text in self.header["params"]]
        self.stores = set(self.header["stores"])
        self.threads = int(self.header["threads"])
        # The kernel's one dynamic shared array, sized at each launch (emitter.py).
        self.shared_bytes = int(self.header.get("shared_bytes", 0))
        self.module = _load_module(compile_cubin(cuda_source, arch))
        # The C symbol differs from the kernel's name when that name could clash in C (names.py).
        self.function = self.module.get_function(str(self.header.get("symbol", self.header["kernel"])))
        allow_dynamic_shared(self.function, self.shared_bytes, self.header["kernel"])
        # A prepared call packs arguments from a fixed format: less work per launch.
        self.function.prepare(self.function_format)
        # How each argument becomes a launch value (None: a pointer), decided once.
        self._converters = [None if isinstance(t, PointerType) else _converter(t) for _, t in self.params]
        # The direct launch (launch3): the pointer parameters' positions, the
        # scalars to convert, the parameter buffer packed by struct in native
        # layout (as PyCUDA packs it: each value at its C alignment, as CUDA
        # lays kernel parameters out), and PyCUDA's launch under
        # prepared_async_call, called without that Python wrapper.
        self._pointers = tuple(i for i, (_, t) in enumerate(self.params) if isinstance(t, PointerType))
        self._conversions = tuple((i, convert) for i, (_, t) in enumerate(self.params)
                                  if not isinstance(t, PointerType)
                                  and (convert := _packed_converter(t)) is not None)
        self._pack = struct.Struct("@" + self.function_format).pack
        self._block = (self.threads, 1, 1)
        self._launch_kernel = getattr(self.function, "_launch_kernel", None)

    @property
    def function_format(self) -> str:
        """The prepared call's argument format (struct's letters, P a pointer)."""
        return "".join(_FORMAT[t] if not isinstance(t, PointerType) else "P" for _, t in self.params)

    def launch(self, grid: Sequence[int], args: Sequence[Any]) -> None:
        if len(args) != len(self.params):
            raise CompileError(f"kernel '{self.header['kernel']}' takes {len(self.params)} argument(s), "
                               f"got {len(args)}")
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if any(g <= 0 for g in grid3):
            return  # an empty grid launches nothing, as in Triton
        self.launch3(grid3, args)

    def launch3(self, grid3: tuple[int, int, int], args: Sequence[Any]) -> None:
        """``launch`` with its checks done: a grid of three positive ints and
        one value per parameter. Device arrays and scalars go straight to
        PyCUDA's launch; a host array, a value struct refuses, or a PyCUDA
        without that launch take the prepared call (launch_prepared)."""
        context()
        launch_kernel = self._launch_kernel
        if launch_kernel is not None:
            values = list(args)
            for i in self._pointers:
                value = values[i]
                if TENSOR_CLASS.get(type(value)) or is_tensor_class(type(value)):
                    if not value.is_cuda:
                        break
                    values[i] = value.data_ptr()
                else:
                    address = _device_address(value)
                    if address is None:
                        break  # a host array: copied to the device and back
                    values[i] = address
            else:
                for i, convert in self._conversions:
                    values[i] = convert(values[i])
                try:
                    buffer = self._pack(*values)
                except (struct.error, OverflowError, TypeError, ValueError):
                    buffer = None  # PyCUDA's own packing decides, as it always did
                if buffer is not None:
                    try:
                        launch_kernel(grid3, self._block, buffer, self.shared_bytes, None)
                        return
                    except TypeError:
                        # This PyCUDA's launch takes other arguments (Boost.Python
                        # refuses them before launching): prepared calls from now on.
                        self._launch_kernel = None
        self.launch_prepared(grid3, args)

    def launch_prepared(self, grid3: tuple[int, int, int], args: Sequence[Any]) -> None:
        """The launch through PyCUDA's prepared call; host arrays are copied
        to fresh device buffers, and those the kernel stores to back."""
        packed: list[Any] = []
        copy_back: list[tuple[Any, Any]] = []
        keep: list[Any] = []
        for (name, t), convert, value in zip(self.params, self._converters, args):
            if convert is not None:
                packed.append(convert(value))
                continue
            address = _device_address(value)
            if address is not None:
                packed.append(address)
                continue
            import numpy as np
            import pycuda.driver as drv

            array = value
            if not isinstance(array, np.ndarray):
                array = np.asarray(array)
            if not array.flags.c_contiguous:
                raise CompileError(f"argument '{name}' must be a C-contiguous array")
            buffer = drv.mem_alloc(max(array.nbytes, 1))
            keep.append(buffer)
            drv.memcpy_htod(buffer, array)
            packed.append(int(buffer))
            if name in self.stores:
                copy_back.append((array, buffer))
        self.function.prepared_async_call(grid3, (self.threads, 1, 1), None, *packed,
                                          shared_size=self.shared_bytes)
        if keep:
            # Host arrays: wait, copy results back, free the device copies.
            import pycuda.driver as drv

            drv.Context.synchronize()
            for array, buffer in copy_back:
                drv.memcpy_dtoh(array, buffer)
        # Device arrays only: the launch is asynchronous, as in Triton.
