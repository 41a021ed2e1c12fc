"""A lit file's `RUN:` lines run in this process, for the fast tier.

lit starts a Python process for each `mytriton` and `filecheck` on a RUN line
(about 0.25 s each on two cores, 390 of them: most of the fast tier's time).
Here the lines are parsed by lit's own shell parser and run as lit's internal
shell runs them (each line must succeed, pipefail, `not`, redirections), but
`mytriton` is the CLI's click group called in this process and `filecheck` is
FileCheck's `main`, both on in-memory streams; any other command (sed, grep,
diff, rm, test, cat) runs as a process, as under lit. The slow tier runs the
whole suite through lit itself (tests/test_lit.py), so the two cannot drift
apart unseen.
"""
from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from lit.ShCommands import Command, GlobItem, Pipeline, Seq
from lit.ShUtil import ShParser

# Variables that change what the CLI prints; lit's environment has none of them either.
_KEPT_ENVIRONMENT = {"MYTRITON_CACHE_DIR"}


@dataclass
class Outcome:
    code: int
    stdout: bytes
    stderr: bytes  # empty where 2>&1 sent it to stdout


def run_lines(path: Path) -> list[str]:
    """The commands of the file's `RUN:` lines, a line ending in a
    backslash joined to the next, as lit reads them."""
    commands: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        if "RUN:" not in line:
            continue
        text = pending + line.split("RUN:", 1)[1].strip()
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        commands.append(text)
    return commands


def substitute(command: str, source: Path, temporary: Path) -> str:
    """lit's %s, %S and %t (and %% for a percent sign)."""
    table = {"%s": str(source), "%S": str(source.parent), "%t": str(temporary), "%%": "%"}
    return re.sub(r"%[sSt%]", lambda match: table[match.group()], command)


def run_file(path: Path, scratch: Path) -> str | None:
    """None when every RUN line of the file succeeds, else a report of the
    commands run, their exit codes and what they printed to stderr (FileCheck's
    report among it)."""
    commands = run_lines(path)
    if not commands:
        return f"{path}: no RUN: line"
    log: list[str] = []
    with _lit_environment():
        for command in commands:
            line = substitute(command, path, scratch / f"{path.name}.tmp")
            log.append(f"$ {line}")
            if not _run(ShParser(line, win32Escapes=False, pipefail=True).parse(), scratch, log):
                return "\n".join(log)
    return None


def _run(node: Seq | Pipeline, cwd: Path, log: list[str]) -> bool:
    if isinstance(node, Seq):
        left = _run(node.lhs, cwd, log)
        if node.op == "&&":
            return left and _run(node.rhs, cwd, log)
        if node.op == "||":
            return left or _run(node.rhs, cwd, log)
        if node.op == ";":
            return _run(node.rhs, cwd, log)
        raise ValueError(f"a RUN line may not use '{node.op}' here")
    return _pipeline(node, cwd, log)


def _pipeline(pipeline: Pipeline, cwd: Path, log: list[str]) -> bool:
    data = b""
    ok = True
    for command in pipeline.commands:
        outcome, crashed = _command(command, data, cwd)
        log.append(f"# {' '.join(map(str, command.args))}: exit {outcome.code}")
        if outcome.stderr:
            log.append(outcome.stderr.decode(errors="replace").rstrip())
        ok = ok and outcome.code == 0 and not crashed
        data = outcome.stdout
    return ok != pipeline.negate


def _command(command: Command, stdin: bytes, cwd: Path) -> tuple[Outcome, bool]:
    """Its outcome once its redirections are applied, and whether it crashed
    (a Python exception escaped: `not` does not turn that into success)."""
    args = [str(part) for arg in command.args
            for part in (arg.resolve(str(cwd)) if isinstance(arg, GlobItem) else [arg])]
    stdout_file = stderr_file = None
    merge = append = False
    for (op, *fd), target in command.redirects:
        if op == "<":
            stdin = Path(target).read_bytes()
        elif op == ">&" and fd == [2] and target == "1":
            merge = True
        elif op in (">", ">>") and fd in ([], [1]):
            stdout_file, append = Path(target), op == ">>"
        elif op == ">" and fd == [2]:
            stderr_file = Path(target)
        else:
            raise ValueError(f"unsupported redirection {op}{fd} {target}")
    negate = args[0] == "not"
    if negate:
        args = args[1:]
    outcome, crashed = _execute(args, stdin, merge, cwd)
    if negate and not crashed:
        outcome.code = 0 if outcome.code != 0 else 1
    if stdout_file is not None:
        with open(stdout_file, "ab" if append else "wb") as sink:
            sink.write(outcome.stdout)
        outcome.stdout = b""
    if stderr_file is not None:
        stderr_file.write_bytes(outcome.stderr)
        outcome.stderr = b""
    return outcome, crashed


def _execute(args: list[str], stdin: bytes, merge: bool, cwd: Path) -> tuple[Outcome, bool]:
    if args[0] == "mytriton":
        from mytriton.cli import main as cli
        return _in_process(lambda: cli.main(args[1:], prog_name="mytriton"), stdin, merge)
    if args[0] == "filecheck":
        from filecheck.main import main as filecheck
        return _in_process(lambda: filecheck(args), stdin, merge)
    run = subprocess.run(args, input=stdin, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT if merge else subprocess.PIPE, timeout=60)
    return Outcome(run.returncode, run.stdout, run.stderr or b""), run.returncode < 0


def _in_process(call: Callable[[], object], stdin: bytes, merge: bool) -> tuple[Outcome, bool]:
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = stdout if merge else io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    saved = sys.stdin, sys.stdout, sys.stderr
    # The CLI sets handlers for these as a process's main function may; pytest keeps its own.
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"), stdout, stderr
    code, crashed = 0, False
    try:
        call()
    except SystemExit as stop:
        if isinstance(stop.code, int) or stop.code is None:
            code = stop.code or 0
        else:  # sys.exit("message"), as a process does: the message on stderr, exit 1
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException as err:  # noqa: BLE001 - a crash, reported as the process would
        import traceback
        traceback.print_exc(file=sys.stderr)
        code, crashed = 1, True
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = saved
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return Outcome(code, out.getvalue(), b"" if merge else err.getvalue()), crashed


@contextmanager
def _lit_environment() -> Iterator[None]:
    """The environment lit's shell gives its commands, as far as mytriton can
    tell: none of the MYTRITON_ variables a developer may have set."""
    saved = {name: value for name, value in os.environ.items()
             if name.startswith("MYTRITON_") and name not in _KEPT_ENVIRONMENT}
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)

