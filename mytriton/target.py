"""Facts about the GPU the compiler plans for, in one place."""
from __future__ import annotations

import re


# Shared memory a CUDA block may use without opting in to more. Beyond it a
# kernel needs dynamic shared memory and a raised per-function limit
# (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), which the launcher sets.
DEFAULT_SHARED_LIMIT = 48 * 1024

# The most shared memory one block may opt in to, by the architecture nvcc
# builds for (CUDA's "maximum shared memory per thread block" table). An
# architecture not listed gets DEFAULT_SHARED_LIMIT, which every GPU allows.
OPT_IN_SHARED_MEMORY = {
    "sm_70": 96 * 1024, "sm_72": 96 * 1024, "sm_75": 64 * 1024,
    "sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_87": 163 * 1024, "sm_89": 99 * 1024,
    "sm_90": 227 * 1024, "sm_90a": 227 * 1024,
}

# The architecture kernels are built for unless --arch says otherwise.
DEFAULT_ARCH = "sm_90"


# Architectures with Hopper's warpgroup MMA (wgmma). Code using it is built for
# sm_90a, the architecture-specific target (its cubin runs on sm_90 GPUs only).
WGMMA_ARCHS = ("sm_90", "sm_90a")
WGMMA_BUILD_ARCH = "sm_90a"


def has_wgmma(arch: str) -> bool:
    return arch in WGMMA_ARCHS


def has_tma(arch: str) -> bool:
    """The Tensor Memory Accelerator (``cp.async.bulk.tensor``) needs sm_90."""
    return has_vector_atomics(arch)


def has_vector_atomics(arch: str) -> bool:
    """PTX's vector ``atom`` (``.v2``/``.v4`` of f32) needs sm_90."""
    number = re.fullmatch(r"sm_(\d+)a?", arch)
    return number is not None and int(number.group(1)) >= 90


def shared_memory_budget(arch: str = DEFAULT_ARCH) -> int:
    """The bytes of shared memory one block may use on ``arch``: staged dot
    tiles, pipeline stages, reduction and layout-change scratch together."""
    return OPT_IN_SHARED_MEMORY.get(arch, DEFAULT_SHARED_LIMIT)


# The default target's budget (sm_90: 227 KiB = 232448 bytes).
SHARED_MEMORY_BUDGET = shared_memory_budget(DEFAULT_ARCH)

# Tile elements per thread that a slot loop unrolls wholly (its arrays then live in
# registers). Past 255 registers spill anyway; the bound is nvcc's time on fully
# unrolled slot loops: a 512-slot load and sum build in ~3.5 s, 1024 in ~11 s. 512
# admits a 65536-element row on 4 warps, which Triton libraries launch (Liger-Kernel's
# group norm). Reductions, scans, atomics, layout changes and dots stop there.
MAX_UNROLLED_ELEMENTS_PER_THREAD = 512
# Loads, stores and the arithmetic between them go on past that as real loops (unrolled
# by SLOT_LOOP_UNROLL) over arrays in local memory, as Triton's spills would hold them
# (Liger-Kernel's multi-token attention masks a 512x512 tile on 4 warps: 2048 a thread),
# up to this bound: a thread's array of one f32 tile is then 32 KiB, and the driver
# reserves local memory for every thread that can be resident.
MAX_ELEMENTS_PER_THREAD = 8192
SLOT_LOOP_UNROLL = 4


def budget_text(budget: int) -> str:
    """A budget as messages give it: ``232448-byte (227 KiB)``."""
    kib = f"{budget // 1024} KiB" if budget % 1024 == 0 else f"{budget / 1024:.1f} KiB"
    return f"{budget}-byte ({kib})"
