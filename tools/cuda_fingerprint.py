"""Fingerprint the CUDA that mytriton generates, to show a refactor of the
back end changes no kernel.

Three sources of kernels:

- ``static``: every sample (with its signature), every lit input (``.py``
  and ``.ssa`` files under tests/lit) and every Triton-style kernel file
  that compiles with default options, each for sm_90 and sm_80 (wgmma and
  mma.sync paths) with 4 and 8 warps;
- ``pytest``: the given test files run under a plugin that records the
  CUDA of every ``compiler.emit_cuda`` call (keyed by test id and call number) and,
  through ``MYTRITON_DUMP_DIR``, of every kernel the JIT compiles;
- ``liger``: the launches of Liger-Kernel's ops recorded in
  tools/liger_kernels.json, compiled from .liger/src as the CLI compiles them
  (``tools/liger_acceptance.py prepare`` makes it): which ops' tests a change
  of the back end calls for.

Each kernel's key maps to the sha256 of its CUDA text, or of the error it
raised (message and location). Usage::

    python tools/cuda_fingerprint.py record baseline.json            # static kernels
    python tools/cuda_fingerprint.py record baseline.json --pytest tests/test_wgmma.py ...
    python tools/cuda_fingerprint.py record liger.json --no-static --liger
    python tools/cuda_fingerprint.py compare baseline.json now.json

``compare`` exits 1 when a kernel present in both differs, and lists the
keys found in only one of them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = [("sm_90", 4), ("sm_90", 8), ("sm_80", 4), ("sm_80", 8)]
# Set in the pytest processes the plugin records from: the JSON-lines file to append to.
RECORD_ENV = "MYTRITON_FINGERPRINT_FILE"
TEXTS_ENV = "MYTRITON_FINGERPRINT_TEXTS"  # and the folder it writes each kernel's CUDA to (--keep-texts)


# pytest's temporary directories differ from run to run (and a test's own is
# numbered by the tests of its worker before it); kernels written there name
# them in their CUDA (the header's source, the first comment).
PYTEST_TEMP = re.compile(r"/[^\s\"]*?/pytest-of-[^/]+/pytest-\d+(/popen-gw\d+)?(/[^/\s\"]*?\d+)?")
# and tempfile's own folders (tempfile.mkdtemp, TemporaryDirectory): /tmp/tmpXXXXXXXX
TEMPFILE = re.compile(r"/[^\s\"]*?/tmp[a-z0-9_]{8}(?=/)")


def digest(text: str | bytes) -> str:
    if isinstance(text, str):  # the checkout's own path too: kernels name their files
        text = TEMPFILE.sub("<tmp>", PYTEST_TEMP.sub("<tmp>", text)).replace(str(ROOT), "<root>")
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:20]


def outcome(make) -> str:
    from mytriton.diagnostics import CompileError

    try:
        return digest(make())
    except CompileError as err:
        return "error:" + digest(f"{err.loc}: {err.message}")


def static_kernels() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from sample_signatures import SAMPLE_SIGNATURES

    from mytriton import compiler
    from mytriton.diagnostics import CompileError
    from mytriton.compiler import Options

    found: dict[str, str] = {}
    sources = [(p, SAMPLE_SIGNATURES.get(p.stem)) for p in sorted((ROOT / "samples").glob("*.py"))
               if p.stem != "demo"]
    sources += [(p, None) for p in sorted((ROOT / "tests" / "triton_style").glob("*.py"))
                if not p.stem.startswith(("_", "test_"))]
    sources += [(p, None) for p in sorted((ROOT / "tests" / "lit").rglob("*.py")) if p.name != "lit.cfg.py"]
    ssa_files = sorted((ROOT / "tests" / "lit").rglob("*.ssa"))
    for arch, warps in VARIANTS:
        for path, signature in sources:
            rel = path.relative_to(ROOT).as_posix()
            options = Options(signature=signature, arch=arch, num_warps=warps)
            found[f"{rel}|{arch}|{warps}"] = outcome(
                lambda: compiler.compile_source(path.read_text(), rel, "cuda", options))
        for path in ssa_files:
            rel = path.relative_to(ROOT).as_posix()
            try:
                kernel = compiler.read_ssa(path.read_text(), rel)
            except CompileError:
                continue  # a parser test's malformed input
            options = Options(arch=arch, num_warps=warps)
            found[f"{rel}|{arch}|{warps}"] = outcome(lambda: compiler.to_cuda(kernel, options))
    return found


def liger_kernels() -> dict[str, str]:
    """Each recorded Liger launch, keyed ``liger/<file>:<kernel>|<signature>|<defines>|<warps>``."""
    from liger_acceptance import KERNELS, SOURCE  # (tools/ is on sys.path: this file's folder)

    from mytriton import compiler
    from mytriton.compiler import Options
    from mytriton.deep_stack import run_deep  # as the CLI compiles: Liger's deep expressions
    from mytriton.frontend.stages import parse_define

    found: dict[str, str] = {}
    if not (SOURCE / "src").is_dir():
        raise SystemExit(f"no Liger source in {SOURCE}: run 'python tools/liger_acceptance.py prepare --mirror DIR'")
    for entry in json.loads(KERNELS.read_text()):
        path = SOURCE / "src" / "liger_kernel" / "ops" / entry["file"]
        defines = dict(parse_define(f"{name}={value}") for name, value in entry["defines"].items())
        options = Options(kernel=entry["kernel"], signature=entry["signature"], defines=defines,
                          num_warps=entry["num_warps"])
        key = "|".join([f"liger/{entry['file']}:{entry['kernel']}", entry["signature"],
                        ",".join(f"{n}={v}" for n, v in sorted(entry["defines"].items())), str(entry["num_warps"])])
        found[key] = outcome(lambda: run_deep(compiler.compile_source, path.read_text(), str(path), "cuda", options))
    return found


def kernels_from_tests(files: list[str], workers: int, keep_texts: str | None = None) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as scratch:
        record = Path(scratch) / "record.jsonl"
        env = dict(os.environ, **{RECORD_ENV: str(record), "MYTRITON_DUMP_DIR": str(Path(scratch) / "dumps")})
        if keep_texts:
            Path(keep_texts).mkdir(parents=True, exist_ok=True)
            env[TEXTS_ENV] = str(Path(keep_texts).resolve())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tools"), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "cuda_fingerprint", *files]
        if workers > 1:
            command += ["-n", str(workers)]
        subprocess.run(command, cwd=ROOT, env=env, check=False)
        found = {}
        for line in record.read_text().splitlines() if record.exists() else []:
            key, value = json.loads(line)
            found[key] = value
        return found


# ---- the pytest plugin (loaded with -p cuda_fingerprint) --------------------------------------

def pytest_configure(config) -> None:
    if not os.environ.get(RECORD_ENV):
        return
    from mytriton import compiler

    original = compiler.emit_cuda
    state = {"test": "<collection>", "calls": 0}

    def recording(kernel, *args, **kwargs):
        from mytriton.diagnostics import CompileError

        state["calls"] += 1
        key = f"{state['test']}#{state['calls']}"
        try:
            text = original(kernel, *args, **kwargs)
        except CompileError as err:
            _append(key, "error:" + digest(f"{err.loc}: {err.message}"))
            raise
        _append(key, digest(text))
        keep = os.environ.get(TEXTS_ENV)
        if keep:  # the text itself, to diff a changed kernel
            name = re.sub(r"[^A-Za-z0-9_.#-]+", "_", key)[-200:]
            Path(keep, name + ".cu").write_text(text)
        return text

    compiler.emit_cuda = recording
    config._fingerprint_state = state


def pytest_runtest_setup(item) -> None:
    state = getattr(item.config, "_fingerprint_state", None)
    if state is not None:
        state["test"], state["calls"] = item.nodeid, 0


def _append(key: str, value: str) -> None:
    with open(os.environ[RECORD_ENV], "a") as out:
        out.write(json.dumps([key, value]) + "\n")


# ---- the command ------------------------------------------------------------------------------------

def in_any_order(prints: dict[str, str]) -> dict[str, str]:
    """A test's kernels (``test id#N``, N in the order they were compiled)
    numbered again in the order of their fingerprints: an autotuner compiles
    its configs at once, and which finishes first is not the kernels' business."""
    groups: dict[str, list[str]] = {}
    out = {}
    for key, value in prints.items():
        test, mark, number = key.rpartition("#")
        if mark and number.isdigit():
            groups.setdefault(test, []).append(value)
        else:
            out[key] = value
    for test, values in groups.items():
        for number, value in enumerate(sorted(values), 1):
            out[f"{test}#{number}"] = value
    return out


