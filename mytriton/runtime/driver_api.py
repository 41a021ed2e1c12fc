"""The CUDA driver API (libcuda), called through ctypes.

mytriton loads and launches kernels with the driver library that every
NVIDIA driver installs, as Triton's own launcher does, and with no Python
package in between: a launch can go on any stream (PyTorch's current one,
CuPy's, one being captured into a CUDA graph), and every call runs in the
primary context of its device, the context that PyTorch, CuPy and the CUDA
runtime share, made current on the calling thread for that call only.

``driver()`` gives the process's one ``Driver`` (loaded on first use);
``status()`` says whether a GPU is usable, and why not. Errors are
``CudaError``s naming the call and CUDA's own name for the failure.
"""
from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

from mytriton.diagnostics import CompileError

# cuDeviceGetAttribute's attributes and cuFuncSetAttribute's, as cuda.h numbers them.
ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
FUNCTION_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
FUNCTION_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
FUNCTION_ATTRIBUTE_NUM_REGS = 4
# cuPointerGetAttribute's, and the memory types it reports.
POINTER_ATTRIBUTE_MEMORY_TYPE = 2
POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
MEMORY_TYPE_HOST = 1
# A tensor map's L2 promotion: its lines fetched 128 bytes at a time (CU_TENSOR_MAP_L2_PROMOTION_L2_128B).
TENSOR_MAP_L2_PROMOTION_128B = 2
# The keys of cuLaunchKernel's ``extra`` array: the parameters as one packed buffer.
LAUNCH_PARAM_END = 0
LAUNCH_PARAM_BUFFER_POINTER = 1
LAUNCH_PARAM_BUFFER_SIZE = 2
# cuLaunchKernelEx's attribute for programmatic dependent launch (launch_pdl).
LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6

_LIBRARY_NAMES = ("libcuda.so.1", "libcuda.so")


