"""NVRTC builds kernels in-process where libnvrtc is found (backends/cuda/nvrtc.py),
and nvcc builds them elsewhere. Generated code includes no header, so the
library is all NVRTC needs.

Finding the library and choosing the toolchain need no NVRTC: those tests run
everywhere, on stand-in folders. Tests that compile are marked ``nvrtc`` and
skip where libnvrtc is not found (``pip install nvidia-cuda-nvrtc`` brings it);
every test gets its own empty cache directory.
"""
from __future__ import annotations

import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, sample_names, sample_options, tiered
from dwarf_lines import line_rows, sections
from mytriton import compiler
from mytriton.backends.cuda import nvcc, nvrtc
from mytriton.compiler import Options
from mytriton.diagnostics import CompileError
from test_launch_path import StandInTensor

MATMUL = dict(kernel="matmul_kernel", signature="*fp16,*fp16,*fp32,i32,i32,i32",
              defines={"BM": 128, "BN": 128, "BK": 64}, num_warps=8)
EM_CUDA = 190  # the ELF machine number of a cubin


def matmul_cuda() -> str:
    text = (SAMPLES / "matmul.py").read_text()
    return compiler.compile_source(text, str(SAMPLES / "matmul.py"), "cuda", Options(**MATMUL))


def sample_cuda(name: str) -> str:
    text = (SAMPLES / f"{name}.py").read_text()
    return compiler.compile_source(text, str(SAMPLES / f"{name}.py"), "cuda", Options(**sample_options(name)))


@pytest.fixture
def no_pip_nvidia(monkeypatch):
    """The nvidia pip packages this environment may have are not looked in
    (the ones a test puts on sys.path are)."""
    real = nvrtc._nvidia_folders
    installed = set(real())
    monkeypatch.setattr(nvrtc, "_nvidia_folders", lambda: [f for f in real() if f not in installed])
    monkeypatch.delenv(nvrtc.ENV, raising=False)


def toolkit(root: Path, lib: str = "lib64") -> Path:
    """A stand-in toolkit under ``root``: bin/nvcc and a libnvrtc (an empty file)."""
    (root / "bin").mkdir(parents=True)
    (root / "bin/nvcc").write_text("")
    (root / lib).mkdir(parents=True)
    (root / lib / "libnvrtc.so").write_text("")
    return root


def compiles(monkeypatch) -> list[tuple[float, float, str]]:
    """Each NVRTC compile from now on: when it began and ended, and on which thread."""
    calls: list[tuple[float, float, str]] = []
    real = nvrtc.compile_source

    def counting(*args, **kwargs):
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            calls.append((start, time.perf_counter(), threading.current_thread().name))

    monkeypatch.setattr(nvrtc, "compile_source", counting)
    return calls


# ---- finding libnvrtc (no NVRTC needed) --------------------------------------------------


def test_nvrtc_is_off_when_the_environment_says_0(monkeypatch):
    monkeypatch.setenv(nvrtc.ENV, "0")
    assert nvrtc.find() == (None, f"{nvrtc.ENV}=0 turns NVRTC off")
    assert nvcc.nvrtc_for("sm_90a") is None


def test_a_path_in_the_environment_that_names_no_library_finds_none(monkeypatch, tmp_path):
    monkeypatch.setenv(nvrtc.ENV, str(tmp_path / "missing.so"))
    found, why = nvrtc.find()
    assert found is None and why.endswith("names no libnvrtc")


def test_a_folder_in_the_environment_is_searched_for_the_library(monkeypatch, tmp_path):
    (tmp_path / "libnvrtc.so.13").write_text("")
    monkeypatch.setenv(nvrtc.ENV, str(tmp_path))
    assert nvrtc.find_library()[0] == tmp_path / "libnvrtc.so.13"


def test_the_nvidia_pip_package_is_found_on_sys_path_without_importing_it(monkeypatch, tmp_path, no_pip_nvidia):
    lib = tmp_path / "site/nvidia/cu13/lib"
    lib.mkdir(parents=True)
    for name in ("libnvrtc.so.13", "libnvrtc.alt.so.13", "libnvrtc-builtins.so.13.0"):
        (lib / name).write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    before = set(sys.modules)
    path, where = nvrtc.find_library()
    assert path == lib / "libnvrtc.so.13" and where == "an nvidia pip package"
    assert not {name for name in set(sys.modules) - before if name.split(".")[0] in ("nvidia", "torch")}


