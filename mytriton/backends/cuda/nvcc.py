"""Building CUDA with NVRTC or nvcc, with an on-disk cache keyed by source,
options and toolchain.

``build`` compiles in-process with NVRTC where libnvrtc is found (nvrtc.py
says where it looks; ``MYTRITON_NVRTC=0`` turns it off; no header is needed),
else with nvcc: a kernel's first call costs about half as much. Both take
the same text (``for_nvcc``: the ``#line`` rules below hold for both) and the
same options (the architecture, ``-lineinfo``, full optimisation), and give
the same kinds of output; the cubins differ in a few instructions (NVRTC's
front end computes shared-memory addresses in 64 bits where nvcc's uses
32-bit shared pointers). A cache key names the toolchain (nvcc's version
line, or NVRTC's version and library), so the two never read each
other's entries. The runtime launcher passes its driver's version: NVRTC
builds only when it is no newer than the driver, which may refuse to load a
newer compiler's cubin.

The cache lives in ``user_cache.cache_root()`` (``$MYTRITON_CACHE_DIR``, else
``$XDG_CACHE_HOME/mytriton``, else ``~/.cache/mytriton``); a second build of
the same CUDA source with the same toolchain skips the compile, unless
``MYTRITON_ALWAYS_COMPILE=1`` (then it always runs, and the entry is rewritten).

An entry is a header line (magic, length, SHA-256 of the payload) and the
payload. An entry that fails the check (truncated, empty, overwritten) is
treated as missing: nvcc runs again and the entry is rewritten. Entries are
written to a ``*.partial`` file in the cache directory and renamed into place,
so a reader never sees half an entry; a failed write (a full disk) removes its
partial file and only costs time.

Builds record line info (``-lineinfo``) that maps the GPU code to the
kernel's Python lines: the emitter's ``#line`` directives name the kernel's
file, and nvcc is given them as ``line_directives.for_nvcc`` writes them,
before every line and with a relative file name made absolute against the
working directory (nvcc's own is a temporary one). The key of a cache entry
is that text, so the same kernel read from two files, or through one relative
name from two directories, builds twice, each cubin naming its own file.

Builds are reproducible: the same source, options, nvcc and working
directory (where the kernel's file name is relative) give the same PTX and
cubin, byte for byte, in any temporary directory and in parallel. nvcc runs
in a fresh private directory (its own temporary files go there too, through
``TMPDIR``), but the source starts with a ``#line`` directive naming a fixed
file, so ``-lineinfo`` records that name and not the temporary path for the
lines before the kernel's own directives (and for a ``.cu`` file without
them), and cicc is told the same fixed name as the source's path: it derives
the internal names of static functions (in ``-lineinfo``'s debug strings)
from that path, which would otherwise be the random directory's.

NVRTC compiles from memory to memory: its program is named with the same
fixed file name (``-lineinfo`` records it, and NVRTC derives no name from a
path of its own), so its builds are reproducible in the same way.

An interrupted build (Ctrl-C, SIGTERM, SIGHUP) leaves nothing behind: the
directory and nvcc's process group are registered with ``mytriton.scratch``
(an NVRTC build has neither).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from pathlib import Path

from mytriton import scratch
from mytriton.backends.cuda import nvrtc
from mytriton.backends.cuda.line_directives import for_nvcc
from mytriton.diagnostics import CompileError
from mytriton.user_cache import always_compile, cache_root, read_private, write_private

VERSION = "mytriton-0.1"
_MAGIC = b"mytriton-cache-1"
# The file name -lineinfo records for lines before the kernel's #line
# directives (an absolute one: nvcc would prefix a relative one with its
# working directory, a random temporary path).
SOURCE_NAME = "/mytriton/kernel.cu"
# cicc takes the last --orig_src_path_name it is given: this one, after nvcc's.
FIXED_PATH = ["-Xcicc", "--orig_src_path_name", "-Xcicc", SOURCE_NAME]


def cache_dir() -> Path:
    return cache_root()


class NvccMissing(CompileError):
    """nvcc is on neither PATH nor the toolkit's usual place."""


