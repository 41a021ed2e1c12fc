# The two set-up commands (README.md): `make demo` runs the main job, `make test` the tests.
# Both first make a virtual environment in $(VENV) (a system Python, Debian's or Homebrew's,
# refuses `pip install` outside one: "externally-managed-environment") and install mytriton
# there, editable, with its test extra. `make test PYTHON=python3` uses that interpreter (or
# an environment of your own) instead, and creates nothing.
VENV ?= .venv
BASE_PYTHON ?= python3
PYTHON ?= $(VENV)/bin/python
MYTRITON := $(PYTHON) -m mytriton
# lit has no `python -m lit`; this runs it under $(PYTHON) all the same.
LIT := $(PYTHON) -c "import lit.main; lit.main.main()"
PIP_INSTALL := $(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'

.PHONY: install bytecode demo test test-slow test-all lint lit docs dist fuzz samples liger-prepare liger-acceptance liger-speed clean distclean

ifeq ($(PYTHON),$(VENV)/bin/python)
# pip runs again only when pyproject.toml changes (the install is editable).
INSTALLED := $(VENV)/.mytriton-installed

$(VENV)/bin/python:
	$(BASE_PYTHON) -m venv $(VENV)

$(INSTALLED): pyproject.toml | $(VENV)/bin/python
	$(PIP_INSTALL)
	touch $@

install: $(INSTALLED)
else
install:
	$(PIP_INSTALL)
endif

# Compile a sample to SSA and CUDA, then run it (GPU if there is one, else the interpreter).
demo: install
	$(MYTRITON) compile samples/add.py --emit=ssa
	$(MYTRITON) compile samples/add.py --emit=cuda
	$(PYTHON) samples/demo.py

# The tests in two tiers (docs/contributing.md, "Tests"): `make test` is the fast one, a few
# minutes on two cores; `make test-slow` the exhaustive cases (marker `slow`: deep kernels,
# sweeps over every config, nvcc builds of every sample, the fuzz-style tests); `make test-all`
# both in one run. pytest runs the lit suite too (tests/lit: the pass and stage tests as text,
# checked by FileCheck): tests/test_lit.py makes each lit file one test, its RUN lines run
# in-process in the fast tier and through lit itself in the slow one.
# `make test` runs ruff first (a second); `make lint` adds mypy (pyproject.toml configures both).
PYTEST := $(PYTHON) -m pytest -q -n auto
RUFF := $(PYTHON) -m ruff check --quiet .

# The package's bytecode, written before the tests: the lit suite and the CLI tests start a few
# hundred `python -m mytriton` processes, and where PYTHONDONTWRITEBYTECODE is set (as in many CI
# images) each would compile every module it imports again (0.38 s a process against 0.23 s).
bytecode: install
	$(PYTHON) -m compileall -q mytriton

test: bytecode
	$(RUFF)
	$(PYTEST) -m "not slow"

test-slow: bytecode
	$(PYTEST) -m slow

test-all: bytecode
	$(PYTEST)

lint: install
	$(RUFF)
	$(PYTHON) -m mypy

# The lit suite on its own (-v prints each failing file's commands and FileCheck's report).
lit: install
	$(LIT) -s -v tests/lit

# docs/ir.md, the IR reference, from the op definitions (tests/test_ops_reference.py
# fails when it is stale).
docs: install
	$(MYTRITON) ops --markdown -o docs/ir.md

# The sdist, and the wheel built from it, in dist/ (offline: the environment's setuptools).
dist: install
	$(PYTHON) -m build --no-isolation --outdir dist .

# The long fuzzing run: 10,000 generated kernels, 10,000 cases of each
# spelling generator (operators over constants, recursive helpers, elif
# chains, string annotations), 10,000 corrupted .npy files and 20,000 mutated
# inputs (tools/fuzz.py --help for counts, seeds and where reproducers go).
fuzz: install
	$(PYTHON) tools/fuzz.py --kernels 10000 --spellings 10000 --npy 10000 --mutations 20000

# Every sample built stage by stage through the CLI (samples/out/; a relative
# $(PYTHON) is made absolute for samples/Makefile).
samples: install
	$(MAKE) -C samples PYTHON=$(if $(findstring /,$(PYTHON)),$(abspath $(PYTHON)),$(PYTHON))

# Liger-Kernel's own tests per op, on real Triton and on mytriton, in one run (a GPU, torch
# and triton; tools/liger_acceptance.py says what to carry there). liger-prepare makes its
# inputs, .liger/src and .liger/wheels, from a clone (LIGER_MIRROR) where there is network.
LIGER_ARGS ?=
liger-prepare: install
	$(PYTHON) tools/liger_acceptance.py prepare --mirror $(LIGER_MIRROR)

liger-acceptance:
	$(PYTHON) tools/liger_acceptance.py $(LIGER_ARGS)

# Liger's benchmark scripts, Triton then mytriton, each Liger row's ratio (tools/liger_speed.py).
liger-speed:
	$(PYTHON) tools/liger_speed.py $(LIGER_ARGS)

clean:
	$(MAKE) -C samples clean
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache

# clean, and the virtual environment too.
distclean: clean
	rm -rf $(VENV)
