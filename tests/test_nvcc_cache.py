"""The nvcc cache checks what it reads and writes whole entries only: a
truncated, empty or overwritten entry is rebuilt and rewritten, a failed
write leaves no partial file, and builds do not depend on where nvcc ran."""
from __future__ import annotations

import errno
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import SAMPLES
from mytriton import compiler
from mytriton.backends.cuda import nvcc
from mytriton.diagnostics import CompileError
from mytriton.compiler import Options

pytestmark = pytest.mark.nvcc


@pytest.fixture(autouse=True)
def nvcc_only(monkeypatch):
    """nvcc's cache, temporary directories and processes: NVRTC, where found, is off."""
    monkeypatch.setenv("MYTRITON_NVRTC", "0")


@pytest.fixture(scope="module")
def relu_cuda() -> str:
    source = (SAMPLES / "relu.py").read_text()
    return compiler.compile_source(source, "samples/relu.py", "cuda", Options())


@pytest.fixture
def nvcc_builds(monkeypatch):
    """The nvcc builds (not version queries) started from now on."""
    calls: list[list[str]] = []
    real_run = nvcc.scratch.run

    def counting_run(cmd, *args, **kwargs):
        calls.append(list(cmd))
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(nvcc.scratch, "run", counting_run)
    return calls


def entry(cache) -> Path:
    """The one entry of ``cache``."""
    (path,) = cache.iterdir()
    return path


@pytest.mark.parametrize("damage", ["truncated", "empty", "binary", "payload changed"])
def test_a_damaged_entry_is_rebuilt_and_rewritten(cache, nvcc_builds, relu_cuda, damage):
    ptx = nvcc.compile_ptx(relu_cuda)
    path = entry(cache)
    whole = path.read_bytes()
    path.write_bytes({
        "truncated": whole[:len(whole) // 2],
        "empty": b"",
        "binary": bytes(range(256)) * 4,
        "payload changed": whole.replace(b".entry", b".entrx"),
    }[damage])
    builds = len(nvcc_builds)
    assert nvcc.compile_ptx(relu_cuda) == ptx
    assert len(nvcc_builds) == builds + 1
    assert path.read_bytes() == whole


def test_a_whole_entry_is_read_without_nvcc(cache, nvcc_builds, relu_cuda):
    ptx = nvcc.compile_ptx(relu_cuda)
    builds = len(nvcc_builds)
    assert nvcc.compile_ptx(relu_cuda) == ptx
    assert len(nvcc_builds) == builds


def test_an_entry_records_length_and_checksum():
    packed = nvcc.pack_entry(b"payload")
    assert nvcc.unpack_entry(packed) == b"payload"
    assert nvcc.unpack_entry(packed[:-1]) is None
    assert nvcc.unpack_entry(packed + b"x") is None
    assert nvcc.unpack_entry(packed[:-1] + b"P") is None


class _FullDisk:
    """A file whose writes store a few bytes, then fail as a full disk does."""

    def __init__(self, handle) -> None:
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()

    def write(self, data: bytes) -> int:
        self.handle.write(data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_leaves_no_partial_file_and_still_returns_the_build(cache, relu_cuda, monkeypatch):
    real_fdopen = nvcc.os.fdopen
    monkeypatch.setattr(nvcc.os, "fdopen", lambda fd, mode: _FullDisk(real_fdopen(fd, mode)))
    ptx = nvcc.compile_ptx(relu_cuda)
    assert ".entry relu_kernel(" in ptx
    assert list(cache.iterdir()) == []


@pytest.mark.slow  # several nvcc builds
def test_builds_are_byte_identical_whatever_directory_nvcc_ran_in_and_in_parallel(tmp_path, cache, monkeypatch):
    # softmax's reductions inline CUDA's static __shfl_xor_sync, whose
    # internal name nvcc derives from the source's path.
    source = compiler.compile_source((SAMPLES / "softmax.py").read_text(), "samples/softmax.py", "cuda", Options())
    monkeypatch.setenv("MYTRITON_ALWAYS_COMPILE", "1")
    ptx = []
    for name in ("first", "second"):
        workdir = tmp_path / name
        workdir.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(workdir))
        ptx.append(nvcc.build(source, "sm_90", "ptx"))
    with ThreadPoolExecutor(2) as pool:
        cubins = list(pool.map(lambda _: nvcc.build(source, "sm_90", "cubin"), range(2)))
    assert ptx[0] == ptx[1] and cubins[0] == cubins[1]
    assert str(tmp_path).encode() not in ptx[0]
    # The line info names the kernel's file, made absolute against the working directory.
    assert f'"{Path.cwd() / "samples/softmax.py"}"'.encode() in ptx[0]


def test_a_full_temporary_directory_is_an_error_that_leaves_nothing_behind(tmp_path, cache, relu_cuda,
                                                                         monkeypatch):
    workdir = tmp_path / "tmp"
    workdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(workdir))

    def full_disk(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(CompileError, match="cannot build with nvcc in a temporary directory: .*No space left"):
        nvcc.compile_ptx(relu_cuda)
    assert list(workdir.iterdir()) == []
    assert not cache.exists() or list(cache.iterdir()) == []


def test_always_compile_runs_nvcc_even_with_a_whole_entry(cache, nvcc_builds, relu_cuda, monkeypatch):
    ptx = nvcc.compile_ptx(relu_cuda)
    builds = len(nvcc_builds)
    monkeypatch.setenv("MYTRITON_ALWAYS_COMPILE", "1")
    assert nvcc.compile_ptx(relu_cuda) == ptx
    assert len(nvcc_builds) == builds + 1


def test_always_compile_still_rewrites_the_entry(cache, nvcc_builds, relu_cuda, monkeypatch):
    monkeypatch.setenv("MYTRITON_ALWAYS_COMPILE", "1")
    nvcc.compile_ptx(relu_cuda)
    monkeypatch.delenv("MYTRITON_ALWAYS_COMPILE")
    builds = len(nvcc_builds)
    nvcc.compile_ptx(relu_cuda)
    assert len(nvcc_builds) == builds


def test_an_nvcc_whose_cicc_refuses_the_fixed_source_path_still_builds(tmp_path, cache, monkeypatch):
    # An older toolkit's cicc might not take --orig_src_path_name: nvcc runs again without it.
    fake = tmp_path / "nvcc"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "release 0.1"; exit 0; fi\n'
                    'for a in "$@"; do case "$a" in --orig_src_path_name) echo "cicc: unknown option '
                    '--orig_src_path_name" >&2; exit 1;; esac; done\n'
                    'while [ "$1" != "-o" ]; do shift; done; echo ptx > "$2"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert nvcc.compile_ptx("// a kernel\n") == "ptx\n"
