"""Liger-Kernel's own unit tests, op by op, on real Triton and on mytriton
(``triton`` resolved to mytriton by ``pytest -p mytriton.as_triton``), in one
invocation: Triton code as it is published, run unchanged.

Liger-Kernel (github.com/linkedin/Liger-Kernel, the release below, on the
package index as liger-kernel) is a library of Triton kernels for training
LLMs. Its tests under test/transformers/ check each op against PyTorch,
forward and backward. OPS lists the ops under liger_kernel/ops/ that run on
plain Triton on one H100/H200, with their test files; left out are the ops
that need CUTLASS DSL or cuTile (cute/, cutedsl/, cutile/,
fused_linear_scaled_cross_entropy), several GPUs (vocab_parallel_cross_entropy,
and the dtensor tests inside the listed files) or an NPU (backends/_ascend).

For each op the same test files run twice, each in its own pytest process,
from Liger's source folder: once as they are (real Triton), once with
``-p mytriton.as_triton``. Results are read from pytest's JUnit XML, compared
test by test, and printed as a table (tests run and passed on each, and the
tests that pass on Triton but not on mytriton); ``--json`` keeps every
outcome. Exit status 0 when mytriton passes every test Triton passes.

What it needs (all in ignored folders, so they travel with the working tree):

- ``.liger/src``: Liger's source at the release tag (src/ and test/), made by
  ``python tools/liger_acceptance.py prepare --mirror DIR`` from a clone;
- ``.liger/wheels``: the wheels Liger's tests need beyond what the GPU machine
  has (Python 3.12, torch, triton, transformers, pytest, numpy): pytest
  plugins its tests and this runner use, downloaded by ``prepare``; they are
  installed into ``.liger/site`` (``--target``, nothing global) on first use.

On the H200, from the repository root (the device tool's ``carry``:
``[".liger/src", ".liger/wheels"]``), all ops, four at a time:

    python tools/liger_acceptance.py -j 4 -n 4 --json $OUT/liger.json --report $OUT/liger.md

or a few ops per command, the table built from every run's JSON at the end:

    python tools/liger_acceptance.py --ops rms_norm,layer_norm,swiglu --json $OUT/a.json
    python tools/liger_acceptance.py --merge a.json b.json ... --report table.md

``--sample N`` keeps N tests per file (every k-th, the same on both sides),
``--timeout S`` bounds each test (pytest-timeout), ``-n N`` runs N pytest
workers per side (pytest-xdist; nvcc builds are what take mytriton's time),
``--env NAME=VALUE`` sets a variable for both sides. ``cli`` compiles every
kernel of liger_kernel/ops through ``mytriton compile`` (``--emit=ptx``: and
nvcc) with the launches recorded in tools/liger_kernels.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGER = ROOT / ".liger"
SOURCE = LIGER / "src"
WHEELS = LIGER / "wheels"
SITE = LIGER / "site"

# The release: a tag of the repository that is on the package index.
RELEASE = "v0.8.2"

# op under liger_kernel/ops/ -> its test files under test/transformers/.
OPS: dict[str, tuple[str, ...]] = {
    "attn_res": ("test_attn_res.py",),
    "cross_entropy": ("test_cross_entropy.py",),
    "dyt": ("test_dyt.py",),
    "fused_add_rms_norm": ("test_fused_add_rms_norm.py",),
    "fused_linear_cross_entropy": ("test_fused_linear_cross_entropy.py",),
    "fused_linear_jsd": ("test_fused_linear_jsd.py",),
    "fused_moe": ("test_fused_moe.py",),
    "fused_neighborhood_attention": ("test_fused_neighborhood_attention.py",),
    "geglu": ("test_geglu.py",),
    "group_norm": ("test_group_norm.py",),
    "grpo_loss": ("test_grpo_loss.py",),
    "jsd": ("test_jsd.py",),
    "kl_div": ("test_kl_div.py",),
    "layer_norm": ("test_layer_norm.py",),
    "llama4_rope": ("test_llama4_rope.py",),
    "mhc": ("test_mhc.py",),
    "modulated_rms_norm": ("test_modulated_rms_norm.py",),
    "multi_token_attention": ("test_multi_token_attention.py",),
    "poly_norm": ("test_poly_norm.py",),
    "qwen2vl_mrope": ("test_qwen2vl_mrope.py",),
    "relu_squared": ("test_relu_squared.py",),
    "rms_norm": ("test_rms_norm.py",),
    "rope": ("test_rope.py",),
    "softmax": ("test_softmax.py",),
    "sparsemax": ("test_sparsemax.py",),
    "swiglu": ("test_swiglu.py",),
    "tiled_mlp": ("test_tiled_mlp.py",),
    "tvd": ("test_tvd.py",),
    "experimental/embedding": ("test_embedding.py",),
    "experimental/mm_int8int2": ("test_mm_int8int2.py",),
}

# Tests inside the listed files that need several GPUs (they spawn one process per GPU).
SEVERAL_GPUS = "not dtensor"

# Wheels Liger's tests and this runner use beyond the GPU machine's packages:
# module -> distribution. flaky reruns (Liger marks some tests flaky), timeouts, workers.
PLUGINS = {"pytest_rerunfailures": "pytest-rerunfailures", "pytest_timeout": "pytest-timeout",
           "xdist": "pytest-xdist", "execnet": "execnet"}

SIDES = ("triton", "mytriton")


# ---- preparing .liger (on a machine with network) -----------------------------------------


def prepare(mirror: Path, tag: str, python_version: str) -> None:
    """Liger's source at ``tag`` from a clone (``git archive``: src/, test/
    (the grpo_loss benchmark imports its model from test/chunked_loss), the
    benchmark scripts and its licence), and the plugin wheels for the GPU
    machine's Python."""
    if SOURCE.exists():
        shutil.rmtree(SOURCE)
    SOURCE.mkdir(parents=True)
    paths = ["src", "test/__init__.py", "test/conftest.py", "test/utils.py", "test/transformers",
             "test/chunked_loss", "LICENSE",
             "pyproject.toml", "setup.py", "benchmark/__init__.py", "benchmark/scripts"]
    archive = subprocess.run(["git", "-C", str(mirror), "archive", tag, *paths], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(SOURCE)], input=archive.stdout, check=True)
    WHEELS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--implementation", "cp",
                    "--platform", "manylinux_2_28_x86_64", "--dest", str(WHEELS), *PLUGINS.values()], check=True)


