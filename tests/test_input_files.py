"""Reading the input: a file or stdin, UTF-8, of bounded size; what cannot be
read is an error naming it, never a traceback or a read without end."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from mytriton.cli import read_input
from mytriton.limits import MAX_INPUT_BYTES
from mytriton.diagnostics import CompileError


def mytriton(*args: str, stdin: bytes | None = None, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mytriton", *args], input=stdin, capture_output=True,
                          env=env, timeout=120, cwd=cwd)


def test_endless_input_is_refused_at_the_size_limit():
    result = mytriton("verify", "/dev/zero")
    assert result.returncode == 1
    assert result.stderr.decode().strip() == f"error: cannot read /dev/zero: larger than {MAX_INPUT_BYTES >> 20} MiB"


def test_directory_input_is_an_error(tmp_path):
    with pytest.raises(CompileError, match=f"cannot read {tmp_path}: Is a directory"):
        read_input(str(tmp_path))


def test_input_that_is_not_utf8_is_an_error_at_the_first_bad_byte(tmp_path):
    (tmp_path / "k.py").write_bytes(b"import mytriton\r\n\r\n# caf\xc3\xa9 \xff\xfe\n")
    result = mytriton("parse", "k.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        "k.py:3:8: error: the file is not UTF-8: byte 0xff at offset 27 (invalid start byte)",
        "# caf\u00e9 \ufffd\ufffd",
        "       ^",
    ]


def test_a_leading_byte_order_mark_is_dropped_as_python_drops_it(tmp_path):
    (tmp_path / "k.py").write_bytes(b"\xef\xbb\xbfa = 1\n")
    assert read_input(str(tmp_path / "k.py")) == ("a = 1\n", str(tmp_path / "k.py"))


def test_carriage_returns_read_as_newlines(tmp_path):
    (tmp_path / "k.py").write_bytes(b"a = 1\r\nb = 2\rc = 3\n")
    assert read_input(str(tmp_path / "k.py")) == ("a = 1\nb = 2\nc = 3\n", str(tmp_path / "k.py"))
