"""The properties every generated kernel must have, as plain functions that
raise ``AssertionError``: the hypothesis tests (tests/test_fuzz_kernels.py)
and the long run (tools/fuzz.py) call the same ones.

1. every IR prints back as it parses (tree, SSA, optimised SSA, staged SSA, laid-out SSA);
2. the stages chained through their texts give what ``compile`` gives;
3. the verifier accepts the SSA after every pass, alone and in random orders;
4. the interpreter gives the same results before and after optimisation and
   after stage-dots, and what the kernel's NumPy reference says.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from mytriton import compiler
from mytriton.compiler import Options

from fuzz_kernels import GeneratedKernel

PASSES = ("fold", "cse", "dce", "licm", "stage-dots", "verify")
CHAIN_EMITS = ("ast", "tree", "ssa", "opt", "staged", "layouts", "cuda")


def options_of(gk: GeneratedKernel, **extra: Any) -> Options:
    return Options(kernel=gk.name, defines=dict(gk.defines), signature=gk.signature, num_warps=gk.num_warps,
                   **extra)


@dataclass
class Stages:
    """A generated kernel through the in-process pipeline."""

    bundle: str
    tree: Any
    ssa: Any
    opt: Any
    staged: Any
    laid_out: Any


def stages_of(gk: GeneratedKernel) -> Stages:
    options = options_of(gk)
    bundle = compiler.parse(gk.source, gk.file, gk.name)
    tree = compiler.trace(bundle, "<bundle>", options)
    ssa = compiler.lower(tree)
    opt = compiler.optimize(ssa, options)
    staged = compiler.stage_dots(opt)
    laid_out = compiler.layouts(compiler.read_ssa(compiler.print_ssa(staged), "<ssa>"), options)
    return Stages(bundle, tree, ssa, opt, staged, laid_out)


# ---- 1. print . parse ------------------------------------------------------------------


def check_roundtrip(gk: GeneratedKernel) -> None:
    st = stages_of(gk)
    tree_text = compiler.print_tree(st.tree)
    again = compiler.print_tree(compiler.read_tree(tree_text, "<tree>"))
    assert again == tree_text, _diff("tree IR", tree_text, again)
    for label, kernel in (("SSA", st.ssa), ("optimised SSA", st.opt), ("staged SSA", st.staged),
                          ("laid-out SSA", st.laid_out)):
        text = compiler.print_ssa(kernel)
        again = compiler.print_ssa(compiler.read_ssa(text, "<ssa>"))
        assert again == text, _diff(label, text, again)


def _diff(label: str, want: str, got: str) -> str:
    import difflib

    lines = difflib.unified_diff(want.splitlines(), got.splitlines(), "printed", "printed after parsing",
                                 lineterm="", n=1)
    return f"{label} does not print back as it parses:\n" + "\n".join(list(lines)[:40])


# ---- 2. the chain of stages through text equals compile ---------------------------------


def chain_texts(gk: GeneratedKernel) -> dict[str, str]:
    """Each stage run alone on the previous stage's text, as the CLI chain does."""
    options = options_of(gk)
    texts = {"ast": compiler.parse(gk.source, gk.file, gk.name)}
    texts["tree"] = compiler.print_tree(compiler.trace(texts["ast"], "<stdin>", options))
    texts["ssa"] = compiler.print_ssa(compiler.lower(compiler.read_tree(texts["tree"], "<stdin>")))
    verified = compiler.read_ssa(texts["ssa"], "<stdin>")
    compiler.verify(verified)
    texts["opt"] = compiler.print_ssa(compiler.optimize(compiler.read_ssa(texts["ssa"], "<stdin>"), options))
    texts["staged"] = compiler.print_ssa(compiler.stage_dots(compiler.read_ssa(texts["opt"], "<stdin>")))
    staged = compiler.read_ssa(texts["staged"], "<stdin>")
    compiler.verify(staged)
    texts["layouts"] = compiler.print_ssa(compiler.layouts(staged, options))
    laid_out = compiler.read_ssa(texts["layouts"], "<stdin>")
    compiler.verify(laid_out)
    texts["cuda"] = compiler.emit_cuda(laid_out)
    return texts


def check_text_chain(gk: GeneratedKernel) -> None:
    chained = chain_texts(gk)
    for emit in CHAIN_EMITS:
        direct = compiler.compile_source(gk.source, gk.file, emit, options_of(gk))
        assert chained[emit] == direct, _diff(f"--emit={emit} through the chain of stages", direct, chained[emit])


# ---- 3. the verifier after every pass ---------------------------------------------------


def random_pipelines(rng: random.Random, count: int) -> list[list[str]]:
    return [[rng.choice(PASSES) for _ in range(rng.randint(1, 6))] for _ in range(count)]


def check_passes(gk: GeneratedKernel, rng: random.Random, pipelines: int = 3) -> None:
    from mytriton.passes import get_pass
    from mytriton.passes.verify import verify

    ssa = stages_of(gk).ssa
    for names in [[name] for name in PASSES] + random_pipelines(rng, pipelines):
        kernel = compiler.read_ssa(compiler.print_ssa(ssa), "<ssa>")
        for i, name in enumerate(names):
            kernel = get_pass(name).apply(kernel)
            try:
                verify(kernel)
            except Exception as err:
                raise AssertionError(f"the verifier rejects the SSA after {names[:i + 1]}: {err}") from err
            text = compiler.print_ssa(kernel)
            assert compiler.print_ssa(compiler.read_ssa(text, "<ssa>")) == text, \
                f"the SSA after {names[:i + 1]} does not print back as it parses"


# ---- 4. the interpreter -------------------------------------------------------------------


def run_interp(kernel: Any, gk: GeneratedKernel, args: list[Any]) -> list[Any]:
    from mytriton.backends.interp import run_kernel

    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(kernel, gk.grid, copies)
    return copies


def assert_close(gk: GeneratedKernel, got: Any, want: Any, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{got.shape} instead of {want.dtype}{want.shape}"
    if gk.rtol == 0 and gk.atol == 0 or got.dtype.kind in "biu":
        mismatch = np.flatnonzero(got != want)
    else:
        scale = max(1.0, float(np.max(np.abs(want.astype(np.float64)))) if want.size else 1.0)
        mismatch = np.flatnonzero(~np.isclose(got, want, rtol=gk.rtol, atol=gk.atol * scale, equal_nan=True))
    if mismatch.size:
        i = int(mismatch[0])
        raise AssertionError(f"{what}: {mismatch.size} of {got.size} elements differ, first at [{i}]: "
                             f"{got.reshape(-1)[i]!r} instead of {want.reshape(-1)[i]!r}")


def check_interpreter(gk: GeneratedKernel, seed: int = 0) -> None:
    st = stages_of(gk)
    args = gk.make_args(np.random.default_rng(seed))
    with np.errstate(all="ignore"):  # the sigmoid of a large negative value overflows exp, as it may
        expected = gk.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    results = {label: run_interp(kernel, gk, args)
               for label, kernel in (("lowered", st.ssa), ("optimised", st.opt), ("staged", st.staged))}
    for index in gk.outputs:
        name = gk.params[index].name
        base = results["lowered"][index]
        for label in ("optimised", "staged"):
            assert_close(gk, results[label][index], base, f"{name} {label} against lowered")
        assert_close(gk, base, expected[index], f"{name} against the NumPy reference")