def plugin_path() -> str:
    """A folder holding the plugins this Python lacks, installed from
    .liger/wheels without touching the environment (pip --target)."""
    missing = [dist for module, dist in PLUGINS.items() if not available(module, str(SITE))]
    import pytest

    if tuple(int(part) for part in pytest.__version__.split(".")[:2] if part.isdigit()) < (8, 2):
        # its wheel needs pytest 8.2; without it Liger's flaky marks only warn, on both sides
        missing = [dist for dist in missing if dist != "pytest-rerunfailures"]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                        "--find-links", str(WHEELS), "--target", str(SITE), *missing], check=True)
    return str(SITE)


# ---- running ----------------------------------------------------------------------------------


def available(module: str, plugins: str) -> bool:
    """Whether ``module`` imports here or from the plugins folder."""
    import importlib.machinery
    import importlib.util

    return (importlib.util.find_spec(module) is not None
            or importlib.machinery.PathFinder.find_spec(module, [plugins]) is not None)


# A pytest plugin (written beside the run) that keeps every k-th of a file's
# tests, N in all: the same tests on both sides.
SAMPLER = '''
import os
from collections import defaultdict


def pytest_collection_modifyitems(config, items):
    keep = int(os.environ["LIGER_ACCEPTANCE_SAMPLE"])
    by_file = defaultdict(list)
    for item in items:
        by_file[item.nodeid.split("::")[0]].append(item)
    kept = []
    for tests in by_file.values():
        step = max(1, len(tests) // keep)
        kept += tests[::step][:keep]
    dropped = [item for item in items if item not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
'''


def run_side(side: str, files: list[str], workdir: Path, args: argparse.Namespace) -> dict[str, str]:
    """Run ``files`` on one side; each test's outcome (passed, failed, error,
    skipped) by its id."""
    report = workdir / f"{side}.xml"
    select = f"({args.select}) and {SEVERAL_GPUS}" if args.select else SEVERAL_GPUS
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", select,
               f"--junitxml={report}", "-o", "junit_family=xunit1", *(f"test/transformers/{f}" for f in files)]
    if side == "mytriton":
        command[3:3] = ["-p", "mytriton.as_triton"]
    if args.timeout and available("pytest_timeout", args.plugins):
        command += [f"--timeout={args.timeout}"]
    if args.workers > 1:
        command += ["-n", str(args.workers)]
    env = dict(os.environ)
    paths = [str(SOURCE / "src"), str(SOURCE), str(ROOT), args.plugins]
    if args.sample:
        (workdir / "liger_sampler.py").write_text(SAMPLER)
        paths.append(str(workdir))
        command[3:3] = ["-p", "liger_sampler"]
        env["LIGER_ACCEPTANCE_SAMPLE"] = str(args.sample)
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("MYTRITON_CACHE_DIR", str(LIGER / "cache"))
    env.update(dict(item.split("=", 1) for item in args.env))
    log = workdir / f"{side}.log"
    with open(log, "w") as handle:
        subprocess.run(command, cwd=SOURCE, env=env, stdout=handle, stderr=subprocess.STDOUT,
                       timeout=args.file_timeout)
    return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    if not report.exists():
        return {}
    found: dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        found[name] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                       else "skipped" if "skipped" in kinds else "passed")
    return found


