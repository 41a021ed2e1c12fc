"""benchmarks/matmul_forms.py without a GPU: its options, every form's
launch compiled by mytriton for sm_90 with the benchmark's own arguments
(torch CPU tensors of the real sizes, compiled, never launched) and its
remarks (staged? pipelined? wgmma?), the whole run in the interpreter on
small sizes (checks, JSON rows, a failing form that does not stop the
run), and, where Triton is installed, Triton compiling each form for sm_90
with the same launch (a compile-only driver)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from conftest import tiered

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import matmul_forms as bench  # noqa: E402
from common import load_as_triton, load_module  # noqa: E402

torch = pytest.importorskip("torch")

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

# What mytriton's remarks say of each form's dot at the benchmark's defaults (4096^3, H200: the
# tiles of DEFAULT_CONFIG, 4 warps, 3 stages): every dot staged, pipelined and on wgmma
# (persistent_matmul's offsets clamped with tl.where under max_contiguous hints included), but
#   - TF32: wgmma reads tf32 B K-major only, so only the forms whose B is contiguous along K in
#     memory (x @ w.T: trans_b, k_major_b) get wgmma; the others run mma.sync m16n8k8 (staged);
#   - exact f32 (ieee): FMA, staged.
# (gathered, A's rows through an index array as Liger's fused MoE reads them, B x @ w.T: as trans_b.)
# A form whose remark changes fails here: update the table (and benchmarks/NOTES.md's prediction).
ALL_FAST = (True, True, True)
MMA_SYNC = (True, True, False)
EXPECTED = {
    "f16": {name: ALL_FAST for name in bench.FORMS},
    "bf16": {name: ALL_FAST for name in bench.FORMS},
    "f32": {name: ALL_FAST if name in ("trans_b", "k_major_b", "gathered") else MMA_SYNC for name in bench.FORMS},
    "ieee": {name: MMA_SYNC for name in bench.FORMS},
}
RAGGED = "3000x2000x1000"


def launch_of(name: str, dtype: str, size: str):
    """The benchmark's problem (uninitialised CPU tensors), output and launch for a form, or None where refused."""
    form = bench.FORMS[name]
    tiles = bench.parse_config(bench.DEFAULT_CONFIG["f32" if dtype == "ieee" else dtype])
    p = bench.make_problem(*bench.parse_size(size), DTYPES["f32" if dtype == "ieee" else dtype], "cpu", tiles, 4, 3,
                           bench.H200_SMS, 4, empty=True)
    if bench.refused(form, p, "f32" if dtype == "ieee" else dtype) is not None:
        return None
    c = bench.make_output(form, p)
    return form, p, c, form.launch(p, c)


CASES = [(name, dtype, size) for dtype in EXPECTED for size in ("4096", RAGGED) for name in bench.FORMS]


@pytest.mark.parametrize("name,dtype,size", tiered(CASES, fast=[c for c in CASES if c[1:] == ("f16", "4096")
                                                                and c[0] in ("tutorial", "trans_a", "persistent", "split_k")]))
def test_each_form_compiles_for_sm90_with_the_benchmarks_launch(name, dtype, size, monkeypatch, capsys):
    monkeypatch.setenv("MYTRITON_F32_DEFAULT", "ieee" if dtype == "ieee" else "tf32")
    launched = launch_of(name, dtype, size)
    if launched is None:
        pytest.skip(f"{name} does not run at {dtype} {size}")
    form, p, c, (grid, args, kwargs) = launched
    kernel = bench.kernel_of(form, load_module(form.path(), f"forms_test_{form.stem}"))
    compiled = kernel.warmup(*args, grid=grid, backend="interp", **kwargs, **p.launch_options)
    assert compiled.options.arch == "sm_90"
    assert "__global__" in compiled.asm["cuda"]
    remarks = bench.mytriton_remarks(kernel, compiled, ptxas="a compile-only test")
    with capsys.disabled():
        for remark in remarks:
            print(f"\n    {name} {dtype} {size}: {remark}", end="")
    assert remarks and all(": dot " in r for r in remarks), remarks
    summary = bench.remark_summary(remarks)
    assert (summary["staged"], summary["pipelined"], summary["wgmma"]) == EXPECTED[dtype][name], remarks


