"""Loading and launching generated CUDA on the GPU.

A kernel is built once (nvcc, cached) and its module loaded once per device,
in that device's primary context. A launch runs on the device that holds its
array arguments, on the stream PyTorch (or CuPy) has current there, as a
torch op or a Triton kernel would (runtime/placement.py decides both); the
calls go straight to the driver library (runtime/driver_api.py).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import math
import struct
import sys
import threading
from typing import Any, Callable, Sequence

from mytriton.backends.cuda.emitter import read_header
from mytriton.backends.cuda.nvcc import compile_cubin
from mytriton.diagnostics import CompileError, Remark, printable
from mytriton.ir.text_common import parse_type
from mytriton.limits import grid_error
from mytriton.runtime import placement
from mytriton.runtime.tensor_maps import MAP_ALIGNMENT, MAP_BYTES, TensorMaps, read_specs
from mytriton.runtime.driver_api import (
    ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE,
    LAUNCH_PARAM_END, CudaError, Driver, driver, driver_version,
)
from mytriton.target import DEFAULT_SHARED_LIMIT
from mytriton.types import BF16, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, PointerType

INSTALL_HINT = "an NVIDIA driver (libcuda.so.1) and a GPU"


@functools.lru_cache(maxsize=None)
def cuda_status() -> tuple[bool, str]:
    """(whether a GPU is usable, why): the driver library loaded and
    started, and at least one device. The reason says what failed, exactly."""
    from mytriton.runtime.driver_api import status

    return status()


def cuda_available() -> bool:
    return cuda_status()[0]


# struct formats of scalar kernel parameters (bf16 travels as its 16 bits)
_FORMAT = {I8: "b", I16: "h", I32: "i", I64: "q", U8: "B", U16: "H", U32: "I", U64: "Q",
           F32: "f", F64: "d", F16: "e", BOOL: "?", BF16: "H"}


def bf16_bits(value: float) -> int:
    """The bits of ``value`` as a bf16 (the top half of its f32, rounded to
    nearest even; NaN stays a quiet NaN), which the launcher passes as a
    16-bit integer."""
    value = float(value)
    if math.isfinite(value) and abs(value) > 3.4028234663852886e38:  # beyond f32: struct refuses it
        value = math.copysign(math.inf, value)
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def f16_value(value: Any) -> float:
    """``value`` as a float that packs as an f16: beyond the largest f16
    (65504, rounded), infinity, as a cast to f16 gives (struct refuses it)."""
    value = float(value)
    if math.isfinite(value) and abs(value) >= 65520.0:
        return math.copysign(math.inf, value)
    return value


def _converter(t: Any) -> Any:
    """The function turning a Python value into the packed value of scalar type ``t``."""
    if t == BF16:
        return bf16_bits
    if t == F16:
        return f16_value
    return bool if t == BOOL else float if t in (F32, F64) else int


def _packed_converter(t: Any) -> Any:
    """What a scalar of type ``t`` needs before struct packs it, or None
    (struct takes ints, floats and bools as they are)."""
    if t == BF16:
        return bf16_bits
    return f16_value if t == F16 else None


# Modules loaded in this process, by (SHA-256 of the cubin, device), kept for
# the life of the process as Triton keeps its kernels (a module is unloaded
# only with its context, and the primary contexts outlive every kernel).
_MODULES: dict[tuple[str, int], int] = {}
_LOAD_LOCK = threading.Lock()


def device_shared_limit(device: int = 0, drv: Driver | None = None) -> int:
    """The most shared memory a block may opt in to on ``device`` (sm_90: 232448 bytes)."""
    drv = drv or driver()
    return drv.attribute(device, ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)


def allow_dynamic_shared(drv: Driver, function: int, nbytes: int, kernel: str, device: int) -> None:
    """Let ``function`` take ``nbytes`` of dynamic shared memory at launch:
    past the 48 KiB every kernel may use, CUDA launches only a kernel whose
    MAX_DYNAMIC_SHARED_SIZE_BYTES was raised first (cuFuncSetAttribute).
    More than ``device`` allows is an error naming the kernel."""
    if nbytes <= DEFAULT_SHARED_LIMIT:
        return
    limit = device_shared_limit(device, drv)
    if nbytes > limit:
        raise CompileError(f"kernel '{kernel}' needs {nbytes} bytes of shared memory, more than this GPU "
                           f"allows a block ({limit}); compile it with --shared-budget {limit} or smaller tiles")
    drv.set_max_dynamic_shared(function, nbytes)


class on_device:
    """``with on_device(d) as drv:`` the primary context of GPU ``d`` is
    current on this thread, and the one current before is again afterwards.
    Reusable, and from several threads: each entry keeps its own previous context."""

    def __init__(self, device: int, drv: Driver | None = None) -> None:
        self.driver = drv or driver()
        self.context = self.driver.primary_context(device)
        self._previous = threading.local()

    def __enter__(self) -> Driver:
        previous = self.driver.current_context()
        stack = self._previous.__dict__.setdefault("stack", [])
        stack.append(previous)
        if previous != self.context:
            self.driver.set_current(self.context)
        return self.driver

    def __exit__(self, *exc: object) -> None:
        previous = self._previous.stack.pop()
        if previous != self.context:
            self.driver.set_current(previous)


class CudaKernel:
    """A compiled kernel: its cubin, loaded on each device it launches on."""

    def __init__(self, cuda_source: str, arch: str = "sm_90", file: str = "<cuda>",
                 without_tma: Callable[[], str] | None = None, pdl: bool = False) -> None:
        self.header = read_header(cuda_source, file)
        # Launched as a programmatic dependent launch (launch_pdl=True): through cuLaunchKernelEx.
        self.pdl = pdl
        self.name = str(self.header["kernel"])
        self.params = [(name, parse_type(text)) for name, text in self.header["params"]]
        # Copies made by TMA read tensor maps, encoded at each launch; a launch
        # whose values no map can describe runs the kernel built with cp.async
        # (``without_tma`` makes its CUDA), built at that first launch.
        specs = self.header.get("tensor_maps")
        self.maps = TensorMaps(read_specs(specs, [n for n, _ in self.params], self.name)) if specs else None
        self._without_tma = without_tma
        self._cp_async_kernel: CudaKernel | None = None
        self._arch = arch
        self.stores = set(self.header["stores"])
        self.threads = int(self.header["threads"])
        # The kernel's one dynamic shared array, sized at each launch (emitter.py).
        self.shared_bytes = int(self.header.get("shared_bytes", 0))
        self._source = cuda_source
        self._cubin: bytes | None = None  # built at the first launch that runs it (``cubin``)
        self._build_lock = threading.Lock()
        # The C symbol differs from the kernel's name when that name could clash in C (names.py).
        self.symbol = str(self.header.get("symbol", self.name))
        self.driver = driver()
        self._functions: dict[int, int] = {}  # device -> CUfunction
        self._pointers = tuple(i for i, (_, t) in enumerate(self.params) if isinstance(t, PointerType))
        self._conversions = tuple((i, convert) for i, (_, t) in enumerate(self.params)
                                  if not isinstance(t, PointerType)
                                  and (convert := _packed_converter(t)) is not None)
        # The parameters, packed by struct in native layout (each value at its
        # C alignment, as CUDA lays kernel parameters out) into one buffer that
        # cuLaunchKernel copies at the call: a lock keeps two threads' launches
        # of this kernel from packing it at once.
        self._struct = struct.Struct("@" + self.function_format)
        size = self._struct.size
        if self.maps:
            # Each map 128 bytes at a multiple of 64, after the kernel's own
            # parameters; given through kernelParams, a pointer to each (the
            # driver refuses such parameters packed through ``extra``).
            first = -(-size // MAP_ALIGNMENT) * MAP_ALIGNMENT
            size = first + MAP_BYTES * len(self.maps)
            self._map_offsets = [first + MAP_BYTES * i for i in range(len(self.maps))]
        self._buffer = ctypes.create_string_buffer(max(size, 1))
        self._size = ctypes.c_size_t(size)
        self._extra_array = (ctypes.c_void_p * 5)(
            LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(self._buffer),
            LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(self._size), LAUNCH_PARAM_END)
        self._extra = ctypes.addressof(self._extra_array) if self._struct.size and not self.maps else None
        self._param_pointers = None
        if self.maps:
            at = ctypes.addressof(self._buffer)
            self._param_pointers = (ctypes.c_void_p * (len(self.params) + len(self.maps)))(
                *[at + offset for offset in param_offsets(self.function_format)],
                *[at + offset for offset in self._map_offsets])
        self._lock = threading.Lock()
        self._packed_maps: list[bytes] | None = None  # the maps the buffer holds
        # cuLaunchKernel as the driver hands it out for the hot path, with the
        # handles made into what it takes once (the stream at its first use).
        self._launch_raw, self._handle = self.driver.launch_pdl_call() if pdl else self.driver.launch_call()
        self._extra_handle = self._handle(self._extra) if self._extra is not None else None
        self._params_handle = (self._handle(ctypes.addressof(self._param_pointers))
                               if self._param_pointers is not None else None)
        self._handles: dict[int, Any] = {}  # device -> its CUfunction as _handle made it
        self._stream_handle: tuple[int, Any] = (0, self._handle(0))  # the last stream, and as made

    @property
    def cubin(self) -> bytes:
        """The kernel's cubin, built on first use: a launch whose values no
        tensor map describes runs the cp.async build and never builds this
        one. NVRTC builds it only if no newer than this driver, whose loader
        may refuse a newer one's cubin."""
        if self._cubin is None:
            with self._build_lock:  # two threads' first launches build it once
                if self._cubin is None:
                    self._cubin = compile_cubin(self._source, self._arch, driver_version())
        return self._cubin

    def build(self) -> None:
        """Build the cubin now (a warmup's work, which the first launch then skips)."""
        self.cubin  # noqa: B018 (built and kept)

    def build_for(self, args: Sequence[Any]) -> None:
        """Build what a launch with ``args`` runs (a warmup's work): this
        kernel's cubin, or its cp.async build's where no tensor map describes
        the arguments. An autotuner warms every config up at once; building the
        TMA kernels there would leave each launch after to build again."""
        if self.maps is not None and len(args) == len(self.params):
            values, pending = list(args), set()
            for i in self._pointers:
                value = values[i]
                if type(value) in placement.TORCH_TENSORS:
                    values[i] = value.data_ptr()
                    continue
                try:
                    _, address, _ = placement.locate(self.name, self.params[i][0], value)
                except CompileError:
                    break  # not an array a launch takes: the launch says so
                if address is None:
                    pending.add(i)  # a host array: its device buffer is aligned
                else:
                    values[i] = address
            else:
                if self.maps.problem(values, [n for n, _ in self.params], frozenset(pending)) is not None:
                    self.cp_async_kernel().build()
                    return
        self.build()

    @property
    def function_format(self) -> str:
        """The parameters' struct format (P a pointer)."""
        return "".join(_FORMAT[t] if not isinstance(t, PointerType) else "P" for _, t in self.params)

    def function(self, device: int) -> int:
        """The kernel's CUfunction on ``device``, its module loaded there on
        first use; the device's context must be current."""
        function = self._functions.get(device)
        if function is None:
            drv = self.driver
            cubin = self.cubin  # built outside the lock: other kernels' loads need not wait for it
            with _LOAD_LOCK:
                key = (hashlib.sha256(cubin).hexdigest(), device)
                module = _MODULES.get(key)
                if module is None:
                    module = _MODULES[key] = drv.load_module(cubin)
                function = drv.function(module, self.symbol)
                allow_dynamic_shared(drv, function, self.shared_bytes, self.name, device)
                self._functions[device] = function
        return function

    def resources(self) -> tuple[int, int]:
        """(registers a thread, local memory bytes a thread) of the kernel as
        loaded on the current GPU (device 0 where no context is current),
        which loads it there first: Triton's ``n_regs`` and ``n_spills``."""
        from mytriton.runtime.driver_api import FUNCTION_ATTRIBUTE_LOCAL_SIZE_BYTES, FUNCTION_ATTRIBUTE_NUM_REGS

        device = self.driver.current_device()
        with on_device(0 if device is None else device, self.driver) as drv:
            function = self.function(0 if device is None else device)
            return (drv.function_attribute(function, FUNCTION_ATTRIBUTE_NUM_REGS),
                    drv.function_attribute(function, FUNCTION_ATTRIBUTE_LOCAL_SIZE_BYTES))

    def launch(self, grid: Sequence[int], args: Sequence[Any], stream: Any = None) -> None:
        if len(args) != len(self.params):
            raise CompileError(f"kernel '{self.name}' takes {len(self.params)} argument(s), got {len(args)}")
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if any(g <= 0 for g in grid3):
            return  # an empty grid launches nothing, as in Triton
        problem = grid_error(grid3)
        if problem:
            raise CompileError(f"kernel '{self.name}': {problem}", placement.launch_site())
        self.launch3(grid3, args, stream)  # type: ignore[arg-type]

    def launch3(self, grid3: tuple[int, int, int], args: Sequence[Any], stream: Any = None) -> None:
        """``launch`` with its checks done: a grid of three positive ints and
        one value per parameter. PyTorch's CUDA tensors are read here; every
        other array through placement.locate."""
        values = list(args)
        device = -1
        kinds = 0
        host = None
        first = 0
        torch_tensors = placement.TORCH_TENSORS
        for i in self._pointers:
            value = values[i]
            if type(value) in torch_tensors:
                where = value.get_device()  # -1 on the CPU
                if where < 0:
                    raise placement.not_on_gpu(self.name, self.params[i][0], value)
                values[i] = value.data_ptr()
                kinds |= placement.TORCH
            else:
                where, address, kind = placement.locate(self.name, self.params[i][0], value)
                kinds |= kind
                if address is None:  # a host array, copied in and out around the launch
                    host = host or []
                    host.append((i, placement.host_array(self.name, self.params[i][0], value)))
                    continue
                values[i] = address
            if where != device:
                if device >= 0:
                    raise placement.mixed_devices(self.name, self.params[first][0], device,
                                                  self.params[i][0], where)
                device, first = where, i
        if device < 0:
            device = placement.default_device(self.driver)
        if stream is None and kinds == placement.TORCH and placement.torch_raw_stream is not None:
            handle = placement.torch_raw_stream(device)
        else:
            handle = placement.launch_stream(stream, kinds, device)
        drv = self.driver
        context = drv.primary_context(device)
        previous = drv.current_context()
        if previous != context:
            drv.set_current(context)
        try:
            # With the device's context current: the driver encodes no tensor map without one.
            maps = None
            if self.maps is not None:
                # Host arrays' device buffers, not made yet, are taken as aligned.
                maps = self.maps.for_launch(values, self.driver.encode_tensor_map,
                                            frozenset(i for i, _ in host) if host else frozenset())
            kernel = self if self.maps is None or maps is not None else self._cp_async_for(values, host)
            function = kernel._handles.get(device) or kernel._function_handle(device)
            if host is None:
                kernel._launch(function, grid3, handle, values, maps)
            else:
                kernel._launch_with_copies(function, grid3, handle, values, host)
        finally:
            if previous != context:
                drv.set_current(previous)

    def _cp_async_for(self, values: list[Any], host: list | None) -> "CudaKernel":
        """``cp_async_kernel``, for a launch whose values no tensor map
        describes; its first such launch says why where remarks are on
        (``MYTRITON_REMARKS``), since the kernel's own remarks promised TMA."""
        first = self._cp_async_kernel is None
        kernel = self.cp_async_kernel()
        from mytriton.remarks import remarks_from_env

        if first and remarks_from_env():
            assert self.maps is not None
            why = self.maps.problem(values, [n for n, _ in self.params],
                                    frozenset(i for i, _ in host) if host else frozenset())
            message = (f"kernel '{printable(self.name)}': this launch runs the kernel built with cp.async, not "
                       f"TMA: {why or 'the driver refuses one of its tensor maps'}")
            sys.stderr.write(Remark(placement.launch_site(), message).render() + "\n")
            sys.stderr.flush()
        return kernel

    def cp_async_kernel(self) -> "CudaKernel":
        """The kernel built with cp.async where this one copies with TMA: for a
        launch whose values give a tensor map TMA cannot take."""
        if self._cp_async_kernel is None:
            if self._without_tma is None:
                raise CompileError(f"kernel '{self.name}' copies with TMA, and this launch's arguments give a "
                                   "tensor map TMA cannot take (a stride or size not positive, a row stride not "
                                   "a multiple of 16 bytes); launched from its source (@jit, or `mytriton run` "
                                   "of its .py or unstaged .ssa), it would run its cp.async build instead",
                                   placement.launch_site())
            self._cp_async_kernel = CudaKernel(self._without_tma(), self._arch, self.name, pdl=self.pdl)
        return self._cp_async_kernel

    def _function_handle(self, device: int) -> Any:
        """The kernel's CUfunction on ``device`` as the launch call takes it."""
        handle = self._handles[device] = self._handle(self.function(device))
        return handle

    def _launch(self, function: Any, grid3: tuple[int, int, int], stream: int, values: list[Any],
                maps: list[bytes] | None = None) -> None:
        """Launch with ``values``; ``maps``: the tensor maps launch3 found for
        them (else found here: host arrays' buffers are made by now)."""
        for i, convert in self._conversions:
            values[i] = convert(values[i])
        if self.maps is not None and maps is None:
            maps = self.maps.for_launch(values, self.driver.encode_tensor_map)
            if maps is None:  # launch3 chose this kernel for values it had then
                raise CompileError(f"kernel '{self.name}': no tensor map for these arguments, or the driver "
                                   "refuses one", placement.launch_site())
        with self._lock:
            try:
                self._struct.pack_into(self._buffer, 0, *values)
            except (struct.error, OverflowError, TypeError, ValueError):
                self._struct.pack_into(self._buffer, 0, *self._converted(values))
            if maps is not None and maps is not self._packed_maps:  # the buffer keeps the last launch's
                for offset, encoded in zip(self._map_offsets, maps):
                    ctypes.memmove(ctypes.addressof(self._buffer) + offset, encoded, MAP_BYTES)
                self._packed_maps = maps
            last, handle = self._stream_handle
            if stream != last:
                handle = self._handle(stream)
                self._stream_handle = (stream, handle)
            try:
                code = self._launch_raw(function, grid3[0], grid3[1], grid3[2], self.threads, 1, 1,
                                        self.shared_bytes, handle, self._params_handle, self._extra_handle)
            except ctypes.ArgumentError:  # past a C int: launch and launch3's callers check the grid first
                raise CompileError(f"kernel '{self.name}': {grid_error(grid3) or f'a grid of {grid3}'} cannot be "
                                   "launched", placement.launch_site()) from None
        if code:
            raise CudaError(f"cuLaunchKernel of '{self.name}' failed: {self.driver.error_name(code)}", code)

    def _converted(self, values: list[Any]) -> list[Any]:
        """The scalars as their parameters' Python types (a NumPy scalar, an
        int-like), each refused by name where it does not fit."""
        out = list(values)
        for i, (name, t) in enumerate(self.params):
            if isinstance(t, PointerType):
                continue
            try:
                out[i] = _converter(t)(values[i])
                struct.pack("@" + _FORMAT[t], out[i])
            except (struct.error, OverflowError, TypeError, ValueError):
                raise CompileError(f"kernel '{self.name}': argument '{name}' = {printable(repr(values[i]))} does "
                                   f"not fit its parameter type {t}", placement.launch_site()) from None
        return out

    def _launch_with_copies(self, function: Any, grid3: tuple[int, int, int], stream: int,
                            values: list[Any], host: list[tuple[int, Any]]) -> None:
        """Host arrays go to fresh device buffers, and those the kernel stores
        to come back once the launch has run: synchronous, as NumPy users expect."""
        drv = self.driver
        buffers: list[int] = []
        try:
            for i, array in host:
                address = drv.allocate(array.nbytes)
                buffers.append(address)
                drv.copy_to_device(address, array)
                values[i] = address
            self._launch(function, grid3, stream, values)
            drv.synchronize_stream(stream)
            for i, array in host:
                if self.params[i][0] in self.stores:
                    drv.copy_to_host(array, values[i])
        except BaseException:
            # The launch's own error says what went wrong; a context it broke
            # refuses the frees too, and those errors would only hide it.
            with contextlib.suppress(CudaError):
                for address in buffers:
                    drv.free(address)
            raise
        for address in buffers:
            drv.free(address)


def param_offsets(function_format: str) -> list[int]:
    """Each parameter's byte offset in the native struct of ``function_format``."""
    return [struct.calcsize("@" + function_format[:i + 1]) - struct.calcsize("@" + char)
            for i, char in enumerate(function_format)]