def test_the_toolkit_beside_nvcc_is_found_when_no_pip_package_is(tmp_path, no_pip_nvidia):
    root = toolkit(tmp_path / "cuda", lib="targets/x86_64-linux/lib")
    path, where = nvrtc.find_library(nvcc=str(root / "bin/nvcc"))
    assert path == root / "targets/x86_64-linux/lib/libnvrtc.so" and str(root) in where


# ---- choosing the toolchain (a stand-in NVRTC) -------------------------------------------


def stand_in(version=(13, 0), archs=(80, 90, 100)) -> nvrtc.Nvrtc:
    return nvrtc.Nvrtc(lib=None, path="/stand-in/libnvrtc.so",  # type: ignore[arg-type]
                       version=version, archs=frozenset(archs), toolchain="nvrtc stand-in")


def test_nvrtc_is_given_no_include_folder():
    options = nvcc.nvrtc_options(stand_in(), "sm_90a")
    assert [option for option in options if option.startswith(("-I", "--include-path"))] == []


def test_nvrtc_newer_than_the_driver_leaves_the_build_to_nvcc(monkeypatch):
    monkeypatch.setattr(nvrtc, "available", lambda: stand_in(version=(13, 0)))
    assert nvcc.nvrtc_for("sm_90a", driver_version=12080) is None
    assert nvcc.nvrtc_for("sm_90a", driver_version=13000) is not None
    assert nvcc.nvrtc_for("sm_90a") is not None  # no driver to satisfy: the CLI's builds


def test_nvrtc_from_12_4_on_builds_with_minimal():
    assert "-minimal" in nvcc.nvrtc_options(stand_in(version=(13, 0)), "sm_90a")
    assert "-minimal" in nvcc.nvrtc_options(stand_in(version=(12, 4)), "sm_90a")
    assert "-minimal" not in nvcc.nvrtc_options(stand_in(version=(12, 3)), "sm_90a")


def test_an_architecture_nvrtc_does_not_know_is_left_to_nvcc(monkeypatch):
    monkeypatch.setattr(nvrtc, "available", lambda: stand_in(archs=(80, 90)))
    assert nvcc.nvrtc_for("sm_90a") is not None
    assert nvcc.nvrtc_for("sm_120a") is None


def test_the_launcher_gives_the_build_its_drivers_version(monkeypatch, kernel_module):
    from fake_driver import FakeDriver, install
    from mytriton.runtime import cuda_driver

    install(monkeypatch, FakeDriver())
    seen = []
    monkeypatch.setattr(cuda_driver, "compile_cubin",
                        lambda source, arch, driver_version=None: seen.append(driver_version) or source.encode())
    kernel = cuda_driver.CudaKernel(sample_cuda("add"))
    assert seen == []  # built at its first launch, or a warmup's build()
    kernel.build()
    assert seen == [13000]  # the stand-in driver's cuDriverGetVersion


def test_doctor_says_when_nvrtc_is_off(monkeypatch):
    from mytriton.doctor import nvrtc_row

    monkeypatch.setenv(nvrtc.ENV, "0")
    assert nvrtc_row() == ("nvrtc", f"not used ({nvrtc.ENV}=0 turns NVRTC off): nvcc builds")


def test_time_passes_names_the_toolchain_that_built(monkeypatch):
    monkeypatch.setattr(nvcc._used, "name", "nvrtc", raising=False)
    assert compiler.stage_label("ptx") == "nvrtc (ptx + cubin)"
    assert compiler.stage_label("cubin").startswith("nvrtc (cubin")
    monkeypatch.setattr(nvcc._used, "name", "nvcc")
    assert compiler.stage_label("ptx") == "nvcc (ptx)"


# ---- building with NVRTC ------------------------------------------------------------------


def elf_symbols(cubin: bytes) -> set[str]:
    """The names in a 64-bit ELF file's symbol table."""
    parts = sections(cubin)
    table, names = parts[".symtab"], parts[".strtab"]
    return {names[name:names.index(b"\0", name)].decode()
            for (name,) in (struct.unpack_from("<I", table, at) for at in range(0, len(table), 24))}


