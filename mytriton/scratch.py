"""Temporary files and child processes that an interrupted run must not
leave behind.

A build makes a private temporary directory and runs nvcc in it; ``-o``
writes a partial file beside its target. Each is registered here while it
exists. When the CLI is interrupted (Ctrl-C, or SIGTERM and SIGHUP, which a
``timeout``, a CI cancel or a closed terminal send), ``clean_up`` kills the
registered children (their whole process group: nvcc's own cicc and ptxas
too) and removes the registered files, wherever the thread that made them
is: the compiler runs on a worker thread (deep_stack), which Python does not
unwind when the process exits. Registration and clean-up hold one lock, and
nothing new is made once clean-up has begun.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterator

_lock = threading.RLock()  # reentrant: a signal handler may run while its own thread holds it
_paths: dict[str, bool] = {}  # registered path -> whether it is a directory
_children: set[subprocess.Popen] = set()
_closing = False

# Signals that end a run: Ctrl-C's, and those a `timeout`, a CI cancel or a
# closed terminal send. Each raises Interrupted in the main thread.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A run ended by a signal (raised in the main thread by the handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _check_open() -> None:
    if _closing:
        raise Interrupted(signal.SIGTERM)


@contextlib.contextmanager
def directory(prefix: str = "mytriton-") -> Iterator[Path]:
    """A new private directory (mode 0700) in the temporary folder, removed
    with what it holds on leaving, or by ``clean_up``."""
    with _lock:
        _check_open()
        path = tempfile.mkdtemp(prefix=prefix)
        _paths[path] = True
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _lock:
            _paths.pop(path, None)


def create_file(path: str, flags: int, mode: int) -> int:
    """``os.open(path, flags | O_CREAT | O_EXCL, mode)``, registered: the
    caller renames or removes it, then calls ``release``."""
    with _lock:
        _check_open()
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
        _paths[path] = False
    return fd


def release(path: str) -> None:
    """``path`` was renamed or removed by its maker: nothing to clean up."""
    with _lock:
        _paths.pop(path, None)


def run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` to completion in a process group of its own (so that
    killing it kills what it starts), capturing its output as text."""
    with _lock:
        _check_open()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 errors="replace", env=env, start_new_session=True)
        _children.add(child)
    try:
        stdout, stderr = child.communicate()
    except BaseException:
        _kill(child)
        raise
    finally:
        with _lock:
            _children.discard(child)
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def _kill(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=10)


def clean_up() -> None:
    """Kill every registered child and remove every registered file; make
    nothing new from now on. Signals are ignored from here on: `timeout`
    sends SIGTERM to the process and then to its whole group, and the
    second must not cut the clean-up short."""
    global _closing
    _ignore_signals()
    with _lock:
        _closing = True
        for child in list(_children):
            _kill(child)
        _children.clear()
        for path, is_directory in list(_paths.items()):
            if is_directory:
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        _paths.clear()


def _raise(signum: int, frame: object) -> None:
    _ignore_signals()  # one interruption is enough: a second one would cut the first's clean-up short
    raise Interrupted(signum)


def _ignore_signals() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def handle_signals() -> None:
    """End the run on SIGINT, SIGTERM and SIGHUP by raising ``Interrupted``
    in the main thread (the CLI then calls ``clean_up``). Only the main
    thread can set handlers; elsewhere, nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        signal.signal(signum, _raise)
