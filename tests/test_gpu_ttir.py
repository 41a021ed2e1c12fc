"""On the H200: Triton's own build of each sample's TTIR (``--emit=ttir``,
compiled by ``triton.compile``, launched on torch tensors) stores the same
results as mytriton's CUDA and as NumPy, on the inputs of tests/sample_cases.py
(random non-zero data, ragged sizes, a zero-trip loop). Skipped without a GPU,
Triton or torch. Checked against Triton 3.9.0.

Triton lowers ``/`` (arith.divf) and ``tl.exp`` (math.exp) on f32 to
approximate instructions and takes TF32 operands as the tensor cores read
them, where mytriton's CUDA divides correctly rounded and rounds TF32 with
cvt.rna: results agree within the case's tolerance (twice it between the two
GPU builds), not bit for bit; integer outputs agree exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import SAMPLES, load_sample
from mytriton import pipeline
from mytriton.pipeline import Options
from sample_cases import CASES
from ttir_check import NUM_WARPS, triton_compile

pytestmark = pytest.mark.gpu

_POINTEE = {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16", np.dtype(np.int32): "i32",
            np.dtype(np.int64): "i64", np.dtype(np.float64): "fp64"}


def signature_of(args: list) -> str:
    """Triton's signature of the launch arguments: ``*fp32`` for an f32 array, ``i32`` for a Python int."""
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append("*" + _POINTEE[a.dtype])
        elif isinstance(a, float):
            parts.append("fp32")
        else:
            parts.append("i32")
    return ", ".join(parts)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tritons_build_of_the_ttir_matches_mytritons_cuda(name, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    case = CASES[name]
    args, expected = case.make(np.random.default_rng(7))
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(load_sample(case.sample), case.kernel)[case.grid](*ours, backend="cuda", **case.meta)

    defines = {k: v for k, v in case.meta.items() if k != "num_warps"}
    options = Options(kernel=case.kernel, defines=defines, signature=signature_of(args))
    source = (SAMPLES / f"{case.sample}.py").read_text()
    kernel = pipeline.source_to_ssa(source, f"samples/{case.sample}.py", options)
    compiled = triton_compile(pipeline.emit_ttir(kernel), tmp_path, case.meta.get("num_warps", NUM_WARPS))
    meta = {**{p.name: a for p, a in zip(kernel.params, args)}, **kernel.constexprs}
    grid = tuple(case.grid(meta)) + (1,) * (3 - len(case.grid(meta)))
    tensors = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    compiled[grid](*tensors)
    torch.cuda.synchronize()

    for label, reference in expected.items():
        index = int(label.split("#")[1])
        theirs = tensors[index].cpu().numpy()
        if theirs.dtype.kind in "iu":
            np.testing.assert_array_equal(theirs, ours[index], err_msg=f"{name}: {label}, Triton vs mytriton")
            continue
        np.testing.assert_allclose(theirs, reference, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{name}: {label}, Triton vs NumPy")
        np.testing.assert_allclose(theirs, ours[index], rtol=2 * case.rtol, atol=2 * case.atol,
                                   err_msg=f"{name}: {label}, Triton vs mytriton's CUDA")