@pytest.mark.nvrtc
def test_a_matmul_builds_to_an_sm_90a_cubin_through_nvrtc(cache, monkeypatch):
    monkeypatch.setattr(nvcc, "find_nvcc", lambda: pytest.fail("nvcc ran"))
    cubin = nvcc.compile_cubin(matmul_cuda(), "sm_90")  # the kernel's header asks for sm_90a (wgmma)
    assert nvcc.last_toolchain() == "nvrtc"
    assert cubin[:4] == b"\x7fELF" and cubin[4] == 2  # 64-bit ELF
    assert struct.unpack_from("<H", cubin, 18)[0] == EM_CUDA
    assert "matmul_kernel" in elf_symbols(cubin)
    assert {".text.matmul_kernel", ".nv.info.matmul_kernel"} <= set(sections(cubin))
    assert {file for _, file, _ in line_rows(cubin)} == {str(SAMPLES / "matmul.py")}
    assert struct.unpack_from("<I", cubin, 0x30)[0] >> 8 & 0xFF == 90  # e_flags: the SM (cuobjdump: EF_CUDA_SM90)


@pytest.mark.nvrtc
def test_nvrtc_alone_as_pip_installs_it_is_found_and_builds_with_no_include_folder(cache, monkeypatch, tmp_path):
    """nvidia-cuda-nvrtc's layout with the library and nothing else: no include folder, no
    nvcc, no CUDA headers named to NVRTC (which searches no folder of its own). It builds an
    f16 matmul and a max reduction (its -INFINITY)."""
    library = Path(nvrtc.available().path).resolve()
    lib = tmp_path / "site/nvidia/cu13/lib"
    lib.mkdir(parents=True)
    for path in library.parent.glob("libnvrtc*"):
        (lib / path.name).symlink_to(path)
    monkeypatch.delenv(nvrtc.ENV, raising=False)
    monkeypatch.setattr(nvrtc, "_nvidia_folders", lambda: [tmp_path / "site/nvidia"])
    monkeypatch.setattr(nvcc, "find_nvcc", lambda: pytest.fail("nvcc ran"))
    given: list[list[str]] = []
    real = nvrtc.compile_source

    def recording(compiler, source, name, options):
        given.append(options)
        return real(compiler, source, name, options)

    monkeypatch.setattr(nvrtc, "compile_source", recording)
    found, where = nvrtc.find()
    assert found is not None and Path(found.path).parent == lib and where.endswith("(from an nvidia pip package)")
    assert not (lib.parent / "include").exists()
    for name in ("matmul", "row_max"):
        assert nvcc.compile_cubin(sample_cuda(name), "sm_90")[:4] == b"\x7fELF" and nvcc.last_toolchain() == "nvrtc"
    assert len(given) == 2 and not [o for options in given for o in options if o.startswith(("-I", "--include"))]


@pytest.mark.nvrtc
def test_the_ptx_names_its_target_and_the_cubin_of_that_build_is_kept_with_it(cache, monkeypatch):
    calls = compiles(monkeypatch)
    source = matmul_cuda()
    ptx = nvcc.compile_ptx(source, "sm_90")
    assert ".target sm_90a" in ptx and ".entry matmul_kernel(" in ptx
    assert nvcc.cubin_from_ptx(ptx) == nvcc.compile_cubin(source, "sm_90")
    assert len(calls) == 1  # one compile gave the PTX and the cubin


@pytest.mark.nvrtc
def test_an_nvrtc_compile_error_is_a_compile_error_with_nvrtcs_log(cache):
    broken = matmul_cuda().replace("const int v2 = ", "const int v2 = no_such_name + ", 1)
    with pytest.raises(CompileError) as error:
        nvcc.compile_cubin(broken, "sm_90")
    message = str(error.value)
    assert "nvrtc failed (-arch=sm_90a -lineinfo -device-int128 -minimal)" in message
    assert 'identifier "no_such_name" is undefined' in message
    assert f"{SAMPLES / 'matmul.py'}(11): error" in message  # on the kernel's Python line
    assert error.value.__cause__ is None and "Traceback" not in message


@pytest.mark.nvrtc
@pytest.mark.nvcc
def test_nvrtc_and_nvcc_builds_are_cached_apart(cache, monkeypatch):
    calls = compiles(monkeypatch)
    source = sample_cuda("add")
    by_nvrtc = nvcc.compile_cubin(source)
    monkeypatch.setenv(nvrtc.ENV, "0")
    by_nvcc = nvcc.compile_cubin(source)
    assert nvcc.last_toolchain() == "nvcc" and len(list(cache.iterdir())) == 2
    monkeypatch.delenv(nvrtc.ENV)
    assert nvcc.compile_cubin(source) == by_nvrtc and len(calls) == 1  # its own entry, not nvcc's
    monkeypatch.setenv(nvrtc.ENV, "0")
    assert nvcc.compile_cubin(source) == by_nvcc


