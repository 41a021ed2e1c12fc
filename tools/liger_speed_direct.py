"""Speed rows for the Liger ops whose own benchmark script fails on both
sides at tools/liger_acceptance.py's RELEASE (tools/liger_speed.py's
docstring names each failure). Liger's provider alone, called directly:
the same op, inputs, sizes, dtypes and modes as its script, timed as the
scripts are (``triton.testing.do_bench``; ``gpu_do_bench`` where
``LIGER_SPEED_TIMER=gpu``) and written through Liger's own
``run_benchmarks`` (benchmark/scripts/utils.py) to the CSV that
``LIGER_BENCH_TARGET`` names, so that tools/liger_speed.py pairs its rows
as it pairs a script's. No reference provider: the ratio compares Triton
and mytriton on Liger's kernels.

- modulated_rms_norm: ``LigerModulatedRMSNorm`` as benchmark_modulated_rms_norm.py
  sets it up (x, scale and shift of B*T x hidden_size, has_shift).
- qwen2vl_mrope: ``liger_multimodal_rotary_pos_emb`` as benchmark_qwen2vl_mrope.py
  calls it; the cos and sin tables are built here as transformers'
  Qwen2VLRotaryEmbedding builds them (default rope, theta 1e6), since the
  script's transformers import is what fails.
- grpo_loss: ``liger_kernel.ops.GrpoLossFunction``, Liger's Triton GRPO kernel,
  as benchmark_grpo_loss_kernel.py times it, with its sizes. The op's
  benchmark_grpo_loss.py times the chunked loss (liger_kernel.chunked_loss),
  which holds no Triton kernel of Liger's: plain torch plus torch.compile,
  whose generated code needs real Triton.

- mhc: its script's own ``bench_speed_mhc`` (benchmark_mhc.py, imported, not
  run), for its three sub-kernels and three modes at B=4, HC=4 and the model's
  hidden size, on the first size of its T sweep (128): each T is a new N (a
  constexpr) for every kernel, compiled anew on both sides, and the script's
  seven sizes take longer than a device call.

The token sweeps (B*T, T) run by powers of two from 1024 to the model's
max_position_embeddings (llama_3_8b: 8192) at batch 1, as the scripts'
sweeps do: their memory probe also bounds the sweep at 40% of the GPU's
memory, which for these ops (tens of kB a token) lies far above that cap on
an H200. The sizes are computed, not probed, so both sides time the same rows.

    python tools/liger_speed_direct.py OP [--model NAME]   # as tools/liger_speed.py runs it
    python tools/liger_speed_direct.py OP --dry-run        # the rows it would time; no GPU needed
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from liger_speed import DIRECT_OPS, SCRIPTS, SOURCE, write_metadata  # noqa: E402
from liger_speed_rows import liger_speed_only, use_gpu_timer  # noqa: E402

for _path in (SCRIPTS, SOURCE / "src", write_metadata()):
    if str(_path) not in sys.path:
        sys.path.insert(1, str(_path))

import torch  # noqa: E402
import utils  # noqa: E402  (Liger's benchmark/scripts/utils.py, as its scripts import it)
from benchmark_model_configs import get_benchmark_model_config  # noqa: E402

DEVICE = utils.device


def modulated_rms_norm(x: int, cfg: dict) -> tuple[Callable[[], Any], list]:
    from liger_kernel.transformers.modulated_rms_norm import LigerModulatedRMSNorm

    hidden = torch.randn(x, cfg["hidden_size"], device=DEVICE, dtype=cfg["dtype"], requires_grad=True)
    scale = (torch.randn_like(hidden) * 0.1).requires_grad_(True)
    shift = (torch.randn_like(hidden) * 0.1).requires_grad_(True) if cfg["has_shift"] else None
    layer = LigerModulatedRMSNorm(hidden_size=cfg["hidden_size"], eps=cfg["eps"], in_place=False).to(DEVICE)
    inputs = [t for t in (hidden, scale, shift) if t is not None]
    return lambda: layer(hidden, scale, shift), inputs


def qwen2vl_mrope(x: int, cfg: dict) -> tuple[Callable[[], Any], list]:
    from liger_kernel.transformers.qwen2vl_mrope import liger_multimodal_rotary_pos_emb

    heads, kv_heads, dtype = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["dtype"]
    head_dim = cfg["hidden_size"] // heads
    section_hw = head_dim * 3 // 16
    mrope_section = [head_dim // 2 - 2 * section_hw, section_hw, section_hw]
    q = torch.randn((1, x, heads, head_dim), device=DEVICE, requires_grad=True, dtype=dtype).transpose(1, 2)
    k = torch.randn((1, x, kv_heads, head_dim), device=DEVICE, requires_grad=True, dtype=dtype).transpose(1, 2)
    positions = torch.arange(x * 3, device=DEVICE, dtype=torch.long).view(3, 1, -1)
    inv_freq = 1.0 / (1000000.0 ** (torch.arange(0, head_dim, 2, device=DEVICE, dtype=torch.float) / head_dim))
    angles = positions[..., None].float() * inv_freq  # (3, 1, T, head_dim / 2)
    table = torch.cat((angles, angles), dim=-1)
    cos, sin = table.cos().to(dtype), table.sin().to(dtype)
    return lambda: liger_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section)[0], [q]


def grpo_loss(x: int, cfg: dict) -> tuple[Callable[[], Any], list]:
    from liger_kernel.ops import GrpoLossFunction

    B, T, V, dtype, beta = x, cfg["T"], cfg["V"], cfg["dtype"], cfg["beta"]
    logits = torch.randn(B, T + 1, V, requires_grad=True, dtype=dtype, device=DEVICE)
    completion_ids = torch.randint(0, V, (B, T), dtype=torch.long, device=DEVICE)
    advantages = torch.randn(B, dtype=dtype, device=DEVICE)
    completion_mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
    ref_logp = torch.randn(B, T, dtype=torch.float32, device=DEVICE) if beta > 0 else None
    # benchmark_grpo_loss_kernel.py's LigerGRPOLoss: on-policy (no old_logp), temperature 1, eps 0.2,
    # not in place, loss "grpo", reduced.
    arguments = (logits, None, ref_logp, completion_ids, advantages, completion_mask, 1.0, beta, 0.2, 0.2,
                 False, "grpo", None, True, cfg["importance_sampling_level"], 1.0, 1.05, None, None, False)
    return lambda: GrpoLossFunction.apply(*arguments)[0], [logits]


def loss_speed(fwd: Callable[[], Any], mode: str, inputs: list) -> utils.SingleBenchmarkRunOutput:
    """benchmark_grpo_loss_kernel.py's timing of a scalar loss: rep 100, the
    backward without a gradient argument, gradients cleared in backward only."""
    import triton

    def full() -> None:
        fwd().backward()

    if mode == "backward":
        y = fwd()
        timed, clear = (lambda: y.backward(retain_graph=True)), inputs
    else:
        timed, clear = (fwd if mode == "forward" else full), None
    ms_50, ms_20, ms_80 = triton.testing.do_bench(timed, grad_to_none=clear, rep=100, quantiles=utils.QUANTILES)
    return utils.SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)


def bench(setup: Callable[[int, dict], tuple[Callable[[], Any], list]],
          speed: Callable[..., utils.SingleBenchmarkRunOutput] = utils.run_speed_benchmark) -> Callable:
    """A ``bench_test_fn`` for run_benchmarks: set up, then time one mode."""

    def run(single: utils.SingleBenchmarkRunInput) -> utils.SingleBenchmarkRunOutput:
        fwd, inputs = setup(single.x, single.extra_benchmark_config)
        return speed(fwd, single.kernel_operation_mode, inputs)

    return run


def token_sweep(model: Any) -> list[int]:
    """1024 up to the model's context, by powers of two (the scripts' x_values at batch 1)."""
    return [2**i for i in range(10, int(math.log2(model.max_position_embeddings)) + 1)]


def sweeps(op: str, model: Any, sub_kernels: list[str] | None = None, modes: list[str] | None = None) -> list[dict]:
    """run_benchmarks' keyword arguments for ``op``'s speed sweeps, as its script builds them
    (mhc: ``sub_kernels`` and ``modes`` of them, where given)."""
    speed = {"metric_name": "speed", "metric_unit": "ms", "kernel_providers": ["liger"]}
    if op == "modulated_rms_norm":
        config = {"hidden_size": model.hidden_size, "dtype": model.dtype, "eps": 1e-6, "has_shift": True}
        return [{**speed, "bench_test_fn": bench(modulated_rms_norm), "kernel_name": "modulated_rms_norm",
                 "x_name": "BT", "x_label": "B * T", "x_values": token_sweep(model),
                 "kernel_operation_modes": ["full", "forward", "backward"], "extra_benchmark_configs": [config]}]
    if op == "qwen2vl_mrope":
        config = {"hidden_size": model.hidden_size, "num_attention_heads": model.num_attention_heads,
                  "num_key_value_heads": model.num_key_value_heads, "dtype": model.dtype,
                  "bsz": 1, "seq_len": token_sweep(model)[-1]}
        return [{**speed, "bench_test_fn": bench(qwen2vl_mrope), "kernel_name": "qwen2vl_mrope",
                 "x_name": "T", "x_label": "sequence length", "x_values": token_sweep(model),
                 "kernel_operation_modes": ["forward", "backward", "full"], "extra_benchmark_configs": [config]}]
    if op == "grpo_loss":
        return [{**speed, "bench_test_fn": bench(grpo_loss, loss_speed), "kernel_name": f"grpo_loss_kernel_{level}",
                 "x_name": "B", "x_label": "Batch Size", "x_values": [2**i for i in range(1, 5)],
                 "kernel_operation_modes": ["forward", "full", "backward"],
                 "extra_benchmark_configs": [{"T": 512, "V": 32000, "beta": 0.1, "dtype": torch.bfloat16,
                                              "importance_sampling_level": level}]}
                for level in ("token", "sequence")]
    if op == "mhc":
        import benchmark_mhc  # Liger's script, as a module: its setup and timing, not its sweep

        config = {"B": 4, "HC": 4, "C": model.hidden_size, "tmax": 20, "rms_eps": 1e-6, "pre_eps": 0.0,
                  "sinkhorn_eps": 1e-6, "post_mult": 2.0}
        return [{**speed, "bench_test_fn": benchmark_mhc.bench_speed_mhc, "kernel_name": f"mhc_{sub_kernel}",
                 "x_name": "T", "x_label": "Sequence Length (T)", "x_values": [128],
                 "kernel_operation_modes": modes or ["forward", "backward", "full"],
                 "extra_benchmark_configs": [{**config, "sub_kernel": sub_kernel}]}
                for sub_kernel in sub_kernels or ("coeffs", "pre", "post_res")]
    raise ValueError(f"no direct driver for {op!r} (ops: {', '.join(DIRECT_OPS)})")


def list_row(**kwargs: Any) -> None:
    """run_benchmarks for --dry-run: the row it would time, unmeasured."""
    for config in kwargs["extra_benchmark_configs"]:
        for mode in kwargs["kernel_operation_modes"]:
            for provider in kwargs["kernel_providers"]:
                for x in kwargs["x_values"]:
                    print(f"{kwargs['kernel_name']:<26} {provider:<6} {mode:<9} {kwargs['x_name']}={x:<6} "
                          f"{json.dumps(config, cls=utils.CustomEncoder)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=DIRECT_OPS)
    parser.add_argument("--model", help="benchmark_model_configs' model (default: llama_3_8b), as the scripts take")
    parser.add_argument("--dry-run", action="store_true", help="list the rows it would time; time nothing")
    parser.add_argument("--mhc-sub-kernels", help="mhc: comma-separated sub-kernels (default: coeffs,pre,post_res), "
                        "each compiled anew on both sides")
    parser.add_argument("--mhc-modes", help="mhc: comma-separated modes (default: forward,backward,full)")
    args, ignored = parser.parse_known_args(argv)
    if ignored:
        print(f"liger_speed_direct.py: ignoring the scripts' arguments {' '.join(ignored)}", file=sys.stderr)
    model = get_benchmark_model_config(args.model)
    run = liger_speed_only(list_row if args.dry_run else utils.run_benchmarks)
    if os.environ.get("LIGER_SPEED_TIMER") == "gpu" and not args.dry_run:
        use_gpu_timer()
    def listed(text: str | None) -> list[str] | None:
        return text.split(",") if text else None

    for sweep in sweeps(args.op, model, listed(args.mhc_sub_kernels), listed(args.mhc_modes)):
        run(**sweep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