class CudaError(CompileError):
    """A driver call failed; ``code`` is its CUresult."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class DriverUnavailable(Exception):
    """The driver library is missing, or cuInit failed (no GPU, no device node)."""


_V = ctypes.c_void_p
_U = ctypes.c_uint
_I = ctypes.c_int
_SIZE = ctypes.c_size_t
_P = ctypes.POINTER

# name -> argument types; every function returns a CUresult (an int).
_SIGNATURES: dict[str, list[Any]] = {
    "cuInit": [_U],
    "cuDriverGetVersion": [_P(_I)],
    "cuGetErrorName": [_I, _P(ctypes.c_char_p)],
    "cuGetErrorString": [_I, _P(ctypes.c_char_p)],
    "cuDeviceGetCount": [_P(_I)],
    "cuDeviceGet": [_P(_I), _I],
    "cuDeviceGetName": [ctypes.c_char_p, _I, _I],
    "cuDeviceTotalMem_v2": [_P(_SIZE), _I],
    "cuDeviceGetAttribute": [_P(_I), _I, _I],
    "cuDevicePrimaryCtxRetain": [_P(_V), _I],
    "cuCtxGetCurrent": [_P(_V)],
    "cuCtxSetCurrent": [_V],
    "cuCtxGetDevice": [_P(_I)],
    "cuCtxSynchronize": [],
    "cuModuleLoadData": [_P(_V), ctypes.c_char_p],
    "cuModuleGetFunction": [_P(_V), _V, ctypes.c_char_p],
    "cuFuncSetAttribute": [_V, _I, _I],
    "cuFuncGetAttribute": [_P(_I), _I, _V],
    "cuLaunchKernel": [_V, _U, _U, _U, _U, _U, _U, _U, _V, _V, _V],
    "cuMemAlloc_v2": [_P(ctypes.c_uint64), _SIZE],
    "cuMemFree_v2": [ctypes.c_uint64],
    "cuMemsetD32_v2": [ctypes.c_uint64, ctypes.c_uint, _SIZE],
    "cuMemcpyHtoD_v2": [ctypes.c_uint64, _V, _SIZE],
    "cuMemcpyDtoH_v2": [_V, ctypes.c_uint64, _SIZE],
    "cuStreamSynchronize": [_V],
    "cuPointerGetAttribute": [_V, _I, ctypes.c_uint64],
    "cuEventCreate": [_P(_V), _U],
    "cuEventRecord": [_V, _V],
    "cuEventSynchronize": [_V],
    "cuEventElapsedTime": [_P(ctypes.c_float), _V, _V],
    "cuEventDestroy_v2": [_V],
}


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", _I), ("pad", ctypes.c_char * 4), ("value", _I * 16)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig, as cuda.h lays it out (56 bytes on x86-64)."""
    _fields_ = [("gridDimX", _U), ("gridDimY", _U), ("gridDimZ", _U), ("blockDimX", _U), ("blockDimY", _U),
                ("blockDimZ", _U), ("sharedMemBytes", _U), ("hStream", _V),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", _U)]


def pdl_launch(launch_ex: Any) -> Any:
    """cuLaunchKernel's call, made through ``launch_ex`` (cuLaunchKernelEx)
    with programmatic stream serialization allowed: the kernel may start
    before the one before it on the stream has finished, and waits for it
    where it runs griddepcontrol.wait (tl.extra.cuda.gdc_wait)."""
    attribute = LaunchAttribute(LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    attribute.value[0] = 1  # programmaticStreamSerializationAllowed
    attributes = ctypes.pointer(attribute)

    def launch(function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared_bytes: int,
               stream: Any, params: Any, extra: Any) -> int:
        config = LaunchConfig(gx, gy, gz, bx, by, bz, shared_bytes, stream, attributes, 1)
        return launch_ex(ctypes.byref(config), function, params, extra)

    return launch


def _load_library() -> Any:
    errors = []
    for name in _LIBRARY_NAMES:
        try:
            lib = ctypes.CDLL(name)
        except OSError as err:
            errors.append(str(err))
            continue
        for function, argtypes in _SIGNATURES.items():
            try:
                call = getattr(lib, function)
            except AttributeError:
                raise DriverUnavailable(f"{name} has no {function} (a driver older than CUDA 11?)") from None
            call.argtypes = argtypes
            call.restype = _I
        return lib
    raise DriverUnavailable(f"the CUDA driver library cannot be loaded ({errors[0] if errors else 'no name to load'})")


class Driver:
    """The driver calls mytriton makes, as methods that raise CudaError.

    Contexts: ``primary_context(device)`` is retained once and kept for the
    life of the process, as the CUDA runtime keeps it. Launches compare the
    thread's current context with it (``current_context``) and switch only
    where they differ, switching back after the call (``set_current``), so a
    launch never changes which device PyTorch or the runtime sees as current.
    """

    def __init__(self, lib: Any | None = None) -> None:
        self.lib = lib if lib is not None else _load_library()
        self._check(self.lib.cuInit(0), "cuInit")
        self._primary: dict[int, int] = {}
        self._lock = threading.Lock()
        self._thread = threading.local()
        # The hot calls, bound once. A launch's two are bound again without
        # ctypes prototypes (a second handle on the same library): a prototype
        # converts every argument through its type's from_param, which cost a
        # call of cuLaunchKernel's 11 arguments 1.3 us here against 0.4 us with
        # the handles passed as c_void_p objects made beforehand (launch_call).
        bare = ctypes.CDLL(self.lib._name) if isinstance(self.lib, ctypes.CDLL) else self.lib
        self._get_current = bare.cuCtxGetCurrent  # given a byref(c_void_p): no conversion to make
        self._set_current = self.lib.cuCtxSetCurrent
        # cuLaunchKernel itself, its CUresult unchecked (the launcher checks it):
        # called with the parameters packed in one buffer, ``extra`` holding the
        # address of {BUFFER_POINTER, buffer, BUFFER_SIZE, &size, END}.
        self.launch_raw = self.lib.cuLaunchKernel
        self._launch_bare = bare.cuLaunchKernel

    def launch_call(self) -> tuple[Any, Any]:
        """(cuLaunchKernel without its prototype, what each handle argument
        must be made into for it): the function, the stream and ``extra`` as
        ``c_void_p`` objects (made once where they do not change), the grid,
        block and shared bytes as ints, which ctypes passes as C ints and
        refuses past INT_MAX (CUDA's limits are below it)."""
        return self._launch_bare, ctypes.c_void_p

    def launch_pdl_call(self) -> tuple[Any, Any]:
        """launch_call's pair for a programmatic dependent launch (launch_pdl):
        the same arguments, made through cuLaunchKernelEx."""
        launch_ex = getattr(self.lib, "cuLaunchKernelEx", None)  # CUDA 12's: bound here, not required to load
        if launch_ex is None:
            raise CudaError("launch_pdl=True needs cuLaunchKernelEx, which this driver does not have "
                            "(a driver of CUDA 12 or later)", 0)
        launch_ex.argtypes = [ctypes.POINTER(LaunchConfig), _V, _V, _V]
        launch_ex.restype = _I
        return pdl_launch(launch_ex), ctypes.c_void_p

    # ---- errors ---------------------------------------------------------------------
    def error_name(self, code: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(text)) != 0 or text.value is None:
            return f"CUDA error {code}"
        name = text.value.decode(errors="replace")
        if self.lib.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value:
            return f"{name} ({text.value.decode(errors='replace')})"
        return name

    def _check(self, code: int, call: str) -> None:
        if code != 0:
            raise CudaError(f"{call} failed: {self.error_name(code)}", code)

    # ---- devices --------------------------------------------------------------------
    def version(self) -> int:
        value = _I()
        self._check(self.lib.cuDriverGetVersion(ctypes.byref(value)), "cuDriverGetVersion")
        return value.value

    def device_count(self) -> int:
        count = _I()
        self._check(self.lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        return count.value

    def _device(self, ordinal: int) -> int:
        handle = _I()
        self._check(self.lib.cuDeviceGet(ctypes.byref(handle), int(ordinal)), f"cuDeviceGet({ordinal})")
        return handle.value

    def device_name(self, ordinal: int) -> str:
        buffer = ctypes.create_string_buffer(256)
        self._check(self.lib.cuDeviceGetName(buffer, 256, self._device(ordinal)), "cuDeviceGetName")
        return buffer.value.decode(errors="replace")

    def total_memory(self, ordinal: int) -> int:
        size = _SIZE()
        self._check(self.lib.cuDeviceTotalMem_v2(ctypes.byref(size), self._device(ordinal)), "cuDeviceTotalMem")
        return size.value

    def attribute(self, ordinal: int, attribute: int) -> int:
        value = _I()
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, self._device(ordinal)),
                    "cuDeviceGetAttribute")
        return value.value

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        return (self.attribute(ordinal, ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                self.attribute(ordinal, ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    # ---- contexts -------------------------------------------------------------------
    def primary_context(self, ordinal: int) -> int:
        """The device's primary context (retained on first use, never released)."""
        context = self._primary.get(ordinal)
        if context is None:
            with self._lock:
                context = self._primary.get(ordinal)
                if context is None:
                    count = self.device_count()
                    if not 0 <= ordinal < count:
                        raise CudaError(f"there is no GPU {ordinal} (this machine has {count})", 101)
                    handle = _V()
                    self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(handle), self._device(ordinal)),
                                "cuDevicePrimaryCtxRetain")
                    context = self._primary[ordinal] = int(handle.value or 0)
        return context

    def current_context(self) -> int:
        """The calling thread's current context (0: none)."""
        try:
            current, reference = self._thread.slot
        except AttributeError:  # this thread's first call: its own slot for the answer
            current = _V()
            reference = ctypes.byref(current)
            self._thread.slot = (current, reference)
        self._get_current(reference)
        return current.value or 0

    def set_current(self, context: int) -> None:
        self._check(self._set_current(context or None), "cuCtxSetCurrent")

    def current_device(self) -> int | None:
        """The device of the calling thread's current context, None where none is current."""
        if not self.current_context():
            return None
        device = _I()
        self._check(self.lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        return device.value

    def synchronize_context(self) -> None:
        self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    # ---- modules (the calling thread's current context) -----------------------------
    def load_module(self, image: bytes) -> int:
        handle = _V()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(handle), image), "cuModuleLoadData")
        return int(handle.value)

    def function(self, module: int, name: str) -> int:
        handle = _V()
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(handle), module, name.encode()),
                    f"cuModuleGetFunction({name})")
        return int(handle.value)

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self._check(self.lib.cuFuncSetAttribute(function, FUNCTION_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                nbytes), "cuFuncSetAttribute")

    def function_attribute(self, function: int, attribute: int) -> int:
        value = _I()
        self._check(self.lib.cuFuncGetAttribute(ctypes.byref(value), attribute, function), "cuFuncGetAttribute")
        return value.value

    def encode_tensor_map(self, address: int, dims: tuple[int, int], stride: int, box: tuple[int, int],
                          data_type: int, swizzle: int) -> bytes | None:
        """A 2-D ``CUtensorMap`` (128 bytes) of the row-major matrix at
        ``address``: ``dims`` (columns, rows), ``stride`` bytes a row, boxes
        of ``box`` (columns, rows) swizzled by ``swizzle`` (a CUtensorMapSwizzle),
        zeros outside; None where the driver refuses it (CUDA 12's call)."""
        encode = getattr(self, "_encode", None)
        if encode is None:
            encode = getattr(self.lib, "cuTensorMapEncodeTiled", None)
            if encode is None:
                return None
            encode.argtypes = [_V, _I, ctypes.c_uint32, _V, _V, _V, _V, _V, _I, _I, _I, _I]
            encode.restype = _I
            self._encode = encode
        out = (ctypes.c_uint64 * 16)()
        code = encode(ctypes.addressof(out), data_type, 2, address, (ctypes.c_uint64 * 2)(*dims),
                      (ctypes.c_uint64 * 1)(stride), (ctypes.c_uint32 * 2)(*box), (ctypes.c_uint32 * 2)(1, 1),
                      0, swizzle, TENSOR_MAP_L2_PROMOTION_128B, 0)
        return None if code else bytes(out)

    # ---- memory and streams ---------------------------------------------------------
    def allocate(self, nbytes: int) -> int:
        address = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(address), max(int(nbytes), 1)), "cuMemAlloc")
        return address.value

    def free(self, address: int) -> None:
        self._check(self.lib.cuMemFree_v2(address), "cuMemFree")

    def memset32(self, address: int, value: int, count: int) -> None:
        """Set ``count`` 32-bit words at ``address`` to ``value``."""
        self._check(self.lib.cuMemsetD32_v2(address, value, count), "cuMemsetD32")

    def copy_to_device(self, address: int, array: Any) -> None:
        """Copy a C-contiguous NumPy array to ``address`` (synchronous)."""
        if array.nbytes:
            self._check(self.lib.cuMemcpyHtoD_v2(address, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")

    def copy_to_host(self, array: Any, address: int) -> None:
        if array.nbytes:
            self._check(self.lib.cuMemcpyDtoH_v2(array.ctypes.data, address, array.nbytes), "cuMemcpyDtoH")

    def synchronize_stream(self, stream: int) -> None:
        self._check(self.lib.cuStreamSynchronize(stream or None), "cuStreamSynchronize")

    def pointer_device(self, address: int) -> int | None:
        """The GPU that holds ``address``, or None where the driver knows it
        as host memory or not at all (a pageable host array)."""
        memory_type = _U()
        code = self.lib.cuPointerGetAttribute(ctypes.byref(memory_type), POINTER_ATTRIBUTE_MEMORY_TYPE, address)
        if code != 0 or memory_type.value == MEMORY_TYPE_HOST:
            return None
        ordinal = _I()
        code = self.lib.cuPointerGetAttribute(ctypes.byref(ordinal), POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
        return ordinal.value if code == 0 else None

    # ---- events (mytriton.testing's timer) -------------------------------------------
    def event(self) -> int:
        handle = _V()
        self._check(self.lib.cuEventCreate(ctypes.byref(handle), 0), "cuEventCreate")
        return int(handle.value)

    def record(self, event: int, stream: int = 0) -> None:
        self._check(self.lib.cuEventRecord(event, stream or None), "cuEventRecord")

    def elapsed_ms(self, start: int, end: int) -> float:
        self._check(self.lib.cuEventSynchronize(end), "cuEventSynchronize")
        value = ctypes.c_float()
        self._check(self.lib.cuEventElapsedTime(ctypes.byref(value), start, end), "cuEventElapsedTime")
        return float(value.value)

    def destroy_event(self, event: int) -> None:
        self._check(self.lib.cuEventDestroy_v2(event), "cuEventDestroy")


_driver: Driver | None = None
_driver_lock = threading.Lock()
_failure: str | None = None


def driver() -> Driver:
    """The process's Driver; DriverUnavailable (with the reason) where there is none."""
    global _driver, _failure
    if _driver is not None:
        return _driver
    with _driver_lock:
        if _driver is None:
            if _failure is not None:
                raise DriverUnavailable(_failure)
            try:
                _driver = Driver()
            except DriverUnavailable as err:
                _failure = str(err)
                raise
            except CudaError as err:
                _failure = f"the CUDA driver did not start ({err.message})"
                raise DriverUnavailable(_failure) from None
    return _driver


_versions: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def driver_version() -> int | None:
    """The CUDA version of the process's driver (cuDriverGetVersion's
    number: 13000 is 13.0), asked once; None where no driver loads. Builds
    ask it for each kernel, to choose a compiler whose cubins this driver loads."""
    try:
        drv = driver()
    except DriverUnavailable:
        return None
    version = _versions.get(drv)
    if version is None:
        try:
            version = _versions[drv] = drv.version()
        except CudaError:
            return None
    return version


def status() -> tuple[bool, str]:
    """(whether a GPU is usable, why): the driver loaded and started, and at
    least one device."""
    try:
        count = driver().device_count()
    except DriverUnavailable as err:
        return False, str(err)
    except CudaError as err:
        return False, f"the CUDA driver cannot count its GPUs ({err.message})"
    if count == 0:
        return False, "the CUDA driver sees no GPU"
    return True, f"the CUDA driver sees {count} GPU(s)"