def compare(before: dict[str, str], after: dict[str, str]) -> int:
    before, after = in_any_order(before), in_any_order(after)
    common = sorted(set(before) & set(after))
    changed = [k for k in common if before[k] != after[k]]
    for key in changed:
        print(f"CHANGED {key}: {before[key]} -> {after[key]}")
    for key in sorted(set(before) - set(after)):
        print(f"only before: {key}")
    for key in sorted(set(after) - set(before)):
        print(f"only after: {key}")
    errors = sum(1 for k in common if before[k].startswith("error:"))
    print(f"{len(common)} kernels in both ({errors} of them errors), {len(changed)} changed, "
          f"{len(set(before) - set(after))} only before, {len(set(after) - set(before))} only after")
    ops = liger_ops(changed)
    if ops:
        print(f"Liger ops whose kernels changed (liger_acceptance.py --ops): {','.join(ops)}")
    return 1 if changed else 0


def liger_ops(keys: list[str]) -> list[str]:
    """The Liger ops (liger_acceptance.OPS) whose kernel files the keys
    ``liger/<file>:...`` name: the op a file is named after
    (``fused_moe_kernels.py``: fused_moe), else the file itself."""
    from liger_acceptance import OPS

    found: dict[str, None] = {}
    for key in keys:
        if not key.startswith("liger/"):
            continue
        stem = key[len("liger/"):].split(":", 1)[0].removesuffix(".py")
        named = [op for op in OPS if stem == op or stem.startswith(op + "_")]
        found[max(named, key=len) if named else f"{stem}.py"] = None
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="write the fingerprints of every kernel to a JSON file")
    rec.add_argument("output")
    rec.add_argument("--pytest", nargs="+", metavar="TEST_FILE", help="record the CUDA these tests generate")
    rec.add_argument("--no-static", action="store_true", help="skip the samples, lit and Triton-style kernels")
    rec.add_argument("--liger", action="store_true", help="add Liger's recorded launches (tools/liger_kernels.json)")
    rec.add_argument("-n", type=int, default=2, help="pytest-xdist workers (default 2)")
    rec.add_argument("--keep-texts", metavar="DIR", help="also write each test kernel's CUDA into DIR")
    rec.add_argument("--select", metavar="EXPR", help="pytest's -m marker expression (\"not nvcc\" skips the builds)")
    cmp = sub.add_parser("compare", help="exit 1 if a kernel in both files changed")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args()
    if args.command == "compare":
        return compare(json.loads(Path(args.before).read_text()), json.loads(Path(args.after).read_text()))
    found = {} if args.no_static else static_kernels()
    if args.liger:
        found.update(liger_kernels())
    if args.pytest:
        found.update(kernels_from_tests(args.pytest + (["-m", args.select] if args.select else []), args.n, args.keep_texts))
    Path(args.output).write_text(json.dumps(found, indent=0, sort_keys=True) + "\n")
    print(f"{len(found)} kernels, {sum(v.startswith('error:') for v in found.values())} of them errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
