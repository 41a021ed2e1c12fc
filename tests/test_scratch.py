"""An interrupted run leaves nothing behind: SIGTERM (a `timeout`, a CI
cancel), SIGHUP (a closed terminal) and Ctrl-C's SIGINT during a build kill
nvcc and what it started, remove the build's temporary directory, and exit
with 128 + the signal's number, writing no output file; a second signal
does not cut that short."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SAMPLES

# An nvcc that makes a temporary file where nvcc makes its own, then waits
# to be interrupted; it writes its process id where the test can see it.
FAKE_NVCC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0"; exit 0; fi
touch "$TMPDIR/tmpxft_kernel.cudafe1.cpp"
echo $$ > "{pid_file}"
exec sleep 60
"""


@pytest.fixture
def waiting_nvcc(tmp_path):
    """(environment with a fake nvcc first on PATH, NVRTC off, and a private TMPDIR, the
    TMPDIR, the file the fake nvcc writes its process id to)."""
    bin_dir, temporary = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    temporary.mkdir()
    pid_file = tmp_path / "nvcc.pid"
    (bin_dir / "nvcc").write_text(FAKE_NVCC.format(pid_file=pid_file))
    (bin_dir / "nvcc").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(temporary),
           "MYTRITON_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "MYTRITON_NVRTC": "0"}  # the build is nvcc's, where NVRTC would build in-process
    return env, temporary, pid_file


def build_command(out) -> list[str]:
    return [sys.executable, "-m", "mytriton", "compile", str(SAMPLES / "add.py"), "--emit=cubin", "-o", str(out)]


def wait_for(pid_file, run: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()) and run.poll() is None:
        assert time.monotonic() < deadline, "the build never started nvcc"
        time.sleep(0.05)
    assert run.poll() is None, run.communicate()


def assert_nothing_left(temporary, pid_file, out) -> None:
    assert list(temporary.iterdir()) == []
    assert not out.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_a_build_leaves_no_process_and_no_temporary_file(tmp_path, waiting_nvcc, signum):
    env, temporary, pid_file = waiting_nvcc
    out = tmp_path / "add.cubin"
    run = subprocess.Popen(build_command(out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(pid_file, run)
    run.send_signal(signum)
    run.send_signal(signum)  # a second one (as `timeout` sends) does not cut the clean-up short
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, stderr.decode()
    assert b"Traceback" not in stderr
    assert_nothing_left(temporary, pid_file, out)


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs coreutils' timeout")
@pytest.mark.slow  # waits for a timeout
def test_a_build_stopped_by_timeout_leaves_nothing_behind(tmp_path, waiting_nvcc):
    # timeout signals the command, then its whole process group.
    env, temporary, pid_file = waiting_nvcc
    out = tmp_path / "add.cubin"
    run = subprocess.run(["timeout", "5", *build_command(out)], env=env, capture_output=True, timeout=120)
    assert run.returncode == 124, run.stderr.decode()
    assert b"Traceback" not in run.stderr
    assert_nothing_left(temporary, pid_file, out)
