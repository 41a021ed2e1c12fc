"""The Liger tools: tools/liger_speed.py's table (the Liger rows of the two
sides paired by kernel, provider, mode, size and config, each ratio Triton's
time over mytriton's) and tools/cuda_fingerprint.py's Liger launches."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import liger_speed  # noqa: E402


def row(provider: str, mode: str, x: str, ms: float) -> dict:
    return {"kernel_name": "rms_norm", "kernel_provider": provider, "kernel_operation_mode": mode,
            "x_value": x, "extra_benchmark_config_str": "{}", "y_value_50": str(ms), "metric_name": "speed"}


def test_rows_pair_by_provider_mode_and_size_and_give_tritons_time_over_mytritons():
    result = {"op": "rms_norm",
              "triton": [row("liger", "forward", "1024", 1.0), row("liger", "backward", "1024", 3.0),
                         row("liger", "forward", "2048", 2.0)],
              "mytriton": [row("liger", "forward", "1024", 0.5), row("liger", "backward", "1024", 4.0)]}
    ratios = {k[2]: t / m for k, t, m in liger_speed.pairs(result)}
    assert ratios == {"forward": 2.0, "backward": 0.75}  # the 2048 row has no mytriton side


def test_the_summary_names_the_slowest_row():
    result = {"op": "rms_norm",
              "triton": [row("liger", "forward", "1024", 1.0), row("liger", "full", "4096", 2.0)],
              "mytriton": [row("liger", "forward", "1024", 1.0), row("liger", "full", "4096", 4.0)]}
    line = liger_speed.summary([result]).splitlines()[-1]
    assert line == "| rms_norm | 2 | 0.71 | 0.50 | liger full x=4096 |"


def test_an_op_that_timed_out_says_so():
    result = {"op": "tvd", "triton": [], "mytriton": [], "mytriton_timed_out": True}
    assert "tvd (timed out: mytriton) | 0 |" in liger_speed.summary([result])


def test_an_op_whose_script_fails_says_where_and_why():
    tail = ('Traceback (most recent call last):\n  File "benchmark_x.py", line 186, in <module>\n'
            "TypeError: f() got an unexpected keyword argument 'k'\n")
    result = {"op": "x", "triton": [], "mytriton": [], "triton_tail": tail, "mytriton_tail": tail}
    line = liger_speed.summary([result]).splitlines()[-1]
    assert line == ("| x (the script failed on triton and mytriton: TypeError: f() got an unexpected keyword "
                    "argument 'k') | 0 | | | |")


def test_the_script_runner_keeps_only_liger_speed_sweeps():
    import liger_speed_rows

    calls = []
    run = liger_speed_rows.liger_speed_only(lambda **kwargs: calls.append(kwargs))
    run(metric_name="speed", kernel_providers=["huggingface", "liger", "liger-fp32-accum"], x_values=[1])
    run(metric_name="memory", kernel_providers=["huggingface", "liger"], x_values=[1])
    run(metric_name="speed", kernel_providers=["torch"], x_values=[1])
    assert calls == [{"metric_name": "speed", "kernel_providers": ["liger", "liger-fp32-accum"], "x_values": [1],
                      "kernel_operation_modes": [None]}]


def test_the_script_runner_saves_each_mode_and_size_as_it_is_timed():
    import liger_speed_rows

    calls = []
    run = liger_speed_rows.liger_speed_only(lambda **kwargs: calls.append(kwargs))
    run(metric_name="speed", kernel_providers=["liger"], x_values=[1, 2], kernel_operation_modes=["forward", "full"])
    assert [(c["kernel_operation_modes"], c["x_values"]) for c in calls] == \
        [(["forward"], [1]), (["forward"], [2]), (["full"], [1]), (["full"], [2])]


def test_the_gpu_timer_s_quantiles_interpolate_as_torch_quantile_does():
    import liger_speed_rows
    import numpy as np

    values = [0.31, 0.12, 0.5, 0.27, 0.44, 0.2, 0.9]
    for q in (0.0, 0.2, 0.5, 0.8, 1.0):
        assert abs(liger_speed_rows.quantile(values, q) - float(np.quantile(values, q))) < 1e-12


def test_the_gpu_timer_replaces_the_do_bench_that_liger_s_scripts_call(monkeypatch):
    import types

    import liger_speed_rows

    testing = types.SimpleNamespace(do_bench=None)
    monkeypatch.setitem(sys.modules, "triton", types.SimpleNamespace(testing=testing))
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    liger_speed_rows.use_gpu_timer()
    assert testing.do_bench is liger_speed_rows.gpu_do_bench


def test_the_fingerprint_tool_hashes_each_recorded_liger_launch(tmp_path, monkeypatch):
    import liger_acceptance

    import cuda_fingerprint

    ops = tmp_path / "src" / "liger_kernel" / "ops"
    ops.mkdir(parents=True)
    (ops / "scale.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def _scale_kernel(x_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)\n")
    launches = tmp_path / "launches.json"
    launch = {"file": "scale.py", "kernel": "_scale_kernel", "signature": "*fp32:16, i32", "num_warps": 4}
    launches.write_text(json.dumps([{**launch, "defines": {"FACTOR": "2.0", "BLOCK": "128"}},
                                    {**launch, "defines": {"FACTOR": "3.0", "BLOCK": "128"}},
                                    {**launch, "defines": {"FACTOR": "2.0", "BLOCK": "100"}}]))
    monkeypatch.setattr(liger_acceptance, "SOURCE", tmp_path)
    monkeypatch.setattr(liger_acceptance, "KERNELS", launches)
    found = cuda_fingerprint.liger_kernels()
    assert list(found) == [f"liger/scale.py:_scale_kernel|*fp32:16, i32|BLOCK={block},FACTOR={factor}|4"
                           for block, factor in (("128", "2.0"), ("128", "3.0"), ("100", "2.0"))]
    first, second, third = found.values()
    assert first != second and not first.startswith("error:")
    assert third.startswith("error:")  # arange's size must be a power of two


def test_the_fingerprint_comparison_names_the_liger_ops_whose_kernels_changed():
    import cuda_fingerprint

    keys = ["liger/fused_moe_kernels.py:_moe_router_kernel|*i32:16|E=8|4",
            "liger/rms_norm.py:_rms_norm_forward_kernel|*fp32:16|BLOCK_SIZE=64|4",
            "liger/experimental/embedding.py:embedding_forward_kernel|*fp32:16||4",
            "liger/utils.py:element_mul_kernel|*fp32:16||4",
            "samples/add.py|sm_90|4"]
    assert cuda_fingerprint.liger_ops(keys) == ["experimental/embedding", "fused_moe", "rms_norm", "utils.py"]
