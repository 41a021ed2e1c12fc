"""``python -m mytriton.as_triton script.py [ARGS]`` or ``python -m
mytriton.as_triton -m module [ARGS]``: run a script or module as Python
would, with ``import triton`` giving mytriton (install_as_triton)."""
from __future__ import annotations

import os
import runpy
import sys

from mytriton.as_triton import install_as_triton

USAGE = "usage: python -m mytriton.as_triton (script.py | -m module) [ARGS...]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
        return 2 if not argv or argv[0] == "-m" else 0
    install_as_triton()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.isfile(script):
        print(f"python -m mytriton.as_triton: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
