"""The C a strided copy wraps its coordinates with (``dots.wrapped`` behind
each chunk's predicate, ``dots.wrapped_once`` before a loop) computes what
the interpreter's wrap does: ``fmod`` (the remainder takes the dividend's
sign, as the ``mod`` op's), a wrap of 0 being none. Run with g++ over every
sign of coordinate and wrap (coordinates short of i32's extremes, which a
tile's never reach: a wrap of 0 divides by INT_MAX)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mytriton.backends.cuda.dots import wrapped, wrapped_once

COORDINATES = [-2_000_000_000, -1000, -65, -64, -63, -1, 0, 1, 63, 64, 65, 999, 1000, 1001, 2_000_000_000]
WRAPS = [0, 1, 7, 64, 1000, -1, -64, -1000]


def expected(x: int, w: int) -> int:
    return x if w == 0 else int(np.fmod(np.int64(x), np.int64(w)))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("form", [wrapped, wrapped_once], ids=["wrapped", "wrapped_once"])
def test_the_wrap_in_c_is_the_interpreters_for_every_sign(tmp_path, form):
    cases = [(x, w) for x in COORDINATES for w in WRAPS]
    lines = [f'  {{ const int x = {x}, w = {w}; printf("%d\\n", {form("x", "w")}); }}' for x, w in cases]
    program = tmp_path / "wraps.cpp"
    program.write_text("#include <cstdio>\nint main() {\n" + "\n".join(lines) + "\n  return 0;\n}\n")
    binary = tmp_path / "wraps"
    subprocess.run(["g++", "-O1", "-o", str(binary), str(program)], check=True, capture_output=True)
    got = [int(line) for line in subprocess.run([str(binary)], check=True, capture_output=True,
                                                text=True).stdout.split()]
    assert got == [expected(x, w) for x, w in cases]
