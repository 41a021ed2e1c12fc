"""The long fuzzing run (``make fuzz``): generated kernels through every
property of tests/fuzz_checks.py; each spelling generator of
tests/fuzz_spellings.py (operators over constants of every kind, recursive
helpers, long elif chains, string annotations); corrupted .npy files
(tests/fuzz_npy.py); then mutated inputs of every stage through the
bad-input contract of tests/fuzz_mutations.py. Prints one summary line per
part (counts and failures), then each distinct failure class with its
smallest input; exits 1 when anything failed.

    python tools/fuzz.py --kernels 10000 --spellings 10000 --npy 10000 --mutations 20000 --seed 0
    python tools/fuzz.py --kernels 0 --spellings 500 --only elif --npy 0 --mutations 0

Kernel N is ``generate_kernel(seed + N)``, spelling case N of a generator
``fuzz_spellings.generate(kind, seed + N)``, .npy case N
``fuzz_npy.generate(seed + N)``: a failure's seed reproduces it.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fuzz_checks  # noqa: E402
import fuzz_mutations  # noqa: E402
import fuzz_npy  # noqa: E402
import fuzz_spellings  # noqa: E402
from fuzz_kernels import generate_kernel  # noqa: E402

CHECKS = (("round trip", fuzz_checks.check_roundtrip), ("text chain", fuzz_checks.check_text_chain),
          ("passes", None), ("interpreter", fuzz_checks.check_interpreter))


def fuzz_kernels(count: int, seed: int, progress: int) -> dict[str, list[tuple[int, str, str]]]:
    """Failures by class: (kernel seed, source, message)."""
    classes: dict[str, list[tuple[int, str, str]]] = {}
    start = time.monotonic()
    for n in range(count):
        kernel_seed = seed + n
        gk = generate_kernel(kernel_seed)
        for label, check in CHECKS:
            try:
                if check is None:
                    fuzz_checks.check_passes(gk, random.Random(kernel_seed))
                elif check is fuzz_checks.check_interpreter:
                    check(gk, kernel_seed)
                else:
                    check(gk)
            except Exception as err:  # every failure is recorded, the run goes on
                klass = failure_class(f"{gk.family}/{label}", err)
                classes.setdefault(klass, []).append((kernel_seed, gk.source, str(err)[:3000]))
        if progress and (n + 1) % progress == 0:
            print(f"  {n + 1} kernels, {sum(map(len, classes.values()))} failures, "
                  f"{time.monotonic() - start:.0f} s", flush=True)
    return classes


def failure_class(label: str, err: Exception) -> str:
    frame = traceback.extract_tb(err.__traceback__)[-1]
    first = str(err).splitlines()[0][:120] if str(err) else ""
    return f"{label}: {type(err).__name__} at {Path(frame.filename).name}:{frame.lineno}: {first}"


def fuzz_spellings_of(kind: str, count: int, seed: int, progress: int) -> dict[str, list[tuple[int, str, str]]]:
    """Failures of one spelling generator by class: (case seed, source, message)."""
    classes: dict[str, list[tuple[int, str, str]]] = {}
    start = time.monotonic()
    for n in range(count):
        case = fuzz_spellings.generate(kind, seed + n)
        try:
            case.check()
        except Exception as err:  # every failure is recorded, the run goes on
            classes.setdefault(failure_class(kind, err), []).append((seed + n, case.source, str(err)[:3000]))
        if progress and (n + 1) % progress == 0:
            print(f"  {kind}: {n + 1} cases, {sum(map(len, classes.values()))} failures, "
                  f"{time.monotonic() - start:.0f} s", flush=True)
    return classes


def fuzz_npy_files(count: int, seed: int, directory: Path) -> dict[str, list[tuple[int, str, str]]]:
    classes: dict[str, list[tuple[int, str, str]]] = {}
    for n in range(count):
        case = fuzz_npy.generate(seed + n)
        try:
            fuzz_npy.check(case, directory / "input.npy")
        except Exception as err:
            classes.setdefault(failure_class(f"npy/{case.how}", err), []).append(
                (seed + n, case.data.hex(), str(err)[:3000]))
    return classes


def report(what: str, count: int, classes: dict[str, list[tuple[int, str, str]]], elapsed: float,
           replay: str) -> int:
    failures = sum(map(len, classes.values()))
    print(f"fuzz: {count} {what}, {failures} failures in {len(classes)} classes ({elapsed:.0f} s)", flush=True)
    for klass, cases in classes.items():
        case_seed, source, message = min(cases, key=lambda c: len(c[1]))
        print(f"\n[{klass}] x{len(cases)}; smallest: {replay.format(seed=case_seed)}\n{message}\n{source}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=10_000, help="generated kernels (default 10000)")
    parser.add_argument("--spellings", type=int, default=10_000,
                        help="cases of each spelling generator (default 10000)")
    parser.add_argument("--only", choices=fuzz_spellings.GENERATORS, action="append",
                        help="run only this spelling generator (repeatable)")
    parser.add_argument("--npy", type=int, default=10_000, help="corrupted .npy files (default 10000)")
    parser.add_argument("--mutations", type=int, default=20_000, help="mutated inputs (default 20000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per mutated input")
    parser.add_argument("--memory-gib", type=float, default=3.0, help="address-space limit while mutating")
    parser.add_argument("--progress", type=int, default=1000, help="print progress every N inputs (0: never)")
    parser.add_argument("--save", metavar="DIR", help="write each failure class's smallest input here")
    options = parser.parse_args(argv)

    failed = 0
    start = time.monotonic()
    kernel_classes = fuzz_kernels(options.kernels, options.seed, options.progress)
    failed += report("generated kernels", options.kernels, kernel_classes, time.monotonic() - start,
                     "generate_kernel({seed})")

    for kind in options.only or fuzz_spellings.GENERATORS:
        if options.spellings:
            start = time.monotonic()
            classes = fuzz_spellings_of(kind, options.spellings, options.seed, options.progress)
            failed += report(f"{kind} cases", options.spellings, classes, time.monotonic() - start,
                             f"fuzz_spellings.generate({kind!r}, {{seed}})")
            kernel_classes.update(classes)

    if options.npy:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="mytriton-fuzz-") as tmp:
            classes = fuzz_npy_files(options.npy, options.seed, Path(tmp))
        failed += report("corrupted .npy files", options.npy, classes, time.monotonic() - start,
                         "fuzz_npy.generate({seed})")
        kernel_classes.update(classes)

    start = time.monotonic()
    corpus = fuzz_mutations.sample_seeds() + fuzz_mutations.generated_seeds(range(options.seed, options.seed + 20))
    mutation_failures: list[fuzz_mutations.Failure] = []
    with tempfile.TemporaryDirectory(prefix="mytriton-fuzz-") as tmp:
        done = 0
        while done < options.mutations:
            chunk = min(options.progress or options.mutations, options.mutations - done)
            mutation_failures += fuzz_mutations.run_campaign(
                corpus, chunk, options.seed * 1_000_003 + done, Path(tmp), options.timeout,
                int(options.memory_gib * (1 << 30)))
            done += chunk
            if options.progress and done < options.mutations:
                print(f"  {done} mutated inputs, {len(mutation_failures)} failures, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    classes = {f.klass for f in mutation_failures}
    print(f"fuzz: {options.mutations} mutated inputs, {len(mutation_failures)} failures in {len(classes)} classes "
          f"({time.monotonic() - start:.0f} s)", flush=True)
    if mutation_failures:
        print(fuzz_mutations.summarize(mutation_failures))
    failed += len(mutation_failures)

    if options.save and (mutation_failures or kernel_classes):
        save(Path(options.save), kernel_classes, mutation_failures)
    print(f"fuzz: {options.kernels} kernels, {options.spellings} cases of each spelling, {options.npy} .npy "
          f"files, {options.mutations} mutated inputs, {failed} failures")
    return 1 if failed else 0


def save(directory: Path, kernel_classes: dict, mutation_failures: list) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, (klass, cases) in enumerate(kernel_classes.items()):
        kernel_seed, source, message = min(cases, key=lambda c: len(c[1]))
        if klass.startswith("npy/"):  # the file's bytes, in hex
            (directory / f"npy_{i}_seed{kernel_seed}.npy").write_bytes(bytes.fromhex(source))
            (directory / f"npy_{i}_seed{kernel_seed}.txt").write_text(f"{klass}\n\n{message}\n")
            continue
        (directory / f"kernel_{i}_seed{kernel_seed}.py").write_text(f'"""{klass}\n\n{message}\n"""\n{source}')
    by_class: dict[str, list] = {}
    for f in mutation_failures:
        by_class.setdefault(f.klass, []).append(f)
    for i, (klass, fs) in enumerate(by_class.items()):
        smallest = min(fs, key=lambda f: len(f.text))
        data = smallest.text if isinstance(smallest.text, bytes) else smallest.text.encode("utf-8", "surrogatepass")
        (directory / f"mutation_{i}.input").write_bytes(data)
        (directory / f"mutation_{i}.txt").write_text(f"{klass}\nmytriton {' '.join(smallest.command)}\n"
                                                     f"{smallest.label}\n\n{smallest.detail}\n")
    print(f"fuzz: reproducers in {directory}/")


if __name__ == "__main__":
    sys.exit(main())
