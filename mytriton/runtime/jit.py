"""``@mytriton.jit`` and ``kernel[grid](*args, **meta)``, as in Triton.

The decorated function is never called: its source file is read (not run)
by the frontend, specialised on the constexpr values and argument types of
each launch, compiled, cached in memory, and launched on the chosen backend.
A launch that repeats an earlier one's call shape and specialisation takes a
short path (``JITFunction._launch``): the host's work per launch is what
bounds small problems.
The backend is ``cuda`` (the CUDA driver) when a GPU is usable, else ``interp`` (the
NumPy interpreter); ``MYTRITON_BACKEND`` or ``backend=`` choose explicitly.
A launch returns the compiled kernel (runtime/compiled.py), as Triton's does.
"""
from __future__ import annotations

import functools
import inspect
import operator
import os
from typing import Any, Callable

from mytriton.diagnostics import CompileError, printable
from mytriton.deep_stack import run_deep
from mytriton.limits import MAX_GRID, grid_error
from mytriton.runtime.arguments import coded_launch_key, specialisation_codes
from mytriton.tools.tensor_descriptor import expand_descriptors

BACKENDS = ("auto", "cuda", "interp")
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "launch_pdl")
# Keywords of a launch that are ``run``'s own, never a kernel parameter's.
RUN_KEYWORDS = ("backend", "warmup", "stream")

# Triton's @jit options, and what each does here. Any other is an error:
# an option silently ignored would hide a typo or a feature mytriton lacks.
JIT_OPTIONS = {
    # As Triton, a launch specialises integer arguments equal to 1 (compiled
    # in as constants) or divisible by 16 (and by 8, as Triton 2 did), and
    # pointers aligned to 16 bytes (parameter facts {divisibility=16}); these
    # options turn that off for the parameters they name (names or positions).
    "do_not_specialize": "these parameters are not specialised on their values (1, divisibility, alignment)",
    "do_not_specialize_on_alignment": "these parameters are not specialised on divisibility by 16 or 8, or alignment",
    # Kept in the handle's metadata only: nothing is compiled differently.
    "debug": "recorded in metadata['debug']",
    # @jit helpers are always inlined into the kernel.
    "noinline": "accepted; helpers are always inlined",
    # A callable of the compiled kernel's metadata giving the name profilers show.
    "repr": "called with the metadata; its result is metadata['repr']",
    # A callable (grid, kernel, args) -> dict for launch hooks; mytriton has no
    # launch hooks, so it is kept (metadata['launch_metadata']) and never called.
    "launch_metadata": "kept, never called (no launch hooks)",
}


