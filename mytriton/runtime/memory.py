"""Arrays a kernel reaches through addresses it loads from memory.

Triton's grouped GEMM (tutorial 08) passes its matrices as an array of
addresses (``tensor.data_ptr()``) and casts each loaded address back to a
pointer (``tl.load(ptrs + g).to(tl.pointer_type(tl.float16))``). With NumPy
arrays on the host, ``addressable`` gives such addresses on either backend:

    with addressable(*group_a, *group_b, *group_c) as memory:
        a_ptrs = np.array([memory.address(a) for a in group_a], dtype=np.int64)
        kernel[grid](a_ptrs, ...)

In the interpreter the address is the array's own (``a.ctypes.data``) and
launches inside the block recognise it (``interp.addressable_arrays``); on
the GPU each array is copied to device memory on entry, the address is the
copy's, and every array is copied back and the copies freed on exit.
"""
from __future__ import annotations

from typing import Any

from mytriton.diagnostics import CompileError


class addressable:
    def __init__(self, *arrays: Any, backend: str | None = None) -> None:
        import numpy as np

        for i, a in enumerate(arrays):
            if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
                raise CompileError(f"addressable: argument {i} must be a C-contiguous NumPy array, "
                                   f"got {type(a).__name__}")
        self.arrays = arrays
        self.requested = backend
        self.backend: str | None = None
        self._addresses: dict[int, int] = {}
        self._device: list[tuple[Any, int]] = []  # (host array, device address)
        self._interp: Any = None

    def __enter__(self) -> "addressable":
        from mytriton.runtime.jit import select_backend

        self.backend = select_backend(self.requested)
        if self.backend == "interp":
            from mytriton.backends.interp import addressable_arrays

            self._interp = addressable_arrays(*self.arrays).__enter__()
            self._addresses = {id(a): int(a.ctypes.data) for a in self.arrays}
            return self
        from mytriton.runtime.cuda_driver import on_device
        from mytriton.runtime.driver_api import driver
        from mytriton.runtime.placement import default_device

        self._on_device = on_device(default_device(driver()))
        with self._on_device as drv:
            for a in self.arrays:
                address = drv.allocate(a.nbytes)
                self._device.append((a, address))
                drv.copy_to_device(address, a)
                self._addresses[id(a)] = address
        return self

    def address(self, array: Any) -> int:
        """Where ``array`` (one of those given) lives for kernels in this block."""
        try:
            return self._addresses[id(array)]
        except KeyError:
            raise CompileError("addressable.address: the array is not one of those given") from None

    def __exit__(self, *exc: object) -> None:
        if self._interp is not None:
            self._interp.__exit__(*exc)
            return
        with self._on_device as drv:
            try:
                drv.synchronize_context()
                for array, address in self._device:
                    drv.copy_to_host(array, address)
            finally:
                for _, address in self._device:
                    drv.free(address)
                self._device.clear()
