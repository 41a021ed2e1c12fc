# The two set-up commands (README.md): `make demo` runs the main job, `make test` the tests.
PYTHON ?= python3
MYTRITON := $(PYTHON) -m mytriton
# lit has no `python -m lit`; this runs it under $(PYTHON) all the same.
LIT := $(PYTHON) -c "import lit.main; lit.main.main()"

.PHONY: install demo test lit fuzz samples clean

install:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'

# Compile a sample to SSA and CUDA, then run it (GPU if there is one, else the interpreter).
demo: install
	$(MYTRITON) compile samples/add.py --emit=ssa
	$(MYTRITON) compile samples/add.py --emit=cuda
	$(PYTHON) samples/demo.py

# pytest runs the lit suite too (tests/lit: the pass and stage tests as text,
# checked by FileCheck): tests/test_lit.py makes each lit file one test.
test: install
	$(PYTHON) -m pytest -q

# The lit suite on its own (-v prints each failing file's commands and FileCheck's report).
lit:
	$(LIT) -s -v tests/lit

# The long fuzzing run: 10,000 generated kernels and 20,000 mutated inputs
# (tools/fuzz.py --help for counts, seeds and where reproducers go).
fuzz: install
	$(PYTHON) tools/fuzz.py --kernels 10000 --mutations 20000

# Every sample built stage by stage through the CLI (samples/out/).
samples: install
	$(MAKE) -C samples PYTHON=$(PYTHON)

clean:
	$(MAKE) -C samples clean
	rm -rf build *.egg-info .pytest_cache
