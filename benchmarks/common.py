"""Shared benchmark plumbing: timing with CUDA events, and running the same
kernel source under Triton (imports swapped) in the same process."""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_copy(path: Path, name: str):
    """The module at ``path`` loaded from a copy in a new directory: the same
    kernels, whose generated code names another file (so NVRTC, which keeps
    what it built in the process, builds them again, as a new kernel's are)."""
    copy = Path(tempfile.mkdtemp(prefix="mytriton-bench-copy-")) / path.name
    copy.write_text(path.read_text())
    return load_module(copy, name)


def load_sample(name: str):
    return load_module(ROOT / "samples" / f"{name}.py", f"mytriton_{name}")


def load_as_triton(name: str, variant: str = "", path: Path | None = None):
    """The sample's source (or the file at ``path``) with mytriton's imports
    replaced by Triton's: the same kernel, compiled by Triton. ``variant``
    changes the source's hash (a comment), so each variant gets its own Triton
    compilation. ``from mytriton.runtime.`` imports (host helpers) are kept."""
    source = (path or ROOT / "samples" / f"{name}.py").read_text()
    source = source.replace("import mytriton.language as tl", "import triton.language as tl")
    source = source.replace("import mytriton\n", "import triton\n").replace("@mytriton.jit", "@triton.jit")
    source = source.replace("import mytriton as triton\n", "import triton\n")
    # Host helpers imported from mytriton's runtime (grouped_gemm's `addressable`) have no
    # counterpart in Triton: those lines stay mytriton's; the kernels are Triton's all the same.
    source = "".join(line if line.startswith("from mytriton.runtime.") else line.replace("mytriton.", "triton.")
                     for line in source.splitlines(keepends=True))
    source += f"\n# variant: {variant}\n"
    directory = Path(tempfile.mkdtemp(prefix="mytriton-bench-"))
    path = directory / f"triton_{name}_{variant or 'default'}.py"
    path.write_text(source)
    return load_module(path, path.stem)


def time_cuda(fn, warmup: int = 5, repeat: int = 30, inner: int = 10) -> float:
    """Milliseconds per call of ``fn()``: the median over ``repeat`` samples,
    each timing ``inner`` back-to-back calls between two CUDA events (so the
    host's launch work overlaps the device's, as in a real program)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def time_interleaved(fns: dict, rounds: int = 1, **timing) -> dict:
    """Milliseconds per call of each of ``fns`` (name -> function): the
    median over ``rounds`` rounds, each timing every function once with
    ``time_cuda`` (``timing``: its arguments), the order turned by one each
    round. Sides timed one after the other in one run differ by the clock's
    drift between them (1-2 % on the H200 for a 0.3 ms kernel timed 100
    times): alternating them gives each side the same conditions."""
    names = list(fns)
    samples: dict = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(time_cuda(fns[name], **timing))
    return {name: statistics.median(times) for name, times in samples.items()}


def timing_columns(flops: float, results: dict[str, float], ms_width: int = 11) -> str:
    """mytriton's milliseconds and TFLOP/s, then, where Triton ran, its
    TFLOP/s and mytriton's ratio to it (``results``: milliseconds by name)."""
    ms = results["mytriton"]
    line = f"{ms:>{ms_width}.3f}  {flops / ms / 1e9:>7.1f}"
    if "triton" in results:
        line += f"  {flops / results['triton'] / 1e9:>14.1f}  {results['triton'] / ms:>5.2f}"
    return line


