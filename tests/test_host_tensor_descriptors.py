"""Host tensor descriptors (``mytriton.tools.tensor_descriptor``, Triton's
``triton.tools.tensor_descriptor.TensorDescriptor``): a kernel argument that
the kernel reads as a descriptor, passed as its parts (base, shape, strides
but the last), with Triton's rules checked at the launch. The attention in
the fused-attention tutorial's current form runs in tests/triton_style
(attention_descriptors.py)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, kernel_source
from mytriton.diagnostics import CompileError
from mytriton.frontend.stages import parse_descriptor_type, split_signature
from mytriton.tools.tensor_descriptor import TensorDescriptor
from mytriton.types import F16, F32, I32, I64, DescriptorParam

SCALE = """
@mytriton.jit
def scale(x_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = x_desc.load([pid_m * BM, pid_n * BN])
    out_desc.store([pid_m * BM, pid_n * BN], x * 2 + 1)
"""


@pytest.fixture
def scale(kernel_module):
    return kernel_module(SCALE).scale


def test_a_descriptor_argument_reads_and_writes_its_tensor_out_of_bounds_too(scale, rng):
    m, n = 50, 40  # ragged: the last blocks read zeros past the edge and drop their writes there
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    scale[(4, 3)](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(out, [16, 16]),
                  BM=16, BN=16, backend="interp")
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_the_kernel_takes_the_descriptors_parts_with_their_alignment(scale, rng):
    x = rng.standard_normal((32, 48)).astype(np.float16)
    compiled = scale.warmup(TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(x, [16, 16]),
                            BM=16, BN=16, grid=(1,), backend="interp")
    assert compiled.metadata["signature"] == "tensordesc<fp16[16, 16]>, tensordesc<fp16[16, 16]>"
    header = compiled.asm["ssa"].splitlines()[0]
    assert ("x_desc: ptr<f16> {divisibility=16}, x_desc_shape0: i32, x_desc_shape1: i32, "
            "x_desc_stride0: i32 {divisibility=8}, out_desc: ptr<f16>") in header


def test_each_block_shape_is_its_own_specialisation(scale, rng):
    x = rng.standard_normal((64, 64)).astype(np.float32)
    out = np.zeros_like(x)
    for block in ([16, 16], [32, 16], [16, 16]):
        xd, od = TensorDescriptor.from_tensor(x, block), TensorDescriptor.from_tensor(out, block)
        scale[(64 // block[0], 64 // block[1])](xd, od, BM=block[0], BN=block[1], backend="interp")
        np.testing.assert_array_equal(out, x * 2 + 1)
        out[:] = 0
    assert len(scale._compiled) == 2


def test_a_block_shape_set_after_construction_is_the_one_launched(scale, rng):
    # The fused-attention tutorial makes its descriptors with a dummy block and
    # sets each config's in the autotuner's pre_hook.
    x = rng.standard_normal((32, 32)).astype(np.float32)
    out = np.zeros_like(x)
    xd, od = (TensorDescriptor(a, [32, 32], [32, 1], [1, 1]) for a in (x, out))
    xd.block_shape = od.block_shape = [16, 16]
    scale[(2, 2)](xd, od, BM=16, BN=16, backend="interp")
    np.testing.assert_array_equal(out, x * 2 + 1)


@pytest.mark.parametrize("make, message", [
    (lambda x: TensorDescriptor(x, [8, 16], [16, 1], [8]), "block_shape [8] does not match its shape"),
    (lambda x: TensorDescriptor(x, [16, 8], [1, 16], [8, 8]), "last dimension must be contiguous (stride 1)"),
    (lambda x: TensorDescriptor(x, [8, 16], [16, 1], [8, 8], padding="inf"), "padding is 'zero' or 'nan'"),
    (lambda x: TensorDescriptor(x, [1] * 6, [1] * 6, [1] * 6), "1 to 5 dimensions"),
    (lambda x: TensorDescriptor(x, [8, 16.0], [16, 1], [8, 8]), "shape must be integers"),
])
def test_a_descriptor_that_breaks_tritons_rules_is_refused_when_made(make, message):
    x = np.zeros((16, 16), np.float32)
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        make(x)


def test_misaligned_strides_and_bases_are_refused_at_the_launch(scale):
    x = np.zeros((16, 20), np.float16)  # rows of 40 bytes: not a multiple of 16
    with pytest.raises(CompileError, match="strides but the last must span multiples of 16 bytes"):
        scale[(1, 1)](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(x, [16, 16]),
                      BM=16, BN=16, backend="interp")
    flat = np.zeros(16 * 16 + 1, np.float32)
    shifted = flat[1:].reshape(16, 16)  # 4 bytes past an aligned start
    with pytest.raises(CompileError, match="base must be 16-byte aligned"):
        scale[(1, 1)](TensorDescriptor.from_tensor(shifted, [16, 16]),
                      TensorDescriptor.from_tensor(shifted, [16, 16]), BM=16, BN=16, backend="interp")


def test_a_block_narrower_than_16_bytes_is_a_located_error(scale):
    x = np.zeros((16, 16), np.float16)
    with pytest.raises(CompileError, match="the block's last dimension must span at least 16 bytes") as info:
        scale[(1, 1)](TensorDescriptor.from_tensor(x, [16, 4]), TensorDescriptor.from_tensor(x, [16, 4]),
                      BM=16, BN=4, backend="interp")
    assert info.value.loc is not None and info.value.loc.line > 1


def compile_scale(tmp_path, signature: str) -> subprocess.CompletedProcess:
    """``mytriton compile --emit=ssa`` of SCALE at 64x64 blocks with ``signature``."""
    path = tmp_path / "k.py"
    path.write_text(kernel_source(SCALE))
    return subprocess.run([sys.executable, "-m", "mytriton", "compile", str(path), "--emit=ssa", "-D", "BM=64",
                           "-D", "BN=64", "-s", signature], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_a_block_of_more_than_2_to_the_20_elements_is_a_located_error(tmp_path):
    run = compile_scale(tmp_path, "tensordesc<fp16[2048, 1024]>, tensordesc<fp16[64, 64]>")
    assert run.returncode == 1 and run.stdout == ""
    assert "k.py:5:11: error: 'x_desc': a block of [2048, 1024] has more than 2**20 elements" in run.stderr


def test_shapes_and_strides_beyond_i32_make_the_parts_i64():
    x = np.zeros((16, 16), np.float32)
    big = TensorDescriptor(x, [2**31, 16], [16, 1], [16, 16])
    assert big.param_type("x") == DescriptorParam(F32, (16, 16), I64)
    assert TensorDescriptor.from_tensor(x, [16, 16]).param_type("x").index == I32


@pytest.mark.parametrize("t", [DescriptorParam(F16, (64, 64)), DescriptorParam(F32, (8, 16, 32), I64, "nan")])
def test_a_descriptor_type_is_spelled_as_triton_spells_it_and_read_back(t):
    assert parse_descriptor_type(str(t)) == t
    assert str(DescriptorParam(F16, (64, 64))) == "tensordesc<fp16[64, 64]>"
    assert split_signature(f"*fp32:16, {t}, i32") == ["*fp32:16", str(t), "i32"]


def test_the_cli_compiles_a_kernel_whose_signature_has_descriptors(tmp_path):
    run = compile_scale(tmp_path, "tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64], i64>")
    assert run.returncode == 0, run.stderr
    assert "out_desc_stride0: i64 {divisibility=8}" in run.stdout.splitlines()[0]


def test_a_part_named_like_another_parameter_is_a_located_error(kernel_module):
    module = kernel_module("""
    @mytriton.jit
    def k(d, d_shape0):
        d.store([0], d.load([0]) + d_shape0)
    """)
    x = np.zeros(16, np.float32)
    with pytest.raises(CompileError, match="part 'd_shape0' is also the name of a parameter"):
        module.k[(1,)](TensorDescriptor.from_tensor(x, [16]), 3, backend="interp")


def test_triton_tools_and_set_allocator_are_there_for_published_code(tmp_path):
    code = (
        "import mytriton; mytriton.install_as_triton()\n"
        "import triton\n"
        "from triton.tools.tensor_descriptor import TensorDescriptor\n"
        "import mytriton.tools.tensor_descriptor as ours\n"
        "assert TensorDescriptor is ours.TensorDescriptor\n"
        "triton.set_allocator(lambda size, align, stream: None)\n"
        "try:\n"
        "    import triton.tools.disasm\n"
        "except ImportError as e:\n"
        "    print('refused', 'disasm' in str(e))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert run.stdout == "refused True\n"


TUNED_SCALE = """
def set_blocks(nargs):
    nargs["x_desc"].block_shape = nargs["out_desc"].block_shape = [nargs["BM"], nargs["BN"]]


@mytriton.autotune(configs=[mytriton.Config({"BM": 16, "BN": 16}, pre_hook=set_blocks),
                            mytriton.Config({"BM": 32, "BN": 16}, pre_hook=set_blocks)], key=[],
                 do_bench=lambda launch, quantiles: launch() or 1.0)
""" + SCALE


@pytest.mark.nvcc
def test_the_autotuner_builds_each_config_as_its_pre_hook_sets_the_descriptors(kernel_module, rng, monkeypatch,
                                                                               cache):
    # The fused-attention tutorial's descriptors have a dummy 1x1 block (too
    # narrow to build) until the config's pre_hook sets it; the GPU's timing
    # builds each config before it launches it.
    from fake_driver import FakeDriver, install

    gpu = install(monkeypatch, FakeDriver())
    scale = kernel_module(TUNED_SCALE).scale
    x = rng.standard_normal((64, 64)).astype(np.float32)
    xd, od = (TensorDescriptor(a, [64, 64], [64, 1], [1, 1]) for a in (x, np.zeros_like(x)))
    scale[lambda meta: (64 // meta["BM"], 64 // meta["BN"])](xd, od, backend="cuda")
    assert scale.chosen_by == "timing"
    assert {launch.grid for launch in gpu.launches} == {(4, 4, 1), (2, 4, 1)}
    assert xd.block_shape == [scale.best_config.kwargs["BM"], 16]
