"""Run the Triton-style kernel files with real Triton, through the same
cases and NumPy references as test_triton_style.py: a check of the kernel
files and of the references that does not depend on mytriton, so that a
kernel waiting in NEEDS is known to be right before mytriton runs it.

On a machine with a GPU, torch and triton (the H200 has them):

    python tests/triton_style/_with_triton.py [NAME ...]

Each file is copied to a temporary folder with its two import lines turned
back into Triton's (``import triton``, ``import triton.language as tl``);
NumPy arrays passed to a launch are copied to CUDA tensors and back, which
is all the host code needs. The files in EXACT_WITH_MYTRITON (dropout and
random_numbers: Philox random numbers) are run with mytriton too, in the
interpreter and, where PyCUDA sees the GPU, on it, and their outputs must
equal Triton's bit for bit (randn within its tolerance, its ulps printed). Prints one line per kernel file; exit status 1 if any failed. Not a
pytest module (pytest runs test_*.py only).
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests/: the NumPy references (philox_reference)
sys.path.insert(0, str(HERE.parents[1]))  # mytriton, for test_triton_style's imports

# Kernel files whose outputs must also equal mytriton's, on each backend
# mytriton has here: bit for bit where the case's tolerance is 0 (Philox's
# integers, rand, dropout), else within it (randn: the backend's log, cos).
EXACT_WITH_MYTRITON = ("dropout", "random_numbers")


def _patch_triton_for_numpy() -> None:
    """Launches take NumPy arrays: copied to the GPU, run, copied back."""
    import numpy as np
    import torch
    import triton
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
    if hasattr(triton, "set_allocator"):
        # A kernel that makes tensor descriptors (descriptor_matmul: tl.make_tensor_descriptor)
        # writes its TMA descriptors to global scratch memory, which Triton asks the host for.
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))


def load_with_triton(name: str, folder: Path):
    text = (HERE / f"{name}.py").read_text()
    text = text.replace("import mytriton as triton\n", "import triton\n")
    text = text.replace("import mytriton.language as tl\n", "import triton.language as tl\n")
    text = text.replace("from mytriton.tools.", "from triton.tools.")
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"with_triton_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mytriton_backends() -> list[str]:
    from mytriton.runtime.cuda_driver import cuda_available

    return ["interp", "cuda"] if cuda_available() else ["interp"]


def compare_with_mytriton(name: str, with_triton, seed: int) -> list[str]:
    """Run ``name``'s case with mytriton on each backend and check that every
    output equals Triton's: exactly where the case's tolerance is 0, else
    within it (the largest difference in f32 ulps is printed); the backends
    compared."""
    import os

    import numpy as np

    import test_triton_style as tier
    from mytriton.testing import assert_close

    backends = mytriton_backends()
    saved = os.environ.get("MYTRITON_BACKEND")
    try:
        for backend in backends:
            os.environ["MYTRITON_BACKEND"] = backend
            ours = tier.CASES[name](tier.load(name), np.random.default_rng(seed))
            for (label, got, _, atol, rtol), (_, theirs, _, _, _) in zip(ours, with_triton):
                message = f"{name}: {label}: mytriton ({backend}) differs from Triton"
                if atol == 0 and rtol == 0:
                    np.testing.assert_array_equal(got, theirs, err_msg=message)
                    continue
                assert_close(got, theirs, atol=atol, rtol=rtol, err_msg=message)
                if got.dtype == np.float32:
                    print(f"        {name}: {label}: mytriton ({backend}) within "
                          f"{_ulps_apart(got, theirs)} ulps of Triton")
    finally:
        if saved is None:
            os.environ.pop("MYTRITON_BACKEND", None)
        else:
            os.environ["MYTRITON_BACKEND"] = saved
    return backends


def _ulps_apart(a, b) -> int:
    from philox_reference import ulps_apart

    return int(ulps_apart(a, b).max(initial=0))


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
                seed = sorted(tier.CASES).index(name)
                results = tier.CASES[name](module, np.random.default_rng(seed))
                for label, got, expected, atol, rtol in results:
                    assert_close(got, expected, atol=atol, rtol=rtol, err_msg=f"{name}: {label}")
                if name in EXACT_WITH_MYTRITON:
                    backends = compare_with_mytriton(name, results, seed)
                    print(f"ok      {name} (equal to mytriton's outputs: {', '.join(backends)})")
                else:
                    print(f"ok      {name}")
            except Exception:
                failed += 1
                print(f"FAILED  {name}\n{traceback.format_exc(limit=6)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
