"""The repeated launch: ``kernel[grid](...)`` a second time with the same call
shape and specialisation takes a short path (runtime/jit.py, _launch) and
CudaKernel launches straight from the values (launch3). Whatever the short
path skips must still hold: environment changes take effect, a new dtype,
alignment or integer hint compiles a new kernel, keywords bind as before,
and bad calls give the same errors."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import mytriton
from conftest import kernel_source
from mytriton.diagnostics import CompileError

ADD = '''
    @mytriton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''

# Parameters of four sizes and alignments: a pointer after an i32 needs 4 bytes of padding.
SCALE = '''
    @mytriton.jit
    def scale(x, n, out, s, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * s, mask=offs < n)
'''


def inputs(n):
    """Two random f32 arrays of ``n`` elements, none zero."""
    rng = np.random.default_rng(n)
    return (rng.standard_normal(n) + 2.0).astype(np.float32), (rng.standard_normal(n) - 2.0).astype(np.float32)


def twice(launch):
    """Launch twice (the second takes the short path); the second's handle."""
    first = launch()
    second = launch()
    assert second is first
    return second


# ---- on the interpreter: binding, keys, grids ----------------------------------------------------


def test_a_repeated_launch_computes_again_with_the_new_values(kernel_module):
    add = kernel_module(ADD).add
    for n in (100, 37, 100):
        x, y = inputs(n)
        out = np.full_like(x, np.nan)
        add[(mytriton.cdiv(n, 64),)](x, y, out, n, backend="interp")
        np.testing.assert_array_equal(out, x + y)


def test_keyword_order_does_not_change_the_launch(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    handles = []
    for call in (lambda out: add[(4,)](x, y, out, n=100, BLOCK=32, backend="interp"),
                 lambda out: add[(4,)](x, y, out, BLOCK=32, n=100, backend="interp"),
                 lambda out: add[(4,)](backend="interp", BLOCK=32, n=100, out=out, y=y, x=x)):
        for _ in range(2):
            out = np.full_like(x, np.nan)
            handles.append(call(out))
            np.testing.assert_array_equal(out, x + y)
    assert all(handle is handles[0] for handle in handles)


def test_a_default_is_used_when_the_keyword_is_left_out_after_a_launch_that_gave_it(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(4,)](x, y, np.zeros_like(x), 100, BLOCK=32, backend="interp"))
    out = np.full_like(x, np.nan)
    handle = add[(2,)](x, y, out, 100, backend="interp")  # two programs of the default 64
    assert handle.metadata["constants"] == {"BLOCK": 64}
    np.testing.assert_array_equal(out, x + y)


def test_num_warps_on_a_repeated_shape_compiles_its_own_kernel(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    two = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, num_warps=2, backend="interp"))
    eight = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, num_warps=8, backend="interp"))
    assert (two.metadata["num_warps"], eight.metadata["num_warps"]) == (2, 8)
    assert add[(2,)](x, y, np.zeros_like(x), 100, num_warps=2, backend="interp") is two


def test_num_stages_on_a_repeated_shape_compiles_its_own_kernel(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    two = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, num_stages=2, backend="interp"))
    three = add[(2,)](x, y, np.zeros_like(x), 100, num_stages=3, backend="interp")
    assert three is not two and three.metadata["num_stages"] == 3