def find_nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        for candidate in ("/usr/local/cuda/bin/nvcc",):
            if os.path.exists(candidate):
                return candidate
        raise NvccMissing("nvcc was not found on PATH; it is needed to build CUDA (install the CUDA toolkit)")
    return nvcc


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise CompileError(f"cannot run {nvcc}: {err}") from None
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def build(source: str, arch: str, kind: str, driver_version: int | None = None, cached: bool = True) -> bytes:
    """Compile CUDA ``source`` to ``kind`` ("cubin" or "ptx") for ``arch``,
    reusing an earlier build of the same source, options and toolchain: NVRTC
    where it is found and supports ``arch`` (and, given the version of the
    driver that will load the cubin, is no newer than it), else nvcc.
    ``cached=False``: a build of its own, neither read from the cache nor
    written to it (``mytriton doctor --build`` times one)."""
    arch = build_arch(source, arch)
    text = for_nvcc(source)  # what the compiler reads: the key holds all of it (the Python file's absolute name)
    compiler = nvrtc_for(arch, driver_version)
    if compiler is not None:
        try:
            return build_nvrtc(compiler, text, arch, kind, cached)
        except nvrtc.BuiltinsMissing:
            pass  # this libnvrtc cannot compile at all (it is dropped for the process): nvcc builds
    nvcc = find_nvcc()
    # sm_90a by -gencode: the -arch shorthand of some nvcc releases also runs a plain sm_90 pass.
    target = f"-gencode=arch=compute_{arch[3:]},code={arch}" if arch.endswith("a") and kind == "cubin" \
        else f"-arch={arch}"
    options = [target, "-O3", "-lineinfo", *FIXED_PATH]
    key_text = "\n".join([VERSION, nvcc_version(nvcc), kind, *options, text])
    key = hashlib.sha256(key_text.encode()).hexdigest()
    entry = cache_dir() / f"{key}.{kind}"
    _used.name = "nvcc"
    data = None if always_compile() or not cached else read_entry(entry)
    if data is not None:
        return data
    data = run_nvcc(nvcc, text, kind, options)
    if cached:
        write_entry(entry, data)
    return data


def nvrtc_for(arch: str, driver_version: int | None = None) -> nvrtc.Nvrtc | None:
    """The NVRTC to build ``arch`` with, or None for nvcc. With
    ``driver_version`` (cuDriverGetVersion's number: 13000 is 13.0) NVRTC is
    used only when it is no newer than that driver: a cubin from a newer
    compiler may not load."""
    compiler = nvrtc.available()
    if compiler is None or not compiler.supports(arch):
        return None
    if driver_version is not None and compiler.version_number > driver_version:
        return None
    return compiler


def nvrtc_options(compiler: nvrtc.Nvrtc, arch: str) -> list[str]:
    """nvcc's options as NVRTC spells them. A real architecture (sm_90a),
    so one compile gives both the PTX (``.target sm_90a``, as nvcc's -ptx
    writes it) and the cubin. No -O: NVRTC optimises fully, as nvcc's device
    passes do by default (nvcc's -O3 is its host compiler's). -device-int128:
    nvcc takes ``__int128`` in device code (64-bit umulhi) by default.
    -minimal (NVRTC 12.4 on): NVRTC leaves out what the kernels never use
    (textures, the device runtime's ``cuda*`` functions and types, device-side
    launches), which saved a process's first build 0.06-0.08 s here and gave
    the same cubin for all 211 kernels compared (every sample, lit and
    Triton-style kernel, the math and op-coverage tests' CUDA)."""
    minimal = ["-minimal"] if compiler.version >= (12, 4) else []
    return [f"-arch={arch}", "-lineinfo", "-device-int128", *minimal]


def _key(toolchain: str, kind: str, options: list[str], text: str) -> str:
    # The prelude is part of what NVRTC reads, so of the key.
    return hashlib.sha256("\n".join([VERSION, toolchain, kind, *options, nvrtc.PRELUDE, text]).encode()).hexdigest()