def run_op(op: str, args: argparse.Namespace) -> dict:
    files = list(OPS[op])
    result: dict = {"op": op, "files": files}
    with tempfile.TemporaryDirectory(prefix="liger-") as folder:
        workdir = Path(folder)
        for side in SIDES:
            try:
                result[side] = run_side(side, files, workdir, args)
            except subprocess.TimeoutExpired:
                result[side] = outcomes(workdir / f"{side}.xml")
                result[f"{side}_timed_out"] = True
            log = (workdir / f"{side}.log").read_text(errors="replace") if (workdir / f"{side}.log").exists() else ""
            result[f"{side}_tail"] = log[-4000:]
    return result


# ---- the CLI on the library's kernel files ------------------------------------------------------

# Each @triton.jit kernel of liger_kernel/ops with the signature, constexprs and warps of a
# launch: recorded (JITFunction.specialize's metadata) from Liger's tests and host functions run
# in mytriton's interpreter on CPU tensors.
KERNELS = Path(__file__).with_name("liger_kernels.json")

# The @triton.jit functions of liger_kernel/ops that are not kernels to compile on their own.
NOT_KERNELS = {
    ("fused_moe_kernels.py", "_keyed_add"): "a helper (it returns a value): compiled inside the kernels calling it",
    ("swiglu.py", "silu"): "a helper (it returns a value): compiled inside the kernels calling it",
    ("softmax.py", "_softmax_multi_block_forward_kernel"):
        "never launched (calculate_settings makes BLOCK_SIZE >= n_cols); tl.float32(x) calls a dtype, which "
        "Triton refuses too ('dtype' object is not callable)",
    ("softmax.py", "_softmax_multi_block_backward_kernel"): "never launched, as the forward one",
}


def jit_functions() -> set[tuple[str, str]]:
    """Every @triton.jit function at the top level of liger_kernel/ops (and experimental/)."""
    import ast

    root = SOURCE / "src" / "liger_kernel" / "ops"
    found = set()
    for path in [*root.glob("*.py"), *(root / "experimental").glob("*.py")]:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any("triton.jit" in ast.unparse(d) for d in node.decorator_list):
                found.add((str(path.relative_to(root)), node.name))
    return found


def cli_compile(emit: str, only: str | None) -> list[tuple[dict, str]]:
    """``mytriton compile`` of each kernel of KERNELS as its file is, to
    ``emit``; each entry with its error (empty where it compiled)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    results = []
    for entry in json.loads(KERNELS.read_text()):
        if only and entry["file"].removesuffix(".py") not in only.split(","):
            continue
        path = SOURCE / "src" / "liger_kernel" / "ops" / entry["file"]
        command = [sys.executable, "-m", "mytriton", "compile", str(path), "-k", entry["kernel"],
                   "-s", entry["signature"], f"--emit={emit}", "--num-warps", str(entry["num_warps"]),
                   "-o", os.devnull]
        for name, value in entry["defines"].items():
            command += ["-D", f"{name}={value}"]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        error = "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[0]
        results.append((entry, error))
        print(f"{entry['file']}:{entry['kernel']} ({entry['signature'][:40]}...): {error or 'ok'}", flush=True)
    return results


# ---- the table ----------------------------------------------------------------------------------


def counts(found: dict[str, str]) -> tuple[int, int]:
    ran = [o for o in found.values() if o != "skipped"]
    return len(ran), sum(o == "passed" for o in ran)


def regressions(result: dict) -> list[str]:
    """Tests that pass on Triton and do not pass on mytriton."""
    triton, mine = result.get("triton", {}), result.get("mytriton", {})
    return sorted(t for t, o in triton.items() if o == "passed" and mine.get(t) != "passed")


def table(results: list[dict]) -> str:
    lines = ["| op | Triton: run | passed | mytriton: run | passed | pass on Triton, not on mytriton |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for result in results:
        t_run, t_passed = counts(result.get("triton", {}))
        m_run, m_passed = counts(result.get("mytriton", {}))
        timed_out = [side for side in SIDES if result.get(f"{side}_timed_out")]
        note = f" (timed out: {', '.join(timed_out)})" if timed_out else ""
        lines.append(f"| {result['op']}{note} | {t_run} | {t_passed} | {m_run} | {m_passed} | "
                     f"{len(regressions(result))} |")
    return "\n".join(lines)


def details(results: list[dict]) -> str:
    out = []
    for result in results:
        lost = regressions(result)
        if lost:
            out.append(f"\n{result['op']}: {len(lost)} test(s) pass on Triton and not on mytriton:")
            out += [f"  {name} ({result.get('mytriton', {}).get(name, 'not run')})" for name in lost[:20]]
            if len(lost) > 20:
                out.append(f"  ... and {len(lost) - 20} more (--json has them all)")
    return "\n".join(out)


def run_ops(ops: list[str], args: argparse.Namespace) -> list[dict]:
    """Each op's two sides, ``args.jobs`` ops at a time (most of an op's time
    is pytest importing torch and transformers, not the GPU); the JSON is
    rewritten as each op ends, so a run cut short keeps what it finished."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    results: list[dict] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in as_completed([pool.submit(run_op, op, args) for op in ops]):
            result = future.result()
            results.append(result)
            results.sort(key=lambda r: ops.index(r["op"]))
            print(table([result]).splitlines()[-1], flush=True)
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    return results


