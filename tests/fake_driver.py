"""A stand-in for the CUDA driver (runtime/driver_api.py's Driver), for
testing the launch path without a GPU: each device has its primary context,
each thread its current context, modules belong to the context current when
they were loaded, and a launch is refused (as CUDA refuses it) unless its
function's context is current. Launches are recorded with their parameter
bytes, read back from cuLaunchKernel's ``extra`` array as the driver reads them.
"""
from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from dataclasses import dataclass

from mytriton.runtime.driver_api import CudaError

CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_INVALID_HANDLE = 400


@dataclass
class Launch:
    function: int
    device: int
    grid: tuple[int, int, int]
    threads: int
    shared_bytes: int
    stream: int
    params: bytes
    thread: str
    param_pointers: int | None = None  # kernelParams, where the launcher gave them (tensor maps)
    pdl: bool = False  # made through cuLaunchKernelEx with programmatic stream serialization allowed


class FakeDriver:
    def __init__(self, devices: int = 1, device_of=None, shared_limit: int = 227 * 1024) -> None:
        self.devices = devices
        self.contexts = {d: 0xC0000 + d for d in range(devices)}
        self._current = threading.local()
        self._ids = itertools.count(1)
        self.modules: dict[int, int] = {}  # module -> its context
        self.functions: dict[int, int] = {}  # function -> its context
        self.loads: list[int] = []  # the device of each module load
        self.launches: list[Launch] = []
        self.refused: list[int] = []  # launches CUDA would refuse (compute-sanitizer reports each)
        self.memory: dict[int, bytes] = {}
        self.freed: list[int] = []
        self.synchronized: list[int] = []
        self.attributes: dict[int, int] = {}
        self.context_switches = 0
        self.shared_limit = shared_limit
        self.encoded: list[tuple] = []  # encode_tensor_map's calls
        self.refuse_maps = False
        # Which device holds an address (None: host memory); every nonzero
        # address is device 0's unless told otherwise.
        self.device_of = device_of or (lambda address: 0 if address else None)
        self._lock = threading.Lock()

    # contexts
    def primary_context(self, ordinal: int) -> int:
        if not 0 <= ordinal < self.devices:
            raise CudaError(f"there is no GPU {ordinal} (this machine has {self.devices})", 101)
        return self.contexts[ordinal]

    def current_context(self) -> int:
        return getattr(self._current, "context", 0)

    def set_current(self, context: int) -> None:
        self.context_switches += 1
        self._current.context = context

    def current_device(self) -> int | None:
        context = self.current_context()
        return None if not context else context - 0xC0000

    def _require_context(self, call: str) -> int:
        context = self.current_context()
        if not context:
            raise CudaError(f"{call} failed: CUDA_ERROR_INVALID_CONTEXT", CUDA_ERROR_INVALID_CONTEXT)
        return context

    # devices
    def device_count(self) -> int:
        return self.devices

    def attribute(self, ordinal: int, attribute: int) -> int:
        return self.shared_limit

    def version(self) -> int:
        return 13000

    def device_name(self, ordinal: int) -> str:
        return "Stand-in GPU"

    def total_memory(self, ordinal: int) -> int:
        return 2**30

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        return (9, 0)

    # modules and launches
    def load_module(self, image: bytes) -> int:
        context = self._require_context("cuModuleLoadData")
        with self._lock:
            module = next(self._ids)
            self.modules[module] = context
            self.loads.append(context - 0xC0000)
        return module

    def function(self, module: int, name: str) -> int:
        self._require_context("cuModuleGetFunction")
        with self._lock:
            function = next(self._ids)
            self.functions[function] = self.modules[module]
        return function

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self.attributes[function] = nbytes

    def function_attribute(self, function: int, attribute: int) -> int:
        """A loaded function's registers (40) and local bytes (16), as cuFuncGetAttribute gives them."""
        from mytriton.runtime.driver_api import FUNCTION_ATTRIBUTE_LOCAL_SIZE_BYTES, FUNCTION_ATTRIBUTE_NUM_REGS

        if function not in self.functions:
            raise AssertionError(f"cuFuncGetAttribute of function {function}, never loaded")
        return {FUNCTION_ATTRIBUTE_NUM_REGS: 40, FUNCTION_ATTRIBUTE_LOCAL_SIZE_BYTES: 16}[attribute]

    def launch_call(self):
        """launch_raw, its handles given as the ints they are."""
        return self.launch_raw, _same

    def launch_pdl_call(self):
        """The driver's own pdl_launch over a stand-in cuLaunchKernelEx that
        reads the CUlaunchConfig it is given, as the driver would."""
        from mytriton.runtime import driver_api

        def launch_ex(config, function, params, extra) -> int:
            config = config._obj  # ctypes.byref's object: the CUlaunchConfig itself
            assert isinstance(config, driver_api.LaunchConfig)
            attributes = [config.attrs[i] for i in range(config.numAttrs)]
            pdl = any(a.id == driver_api.LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION and a.value[0]
                      for a in attributes)
            assert (config.blockDimY, config.blockDimZ) == (1, 1)
            before = len(self.launches)
            code = self.launch_raw(function, config.gridDimX, config.gridDimY, config.gridDimZ, config.blockDimX,
                                   1, 1, config.sharedMemBytes, config.hStream, params, extra)
            if len(self.launches) > before:
                self.launches[-1].pdl = pdl
            return code

        return driver_api.pdl_launch(launch_ex), _same

    def launch_raw(self, function, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra) -> int:
        """cuLaunchKernel: its CUresult, as the driver's."""
        context = self.current_context()
        if not context or self.functions[function] != context:
            self.refused.append(function)  # none current, or a function of another context
            return CUDA_ERROR_INVALID_CONTEXT if not context else CUDA_ERROR_INVALID_HANDLE
        data = b""
        if params is not None and extra is not None:
            return 1  # CUDA_ERROR_INVALID_VALUE: one or the other
        if extra is not None:
            slots = (ctypes.c_void_p * 5).from_address(extra)
            size = ctypes.c_size_t.from_address(slots[3]).value
            data = ctypes.string_at(slots[1], size)
        with self._lock:
            self.launches.append(Launch(function, context - 0xC0000, (gx, gy, gz), bx, shared_bytes,
                                        int(stream or 0), data, threading.current_thread().name,
                                        int(params) if params is not None else None))
        return 0

    def encode_tensor_map(self, address: int, dims: tuple[int, int], stride: int, box: tuple[int, int],
                          data_type: int, swizzle: int) -> bytes | None:
        """Records the call; the "map" is its arguments, readable back
        (``decode_map``); None, as the driver's refusal, where ``refuse_maps``
        or with no context current (the H200's driver refused then)."""
        self.encoded.append((address, dims, stride, box, data_type, swizzle))
        if self.refuse_maps or not self.current_context():
            return None
        return struct.pack("<9Q", address, *dims, stride, *box, data_type, swizzle, 0x4D4150).ljust(128, b"\0")

    def error_name(self, code: int) -> str:
        return f"CUDA error {code}"

    # memory and streams
    def allocate(self, nbytes: int) -> int:
        self._require_context("cuMemAlloc")
        with self._lock:
            address = 0xD0000 + 0x10000 * next(self._ids)
        self.memory[address] = bytes(nbytes)
        return address

    def free(self, address: int) -> None:
        self.freed.append(address)
        del self.memory[address]

    def memset32(self, address: int, value: int, count: int) -> None:
        self.memory[address] = value.to_bytes(4, "little") * count

    def copy_to_device(self, address: int, array) -> None:
        self.memory[address] = array.tobytes()

    def copy_to_host(self, array, address: int) -> None:
        data = self.memory[address]
        ctypes.memmove(array.ctypes.data, data, len(data))

    def synchronize_stream(self, stream: int) -> None:
        self.synchronized.append(int(stream or 0))

    def synchronize_context(self) -> None:
        self._require_context("cuCtxSynchronize")

    def pointer_device(self, address: int):
        return self.device_of(address)

    # events
    def event(self) -> int:
        return next(self._ids)

    def record(self, event: int, stream: int = 0) -> None:
        pass

    def elapsed_ms(self, start: int, end: int) -> float:
        return 0.001

    def destroy_event(self, event: int) -> None:
        pass


def install(monkeypatch, fake: FakeDriver) -> FakeDriver:
    """Make ``fake`` the process's driver, skip nvcc (a kernel's cubin is its
    CUDA text), and start from no loaded modules."""
    from mytriton.runtime import cuda_driver, driver_api

    monkeypatch.setattr(driver_api, "_driver", fake)
    monkeypatch.setattr(cuda_driver, "cuda_status", lambda: (True, "a stand-in GPU"))
    monkeypatch.setattr(cuda_driver, "compile_cubin", lambda source, arch, driver_version=None: source.encode())
    monkeypatch.setattr(cuda_driver, "_MODULES", {})
    monkeypatch.delenv("MYTRITON_BACKEND", raising=False)
    monkeypatch.delenv("MYTRITON_DEVICE", raising=False)
    return fake


def _same(handle):
    return handle


def decode_map(encoded: bytes) -> tuple:
    """A stand-in map's arguments: (address, dims, stride, box, data_type, swizzle)."""
    address, cols, rows, stride, box_cols, box_rows, data_type, swizzle, mark = struct.unpack("<9Q", encoded[:72])
    assert mark == 0x4D4150, "not a stand-in tensor map"
    return address, (cols, rows), stride, (box_cols, box_rows), data_type, swizzle
