"""Draw benchmark results (the JSON the scripts here write) as mytriton's
speed relative to Triton's, one bar per row and one colour per file: the
same script's runs side by side, or different scripts one after another.
A bar past the 1.0 line is a row where mytriton is faster.

    python benchmarks/plot.py benchmarks/results/softmax.json [more.json ...] -o softmax.png
    python benchmarks/plot.py results/interp.json --against numpy -o interp.svg

Needs matplotlib (the test extra has it). The picture's format follows the
output's suffix (png, svg, pdf).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import speed_ratio  # noqa: E402


def load(paths: list[Path]) -> list[dict]:
    documents = []
    for path in paths:
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise SystemExit(f"{path}: not a benchmark result ({err})") from None
        if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
            raise SystemExit(f"{path}: not a benchmark result (no rows)")
        document["path"] = str(path)
        documents.append(document)
    return documents


def series(documents: list[dict], against: str) -> tuple[list[str], list[tuple[str, dict[str, float]]]]:
    """The cases in first-seen order, and per file its label and ratio by case."""
    cases: list[str] = []
    out = []
    for document in documents:
        ratios = {}
        for row in document["rows"]:
            ratio = speed_ratio(row, against)
            if ratio is None:
                continue
            case = f"{document.get('script', '?')}: {row['case']}"
            ratios[case] = ratio
            if case not in cases:
                cases.append(case)
        label = f"{Path(document['path']).name} ({document.get('when', 'undated')})"
        out.append((label, ratios))
    return cases, out


def draw(documents: list[dict], against: str, output: Path) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases, per_file = series(documents, against)
    if not cases:
        raise SystemExit(f"no row in {', '.join(d['path'] for d in documents)} has both mytriton's and "
                         f"{against}'s figure")
    # A case's slot is shared by the files that have it (runs of the same rows side by side; the
    # disjoint rows of different runs each get the whole slot).
    having = {case: [i for i, (_, ratios) in enumerate(per_file) if case in ratios] for case in cases}
    widest = max(len(files) for files in having.values())
    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.35 * len(cases) * widest))
    for i, (label, ratios) in enumerate(per_file):
        ys, widths, heights = [], [], []
        for c, case in enumerate(cases):
            if case in ratios:
                files = having[case]
                height = 0.8 / len(files)
                ys.append(c - 0.4 + height * (files.index(i) + 0.5))
                widths.append(ratios[case])
                heights.append(height)
        axes.barh(ys, widths, height=heights, label=label)
    axes.axvline(1.0, color="black", linewidth=1)
    axes.set_yticks(range(len(cases)), cases)
    axes.invert_yaxis()
    axes.set_xlabel(f"mytriton's speed / {against}'s (right of 1.0: mytriton is faster)")
    # Below the bars, so that it never hides one.
    below = 0.6 / max(figure.get_figheight() - 1.2, 0.5)  # 0.6 inch under the axes, whatever their height
    axes.legend(loc="upper left", bbox_to_anchor=(0.0, -below), fontsize="small")
    figure.savefig(output, bbox_inches="tight")  # the labels and the legend, wherever they reach
    plt.close(figure)
    return len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+", help="JSON files the benchmark scripts wrote")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the picture (.png, .svg, .pdf)")
    parser.add_argument("--against", default="triton", help="the figure mytriton is compared with (default: triton)")
    args = parser.parse_args(argv)
    count = draw(load(args.results), args.against, args.output)
    print(f"{args.output}: {count} row(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
