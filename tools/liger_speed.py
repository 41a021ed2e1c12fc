"""Liger-Kernel's own benchmark scripts, op by op, on real Triton and on
mytriton (``python -m mytriton.as_triton``), in one invocation: the speed
half of running Triton code as it is published.

Each script under Liger's benchmark/scripts/ times its op's forward,
backward and full pass for Liger's provider and a reference (Hugging Face or
torch) over a sweep of sizes with ``triton.testing.do_bench`` (mytriton's
do_bench flushes the L2 cache and clears gradients before each timed call as
Triton's does), and writes the medians to benchmark/data/ as CSV
(``LIGER_BENCH_TARGET`` names the file). Here each script runs twice, one
side after the other so that they never share the GPU: once as it is, once
under ``python -m mytriton.as_triton``. The Liger rows of the two CSVs are
paired by (kernel, mode, size, config) and each pair's ratio printed:
Triton's milliseconds over mytriton's, so 1.0 is parity and above 1.0 is
faster. Exit status 0 when every ratio is at least ``--target`` (0.9).

Rows under ~0.1 ms are bound by the host's work a call on both sides (the
torch wrapper, autograd, the launch: 50-100 us), which do_bench's flush does
not hide, and their ratios then swing from run to run. ``--timer gpu`` times
each call's kernels alone (tools/liger_speed_rows.py's ``gpu_do_bench``: the
host kept ahead of the GPU), which tells a slow kernel from a busy host.

What it needs: .liger/src made by ``tools/liger_acceptance.py prepare``
(src/ and benchmark/scripts/); the GPU machine's torch, triton and
transformers. Liger's scripts read their version from the installed
distribution's metadata, which a source folder lacks: a metadata-only
dist-info for it is written into .liger/meta (nothing else is installed).

Three scripts fail on both sides at RELEASE, before any Liger row, for
reasons of their own:

- benchmark_modulated_rms_norm.py: ``compute_seq_len_sweep_config()`` is
  called with ``kernel_bytes_per_token``, which Liger's benchmark_model_configs
  at this tag does not take (TypeError);
- benchmark_grpo_loss.py: its Liger provider (the chunked loss,
  liger_kernel.chunked_loss) runs its loss math through torch.compile; on
  Triton dynamo raises an internal IndexError (``produce_guards``), on mytriton
  inductor imports ``triton.compiler``, which mytriton.as_triton does not
  provide (inductor's generated code is Triton's own);
- benchmark_qwen2vl_mrope.py: its reference provider's import,
  ``apply_multimodal_rotary_pos_emb`` from transformers' qwen2_vl, is gone from
  the installed transformers (ImportError).

For these ops (DIRECT_OPS), when the script fails on both sides,
tools/liger_speed_direct.py runs instead, on each side as the script did (the
same environment, CSV and timer, under ``python -m mytriton.as_triton`` on
mytriton's side): Liger's provider alone, called directly with its script's
inputs, sizes, dtypes and modes (for grpo_loss, Liger's Triton kernel
``liger_kernel.ops.GrpoLossFunction`` as benchmark_grpo_loss_kernel.py times
it: the chunked loss holds no Triton kernel of Liger's). The scripts' errors
stay in the JSON (``script_errors``); the rows are marked "(direct)" in the
tables. ``--direct`` skips those scripts and runs the driver at once. The
three on the H200:

    python tools/liger_speed.py --ops modulated_rms_norm,grpo_loss,qwen2vl_mrope --timer gpu --json $OUT/d.json

On the H200, from the repository root (carry ``[".liger/src"]``), a few ops
per device call (each script takes about a minute a side):

    python tools/liger_speed.py --ops rms_norm,layer_norm,swiglu --json $OUT/s1.json
    python tools/liger_speed.py --merge s1.json s2.json ... --report table.md
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from liger_acceptance import LIGER, OPS, RELEASE, ROOT, SIDES, SOURCE, selected_ops  # noqa: E402

SCRIPTS = SOURCE / "benchmark" / "scripts"
DATA = SOURCE / "benchmark" / "data"
META = LIGER / "meta"

ROWS = Path(__file__).resolve().parent / "liger_speed_rows.py"
DIRECT = Path(__file__).resolve().parent / "liger_speed_direct.py"
# The ops whose script fails on both sides at RELEASE (the docstring says how), which
# tools/liger_speed_direct.py times instead.
# mhc's script runs, but its sweep outlasts a device call (tools/liger_speed_direct.py's
# docstring): ``--direct`` times a part of it.
DIRECT_OPS = ("modulated_rms_norm", "grpo_loss", "qwen2vl_mrope", "mhc")
# The ops whose benchmark script is not benchmark_<op>.py.
SCRIPT_NAMES = {"experimental/embedding": "benchmark_embedding.py"}


def script_of(op: str) -> Path:
    return SCRIPTS / SCRIPT_NAMES.get(op, f"benchmark_{op}.py")


def write_metadata() -> Path:
    """A dist-info holding only METADATA, so that importlib.metadata finds
    liger-kernel's version for the source folder on PYTHONPATH."""
    info = META / f"liger_kernel-{RELEASE.lstrip('v')}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: liger-kernel\nVersion: {RELEASE.lstrip('v')}\n")
    return META


