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
    ``metadata.num_warps``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no metadata '{name}' (has: {', '.join(self)})") from None


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
        self.metadata = Metadata(metadata)
        self.launcher: Any = None
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

    def _launch(self, grid3: tuple[int, int, int], values: list[Any], stream: Any = None) -> None:
        if self.has_descriptors:  # a host TensorDescriptor is passed as its parts
            from mytriton.tools.tensor_descriptor import expand_descriptors

            values = expand_descriptors(values)
        if self.backend == "cuda":
            self.launcher.launch(grid3, values, stream)
        else:
            from mytriton.backends.interp import run_kernel
            from mytriton.runtime.jit import host_array

            run_kernel(self.kernel, grid3, [host_array(v) for v in values])

    def __repr__(self) -> str:
        return f"CompiledKernel({self.name}, backend={self.backend}, num_warps={self.metadata['num_warps']})"