def build_nvrtc(compiler: nvrtc.Nvrtc, text: str, arch: str, kind: str, cached: bool = True) -> bytes:
    """``build`` through NVRTC. Its cache keys name NVRTC's version (and
    library), where nvcc's name nvcc's: the two never read each other's
    entries. A compile gives the PTX and the cubin: a PTX build keeps both
    (and the cubin as that of its PTX, for ``cubin_from_ptx``), so
    ``--emit=cubin`` compiles the CUDA once and a later JIT build of the same
    kernel finds its cubin."""
    options = nvrtc_options(compiler, arch)
    entry = cache_dir() / f"{_key(compiler.toolchain, kind, options, text)}.{kind}"
    _used.name = "nvrtc"
    data = None if always_compile() or not cached else read_entry(entry)
    if data is not None:
        return data
    # The fixed name, as nvcc's source gets: -lineinfo records it for the lines before the kernel's own.
    ptx, cubin = nvrtc.compile_source(compiler, f'{nvrtc.PRELUDE}#line 1 "{SOURCE_NAME}"\n{text}', SOURCE_NAME,
                                      options)
    if not cached:
        return ptx if kind == "ptx" else cubin
    if kind == "ptx":
        write_entry(entry, ptx)
        write_entry(cache_dir() / f"{_key(compiler.toolchain, 'cubin', options, text)}.cubin", cubin)
        _remember_cubin(compiler, ptx, cubin)
        return ptx
    write_entry(entry, cubin)
    return cubin


# The cubins of the PTX the ptx stage built last through NVRTC, by the PTX (and toolchain): the
# cubin stage takes them from here, where the cache may be unwritable or bypassed.
_CUBINS_KEPT = 16
_cubins: OrderedDict[str, bytes] = OrderedDict()
_cubins_lock = threading.Lock()
# Which toolchain the calling thread's last build used ("nvcc" or "nvrtc"): --time-passes names it.
_used = threading.local()


def last_toolchain() -> str:
    return getattr(_used, "name", "nvcc")


def _ptx_key(compiler: nvrtc.Nvrtc, ptx: bytes) -> str:
    return _key(compiler.toolchain, "cubin from ptx", [], ptx.decode("utf-8", "replace"))


def _remember_cubin(compiler: nvrtc.Nvrtc, ptx: bytes, cubin: bytes) -> None:
    key = _ptx_key(compiler, ptx)
    with _cubins_lock:
        _cubins[key] = cubin
        _cubins.move_to_end(key)
        while len(_cubins) > _CUBINS_KEPT:
            _cubins.popitem(last=False)
    write_entry(cache_dir() / f"{key}.cubin", cubin)


def _nvrtc_cubin_of(ptx: str) -> bytes | None:
    """The cubin NVRTC made with ``ptx``, kept by the PTX build, or None."""
    compiler = nvrtc.available()
    if compiler is None:
        return None
    key = _ptx_key(compiler, ptx.encode("utf-8"))
    with _cubins_lock:
        cubin = _cubins.get(key)
    if cubin is None and not always_compile():
        cubin = read_entry(cache_dir() / f"{key}.cubin")
    return cubin


def build_arch(source: str, arch: str) -> str:
    """The architecture to build ``source`` for: ``arch``, or its
    architecture-specific variant (sm_90 -> sm_90a) where the kernel's header
    says it uses instructions only that variant has (wgmma)."""
    from mytriton.backends.cuda.emitter import header_of

    needs = (header_of(source) or {}).get("arch")
    if isinstance(needs, str) and needs == arch + "a":
        return needs
    return arch


def resource_usage(source: str, arch: str) -> str:
    """ptxas's report (``nvcc --resource-usage``: registers, spills, stack
    of each entry function) on the cubin build of ``source``, cached as the
    builds are. A build of its own, with the cubin's options and this flag
    added, so the cubin's own build and cache entry stay as they are."""
    nvcc = find_nvcc()
    arch = build_arch(source, arch)
    target = f"-gencode=arch=compute_{arch[3:]},code={arch}" if arch.endswith("a") else f"-arch={arch}"
    options = [target, "-O3", "-lineinfo", *FIXED_PATH]
    key_text = "\n".join([VERSION, nvcc_version(nvcc), "resource-usage", *options, source])
    cached = cache_dir() / f"{hashlib.sha256(key_text.encode()).hexdigest()}.usage"
    data = None if always_compile() else read_entry(cached)
    if data is None:
        data = run_nvcc(nvcc, source, "cubin", [*options, "--resource-usage"], report=True)
        write_entry(cached, data)
    return data.decode("utf-8", "replace")


