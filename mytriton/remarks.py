"""Optimisation remarks: what each ``tl.dot`` got on the CUDA path, and why not more.

As LLVM's ``-Rpass`` / ``-Rpass-missed``: ``mytriton compile --remarks`` (and
``MYTRITON_REMARKS=1`` for the kernels the JIT compiles) prints one remark per
dot, at its source line, in the diagnostics' format::

    k.py:24:16: remark: dot 64x64x32 f16: staged (cp.async, 16-byte chunks); 3 stages; wgmma m64n64k16, ...

The passes that decide (``stage-dots``, ``software-pipeline``, ``layouts``,
``overlap-wgmma``) record why they refused a dot its fast path, in their own
words, with ``note``: a side channel on the kernel object (``Kernel.meta``),
never printed in the IR, so the IR and the CUDA are the same with or without
remarks (a kernel read back from text has none: its remarks then say only what
the laid-out SSA shows). ``dot_remarks`` reads the rest from the laid-out SSA
itself (the dot's result layout, its buffers' layouts and sizes, its loop's
``pipeline_stages``, its copies' chunks) and from ptxas's report.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from mytriton.diagnostics import Remark

REMARKS_ENV = "MYTRITON_REMARKS"
_KEY = "dot_remarks"  # Kernel.meta[_KEY]: {dot op: [(topic, fact), ...]}

# What a recorded fact is about.
STAGING, PIPELINE, INSTRUCTION, OVERLAP = "staging", "pipeline", "instruction", "overlap"
TMA = "tma"  # on a copy: why TMA does not make it
TMA_TESTED = "tma_tested"  # on a TMA copy: the stride parameter each launch tests (a multiple of 16 bytes)


def remarks_from_env() -> bool:
    """``MYTRITON_REMARKS``: set, and not "0" (each kernel the JIT compiles prints its remarks)."""
    from mytriton.knobs import flag

    return flag(REMARKS_ENV)


# ---- what the passes record -------------------------------------------------------------


def note(kernel: Any, op: Any, topic: str, fact: str) -> None:
    """Record ``fact`` (why ``op``, a dot, did not get more) under ``topic``;
    a later fact of the same topic replaces an earlier one (a pass run again)."""
    facts = kernel.meta.setdefault(_KEY, {}).setdefault(op, {})
    facts[topic] = fact


def moved(kernel: Any, old: Any, new: Any) -> None:
    """``new`` replaces the dot ``old`` (stage-dots' dot_shared): its facts go with it."""
    records = kernel.meta.get(_KEY)
    if records is not None and old in records:
        records[new] = records.pop(old)


def facts_of(kernel: Any, op: Any) -> dict[str, str]:
    return dict(kernel.meta.get(_KEY, {}).get(op, {}))


# ---- ptxas's report ---------------------------------------------------------------------


@dataclass(frozen=True)
class PtxasUsage:
    """Registers and spills of one kernel, as ``ptxas -v`` reports them; or
    why there is no report (``reason``)."""

    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    reason: str = ""

    def __str__(self) -> str:
        if self.registers is None:
            return f"ptxas not run ({self.reason})" if self.reason else "ptxas not run"
        spills = "no spills" if not (self.spill_stores or self.spill_loads) else \
            f"{self.spill_stores} bytes spill stores, {self.spill_loads} bytes spill loads"
        stack = f", {self.stack} bytes stack" if self.stack else ""
        return f"ptxas: {self.registers} registers, {spills}{stack}"


_USED = re.compile(r"Used (\d+) registers")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(report: str, symbol: str | None = None) -> PtxasUsage:
    """The entry function ``symbol``'s usage in nvcc's ``--resource-usage``
    report (the first entry function's where ``symbol`` is None or absent)."""
    sections = re.split(r"Compiling entry function '([^']*)'", report)
    chosen = None
    for name, body in zip(sections[1::2], sections[2::2]):
        if chosen is None or name == symbol:
            chosen = body
    if chosen is None:
        return PtxasUsage(reason="ptxas reported no entry function")
    used = _USED.search(chosen)
    frame = _FRAME.search(chosen)
    if used is None:
        return PtxasUsage(reason="ptxas reported no register count")
    stack, stores, loads = (int(x) for x in frame.groups()) if frame else (0, 0, 0)
    return PtxasUsage(int(used.group(1)), stores, loads, stack)


def ptxas_usage(cuda_source: str, arch: str) -> PtxasUsage:
    """Registers and spills of the kernel in ``cuda_source``, from ptxas
    (nvcc ``--resource-usage``); ``PtxasUsage`` with a reason where nvcc is not found."""
    from mytriton.backends.cuda.nvcc import NvccMissing, resource_usage
    from mytriton.backends.cuda.emitter import header_of

    try:
        report = resource_usage(cuda_source, arch)
    except NvccMissing:
        return PtxasUsage(reason="nvcc not found")
    header = header_of(cuda_source) or {}
    symbol = header.get("symbol") or header.get("kernel")
    return parse_ptxas(report, symbol if isinstance(symbol, str) else None)


# ---- the remarks ------------------------------------------------------------------------


def _sort_key(remark: Remark) -> tuple:
    loc = remark.loc
    return (0, loc.file, loc.line, loc.col) if loc is not None else (1, "", 0, 0)


def render(remarks: list[Remark]) -> str:
    """The remarks sorted by location, one after the other (each with its
    quoted source line), ending in a newline; empty for none."""
    return "".join(remark.render() + "\n" for remark in sorted(remarks, key=_sort_key))


def size_text(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes} bytes"
    kib = nbytes / 1024
    return f"{kib:g} KiB" if nbytes % 1024 == 0 else f"{kib:.1f} KiB"


def dot_remarks(kernel: Any, ptxas: PtxasUsage | None = None) -> list[Remark]:
    """One remark per dot of the laid-out ``kernel`` (in program order)."""
    from mytriton.ir import opdefs
    from mytriton.ir.ssa import walk

    dots = [op for op in walk(kernel.body)
            if (opdef := opdefs.lookup(op.name)) is not None and opdef.layout_rule == "dot"]
    return [Remark(op.loc, _describe(kernel, op, ptxas)) for op in dots]


def _describe(kernel: Any, op: Any, ptxas: PtxasUsage | None) -> str:
    from mytriton.ir.layout_attributes import Mma
    from mytriton.passes.dot_layouts import buffer_of
    from mytriton.types import SharedType, element_of

    facts = facts_of(kernel, op)
    a, b = op.operands[0], op.operands[1]
    a_element = a.type.element if isinstance(a.type, SharedType) else element_of(a.type)
    b_element = b.type.element if isinstance(b.type, SharedType) else element_of(b.type)
    m, k = a.type.shape[-2:]
    n = b.type.shape[-1]
    dtype = str(a_element) if a_element == b_element else f"{a_element} x {b_element}"
    precision = op.attrs.get("input_precision")
    if str(a_element) == "f32" and precision:
        dtype += f" ({precision})"
    parts: list[str] = []

    # Staged, and how.
    buffers = [buffer_of(x) for x in (a, b) if isinstance(x.type, SharedType)]
    if op.name == "dot":
        parts.append(f"not staged: {facts[STAGING]}" if STAGING in facts else "not staged")
    else:
        loop = _loop_of(op)
        named = [(letter, buffer_of(x)) for letter, x in (("A", a), ("B", b)) if isinstance(x.type, SharedType)]
        how = {letter: _copy_text(kernel, _copies_into(kernel, [buffer]), loop) for letter, buffer in named}
        if len(set(how.values())) == 1:
            text = next(iter(how.values()))
        else:
            text = ", ".join(f"{letter} {copied}" for letter, copied in how.items())
        parts.append(f"B staged ({text}), A in registers" if op.name == "dot_rs" else f"staged ({text})")
        stages = loop.attrs.get("pipeline_stages") if loop is not None else None
        if stages is not None and stages > 1:
            stage_text = f"{stages} stages"
            if PIPELINE in facts:
                stage_text += f" ({facts[PIPELINE]})"
            parts.append(stage_text)
        else:
            parts.append(f"not pipelined: {facts[PIPELINE]}" if PIPELINE in facts else "not pipelined")

    # The instruction.
    layout = op.results[0].type.layout
    if isinstance(layout, Mma) and layout.version == 3:
        _, instr_n, instr_k = layout.instr_shape
        text = f"wgmma m64n{instr_n}k{instr_k}"
        if op.attrs.get("in_flight"):
            from mytriton.passes.dot_layouts import computed_by_wgmma

            # (overlap-wgmma's second form: another wgmma dot in its loop body waits for it)
            across = op.parent is not None and any(computed_by_wgmma(other) for other in op.parent.ops if other is not op)
            text += (", in flight into the next iteration, until its first dot's wait" if across
                     else ", in flight over the next tiles' copies")
        elif OVERLAP in facts:
            text += f", not overlapped: {facts[OVERLAP]}"
        if op.attrs.get("proxy_fence"):
            # (the proxy-fences pass's decision: none where cp.async alone writes the buffers)
            text += ", after a proxy fence at each issue (plain stores wrote its buffers)"
        parts.append(text)
    elif isinstance(layout, Mma):
        instr_m, instr_n = layout.instr_shape[:2]
        text = f"mma.sync m{instr_m}n{instr_n}k{_mma_k(a_element)}"
        if INSTRUCTION in facts:
            text += f" (not wgmma: {facts[INSTRUCTION]})"
        parts.append(text)
    else:
        parts.append(f"FMA (not on tensor cores: {facts[INSTRUCTION]})" if INSTRUCTION in facts else "FMA")

    # Operands.
    parts.append(f"A {_operand_text(a, 'M')}, B {_operand_text(b, 'K')}")

    # Where its result goes.
    stored = _result_text(kernel, op)
    if stored:
        parts.append(stored)

    # Shared memory.
    from mytriton.backends.cuda.tma import ring_bytes

    shared = kernel.shared_memory
    ring = ring_bytes(kernel)  # TMA's mbarriers, after everything else
    total = shared.bytes - ring if shared is not None else None
    own = sum(_buffer_bytes(x) for x in dict.fromkeys(buffers))
    if own:
        parts.append(f"{size_text(own)} shared" + (f" of the kernel's {size_text(total)}" if total and total != own
                                                      else "")
                     + (f", and {ring} bytes of mbarriers for TMA" if ring else ""))
    elif total:
        parts.append(f"no buffers of its own; the kernel's shared memory {size_text(total)}")
    if ptxas is not None:
        parts.append(str(ptxas))
    return f"dot {m}x{n}x{k} {dtype}: " + "; ".join(parts)


def _mma_k(element: Any) -> int:
    from mytriton.passes.dot_layouts import MMA_K

    return MMA_K.get(element, 0)


def _operand_text(value: Any, column_major: str) -> str:
    """``column_major``: what a column-major buffer of this operand runs along
    (A's columns are M, B's are K)."""
    from mytriton.ir.layout_attributes import NvmmaShared, PaddedShared
    from mytriton.types import SharedType

    t = value.type
    if not isinstance(t, SharedType):
        return "registers"
    layout = t.layout
    if isinstance(layout, NvmmaShared):
        major = f", {column_major}-major" if tuple(layout.order) == (0, 1) else ""
        return f"shared (swizzle {layout.swizzle}B{major})"
    if isinstance(layout, PaddedShared) and layout.transposed:
        # (a stage's view counts the other stages' runs as padding: the buffer's own is the padding)
        view = getattr(value, "op", None)
        pad = view.operands[0].type.layout.pad if view is not None and view.name == "stage_view" else layout.pad
        padded = f", its {column_major} runs padded by {pad * t.element.nbytes} bytes" if pad else ""
        return f"shared ({column_major}-major{padded})"
    if isinstance(layout, PaddedShared) and layout.pad:
        return f"shared (rows padded by {layout.pad * t.element.nbytes} bytes)"
    return "shared"


def _buffer_bytes(buffer: Any) -> int:
    from mytriton.ir.ssa import OpResult
    from mytriton.types import SharedType

    if isinstance(buffer, OpResult) and isinstance(buffer.type, SharedType):
        return buffer.type.allocated_bytes
    return 0


def _copies_into(kernel: Any, buffers: list[Any]) -> list[Any]:
    from mytriton.ir.ssa import Value, walk
    from mytriton.passes.dot_layouts import buffer_of, copies_into_shared

    wanted = set(buffers)
    return [op for op in walk(kernel.body)
            if copies_into_shared(op) and isinstance(op.operands[0], Value) and buffer_of(op.operands[0]) in wanted]


def _copy_text(kernel: Any, copies: list[Any], loop: Any) -> str:
    """How a buffer is filled: once before the dot's loop, by TMA, by cp.async
    (its chunks, and why not TMA), or synchronously."""
    from mytriton.ir import opdefs
    from mytriton.ir.ssa import is_within

    if not copies:
        return "no copies"
    if loop is not None and not any(is_within(op.parent, loop.regions[0]) for op in copies):
        by_tma = all(op.attrs.get("engine") == "tma" for op in copies)
        return "copied once before the loop" + (" by TMA" if by_tma else "")
    if not all(getattr(opdefs.lookup(op.name), "async_shared_write", False) for op in copies):
        return "synchronous copies"
    tma = [op.attrs.get("engine") == "tma" for op in copies]
    if all(tma):
        return "TMA" + _tested_text(kernel, copies)
    widths = sorted({op.attrs["chunk"] * op.operands[0].type.element.nbytes for op in copies
                     if "chunk" in op.attrs})
    if not widths:
        text = "cp.async"
    elif widths == [widths[0]] and widths[0] >= 4:
        text = f"cp.async, {widths[0]}-byte chunks"
    else:
        text = "cp.async, " + "/".join(str(w) for w in widths) + "-byte chunks"
    # How whole chunks out of bounds are zeroed is copy-widths' choice, worth 4-30 % on mma.sync.
    # Said where it is the source size; the predicate is the default and goes unsaid.
    if any(op.attrs.get(opdefs.ZERO_FILL) == "src_size" for op in copies):
        text += ", zero-filled by source size"
    if any(tma):
        return f"TMA and {text}"
    why = next((facts_of(kernel, op)[TMA] for op in copies if TMA in facts_of(kernel, op)), None)
    return f"{text} (not TMA: {why})" if why else text


def _tested_text(kernel: Any, copies: list[Any]) -> str:
    """Which row strides a launch tests before it takes the TMA build."""
    tested = sorted({facts_of(kernel, op)[TMA_TESTED] for op in copies if TMA_TESTED in facts_of(kernel, op)})
    if not tested:
        return ""
    strides = f"row stride {tested[0]} is" if len(tested) == 1 else f"row strides {' and '.join(tested)} are"
    return f" ({strides} tested at each launch: the cp.async build where not a multiple of 16 bytes)"


def _result_text(kernel: Any, dot: Any) -> str:
    """How the stores of ``dot``'s result (or of values computed from it
    element by element) write it: from its fragments, so many bytes a thread,
    or after an exchange through shared memory (down its columns where it is
    stored column-major). A store of its fragments 2 or 4 bytes at a time,
    rows apart, is the slow epilogue a user may find here."""
    from mytriton.ir import opdefs
    from mytriton.ir.layout_attributes import Mma
    from mytriton.ir.ssa import for_yield, walk
    from mytriton.types import element_of

    derived = {dot.results[0]}
    while True:  # forwards to a fixed point: loops carry the accumulator to their results
        count = len(derived)
        for op in walk(kernel.body):
            if not any(o in derived for o in op.operands):
                continue
            if op.name == "yield" and op.parent is not None and op.parent.parent is not None \
                    and op.parent.parent.name == "for" and for_yield(op.parent.parent) is op:
                loop = op.parent.parent
                derived.update(r for r, o in zip(loop.results, op.operands) if o in derived)
            elif op.results and getattr(opdefs.lookup(op.name), "layout_rule", None) in ("elementwise", "convert"):
                derived.update(op.results)
        if len(derived) == count:
            break
    texts: list[str] = []
    for op in walk(kernel.body):
        if op.name == "store_tile" and op.operands[-1] in derived:
            tile: Any = op.operands[-1]
            rows, cols = tile.type.shape
            how = "by TMA from shared memory" if op.attrs.get("engine") == "tma" else "element by element"
            text = f"result stored {how} ({rows}x{cols}, tma-stores)"
            if text not in texts:
                texts.append(text)
            continue
        if op.name != "store" or len(op.operands) < 2 or op.operands[1] not in derived:
            continue
        value: Any = op.operands[1]
        pointers: Any = op.operands[0]
        pointer: Any = element_of(pointers.type)
        nbytes = pointer.pointee.nbytes * op.attrs.get("vector", 1)
        source = getattr(value, "op", None)
        if isinstance(value.type.layout, Mma):
            text = f"result stored from its fragments, {nbytes} bytes a thread at a time"
        elif source is not None and source.name == "convert_layout" \
                and isinstance(getattr(source.operands[0].type, "layout", None), Mma):
            down = " down its columns" if source.attrs.get("scratch_columns") else ""
            text = f"result exchanged through shared memory, stored {nbytes} bytes a thread at a time{down}"
        else:
            text = f"result stored {nbytes} bytes a thread at a time"
        why = facts_of(kernel, op).get(TMA)
        if why:
            text += f" (not TMA: {why})"
        if text not in texts:
            texts.append(text)
    return ", ".join(texts)


def _loop_of(op: Any) -> Any:
    """The for loop whose body holds ``op``, or None."""
    block = op.parent
    owner = block.parent if block is not None else None
    return owner if owner is not None and owner.name == "for" else None


# ---- a compile's remarks ------------------------------------------------------------------


class Collector:
    """Watches a compile (``instrument.attach``): keeps the laid-out kernel and the CUDA source."""

    def __init__(self) -> None:
        self.kernel: Any = None
        self.cuda: str | None = None

    def on_stage(self, name: str, value: Any) -> None:
        if name == "layouts":
            self.kernel = value
        elif name == "cuda":
            self.cuda = value


def watch(options: Any) -> Collector:
    """A Collector attached to ``options``."""
    from mytriton.instrument import attach

    collector = Collector()
    attach(options, collector)
    return collector


def compile_remarks(text: str, file: str, options: Any, seen: Collector | None = None,
                    ptxas: str | None = None) -> list[Remark]:
    """The remarks of kernel source ``text`` compiled with ``options``: from
    the compile ``seen`` watched where it reached the CUDA source, else from
    a compile of its own to it (an ``--emit`` that stops earlier, or branches
    off to MLIR or TTIR). ptxas runs where nvcc is found, unless ``ptxas``
    says why not."""
    import dataclasses

    from mytriton import compiler

    if seen is None or seen.kernel is None or seen.cuda is None:
        quiet = dataclasses.replace(options, on_stage=None, before_each=None, after_each=None)
        seen = watch(quiet)
        compiler.run_stages(text, file, "cuda", quiet)
    assert seen.kernel is not None and seen.cuda is not None
    usage = PtxasUsage(reason=ptxas) if ptxas is not None else ptxas_usage(seen.cuda, options.arch)
    return dot_remarks(seen.kernel, usage)


def print_jit_remarks(text: str, file: str, options: Any, backend: str) -> None:
    """``MYTRITON_REMARKS=1``: the remarks of one JIT specialisation on stderr,
    from a compile of its own to CUDA (the interpreter's launches too: the
    remarks say what the GPU would run); ptxas runs for a launch on the GPU only."""
    ptxas = None if backend == "cuda" else "the launch runs in the interpreter"
    sys.stderr.write(render(compile_remarks(text, file, options, ptxas=ptxas)))
    sys.stderr.flush()
