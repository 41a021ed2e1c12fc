"""Running nvcc, with an on-disk cache keyed by source, options and toolchain.

The cache lives in ``$MYTRITON_CACHE_DIR`` (default ``~/.cache/mytriton``);
a second build of the same CUDA source with the same nvcc skips nvcc.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from mytriton.diagnostics import CompileError

VERSION = "mytriton-0.1"


def cache_dir() -> Path:
    root = os.environ.get("MYTRITON_CACHE_DIR") or os.path.join(Path.home(), ".cache", "mytriton")
    return Path(root)


def find_nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        for candidate in ("/usr/local/cuda/bin/nvcc",):
            if os.path.exists(candidate):
                return candidate
        raise CompileError("nvcc was not found on PATH; it is needed to build CUDA (install the CUDA toolkit)")
    return nvcc


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise CompileError(f"cannot run {nvcc}: {err}") from None
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def build(source: str, arch: str, kind: str) -> bytes:
    """Compile CUDA ``source`` to ``kind`` ("cubin" or "ptx") for ``arch``,
    reusing an earlier build of the same source, options and nvcc."""
    nvcc = find_nvcc()
    options = [f"-arch={arch}", "-O3", "-lineinfo"]
    key_text = "\n".join([VERSION, nvcc_version(nvcc), kind, *options, source])
    key = hashlib.sha256(key_text.encode()).hexdigest()
    cached = cache_dir() / f"{key}.{kind}"
    if cached.exists():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory(prefix="mytriton-") as tmp:
        src = Path(tmp) / "kernel.cu"
        out = Path(tmp) / f"kernel.{kind}"
        src.write_text(source)
        cmd = [nvcc, f"--{kind}", *options, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"nvcc failed ({' '.join(cmd[1:-3])}):\n{proc.stderr.strip()}")
        data = out.read_bytes()
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=cached.parent, suffix=".partial")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(partial, cached)
    except OSError:
        pass  # an unwritable cache only costs time
    return data


def compile_ptx(source: str, arch: str = "sm_90") -> str:
    return build(source, arch, "ptx").decode()


def compile_cubin(source: str, arch: str = "sm_90") -> bytes:
    return build(source, arch, "cubin")