def test_a_new_dtype_after_a_repeated_launch_compiles_a_new_kernel(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    f32 = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    xi, yi = (np.arange(100, dtype=np.int32) * 3 - 7), np.arange(100, dtype=np.int32)
    out = np.zeros(100, np.int32)
    i32 = add[(2,)](xi, yi, out, 100, backend="interp")
    assert i32 is not f32 and i32.metadata["signature"].startswith("*i32")
    np.testing.assert_array_equal(out, xi + yi)


def test_a_misaligned_array_after_a_repeated_launch_compiles_a_kernel_without_the_fact(kernel_module):
    add = kernel_module(ADD).add
    buffers = [np.zeros(200, np.float32) for _ in range(3)]
    starts = [(-b.ctypes.data % 64) // 4 for b in buffers]
    x, y, out = (b[s:s + 100] for b, s in zip(buffers, starts))
    x[:], y[:] = inputs(100)
    aligned = twice(lambda: add[(2,)](x, y, out, 96, backend="interp"))
    assert aligned.metadata["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32:16"
    shifted = buffers[0][starts[0] + 1:starts[0] + 101]
    shifted[:] = x
    out[:] = np.nan
    handle = add[(2,)](shifted, y, out, 96, backend="interp")
    assert handle.metadata["signature"] == "*fp32, *fp32:16, *fp32:16, i32:16"
    np.testing.assert_array_equal(out[:96], shifted[:96] + y[:96])


@pytest.mark.parametrize("n, signature", [(160, "i32:16"), (150, "i32")])
def test_an_integer_with_another_hint_after_a_repeated_launch_compiles_its_own_kernel(kernel_module, n, signature):
    add = kernel_module(ADD).add
    x, y = inputs(160)
    twice(lambda: add[(3,)](x, y, np.zeros_like(x), 96, backend="interp"))  # i32:16
    out = np.full_like(x, np.nan)
    handle = add[(3,)](x, y, out, n, backend="interp")
    assert handle.metadata["signature"].split(", ")[-1] == signature
    np.testing.assert_array_equal(out[:n], (x + y)[:n])


def test_an_integer_past_i32_after_a_repeated_launch_compiles_an_i64_kernel(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 96, backend="interp"))
    handle = add[(0,)](x, y, np.zeros_like(x), 2**31 + 16, backend="interp")  # compiled, nothing runs
    assert handle.metadata["signature"].split(", ")[-1] == "i64:16"


def test_an_integer_equal_to_one_after_a_repeated_launch_is_compiled_in(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    out = np.full_like(x, np.nan)
    handle = add[(1,)](x, y, out, 1, backend="interp")
    assert handle.metadata["constants"]["n"] == 1 and handle.runtime_params == ["x", "y", "out"]
    assert out[0] == x[0] + y[0] and np.isnan(out[1:]).all()


def test_a_callable_grid_sees_each_launchs_values(kernel_module):
    add = kernel_module(ADD).add
    seen = []

    def grid(meta):
        seen.append((meta["n"], meta["BLOCK"]))
        return (mytriton.cdiv(meta["n"], meta["BLOCK"]),)

    for n in (100, 300, 300):
        x, y = inputs(n)
        out = np.full_like(x, np.nan)
        add[grid](x, y, out, n, BLOCK=32, backend="interp")
        np.testing.assert_array_equal(out, x + y)
    assert seen == [(100, 32), (300, 32), (300, 32)]


def test_an_empty_grid_on_a_repeated_launch_runs_nothing(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    out = np.full_like(x, 5.0)
    add[(0,)](x, y, out, 100, backend="interp")
    np.testing.assert_array_equal(out, 5.0)


def test_a_grid_over_the_limit_on_a_repeated_launch_is_an_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    with pytest.raises(CompileError, match="grid axis 1 has 65536 programs, over CUDA's limit of 65535"):
        add[(1, 65536)](x, y, np.zeros_like(x), 100, backend="interp")


def test_warmup_on_a_repeated_shape_compiles_without_running(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    handle = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp", warmup=False))
    out = np.full_like(x, 5.0)
    assert add[(2,)](x, y, out, 100, backend="interp", warmup=True) is handle
    np.testing.assert_array_equal(out, 5.0)


def test_num_ctas_other_than_one_on_a_repeated_shape_is_refused(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, num_ctas=1, backend="interp"))
    with pytest.raises(CompileError, match="num_ctas=2 is not supported"):
        add[(2,)](x, y, np.zeros_like(x), 100, num_ctas=2, backend="interp")


def test_heuristics_are_worked_out_again_at_each_repeated_launch(kernel_module):
    module = kernel_module('''
        @mytriton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 100 else 128})
        @mytriton.jit
        def add(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
    ''')
    blocks = []
    for n in (50, 50, 300, 300):
        x, y = inputs(n)
        out = np.full_like(x, np.nan)
        handle = module.add[lambda meta: (mytriton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, backend="interp")
        blocks.append(handle.metadata["constants"]["BLOCK"])
        np.testing.assert_array_equal(out, x + y)
    assert blocks == [32, 32, 128, 128]


def test_an_autotuned_kernel_launches_again_with_its_chosen_config(kernel_module):
    module = kernel_module('''
        @mytriton.autotune(configs=[mytriton.Config({"BLOCK": 32}), mytriton.Config({"BLOCK": 128})], key=["n"])
        @mytriton.jit
        def add(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
    ''')
    for n in (100, 100, 260):
        x, y = inputs(n)
        out = np.full_like(x, np.nan)
        handle = module.add[lambda meta: (mytriton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, backend="interp")
        assert handle.metadata["constants"] == {"BLOCK": 32} and handle.metadata["num_stages"] == 3
        np.testing.assert_array_equal(out, x + y)


def test_a_grid_function_giving_zero_or_a_negative_count_on_a_repeated_launch(kernel_module):
    """The grid a function returns takes the short path only when every
    count is positive: zero launches nothing, a negative count is the usual error."""
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[lambda meta: (2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    out = np.full_like(x, np.nan)
    add[lambda meta: (0,)](x, y, out, 100, backend="interp")
    assert np.isnan(out).all()
    with pytest.raises(CompileError, match="grid dimensions must be non-negative"):
        add[lambda meta: (-1,)](x, y, out, 100, backend="interp")


# ---- bad calls after good ones ------------------------------------------------------------------


def test_one_argument_too_many_after_a_repeated_launch_is_the_same_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    for _ in range(2):
        with pytest.raises(CompileError, match=r"add: takes 5 arguments but 6 were given"):
            add[(2,)](x, y, np.zeros_like(x), 100, 64, 7, backend="interp")


def test_a_missing_argument_after_a_repeated_launch_is_the_same_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    for _ in range(2):
        with pytest.raises(CompileError, match=r"add: missing a required argument: 'n'"):
            add[(2,)](x, y, np.zeros_like(x), backend="interp")


def test_an_unknown_keyword_after_a_repeated_launch_is_the_same_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, BLOCK=32, backend="interp"))
    with pytest.raises(CompileError, match=r"add: got an unexpected keyword argument 'BLOCKS'"):
        add[(2,)](x, y, np.zeros_like(x), 100, BLOCKS=32, backend="interp")


def test_an_argument_the_kernel_cannot_take_after_a_repeated_launch_is_the_same_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    with pytest.raises(CompileError, match=r"argument 'n': cannot pass str to a kernel"):
        add[(2,)](x, y, np.zeros_like(x), "100", backend="interp")


# ---- the environment, read at every launch ---------------------------------------------------------


def test_mytriton_backend_changed_between_launches_takes_effect(kernel_module, monkeypatch):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    handle = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100))
    assert handle.backend == "interp"
    monkeypatch.setenv("MYTRITON_BACKEND", "tpu")
    with pytest.raises(CompileError, match="unknown backend 'tpu'"):
        add[(2,)](x, y, np.zeros_like(x), 100)


def test_mytriton_f32_default_changed_between_launches_compiles_for_it(kernel_module, monkeypatch):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    monkeypatch.delenv("MYTRITON_F32_DEFAULT", raising=False)
    plain = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee")
    ieee = twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    assert ieee is not plain and (plain.options.f32_default, ieee.options.f32_default) == (None, "ieee")
    monkeypatch.delenv("MYTRITON_F32_DEFAULT")
    assert add[(2,)](x, y, np.zeros_like(x), 100, backend="interp") is plain


def test_a_launch_verifies_each_pass_only_under_mytriton_verify_each(kernel_module, monkeypatch):
    x, y = inputs(100)
    monkeypatch.delenv("MYTRITON_VERIFY_EACH", raising=False)
    once = kernel_module(ADD).add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    monkeypatch.setenv("MYTRITON_VERIFY_EACH", "1")
    each = kernel_module(ADD).add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    assert (once.options.verify_each, each.options.verify_each) == (False, True)


def test_a_bad_mytriton_f32_default_is_an_error_at_every_launch(kernel_module, monkeypatch):
    add = kernel_module(ADD).add
    x, y = inputs(100)
    twice(lambda: add[(2,)](x, y, np.zeros_like(x), 100, backend="interp"))
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "fast")
    for _ in range(2):
        with pytest.raises(CompileError, match="MYTRITON_F32_DEFAULT must be one of"):
            add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")


def test_an_environment_value_parses_again_only_when_the_variable_changes(monkeypatch):
    from mytriton.runtime.jit import EnvironmentValue

    calls = []
    name = "LAUNCH_PATH_TEST_VALUE"
    value = EnvironmentValue(name, lambda: calls.append(1) or os.environ.get(name))
    monkeypatch.setenv("LAUNCH_PATH_TEST_VALUE", "a")
    assert [value.get(), value.get()] == ["a", "a"] and len(calls) == 1
    monkeypatch.setenv("LAUNCH_PATH_TEST_VALUE", "b")
    assert value.get() == "b" and len(calls) == 2
    monkeypatch.delenv("LAUNCH_PATH_TEST_VALUE")
    assert value.get() is None and len(calls) == 3


def test_an_environment_value_reads_a_replaced_os_environ(monkeypatch):
    from mytriton.runtime.jit import EnvironmentValue

    value = EnvironmentValue("LAUNCH_PATH_TEST_VALUE")
    monkeypatch.setattr(os, "environ", {"LAUNCH_PATH_TEST_VALUE": "plain"})
    assert value.get() == "plain"


# ---- the GPU launch, on a stand-in driver (tests/fake_driver.py) ---------------------------------


class StandInDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


FLOAT32, FLOAT16 = StandInDtype("float32"), StandInDtype("float16")


class StandInTensor:
    """What the launch path reads of a tensor-like (an address, a dtype, whether on a GPU)."""

    def __init__(self, address, dtype=FLOAT32, cuda=True):
        self.address, self._dtype, self.cuda = address, dtype, cuda

    def data_ptr(self):
        return self.address

    @property
    def dtype(self):
        return self._dtype

    @property
    def is_cuda(self):
        return self.cuda


@pytest.fixture
def gpu(monkeypatch):
    """A stand-in GPU: the driver records launches and module loads, nvcc is skipped."""
    from fake_driver import FakeDriver, install

    return install(monkeypatch, FakeDriver())


def test_a_repeated_gpu_launch_packs_the_arguments_as_c_lays_them_out(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    x, out = StandInTensor(0x10000), StandInTensor(0x20000)
    handle = twice(lambda: scale[(5,)](x, 300, out, 2.5))
    assert handle.backend == "cuda" and handle.metadata["signature"] == "*fp32:16, i32, *fp32:16, fp32"
    expected = struct.pack("<QiiQf", 0x10000, 300, 0, 0x20000, 2.5)  # 4 bytes of padding before out
    assert [(run.grid, run.threads, run.params, run.shared_bytes, run.stream) for run in gpu.launches] == \
        [((5, 1, 1), 128, expected, 0, 0)] * 2
    assert len(gpu.loads) == 1


def test_a_misaligned_tensor_after_a_repeated_gpu_launch_compiles_and_launches_its_own_kernel(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    out = StandInTensor(0x20000)
    twice(lambda: scale[(5,)](StandInTensor(0x10000), 300, out, 2.5))
    handle = scale[(5,)](StandInTensor(0x10004), 300, out, 2.5)
    assert handle.metadata["signature"] == "*fp32, i32, *fp32:16, fp32"
    aligned, _, shifted = gpu.launches
    assert aligned.function != shifted.function and shifted.params[:8] == struct.pack("<Q", 0x10004)


def test_a_new_tensor_dtype_after_a_repeated_gpu_launch_compiles_its_own_kernel(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    twice(lambda: scale[(5,)](StandInTensor(0x10000), 300, StandInTensor(0x20000), 2.5))
    handle = scale[(5,)](StandInTensor(0x10000, FLOAT16), 300, StandInTensor(0x20000, FLOAT16), 2.5)
    assert handle.metadata["signature"] == "*fp16:16, i32, *fp16:16, fp32"
    assert len({launch.function for launch in gpu.launches}) == 2


def test_an_integer_equal_to_one_after_a_repeated_gpu_launch_leaves_the_arguments(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    x, out = StandInTensor(0x10000), StandInTensor(0x20000)
    twice(lambda: scale[(5,)](x, 300, out, 2.5))
    handle = scale[(1,)](x, 1, out, 2.5)
    assert handle.runtime_params == ["x", "out", "s"]
    assert gpu.launches[-1].params == struct.pack("<QQf", 0x10000, 0x20000, 2.5)


def test_a_host_array_on_a_repeated_gpu_launch_is_copied_in_and_its_buffer_freed(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    out = StandInTensor(0x20000)
    x = np.ones(300, np.float32)
    twice(lambda: scale[(5,)](x, 300, out, 2.5))
    copies = [launch.params[:8] for launch in gpu.launches]
    assert len(copies) == 2 and all(struct.unpack("<Q", c)[0] in gpu.freed for c in copies)
    assert gpu.memory == {} and gpu.synchronized == [0, 0]


def test_a_host_array_the_kernel_stores_to_comes_back(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    out = np.zeros(300, np.float32)

    def write_back(array, address):  # the stand-in kernel wrote 7s
        array[...] = 7.0

    gpu.copy_to_host = write_back
    scale[(5,)](StandInTensor(0x10000), 300, out, 2.5)
    assert (out == 7.0).all()


def test_a_tensor_not_on_a_gpu_is_refused_by_name_at_the_launch(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    out = StandInTensor(0x20000)
    scale[(5,)](StandInTensor(0x10000), 300, out, 2.5)
    with pytest.raises(CompileError, match=r"kernel 'scale': argument 'x' is a tensor on .*reads GPU memory only") as err:
        scale[(5,)](StandInTensor(0x30000, cuda=False), 300, out, 2.5)
    assert err.value.loc.file == __file__ and len(gpu.launches) == 1


def test_a_tensor_like_pointing_at_host_memory_is_refused_by_name(kernel_module, gpu):
    scale = kernel_module(SCALE).scale
    gpu.device_of = lambda address: None if address == 0x30000 else 0
    with pytest.raises(CompileError, match=r"argument 'x' \(StandInTensor\) does not point into GPU memory"):
        scale[(5,)](StandInTensor(0x30000), 300, StandInTensor(0x20000), 2.5)
    assert gpu.launches == []


# ---- CudaKernel.launch3 --------------------------------------------------------------------------


def cuda_kernel(tmp_path, signature, source=SCALE, name="scale"):
    """A CudaKernel of ``source`` for ``signature`` (on the installed stand-in driver)."""
    from mytriton import compiler
    from mytriton.runtime import cuda_driver

    options = compiler.Options(kernel=name, signature=signature)
    ssa = compiler.source_to_ssa(kernel_source(source), str(tmp_path / f"{name}.py"), options)
    return cuda_driver.CudaKernel(compiler.to_cuda(ssa, options))


def test_launch_packs_a_bf16_scalar_as_its_rounded_bits(gpu, tmp_path):
    from mytriton.runtime.cuda_driver import bf16_bits

    kernel = cuda_kernel(tmp_path, "*bf16, i32, *bf16, bf16")
    kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 1.00390625])
    assert gpu.launches[0].params == struct.pack("<QiiQH", 0x10000, 100, 0, 0x20000, bf16_bits(1.00390625))


def test_launch_packs_an_f16_scalar_beyond_its_range_as_infinity(gpu, tmp_path):
    kernel = cuda_kernel(tmp_path, "*fp16, i32, *fp16, fp16")
    kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000), 1e6])
    assert gpu.launches[0].params[-2:] == struct.pack("<e", float("inf"))


def test_a_value_struct_refuses_is_converted_to_its_parameter_type(gpu, tmp_path):
    kernel = cuda_kernel(tmp_path, "*fp32, i32, *fp32, fp32")
    kernel.launch((2,), [StandInTensor(0x10000), 100.0, StandInTensor(0x20000), 2.0])  # a float for the i32
    assert gpu.launches[0].params == struct.pack("<QiiQf", 0x10000, 100, 0, 0x20000, 2.0)


def test_a_scalar_that_does_not_fit_its_parameter_is_refused_by_name(gpu, tmp_path):
    kernel = cuda_kernel(tmp_path, "*fp32, i32, *fp32, fp32")
    with pytest.raises(CompileError, match=r"argument 'n' = 4294967296 does not fit its parameter type i32"):
        kernel.launch((2,), [StandInTensor(0x10000), 2**32, StandInTensor(0x20000), 2.0])


def test_launch_still_checks_the_argument_count(gpu, tmp_path):
    kernel = cuda_kernel(tmp_path, "*fp32, i32, *fp32, fp32")
    with pytest.raises(CompileError, match=r"kernel 'scale' takes 4 argument\(s\), got 3"):
        kernel.launch((2,), [StandInTensor(0x10000), 100, StandInTensor(0x20000)])



MANY = '''
    @mytriton.jit
    def many(out, a, b, c, d, e, f, g, h):
        tl.store(out + tl.arange(0, 32), tl.zeros((32,), tl.float32))
'''
_PTX_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}


def ptx_parameter_offsets(ptx: str) -> list[int]:
    """Each .entry parameter's offset in the parameter buffer: C's layout, each
    at its alignment (``.align N``, else its size)."""
    import re

    offsets, at = [], 0
    for align, bits, count in re.findall(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.[a-z]+(\d+)\s+\w+(?:\[(\d+)\])?", ptx):
        size = _PTX_SIZES[bits]
        alignment = int(align) if align else size
        at = -(-at // alignment) * alignment
        offsets.append(at)
        at += size * int(count or 1)
    return offsets


@pytest.mark.nvcc
def test_the_packed_parameters_sit_where_nvcc_puts_the_kernels_parameters(monkeypatch, tmp_path):
    from mytriton import compiler
    from mytriton.backends.cuda.nvcc import compile_ptx
    from mytriton.runtime import cuda_driver

    options = compiler.Options(kernel="many", signature="*fp32, i1, fp64, i8, bf16, i32, fp16, i64, u16")
    cuda = compiler.to_cuda(compiler.source_to_ssa(kernel_source(MANY), str(tmp_path / "many.py"), options), options)
    expected = ptx_parameter_offsets(compile_ptx(cuda, "sm_90"))
    from fake_driver import FakeDriver, install

    install(monkeypatch, FakeDriver())
    layout = cuda_driver.CudaKernel(cuda).function_format
    packed = [struct.calcsize("@" + layout[:k] + "0" + layout[k]) for k in range(len(layout))]
    assert len(expected) == 9 and packed == expected


# ---- on the GPU ------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_repeated_launches_with_changing_dtypes_alignments_and_sizes_match_numpy(kernel_module):
    torch = pytest.importorskip("torch")
    scale = kernel_module(SCALE).scale
    rng = np.random.default_rng(7)
    for dtype, offset, n in [(torch.float32, 0, 1000), (torch.float32, 0, 1000), (torch.float32, 1, 999),
                             (torch.float16, 0, 777), (torch.float32, 0, 1), (torch.float32, 0, 4096),
                             (torch.float16, 3, 130), (torch.float32, 0, 1000)]:
        base = torch.tensor(rng.standard_normal(n + offset) + 1.5, dtype=dtype, device="cuda")
        x = base[offset:]
        out = torch.full((n,), float("nan"), dtype=dtype, device="cuda")
        scale[(mytriton.cdiv(n, 64),)](x, n, out, -1.75)
        torch.cuda.synchronize()
        expected = x.cpu().numpy().astype(np.float32) * np.float32(-1.75)
        np.testing.assert_allclose(out.cpu().numpy().astype(np.float32), expected, rtol=1e-3, atol=1e-4)


@pytest.mark.gpu
def test_gpu_an_f16_scalar_argument_is_passed_as_an_f16(kernel_module):
    torch = pytest.importorskip("torch")
    scale = kernel_module(SCALE).scale
    x = torch.tensor(np.random.default_rng(3).standard_normal(333) + 1.0, dtype=torch.float16, device="cuda")
    out = torch.full((333,), float("nan"), dtype=torch.float16, device="cuda")
    for _ in range(2):
        handle = scale[(6,)](x, 333, out, np.float16(0.3333))
        torch.cuda.synchronize()
    assert handle.metadata["signature"].endswith("fp16")
    expected = (x.cpu().numpy() * np.float16(0.3333)).astype(np.float32)
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float32), expected, rtol=2e-3, atol=1e-4)


@pytest.mark.gpu
def test_gpu_host_arrays_on_a_repeated_launch_are_copied_back(kernel_module):
    add = kernel_module(ADD).add
    for n in (100, 100, 257):
        x, y = inputs(n)
        out = np.full_like(x, np.nan)
        add[(mytriton.cdiv(n, 64),)](x, y, out, n, backend="cuda")
        np.testing.assert_array_equal(out, x + y)


CAST = '''
    @mytriton.jit
    def cast(x, out, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n).to(DTYPE).to(tl.float32), mask=offs < n)
'''


def test_a_dtype_given_to_a_constexpr_takes_the_short_path_and_keys_the_kernel(kernel_module, monkeypatch):
    """Liger's norms pass their input's dtype (``tl.bfloat16``) to a
    constexpr: a repeated launch of that shape is cut short as any other, and
    another dtype is another kernel."""
    import mytriton.language as tl

    module = kernel_module(CAST)
    x = np.linspace(-3, 3, 100, dtype=np.float32) + 1 / 3
    runs = []
    original = type(module.cast).run
    monkeypatch.setattr(type(module.cast), "run", lambda self, *a, **k: runs.append(1) or original(self, *a, **k))
    outs = {}
    for dtype in (tl.float16, tl.float16, tl.bfloat16):  # the first launches of the shape and of each key
        module.cast[(2,)](x, np.empty_like(x), 100, dtype, backend="interp")
    runs.clear()
    for dtype in (tl.float16, tl.bfloat16, tl.float16, tl.bfloat16):
        out = np.full_like(x, np.nan)
        module.cast[(2,)](x, out, 100, dtype, backend="interp")
        outs[dtype] = out
    assert runs == []  # each repeat found its kernel by the launch key
    np.testing.assert_array_equal(outs[tl.float16], x.astype(np.float16).astype(np.float32))
    assert not np.array_equal(outs[tl.bfloat16], outs[tl.float16])  # bf16 keeps 8 bits, f16 11


# ---- host tensor descriptors ----------------------------------------------------------------------

DESCRIBED = '''
    @mytriton.jit
    def scale(x_desc, out_desc, s, BM: tl.constexpr, BN: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        x = x_desc.load([pid_m * BM, pid_n * BN])
        out_desc.store([pid_m * BM, pid_n * BN], x * s)
'''


def test_a_descriptor_launch_repeats_on_the_short_path_with_each_launchs_shape(kernel_module):
    from mytriton.tools.tensor_descriptor import TensorDescriptor

    scale = kernel_module(DESCRIBED).scale
    handles = []
    for m, n in ((40, 48), (33, 32), (64, 64)):  # the shape is a runtime value, not a specialisation
        x, _ = inputs(m * n)
        x = x.reshape(m, n)
        out = np.full_like(x, np.nan)
        handles.append(scale[(mytriton.cdiv(m, 16), mytriton.cdiv(n, 16))](
            TensorDescriptor(x, [m, n], [n, 1], [16, 16]), TensorDescriptor(out, [m, n], [n, 1], [16, 16]), 2.0,
            BM=16, BN=16, backend="interp"))
        np.testing.assert_array_equal(out, x * 2)
    assert all(handle is handles[0] for handle in handles) and len(scale._fast) == 1


def test_a_descriptor_whose_strides_break_the_rule_after_a_repeated_launch_is_refused(kernel_module):
    from mytriton.tools.tensor_descriptor import TensorDescriptor

    scale = kernel_module(DESCRIBED).scale
    x = np.zeros((16, 24), np.float32)
    for _ in range(2):
        scale[(1, 1)](TensorDescriptor(x, [16, 16], [24, 1], [16, 16]), TensorDescriptor(x, [16, 16], [24, 1], [16, 16]),
                      1.0, BM=16, BN=16, backend="interp")
    rows_of_22 = TensorDescriptor(x, [16, 16], [22, 1], [16, 16])  # 88 bytes: not a multiple of 16
    with pytest.raises(CompileError, match="strides but the last must span multiples of 16 bytes"):
        scale[(1, 1)](rows_of_22, rows_of_22, 1.0, BM=16, BN=16, backend="interp")


@pytest.mark.parametrize("change, compiles", [
    (lambda d: None, False),
    (lambda d: setattr(d, "shape", [32, 40]), False),
    (lambda d: setattr(d, "block_shape", [32, 16]), True),
    (lambda d: setattr(d, "padding", "nan"), True),
    (lambda d: setattr(d, "strides", [40, 1]), False),  # 160 bytes and 80 bytes: both multiples of 16
    (lambda d: setattr(d, "shape", [2**31, 16]), True),  # i64 parts
], ids=["same", "shape", "block", "padding", "stride", "past-i32"])
def test_what_of_a_descriptor_compiles_a_new_kernel_on_a_repeated_launch(kernel_module, change, compiles):
    from mytriton.tools.tensor_descriptor import TensorDescriptor

    scale = kernel_module(DESCRIBED).scale
    x = np.zeros((16, 80), np.float32)
    for _ in range(2):
        first = scale.warmup(TensorDescriptor(x, [16, 64], [80, 1], [16, 16]), TensorDescriptor(x, [16, 64], [80, 1],
                             [16, 16]), 1.0, BM=16, BN=16, grid=(1,), backend="interp")
    changed = TensorDescriptor(x, [16, 64], [80, 1], [16, 16])
    change(changed)
    again = scale.warmup(changed, changed, 1.0, BM=16, BN=16, grid=(1,), backend="interp")
    assert (again is not first) == compiles


def test_a_repeated_gpu_launch_passes_each_descriptors_parts(kernel_module, gpu):
    from mytriton.tools.tensor_descriptor import TensorDescriptor

    scale = kernel_module(DESCRIBED).scale
    x, out = StandInTensor(0x10000), StandInTensor(0x20000)
    for m in (64, 48):
        scale[(4, 4)](TensorDescriptor(x, [m, 64], [64, 1], [16, 16]), TensorDescriptor(out, [m, 64], [64, 1], [16, 16]),
                      2.5, BM=16, BN=16)
    first, second = gpu.launches
    assert first.params == struct.pack("<Qiii4xQiiif", 0x10000, 64, 64, 64, 0x20000, 64, 64, 64, 2.5)
    assert second.params == struct.pack("<Qiii4xQiiif", 0x10000, 48, 64, 64, 0x20000, 48, 64, 64, 2.5)
    assert first.function == second.function
