"""Property-based round trips over generated kernels (tests/fuzz_kernels.py):
every IR prints back as it parses, the chain of stages through text gives
what ``compile`` gives, the verifier accepts the SSA after every pass, and the
interpreter agrees with itself across the pipeline and with NumPy.

The normal run is short and deterministic (``derandomize``); the long run
is ``make fuzz`` (tools/fuzz.py), or these tests with
``MYTRITON_FUZZ_EXAMPLES=N``.
"""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_checks as checks
from conftest import tiered
from fuzz_kernels import FAMILIES, generate_kernel, kernels
from mytriton_command import ok, run

EXAMPLES = int(os.environ.get("MYTRITON_FUZZ_EXAMPLES", "6"))

# Every family in the slow tier; two in every tier.
SWEEP = tiered(FAMILIES, fast=("elementwise", "loop"))

fuzz_settings = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("family", SWEEP)
@fuzz_settings
@given(data=st.data())
def test_every_ir_prints_back_as_it_parses(family, data):
    checks.check_roundtrip(data.draw(kernels(family)))


@pytest.mark.parametrize("family", SWEEP)
@fuzz_settings
@given(data=st.data())
def test_the_chain_of_stages_through_text_equals_compile(family, data):
    checks.check_text_chain(data.draw(kernels(family)))


@pytest.mark.parametrize("family", SWEEP)
@fuzz_settings
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_the_verifier_accepts_the_ssa_after_every_pass_in_any_order(family, data, seed):
    checks.check_passes(data.draw(kernels(family)), random.Random(seed))


@pytest.mark.parametrize("family", SWEEP)
@fuzz_settings
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_the_interpreter_agrees_across_the_pipeline_and_with_numpy(family, data, seed):
    checks.check_interpreter(data.draw(kernels(family)), seed)


def test_a_seed_gives_the_same_kernel_and_arguments_everywhere():
    import numpy as np

    first, second = generate_kernel(1234), generate_kernel(1234)
    assert first.source == second.source and first.grid == second.grid and first.signature == second.signature
    for a, b in zip(first.make_args(np.random.default_rng(5)), second.make_args(np.random.default_rng(5))):
        assert np.array_equal(a, b)


def test_the_seeded_generator_draws_every_family():
    assert {generate_kernel(seed).family for seed in range(60)} == set(FAMILIES)


def test_generated_inputs_hold_no_zeros():
    import numpy as np

    for seed in range(20):
        gk = generate_kernel(seed)
        for arg in gk.make_args(np.random.default_rng(seed)):
            if isinstance(arg, np.ndarray) and arg.dtype != np.bool_:
                assert np.count_nonzero(arg == 0) == 0, gk.source


def test_the_cli_chain_equals_compile_for_generated_kernels(tmp_path):
    """A few kernels through the command's stages (tests/test_cli_chain.py runs
    a chain as processes joined by pipes)."""
    for seed in (3, 8):
        gk = generate_kernel(seed)
        path = tmp_path / gk.file
        path.write_text(gk.source)
        define = [f"-D{k}={v}" for k, v in gk.defines.items()]
        common = ["-k", gk.name]
        steps = [["parse", str(path), *common], ["trace", "-", *define, "-s", gk.signature, *common],
                 ["lower"], ["verify"], ["opt"], ["stage-dots"], ["layouts", "--num-warps", str(gk.num_warps)],
                 ["emit-cuda"]]
        text = b""
        for step in steps:
            text = ok(run(*step, stdin=text))
        direct = ok(run("compile", str(path), "--emit=cuda", "--num-warps", str(gk.num_warps), "-s", gk.signature,
                        *define, *common))
        assert text == direct, gk.source