@pytest.mark.nvrtc
def test_emit_cubin_through_nvrtc_needs_no_nvcc_and_names_nvrtc_in_time_passes(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "MYTRITON_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    flags = ["-k", MATMUL["kernel"], "-s", MATMUL["signature"], "--num-warps", "8"] + \
        [f"-D{name}={value}" for name, value in MATMUL["defines"].items()]
    result = subprocess.run([sys.executable, "-m", "mytriton.cli", "compile", "samples/matmul.py", *flags,
                             "--emit=cubin", "--time-passes", "-o", str(tmp_path / "mm.cubin")],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "nvrtc (ptx + cubin)" in result.stderr and "nvcc" not in result.stderr
    assert (tmp_path / "mm.cubin").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.nvrtc
def test_builds_on_several_threads_run_nvrtc_at_once_and_match_one_at_a_time(cache, monkeypatch):
    """ctypes lets go of the GIL while NVRTC compiles: two threads' compiles overlap."""
    calls = compiles(monkeypatch)
    sources = [sample_cuda(name) for name in ("softmax", "matmul")]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(nvcc.compile_cubin, sources))
    (start_a, end_a, _), (start_b, end_b, _) = calls
    assert max(start_a, start_b) < min(end_a, end_b)
    monkeypatch.setenv("MYTRITON_ALWAYS_COMPILE", "1")
    assert [nvcc.compile_cubin(source) for source in sources] == together


TUNED = '''
    @mytriton.autotune(configs=[mytriton.Config({"BLOCK": 64}, num_warps=2),
                                mytriton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
    @mytriton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)
'''


@pytest.mark.nvrtc
def test_an_autotuner_builds_its_configs_with_nvrtc_on_its_build_threads(cache, monkeypatch, kernel_module):
    from fake_driver import FakeDriver, install
    from mytriton.runtime import cuda_driver

    install(monkeypatch, FakeDriver())
    monkeypatch.setattr(cuda_driver, "compile_cubin", nvcc.compile_cubin)  # the real build, on the stand-in GPU
    monkeypatch.setenv("MYTRITON_BUILD_THREADS", "2")
    calls = compiles(monkeypatch)
    add = kernel_module(TUNED).add
    monkeypatch.setattr(type(add), "_bench", lambda self, config, *args: 1.0)  # builds are the point, not timing
    x, y, out = (StandInTensor(0x10000 * i) for i in (1, 2, 3))
    add[lambda meta: (256 // meta["BLOCK"],)](x, y, out, 256)
    assert len(calls) == 2 and all(name.startswith("mytriton-build") for _, _, name in calls)


def functions(cubin: bytes) -> set[str]:
    return {name for name in elf_symbols(cubin) if name and not name.startswith(".")}


def python_lines(cubin: bytes) -> set[tuple[str, int]]:
    return {(file, line) for _, file, line in line_rows(cubin) if file.endswith(".py")}


def shared_sizes(cubin: bytes) -> dict[str, int]:
    return {name: len(data) for name, data in sections(cubin).items() if name.startswith(".nv.shared.")}


@pytest.mark.nvrtc
@pytest.mark.nvcc
@pytest.mark.parametrize("name", tiered(sample_names(), fast=()))
def test_every_sample_builds_with_nvrtc_as_with_nvcc(cache, monkeypatch, name):
    """The same kernels, symbols and static shared memory from both toolchains."""
    source = sample_cuda(name)
    by_nvrtc = nvcc.compile_cubin(source)
    assert nvcc.last_toolchain() == "nvrtc"
    monkeypatch.setenv(nvrtc.ENV, "0")
    by_nvcc = nvcc.compile_cubin(source)
    assert functions(by_nvrtc) == functions(by_nvcc)
    assert shared_sizes(by_nvrtc) == shared_sizes(by_nvcc)
    # The kernel's own lines (nvcc's table also names the CUDA headers' files that NVRTC keeps inside).
    assert python_lines(by_nvrtc) == python_lines(by_nvcc)

