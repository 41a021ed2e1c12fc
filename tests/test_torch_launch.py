"""Launching from PyTorch on the GPU, as a torch op or a Triton kernel
launches: on torch's current stream (ordered after the work queued there,
and before the work queued after it), from any thread (autograd's backward
included), inside a CUDA graph capture, on the GPU that holds the tensors
(torch's current device left alone), and never from a CPU tensor."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

import mytriton
from conftest import ROOT
from mytriton.diagnostics import CompileError

pytestmark = pytest.mark.gpu

AFFINE = '''
    @mytriton.jit
    def affine(x, out, n, a, b, BLOCK: tl.constexpr = 256):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) * a + b, mask=mask)
'''

SQUARE_SCALE = '''
    @mytriton.jit
    def forward(x, w, y, n, BLOCK: tl.constexpr = 128):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x_ = tl.load(x + offs, mask=mask)
        tl.store(y + offs, x_ * x_ * tl.load(w + offs, mask=mask), mask=mask)

    @mytriton.jit
    def backward(x, w, dy, dx, dw, n, BLOCK: tl.constexpr = 128):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x_ = tl.load(x + offs, mask=mask)
        w_ = tl.load(w + offs, mask=mask)
        g = tl.load(dy + offs, mask=mask)
        tl.store(dx + offs, 2.0 * x_ * w_ * g, mask=mask)
        tl.store(dw + offs, x_ * x_ * g, mask=mask)
'''

SLEEP_CYCLES = 50_000_000  # ~25 ms of a spinning kernel: work still queued when the launch comes


def close(a, b):
    """Equal up to rounding: the kernel's a * x + b is one fused multiply-add
    where torch rounds twice, which near cancellation exceeds any relative bound."""
    return bool((a - b).abs().max() <= 1e-5 + 1e-5 * b.abs().max())


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    return torch


def grid(n, block=256):
    return (mytriton.cdiv(n, block),)


# ---- streams ------------------------------------------------------------------------------------


def test_a_launch_on_a_busy_side_stream_waits_for_the_torch_work_before_it(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        y.copy_(x * 3.0 + 1.0)  # queued behind the sleep
        affine[grid(n)](y, out, n, 2.0, -1.0)
        after = out * 0.5  # torch work after the launch sees its result
    side.synchronize()
    expected = (x * 3.0 + 1.0) * 2.0 - 1.0
    assert close(out, expected) and close(after, expected * 0.5)


def test_stream_names_another_stream_than_the_current_one(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    n = 100_000
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    torch.cuda.synchronize()
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        torch.cuda._sleep(SLEEP_CYCLES)
        y.copy_(x + 5.0)
    affine[grid(n)](y, out, n, 1.0, 1.0, stream=other)  # on `other`, while the current stream is the default
    other.synchronize()
    assert close(out, x + 6.0)


def test_cupy_arrays_launch_on_cupys_current_stream(torch, kernel_module):
    cupy = pytest.importorskip("cupy")
    affine = kernel_module(AFFINE).affine
    n = 100_000
    x = cupy.random.standard_normal(n, dtype=cupy.float32)
    y = cupy.full(n, cupy.nan, dtype=cupy.float32)
    out = cupy.full(n, cupy.nan, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        with torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
            torch.cuda._sleep(SLEEP_CYCLES)
        cupy.add(x, 5.0, out=y)
        affine[grid(n)](y, out, n, 1.0, 1.0)
    stream.synchronize()
    assert bool(cupy.allclose(out, x + 6.0))


# ---- threads and autograd -----------------------------------------------------------------------


def test_kernels_first_launched_from_several_threads_at_once_match_torch(torch, kernel_module):
    module = kernel_module(AFFINE)
    start = threading.Barrier(4)
    failures = []
    # The data is made here: torch's CUDA generators made on four threads at once are what
    # compute-sanitizer's racecheck fails to track ("Internal Sanitizer Error"), with or
    # without a mytriton kernel; the threads' own CUDA work is then the kernels' first launches.
    data = {}
    for seed in range(1, 5):
        n = 10_000 + seed * 37
        generator = torch.Generator(device="cuda").manual_seed(seed)
        data[seed] = (n, torch.randn(n, device="cuda", generator=generator),
                      torch.full((n,), float("nan"), device="cuda"))
    torch.cuda.synchronize()

    def work(seed):
        try:
            n, x, out = data[seed]
            start.wait()
            for _ in range(20):
                module.affine[grid(n)](x, out, n, float(seed), 0.5)
            torch.cuda.current_stream().synchronize()
            if not close(out, x * seed + 0.5):
                failures.append(f"thread {seed}: wrong result")
        except Exception as err:  # reported with the thread's own error below
            failures.append(f"thread {seed}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def run_in_thread(work):
    """``work()`` on a new thread; its exception, if any, raised here."""
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(_attempt(work)))
    thread.start()
    thread.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _attempt(work):
    try:
        return work()
    except BaseException as err:  # handed to the joining thread
        return err


def current_context():
    from mytriton.runtime.driver_api import driver

    return driver().current_context()


def test_a_thread_that_never_touched_cuda_launches_and_is_left_without_a_context(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    x = torch.randn(5000, device="cuda")
    out = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()

    def work():
        before = current_context()
        affine[grid(5000)](x, out, 5000, 2.0, 0.5)
        return before, current_context()  # (torch.cuda.synchronize() here would make one current)

    assert run_in_thread(work) == (0, 0)
    torch.cuda.synchronize()
    assert close(out, x * 2.0 + 0.5)


def test_a_thread_in_a_context_of_its_own_gets_its_context_back(torch, kernel_module):
    import ctypes

    from mytriton.runtime.driver_api import driver

    lib = driver().lib
    create = getattr(lib, "cuCtxCreate_v2", None)
    if create is None:
        pytest.skip("this driver has no cuCtxCreate_v2")
    affine = kernel_module(AFFINE).affine
    x = torch.randn(5000, device="cuda")
    out = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()

    def work():
        own = ctypes.c_void_p()
        assert create(ctypes.byref(own), 0, 0) == 0  # a private context of GPU 0, made current
        try:
            affine[grid(5000)](x, out, 5000, -1.0, 0.5, stream=0)
            return current_context() == own.value
        finally:
            lib.cuCtxDestroy_v2(own)

    assert run_in_thread(work)
    torch.cuda.synchronize()
    assert close(out, 0.5 - x)


def square_scale_function(torch, module):
    class SquareScale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            n = x.numel()
            y = torch.empty_like(x)
            module.forward[grid(n, 128)](x, w, y, n)
            ctx.save_for_backward(x, w)
            return y

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            n = x.numel()
            dx, dw = torch.empty_like(x), torch.empty_like(w)
            module.backward[grid(n, 128)](x, w, dy.contiguous(), dx, dw, n)
            return dx, dw

    return SquareScale.apply


def test_an_autograd_functions_kernels_match_torchs_gradients(torch, kernel_module):
    module = kernel_module(SQUARE_SCALE)
    apply = square_scale_function(torch, module)
    x = torch.randn(3000, device="cuda", requires_grad=True)
    w = torch.randn(3000, device="cuda", requires_grad=True)
    apply(x, w).sum().backward()  # backward runs on autograd's own thread, its kernels never launched before
    x_ref, w_ref = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (x_ref * x_ref * w_ref).sum().backward()
    assert torch.allclose(x.grad, x_ref.grad, rtol=1e-5, atol=1e-6)
    assert torch.allclose(w.grad, w_ref.grad, rtol=1e-5, atol=1e-6)


def test_an_autograd_function_passes_gradcheck(torch, kernel_module):
    module = kernel_module(SQUARE_SCALE)
    apply = square_scale_function(torch, module)
    x = torch.randn(300, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(300, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(apply, (x, w))


# ---- CUDA graphs --------------------------------------------------------------------------------


def test_a_launch_captured_in_a_cuda_graph_replays_on_new_inputs(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    n = 50_000
    x = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    warm = torch.cuda.Stream()  # warm-up off the capture, as torch's documentation asks
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        affine[grid(n)](x, out, n, 3.0, 0.25)
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        affine[grid(n)](x, out, n, 3.0, 0.25)
    for _ in range(3):
        x.copy_(torch.randn(n, device="cuda"))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert close(out, x * 3.0 + 0.25)


def test_a_kernel_first_launched_inside_a_capture_replays(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    n = 5_000
    x = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        affine[grid(n)](x, out, n, -1.0, 2.0)
    graph.replay()
    torch.cuda.synchronize()
    assert close(out, 2.0 - x)


# ---- arguments ----------------------------------------------------------------------------------


def test_a_cpu_tensor_is_refused_at_the_launch(torch, kernel_module):
    affine = kernel_module(AFFINE).affine
    out = torch.zeros(100, device="cuda")
    with pytest.raises(CompileError, match=r"argument 'x' is a tensor on cpu, but the kernel runs on the GPU") as err:
        affine[grid(100)](torch.ones(100), out, 100, 1.0, 0.0, backend="cuda")
    assert err.value.loc.file == __file__
    assert torch.equal(out, torch.zeros(100, device="cuda"))


# ---- several GPUs -------------------------------------------------------------------------------


@pytest.fixture
def two_gpus(torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    return torch


def test_tensors_on_the_second_gpu_launch_there_leaving_the_current_device(two_gpus, kernel_module):
    torch = two_gpus
    affine = kernel_module(AFFINE).affine
    torch.cuda.set_device(0)
    x = torch.randn(10_000, device="cuda:1")
    out = torch.full_like(x, float("nan"))
    affine[grid(10_000)](x, out, 10_000, 2.0, 1.0)
    torch.cuda.synchronize(1)
    assert close(out, x * 2.0 + 1.0) and torch.cuda.current_device() == 0


def test_launches_alternating_between_gpus_each_run_on_their_tensors_gpu(two_gpus, kernel_module):
    torch = two_gpus
    affine = kernel_module(AFFINE).affine
    pairs = [(torch.randn(5000, device=f"cuda:{d}"), torch.empty(5000, device=f"cuda:{d}")) for d in (0, 1)]
    for step in range(6):
        x, out = pairs[step % 2]
        affine[grid(5000)](x, out, 5000, float(step), 1.0)
        torch.cuda.synchronize(step % 2)
        assert close(out, x * step + 1.0)


def test_a_launch_inside_torch_cuda_device_of_the_second_gpu(two_gpus, kernel_module):
    torch = two_gpus
    affine = kernel_module(AFFINE).affine
    with torch.cuda.device(1):
        x = torch.randn(7000, device="cuda")
        out = torch.empty_like(x)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(SLEEP_CYCLES)
            y = x + 1.0
            affine[grid(7000)](y, out, 7000, 1.0, 1.0)
        side.synchronize()
    assert out.device.index == 1 and close(out, x + 2.0)


def test_tensors_on_two_gpus_are_an_error_naming_them(two_gpus, kernel_module):
    torch = two_gpus
    affine = kernel_module(AFFINE).affine
    with pytest.raises(CompileError, match=r"'x' is on cuda:0 and 'out' on cuda:1"):
        affine[grid(100)](torch.ones(100, device="cuda:0"), torch.ones(100, device="cuda:1"), 100, 1.0, 0.0)


def test_a_two_process_nccl_training_step_matches_one_process(two_gpus, tmp_path):
    script = ROOT / "tests" / "distributed_step.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
    result = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gradients match" in result.stdout
