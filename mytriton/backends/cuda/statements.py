"""The CUDA back end's statements: how each block's ops are grouped into
the units the printer writes, and which values have storage of their own
whatever any pass decides.

A statement (``Group``) is a scalar op, consecutive loads (or stores) over
one layout that share one slot loop, a reduction, a layout change, a
loop, ... A pure tile op is no statement: each statement that reads it
computes it again in its own slot loop (rematerialisation), unless the
hold-tiles pass gave it a per-thread array. The pass decides from this
grouping which tiles one statement reads from another's registers, and the
printer renders the same groups, so both take it from here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mytriton.backends.cuda.thread_coordinates import Layout, tile_layout
from mytriton.ir import opdefs
from mytriton.ir.analysis import is_tile
from mytriton.ir.ssa import Block, Kernel, Op, Value, is_combine, walk

COPY_OPS = ("copy_to_shared", "copy_strided_to_shared", "copy_gathered_to_shared")  # what dots.emit_copies takes
# The pipelined K loop's ops (the software-pipeline pass), each a statement of its own.
ASYNC_OPS = ("stage_view", "async_copy_to_shared", "async_copy_strided_to_shared", "async_copy_gathered_to_shared",
             "async_commit", "async_wait", "wgmma_wait", "proxy_fence")


@dataclass
class Group:
    """Statements emitted together: a scalar op, loads/stores sharing one
    slot loop, a reduction, or a loop."""

    kind: str  # "scalar", "tile", "convert", "reduce", "for", "copies", "barrier", "async", "dot", ...
    ops: list[Op] = field(default_factory=list)
    domain: "Layout | None" = None


@dataclass
class Statements:
    """A kernel's statements: each block's groups (by ``id`` of the block),
    the group each grouped op is in (by ``id`` of the group), and the shared
    buffers allocated, in program order."""

    groups: dict[int, list[Group]] = field(default_factory=dict)
    group_of: dict[Op, int] = field(default_factory=dict)
    shared_allocs: list[Op] = field(default_factory=list)


def rule(op: Op) -> str:
    opdef = opdefs.lookup(op.name)
    return opdef.layout_rule if opdef is not None else "none"


def layout_of(value: Value) -> Layout:
    """The layout the layouts stage gave a tile."""
    return tile_layout(value.type.layout, value.type.shape)


def domain(op: Op) -> Layout:
    """The layout whose slots a statement runs over: its pointer's for a
    store, its operand's for a reduction, else its result's."""
    if rule(op) in ("store", "reduce", "scan"):
        return layout_of(op.operands[0])
    return layout_of(op.results[0])


def statements(kernel: Kernel) -> Statements:
    """``kernel``'s statements, block by block (regions where their op is)."""
    found = Statements()
    _group(kernel.body, found)
    return found


def _group(block: Block, found: Statements) -> list[Group]:
    groups: list[Group] = []
    open_group: Group | None = None
    for op in block.ops:
        kind = rule(op)
        if op.name in ("yield", "condition"):
            continue
        if op.name in ("for", "if", "while"):
            open_group = None
            groups.append(Group(op.name, [op]))
            for region in op.regions:
                _group(region, found)
        elif kind in ("reduce", "scan"):
            open_group = None
            groups.append(Group("combine" if is_combine(op) else "reduce", [op], domain(op)))
        elif kind == "convert":
            open_group = None
            groups.append(Group("convert", [op], domain(op)))
        elif opdefs.lookup(op.name).allocates:
            found.shared_allocs.append(op)
        elif op.name in COPY_OPS:
            if not (groups and groups[-1].kind == "copies" and open_group is None):
                groups.append(Group("copies", []))
            groups[-1].ops.append(op)
            open_group = None
        elif op.name == "barrier":
            open_group = None
            groups.append(Group("barrier", [op]))
        elif op.name in ASYNC_OPS:  # the pipelined K loop's ops, in program order
            open_group = None
            groups.append(Group("async", [op]))
        elif kind == "dot":
            open_group = None
            groups.append(Group("dot", [op]))
        elif op.name == "store_tile":  # tma-stores': a statement over its tile's layout (tile_stores.py)
            open_group = None
            groups.append(Group("store_tile", [op], layout_of(op.operands[-1])))
        elif op.name in opdefs.ATOMIC_OPS and is_tile(op.results[0]):
            open_group = None  # an atomic is a statement of its own, in the kernel's order
            groups.append(Group("atomic", [op], domain(op)))
        elif kind in ("load", "store") and (kind == "store" and is_tile(op.operands[0])
                                             or op.results and is_tile(op.results[0])):
            # Loads share a slot loop with loads, stores with stores: every
            # load of a thread is issued before its first store, so the loads
            # are in flight together and memory order is the kernel's.
            where = domain(op)
            joinable = (open_group is not None and open_group.domain == where
                        and open_group.ops[-1].name == op.name)
            if not joinable:
                open_group = Group("tile", [], where)
                groups.append(open_group)
            open_group.ops.append(op)
        elif op.results and is_tile(op.results[0]):
            continue  # pure tile ops are computed where they are used
        else:
            entry = Group("scalar", [op])
            if open_group is not None and not (opdefs.reads_memory(op.name) or opdefs.has_effect(op.name)):
                # A pure scalar never depends on the open tile group: it
                # goes before it. Memory accesses keep the kernel's order.
                groups.insert(len(groups) - 1, entry)
            else:
                open_group = None
                groups.append(entry)
    for group in groups:
        for op in group.ops:
            found.group_of[op] = id(group)
    found.groups[id(block)] = groups
    return groups


def own_storage(kernel: Kernel) -> list[tuple[Value, Value]]:
    """The values that always have storage of their own, no pass deciding,
    each with the value its storage is named after: the tile results of
    reductions, scans, dots, layout changes and atomics (arrays they are
    computed into); a ``for``'s carried values, which its body's arguments
    and its results share; an ``if``'s results and a ``while``'s carried
    values, which its regions' arguments share (locals declared before it)."""
    found: list[tuple[Value, Value]] = []
    for op in walk(kernel.body):
        if (rule(op) in ("reduce", "dot", "convert") or op.name in opdefs.ATOMIC_OPS) \
                and op.results and is_tile(op.results[0]):
            found.append((op.results[0], op.results[0]))
        if is_combine(op):  # reduce and scan: every tile result is held in registers
            found += [(result, result) for result in op.results if is_tile(result)]
        if op.name == "for":
            for arg, result in zip(op.regions[0].args[1:], op.results):
                found += [(arg, result), (result, result)]
        if op.name in ("if", "while"):
            for index, result in enumerate(op.results):
                found.append((result, result))
                for region in (op.regions if op.name == "while" else []):
                    found.append((region.args[index], result))
    return found