def run_side(side: str, script: Path, args: argparse.Namespace, direct: str | None = None
             ) -> tuple[list[dict], str, bool]:
    """The script (or, with ``direct``, tools/liger_speed_direct.py for that
    op) on one side: its Liger rows from the side's CSV, the log's tail, and
    whether it timed out."""
    out = DATA / f"all_benchmark_data_{side}.csv"
    if out.exists():
        out.unlink()
    env = dict(os.environ)
    paths = [str(SOURCE / "src"), str(SOURCE), str(ROOT), str(write_metadata())]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["LIGER_BENCH_TARGET"] = side
    env.update(dict(item.split("=", 1) for item in args.env))
    if getattr(args, "timer", "do_bench") == "gpu":
        env["LIGER_SPEED_TIMER"] = "gpu"
    command = [sys.executable, str(script), *args.script_args]
    if direct:
        command = [sys.executable, str(DIRECT), direct, *args.script_args]
    elif not args.all_rows:
        command[1:1] = [str(ROWS)]
    if side == "mytriton":
        command[1:1] = ["-m", "mytriton.as_triton"]
    timed_out = False
    try:
        done = subprocess.run(command, cwd=SCRIPTS, env=env, capture_output=True, text=True,
                              timeout=args.script_timeout)
        log = done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        timed_out = True
        log = str(expired.stdout or "") + str(expired.stderr or "")
    return liger_rows(out), log[-3000:], timed_out


def liger_rows(path: Path) -> list[dict]:
    """The speed rows of Liger's providers ("liger", "liger-fp32-accum", ...)."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        return [row for row in csv.DictReader(handle)
                if row["kernel_provider"].startswith("liger") and row["metric_name"] == "speed"]


def key(row: dict) -> tuple:
    return (row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"], row["x_value"],
            row["extra_benchmark_config_str"])


def pairs(result: dict) -> list[tuple[tuple, float, float]]:
    """(key, Triton's ms, mytriton's ms) for every row both sides measured."""
    mine = {key(r): float(r["y_value_50"]) for r in result.get("mytriton", [])}
    out = []
    for row in result.get("triton", []):
        k = key(row)
        if k in mine and mine[k] > 0:
            out.append((k, float(row["y_value_50"]), mine[k]))
    return out


def run_op(op: str, args: argparse.Namespace) -> dict:
    script = script_of(op)
    result: dict = {"op": op, "script": script.name}
    direct = op in DIRECT_OPS and getattr(args, "direct", False)
    if not script.exists() and not direct:
        result["missing"] = True
        return result
    if not direct:
        run_sides(result, script, args)
        direct = op in DIRECT_OPS and all(failed(result, side) for side in SIDES)
    if direct:
        # The script fails on both sides (or --direct): Liger's provider through tools/liger_speed_direct.py.
        result["script_errors"] = {side: last_error(result[f"{side}_tail"]) for side in SIDES
                                   if f"{side}_tail" in result}
        result["direct"] = DIRECT.name
        run_sides(result, script, args, direct=op)
    return result


def run_sides(result: dict, script: Path, args: argparse.Namespace, direct: str | None = None) -> None:
    for side in SIDES:
        rows, tail, timed_out = run_side(side, script, args, direct)
        result[side], result[f"{side}_tail"] = rows, tail
        if timed_out:
            result[f"{side}_timed_out"] = True


def failed(result: dict, side: str) -> bool:
    """Whether the side's run ended in a traceback before any row."""
    return (not result.get(side) and not result.get(f"{side}_timed_out")
            and "Traceback" in result.get(f"{side}_tail", ""))


