"""Triton's host API: Config, autotune, heuristics, launch handles, warmup,
@jit options, next_power_of_2, mytriton.testing."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import mytriton
from mytriton import compiler
from mytriton.diagnostics import CompileError
from mytriton.runtime.compiled import CompiledKernel

ADD = '''
    @mytriton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr = 64):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''

TUNED = '''
    @mytriton.autotune(configs=[mytriton.Config({"BLOCK": 32}, num_warps=1),
                                mytriton.Config({"BLOCK": 128}, num_warps=4, num_stages=2)],
                       key=["n"])
    @mytriton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''

HEURISTIC = '''
    @mytriton.heuristics({"BLOCK": lambda args: mytriton.next_power_of_2(args["n"])})
    @mytriton.jit
    def scale(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)
'''


def inputs(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def grid_of(n):
    return lambda meta: (mytriton.cdiv(n, meta["BLOCK"]),)


# ---- small helpers ------------------------------------------------------------------------


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (2, 2), (3, 4), (64, 64), (65, 128), (1000, 1024),
                                         (2**40 + 1, 2**41)])
def test_next_power_of_2_is_the_smallest_power_of_two_at_least_n(n, expected):
    assert mytriton.next_power_of_2(n) == expected


def test_the_triton_names_are_importable_as_triton_users_import_them():
    code = ("import sys; import mytriton as triton; import mytriton.language as tl; "
            "assert triton.language is tl; "
            "names = [triton.jit, triton.autotune, triton.Config, triton.heuristics, triton.cdiv, "
            "triton.next_power_of_2]; "
            "assert 'numpy' not in sys.modules, 'import mytriton loads numpy'; "
            "from mytriton.testing import do_bench, assert_close; "
            "assert triton.testing.do_bench is do_bench")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- the launch handle --------------------------------------------------------------------


def test_a_launch_returns_the_compiled_kernel_with_its_metadata(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    out = np.zeros_like(x)
    handle = add[grid_of(100)](x, y, out, 100, num_warps=2, num_stages=3, backend="interp")
    assert isinstance(handle, CompiledKernel)
    assert handle.name == "add"
    assert handle.metadata["num_warps"] == 2
    assert handle.metadata["num_stages"] == 3
    assert handle.metadata["constants"] == {"BLOCK": 64}
    assert handle.options.num_stages == 3  # passed along in the launch options
    np.testing.assert_array_equal(out, x + y)


def test_the_handles_asm_texts_are_made_only_when_asked_for(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    handle = add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    assert set(handle.asm) == {"ssa", "layouts", "cuda", "ptx", "ttir", "mlir"}
    assert handle.asm.computed() == ("ssa",)
    assert handle.asm["ssa"].startswith("kernel add(")
    assert "num_warps=4" in handle.asm["layouts"] and "#blocked0" in handle.asm["layouts"]
    assert "__global__" in handle.asm["cuda"]
    assert "ptx" not in handle.asm.computed()


def test_the_asm_texts_are_the_pipelines_texts(kernel_module, tmp_path):
    add = kernel_module(ADD).add
    x, y = inputs()
    handle = add[(2,)](x, y, np.zeros_like(x), 100, num_warps=2, backend="interp")
    text, _, _ = add.source()
    options = compiler.Options(kernel="add", defines={"BLOCK": 64}, signature=handle.metadata["signature"],
                               num_warps=2)
    assert handle.asm["ssa"] == compiler.compile_source(text, add.file, "opt", options)
    assert handle.asm["layouts"] == compiler.compile_source(text, add.file, "layouts", options)
    assert handle.asm["cuda"] == compiler.compile_source(text, add.file, "cuda", options)
    # Triton's kernel.asm["ttir"], and the MLIR back end's text, as `compile --emit` gives them.
    assert handle.asm["ttir"] == compiler.compile_source(text, add.file, "ttir", options)
    assert handle.asm["mlir"] == compiler.compile_source(text, add.file, "mlir", options)


def test_interpreting_after_asking_for_the_layouts_still_runs_the_kernel(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    handle = add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    handle.asm["cuda"]
    out = np.zeros_like(x)
    add[(2,)](x, y, out, 100, backend="interp")
    np.testing.assert_array_equal(out, x + y)


def test_an_unknown_asm_kind_is_a_key_error_naming_the_kinds(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    handle = add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    with pytest.raises(KeyError, match="ssa, layouts, cuda, ptx"):
        handle.asm["ttgir"]


@pytest.mark.nvcc
def test_the_handle_gives_ptx(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    handle = add[(2,)](x, y, np.zeros_like(x), 100, backend="interp")
    assert ".entry" in handle.asm["ptx"]


def test_warmup_compiles_without_running(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    out = np.full_like(x, 7.0)
    handle = add.warmup(x, y, out, 100, grid=(2,), BLOCK=32, backend="interp")
    assert isinstance(handle, CompiledKernel) and handle.metadata["constants"] == {"BLOCK": 32}
    np.testing.assert_array_equal(out, 7.0)
    # The launch after it reuses the compiled kernel.
    assert add[(4,)](x, y, out, 100, BLOCK=32, backend="interp") is handle
    np.testing.assert_array_equal(out, x + y)


def test_a_compiled_kernel_launches_with_its_runtime_arguments(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    out = np.zeros_like(x)
    handle = add.warmup(x, y, out, 100, grid=(1,), BLOCK=32, backend="interp")
    handle[(4, 1, 1)](x, y, out, 100)  # tutorial 02: kernel[(num_programs, 1, 1)](...)
    np.testing.assert_array_equal(out, x + y)
    out[:] = 0
    handle[(4,)](x, y, out, 100, 32)  # the constexprs too, as Triton 3 takes them
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(CompileError, match=r"has BLOCK = 32 compiled in, got 64"):
        handle[(4,)](x, y, out, 100, 64)
    with pytest.raises(CompileError, match=r"takes its 4 runtime argument\(s\) \(x, y, out, n\) or all 5, got 3"):
        handle[(4,)](x, y, out)


def test_a_launch_option_that_is_also_a_kernel_parameter_goes_to_both(kernel_module):
    module = kernel_module('''
        @mytriton.jit
        def fill(out, num_stages: tl.constexpr):
            tl.store(out + tl.arange(0, 16), tl.full((16,), num_stages, tl.int32))
    ''')
    out = np.zeros(16, np.int32)
    handle = module.fill[(1,)](out, num_stages=3, backend="interp")
    np.testing.assert_array_equal(out, 3)
    assert handle.metadata.num_stages == 3 and handle.metadata.constants == {"num_stages": 3}


def test_num_ctas_other_than_one_is_refused(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    add[(2,)](x, y, np.zeros_like(x), 100, num_ctas=1, backend="interp")
    with pytest.raises(CompileError, match="num_ctas=2 is not supported"):
        add[(2,)](x, y, np.zeros_like(x), 100, num_ctas=2, backend="interp")


@pytest.mark.parametrize("value", [3, 0, 64, "4"])
def test_a_bad_num_warps_is_an_error(kernel_module, value):
    add = kernel_module(ADD).add
    x, y = inputs()
    with pytest.raises(CompileError, match="num_warps must be a power of two"):
        add[(2,)](x, y, np.zeros_like(x), 100, num_warps=value, backend="interp")


def test_a_bad_num_stages_is_an_error(kernel_module):
    add = kernel_module(ADD).add
    x, y = inputs()
    with pytest.raises(CompileError, match="num_stages must be an integer from 1 to 16"):
        add[(2,)](x, y, np.zeros_like(x), 100, num_stages=0, backend="interp")


# ---- @jit options -------------------------------------------------------------------------


def test_an_unknown_jit_option_is_an_error_naming_it():
    def kernel(x):
        return x

    with pytest.raises(CompileError, match="unknown option 'num_warp'"):
        mytriton.jit(num_warp=4)(kernel)


def test_the_known_jit_options_are_accepted(kernel_module):
    module = kernel_module(ADD.replace("@mytriton.jit", "@mytriton.jit(do_not_specialize=['n'], debug=True, "
                                       "noinline=False, repr=lambda meta: 'add_' + str(meta['num_warps']), "
                                       "launch_metadata=None)"))
    x, y = inputs()
    out = np.zeros_like(x)
    handle = module.add[(2,)](x, y, out, 100, backend="interp")
    assert handle.metadata["debug"] is True
    assert handle.metadata["repr"] == "add_4"
    np.testing.assert_array_equal(out, x + y)


def test_do_not_specialize_must_name_parameters():
    def kernel(x, n):
        return x

    with pytest.raises(CompileError, match="do_not_specialize names 'm'"):
        mytriton.jit(do_not_specialize=["m"])(kernel)


# ---- heuristics ---------------------------------------------------------------------------


def test_heuristics_compute_meta_parameters_from_the_arguments(kernel_module):
    scale = kernel_module(HEURISTIC).scale
    x, _ = inputs(100)
    out = np.zeros_like(x)
    handle = scale[(1,)](x, out, 100, backend="interp")
    assert handle.metadata["constants"] == {"BLOCK": 128}
    np.testing.assert_array_equal(out, x * 2)


def test_heuristics_must_go_above_jit():
    with pytest.raises(CompileError, match="@heuristics goes above @jit"):
        mytriton.heuristics({"B": lambda args: 1})(lambda x: x)


# ---- autotune -----------------------------------------------------------------------------


def test_autotune_in_the_interpreter_picks_the_first_config_and_says_so(kernel_module):
    add = kernel_module(TUNED).add
    x, y = inputs(300)
    out = np.zeros_like(x)
    handle = add[grid_of(300)](x, y, out, 300, backend="interp")
    assert add.best_config.kwargs == {"BLOCK": 32}
    assert "interpreter" in add.chosen_by
    assert handle.metadata["num_warps"] == 1 and handle.metadata["constants"] == {"BLOCK": 32}
    np.testing.assert_array_equal(out, x + y)


def test_autotune_caches_the_choice_per_key_in_memory(kernel_module):
    add = kernel_module(TUNED).add
    x, y = inputs(300)
    add[grid_of(300)](x, y, np.zeros_like(x), 300, backend="interp")
    add[grid_of(300)](x, y, np.zeros_like(x), 300, backend="interp")
    assert add.chosen_by == "memory cache"
    add[grid_of(200)](x, y, np.zeros_like(x), 200, backend="interp")  # a new key value: chosen again
    assert "interpreter" in add.chosen_by
    assert len(add.cache) == 2


def test_an_autotuned_meta_parameter_given_at_the_launch_is_an_error(kernel_module):
    add = kernel_module(TUNED).add
    x, y = inputs()
    with pytest.raises(CompileError, match="conflicting meta-parameter 'BLOCK'"):
        add[(4,)](x, y, np.zeros_like(x), 100, BLOCK=32, backend="interp")


def test_launch_options_given_by_the_configs_cannot_be_given_at_the_launch(kernel_module):
    add = kernel_module(TUNED).add
    x, y = inputs()
    with pytest.raises(CompileError, match="conflicting meta-parameter 'num_warps'"):
        add[(4,)](x, y, np.zeros_like(x), 100, num_warps=8, backend="interp")


def test_autotune_key_is_a_list_of_names(kernel_module):
    with pytest.raises(CompileError, match="key is a list of argument names"):
        kernel_module(TUNED.replace('key=["n"]', 'key="n"'))


def test_an_autotune_key_that_names_no_parameter_counts_for_nothing_as_in_triton(kernel_module):
    # The published tutorial 08 keys on a misspelt 'gropup_c_ptrs'.
    add = kernel_module(TUNED.replace('key=["n"]', 'key=["n", "m"]')).add
    x, y = inputs()
    for n in (100, 100, 60):
        out = np.zeros_like(x)
        add[(4,)](x, y, out, n, backend="interp")
        np.testing.assert_array_equal(out[:n], (x + y)[:n])
    assert add.key == ["n"] and len(add.cache) == 2


def test_an_autotune_key_naming_a_parameter_the_launch_does_not_pass_counts_for_nothing_as_in_triton(
        kernel_module):
    # flash-linear-attention keys on a config's meta-parameter and on parameters left to their defaults.
    source = TUNED.replace('key=["n"]', 'key=["n", "BLOCK", "scale"]').replace(
        "def add(x, y, out, n, BLOCK: tl.constexpr):", "def add(x, y, out, n, BLOCK: tl.constexpr, scale=1.0):")
    add = kernel_module(source).add
    x, y = inputs()
    for n in (100, 60):
        out = np.zeros_like(x)
        add[(4,)](x, y, out, n, backend="interp")
        np.testing.assert_array_equal(out[:n], (x + y)[:n])
    assert len(add.cache) == 2  # keyed by n alone


def test_early_config_prune_and_perf_model_choose_the_candidates(kernel_module):
    add = kernel_module(TUNED).add
    add.early_config_prune = lambda configs, named: [c for c in configs if c.kwargs["BLOCK"] == 128]
    x, y = inputs()
    out = np.zeros_like(x)
    handle = add[grid_of(100)](x, y, out, 100, backend="interp")
    assert handle.metadata["constants"] == {"BLOCK": 128} and add.chosen_by == "only config"
    np.testing.assert_array_equal(out, x + y)


class _FakeBench:
    """Times configs by a table (BLOCK -> ms) instead of the clock, and
    counts the launches it was given."""

    def __init__(self, autotuner, ms):
        self.autotuner, self.ms, self.calls = autotuner, ms, 0

    def __call__(self, fn, quantiles=None):
        fn()
        self.calls += 1
        return [self.ms[self.autotuner._timing_block], 0, 0]


def _timed(add, monkeypatch, ms):
    """Make ``add`` time configs on a pretend GPU (the interpreter runs the
    launches) with the timings ``ms``."""
    import mytriton.runtime.jit as jit_module

    monkeypatch.setattr(jit_module, "select_backend", lambda requested=None: requested or "cuda")
    real_run = add.fn.run

    def run(*args, backend=None, **kwargs):
        add._timing_block = kwargs.get("BLOCK")
        return real_run(*args, backend="interp", **kwargs)

    monkeypatch.setattr(add.fn, "run", run)
    bench = _FakeBench(add, ms)
    add.do_bench = bench
    return bench


def test_autotune_on_the_gpu_keeps_the_fastest_config(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    add = kernel_module(TUNED).add
    bench = _timed(add, monkeypatch, {32: 2.0, 128: 1.0})
    x, y = inputs(300)
    out = np.zeros_like(x)
    add[grid_of(300)](x, y, out, 300)
    assert add.best_config.kwargs == {"BLOCK": 128} and add.chosen_by == "timing"
    assert bench.calls == 2
    np.testing.assert_array_equal(out, x + y)


def test_autotune_choices_are_kept_on_disk_as_private_json(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    add = kernel_module(TUNED).add
    _timed(add, monkeypatch, {32: 2.0, 128: 1.0})
    x, y = inputs(300)
    add[grid_of(300)](x, y, np.zeros_like(x), 300)
    [entry] = (tmp_path / "cache" / "autotune").iterdir()
    assert entry.suffix == ".json" and (entry.stat().st_mode & 0o777) == 0o600
    data = json.loads(entry.read_text())
    assert data["index"] == 1 and data["config"] == "BLOCK: 128, num_warps: 4, num_stages: 2"
    # A new process (a new Autotuner) reads the choice instead of timing.
    again = kernel_module(TUNED).add
    bench = _timed(again, monkeypatch, {32: 1.0, 128: 2.0})
    again[grid_of(300)](x, y, np.zeros_like(x), 300)
    assert again.chosen_by == "disk cache" and again.best_config.kwargs == {"BLOCK": 128}
    assert bench.calls == 0


def test_a_damaged_disk_entry_is_only_a_cache_miss(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    add = kernel_module(TUNED).add
    _timed(add, monkeypatch, {32: 2.0, 128: 1.0})
    x, y = inputs(300)
    add[grid_of(300)](x, y, np.zeros_like(x), 300)
    [entry] = (tmp_path / "cache" / "autotune").iterdir()
    entry.write_text('{"index": 7, "config": "BLOCK: 128"}')
    again = kernel_module(TUNED).add
    _timed(again, monkeypatch, {32: 1.0, 128: 2.0})
    again[grid_of(300)](x, y, np.zeros_like(x), 300)
    assert again.chosen_by == "timing" and again.best_config.kwargs == {"BLOCK": 32}


def test_reset_to_zero_and_restore_value_between_timing_runs(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    source = TUNED.replace('key=["n"]', 'key=["n"], reset_to_zero=["out"], restore_value=["x"]')
    add = kernel_module(source).add
    seen = []

    def clobber(full):
        # Sees each timed launch's buffers, then changes x as a kernel writing it would.
        seen.append((full["out"].copy(), full["x"].copy()))
        full["x"][...] = -1.0

    add.user_pre_hook = clobber
    _timed(add, monkeypatch, {32: 2.0, 128: 1.0})
    x, y = inputs(300)
    original = x.copy()
    out = np.full_like(x, 5.0)
    add[grid_of(300)](x, y, out, 300)
    assert len(seen) == 2
    for out_before, x_before in seen:
        np.testing.assert_array_equal(out_before, 0.0)  # zeroed before each timed launch
        np.testing.assert_array_equal(x_before, original)  # restored after the one before
    np.testing.assert_array_equal(x, original)
    np.testing.assert_array_equal(out, x + y)


def test_a_config_the_compiler_refuses_is_never_chosen(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    source = TUNED.replace('{"BLOCK": 32}, num_warps=1', '{"BLOCK": 48}, num_warps=1')  # not a power of two
    add = kernel_module(source).add
    _timed(add, monkeypatch, {48: 0.5, 128: 1.0})
    x, y = inputs(300)
    out = np.zeros_like(x)
    add[grid_of(300)](x, y, out, 300)
    assert add.best_config.kwargs == {"BLOCK": 128}
    np.testing.assert_array_equal(out, x + y)


def test_config_describes_itself():
    config = mytriton.Config({"BLOCK_M": 64, "GROUP": 8}, num_warps=8, num_stages=4)
    assert str(config) == "BLOCK_M: 64, GROUP: 8, num_warps: 8, num_stages: 4"
    assert config.all_kwargs() == {"BLOCK_M": 64, "GROUP": 8, "num_warps": 8, "num_stages": 4}


# ---- mytriton.testing ---------------------------------------------------------------------


def test_do_bench_returns_milliseconds_per_call_in_the_interpreter(monkeypatch):
    import time

    from mytriton.testing import do_bench

    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    ms = do_bench(lambda: time.sleep(0.002), warmup=5, rep=20)
    assert 1.5 < ms < 50


def test_do_bench_gives_quantiles_and_return_modes(monkeypatch):
    from mytriton.testing import do_bench

    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    low, median, high = do_bench(lambda: sum(range(1000)), warmup=1, rep=5, quantiles=[0.1, 0.5, 0.9])
    assert 0 < low <= median <= high
    assert isinstance(do_bench(lambda: None, warmup=1, rep=1, return_mode="all"), list)
    with pytest.raises(CompileError, match="return_mode must be one of"):
        do_bench(lambda: None, return_mode="fastest")


def test_do_bench_flushes_the_cache_and_clears_grads_before_each_timed_call(monkeypatch):
    # As Triton's do_bench: each timed call starts from a cold L2 and with no gradients.
    import time

    import mytriton.testing as testing

    calls: list = []

    class Recorder(testing._WallClock):
        def flush(self) -> None:
            calls.append("flush")

    class Leaf:
        grad = None

    leaf = Leaf()

    def fn() -> None:
        calls.append(("call", leaf.grad))
        leaf.grad = 1
        time.sleep(0.002)

    monkeypatch.setattr(testing, "_timer", Recorder)
    testing.do_bench(fn, warmup=1, rep=10, grad_to_none=[leaf])
    assert calls[0] == ("call", None)  # the first call, untimed
    assert calls[1:11] == ["flush", ("call", 1)] * 5  # the estimate: cold cache, gradients kept
    rest = calls[11:]
    warmups = next(i for i, c in enumerate(rest) if c == "flush")
    assert warmups >= 1 and rest[:warmups] == [("call", 1)] * warmups
    timed = rest[warmups:]
    assert len(timed) >= 2 and timed == ["flush", ("call", None)] * (len(timed) // 2)


def test_do_bench_counts_the_flush_in_its_estimate_as_triton_does(monkeypatch):
    # Triton's do_bench estimates one call as five (flush, call) pairs over five, and times
    # rep / estimate calls. Leaving the flush out times a short kernel 20 times as often as
    # Triton, each after a flush: an autotuner's configs take seconds each where Triton's
    # take a tenth of one (Liger's dyt: past pytest's timeout with 15 workers on one GPU).
    import time

    import mytriton.testing as testing

    timed_calls = []

    class SlowFlush(testing._WallClock):
        def flush(self) -> None:
            time.sleep(0.004)

        def timed(self, fn, times, before=lambda: None):
            timed_calls.append(times)
            return super().timed(fn, times, before)

    monkeypatch.setattr(testing, "_timer", SlowFlush)
    testing.do_bench(lambda: None, warmup=1, rep=20)
    assert timed_calls and timed_calls[-1] <= 5  # about 20 ms / 4 ms, not 20 ms / (a no-op's time)


def test_do_bench_cudagraph_needs_the_gpu_and_says_so(monkeypatch):
    from mytriton.testing import do_bench_cudagraph

    monkeypatch.setenv("MYTRITON_BACKEND", "interp")
    with pytest.raises(CompileError, match="do_bench_cudagraph captures a CUDA graph: it needs PyTorch with a GPU"):
        do_bench_cudagraph(lambda: None)


class _StandInCuda:
    """torch.cuda as do_bench_cudagraph uses it, logging what runs and whether a graph captures it."""

    def __init__(self, elapsed_ms: float):
        import contextlib

        self.log: list = []
        self.capturing = False
        self.graphs = 0
        cuda = self

        class Event:
            def __init__(self, enable_timing=False):
                pass

            def record(self):
                cuda.log.append("record")

            def elapsed_time(self, other):
                return elapsed_ms

        class CUDAGraph:
            def __init__(self):
                cuda.graphs += 1

            def replay(self):
                cuda.log.append("replay")

        @contextlib.contextmanager
        def graph(g):
            cuda.capturing = True
            yield
            cuda.capturing = False

        self.Event, self.CUDAGraph, self.graph = Event, CUDAGraph, graph
        self.stream = lambda s: contextlib.nullcontext()
        self.Stream = object
        self.is_available = lambda: True
        self.synchronize = lambda: None

    def call(self):
        self.log.append("captured call" if self.capturing else "call")


@pytest.mark.parametrize("elapsed_ms, captured", [(10.0, 10), (0.0, 1000)])
def test_do_bench_cudagraph_estimates_from_five_plain_calls_as_triton_does(monkeypatch, elapsed_ms, captured):
    # Triton estimates a call from five plain calls between two events, not from a graph (building
    # one costs more than a short kernel runs), and captures rep / estimate calls: 1000 where the
    # estimate is 0, not a number that grows without bound.
    import types

    import mytriton.runtime.jit as jit
    import mytriton.testing as testing

    cuda = _StandInCuda(elapsed_ms)
    monkeypatch.setattr(testing, "_torch", lambda: types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(jit, "select_backend", lambda: "cuda")
    testing.do_bench_cudagraph(cuda.call, rep=20)
    assert cuda.log[:8] == ["call", "record", "call", "call", "call", "call", "call", "record"]
    assert cuda.graphs == 1 and cuda.log.count("captured call") == captured
    assert cuda.log[8 + captured:] == ["record", "replay", "record"] * 10


@pytest.mark.gpu
def test_do_bench_cudagraph_times_a_launch_replayed_from_a_graph(kernel_module):
    torch = pytest.importorskip("torch")
    from mytriton.testing import do_bench_cudagraph

    add = kernel_module(ADD).add
    x, y = (torch.randn(1 << 20, device="cuda") for _ in range(2))
    out = torch.empty_like(x)
    n = x.numel()
    low, median, high = do_bench_cudagraph(lambda: add[(n // 64,)](x, y, out, n, backend="cuda"),
                                           quantiles=[0.2, 0.5, 0.8])
    assert 0 < low <= median <= high < 10
    torch.testing.assert_close(out, x + y)


def test_assert_close_uses_tritons_default_tolerance():
    from mytriton.testing import assert_close

    x = np.random.default_rng(1).standard_normal(50).astype(np.float32)
    assert_close(x, x + 0.009)
    with pytest.raises(AssertionError):
        assert_close(x, x + 0.02)
    assert_close(x, x * 1.1, atol=0, rtol=0.11)
    assert_close(np.float32(np.nan), np.nan)


@pytest.mark.gpu
def test_autotune_on_the_gpu_times_each_config(kernel_module, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    add = kernel_module(TUNED).add
    x, y = inputs(1 << 20)
    out = np.zeros_like(x)
    handle = add[grid_of(1 << 20)](x, y, out, 1 << 20, backend="cuda")
    assert add.chosen_by == "timing" and set(add.configs_timings.values()) != {float("inf")}
    assert handle.backend == "cuda" and ".entry" in handle.asm["ptx"]
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.gpu
def test_do_bench_times_a_gpu_launch_with_events(kernel_module):
    from mytriton.testing import do_bench

    add = kernel_module(ADD).add
    x, y = inputs(1 << 16)
    out = np.zeros_like(x)
    ms = do_bench(lambda: add[grid_of(1 << 16)](x, y, out, 1 << 16, backend="cuda"), warmup=5, rep=20)
    assert 0 < ms < 100


def test_autotune_builds_its_configs_at_once_before_timing_them(kernel_module, monkeypatch, tmp_path):
    """Each config is compiled (warmup) on a thread of its own before the
    first is timed, so the builds' nvcc processes overlap: here each build
    waits until the other has started, which only builds in flight together pass."""
    import threading

    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MYTRITON_BUILD_THREADS", "4")
    add = kernel_module(TUNED).add
    bench = _timed(add, monkeypatch, {32: 2.0, 128: 1.0})
    timed_run = add.fn.run
    together = threading.Barrier(2, timeout=10)
    builds = []

    def run(*args, warmup=False, **kwargs):
        if warmup and bench.calls == 0 and len(builds) < 2:
            builds.append((kwargs.get("BLOCK"), threading.current_thread().name))
            together.wait()  # raises BrokenBarrierError if the other build never starts alongside
        return timed_run(*args, warmup=warmup, **kwargs)

    monkeypatch.setattr(add.fn, "run", run)
    x, y = inputs(300)
    out = np.zeros_like(x)
    add[grid_of(300)](x, y, out, 300)
    assert sorted(block for block, _ in builds) == [32, 128]
    assert all(name.startswith("mytriton-build") for _, name in builds)
    assert add.best_config.kwargs == {"BLOCK": 128}
    np.testing.assert_array_equal(out, x + y)
