"""The ``mytriton`` command in tests, run in this process or as a process of its own.

Both return a ``subprocess.CompletedProcess`` with the exit code and the bytes of
stdout and stderr, so a test reads the same either way. Most tests run the
command in this process (``run``): a process costs a few tenths of a second, and
the fast test tier runs the CLI thousands of times. What only a real process
shows (pipes between processes, what a run imports, signals, the interpreter's
exit on an uncaught exception) is checked by a few tests through ``run_process``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from mytriton import scratch
from mytriton.cli import main

ROOT = Path(__file__).resolve().parents[1]


def process_env() -> dict[str, str]:
    """The environment of a run: this one, without MYTRITON_DEBUG (which adds
    tracebacks to errors), with this checkout importable."""
    env = dict(os.environ)
    env.pop("MYTRITON_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run(*args: str, stdin: bytes | None = None, cwd: str | os.PathLike | None = ROOT,
        env: dict[str, str | None] | None = None, text: bool = False) -> subprocess.CompletedProcess:
    """``mytriton ARGS`` in this process, in ``cwd``, reading ``stdin``, with
    ``env``'s variables set (None: unset); with ``text``, stdout and stderr
    decoded as ``subprocess.run(..., text=True)`` decodes them."""
    runner = CliRunner(env={"MYTRITON_DEBUG": None, **(env or {})})
    handlers = {signum: signal.getsignal(signum) for signum in scratch.SIGNALS}  # the CLI sets its own
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = runner.invoke(main, list(args), input=stdin, prog_name="mytriton")
    finally:
        os.chdir(here)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    stderr, code = result.stderr_bytes, result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What the interpreter does with an exception nothing caught: its traceback on stderr, exit 1.
        stderr += "".join(traceback.format_exception(*result.exc_info)).encode()
        code = 1
    stdout: bytes | str = result.stdout_bytes
    if text:
        stdout, stderr = stdout.decode(), stderr.decode()
    return subprocess.CompletedProcess(["mytriton", *args], code, stdout, stderr)


def command_line(*args: str, python_flags: Sequence[str] = ()) -> list[str]:
    """The command line of ``mytriton ARGS`` under this interpreter."""
    return [sys.executable, *python_flags, "-m", "mytriton.cli", *args]


def run_process(*args: str, stdin: bytes | None = None, cwd: str | os.PathLike | None = ROOT,
                python_flags: Sequence[str] = (), timeout: float = 60) -> subprocess.CompletedProcess:
    """``mytriton ARGS`` as a process of its own."""
    return subprocess.run(command_line(*args, python_flags=python_flags), input=stdin, capture_output=True,
                          cwd=cwd, env=process_env(), timeout=timeout)


def ok(result: subprocess.CompletedProcess) -> bytes:
    """The stdout of a run that succeeded and said nothing on stderr."""
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    return result.stdout
