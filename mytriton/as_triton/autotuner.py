"""``triton.runtime.autotuner`` as mytriton gives it: mytriton's autotuner
under Triton's names, its ``Autotuner`` taking Triton's constructor
arguments. Libraries subclass it so (flash-linear-attention, protenix:
``super().__init__(fn, arg_names, configs, key, reset_to_zero,
restore_value, pre_hook, post_hook, prune_configs_by, warmup, rep, ...)``)
and read the attributes Triton's sets."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from mytriton.runtime import autotuner as _mytriton
from mytriton.runtime.autotuner import Config, Heuristics, KernelInterface, heuristics

__all__ = ["Autotuner", "Config", "Heuristics", "KernelInterface", "autotune", "heuristics"]


class Autotuner(_mytriton.Autotuner):
    """mytriton's Autotuner, made as Triton's is made. ``arg_names`` are the
    kernel's parameters (mytriton reads them from ``fn``); ``use_cuda_graph``
    is accepted and has no effect (configs are timed by the do_bench given,
    else mytriton's)."""

    def __init__(self, fn: Any, arg_names: Sequence[str], configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
                 prune_configs_by: dict[str, Any] | None = None, warmup: float | None = None,
                 rep: float | None = None, use_cuda_graph: bool = False,
                 do_bench: Callable[..., Any] | None = None, cache_results: bool = False) -> None:
        super().__init__(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, pre_hook, post_hook,
                         25 if warmup is None else warmup, 100 if rep is None else rep, do_bench, cache_results)
        # What Triton's constructor sets and subclasses read.
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.use_cuda_graph = use_cuda_graph
        self.restore_copies: list[Any] = []

    @property
    def keys(self) -> list[str]:
        """Triton's name for the key arguments."""
        return self.key


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
             warmup: float = 25, rep: float = 100, use_cuda_graph: bool = False,
             do_bench: Callable[..., Any] | None = None, cache_results: bool = True) -> Callable[[Any], Autotuner]:
    """``triton.autotune``: mytriton.autotune, its kernels instances of this
    module's Autotuner (``isinstance(k, triton.runtime.Autotuner)`` holds)."""
    def decorate(fn: Any) -> Autotuner:
        return Autotuner(fn, (), configs, key, reset_to_zero, restore_value, pre_hook, post_hook, prune_configs_by,
                         warmup, rep, use_cuda_graph, do_bench, cache_results)

    return decorate


def __getattr__(name: str) -> Any:
    # The rest of mytriton's autotuner module, as this module stood for it before.
    if not name.startswith("_") and hasattr(_mytriton, name):
        return getattr(_mytriton, name)
    raise AttributeError(f"mytriton does not provide triton.runtime.autotuner.{name} (it gives {', '.join(__all__)})")
