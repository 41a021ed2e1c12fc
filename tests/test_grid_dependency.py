"""Programmatic dependent launch, as Triton's tutorial 11 uses it: the kernel
calls ``tl.extra.cuda.gdc_wait()`` before it reads what the kernel before it
wrote and ``gdc_launch_dependents()`` once the next may start, and the host
launches it with ``launch_pdl=True`` (cuLaunchKernelEx with programmatic
stream serialization allowed). Without that launch both calls do nothing."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from conftest import compile_text, kernel_source, run_published
from mytriton.diagnostics import CompileError

ADD = """
    from mytriton.language.extra.cuda import gdc_wait


    @mytriton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        if USE_GDC:
            gdc_wait()
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        if USE_GDC:
            tl.extra.cuda.gdc_launch_dependents()
        tl.store(out_ptr + offs, x + y, mask=mask)
"""
SOURCE = kernel_source(ADD)
DEFINES = {"BLOCK": 128, "USE_GDC": True}


def lines_with(text: str, *words: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if any(word in line for word in words)]


# ---- the kernel side ---------------------------------------------------------------------------------


def test_the_wait_comes_before_the_loads_and_the_trigger_after_them_in_the_ssa():
    ops = [line.split(" = ")[-1].split()[0] for line in compile_text(SOURCE, "opt", defines=DEFINES).splitlines()
           if "grid_dependency" in line or " load " in line]
    assert ops == ["grid_dependency_wait", "load", "load", "grid_dependency_launch_dependents"]


def test_without_use_gdc_the_kernel_has_neither():
    assert "grid_dependency" not in compile_text(SOURCE, "opt", defines={**DEFINES, "USE_GDC": False})


def test_a_read_on_each_side_of_the_wait_is_two_reads():
    # What the kernel before wrote is visible after the wait only: CSE must not merge the loads.
    source = kernel_source("""
        @mytriton.jit
        def k(x_ptr, out_ptr):
            before = tl.load(x_ptr)
            tl.extra.cuda.gdc.gdc_wait()
            tl.store(out_ptr, before + tl.load(x_ptr))
    """)
    assert compile_text(source, "opt").count(" = load ") == 2


def test_the_cuda_runs_griddepcontrol_where_the_gpu_has_it():
    assert lines_with(compile_text(SOURCE, "cuda", defines=DEFINES), "griddepcontrol", "#if", "#endif") == [
        "#if __CUDA_ARCH__ >= 900",
        'asm volatile("griddepcontrol.wait;" ::: "memory");  // grid_dependency_wait @12:9',
        "#endif",
        "#if __CUDA_ARCH__ >= 900",
        'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  '
        "// grid_dependency_launch_dependents @16:9",
        "#endif",
    ]


@pytest.mark.nvcc
@pytest.mark.parametrize("arch, count", [("sm_90a", 2), ("sm_80", 0)])
def test_ptxas_builds_it_for_hopper_and_leaves_it_out_before(arch, count):
    ptx = compile_text(SOURCE, "ptx", defines=DEFINES, arch=arch, tma=False)
    assert len(lines_with(ptx, "griddepcontrol")) == count


def test_the_ttir_spells_tritons_ops():
    text = compile_text(SOURCE, "ttir", defines=DEFINES)
    assert [line.split(" loc(")[0] for line in lines_with(text, "grid_dependency")] == [
        "tt.grid_dependency_wait", "tt.grid_dependency_launch_dependents"]


def test_the_mlir_back_end_refuses_it_where_it_is_called():
    with pytest.raises(CompileError, match="grid dependency control .* is not covered by the MLIR back end") as info:
        compile_text(SOURCE, "mlir", defines=DEFINES)
    assert (info.value.loc.line, info.value.loc.col) == (12, 9)


def test_gdc_wait_takes_no_arguments():
    source = SOURCE.replace("gdc_wait()", "gdc_wait(1)")
    with pytest.raises(CompileError, match=r"gdc_wait\(\) takes no arguments"):
        compile_text(source, "ssa", defines=DEFINES)


def test_a_name_cuda_does_not_have_is_a_located_error():
    source = SOURCE.replace("tl.extra.cuda.gdc_launch_dependents()", "tl.extra.cuda.gdc_launch()")
    with pytest.raises(CompileError, match="'mytriton.language.extra.cuda.gdc_launch' is not part of mytriton"):
        compile_text(source, "ssa", defines=DEFINES)


def test_called_outside_a_kernel_it_says_where_it_belongs():
    from mytriton.language.extra.cuda import gdc_wait

    with pytest.raises(RuntimeError, match="only be used inside a @mytriton.jit kernel"):
        gdc_wait()


# ---- the launch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_gdc", [True, False])
def test_the_interpreter_runs_the_kernel_launched_with_launch_pdl(kernel_module, rng, use_gdc):
    add = kernel_module(ADD).add
    n = 300  # ragged: the last program's tail is masked
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    for _ in range(2):  # the second launch takes the short path
        out = np.full(n, np.nan, np.float32)
        handle = add[(3,)](x, y, out, n, BLOCK=128, USE_GDC=use_gdc, launch_pdl=use_gdc, backend="interp")
        np.testing.assert_array_equal(out, x + y)
    assert handle.metadata["launch_pdl"] is use_gdc


def test_launch_pdl_must_be_a_bool(kernel_module):
    add = kernel_module(ADD).add
    x = np.ones(4, np.float32)
    with pytest.raises(CompileError, match="launch_pdl must be True or False, got 'yes'"):
        add[(1,)](x, x, x, 4, BLOCK=128, USE_GDC=True, launch_pdl="yes", backend="interp")


@pytest.fixture
def gpu(monkeypatch):
    from fake_driver import FakeDriver, install

    return install(monkeypatch, FakeDriver())


class StandInTensor:
    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address

    @property
    def dtype(self):
        return "torch.float32"

    @property
    def is_cuda(self):
        return True


def test_launch_pdl_launches_through_cuLaunchKernelEx_with_the_attribute(kernel_module, gpu):
    add = kernel_module(ADD).add
    x, y, out = (StandInTensor(0x10000 * (i + 1)) for i in range(3))
    for pdl in (True, True, False, True):  # the repeats take the short path
        add[(3,)](x, y, out, 300, BLOCK=128, USE_GDC=True, launch_pdl=pdl)
    assert [launch.pdl for launch in gpu.launches] == [True, True, False, True]
    assert {launch.grid for launch in gpu.launches} == {(3, 1, 1)}
    assert gpu.launches[0].params == gpu.launches[2].params  # the same arguments either way
    # A kernel each way, as Triton compiles one per launch_pdl; the same cubin, loaded once.
    assert len({launch.function for launch in gpu.launches}) == 2 and len(gpu.loads) == 1


def test_the_launch_config_is_laid_out_as_cuda_h_declares_it():
    # cuda.h (CUDA 13.0): CUlaunchConfig is 56 bytes (hStream at 32, attrs at 40, numAttrs at 48);
    # CUlaunchAttribute 72 (the value union of 64 bytes at 8).
    from mytriton.runtime.driver_api import LaunchAttribute, LaunchConfig

    assert ctypes.sizeof(LaunchConfig) == 56
    assert (LaunchConfig.hStream.offset, LaunchConfig.attrs.offset, LaunchConfig.numAttrs.offset) == (32, 40, 48)
    assert (ctypes.sizeof(LaunchAttribute), LaunchAttribute.value.offset) == (72, 8)


PUBLISHED = '''
import numpy as np
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr, USE_GDC: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if USE_GDC:
        gdc_wait()
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if USE_GDC:
        gdc_launch_dependents()
    tl.store(output_ptr + offsets, x + y, mask=mask)


x = np.random.default_rng(0).random(1000, dtype=np.float32)
y = np.random.default_rng(1).random(1000, dtype=np.float32)
out = np.zeros_like(x)
grid = lambda meta: (triton.cdiv(1000, meta["BLOCK_SIZE"]),)
add_kernel[grid](x, y, out, 1000, BLOCK_SIZE=256, USE_GDC=True, launch_pdl=True)
assert (out == x + y).all()
print("ok")
'''


def test_tutorial_11s_imports_and_launch_run_as_published(tmp_path):
    assert run_published(tmp_path, "pdl.py", PUBLISHED) == "ok\n"


PRODUCE = """
    @mytriton.jit
    def produce(x_ptr, n, rounds, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        value = offs.to(tl.float32)
        for _ in range(rounds):  # long enough that a consumer started early would overtake it
            value = value * 1.0000001
        tl.extra.cuda.gdc_launch_dependents()
        tl.store(x_ptr + offs, value, mask=offs < n)
"""


@pytest.mark.gpu
def test_gpu_a_dependent_launch_reads_what_the_kernel_before_it_wrote(kernel_module):
    torch = pytest.importorskip("torch")
    module = kernel_module(ADD + PRODUCE)
    n = 1 << 20
    rounds = 2000
    expected = torch.arange(n, device="cuda", dtype=torch.float32)
    for _ in range(rounds):
        expected = expected * 1.0000001
    y = torch.randn(n, device="cuda")
    for _ in range(3):
        x = torch.full((n,), float("nan"), device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        module.produce[(n // 1024,)](x, n, rounds, BLOCK=1024, launch_pdl=True)
        module.add[(n // 1024,)](x, y, out, n, BLOCK=1024, USE_GDC=True, launch_pdl=True)
        torch.testing.assert_close(out, expected + y)