def selected_ops(listed: str | None) -> list[str] | None:
    """The ops of ``--ops`` (all of OPS without it); None, said on stderr, where one is unknown."""
    ops = listed.split(",") if listed else list(OPS)
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        print(f"unknown op(s): {', '.join(unknown)} (ops: {', '.join(OPS)})", file=sys.stderr)
        return None
    return ops


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    prep = sub.add_parser("prepare", help="make .liger/src and .liger/wheels (needs a clone and network)")
    prep.add_argument("--mirror", type=Path, required=True, help="a clone of linkedin/Liger-Kernel")
    prep.add_argument("--tag", default=RELEASE)
    prep.add_argument("--python-version", default="3.12", help="the GPU machine's Python")
    cli = sub.add_parser("cli", help="compile every kernel of liger_kernel/ops through the CLI (tools/liger_kernels.json)")
    cli.add_argument("--emit", default="cuda", help="the stage to reach (cuda; ptx needs nvcc)")
    cli.add_argument("--files", help="comma-separated op files (default: all), e.g. rms_norm,cross_entropy")
    parser.add_argument("--ops", help=f"comma-separated ops (default: all): {', '.join(OPS)}")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("--report", type=Path, help="write the table here too")
    parser.add_argument("--merge", type=Path, nargs="+", help="build the table from earlier --json files")
    parser.add_argument("--sample", type=int, default=0, help="keep N tests per file (0: all)")
    parser.add_argument("-k", "--select", help="only the tests pytest -k EXPR selects (both sides)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test (0: none)")
    parser.add_argument("--file-timeout", type=int, default=None, help="seconds per pytest run")
    parser.add_argument("-n", "--workers", type=int, default=1, help="pytest-xdist workers per side")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="ops run at once")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set for both sides (LIGER_FUSED_MOE_AUTOTUNE=0: one config instead of 32)")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.mirror, args.tag, args.python_version)
        return 0
    if args.command == "cli":
        listed = {(e["file"], e["kernel"]) for e in json.loads(KERNELS.read_text())}
        unlisted = sorted(jit_functions() - listed - set(NOT_KERNELS))
        for file, kernel in unlisted:
            print(f"{file}:{kernel}: no launch recorded in {KERNELS.name}")
        failed = [entry for entry, error in cli_compile(args.emit, args.files) if error]
        print(f"{len(failed)} kernel launch(es) the CLI did not compile to {args.emit}; {len(unlisted)} unlisted")
        return 1 if failed or unlisted else 0
    if args.merge:
        results = [r for path in args.merge for r in json.loads(path.read_text())]
    else:
        if not (SOURCE / "test" / "transformers").is_dir():
            print(f"no Liger source in {SOURCE}: run 'python tools/liger_acceptance.py prepare --mirror DIR' "
                  "where there is network, and carry .liger/src", file=sys.stderr)
            return 2
        ops = selected_ops(args.ops)
        if ops is None:
            return 2
        args.plugins = plugin_path()
        results = run_ops(ops, args)
    text = table(results) + "\n" + details(results)
    print(text)
    if args.report:
        args.report.write_text(text + "\n")
    return 0 if not any(regressions(r) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
