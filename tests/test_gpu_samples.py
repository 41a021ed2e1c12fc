"""Every sample on the H200 through the CUDA driver matches NumPy (skipped without a GPU)."""
import pytest

from sample_cases import CASES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", sorted(CASES))
def test_sample_matches_numpy_on_the_gpu(case):
    CASES[case].run("cuda", seed=1)
