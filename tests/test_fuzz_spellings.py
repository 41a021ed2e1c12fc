"""Property-based runs of the spelling generators (tests/fuzz_spellings.py)
and of corrupted .npy files (tests/fuzz_npy.py): each case compiles to what
Python says, or is refused, located, at the limit that applies.

The normal run is short and deterministic (``derandomize``); the long run
is ``make fuzz`` (tools/fuzz.py: 10,000 cases of each), or these tests with
``MYTRITON_FUZZ_EXAMPLES=N``.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

import fuzz_npy
import fuzz_spellings

EXAMPLES = int(os.environ.get("MYTRITON_FUZZ_EXAMPLES", "6"))

fuzz_settings = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("kind", fuzz_spellings.GENERATORS)
def test_a_spelling_compiles_as_python_says_or_is_refused_at_its_limit(kind):
    @fuzz_settings
    @given(case=fuzz_spellings.cases(kind))
    def run(case):
        case.check()

    run()


@pytest.mark.parametrize("kind", fuzz_spellings.GENERATORS)
def test_the_seeded_spelling_cases_hold_too(kind):
    # What tools/fuzz.py runs, on a few seeds: the replay a failure report names.
    for seed in range(EXAMPLES):
        fuzz_spellings.generate(kind, seed).check()


@fuzz_settings
@given(case=fuzz_npy.cases())
def test_a_corrupted_npy_file_loads_as_numpy_reads_it_or_is_refused(case, tmp_path_factory):
    fuzz_npy.check(case, tmp_path_factory.mktemp("npy") / "input.npy")


def test_the_seeded_npy_cases_hold_too(tmp_path):
    for seed in range(200):
        fuzz_npy.check(fuzz_npy.generate(seed), tmp_path / "input.npy")