def test_the_options_and_their_defaults():
    args = bench.parse_args([])
    assert (args.dtype, args.config, args.num_warps, args.num_stages) == ("f16", "128x128x64", 4, 3)
    assert args.sizes == ["4096", RAGGED] and args.forms == list(bench.FORMS)
    assert bench.f32_precision(args) is None
    f32 = bench.parse_args(["--dtype", "f32", "--forms", "offsets", "trans_b"])
    assert f32.config == "128x128x32" and bench.f32_precision(f32) == "tf32" and f32.forms == ["offsets", "trans_b"]
    assert bench.f32_precision(bench.parse_args(["--dtype", "f32", "--precision", "ieee"])) == "ieee"
    assert bench.parse_size("3000x2000x1000") == (3000, 2000, 1000) and bench.parse_size("64") == (64, 64, 64)
    for bad in (["--precision", "ieee"], ["--config", "128x128"], ["--sizes", "1x2"], ["--forms", "nope"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
    assert bench.tolerance("f16", None, "f16") == 1e-2 and bench.tolerance("f32", "ieee", "input") == 1e-4
    assert bench.tolerance("f32", "ieee", "f16") == 1e-3 and bench.tolerance("f32", "tf32", "input") == 1e-2


def test_the_forms_cover_the_spellings_and_the_kernel_files():
    files = {p.stem for p in (BENCHMARKS.parent / "tests" / "triton_style").glob("*matmul*.py")} | {"grouped_gemm"}
    assert files <= {form.stem for form in bench.FORMS.values()}
    # the persistent grid and NUM_SMS agree; the grouped GEMM's too
    _, p, c, (grid, _, kwargs) = launch_of("persistent", "f16", "4096")
    assert grid == (bench.H200_SMS,) and kwargs["NUM_SMS"] == bench.H200_SMS
    _, _, _, (grid, args, kwargs) = launch_of("grouped", "f16", "4096")
    assert grid == (bench.H200_SMS,) and kwargs["NUM_SM"] == bench.H200_SMS and args[-1] == bench.GROUP_COUNT
    assert launch_of("unmasked", "f16", RAGGED) is None and launch_of("grouped", "bf16", "4096") is None
    assert launch_of("descriptor", "f16", RAGGED) is not None
    assert launch_of("descriptor", "f16", "1000x1001x1000") is None  # a row of 2002 bytes: no TMA


def test_the_remark_summary():
    staged = "m.py:3: dot 64x64x32 f16: staged (cp.async, 16-byte chunks); 3 stages; wgmma m64n64k16, in flight"
    assert bench.remark_summary([staged]) == {"staged": True, "pipelined": True, "wgmma": True}
    rs = "m.py:3: dot 64x64x32 f16: B staged (cp.async), A in registers; not pipelined: why; mma.sync m16n8k16"
    assert bench.remark_summary([rs]) == {"staged": True, "pipelined": False, "wgmma": False}
    plain = "m.py:3: dot 64x64x32 f16: not staged: why; mma.sync m16n8k16 (not wgmma: why)"
    assert bench.remark_summary([staged, plain])["staged"] is False
    assert bench.remark_summary([]) == {"staged": False, "pipelined": False, "wgmma": False}


def clock(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def interp_timing() -> bench.Timing:
    return bench.Timing(first=clock, timer=lambda fn, repeat: clock(fn) * 1e3, sync=lambda: None, repeat=1,
                        ptxas="the interpreter")


@pytest.mark.slow
def test_the_run_in_the_interpreter_checks_and_records_every_form(tmp_path, monkeypatch, capsys):
    """The whole loop on small sizes in the interpreter (mytriton only): every form's check passes, and a
    row of JSON per form and size, with the remarks; a ragged size skips the unmasked forms."""
    forms = [name for name in bench.FORMS if name != "grouped"]  # its pointer arrays need device (or registered) memory
    args = bench.parse_args(["--sizes", "64", "40x72x48", "--config", "32x32x16", "--forms", *forms,
                             "--json", str(tmp_path / "rows.json")])
    done = bench.run_forms(args, "cpu", 4, False, interp_timing(), mytriton_extra={"backend": "interp"})
    out = capsys.readouterr().out
    assert "FAILED" not in out, out
    assert "unmasked     skipped" in out
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    assert [row["case"].split()[0] for row in rows] == [name for name, _, _ in done]
    assert len(rows) == 2 * len(forms) - 1
    for row in rows:
        assert row["failures"] is None and row["mytriton"] > 0 and row["error"] < 1e-2, row
        assert row["remarks"] and row["first_call_s"] > 0 and row["triton"] is None


def test_a_failing_side_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    def wrong_strides(p, c):
        grid, args, constexprs = bench._plain(p, c)
        return grid, args[:6] + (1, 1) + args[8:], constexprs  # A's strides (1, 1): the wrong elements

    broken = bench.Form("matmul_offsets", "matmul_offsets", "wrong strides", wrong_strides)
    missing = bench.Form("no_such_file", "kernel", "not there", bench._plain)
    monkeypatch.setitem(bench.FORMS, "broken", broken)
    monkeypatch.setitem(bench.FORMS, "missing", missing)
    args = bench.parse_args(["--sizes", "64", "--config", "32x32x16", "--forms", "broken", "missing", "offsets",
                             "--json", str(tmp_path / "rows.json")])
    bench.run_forms(args, "cpu", 4, False, interp_timing(), mytriton_extra={"backend": "interp"})
    out = capsys.readouterr().out
    assert "broken       mytriton FAILED: AssertionError: relative error" in out
    assert "missing      mytriton FAILED: FileNotFoundError" in out
    rows = {row["form"]: row for row in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert rows["broken"]["mytriton"] is None and "relative error" in rows["broken"]["failures"]["mytriton"]
    assert rows["missing"]["failures"]["mytriton"].startswith("FileNotFoundError")
    assert rows["offsets"]["failures"] is None and rows["offsets"]["mytriton"] > 0
    assert "broken       64x64x64         FAILED: mytriton" in out


def test_more_first_calls_load_the_kernel_anew_into_emptied_caches_and_keep_their_median(tmp_path, monkeypatch):
    for name in ("MYTRITON_CACHE_DIR", "TRITON_CACHE_DIR"):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(name, str(tmp_path / name))
    (tmp_path / "MYTRITON_CACHE_DIR" / "old.cubin").write_bytes(b"x")
    (tmp_path / "TRITON_CACHE_DIR" / "kernel").mkdir()
    (tmp_path / "TRITON_CACHE_DIR" / "launcher").mkdir()
    (tmp_path / "TRITON_CACHE_DIR" / "launcher" / "cuda_utils.so").write_bytes(b"x")
    loaded, seconds = [], iter([0.5, 0.3])
    timing = bench.Timing(first=lambda fn: (fn(), next(seconds))[1], sync=lambda: None)

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: None

    def fresh(form, side, again):
        loaded.append((side, again, sorted(p.name for p in tmp_path.rglob("*"))))
        return Kernel()
    form = bench.FORMS["offsets"]
    p = bench.make_problem(64, 64, 64, None, "cpu", (32, 32, 16), 4, 3, 4, 4)
    row = bench.Row(firsts={"mytriton": 0.1})
    bench.more_first_calls(row, form, p, [("mytriton", {})], fresh, timing, 3)
    # Triton's launcher (a shared object) stays; its kernels and every mytriton entry go
    assert loaded[0][:2] == ("mytriton", 1) and "old.cubin" not in loaded[0][2] and "kernel" not in loaded[0][2]
    assert "cuda_utils.so" in loaded[0][2] and [again for _, again, _ in loaded] == [1, 2]
    assert row.info["mytriton_first_calls_s"] == [0.1, 0.5, 0.3] and row.firsts["mytriton"] == 0.3


def test_load_as_triton_keeps_mytritons_host_helpers(monkeypatch):
    """grouped_gemm.py imports mytriton.runtime.memory.addressable for its host code: Triton's copy keeps that
    import (Triton has no such module) and takes Triton's jit and language."""
    import common

    monkeypatch.setattr(common, "load_module", lambda path, name: Path(path).read_text())
    text = common.load_as_triton("", "test", path=BENCHMARKS.parent / "tests" / "triton_style" / "grouped_gemm.py")
    assert "from mytriton.runtime.memory import addressable\n" in text
    assert "import triton\nimport triton.language as tl\n" in text and "import mytriton" not in text


# ---- Triton, where it is installed: the same launch compiled for sm_90 -----------------------------------------


def compile_only_driver():
    """A Triton driver that compiles for sm_90 without a GPU (launches are never made)."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class CompileOnly(DriverBase):
        def __init__(self) -> None:
            super().__init__()

        @staticmethod
        def is_active() -> bool:
            return False

        def get_current_device(self):
            return 0

        def set_current_device(self, device) -> None:
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)

        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_device_interface(self):
            return torch.cuda

        def map_python_to_cpp_type(self, ty):
            return ty

        def get_benchmarker(self):
            raise RuntimeError("a compile-only driver times nothing")

        def get_empty_cache_for_benchmark(self):
            raise RuntimeError("a compile-only driver times nothing")

        def clear_cache(self, cache) -> None:
            pass

    return CompileOnly()


TRITON_CASES = [(name, dtype, size) for dtype, size in (("f16", "4096"), ("f16", RAGGED), ("bf16", "4096"),
                                                          ("f32", "4096"), ("ieee", "4096")) for name in bench.FORMS]


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype,size", TRITON_CASES)
def test_triton_compiles_each_form_for_sm90_with_the_same_launch(name, dtype, size, tmp_path, monkeypatch):
    pytest.importorskip("triton")
    from triton.runtime.driver import driver

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee" if dtype == "ieee" else "tf32")
    monkeypatch.setattr(driver, "_active", compile_only_driver())  # restored after the test, whatever it was
    launched = launch_of(name, dtype, size)
    if launched is None:
        pytest.skip(f"{name} does not run at {dtype} {size}")
    form, p, c, (grid, args, kwargs) = launched
    kernel = bench.kernel_of(form, load_as_triton("", f"test_{form.stem}", path=form.path()))
    compiled = kernel.warmup(*args, grid=grid, **kwargs, **p.launch_options)
    assert compiled.asm["cubin"]
    if dtype in ("f16", "bf16"):
        assert "warp_group_dot" in compiled.asm["ttgir"]
