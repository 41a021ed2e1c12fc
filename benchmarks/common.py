"""Shared benchmark plumbing: timing with CUDA events, and running the same
kernel source under Triton (imports swapped) in the same process."""
from __future__ import annotations

import importlib.util
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


def load_sample(name: str):
    return load_module(ROOT / "samples" / f"{name}.py", f"mytriton_{name}")


def load_as_triton(name: str, variant: str = "", path: Path | None = None):
    """The sample's source (or the file at ``path``) with mytriton's imports
    replaced by Triton's: the same kernel, compiled by Triton. ``variant``
    changes the source's hash (a comment), so each variant gets its own Triton
    compilation."""
    source = (path or ROOT / "samples" / f"{name}.py").read_text()
    source = source.replace("import mytriton.language as tl", "import triton.language as tl")
    source = source.replace("import mytriton\n", "import triton\n").replace("@mytriton.jit", "@triton.jit")
    source = source.replace("import mytriton as triton\n", "import triton\n")
    source = source.replace("mytriton.", "triton.")
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


def timing_columns(flops: float, results: dict[str, float], ms_width: int = 11) -> str:
    """mytriton's milliseconds and TFLOP/s, then, where Triton ran, its
    TFLOP/s and mytriton's ratio to it (``results``: milliseconds by name)."""
    ms = results["mytriton"]
    line = f"{ms:>{ms_width}.3f}  {flops / ms / 1e9:>7.1f}"
    if "triton" in results:
        line += f"  {flops / results['triton'] / 1e9:>14.1f}  {results['triton'] / ms:>5.2f}"
    return line


def triton_available() -> bool:
    try:
        import triton  # noqa: F401

        return True
    except Exception:
        return False
