# The lit suite: pass and stage tests as IR text checked by FileCheck, as
# MLIR and xDSL test theirs. Each file holds one behaviour: its input, the
# `RUN:` lines that run a stage over it, and the `CHECK:` lines its output
# must match (docs/contributing.md, "lit and FileCheck"). pytest runs it (tests/test_lit.py); on its own:
#
#   python -c "import lit.main; lit.main.main()" -v tests/lit
#
# `mytriton` and `filecheck` run under the interpreter that runs lit, so the
# suite tests the mytriton that interpreter imports (a venv's, an -e install).
import os
import shlex
import sys

import lit.formats

config.name = "mytriton"
# lit's own shell (pipes, `not`, `diff`, `rm`): the same on every machine,
# and it prints each command with its output when a test fails.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ssa", ".tree", ".py"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
# %t files go under build/ (ignored by git, removed by `make clean`), not
# beside the tests; a run that shares the checkout with another lit run at
# the same time (two test runs in one checkout) gives its own folder, so that
# no run reads a %t file the other is writing.
config.test_exec_root = os.environ.get("MYTRITON_LIT_EXEC_ROOT") or \
    os.path.join(os.path.dirname(__file__), "..", "..", "build", "lit")

# A tool name is replaced only as a word of its own: never inside a path
# that %s has already put on the line (a checkout under ~/src/mytriton/).
python = shlex.quote(sys.executable)
for tool, command in (("mytriton", f"{python} -m mytriton"), ("filecheck", f"{python} -m filecheck")):
    config.substitutions.append((rf"(?<![\w/.-]){tool}(?![\w/.-])", command))

# The mytriton that PYTHONPATH names (a git worktree run with PYTHONPATH=$PWD and
# another checkout's venv), not only the one the interpreter has installed.
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]

# The on-disk cache of grammar tables, where the user moved it.
if "MYTRITON_CACHE_DIR" in os.environ:
    config.environment["MYTRITON_CACHE_DIR"] = os.environ["MYTRITON_CACHE_DIR"]
