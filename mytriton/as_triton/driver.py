"""``triton.runtime.driver`` as mytriton gives it: ``driver.active`` answers
what libraries ask of Triton's CUDA driver (the current device and stream,
the device's capability and properties such as its multiprocessor count),
from PyTorch's view of the GPU, as Triton's driver does when PyTorch is
loaded. Without a usable CUDA GPU, ``driver.active`` is an error, as
Triton's "0 active drivers" is.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from typing import Any

GPUTarget = namedtuple("GPUTarget", ["backend", "arch", "warp_size"])


class DeviceProperties(dict):
    """Triton's ``utils.get_device_properties`` dict; a key PyTorch does not
    report is a KeyError that says so."""

    def __missing__(self, key: str) -> Any:
        raise KeyError(f"mytriton's device properties have no {key!r} (they have {', '.join(self)})")


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise RuntimeError("0 active drivers: mytriton's triton.runtime.driver asks PyTorch about the GPU, and "
                           "PyTorch is not installed") from None
    if not torch.cuda.is_available():
        raise RuntimeError("0 active drivers: PyTorch sees no CUDA GPU here")
    return torch


class _Utils:
    def get_device_properties(self, device: int) -> DeviceProperties:
        props = _torch().cuda.get_device_properties(device)
        found = {"multiprocessor_count": props.multi_processor_count,
                 "max_shared_mem": getattr(props, "shared_memory_per_block_optin", None),
                 "max_num_regs": getattr(props, "regs_per_multiprocessor", None),
                 "warpSize": getattr(props, "warp_size", None)}
        return DeviceProperties({key: value for key, value in found.items() if value is not None})


class CudaDriver:
    """Triton's ``CudaDriver``, as far as libraries use it."""

    def __init__(self) -> None:
        _torch()
        self.utils = _Utils()

    def get_current_device(self) -> int:
        return _torch().cuda.current_device()

    def set_current_device(self, device: int) -> None:
        _torch().cuda.set_device(device)

    def get_current_stream(self, device: int | None = None) -> int:
        return _torch().cuda.current_stream(device).cuda_stream

    def get_device_capability(self, device: int | None = None) -> tuple[int, int]:
        return _torch().cuda.get_device_capability(device)

    def get_current_target(self) -> GPUTarget:
        major, minor = self.get_device_capability(self.get_current_device())
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self) -> Any:
        return _torch().device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        return _torch().cuda

    def get_benchmarker(self) -> Any:
        from mytriton.as_triton.testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        torch = _torch()
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    @staticmethod
    def is_active() -> bool:
        torch = sys.modules.get("torch")
        return torch is not None and torch.cuda.is_available()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"mytriton's triton.runtime.driver.active has no '{name}'")


class DriverConfig:
    """Triton's ``triton.runtime.driver``: ``active`` (made when first asked),
    ``default``, ``set_active`` and ``reset_active``."""

    def __init__(self) -> None:
        self._default: Any = None
        self._active: Any = None

    @property
    def default(self) -> Any:
        if self._default is None:
            self._default = CudaDriver()
        return self._default

    @property
    def active(self) -> Any:
        if self._active is None:
            self._active = self.default
        return self._active

    def set_active(self, driver: Any) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = self.default


driver = DriverConfig()