class BackendUnavailable(CompileError):
    """The backend asked for cannot run here (``backend="cuda"`` without
    a GPU and its driver); the message says why."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # what is missing, without who asked


class EnvironmentValue:
    """What ``parse()`` makes of the environment variable ``name``, read at
    every launch (a variable changed between launches takes effect) for the
    price of a dict lookup: ``os.environ.get`` encodes the name and, for an
    unset variable, raises and catches a KeyError each time. os.environ keeps
    its encoded items in ``_data`` (CPython's os.py, on POSIX and Windows),
    which every assignment through os.environ (and so monkeypatch.setenv)
    updates; ``parse`` runs again only when the raw value there changed.
    Where os.environ has no ``_data`` (replaced by another mapping),
    ``parse`` runs on every read."""

    _UNREAD = object()

    def __init__(self, name: str, parse: Callable[[], Any] | None = None) -> None:
        self.name = name
        self.parse = parse or (lambda: os.environ.get(name))
        # (raw value, what parse made of it), replaced whole: another thread
        # never sees one's raw value with the other's parse.
        self._memo: tuple[Any, Any] = (self._UNREAD, None)
        try:
            self._key: Any = os.environ.encodekey(name)  # type: ignore[attr-defined]
        except Exception:  # not CPython's os.environ: parsed at every read
            self.get = self.parse  # type: ignore[method-assign]

    def get(self) -> Any:
        try:
            raw = os.environ._data.get(self._key)  # type: ignore[attr-defined]
        except AttributeError:
            return self.parse()
        memo = self._memo
        if raw is not memo[0] and raw != memo[0]:
            memo = self._memo = (raw, self.parse())  # parse may raise: then nothing is remembered
        return memo[1]


_BACKEND_ENV = EnvironmentValue("MYTRITON_BACKEND")
# Triton's switch to its interpreter selects mytriton's (MYTRITON_BACKEND wins
# where both are set), so that Triton code's own instructions hold.
_TRITON_INTERPRET = EnvironmentValue(
    "TRITON_INTERPRET", lambda: os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on"))
# mytriton.runtime.cuda_driver, once explain_backend has imported it (it is
# not imported for the interpreter, nor by the CLI's other commands).
_cuda_driver: Any = None


def _known_backend(requested: str | None) -> str | None:
    """explain_backend's choice where it is plain, without its reason: the
    environment read cheaply (EnvironmentValue), the driver's status asked of
    cuda_driver each time (its answer is cached there); None where this
    cannot say (the first GPU check, an unknown name, a GPU asked for and
    missing: explain_backend's errors)."""
    name = requested or _BACKEND_ENV.get() or ("interp" if _TRITON_INTERPRET.get() else "auto")
    if name == "interp":
        return "interp"
    if _cuda_driver is not None and (name == "auto" or name == "cuda"):
        if _cuda_driver.cuda_status()[0]:
            return "cuda"
        if name == "auto":
            return "interp"
    return None


def cuda_without_tma(compiled: Any, options: Any) -> str:
    """The CUDA of ``compiled`` with every copy made by cp.async, for a launch
    no tensor map can describe (compiler.cuda_without_tma)."""
    from mytriton import compiler

    return run_deep(compiler.cuda_without_tma, compiled.asm["ssa"], compiled.kernel.loc.file, options)


def launch_backend(requested: str | None = None) -> str:
    """select_backend's answer for a launch (select_backend itself where
    _known_backend cannot say)."""
    return _known_backend(requested) or select_backend(requested)


def explain_backend(requested: str | None = None) -> tuple[str, str]:
    """(the backend a launch uses, why): ``requested``, else
    ``MYTRITON_BACKEND``, else the interpreter if ``TRITON_INTERPRET`` is
    set (1, true, yes, on), else ``auto`` (cuda when a GPU is usable)."""
    global _cuda_driver
    from_env = os.environ.get("MYTRITON_BACKEND")
    interpret = not requested and not from_env and _TRITON_INTERPRET.parse()
    name = requested or from_env or ("interp" if interpret else "auto")
    chooser = (f"backend='{requested}'" if requested else f"MYTRITON_BACKEND={from_env}" if from_env
               else "TRITON_INTERPRET=1" if interpret else "auto")
    if name not in BACKENDS:
        raise CompileError(f"unknown backend '{printable(name)}' (backends: {', '.join(BACKENDS)})")
    if name == "interp":
        return "interp", f"{chooser} chooses the NumPy interpreter"
    from mytriton.runtime import cuda_driver

    _cuda_driver = cuda_driver
    usable, why = cuda_driver.cuda_status()
    if name == "cuda" and not usable:
        raise BackendUnavailable(f"{printable(chooser)} asks for the GPU, but {why}", why)
    if usable:
        return "cuda", f"{chooser}: {why}"
    return "interp", f"auto: {why}; the NumPy interpreter runs instead"


def select_backend(requested: str | None = None) -> str:
    """The backend a launch uses (explain_backend's, without its reason)."""
    return _known_backend(requested) or explain_backend(requested)[0]


def normalize_grid(grid: Any, meta: dict[str, Any]) -> tuple[int, int, int]:
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3:
        raise CompileError(f"a grid has one to three dimensions, got {grid}")
    if any(g < 0 for g in grid):
        raise CompileError(f"grid dimensions must be non-negative, got {grid}")
    problem = grid_error(grid)
    if problem:
        raise CompileError(problem)
    return grid + (1,) * (3 - len(grid))  # type: ignore[return-value]


class JITFunction:
    def __init__(self, fn: Callable[..., Any], **options: Any) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        _check_options(fn, options)
        self.options = options
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        signature = inspect.signature(fn)
        self._names = list(signature.parameters)
        self._defaults = {name: p.default for name, p in signature.parameters.items()
                          if p.default is not inspect.Parameter.empty}
        self._static: tuple[str, list[str], list[str]] | None = None
        self._compiled: dict[tuple, Any] = {}
        # A cheaper key per launch (runtime/arguments.py's launch_key) -> the compiled kernel.
        self._by_launch_key: dict[tuple, Any] = {}
        # Parameters the launch specialises on their value, and on alignment.
        self._on_value = _not_named(self._names, options.get("do_not_specialize"))
        self._on_alignment = _not_named(self._names, options.get("do_not_specialize_on_alignment"))
        # The repeated launch (_launch): a plan per call shape, (number of
        # positional arguments, keyword names in order) -> how to pick each
        # parameter's value and the launch options from the call; and per
        # launch key (arguments.launch_key) the compiled kernel with how to
        # pick its runtime arguments.
        self._plans: dict[tuple, tuple] = {}
        self._fast: dict[tuple, tuple] = {}

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    @property
    def arg_names(self) -> list[str]:
        """The kernel's parameter names, as Triton's JITFunction gives them (libraries pass them to autotuners)."""
        return list(self._names)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"a @jit kernel is launched with a grid: {self.__name__}[grid](...)")

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return functools.partial(self._launch, grid)

    # ---- the repeated launch --------------------------------------------------------
    def _launch(self, grid: Any, *args: Any, **kwargs: Any) -> Any:
        """``kernel[grid](*args, **kwargs)``: what ``run`` does, with a
        launch that repeats an earlier one's call shape and specialisation
        cut short: the call's values picked by one itemgetter (the plan made
        when ``run`` first bound that shape), the environment read cheaply
        (EnvironmentValue), the compiled kernel found by the launch key, a
        plain grid taken as it is, and the launch made straight from the
        values (CudaKernel.launch3). Anything else, and every error, is
        ``run``'s."""
        plan = self._plans.get((len(args), *kwargs))
        if plan is None:
            return self._run_and_plan(grid, args, kwargs)
        pick, tail, runtime_of, constants_of, codes = plan
        picked = pick(args + tuple(kwargs.values()) + tail if kwargs else args + tail)
        num_warps, num_stages, num_ctas, launch_pdl, requested, warmup, stream = picked[-7:]
        if num_ctas != 1:
            return self.run(*args, **{"grid": grid, **kwargs})  # its error
        backend = launch_backend(requested)
        key = coded_launch_key(runtime_of(picked), codes, constants_of(picked),
                               (num_warps, num_stages, backend, _F32_DEFAULT_ENV.get(), launch_pdl))
        entry = self._fast.get(key) if key is not None else None
        if entry is None:
            compiled = self.run(*args, **{"grid": grid, **kwargs})
            if key is not None and compiled.backend == backend:
                self._fast[key] = (compiled, _getter([self._names.index(name) for name in compiled.runtime_params]))
            return compiled
        compiled, values_of = entry
        grid3 = _positive_grid(grid)
        if grid3 is None and callable(grid):  # grid(meta), as an autotuned kernel's grid always is
            grid = grid(dict(zip(self._names, picked)))
            grid3 = _positive_grid(grid)
        if grid3 is None:
            grid3 = normalize_grid(grid, {})
            if not warmup:
                compiled._launch(grid3, list(values_of(picked)), stream)
        elif not warmup:
            if compiled.launcher is not None:
                values = values_of(picked)
                if compiled.has_descriptors:
                    values = expand_descriptors(values)
                compiled.launcher.launch3(grid3, values, stream)
            else:
                compiled._launch(grid3, list(values_of(picked)), stream)
        return compiled

    def _run_and_plan(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """``run``, as ``kernel[grid]`` always called it (a ``grid=`` keyword
        overriding the brackets' grid, as functools.partial's keywords do);
        then, since this call shape binds, a plan for it."""
        compiled = self.run(*args, **{"grid": grid, **kwargs})
        if len(self._plans) < _PLAN_LIMIT and "grid" not in kwargs:
            shape = (len(args), *kwargs)  # mypy reads a starred subscript as 3.11 syntax
            self._plans[shape] = self._plan(len(args), tuple(kwargs))
        return compiled

    def _plan(self, count: int, keywords: tuple[str, ...]) -> tuple:
        """How to pick, from ``args + tuple(kwargs.values()) + tail``, every
        parameter's value (in declaration order) and then the launch options,
        for a call shape that ``run`` has bound: a positional argument, else
        a keyword (RUN_KEYWORDS are ``run``'s own), else the
        default, which ``tail`` holds; the options from their keywords, else
        their defaults (in ``tail`` too). Launch options that are also
        parameters go to both, as ``run`` gives them."""
        at = {name: count + i for i, name in enumerate(keywords)}
        tail: list[Any] = []

        def from_tail(value: Any) -> int:
            tail.append(value)
            return count + len(keywords) + len(tail) - 1

        indices = []
        for position, name in enumerate(self._names):
            if position < count:
                indices.append(position)
            elif name in at and name not in RUN_KEYWORDS:
                indices.append(at[name])
            else:
                indices.append(from_tail(self._defaults[name]))
        for name, default in (("num_warps", 4), ("num_stages", None), ("num_ctas", 1), ("launch_pdl", False),
                              ("backend", None), ("warmup", False), ("stream", None)):
            indices.append(at[name] if name in at else from_tail(default))
        _, runtime, constexpr = self.source()
        return (operator.itemgetter(*indices), tuple(tail),
                _getter([self._names.index(name) for name in runtime]),
                _getter([self._names.index(name) for name in constexpr]),
                specialisation_codes(runtime, self._on_value, self._on_alignment))

    # ---- specialisation -------------------------------------------------------------
    def source(self) -> tuple[str, list[str], list[str]]:
        """(source text, runtime parameters, constexpr parameters). The text
        is the whole file's (or notebook cell's) as linecache keeps it; its
        names resolve in the module's globals, as Python resolved them."""
        if self._static is None:
            from mytriton.frontend.namespace import function_source
            from mytriton.frontend.stages import kernel_params, load_kernel

            self.file, text = function_source(self.fn)
            module, entry = load_kernel(text, self.file, self.fn.__name__, self.fn.__globals__, again_soon=True)
            runtime, constexpr, _ = kernel_params(module, entry)
            self._static = (text, runtime, constexpr)
        return self._static

    def bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Arguments by parameter name, with defaults (what inspect's bind
        does, without its cost on every launch)."""
        names = self._names
        if len(args) > len(names):
            raise CompileError(f"{self.__name__}: takes {len(names)} arguments but {len(args)} were given")
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in self._defaults and key not in names:
                raise CompileError(f"{self.__name__}: got an unexpected keyword argument '{key}'")
            if key in bound:
                raise CompileError(f"{self.__name__}: got multiple values for argument '{key}'")
            bound[key] = value
        if len(bound) < len(names):
            for key in names:
                if key not in bound:
                    if key not in self._defaults:
                        raise CompileError(f"{self.__name__}: missing a required argument: '{key}'")
                    bound[key] = self._defaults[key]
        return bound

    def specialize(self, bound: dict[str, Any], num_warps: int, backend: str,
                   num_stages: int | None = None, launch_pdl: bool = False) -> Any:
        """The compiled kernel (runtime/compiled.py) for these arguments."""
        from mytriton import compiler
        from mytriton import language
        from mytriton.runtime.arguments import arg_type, check_constexpr, launch_key, signature_of, specialization

        # The first time on a large stack (deep_stack.run_deep): it checks the
        # syntax with deep walks; later launches read the cache, without a thread.
        text, runtime, constexpr = self._static or run_deep(self.source)
        f32_default = compiler.f32_default_from_env()  # tl.dot's default precision: part of the key
        # Most launches repeat an earlier one's types, hints and constants:
        # found by a cheap key, without working out the types again.
        fast = launch_key([bound[name] for name in runtime], self._on_value, self._on_alignment, runtime,
                          [bound[name] for name in constexpr],
                          (num_warps, num_stages, backend, f32_default, launch_pdl))
        compiled = self._by_launch_key.get(fast) if fast is not None else None
        if compiled is not None:
            return compiled
        # A tl.constexpr(3) argument is its value, as in Triton.
        constexprs = {name: bound[name].value if isinstance(bound[name], language.constexpr) else bound[name]
                      for name in constexpr}
        for name, value in constexprs.items():
            check_constexpr(value, name)
        types = [arg_type(bound[name], name) for name in runtime]
        hints = [specialization(bound[name], t, name in self._on_value, name in self._on_alignment)
                 for name, t in zip(runtime, types)]
        key = (tuple(str(t) for t in types), tuple(hints), tuple((k, repr(v)) for k, v in constexprs.items()),
               num_warps, num_stages, backend, f32_default, launch_pdl)
        compiled = self._compiled.get(key)
        if compiled is None:
            from mytriton.passes.layouts import check_num_warps
            from mytriton.runtime.compiled import CompiledKernel

            check_num_warps(num_warps)
            if num_stages is not None and (type(num_stages) is not int or not 1 <= num_stages <= 16):
                raise CompileError(f"num_stages must be an integer from 1 to 16, got {num_stages!r}")
            options = compiler.Options(kernel=self.fn.__name__, defines=constexprs,
                                       signature=signature_of(types, hints), num_warps=num_warps,
                                       num_stages=num_stages, f32_default=f32_default,
                                       namespace=self.fn.__globals__,
                                       verify_each=compiler.verify_each_from_env())
            # An integer equal to 1 is compiled in (Triton's ("constexpr", 1)),
            # and so is None: the kernel no longer takes them.
            ones = {name: 1 for name, hint in zip(runtime, hints) if hint == "1"}
            ones.update({name: None for name, t in zip(runtime, types) if t is None})
            # On a large stack, as the CLI does (deep_stack.run_deep).
            kernel = run_deep(compiler.source_to_ssa, text, self.file, options)
            metadata = {"name": self.fn.__name__, "num_warps": num_warps, "num_stages": num_stages,
                        "launch_pdl": launch_pdl, "backend": backend, "signature": options.signature,
                        "constants": {**ones, **constexprs},
                        "arch": options.arch, "debug": bool(self.options.get("debug", False))}
            if "launch_metadata" in self.options:
                metadata["launch_metadata"] = self.options["launch_metadata"]
            if self.options.get("repr") is not None:
                metadata["repr"] = self.options["repr"](dict(metadata))
            compiled = CompiledKernel(kernel, self.file, options, backend, metadata,
                                      [name for name in runtime if name not in ones], self._names)
            from mytriton.instrument import jit_ir_printer
            from mytriton.knobs import dump_dir, warn_unmapped_triton_knobs

            warn_unmapped_triton_knobs()

            printer = jit_ir_printer()
            if printer is not None:
                from mytriton.instrument import print_jit_kernel

                run_deep(print_jit_kernel, printer, text, self.file, options)
            from mytriton.remarks import remarks_from_env

            if remarks_from_env():
                from mytriton.remarks import print_jit_remarks

                run_deep(print_jit_remarks, text, self.file, options, backend)
            dump_variable, dump_root = dump_dir()
            if dump_root:
                from mytriton.instrument import dump_jit_kernel

                # Compiled again, with a dumper watching: this costs time only when asked for.
                run_deep(dump_jit_kernel, dump_root, text, self.file, options, (self.file, key), backend,
                         dump_variable)
            if backend == "cuda":
                from mytriton.runtime.cuda_driver import CudaKernel

                compiled.launcher = CudaKernel(compiled.asm["cuda"], options.arch,
                                               without_tma=functools.partial(cuda_without_tma, compiled, options),
                                               pdl=launch_pdl)
            self._compiled[key] = compiled
        if fast is not None:
            self._by_launch_key[fast] = compiled
        return compiled

    def run(self, *args: Any, grid: Any, backend: str | None = None, warmup: bool = False,
            stream: Any = None, **kwargs: Any) -> Any:
        """Launch on ``grid`` (compile only when ``warmup``); the compiled
        kernel is returned either way. The launch options ``num_warps``,
        ``num_stages``, ``num_ctas`` and ``launch_pdl`` are keywords too; one that is also
        a parameter of the kernel goes to both, as in Triton (tutorial 02's
        ``num_stages: tl.constexpr``). On the GPU the launch goes on
        ``stream`` where given, else on the current stream of the tensors'
        framework (runtime/placement.py)."""
        launch = {name: kwargs[name] if name in self._names else kwargs.pop(name)
                  for name in LAUNCH_OPTIONS if name in kwargs}
        if "extern_libs" in kwargs and "extern_libs" not in self._names:
            _check_extern_libs(kwargs.pop("extern_libs"), self.__name__)
        num_warps = launch.get("num_warps", 4)
        num_stages = launch.get("num_stages")
        num_ctas = launch.get("num_ctas", 1)
        if num_ctas != 1:
            raise CompileError(f"num_ctas={num_ctas!r} is not supported (one CTA per program)")
        # Programmatic dependent launch: the kernel may start while the one
        # launched before it runs; its tl.extra.cuda.gdc_wait() waits for that.
        launch_pdl = launch.get("launch_pdl", False)
        if type(launch_pdl) is not bool:
            raise CompileError(f"launch_pdl must be True or False, got {printable(repr(launch_pdl))}")
        bound = self.bind(args, kwargs)
        chosen = select_backend(backend)
        compiled = self.specialize(bound, num_warps, chosen, num_stages, launch_pdl)
        grid3 = normalize_grid(grid, bound)
        if warmup:
            compiled.build_for([bound[name] for name in compiled.runtime_params])
            return compiled
        values = [bound[name] for name in compiled.runtime_params]
        compiled._launch(grid3, values, stream)
        return compiled

    def warmup(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Compile for these arguments without running, as Triton's
        ``kernel.warmup(*args, grid=..., **meta)``; returns the compiled kernel."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)


# Call shapes a kernel keeps plans for (a program uses a handful).
_PLAN_LIMIT = 64


def _f32_default() -> Any:
    from mytriton import compiler

    return compiler.f32_default_from_env()


_F32_DEFAULT_ENV = EnvironmentValue("MYTRITON_F32_DEFAULT", _f32_default)


def _getter(indices: list[int]) -> Callable[[tuple], tuple]:
    """The items of a sequence at ``indices``, as a tuple (itemgetter gives
    a single item bare)."""
    if len(indices) == 1:
        (index,) = indices
        return lambda items: (items[index],)
    return operator.itemgetter(*indices) if indices else lambda items: ()


def _positive_grid(grid: Any) -> tuple[int, int, int] | None:
    """A grid of one to three plain ints within CUDA's limits and none zero,
    as three; None for anything else (normalize_grid decides)."""
    if type(grid) is tuple:
        size = len(grid)
        if size == 1:
            (x,) = grid
            if type(x) is int and 0 < x <= MAX_GRID[0]:
                return (x, 1, 1)
        elif size == 2:
            x, y = grid
            if type(x) is int and type(y) is int and 0 < x <= MAX_GRID[0] and 0 < y <= MAX_GRID[1]:
                return (x, y, 1)
        elif size == 3:
            x, y, z = grid
            if (type(x) is int and type(y) is int and type(z) is int and 0 < x <= MAX_GRID[0]
                    and 0 < y <= MAX_GRID[1] and 0 < z <= MAX_GRID[2]):
                return grid
    return None


def host_array(value: Any) -> Any:
    """Host arrays for the interpreter: a CPU tensor as a NumPy view of its
    memory (runtime/arguments.py, tensor_view)."""
    from mytriton.runtime.arguments import is_device_array, is_tensor, tensor_view

    if is_device_array(value):
        raise CompileError("the interpreter backend cannot read GPU memory; pass host arrays")
    if is_tensor(value):
        return tensor_view(value)
    return value


def _check_extern_libs(libs: Any, name: str) -> None:
    """Triton's ``extern_libs`` launch option: the libraries to link, by name
    and path. mytriton's libdevice functions are CUDA's own math library,
    always there (language/extra/libdevice.py), so a libdevice path is
    accepted and not read, as tutorial 07 passes one; any other library is
    an error, never a file opened."""
    if libs is None:
        return
    if not isinstance(libs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in libs.items()):
        raise CompileError(f"{name}: extern_libs maps library names to paths, got {printable(repr(libs))[:200]}")
    others = sorted(set(libs) - {"libdevice"})
    if others:
        raise CompileError(f"{name}: extern_libs: mytriton links libdevice only (CUDA's own, not read from a path); "
                           f"cannot link {', '.join(printable(repr(o)) for o in others)}")


def _check_options(fn: Callable[..., Any], options: dict[str, Any]) -> None:
    name = getattr(fn, "__name__", "?")
    for option in options:
        if option not in JIT_OPTIONS:
            raise CompileError(f"@jit of '{name}': unknown option '{option}' "
                               f"(options: {', '.join(JIT_OPTIONS)})")
    params = set(inspect.signature(fn).parameters)
    for option in ("do_not_specialize", "do_not_specialize_on_alignment"):
        for item in options.get(option) or ():
            if isinstance(item, str) and item not in params:
                raise CompileError(f"@jit of '{name}': {option} names '{item}', which is not a parameter")
            if not isinstance(item, (str, int)) or isinstance(item, bool):
                raise CompileError(f"@jit of '{name}': {option} takes parameter names or positions")
            if isinstance(item, int) and not 0 <= item < len(params):
                raise CompileError(f"@jit of '{name}': {option} names position {item}, but the kernel "
                                   f"has {len(params)} parameters")
    for option in ("repr", "launch_metadata"):
        if options.get(option) is not None and not callable(options[option]):
            raise CompileError(f"@jit of '{name}': {option} must be callable")


def _not_named(names: list[str], items: Any) -> frozenset[str]:
    """The parameters ``items`` (names or positions, as Triton takes them) do
    not name."""
    named = {names[i] if isinstance(i, int) else i for i in (items or ())}
    return frozenset(n for n in names if n not in named)


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorate a kernel: ``@mytriton.jit`` or ``@mytriton.jit(...)`` with
    Triton's options (JIT_OPTIONS says what each does here)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
