"""What a launch (or ``kernel.warmup``) returns: the compiled kernel, as
Triton's ``CompiledKernel``.

``handle.asm`` maps a stage to its text: ``ssa`` (the optimised SSA),
``layouts`` (the laid-out SSA), ``cuda`` (the CUDA C++), ``ptx`` (nvcc's
PTX; needs nvcc), ``ttir`` (Triton's TTIR, as Triton's ``kernel.asm["ttir"]``)
and ``mlir`` (the upstream-dialect MLIR). Each text is produced the first time it is asked for, by
the pipeline's own stage functions, so a launch pays only for what it runs.
``handle.metadata`` holds the launch options (name, num_warps, num_stages,
backend, ...).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterator

from mytriton.deep_stack import run_deep

ASM_KINDS = ("ssa", "layouts", "cuda", "ptx")


class LazyAsm(Mapping):
    """A read-only mapping from stage name to text, computed on first use."""

    def __init__(self, producers: dict[str, Callable[[], str]]) -> None:
        self._producers = producers
        self._texts: dict[str, str] = {}

    def __getitem__(self, kind: str) -> str:
        if kind not in self._producers:
            raise KeyError(f"no '{kind}' text (kinds: {', '.join(self._producers)})")
        if kind not in self._texts:
            # On a large stack, as every other stage runs (deep_stack.run_deep).
            self._texts[kind] = run_deep(self._producers[kind])
        return self._texts[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._producers)

    def __len__(self) -> int:
        return len(self._producers)

    def computed(self) -> tuple[str, ...]:
        """The kinds already produced (for tests of the laziness)."""
        return tuple(self._texts)


class Metadata(dict):
    """The launch options, read as ``metadata["num_warps"]`` or, as Triton's
    ``metadata.num_warps``; ``lazy`` entries are worked out when first read
    (``shared``: the bytes of shared memory a block takes, from the CUDA)."""

    def __init__(self, values: dict[str, Any], lazy: dict[str, Callable[[], Any]] | None = None) -> None:
        super().__init__(values)
        self._lazy = lazy or {}

    def __missing__(self, name: str) -> Any:
        if name not in self._lazy:
            raise KeyError(name)
        value = self[name] = self._lazy[name]()
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no metadata '{name}' (has: {', '.join([*self, *self._lazy])})") from None


class CompiledKernel:
    """One specialisation of a ``@jit`` kernel: its SSA (what the interpreter
    runs), its texts (``asm``), its options (``metadata``), and on the GPU
    the loaded CUDA module (``launcher``)."""

    def __init__(self, kernel: Any, file: str, options: Any, backend: str,
                 metadata: dict[str, Any], runtime_params: list[str], all_params: list[str]) -> None:
        from mytriton import compiler

        self.kernel = kernel
        self.runtime_params = runtime_params
        self.all_params = all_params
        self.name = kernel.name
        self.backend = backend
        self.options = options
        self.metadata = Metadata(metadata, {"shared": self._shared_bytes})
        self.launcher: Any = None
        self._resources: tuple[int, int] | None = None
        # Parameters passed host tensor descriptors (their signature says tensordesc<...>).
        self.has_descriptors = "tensordesc<" in (getattr(options, "signature", None) or "")
        # Printed now: the later stages change the kernel object in place.
        ssa = compiler.print_ssa(kernel)

        laid: list[Any] = []

        def laid_out() -> Any:
            # Made once, for both texts. The interpreter's kernel stays as it
            # is: a copy read back from the text is laid out. On the GPU
            # nothing else runs it, so the kernel itself is: a process's first
            # launch then builds no parser for the SSA text (a second or more
            # where the parser's tables are not cached yet).
            if not laid:
                fresh = kernel if backend == "cuda" else compiler.read_ssa(ssa, file)
                laid.append(compiler.layouts(compiler.stage_dots(fresh, options), options))
            return laid[0]

        self.asm = LazyAsm({
            "ssa": lambda: ssa,
            "layouts": lambda: compiler.print_ssa(laid_out()),
            "cuda": lambda: compiler.emit_cuda(laid_out(), options),
            "ptx": lambda: compiler.ptx(self.asm["cuda"], options),
            # The other back ends, from the optimised SSA as `compile --emit` makes them.
            "ttir": lambda: compiler.emit_ttir(compiler.read_ssa(ssa, file)),
            "mlir": lambda: compiler.STAGE["mlir"].apply(compiler.read_ssa(ssa, file), options),
        })
        self.asm._texts["ssa"] = ssa

    # ---- what Triton's CompiledKernel tells its callers (tutorial 02's occupancy sums) ----------------
    def _shared_bytes(self) -> int:
        from mytriton.backends.cuda.emitter import header_of

        return int((header_of(self.asm["cuda"]) or {}).get("shared_bytes", 0))

    def _init_handles(self) -> None:
        """Triton's: load the kernel on the current GPU, so that ``n_regs`` and
        ``n_spills`` are known; in the interpreter, nothing to load."""
        if self.backend == "cuda":
            self._usage()

    @property
    def n_regs(self) -> int:
        """Registers a thread (the loaded function's; in the interpreter, ptxas's of its CUDA)."""
        return self._usage()[0]

    @property
    def n_spills(self) -> int:
        """Local memory a thread in 4-byte words, as Triton counts spills."""
        return self._usage()[1]

    def _usage(self) -> tuple[int, int]:
        if self._resources is None:
            if self.backend == "cuda":
                registers, local = self.launcher.resources()
            else:
                from mytriton.diagnostics import CompileError
                from mytriton.remarks import ptxas_usage

                usage = ptxas_usage(self.asm["cuda"], self.options.arch)
                if usage.registers is None:
                    raise CompileError(f"kernel '{self.name}': its registers come from ptxas here (the interpreter "
                                       f"loads no GPU code), which did not run: {usage.reason}")
                registers, local = usage.registers, usage.stack
            self._resources = (registers, local // 4)
        return self._resources

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """``handle[grid](*args)``: launch this specialisation again, as
        Triton's compiled kernels are launched (tutorial 02), with either the
        runtime arguments alone or every argument in order (the constexprs
        must then be the compiled values)."""
        return lambda *args: self.launch(grid, args)

    def launch(self, grid: Any, args: Any) -> None:
        from mytriton.diagnostics import CompileError
        from mytriton.runtime.jit import normalize_grid

        constants = self.metadata["constants"]
        if len(args) == len(self.all_params) != len(self.runtime_params):
            named = dict(zip(self.all_params, args))
            for name, value in constants.items():
                if named[name] != value:
                    raise CompileError(f"compiled kernel '{self.name}' has {name} = {value!r} compiled in, "
                                       f"got {named[name]!r}")
            args = [named[name] for name in self.runtime_params]
        if len(args) != len(self.runtime_params):
            raise CompileError(f"compiled kernel '{self.name}' takes its {len(self.runtime_params)} runtime "
                               f"argument(s) ({', '.join(self.runtime_params)}) or all {len(self.all_params)}, "
                               f"got {len(args)}")
        self._launch(normalize_grid(grid, dict(constants)), list(args))

    def build_for(self, values: list[Any]) -> None:
        """Build now what a launch with these runtime arguments runs (a warmup's
        work; launches build on first use)."""
        if self.launcher is not None:
            self.launcher.build_for(self._expanded(values))

    def _expanded(self, values: list[Any]) -> list[Any]:
        if self.has_descriptors:  # a host TensorDescriptor is passed as its parts
            from mytriton.tools.tensor_descriptor import expand_descriptors

            return expand_descriptors(values)
        return values

    def _launch(self, grid3: tuple[int, int, int], values: list[Any], stream: Any = None) -> None:
        values = self._expanded(values)
        if self.backend == "cuda":
            self.launcher.launch(grid3, values, stream)
        else:
            from mytriton.backends.interp import run_kernel
            from mytriton.runtime.jit import host_array

            run_kernel(self.kernel, grid3, [host_array(v) for v in values])

    def __repr__(self) -> str:
        return f"CompiledKernel({self.name}, backend={self.backend}, num_warps={self.metadata['num_warps']})"