def summary(results: list[dict]) -> str:
    lines = ["| op | rows | geomean (Triton ms / mytriton ms) | min | mode and size of the min |",
             "| --- | ---: | ---: | ---: | --- |"]
    for result in results:
        matched = pairs(result)
        note = " (no script)" if result.get("missing") else ""
        note += " (direct)" if result.get("direct") else ""
        note += "".join(f" (timed out: {side})" for side in SIDES if result.get(f"{side}_timed_out"))
        failing = [side for side in SIDES if failed(result, side)]
        if failing:
            what = "the direct driver" if result.get("direct") else "the script"
            note += f" ({what} failed on {' and '.join(failing)}: {last_error(result[failing[0] + '_tail'])})"
        if not matched:
            lines.append(f"| {result['op']}{note} | 0 | | | |")
            continue
        ratios = [t / m for _, t, m in matched]
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        worst = min(zip(ratios, matched), key=lambda item: item[0])
        (_, provider, mode, x, _), _, _ = worst[1]
        lines.append(f"| {result['op']}{note} | {len(ratios)} | {geomean:.2f} | {worst[0]:.2f} | "
                     f"{provider} {mode} x={x} |")
    return "\n".join(lines)


def last_error(log: str) -> str:
    """The exception line that ends a traceback in ``log``, shortened."""
    lines = [line for line in log.strip().splitlines() if line and not line.startswith(" ")]
    return (lines[-1] if lines else "no message")[:160].replace("|", "/")


def details(results: list[dict]) -> str:
    out = []
    for result in results:
        op = result["op"] + (" (direct)" if result.get("direct") else "")
        for (kernel, provider, mode, x, config), t, m in pairs(result):
            out.append(f"{op:<28} {provider:<18} {mode:<10} x={x:<10} triton {t:9.4f} ms  "
                       f"mytriton {m:9.4f} ms  {t / m:5.2f}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help=f"comma-separated ops (default: all): {', '.join(OPS)}")
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument("--report", type=Path, help="write the tables here too")
    parser.add_argument("--merge", type=Path, nargs="+", help="build the tables from earlier --json files")
    parser.add_argument("--target", type=float, default=0.9, help="the lowest ratio that passes")
    parser.add_argument("--script-timeout", type=int, default=600, help="seconds per script and side")
    parser.add_argument("--all-rows", action="store_true",
                        help="run the scripts' reference providers and memory sweeps too (default: "
                             "only Liger's speed rows, through tools/liger_speed_rows.py)")
    parser.add_argument("--timer", choices=("do_bench", "gpu"), default="do_bench",
                        help="gpu: time each call's kernels with the host kept ahead of the GPU "
                             "(tools/liger_speed_rows.py's gpu_do_bench), not the scripts' do_bench")
    parser.add_argument("--direct", action="store_true",
                        help=f"time {', '.join(DIRECT_OPS)} with tools/liger_speed_direct.py without trying "
                             "their scripts first (which fail on both sides at this release)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set for both sides")
    parser.add_argument("script_args", nargs="*", help="after --: arguments for every script")
    args = parser.parse_args(argv)
    if args.timer == "gpu" and args.all_rows:
        parser.error("--timer gpu times Liger's rows through tools/liger_speed_rows.py: leave out --all-rows")
    if args.merge:
        results = [r for path in args.merge for r in json.loads(path.read_text())]
    else:
        if not SCRIPTS.is_dir():
            print(f"no Liger benchmark scripts in {SCRIPTS}: run 'python tools/liger_acceptance.py prepare "
                  "--mirror DIR' where there is network, and carry .liger/src", file=sys.stderr)
            return 2
        ops = selected_ops(args.ops)
        if ops is None:
            return 2
        results = []
        for op in ops:
            results.append(run_op(op, args))
            print(summary(results[-1:]).splitlines()[-1], flush=True)
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    text = summary(results) + "\n\n" + details(results)
    print(text)
    if args.report:
        args.report.write_text(text + "\n")
    ratios = [t / m for r in results for _, t, m in pairs(r)]
    return 0 if ratios and min(ratios) >= args.target else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
