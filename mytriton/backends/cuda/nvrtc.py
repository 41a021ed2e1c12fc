"""Building CUDA in-process with NVRTC, NVIDIA's runtime compiler library.

nvcc runs a chain of processes for each build (the host preprocessor, cicc,
ptxas, fatbinary): about 0.8 s of a 128x128x64 matmul's first call. NVRTC
runs the same front end, optimiser and ptxas inside this process, from one
call that gives both the PTX and the cubin: about half the time, and no
temporary files. ``nvcc.build`` uses it where it is found; nvcc otherwise,
silently. The generated code includes no header (f16 and bf16 are the
kernel's own, halves.py; INFINITY and NAN the prelude's, below), so NVRTC is
given no include folder: the library alone builds, as the
``nvidia-cuda-nvrtc`` pip package brings it, without the CUDA runtime's headers.

Where libnvrtc is looked for, first found wins:

- ``MYTRITON_NVRTC``: the library's path (or its folder); ``0`` turns NVRTC off.
- The ``nvidia`` pip packages (nvidia-cuda-nvrtc: ``nvidia/cu13/lib``,
  ``nvidia/cuda_nvrtc/lib``), found on ``sys.path`` without importing them.
- The toolkit beside nvcc (``../lib64``, ``../targets/x86_64-linux/lib``),
  ``$CUDA_HOME`` and ``$CUDA_PATH``, ``/usr/local/cuda``.

libnvrtc opens its builtins library (``libnvrtc-builtins.so.MAJOR.MINOR``)
by name when it first compiles, which fails unless the library's folder is
on the loader's path; the one beside libnvrtc is loaded first, globally, so
that name is found already loaded. A library that still cannot compile
(``NVRTC_ERROR_BUILTIN_OPERATION_FAILURE``) is dropped for the rest of the
process and nvcc builds instead.

The calls go through ctypes, which releases the GIL while NVRTC runs: an
autotuner's builds on several threads compile at once, as its nvcc
processes did. Nothing is written to disk, so an interrupted build leaves
nothing behind.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from mytriton.diagnostics import CompileError

ENV = "MYTRITON_NVRTC"
# What the generated CUDA takes from the host's C library through nvcc (its host compiler's
# <math.h>), which NVRTC does not read: INFINITY and NAN, with glibc's values, usable in
# constant expressions as glibc's are. Put before the source's first line, whose numbering it
# leaves alone.
PRELUDE = """\
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000U))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000U))
#endif
"""
# nvrtcResult values that change what the build does.
SUCCESS = 0
ERROR_COMPILATION = 6
ERROR_BUILTIN_OPERATION_FAILURE = 7
# The pip packages' folders under the ``nvidia`` namespace, newest layout first.
_PIP_FOLDERS = ("cu13", "cuda_nvrtc", "cu12")

_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_size_p = ctypes.POINTER(ctypes.c_size_t)
_SIGNATURES: dict[str, list] = {
    "nvrtcVersion": [_c_int_p, _c_int_p],
    "nvrtcGetNumSupportedArchs": [_c_int_p],
    "nvrtcGetSupportedArchs": [_c_int_p],
    "nvrtcCreateProgram": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                           ctypes.c_void_p, ctypes.c_void_p],
    "nvrtcCompileProgram": [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    "nvrtcGetProgramLogSize": [ctypes.c_void_p, _c_size_p],
    "nvrtcGetProgramLog": [ctypes.c_void_p, ctypes.c_char_p],
    "nvrtcGetPTXSize": [ctypes.c_void_p, _c_size_p],
    "nvrtcGetPTX": [ctypes.c_void_p, ctypes.c_char_p],
    "nvrtcGetCUBINSize": [ctypes.c_void_p, _c_size_p],
    "nvrtcGetCUBIN": [ctypes.c_void_p, ctypes.c_char_p],
    "nvrtcDestroyProgram": [ctypes.POINTER(ctypes.c_void_p)],
}


@dataclass(frozen=True)
class Nvrtc:
    """A loaded libnvrtc, and what names this toolchain in cache keys."""

    lib: ctypes.CDLL
    path: str
    version: tuple[int, int]
    archs: frozenset[int]
    toolchain: str

    @property
    def version_number(self) -> int:
        """The version as the driver numbers its own (13.0 -> 13000)."""
        return self.version[0] * 1000 + self.version[1] * 10

    def supports(self, arch: str) -> bool:
        digits = arch[3:].rstrip("af")
        return arch.startswith("sm_") and digits.isdigit() and int(digits) in self.archs


class BuiltinsMissing(Exception):
    """NVRTC could not open its builtins library: this libnvrtc cannot compile."""


# ---- finding the library ------------------------------------------------------------------


def _nvidia_folders() -> list[Path]:
    """The folders of the ``nvidia`` namespace package on sys.path, found
    without importing it (torch's own packages live there)."""
    folders: list[Path] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        folders.extend(Path(p) for p in spec.submodule_search_locations)
    for entry in sys.path:  # a namespace package's locations can be stale; the path itself is not
        candidate = Path(entry or ".") / "nvidia"
        if candidate.is_dir() and candidate not in folders:
            folders.append(candidate)
    return folders


def _toolkit_roots(nvcc: str | None) -> list[Path]:
    """Toolkit folders: beside nvcc (through links), $CUDA_HOME, $CUDA_PATH, /usr/local/cuda."""
    roots: list[Path] = []
    if nvcc is not None:
        roots.append(Path(os.path.realpath(nvcc)).parent.parent)
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(variable)
        if value:
            roots.append(Path(value))
    roots.append(Path("/usr/local/cuda"))
    return roots


def _library_in(folder: Path) -> Path | None:
    """libnvrtc in ``folder``: the versioned name (what the pip packages
    ship), else the unversioned link (the toolkit's)."""
    if not folder.is_dir():
        return None
    found = sorted(p for p in folder.glob("libnvrtc.so.*") if p.name.count(".") == 2 and ".alt." not in p.name)
    if found:
        return found[-1]
    plain = folder / "libnvrtc.so"
    return plain if plain.exists() else None


def _which_nvcc() -> str | None:
    nvcc = shutil.which("nvcc")
    return nvcc if nvcc is not None or not os.path.exists("/usr/local/cuda/bin/nvcc") else "/usr/local/cuda/bin/nvcc"


def find_library(nvcc: str | None = None) -> tuple[Path | None, str]:
    """libnvrtc's path, or None, and where it was looked for (or why not)."""
    setting = os.environ.get(ENV, "").strip()
    if setting == "0":
        return None, f"{ENV}=0 turns NVRTC off"
    if setting:
        given = Path(setting)
        found = _library_in(given) if given.is_dir() else (given if given.is_file() else None)
        return found, f"{ENV}={setting}" + ("" if found else " names no libnvrtc")  # no fallback: as asked
    for folder in _nvidia_folders():
        for name in _PIP_FOLDERS:
            found = _library_in(folder / name / "lib")
            if found is not None:
                return found, "an nvidia pip package"
    nvcc = nvcc if nvcc is not None else _which_nvcc()
    for root in _toolkit_roots(nvcc):
        for lib in ("lib64", "targets/x86_64-linux/lib", "lib"):
            found = _library_in(root / lib)
            if found is not None:
                return found, f"the CUDA toolkit in {root}"
    return None, "libnvrtc is in neither the nvidia pip packages nor the CUDA toolkit"


# ---- loading ------------------------------------------------------------------------------


_lock = threading.Lock()
_broken: set[str] = set()  # libraries that could not open their builtins


def _load(path: Path) -> ctypes.CDLL:
    folder = path.resolve().parent
    for builtins in sorted(folder.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtins.name and builtins.name.count(".") == 3:  # libnvrtc-builtins.so.13.0
            try:
                ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass  # then only a builtins library on the loader's path can serve
    lib = ctypes.CDLL(str(path))
    for name, argtypes in _SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _stat_text(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return f"{path} (missing)"
    return f"{path} {info.st_size} {info.st_mtime_ns}"


@functools.lru_cache(maxsize=None)
def _loaded(path: str) -> Nvrtc | None:
    try:
        lib = _load(Path(path))
    except (OSError, AttributeError):
        return None  # not a libnvrtc, or one without a function used here (older than CUDA 11.1)
    major, minor = ctypes.c_int(), ctypes.c_int()
    count = ctypes.c_int()
    if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != SUCCESS \
            or lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)) != SUCCESS:
        return None
    archs = (ctypes.c_int * count.value)()
    if lib.nvrtcGetSupportedArchs(archs) != SUCCESS:
        return None
    # The key names the library: its version, and its file (a patch release or a rebuild in place
    # changes size or time). It reads no header, so none is named.
    toolchain = "; ".join([f"nvrtc {major.value}.{minor.value}", _stat_text(Path(path).resolve())])
    return Nvrtc(lib, path, (major.value, minor.value), frozenset(archs), toolchain)


def find() -> tuple[Nvrtc | None, str]:
    """The NVRTC to build with, loaded, or None and why not. Looked up on
    each call (the environment may change), loaded once per library."""
    path, where = find_library()
    if path is None:
        return None, where
    if str(path) in _broken:
        return None, f"{path} cannot open its builtins library (libnvrtc-builtins)"
    with _lock:
        loaded = _loaded(str(path))
    if loaded is None:
        return None, f"{path} cannot be loaded as libnvrtc"
    return loaded, f"{path} (from {where})"


def available() -> Nvrtc | None:
    return find()[0]


# ---- compiling ----------------------------------------------------------------------------


def _text(lib: ctypes.CDLL, program: ctypes.c_void_p, what: str) -> bytes:
    size = ctypes.c_size_t()
    if getattr(lib, f"nvrtcGet{what}Size")(program, ctypes.byref(size)) != SUCCESS:
        return b""
    buffer = ctypes.create_string_buffer(size.value)
    if getattr(lib, f"nvrtcGet{what}")(program, buffer) != SUCCESS:
        return b""
    return buffer.raw[:size.value]


def compile_source(nvrtc: Nvrtc, source: str, name: str, options: list[str]) -> tuple[bytes, bytes]:
    """The PTX and the cubin of CUDA ``source`` (the program named ``name``,
    as ``#line`` and ``-lineinfo`` see it) built with ``options``. A program
    NVRTC rejects raises CompileError with its log; a library that cannot
    open its builtins raises BuiltinsMissing."""
    lib = nvrtc.lib
    program = ctypes.c_void_p()
    result = lib.nvrtcCreateProgram(ctypes.byref(program), source.encode("utf-8"), name.encode("utf-8"),
                                    0, None, None)
    if result != SUCCESS:
        raise CompileError(f"nvrtc cannot create a program: {lib.nvrtcGetErrorString(result).decode()}")
    try:
        encoded = [option.encode("utf-8") for option in options]
        result = lib.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
        if result == ERROR_BUILTIN_OPERATION_FAILURE:
            with _lock:
                _broken.add(nvrtc.path)
            raise BuiltinsMissing(_text(lib, program, "ProgramLog").rstrip(b"\0").decode("utf-8", "replace"))
        if result != SUCCESS:
            log = _text(lib, program, "ProgramLog").rstrip(b"\0").decode("utf-8", "replace").strip()
            reason = lib.nvrtcGetErrorString(result).decode()
            raise CompileError(f"nvrtc failed ({' '.join(options)}): {reason}" + (f"\n{log}" if log else ""))
        return _text(lib, program, "PTX").rstrip(b"\0"), _text(lib, program, "CUBIN")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
