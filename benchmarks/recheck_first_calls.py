"""Run again, with several first calls each, the matmul-form rows whose one
first call was above Triton's (issue 25 item 4). A sweep gives each row one
first call per side: on the GPU machine's host a build's time varies by a
third from one second to the next, so a row within that of Triton's says
little until its median of several does.

    python benchmarks/recheck_first_calls.py OUT/forms_*.json [--first-calls 3] [--out DIR] [--json F]
    python benchmarks/recheck_first_calls.py OUT/forms_*.json --dry-run   # the commands, run nothing

Each results file is one ``matmul_forms.py`` run (its options are in the
file). The rows above Triton's are grouped by size and run again through
``matmul_forms.py`` with the same options, ``--forms`` and ``--sizes``
narrowed to them; each run's JSON goes to DIR (default: beside the first
file). The table at the end gives each row's first call before (one sample)
and after (the median), ours and Triton's; ``--json`` keeps it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Results, add_json_option  # noqa: E402
# The options of matmul_forms.py a rerun repeats, as the results file names them.
REPEATED = (("dtype", "--dtype"), ("precision", "--precision"), ("config", "--config"),
            ("num_warps", "--num-warps"), ("num_stages", "--num-stages"), ("split_k", "--split-k"))


def above(rows: list[dict]) -> list[dict]:
    """The rows whose first call was slower than Triton's."""
    return [row for row in rows
            if row.get("first_call_s") is not None and row.get("triton_first_call_s") is not None
            and row["first_call_s"] > row["triton_first_call_s"]]


def reruns(path: Path, first_calls: int, out: Path) -> list[tuple[list[str], Path, list[dict]]]:
    """(command, its JSON, the rows it reruns) for each size with a row above Triton's in ``path``."""
    document = json.loads(path.read_text())
    options = document.get("options", {})
    by_size: dict[str, list[dict]] = {}
    for row in above(document.get("rows", [])):
        by_size.setdefault(row["size"], []).append(row)
    commands = []
    for size, rows in by_size.items():
        target = out / f"recheck_{path.stem}_{size}.json"
        command = [sys.executable, str(HERE / "matmul_forms.py")]
        for key, flag in REPEATED:
            if options.get(key) is not None:
                command += [flag, str(options[key])]
        command += ["--forms", *dict.fromkeys(row["form"] for row in rows), "--sizes", size,
                    "--first-calls", str(first_calls), "--repeat", "5", "--json", str(target)]
        commands.append((command, target, rows))
    return commands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Strings, not paths: the options go into the JSON as they are.
    parser.add_argument("results", nargs="+", help="matmul_forms.py results (its --json files)")
    parser.add_argument("--first-calls", type=int, default=3, metavar="N", help="first calls per row and side")
    parser.add_argument("--out", default=None, help="where the reruns' JSON go")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one rerun may take")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    add_json_option(parser)
    args = parser.parse_args(argv)
    table = []
    for path in map(Path, args.results):
        for command, target, rows in reruns(path, args.first_calls, Path(args.out) if args.out else path.parent):
            if args.dry_run:
                print(" ".join(command))
                continue
            try:
                subprocess.run(command, timeout=args.timeout, check=False)
                again = {(row["form"], row["size"]): row for row in json.loads(target.read_text())["rows"]}
            except (subprocess.TimeoutExpired, OSError, ValueError) as error:
                print(f"{path.name}: the rerun of {', '.join(row['form'] for row in rows)} gave nothing: {error}",
                      file=sys.stderr)
                again = {}
            for row in rows:
                new = again.get((row["form"], row["size"]), {})
                table.append((path.stem, row["form"], row["size"], row, new))
    if table:
        record = Results("recheck_first_calls", args)
        print(f"\n{'results':<14} {'form':<24} {'size':<16} {'before (1)':>16} {'after (median)':>16}")
        for name, form, size, old, new in table:
            if new.get("first_call_s") is not None:
                record.add(f"{name} {form} {size}", "s", new["first_call_s"], new.get("triton_first_call_s"),
                           before=old["first_call_s"], triton_before=old["triton_first_call_s"],
                           first_calls=args.first_calls)
            before = f"{old['first_call_s']:.2f} / {old['triton_first_call_s']:.2f}"
            after = (f"{new['first_call_s']:.2f} / {new['triton_first_call_s']:.2f}"
                     if new.get("first_call_s") is not None and new.get("triton_first_call_s") is not None else "-")
            print(f"{name:<14} {form:<24} {size:<16} {before:>16} {after:>16}")
    elif not args.dry_run:
        print("no row's first call was above Triton's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
