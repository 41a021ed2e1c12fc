"""What the CUDA printer's helpers may ask of it, and nothing more.

Each helper (reductions, scans, dots, atomics, ...) renders its ops through
an ``EmitContext``: the kernel, its names and storage, the layouts, the C
builder, slot loops, and the shared-memory plan. The printer
(``emitter.CudaEmitter``) is one; the helpers never import it, so they sit
below it in the import graph.
"""
from __future__ import annotations

from typing import Any, Protocol

from mytriton.backends.c_style import CStyleLanguage
from mytriton.backends.cuda.c_builder import CBuilder
from mytriton.backends.cuda.thread_coordinates import BlockedLayout, Layout
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa import Kernel, Op, Operand, Value
from mytriton.ir.ssa_text import ValueNames


class EmitContext(Protocol):
    kernel: Kernel
    lang: CStyleLanguage  # every target spelling
    out: CBuilder  # where the lines go, at the current scope's depth
    threads: int
    tensor_maps: list  # TMA's (tma_copies.TensorMap), in the order of the kernel's parameters
    tma_ring: int  # the mbarriers of TMA's copy groups (0: none)
    ssa_names: ValueNames
    storage: dict[Value, str]  # tiles held in per-thread arrays; loop-carried locals; shared buffers
    held: set  # tiles computed into registers though not materialised
    hoisted_copies: int
    hoisted_coordinates: dict
    wrapped_arrays: dict  # top-level arrays of chunks' wrapped coordinates, by (axis, offset, wrap, walk)
    vector_stores: int  # staging arrays of vector stores and atomics, numbered

    def line(self, text: str) -> None: ...
    def name(self, value: Value) -> str: ...
    def local_name(self, value: Value, loop: Any) -> str: ...
    def scalar_ref(self, value: Value) -> str: ...
    def scalar_arg(self, operand: Operand) -> Any: ...
    def shared_name(self, value: Value) -> str: ...
    def parent_name(self, parent: BlockedLayout) -> str: ...
    def layout_of(self, value: Value) -> Layout: ...
    def where(self, op: Op) -> str: ...
    def error_at(self, op: Op, message: str) -> CompileError: ...
    # A slot loop (slots.SlotLoop) over ``domain``'s slots, and writing it out.
    def open_loop(self, domain: Layout, op: Op, looped: bool = False) -> Any: ...
    def close_loop(self, loop: Any, comment: str, declare: list[str] | None = None) -> None: ...
    def scratch_fence(self, note: str = "") -> None: ...
    def need_shared(self, nbytes: int, value_or_op: Any) -> None: ...
    def carried_in_place(self, op: Op) -> str | None: ...