def cubin_from_ptx(ptx: str) -> bytes:
    """The cubin of PTX that ``compile_ptx`` made. Through NVRTC, the cubin
    that same compile made (kept with the PTX). Through nvcc, nvcc on a
    ``.ptx`` runs ptxas alone (no preprocessor, no cicc), for the target the
    PTX names, with the options ``build`` gives a cubin, so the result is
    byte for byte the cubin ``compile_cubin`` builds from the same CUDA.
    Either way ``--emit=cubin`` and ``--dump-dir`` show the PTX on the way
    and the CUDA is compiled once. PTX that NVRTC did not build (or whose
    cubin is no longer kept) goes to ptxas."""
    kept = _nvrtc_cubin_of(ptx)
    if kept is not None:
        _used.name = "nvrtc"
        return kept
    _used.name = "nvcc"
    target = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    if target is None:
        raise CompileError("the PTX names no .target sm_XX: it was not made by nvcc -ptx")
    arch = target.group(1)
    nvcc = find_nvcc()
    options = [f"-gencode=arch=compute_{arch[3:]},code={arch}" if arch.endswith("a") else f"-arch={arch}",
               "-O3", "-lineinfo"]
    key_text = "\n".join([VERSION, nvcc_version(nvcc), "cubin from ptx", *options, ptx])
    cached = cache_dir() / f"{hashlib.sha256(key_text.encode()).hexdigest()}.cubin"
    data = None if always_compile() else read_entry(cached)
    if data is None:
        data = run_nvcc(nvcc, ptx, "cubin", options, suffix=".ptx")
        write_entry(cached, data)
    return data


def run_nvcc(nvcc: str, source: str, kind: str, options: list[str], report: bool = False,
             suffix: str = ".cu") -> bytes:
    """nvcc's output file; with ``report``, what it printed on stderr instead.
    ``suffix`` ".ptx": the source is PTX (given to ptxas as it is)."""
    try:
        with scratch.directory() as tmp:
            src = tmp / f"kernel{suffix}"
            out = tmp / f"kernel.{kind}"
            src.write_text(f'#line 1 "{SOURCE_NAME}"\n{source}' if suffix == ".cu" else source)
            cmd = [nvcc, f"--{kind}", *options, "-o", str(out), str(src)]
            proc = scratch.run(cmd, env={**os.environ, "TMPDIR": str(tmp)})
            if proc.returncode != 0 and "orig_src_path_name" in proc.stderr:
                # A cicc that does not take the fixed path: a working build matters more than a
                # reproducible one.
                cmd = [o for o in cmd if o not in FIXED_PATH]
                proc = scratch.run(cmd, env={**os.environ, "TMPDIR": str(tmp)})
            if proc.returncode != 0:
                shown = [o for o in cmd[1:-3] if o not in FIXED_PATH]
                raise CompileError(f"nvcc failed ({' '.join(shown)}):\n{proc.stderr.strip()}")
            return proc.stderr.encode() if report else out.read_bytes()
    except OSError as err:
        raise CompileError(f"cannot build with nvcc in a temporary directory: {err}") from None


def pack_entry(data: bytes) -> bytes:
    return b"%s %d %s\n" % (_MAGIC, len(data), hashlib.sha256(data).hexdigest().encode()) + data


def unpack_entry(blob: bytes) -> bytes | None:
    """The payload of a cache entry, or None if the entry is not whole."""
    header, newline, data = blob.partition(b"\n")
    fields = header.split(b" ")
    if not newline or len(fields) != 3 or fields[0] != _MAGIC or not fields[1].isdigit():
        return None
    if int(fields[1]) != len(data) or hashlib.sha256(data).hexdigest().encode() != fields[2]:
        return None
    return data


def read_entry(path: Path) -> bytes | None:
    """A cache entry's payload if the entry is whole and private (a cubin is
    code the GPU runs: one planted by another user must not load)."""
    blob = read_private(path)
    return None if blob is None else unpack_entry(blob)


def write_entry(path: Path, data: bytes) -> None:
    """Write a cache entry atomically; an unwritable cache only costs time."""
    write_private(path, pack_entry(data))


def compile_ptx(source: str, arch: str = "sm_90") -> str:
    data = build(source, arch, "ptx")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CompileError(f"{last_toolchain()} produced PTX that is not text") from None


def compile_cubin(source: str, arch: str = "sm_90", driver_version: int | None = None) -> bytes:
    """The cubin of ``source``; ``driver_version``: the driver that loads it
    (NVRTC builds it only if no newer, see ``nvrtc_for``)."""
    return build(source, arch, "cubin", driver_version)
