"""An interrupted run leaves nothing behind: SIGTERM (a `timeout`, a CI
cancel), SIGHUP (a closed terminal) and Ctrl-C's SIGINT during a build kill
nvcc and what it started, remove the build's temporary directory, and exit
with 128 + the signal's number, writing no output file."""
from __future__ import annotations

import os
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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_a_build_leaves_no_process_and_no_temporary_file(tmp_path, signum):
    bin_dir, temporary = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    temporary.mkdir()
    pid_file = tmp_path / "nvcc.pid"
    (bin_dir / "nvcc").write_text(FAKE_NVCC.format(pid_file=pid_file))
    (bin_dir / "nvcc").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(temporary),
           "MYTRITON_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    out = tmp_path / "add.cubin"
    run = subprocess.Popen([sys.executable, "-m", "mytriton", "compile", str(SAMPLES / "add.py"), "--emit=cubin",
                            "-o", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()) and run.poll() is None:
        assert time.monotonic() < deadline, "the build never started nvcc"
        time.sleep(0.05)
    assert run.poll() is None, run.communicate()
    run.send_signal(signum)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, stderr.decode()
    assert b"Traceback" not in stderr
    assert list(temporary.iterdir()) == []
    assert not out.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
