"""Differential testing of the CUDA backend against the NumPy interpreter:
N generated kernels (tests/fuzz_kernels.py, the generator the fuzz tests
use, seeded), each compiled to CUDA, built with nvcc (in parallel), launched
on the GPU and in the interpreter on the same random inputs, outputs compared
with the kernel's tolerance.

    python tools/gpu_differential.py                  # 1,000 kernels on the GPU, every family (dots, scans...)
    python tools/gpu_differential.py -n 50 --build-only --jobs 2   # no GPU needed

``--build-only`` stops after nvcc: it fills the build cache
($MYTRITON_CACHE_DIR, or --cache-dir), which a later run with the same nvcc
reuses. Prints "N kernels, M mismatches" and the first mismatches with their
source; exits 1 when any kernel mismatched or failed to build or launch.
Kernel i is ``generate_kernel(seed + i)``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fuzz_kernels import FAMILIES, GeneratedKernel, generate_kernel  # noqa: E402


@dataclass
class Case:
    seed: int
    kernel: GeneratedKernel
    ssa: Any = None  # the optimised SSA the interpreter runs
    cuda: str = ""
    problem: str = ""  # what went wrong, by stage: "compile: ...", "nvcc: ...", "launch: ...", "mismatch: ..."


def compile_case(case: Case) -> None:
    from mytriton import compiler

    from fuzz_checks import options_of

    gk = case.kernel
    options = options_of(gk)
    try:
        case.ssa = compiler.source_to_ssa(gk.source, gk.file, options)
        case.cuda = compiler.to_cuda(case.ssa, options)
    except Exception as err:
        case.problem = f"compile: {type(err).__name__}: {err}"


def build_case(case: Case) -> None:
    from mytriton.backends.cuda.nvcc import compile_cubin

    if case.problem:
        return
    try:
        compile_cubin(case.cuda)
    except Exception as err:
        case.problem = f"nvcc: {type(err).__name__}: {str(err)[:2000]}"


def compare(case: Case, seed: int) -> None:
    from mytriton.backends.interp import run_kernel
    from mytriton.runtime.cuda_driver import CudaKernel

    from fuzz_checks import assert_close

    gk = case.kernel
    args = gk.make_args(np.random.default_rng(seed))
    on_cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    on_gpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        run_kernel(case.ssa, gk.grid, on_cpu)
    except Exception as err:
        case.problem = f"interpreter: {type(err).__name__}: {err}"
        return
    try:
        CudaKernel(case.cuda).launch(gk.grid, on_gpu)
    except Exception as err:
        case.problem = f"launch: {type(err).__name__}: {err}"
        return
    for index in gk.outputs:
        try:
            assert_close(gk, on_gpu[index], on_cpu[index], f"{gk.params[index].name} on the GPU against the interpreter")
        except AssertionError as err:
            case.problem = f"mismatch: {err}"
            return


def describe(case: Case) -> str:
    gk = case.kernel
    return (f"--- generate_kernel({case.seed}): {gk.family}, grid {gk.grid}, {gk.defines}, num_warps={gk.num_warps}, "
            f"signature {gk.signature!r}\n{case.problem}\n{gk.source}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--count", type=int, default=1000, help="kernels (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first kernel's seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel nvcc builds")
    parser.add_argument("--family", choices=FAMILIES, help="only kernels of this family")
    parser.add_argument("--build-only", action="store_true", help="compile and build, launch nothing (no GPU)")
    parser.add_argument("--cache-dir", help="nvcc's build cache (sets MYTRITON_CACHE_DIR)")
    parser.add_argument("--show", type=int, default=5, help="how many problems to print in full")
    options = parser.parse_args(argv)
    if options.cache_dir:
        os.environ["MYTRITON_CACHE_DIR"] = options.cache_dir

    start = time.monotonic()
    cases = [Case(options.seed + i, generate_kernel(options.seed + i, options.family)) for i in range(options.count)]
    for case in cases:
        compile_case(case)
    compiled = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:  # nvcc runs in its own processes
        list(pool.map(build_case, cases))
    built = time.monotonic()
    print(f"compiled {len(cases)} kernels in {compiled - start:.1f} s, built with nvcc in {built - compiled:.1f} s "
          f"({options.jobs} jobs)", flush=True)

    if not options.build_only:
        from mytriton.runtime.cuda_driver import cuda_available

        if not cuda_available():
            print("error: no CUDA GPU usable here (use --build-only to stop after nvcc)",
                  file=sys.stderr)
            return 1
        for case in cases:
            if not case.problem:
                try:
                    compare(case, case.seed)
                except Exception:  # a crash in the harness is reported with the kernel, not lost
                    case.problem = "harness: " + traceback.format_exc()[-1500:]
        print(f"launched in {time.monotonic() - built:.1f} s", flush=True)

    problems = [c for c in cases if c.problem]
    by_stage: dict[str, int] = {}
    for c in problems:
        stage = c.problem.split(":")[0]
        by_stage[stage] = by_stage.get(stage, 0) + 1
    mismatches = by_stage.get("mismatch", 0)
    others = ", ".join(f"{n} {stage} failures" for stage, n in sorted(by_stage.items()) if stage != "mismatch")
    verb = "built" if options.build_only else "ran"
    families: dict[str, list[int]] = {}  # family -> [kernels, problems]
    for c in cases:
        counts = families.setdefault(c.kernel.family, [0, 0])
        counts[0] += 1
        counts[1] += bool(c.problem)
    print("by family: " + ", ".join(f"{family} {n} ({bad} with problems)" for family, (n, bad) in families.items()))
    print(f"{len(cases)} kernels, {mismatches} mismatches" + (f" ({others})" if others else "")
          + f"; {verb} in {time.monotonic() - start:.1f} s")
    for case in problems[:options.show]:
        print(describe(case))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
