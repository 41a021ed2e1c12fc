"""Where Liger-Kernel's mHC spends its GPU time, kernel by kernel.

Liger's own benchmark setup (benchmark_mhc.py's ``_setup_mhc``: B 4, T 128,
HC 4, C 4096, bf16, as ``tools/liger_speed_direct.py mhc`` times it), three
steps of each sub-kernel and mode under ``torch.profiler``; prints the
kernels of each, sorted by their total GPU time. Run it once on each side,
from the repository root on the GPU machine, and compare the rows:

    python tools/liger_mhc_profile.py [coeffs:backward,pre:forward,...]
    python -m mytriton.as_triton tools/liger_mhc_profile.py [...]

(mytriton's kernels are named ``mytriton_<kernel>``.) The default is every
sub-kernel (coeffs, pre, post_res) in its forward and backward.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from liger_speed import SCRIPTS, SOURCE, write_metadata  # noqa: E402

for _path in (SCRIPTS, SOURCE / "src", SOURCE, write_metadata()):
    if str(_path) not in sys.path:
        sys.path.insert(1, str(_path))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

CONFIG = {"B": 4, "T": 128, "HC": 4, "C": 4096, "tmax": 20, "rms_eps": 1e-6, "pre_eps": 0.0,
          "sinkhorn_eps": 1e-6, "post_mult": 2.0}
DEFAULT = [f"{sub}:{mode}" for sub in ("coeffs", "pre", "post_res") for mode in ("forward", "backward")]


def steps(sub_kernel: str, mode: str):
    """The step the benchmark times for ``sub_kernel`` in ``mode``."""
    import benchmark_mhc
    from utils import SingleBenchmarkRunInput

    single = SingleBenchmarkRunInput(x=CONFIG["T"], kernel_provider="liger", kernel_operation_mode=mode,
                                     extra_benchmark_config={**CONFIG, "sub_kernel": sub_kernel})
    grad_to_none, fwd, fwd_loss = benchmark_mhc._setup_mhc(single)
    if mode == "forward":
        return fwd
    y = fwd_loss()

    def backward() -> None:
        for t in grad_to_none:
            t.grad = None
        y.backward(retain_graph=True)

    return backward


def main(argv: list[str]) -> int:
    side = "mytriton" if "mytriton" in sys.modules else "triton"
    for item in (argv[0].split(",") if argv else DEFAULT):
        sub_kernel, mode = item.split(":")
        torch.manual_seed(0)
        step = steps(sub_kernel, mode)
        for _ in range(3):  # compile and warm up
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        print(f"== {side}: mhc {sub_kernel} {mode}, three steps", flush=True)
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=60),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
