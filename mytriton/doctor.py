"""``mytriton doctor``: what this installation has, and why the GPU is or
is not used.

Each check is a (name, finding) row; a check that fails says exactly what
failed (the import error, the missing program) instead of stopping the
report. Versions come from the installed distributions' metadata, so the
report imports only what it has to probe (the driver library, to see the GPUs).
"""
from __future__ import annotations

import os
import platform
import sys
from typing import Callable

Row = tuple[str, str]


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _module_row(name: str, distribution: str, module: str) -> Row:
    """A required package: its version, or the import error."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError) as err:
        return name, f"cannot be found ({type(err).__name__}: {err})"
    if not found:
        return name, f"not installed (No module named '{module}')"
    return name, _version(distribution)


def python_row() -> Row:
    return "Python", f"{platform.python_version()} ({sys.executable})"


def mytriton_row() -> Row:
    import mytriton

    return "mytriton", f"{_version('mytriton')} ({os.path.dirname(mytriton.__file__)})"


def driver_row() -> Row:
    from mytriton.runtime.driver_api import DriverUnavailable, driver

    try:
        version = driver().version()
    except DriverUnavailable as err:
        return "driver", f"CUDA driver not usable: {err}"
    return "driver", f"libcuda, CUDA {version // 1000}.{version % 1000 // 10}"


def nvcc_row() -> Row:
    import subprocess

    from mytriton.backends.cuda.nvcc import find_nvcc
    from mytriton.diagnostics import CompileError

    try:
        nvcc = find_nvcc()
    except CompileError as err:
        return "nvcc", f"not usable: {err.message}"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return "nvcc", f"{nvcc} (cannot run it: {err})"
    releases = [line.strip() for line in out.splitlines() if "release" in line]
    return "nvcc", f"{nvcc} ({releases[-1] if releases else 'version unknown'})"


def nvrtc_row() -> Row:
    """Whether builds run in-process through NVRTC (and with which library),
    or why nvcc builds them."""
    from mytriton.backends.cuda.nvrtc import find
    from mytriton.runtime.driver_api import driver_version

    found, why = find()
    if found is None:
        return "nvrtc", f"not used ({why}): nvcc builds"
    major, minor = found.version
    text = f"{why}, NVRTC {major}.{minor}"
    version = driver_version()
    if version is not None and found.version_number > version:
        return "nvrtc", (f"{text}: newer than the driver (CUDA {version // 1000}.{version % 1000 // 10}), "
                         "so kernels launched here are built by nvcc")
    return "nvrtc", f"{text}: builds kernels"


# The kernel `doctor --build` times: a tiled matmul as tutorial 03 writes its K loop.
BUILD_KERNEL = '''
import mytriton
import mytriton.language as tl


@mytriton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
'''


def build_row(arch: str = "sm_90") -> Row:
    """How long a new kernel's build takes here, caches bypassed: a
    128x128x64 f16 matmul through mytriton's stages to CUDA, then NVRTC or
    nvcc to a cubin (what a kernel's first launch spends before loading)."""
    import time

    from mytriton.backends.cuda import nvcc
    from mytriton.compiler import Options, compile_source
    from mytriton.diagnostics import CompileError

    options = Options(kernel="matmul", defines={"BM": 128, "BN": 128, "BK": 64}, arch=arch,
                      signature="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16")
    # NVRTC 13 keeps its builds in the driver's compute cache too (~/.nv,
    # across processes): off, so that a second doctor times a build again.
    previous = os.environ.get("CUDA_CACHE_DISABLE")
    os.environ["CUDA_CACHE_DISABLE"] = "1"
    try:
        started = time.perf_counter()
        source = compile_source(BUILD_KERNEL, "<doctor>", "cuda", options)
        staged = time.perf_counter()
        nvcc.build(str(source), arch, "cubin", cached=False)
    except CompileError as err:
        return "build", f"cannot build the test kernel: {err.message}"
    finally:
        if previous is None:
            del os.environ["CUDA_CACHE_DISABLE"]
        else:
            os.environ["CUDA_CACHE_DISABLE"] = previous
    built = time.perf_counter()
    return "build", (f"a 128x128x64 f16 matmul for {arch}: mytriton's stages {staged - started:.2f} s, "
                     f"{nvcc.last_toolchain()} {built - staged:.2f} s (caches bypassed)")


def headers_row() -> Row:
    """Generated code includes no header, so NVRTC needs none; nvcc still
    puts its own ``cuda_runtime.h`` before every .cu file and runs its host
    compiler on it (a toolkit without its runtime headers, or without a host
    compiler, builds nothing): ``nvcc -E`` of an empty CUDA file, its first
    error where it fails."""
    import subprocess

    from mytriton.backends.cuda.nvcc import find_nvcc
    from mytriton.diagnostics import CompileError

    try:
        nvcc = find_nvcc()
    except CompileError:
        return "headers", "generated code includes none; no nvcc to check"
    try:
        done = subprocess.run([nvcc, "-E", "-x", "cu", "-o", os.devnull, "-"], input="",
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as err:
        return "headers", f"cannot run {nvcc} -E: {err}"
    if done.returncode != 0:
        errors = [line.strip() for line in (done.stderr + done.stdout).splitlines() if "error" in line.lower()]
        first = errors[0] if errors else (done.stderr.strip().splitlines() or ["no message"])[0]
        return "headers", (f"generated code includes none, but nvcc cannot preprocess an empty CUDA file: {first}; "
                           "install the toolkit's runtime headers (cuda-cudart-dev) and a C++ compiler nvcc "
                           "supports, or NVRTC (pip install nvidia-cuda-nvrtc)")
    return "headers", "generated code includes none; nvcc finds its cuda_runtime.h, host compiler runs"


def gpu_rows() -> list[Row]:
    from mytriton.runtime.cuda_driver import cuda_status

    usable, why = cuda_status()
    if not usable:
        return [("GPUs", f"none usable: {why}")]
    from mytriton.runtime.driver_api import driver

    drv = driver()
    rows = []
    for index in range(drv.device_count()):
        major, minor = drv.compute_capability(index)
        memory = drv.total_memory(index) / 2**30
        rows.append((f"GPU {index}", f"{drv.device_name(index)}, compute capability {major}.{minor} "
                                     f"(sm_{major}{minor}), {memory:.0f} GiB"))
    return rows


def cache_row() -> Row:
    from mytriton.user_cache import always_compile, cache_root, cache_usage

    root = cache_root()
    count, size = cache_usage(root)
    note = "; MYTRITON_ALWAYS_COMPILE is set: nvcc always runs" if always_compile() else ""
    return "cache", f"{root} ({count} entries, {describe_size(size)}){note}"


def backend_row() -> Row:
    from mytriton.diagnostics import CompileError
    from mytriton.runtime.jit import explain_backend

    try:
        name, why = explain_backend()
    except CompileError as err:
        return "backend", f"none: {err.message}"
    return "backend", f"{name} ({why})"


def describe_size(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def report(build: bool = False) -> list[Row]:
    """Every row, in the order printed; no check stops the others. ``build``:
    a timed build of a test kernel too (``build_row``)."""
    checks: list[Callable[[], Row | list[Row]]] = [
        python_row, mytriton_row,
        lambda: _module_row("NumPy", "numpy", "numpy"),
        lambda: _module_row("Lark", "lark", "lark"),
        lambda: _module_row("click", "click", "click"),
        driver_row, nvcc_row, nvrtc_row, headers_row, *([build_row] if build else []), gpu_rows, cache_row,
        backend_row]
    rows: list[Row] = []
    for check in checks:
        try:
            found = check()
        except Exception as err:  # a probe that breaks is itself a finding
            found = (getattr(check, "__name__", "check"), f"check failed: {type(err).__name__}: {err}")
        rows.extend(found if isinstance(found, list) else [found])
    return rows


def render(rows: list[Row]) -> str:
    from mytriton.diagnostics import printable

    width = max(len(name) for name, _ in rows)
    return "".join(f"{name:<{width}}  {printable(finding)}\n" for name, finding in rows)
