"""Mutation fuzzing of every stage's input (tests/fuzz_mutations.py): mutated
kernel files, bundles, tree IR and SSA must each give a located ``error:``
(exit 1, no output file) or a result (exit 0), never a traceback or an
internal compiler error, within a few seconds.

The normal run is short and deterministic (fixed seeds); ``make fuzz``
(tools/fuzz.py) runs 20,000 inputs, or these tests with
``MYTRITON_FUZZ_MUTATIONS=N`` inputs per kind.
"""
from __future__ import annotations

import os
import random

import pytest

import fuzz_mutations as fm

COUNT = int(os.environ.get("MYTRITON_FUZZ_MUTATIONS", "40"))


@pytest.fixture(scope="module")
def corpus():
    return fm.sample_seeds() + fm.generated_seeds(range(4))


@pytest.mark.slow  # a few hundred inputs; the fast tier has the few through the real command below
@pytest.mark.parametrize("kind", sorted(fm.COMMANDS))
def test_mutated_inputs_keep_the_contract_for_bad_input(kind, corpus, tmp_path):
    failures = fm.run_campaign(corpus, COUNT, seed=sorted(fm.COMMANDS).index(kind), directory=tmp_path,
                               timeout=5.0, kinds=(kind,))
    if failures:
        pytest.fail(fm.summarize(failures), pytrace=False)


def test_a_few_mutated_inputs_keep_the_contract_through_the_real_command(corpus, tmp_path):
    rng = random.Random(7)
    pairs = fm.seeds_and_commands(corpus)
    failures = []
    for _ in range(4):
        seed, base = rng.choice(pairs)
        text, names = fm.mutate(seed, rng, corpus)
        path = tmp_path / "input.txt"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        output = tmp_path / "out.txt"
        output.unlink(missing_ok=True)  # an earlier input's output is not this one's
        args = fm.command_for(seed, base, str(path), str(output))
        found = fm.check_subprocess(args, text, tmp_path, label=f"{seed.label}, {names}")
        if found:
            failures.append(found)
    if failures:
        pytest.fail(fm.summarize(failures), pytrace=False)


def test_the_corpus_holds_every_stage_of_every_sample(corpus):
    labels = {seed.label for seed in corpus}
    for path in fm.SAMPLES.glob("*.py"):
        if path.stem != "demo":
            for stage in (".py", " bundle", " tree", " ssa", " opt", " staged", " layouts"):
                assert f"samples/{path.stem}{stage}" in labels


def test_a_seeded_generator_mutates_the_same_way_twice(corpus):
    first = [fm.mutate(s, random.Random(3), corpus) for s in corpus[:20]]
    second = [fm.mutate(s, random.Random(3), corpus) for s in corpus[:20]]
    assert first == second
    assert any(text != s.text for (text, _), s in zip(first, corpus))


def test_every_mutation_changes_some_input(corpus):
    rng = random.Random(11)
    for mutation in fm.MUTATIONS:
        changed = [mutation(s.text, rng, corpus, s.kind) != s.text for s in corpus[:30]]
        assert any(changed), mutation.__name__


def _add_ssa():
    return next(s.text for s in fm.sample_seeds() if s.label == "samples/add ssa")


def _write(tmp_path, text, command):
    path = tmp_path / "input.txt"
    path.write_text(text)
    return fm.command_for(fm.Seed("ssa", "test", text), command, str(path), str(tmp_path / "out.txt"))


def test_the_check_accepts_a_located_error_with_no_output(tmp_path):
    args = _write(tmp_path, "kernel k( {\n", ["verify"])
    assert fm.check_input(args, "kernel k( {\n", tmp_path) is None
    assert not (tmp_path / "out.txt").exists()


def test_the_check_reports_an_internal_compiler_error(tmp_path, monkeypatch):
    from mytriton import compiler

    def broken(kernel):
        raise ValueError("boom")

    monkeypatch.setattr(compiler, "verify", broken)
    text = _add_ssa()
    args = _write(tmp_path, text, ["verify"])
    found = fm.check_input(args, text, tmp_path)
    assert found is not None and found.klass.startswith("internal compiler error ValueError")


def test_the_check_reports_an_input_that_waits_too_long(tmp_path, monkeypatch):
    import time

    from mytriton import compiler

    monkeypatch.setattr(compiler, "verify", lambda kernel: time.sleep(30))
    text = _add_ssa()
    args = _write(tmp_path, text, ["verify"])
    found = fm.check_input(args, text, tmp_path, timeout=0.25)
    assert found is not None and found.klass == "timeout"


@pytest.mark.slow  # waits for a timeout
def test_the_check_reports_an_input_that_runs_too_long(tmp_path, monkeypatch):
    import time

    from mytriton import compiler

    def spin(kernel):
        while True:
            time.sleep(0)

    monkeypatch.setattr(compiler, "verify", spin)
    text = _add_ssa()
    args = _write(tmp_path, text, ["verify"])
    found = fm.check_input(args, text, tmp_path, timeout=0.5)
    assert found is not None and found.klass == "timeout"
