"""Run the Triton-style kernel files with real Triton, through the same
cases and NumPy references as test_triton_style.py: a check of the kernel
files and of the references that does not depend on mytriton, so that a
kernel waiting in NEEDS is known to be right before mytriton runs it.

On a machine with a GPU, torch and triton (the H200 has them):

    python tests/triton_style/_with_triton.py [NAME ...]

Each file is copied to a temporary folder with its two import lines turned
back into Triton's (``import triton``, ``import triton.language as tl``);
NumPy arrays passed to a launch are copied to CUDA tensors and back, which
is all the host code needs. Prints one line per kernel file; exit status 1
if any failed. Not a pytest module (pytest runs test_*.py only).
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))  # mytriton, for test_triton_style's imports


def _patch_triton_for_numpy() -> None:
    """Launches take NumPy arrays: copied to the GPU, run, copied back."""
    import numpy as np
    import torch
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.jit import JITFunction, KernelInterface

    def to_device(value):
        return torch.from_numpy(value).cuda() if isinstance(value, np.ndarray) else value

    def with_device_arrays(run, args, kwargs):
        pairs = []

        def convert(value):
            device = to_device(value)
            if device is not value:
                pairs.append((value, device))
            return device

        result = run(*[convert(a) for a in args], **{k: convert(v) for k, v in kwargs.items()})
        torch.cuda.synchronize()
        for host, device in pairs:
            host[...] = device.cpu().numpy()
        return result

    def launcher(original):
        def getitem(self, grid):
            run = original(self, grid)
            return lambda *args, **kwargs: with_device_arrays(run, args, kwargs)
        return getitem

    KernelInterface.__getitem__ = launcher(KernelInterface.__getitem__)
    CompiledKernel.__getitem__ = launcher(CompiledKernel.__getitem__)
    original_warmup = JITFunction.warmup

    def warmup(self, *args, grid, **kwargs):
        return original_warmup(self, *[to_device(a) for a in args], grid=grid,
                               **{k: to_device(v) for k, v in kwargs.items()})

    JITFunction.warmup = warmup


def load_with_triton(name: str, folder: Path):
    text = (HERE / f"{name}.py").read_text()
    text = text.replace("import mytriton as triton\n", "import triton\n")
    text = text.replace("import mytriton.language as tl\n", "import triton.language as tl\n")
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"with_triton_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(names: list[str]) -> int:
    import numpy as np

    import test_triton_style as tier
    from mytriton.testing import assert_close

    _patch_triton_for_numpy()
    tier.F32_DOT_TOL = 3e-2  # Triton's f32 tl.dot is TF32 by default
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for name in names or sorted(tier.CASES):
            try:
                module = load_with_triton(name, Path(folder))
                rng = np.random.default_rng(sorted(tier.CASES).index(name))
                for label, got, expected, atol, rtol in tier.CASES[name](module, rng):
                    assert_close(got, expected, atol=atol, rtol=rtol, err_msg=f"{name}: {label}")
                print(f"ok      {name}")
            except Exception:
                failed += 1
                print(f"FAILED  {name}\n{traceback.format_exc(limit=6)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
