"""Source trees against each other on one machine: the same benchmark
script, run from each tree in turn, the trees alternating round by round,
so that a host that drifts (the GPU machine's hosts do, by a third from one
lease to the next) moves every tree alike.

    python benchmarks/ab_trees.py --tree old=.scratch/old --tree new=. [--rounds 2]
        [--out DIR] [--json PATH] -- SCRIPT.py ARGS...

Each ``--tree NAME=DIR`` is a checkout (``git archive REV | tar -x -C DIR``
makes one of any revision; on the GPU machine carry it). Each run is
``python DIR/benchmarks/SCRIPT.py ARGS --json F`` in its own process, from
DIR, so the tree's own mytriton is the one imported (``common.py`` puts its
tree first on ``sys.path``). The scripts' rows (their ``--json``) are read
back; the table gives, for each row and tree, the median of mytriton's
figures over the rounds with every sample, then Triton's median, which
says whether the host moved between trees. ``--out`` keeps each run's
printed output; ``--json`` the table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import HIGHER_IS_FASTER  # noqa: E402


def parse_tree(text: str) -> tuple[str, Path]:
    name, sep, directory = text.partition("=")
    if not sep or not name or not directory:
        raise argparse.ArgumentTypeError(f"'{text}': a tree is NAME=DIR")
    return name, Path(directory)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     usage="%(prog)s --tree NAME=DIR --tree NAME=DIR [options] -- SCRIPT.py ARGS...")
    parser.add_argument("--tree", type=parse_tree, action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=2, help="runs per tree, alternating (default 2)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="keep each run's output here (NAME_ROUND.txt)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the table here too")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="SCRIPT.py (under benchmarks/) and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no benchmark: give it after --, e.g. -- matmul_forms.py --sizes 4096")
    args.script, args.script_args = command[0], command[1:]
    names = [name for name, _ in args.tree]
    if len(set(names)) != len(names):
        parser.error(f"tree names repeat: {', '.join(names)}")
    if args.rounds < 1:
        parser.error("--rounds is at least 1")
    for name, directory in args.tree:
        if not (directory / "benchmarks" / args.script).is_file():
            parser.error(f"tree {name}: no benchmarks/{args.script} in {directory}")
    return args


def run_once(directory: Path, script: str, script_args: list[str], timeout: float) -> tuple[list[dict], str]:
    """One run of the script from ``directory``: its rows and its output."""
    with tempfile.TemporaryDirectory(prefix="mytriton-ab-") as scratch:
        results = Path(scratch) / "rows.json"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(directory.resolve())] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        try:
            run = subprocess.run([sys.executable, str(Path("benchmarks") / script), *script_args,
                                  "--json", str(results)], cwd=directory, env=env, capture_output=True,
                                 text=True, timeout=timeout)
            output = run.stdout + run.stderr
            if run.returncode:
                output += f"\n(exit status {run.returncode})\n"
        except subprocess.TimeoutExpired as expired:
            partial = expired.stdout or ""  # bytes, whatever text= said, on some Pythons
            partial = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
            output = f"{partial}\n(cut short after {timeout:g} s)\n"
        try:
            rows = json.loads(results.read_text())["rows"]
        except (OSError, ValueError, KeyError):
            rows = []  # a run that wrote nothing: its output says why
        return rows, output


def collect(args: argparse.Namespace) -> dict[str, dict]:
    """Every tree's samples by row, in the rows' first order."""
    table: dict[str, dict] = {}
    for round_ in range(1, args.rounds + 1):
        for name, directory in args.tree:
            rows, output = run_once(directory, args.script, args.script_args, args.timeout)
            print(f"== {name}, round {round_}: {len(rows)} row(s)", flush=True)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{name}_{round_}.txt").write_text(output)
            if not rows:
                print(output[-2000:], flush=True)
            for row in rows:
                entry = table.setdefault(row["case"], {"unit": row.get("unit", ""), "mytriton": {}, "triton": {}})
                for side in ("mytriton", "triton"):
                    if isinstance(row.get(side), (int, float)):
                        entry[side].setdefault(name, []).append(row[side])
    return table


def report(table: dict[str, dict], names: list[str]) -> list[dict]:
    """The table's rows: medians, samples, and each tree against the first
    (above 1: faster than the first tree, whatever the unit)."""
    lines = []
    for case, entry in table.items():
        faster = entry["unit"] in HIGHER_IS_FASTER
        medians = {name: statistics.median(entry["mytriton"][name]) for name in names if name in entry["mytriton"]}
        first = medians.get(names[0])
        row = {"case": case, "unit": entry["unit"], "medians": medians, "samples": entry["mytriton"],
               "triton_medians": {name: statistics.median(v) for name, v in entry["triton"].items()}}
        if first:
            row["against_first"] = {name: (m / first if faster else first / m) for name, m in medians.items() if m}
        lines.append(row)
    return lines


def print_report(lines: list[dict], names: list[str]) -> None:
    print(f"\nmedian of mytriton's figure per tree (samples); x: against {names[0]}, above 1 faster; "
          "then Triton's median per tree")
    for line in lines:
        print(f"{line['case']} ({line['unit']})")
        for name in names:
            if name not in line["medians"]:
                print(f"  {name:<10} -")
                continue
            samples = ", ".join(f"{v:.4g}" for v in line["samples"][name])
            against = line.get("against_first", {}).get(name)
            triton = line["triton_medians"].get(name)
            print(f"  {name:<10} {line['medians'][name]:<10.4g} x{against:.3f}  ({samples})" if against else
                  f"  {name:<10} {line['medians'][name]:<10.4g} ({samples})", end="")
            print(f"  Triton {triton:.4g}" if triton is not None else "")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [name for name, _ in args.tree]
    lines = report(collect(args), names)
    print_report(lines, names)
    if args.json:
        args.json.write_text(json.dumps({"script": args.script, "args": args.script_args, "rounds": args.rounds,
                                         "trees": {name: str(d) for name, d in args.tree}, "rows": lines},
                                        indent=1) + "\n")
    return 0 if lines else 1


if __name__ == "__main__":
    sys.exit(main())
