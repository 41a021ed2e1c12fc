"""Output files: ``-o`` and ``run --out-dir`` write what was asked and
clobber nothing else.

A regular file is replaced atomically and keeps its permissions; a device,
FIFO or link the user named is written in place (a link stays a link); a
directory is an error; a failure leaves no file and no temporary file. In
``--out-dir``, a link planted under an output's name is replaced, never
followed.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import ROOT
from mytriton.cli import write_output
from mytriton.diagnostics import CompileError

ADD = str(ROOT / "samples" / "add.py")
RUN_ADD = ["run", ADD, "--grid", "cdiv(n, BLOCK)", "--arg", "x_ptr=rand:300", "--arg", "y_ptr=rand:300",
           "--arg", "out_ptr=zeros:300", "--arg", "n=300"]


def mytriton(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "MYTRITON_BACKEND": "interp", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "mytriton", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def leftovers(directory) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(".partial")]


# ---- -o: regular files -------------------------------------------------------------------


def test_new_file_gets_the_usual_mode_under_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_output(str(tmp_path / "new.txt"), "text\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o640


def test_existing_file_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.cu"
    target.write_text("old")
    os.chmod(target, 0o754)
    write_output(str(target), "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o754


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_existing_file_keeps_its_owner_when_root_writes_it(tmp_path):
    target = tmp_path / "out.cu"
    target.write_text("old")
    os.chown(target, 12345, 23456)
    write_output(str(target), "new")
    assert (os.stat(target).st_uid, os.stat(target).st_gid) == (12345, 23456)


def test_failed_write_leaves_the_old_file_and_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "out.cu"
    target.write_text("old")

    def fail(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(CompileError, match="No space left on device"):
        write_output(str(target), "new")
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_unwritable_directory_is_an_error_and_leaves_nothing(tmp_path):
    with pytest.raises(CompileError, match=r"cannot write .*missing/out\.cu: No such file or directory"):
        write_output(str(tmp_path / "missing" / "out.cu"), "x")
    assert os.listdir(tmp_path) == []


# ---- -o: what is not a regular file -------------------------------------------------------


def test_dev_null_stays_a_character_device():
    result = mytriton("compile", ADD, "--emit=ssa", "-o", "/dev/null")
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_dev_stdout_redirected_to_a_file_appends_to_that_file(tmp_path):
    log = tmp_path / "log"
    log.write_text("before\n")
    inode = os.stat(log).st_ino
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with open(log, "ab") as handle:
        result = subprocess.run([sys.executable, "-m", "mytriton", "compile", ADD, "--emit=ssa", "-o", "/dev/stdout"],
                                stdout=handle, stderr=subprocess.PIPE, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert log.read_text().startswith("before\nkernel add_kernel(")
    assert os.stat(log).st_ino == inode


def test_own_link_to_dev_stdout_writes_into_what_stdout_is(tmp_path):
    log = tmp_path / "log"
    log.write_text("before\n")
    (tmp_path / "out").symlink_to("/dev/stdout")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with open(log, "ab") as handle:
        result = subprocess.run([sys.executable, "-m", "mytriton", "compile", ADD, "--emit=ssa",
                                 "-o", str(tmp_path / "out")], stdout=handle, stderr=subprocess.PIPE, env=env,
                                timeout=120)
    assert result.returncode == 0, result.stderr
    assert log.read_text().startswith("before\nkernel add_kernel(")
    assert os.readlink(tmp_path / "out") == "/dev/stdout"


def test_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_output(str(fifo), "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_link_to_a_regular_file_stays_a_link_and_its_target_gets_the_data(tmp_path):
    real = tmp_path / "real.cu"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.cu"
    link.symlink_to("real.cu")
    write_output(str(link), "new")
    assert os.readlink(link) == "real.cu"
    assert real.read_text() == "new"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert leftovers(tmp_path) == []


def test_link_to_a_device_stays_a_link(tmp_path):
    link = tmp_path / "sink"
    link.symlink_to("/dev/null")
    write_output(str(link), "discarded")
    assert os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "link.cu"
    link.symlink_to("made.cu")
    write_output(str(link), "made")
    assert os.path.islink(link)
    assert (tmp_path / "made.cu").read_text() == "made"


@pytest.mark.parametrize("suffix", ["", "/"])
def test_directory_is_a_clear_usage_error(tmp_path, suffix):
    result = mytriton("compile", ADD, "--emit=ssa", "-o", str(tmp_path) + suffix)
    assert result.returncode == 2
    assert result.stderr.strip().endswith(f"Error: Invalid value for '-o' / '--output': '{tmp_path}{suffix}' "
                                          "is a directory; -o names the file to write")
    assert os.listdir(tmp_path) == []


def test_missing_directory_with_a_trailing_slash_is_an_error(tmp_path):
    result = mytriton("compile", ADD, "--emit=ssa", "-o", str(tmp_path / "newdir") + "/")
    assert result.returncode == 2
    assert "is a directory" in result.stderr
    assert os.listdir(tmp_path) == []


# ---- run --out-dir --------------------------------------------------------------------------


def test_run_replaces_a_link_planted_in_the_out_dir_without_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "out_ptr.npy").symlink_to(victim)
    result = mytriton(*RUN_ADD, "--out-dir", str(out))
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious"
    assert not os.path.islink(out / "out_ptr.npy")
    x, y, got = (np.load(out / f"{name}.npy") for name in ("x_ptr", "y_ptr", "out_ptr"))
    np.testing.assert_array_equal(got, x + y)
    assert leftovers(out) == []


def test_run_out_dir_naming_a_regular_file_is_an_error(tmp_path):
    existing = tmp_path / "file"
    existing.write_text("keep")
    result = mytriton(*RUN_ADD, "--out-dir", str(existing))
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: --out-dir {existing}: exists and is not a directory"
    assert existing.read_text() == "keep"


def test_run_keeps_the_mode_of_an_existing_output(tmp_path):
    (tmp_path / "out_ptr.npy").write_bytes(b"old")
    os.chmod(tmp_path / "out_ptr.npy", 0o600)
    result = mytriton(*RUN_ADD, "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "out_ptr.npy").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "x_ptr.npy").st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old
