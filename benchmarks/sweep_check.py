"""A sweep's results (benchmarks/sweep.sh) against issue 25's targets: its
tables, and what falls short. Needs no GPU: it reads the JSON a sweep wrote.

    python benchmarks/sweep_check.py OUT_DIR [OUT_DIR...] [--markdown FILE]

The targets, each row's speed taken as Triton's time over ours (or our
TFLOP/s over Triton's):
  - attention forms (att_*): 0.85 of Triton or better;
  - matmul forms (forms_*) and the grouped matmul: 0.9 or better;
  - the tile configs (cfg_*): 1.0 or better;
  - no row below 0.8;
  - every row's first call (compile and load, then the result) at or below
    Triton's (where either side built a kernel: a row that reuses one
    built before takes under 10 ms on both). Where the ``recheck`` part ran a row again with several first
    calls (recheck_first_calls.json), its medians stand for the one sample;
    benchmarks/first_call.py's rows (first_call.json) are first calls only.

A row with no result on our side (a failure, a part cut short) misses its
target. The results must come from one GPU (the GPU names in the files), as
the issue asks for one run. Exit 0 where every target holds, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import speed_ratio  # noqa: E402

FLOOR = 0.8  # no row below it
TARGETS = (("att_", 0.85, "attention"), ("cfg_", 1.0, "config"), ("forms_", 0.9, "form"),
           ("grouped", 0.9, "grouped matmul"))
# A first call under this on both sides built nothing (grouped_matmul.py's later shapes reuse the
# kernels an earlier shape built: 0.00 s), so there is no build to compare.
NO_BUILD_S = 0.01
FIRST_CALLS_ONLY = "first_call"  # benchmarks/first_call.py: compile times, no speed row
RECHECK = "recheck_first_calls"


@dataclass
class Row:
    source: str  # the results file's name, without .json
    case: str
    unit: str
    ours: float | None
    theirs: float | None
    target: float | None  # None: a first call only
    first: float | None
    triton_first: float | None
    key: tuple[str, str, str] | None = None  # (source, form, size) of a matmul form, for the recheck
    rechecked: bool = False

    @property
    def speed(self) -> float | None:
        if self.target is None:
            return None
        return speed_ratio({"unit": self.unit, "mytriton": self.ours, "triton": self.theirs})

    def first_call_above(self) -> bool:
        """Whether our first call took longer than Triton's, where either built a kernel."""
        if self.first is None or self.triton_first is None:
            return False
        return self.first > self.triton_first and max(self.first, self.triton_first) >= NO_BUILD_S

    def short_of(self) -> list[str]:
        """What this row misses, in words (nothing where it meets every target)."""
        misses = []
        if self.target is not None:
            if self.speed is None:
                misses.append("no result")
            elif self.speed < self.target:
                misses.append(f"{self.speed:.2f} of Triton, below {self.target:g}"
                              + (f" and the floor {FLOOR:g}" if self.speed < FLOOR else ""))
        if self.first_call_above():
            misses.append(f"first call {self.first:.2f} s against Triton's {self.triton_first:.2f} s")
        return misses


def triton_first_call(row: dict, precision: object = None) -> float | None:
    """Triton's first call, under whichever name the script gave it (matmul.py: triton_tf32_first_call_s).
    matmul.py times an f16 config under both of Triton's f32 precisions, and compares ours with
    the one it was given (``--precision``, exact f32 when none), so that one's first call counts."""
    if row.get("triton_first_call_s") is not None:
        return row["triton_first_call_s"]
    named = {key: value for key, value in row.items()
             if key.startswith("triton_") and key.endswith("_first_call_s") and value is not None}
    chosen = f"triton_{precision if isinstance(precision, str) and precision else 'ieee'}_first_call_s"
    if len(named) > 1 and chosen in named:
        return named[chosen]
    return next(iter(named.values())) if len(named) == 1 else None


def documents(paths: list[Path]) -> tuple[dict[str, dict], list[str]]:
    """Every results document by its file's name (without .json), from each
    results file in the folders and those a part's merged PART.json holds;
    where two differ (a part run again), the later by its "when". And a note
    for each such choice."""
    found: dict[str, dict] = {}
    where: dict[str, Path] = {}
    notes = []
    files = [file for path in paths for file in (sorted(path.glob("*.json")) if path.is_dir() else [path])]
    for file in files:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"{file}: error: not a results file ({error})") from None
        if not isinstance(data, dict):
            raise SystemExit(f"{file}: error: not a results file (a JSON object was expected)")
        held = {file.stem: data} if "rows" in data else {  # else a part's merged file: its rows' files by name
            Path(name).stem: document for name, document in data.items()
            if isinstance(document, dict) and "rows" in document}
        for name, document in held.items():
            if name in found and found[name] != document:
                later = str(document.get("when", "")) > str(found[name].get("when", ""))
                kept = file if later else where[name]
                notes.append(f"{name}: in {where[name].name} and {file.name}; the later, {kept.name}, is read")
                if not later:
                    continue
            found[name], where[name] = document, file
    return found, notes