def cold_caches() -> None:
    """Empty compile caches for both compilers in this process, so that each
    kernel's first call compiles, as a new kernel's does (set before any
    kernel is loaded). NVRTC 13 also keeps what it compiled in the driver's
    compute cache (``~/.nv/ComputeCache``, across processes: a second run of
    the same kernels built in 0.05 s where the first took 0.5 s on the
    H200), which ``CUDA_CACHE_DISABLE`` turns off. The driver reads it once,
    when CUDA starts (torch's first question to the GPU, its name included),
    so a process whose CUDA has started cannot be made cold: that is refused,
    as its "first calls" would be the cache's."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("cold_caches() must run before CUDA starts: the driver reads CUDA_CACHE_DISABLE once")
    os.environ["MYTRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="mytriton-bench-cache-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-bench-cache-")
    os.environ["CUDA_CACHE_DISABLE"] = "1"


def recold_caches() -> None:
    """Empty both compilers' kernel caches again (``cold_caches`` made them),
    so that a kernel loaded anew compiles on its first call, as it did the
    first time: mytriton's directory wholly, Triton's but for what holds a
    shared object (its launcher and utilities, which a program builds once
    for all its kernels). Each side's in-process caches belong to the kernel
    object: load the kernel's module anew too, mytriton's from a copy
    (``load_copy``: NVRTC keeps what it built in the process, by the CUDA's
    text, which names the kernel's file)."""
    import shutil

    for entry in Path(os.environ["MYTRITON_CACHE_DIR"]).iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for entry in Path(os.environ["TRITON_CACHE_DIR"]).iterdir():
        if entry.is_dir() and not any(f.suffix == ".so" for f in entry.rglob("*")):
            shutil.rmtree(entry)


def first_call(fn) -> float:
    """Seconds from a kernel's first call to its result: the compile, the
    load and the run (both compilers' caches cold: ``cold_caches``)."""
    import time

    import torch

    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def first_call_line(mine: float, theirs: float | None) -> str:
    line = f"    first call: mytriton {mine:.2f} s"
    return line + (f", triton {theirs:.2f} s" if theirs is not None else "")


def triton_available() -> bool:
    try:
        import triton  # noqa: F401

        return True
    except Exception:
        return False


# ---- results as JSON, next to the printed table ----------------------------------------------

# Units where more is faster; the others (ms, us) are times.
HIGHER_IS_FASTER = ("GB/s", "TFLOP/s")


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="PATH", help="write the rows here too (default: "
                        "benchmarks/results/<script>.json); benchmarks/plot.py draws them")


class Results:
    """The rows a benchmark prints, kept as JSON so that runs can be compared
    and drawn (benchmarks/plot.py): each row a case, its unit, mytriton's
    figure and Triton's (None where Triton did not run), and whatever else the
    script measured. The file is rewritten after every row, so a run cut
    short keeps what it measured."""

    def __init__(self, script: str, args: argparse.Namespace) -> None:
        options = {k: v for k, v in vars(args).items() if k != "json"}
        # The GPU's name is asked for at the first write: asking starts CUDA, which
        # must wait for cold_caches.
        self.document = {"script": script, "options": options, "gpu": None,
                         "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                         "rows": []}
        default = ROOT / "benchmarks" / "results" / f"{script}.json"
        self.path = Path(args.json) if getattr(args, "json", None) else default

    def add(self, case: str, unit: str, mytriton: float, triton: float | None = None, **extra) -> None:
        self.document["rows"].append({"case": case, "unit": unit, "mytriton": mytriton, "triton": triton, **extra})
        self.write()

    def write(self) -> None:
        # Atomic, and a link, a device or a file's permissions given as --json stay as they are.
        from mytriton.output_files import write_output

        if self.document["gpu"] is None:
            self.document["gpu"] = gpu_name()

        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_output(str(self.path), json.dumps(self.document, indent=1) + "\n")


def speed_ratio(row: dict, against: str = "triton") -> float | None:
    """mytriton's speed over ``against``'s (Triton's) for a row (above 1:
    mytriton is faster); None where the row has no such figure."""
    mine, theirs = row.get("mytriton"), row.get(against)
    if not mine or not theirs:
        return None
    return mine / theirs if row.get("unit") in HIGHER_IS_FASTER else theirs / mine


def gpu_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else None
    except Exception:
        return None
