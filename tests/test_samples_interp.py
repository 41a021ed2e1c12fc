"""Every sample in the NumPy interpreter matches NumPy (the same table the GPU tests use)."""
import pytest

from sample_cases import CASES


@pytest.mark.parametrize("case", sorted(CASES))
def test_sample_matches_numpy_in_the_interpreter(case):
    CASES[case].run("interp")