def listed(value: object) -> list:
    return value if isinstance(value, list) else []


def measured(value: object) -> float | None:
    """A measurement as a number, or None where the file holds none (a failed row writes null)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:  # (NaN too)
        return None
    return float(value)


def rows_of(name: str, document: dict) -> list[Row]:
    target = next((value for prefix, value, _ in TARGETS if name.startswith(prefix)), None)
    options = document.get("options")
    precision = options.get("precision") if isinstance(options, dict) else None
    rows = []
    for row in listed(document.get("rows")):
        if not isinstance(row, dict) or "case" not in row:
            continue
        key = (name, str(row["form"]), str(row["size"])) if "form" in row and "size" in row else None
        only_first = name == FIRST_CALLS_ONLY
        rows.append(Row(name, str(row["case"]), str(row.get("unit", "")), measured(row.get("mytriton")),
                        measured(row.get("triton")), None if only_first else target,
                        measured(row.get("mytriton") if only_first else row.get("first_call_s")),
                        measured(row.get("triton") if only_first else triton_first_call(row, precision)), key))
    return rows


def apply_recheck(rows: list[Row], document: dict) -> None:
    """The recheck's medians in place of the rows' one first call (its case is 'SOURCE FORM SIZE')."""
    by_key = {row.key: row for row in rows if row.key}
    for again in listed(document.get("rows")):
        if not isinstance(again, dict):
            continue
        parts = str(again.get("case", "")).split()
        row = by_key.get(tuple(parts)) if len(parts) == 3 else None
        if row is not None and measured(again.get("mytriton")) is not None:
            row.first, row.triton_first, row.rechecked = measured(again["mytriton"]), measured(again.get("triton")), True


def check(paths: list[Path]) -> tuple[list[Row], set[str], list[str], list[str]]:
    """The rows, the GPUs the files name, the documents that are neither a
    target's nor known, and the notes on documents found twice."""
    docs, notes = documents(paths)
    rows: list[Row] = []
    unknown = []
    for name, document in docs.items():
        if name == RECHECK:
            continue
        if name != FIRST_CALLS_ONLY and not any(name.startswith(prefix) for prefix, _, _ in TARGETS):
            unknown.append(name)
            continue
        rows += rows_of(name, document)
    if RECHECK in docs:
        apply_recheck(rows, docs[RECHECK])
    gpus = {str(document.get("gpu")) for document in docs.values() if document.get("gpu")}
    return rows, gpus, unknown, notes


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def tables(rows: list[Row]) -> str:
    lines = []
    for source in dict.fromkeys(row.source for row in rows):
        lines += [f"\n{source}:\n", "| case | ours | Triton | unit | speed | target | first call s, ours / Triton | short of |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for row in (row for row in rows if row.source == source):
            first = f"{number(row.first)} / {number(row.triton_first)}" + (" (median)" if row.rechecked else "")
            lines.append(f"| {row.case} | {number(row.ours)} | {number(row.theirs)} | {row.unit} | "
                         f"{number(row.speed)} | {'-' if row.target is None else f'{row.target:g}'} | {first} | "
                         f"{'; '.join(row.short_of()) or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="a sweep's OUT_DIR (or results files)")
    parser.add_argument("--markdown", type=Path, help="write the tables here too")
    args = parser.parse_args(argv)
    for path in args.results:
        if not path.exists():
            print(f"{path}: error: no such file or folder", file=sys.stderr)
            return 1
    rows, gpus, unknown, notes = check(args.results)
    text = tables(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    short = [row for row in rows if row.short_of()]
    speed_rows = [row for row in rows if row.target is not None]
    print(f"\n{len(speed_rows)} speed rows, {len(rows) - len(speed_rows)} first-call rows; GPU: "
          f"{', '.join(sorted(gpus)) or 'not named'}")
    for kind_prefix, target, kind in TARGETS:
        of_kind = [row for row in speed_rows if row.source.startswith(kind_prefix)]
        low = [row for row in of_kind if row.speed is None or row.speed < target]
        if of_kind:
            print(f"  {kind}: {len(of_kind)} rows, {len(low)} below {target:g}")
    print(f"  below the floor {FLOOR:g}: {sum(1 for row in speed_rows if row.speed is not None and row.speed < FLOOR)}")
    print(f"  first calls above Triton's: "
          f"{sum(1 for row in rows if row.first_call_above())}")
    for note in notes:
        print(f"  {note}")
    if unknown:
        print(f"  not checked (no target): {', '.join(unknown)}")
    for row in short:
        print(f"short: {row.source}: {row.case}: {'; '.join(row.short_of())}")
    if len(gpus) > 1:
        print("short: the results come from more than one GPU")
    if not rows:
        print("short: no rows")
    return 0 if rows and not short and len(gpus) <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
