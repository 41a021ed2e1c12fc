"""``@mytriton.autotune``, ``mytriton.Config`` and ``@mytriton.heuristics``,
stacked above ``@mytriton.jit`` as in Triton.

Autotuning on the GPU launches the kernel once per config, timed by
``mytriton.testing.do_bench``, and keeps the fastest. In the interpreter
there is nothing worth timing, so the first config (after pruning) is chosen
(``Autotuner.chosen_by`` says so). A choice is cached per key: in memory,
and for the GPU also on disk (``$MYTRITON_CACHE_DIR/autotune/``, one private
JSON file per kernel source, key and config list, written atomically through
``mytriton.user_cache``; never pickled). The key is the kernel's source digest,
the values of the ``key`` arguments, the element types of the array arguments
and the backend.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import time
from typing import Any, Callable, Sequence

from mytriton.diagnostics import CompileError
from mytriton.knobs import flag
from mytriton.runtime import jit as jit_module

_CACHE_FORMAT = 1


class Config:
    """One point of an autotuning space: meta-parameters and launch options."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3,
                 num_ctas: int = 1, maxnreg: int | None = None,
                 pre_hook: Callable[[dict[str, Any]], Any] | None = None) -> None:
        if not isinstance(kwargs, dict):
            raise CompileError(f"Config takes a dict of meta-parameters, got {type(kwargs).__name__}")
        if num_ctas != 1:
            raise CompileError(f"Config: num_ctas={num_ctas} is not supported (one CTA per program)")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The meta-parameters and the launch keywords of this config."""
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def describe(self) -> str:
        """A stable text of the config (the disk cache compares it)."""
        parts = [f"{name}: {value!r}" for name, value in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        return ", ".join(parts)

    __str__ = describe

    def __repr__(self) -> str:
        return f"Config({self.describe()})"


class KernelInterface:
    """``kernel[grid](*args, **meta)`` for the wrappers, as for JITFunction."""

    fn: Any

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"a @jit kernel is launched with a grid: {self.__name__}[grid](...)")

    def warmup(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def _launch(self, grid: Any, *args: Any, **kwargs: Any) -> Any:
        """The launch a wrapper above this one makes (JITFunction's is its
        short path for repeated launches)."""
        return self.run(*args, grid=grid, **kwargs)

    @property
    def jit_function(self) -> Any:
        """The @jit function at the bottom of the stack of decorators."""
        fn = self.fn
        while not isinstance(fn, jit_module.JITFunction):
            fn = fn.fn
        return fn

    @property
    def arg_names(self) -> list[str]:
        return self.jit_function._names

    def named_args(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(self.arg_names):
            raise CompileError(f"{self.__name__}: takes {len(self.arg_names)} arguments but {len(args)} were given")
        return {**dict(zip(self.arg_names, args)), **kwargs}


def _wrappable(fn: Any, decorator: str) -> None:
    if not isinstance(fn, (jit_module.JITFunction, KernelInterface)):
        raise CompileError(f"@{decorator} goes above @jit (it decorated {getattr(fn, '__name__', fn)!r})")


# ---- heuristics ---------------------------------------------------------------------------


class Heuristics(KernelInterface):
    """Meta-parameters computed from the other arguments at each launch."""

    def __init__(self, fn: Any, values: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
        _wrappable(fn, "heuristics")
        if not isinstance(values, dict) or not all(callable(v) for v in values.values()):
            raise CompileError("heuristics takes a dict of meta-parameter name -> function of the arguments")
        functools.update_wrapper(self, fn, updated=())  # names and doc only, not the state of fn
        self.fn = fn
        self.values = values

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        named = self.named_args(args, kwargs)
        for name, rule in self.values.items():
            # Each rule sees the arguments and the values computed before it.
            kwargs[name] = named[name] = rule(named)
        return self.fn._launch(grid, *args, **kwargs)


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """``@mytriton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})``."""
    return lambda fn: Heuristics(fn, values)


# ---- autotune ------------------------------------------------------------------------------


def _zero(array: Any) -> None:
    if hasattr(array, "zero_"):
        array.zero_()  # a tensor
    else:
        array[...] = 0


def _clone(array: Any) -> Any:
    return array.clone() if hasattr(array, "clone") else array.copy()


def _own_copy(value: Any) -> Any:
    """A host descriptor's own copy (its block a list of its own); any other value itself."""
    from mytriton.tools.tensor_descriptor import TensorDescriptor

    if not isinstance(value, TensorDescriptor):
        return value
    copied = copy.copy(value)
    copied.block_shape = list(value.block_shape)
    return copied


def _copy_into(target: Any, source: Any) -> None:
    if hasattr(target, "copy_"):
        target.copy_(source)
    else:
        target[...] = source


def build_threads() -> int:
    """How many configs an autotuner compiles at once: MYTRITON_BUILD_THREADS,
    else one per CPU (at most 16)."""
    value = os.environ.get("MYTRITON_BUILD_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    return min(os.cpu_count() or 1, 16)


def _key_part(value: Any) -> str:
    """A key argument's value as a stable string: numbers by value, arrays by
    element type (their contents are never part of a key)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    dtype = getattr(value, "dtype", None)
    return f"array<{dtype}>" if dtype is not None else type(value).__name__


class Autotuner(KernelInterface):
    def __init__(self, fn: Any, configs: Sequence[Config], key: Sequence[str],
                 prune_configs_by: dict[str, Any] | None = None,
                 reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
                 warmup: float = 25, rep: float = 100, do_bench: Callable[..., Any] | None = None,
                 cache_results: bool = True) -> None:
        _wrappable(fn, "autotune")
        functools.update_wrapper(self, fn, updated=())  # names and doc only, not the state of fn
        self.fn = fn
        self.configs = list(configs) if configs else [Config({})]
        if not all(isinstance(c, Config) for c in self.configs):
            raise CompileError("autotune's configs must be mytriton.Config objects")
        if isinstance(key, str) or not all(isinstance(k, str) for k in key):
            raise CompileError(f"autotune of '{self.__name__}': key is a list of argument names, got {key!r}")
        names = set(self.arg_names)
        # A key that names no parameter counts for nothing, as in Triton (the
        # published tutorial 08 keys on 'gropup_c_ptrs').
        self.key = [k for k in key if k in names]
        for label, given in (("reset_to_zero", reset_to_zero or ()), ("restore_value", restore_value or ())):
            for name in given:
                if name not in names:
                    raise CompileError(f"autotune of '{self.__name__}': {label} names '{name}', "
                                       "which is not a parameter")
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune = prune_configs_by or {}
        unknown = set(prune) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise CompileError(f"autotune: unknown prune_configs_by entries {sorted(unknown)}")
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.num_warmup = warmup
        self.num_rep = rep
        self.do_bench = do_bench
        self.cache_results = cache_results
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.chosen_by = ""  # "timing", "cache", "the first config (interpreter)", "only config"
        self.configs_timings: dict[Config, float] | None = None
        self._restore_copies: list[Any] = []

    # ---- the launch ------------------------------------------------------------------------
    def run(self, *args: Any, grid: Any, backend: str | None = None, warmup: bool = False,
            **kwargs: Any) -> Any:
        chosen_backend = jit_module.select_backend(backend)  # looked up at each launch: tests replace it
        named = self.named_args(args, kwargs)
        for name in {name for config in self.configs for name in config.all_kwargs()} if kwargs else ():
            if name in kwargs:
                raise CompileError(f"{self.__name__}: conflicting meta-parameter '{name}': it is given "
                                   "at the launch and by the autotuning configs; give it in one place only")
        key = self._key(named, chosen_backend)
        config = self.cache.get(key)
        if config is not None:
            self.chosen_by = "memory cache"
        else:
            started = time.perf_counter()
            config = self._choose(key, args, grid, kwargs, named, chosen_backend, warmup)
            self.cache[key] = config
            if flag("MYTRITON_PRINT_AUTOTUNING"):  # or Triton's TRITON_PRINT_AUTOTUNING
                print(f"mytriton autotuning for function {self.__name__},\nwith key as {key},\n"
                      f"finished after {time.perf_counter() - started:.2f}s ({self.chosen_by}),\n"
                      f"best config selected: {config};", flush=True)
        self.best_config = config
        if config.pre_hook is not None and not warmup:
            config.pre_hook({**named, **config.all_kwargs()})
        return self.fn._launch(grid, *args, backend=chosen_backend, warmup=warmup,
                               **config.all_kwargs(), **kwargs)

    def _key(self, named: dict[str, Any], backend: str) -> tuple:
        # A key argument the launch does not pass (a config's meta-parameter, a
        # parameter left to its default) counts for nothing, as in Triton.
        values = tuple(_key_part(named[name]) for name in self.key if name in named)
        dtypes = tuple(str(v.dtype) for v in named.values()
                       if hasattr(v, "dtype") and hasattr(v, "shape") and getattr(v, "shape", ()) != ())
        return values + dtypes + (backend,)

    def prune_configs(self, named: dict[str, Any]) -> list[Config]:
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named))
            if not configs:
                raise CompileError(f"{self.__name__}: early_config_prune left no config")
        if self.perf_model is not None:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))
            if len(configs) > top_k:
                estimates = {c: self.perf_model(**named, **c.all_kwargs()) for c in configs}
                configs = sorted(configs, key=lambda c: estimates[c])[:top_k]
        return configs

    def _choose(self, key: tuple, args: tuple, grid: Any, kwargs: dict[str, Any],
                named: dict[str, Any], backend: str, warmup: bool) -> Config:
        configs = self.prune_configs(named)
        if len(configs) == 1:
            self.chosen_by = "only config"
            return configs[0]
        if backend != "cuda":
            # Interpreter timings say nothing about the GPU: take the first.
            self.chosen_by = "the first config (interpreter: configs are not timed)"
            return configs[0]
        disk = self._disk_path(key, configs)
        cached = self._read_disk(disk, configs) if self.cache_results else None
        if cached is not None:
            self.chosen_by = "disk cache"
            return cached
        self._build_all(configs, args, grid, kwargs, backend)
        if warmup:
            # Every config compiled; nothing runs, so nothing is timed.
            for config in configs:
                self.fn.run(*args, grid=grid, backend=backend, warmup=True, **config.all_kwargs(), **kwargs)
            self.chosen_by = "the first config (warmup: configs are not timed)"
            return configs[0]
        timings = {config: self._bench(config, args, grid, kwargs, named, backend) for config in configs}
        self.configs_timings = timings
        best = min(configs, key=lambda c: timings[c])
        if timings[best] == float("inf"):
            # Every config failed: run the first again so that its error shows.
            hooked_args, hooked_kwargs = self._as_hooked(configs[0], args, kwargs)
            self.fn.run(*hooked_args, grid=grid, backend=backend, **configs[0].all_kwargs(), **hooked_kwargs)
        self._reset(named, reset_only=True)
        self.chosen_by = "timing"
        if self.cache_results:
            self._write_disk(disk, key, configs, best, timings[best])
        return best

    def _build_all(self, configs: list[Config], args: tuple, grid: Any, kwargs: dict[str, Any],
                   backend: str) -> None:
        """Compile every config before any is timed, several at once: each
        build's nvcc is a process of its own, and NVRTC compiles with the GIL
        released, so threads overlap them (the compile stages in Python take
        turns), and the first call of an
        autotuned kernel costs about its slowest build, not their sum. A
        config the compiler refuses is left for the timing to find again."""
        workers = min(len(configs), build_threads())
        if workers <= 1:
            return

        def build(config: Config) -> None:
            try:
                hooked_args, hooked_kwargs = self._as_hooked(config, args, kwargs)
                self.fn.run(*hooked_args, grid=grid, backend=backend, warmup=True, **config.all_kwargs(),
                            **hooked_kwargs)
            except CompileError:
                pass

        from concurrent.futures import ThreadPoolExecutor  # here: the CLI imports this module, and never builds

        with ThreadPoolExecutor(workers, thread_name_prefix="mytriton-build") as pool:
            list(pool.map(build, configs))

    def _as_hooked(self, config: Config, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        """The arguments as the config's ``pre_hook`` leaves them, for a build
        before its launch: what the kernel is specialised on may be set there
        (Triton's fused-attention tutorial sets each host descriptor's block).
        The hook sees copies of the descriptors, so builds in parallel do not
        set one another's blocks."""
        if config.pre_hook is None:
            return args, kwargs
        args = tuple(_own_copy(value) for value in args)
        kwargs = {name: _own_copy(value) for name, value in kwargs.items()}
        config.pre_hook({**self.named_args(args, kwargs), **config.all_kwargs()})
        return args, kwargs

    # ---- timing ----------------------------------------------------------------------------
    def _reset(self, named: dict[str, Any], reset_only: bool = False) -> None:
        """Before a timed launch: zero ``reset_to_zero``; keep copies of
        ``restore_value`` (Triton's pre-hook)."""
        for name in self.reset_to_zero:
            _zero(named[name])
        if not reset_only:
            self._restore_copies = [_clone(named[name]) for name in self.restore_value]

    def _restore(self, named: dict[str, Any]) -> None:
        """After a timed launch: put ``restore_value`` buffers back."""
        for name, saved in zip(self.restore_value, self._restore_copies):
            _copy_into(named[name], saved)
        self._restore_copies = []

    def _bench(self, config: Config, args: tuple, grid: Any, kwargs: dict[str, Any],
               named: dict[str, Any], backend: str) -> float:
        full = {**named, **config.all_kwargs()}

        def launch() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self._reset(named)
            if self.user_pre_hook is not None:
                self.user_pre_hook(full)
            try:
                self.fn.run(*args, grid=grid, backend=backend, **config.all_kwargs(), **kwargs)
            finally:
                self._restore(named)
                if self.user_post_hook is not None:
                    self.user_post_hook(full, exception=None)

        try:
            # Compiled once before timing: the build is not the kernel's time.
            hooked_args, hooked_kwargs = self._as_hooked(config, args, kwargs)
            self.fn.run(*hooked_args, grid=grid, backend=backend, warmup=True, **config.all_kwargs(),
                        **hooked_kwargs)
            if self.do_bench is not None:
                result = self.do_bench(launch, quantiles=(0.5, 0.2, 0.8))
            else:
                from mytriton.testing import do_bench

                result = do_bench(launch, warmup=self.num_warmup, rep=self.num_rep, quantiles=(0.5, 0.2, 0.8))
        except CompileError:
            # A config the compiler refuses (an over-budget tile) is never the fastest.
            return float("inf")
        return float(result[0] if isinstance(result, (list, tuple)) else result)

    # ---- the disk cache ----------------------------------------------------------------
    def _disk_path(self, key: tuple, configs: list[Config]) -> Any:
        from mytriton.user_cache import cache_root

        text, _, _ = self.jit_function.source()
        digest = hashlib.sha256(json.dumps({
            "format": _CACHE_FORMAT,
            "source": hashlib.sha256(text.encode()).hexdigest(),
            "kernel": self.jit_function.fn.__name__,
            "key": list(key),
            "configs": [c.describe() for c in configs],
        }).encode()).hexdigest()
        return cache_root() / "autotune" / f"{digest}.json"

    def _read_disk(self, path: Any, configs: list[Config]) -> Config | None:
        from mytriton.user_cache import read_private

        data = read_private(path)
        if data is None:
            return None
        try:
            entry = json.loads(data.decode("utf-8"))
            index = entry["index"]
            if type(index) is not int or not 0 <= index < len(configs):
                return None
            if entry["config"] != configs[index].describe():
                return None  # not what this config list holds at that place
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None  # a damaged entry is only a cache miss
        return configs[index]

    def _write_disk(self, path: Any, key: tuple, configs: list[Config], best: Config, ms: float) -> None:
        from mytriton.user_cache import write_private

        entry = {"format": _CACHE_FORMAT, "kernel": self.jit_function.fn.__name__, "key": list(key),
                 "index": configs.index(best), "config": best.describe(), "ms": ms}
        write_private(path, json.dumps(entry, indent=1).encode())


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
             warmup: float = 25, rep: float = 100, use_cuda_graph: bool = False,
             do_bench: Callable[..., Any] | None = None, cache_results: bool = True) -> Callable[[Any], Autotuner]:
    """``@mytriton.autotune(configs=[mytriton.Config({...}, num_warps=4)], key=["n"])``
    above ``@mytriton.jit``: see the module's doc. ``warmup`` and ``rep`` are
    do_bench's times in milliseconds; ``use_cuda_graph`` is accepted (timing
    does not use graphs)."""
    def decorate(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value,
                         pre_hook, post_hook, warmup, rep, do_bench, cache_results)

    return decorate
