"""Where a blocked layout puts a tile's elements, checked by evaluating the C
expressions it writes for every thread of a block."""
from __future__ import annotations

import ast
import itertools
import operator

import pytest

from mytriton.backends.cuda.thread_coordinates import BlockedLayout

C_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.floordiv, ast.Mod: operator.mod}  # C's / and % on non-negative ints


def c_value(expr: str, tid: int) -> int:
    """A layout's C index expression (integers, threadIdx.x, + - * / % <) at thread ``tid``."""
    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id == "tid":
            return tid
        if isinstance(node, ast.BinOp):
            return C_OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
            return int(walk(node.left) < walk(node.comparators[0]))
        raise AssertionError(f"not a layout index expression: {ast.dump(node)}")
    return walk(ast.parse(expr.replace("threadIdx.x", "tid"), mode="eval"))


@pytest.mark.parametrize("layout, d", [
    # A [32, 4] tile whose 4 warps split its short dimension: each warp's 8 lanes along it hold
    # the 4 columns twice; the lanes' digit along it is not the outermost (rows take 4 lanes).
    (BlockedLayout((32, 4), (1, 1), (4, 8), (1, 4), (1, 0)), 1),
    # An 8-element tile on 8 warps: lanes 0-7, 8-15, ... of every warp hold it.
    (BlockedLayout((8,), (1,), (32,), (8,), (0,)), 0),
    # Two elements a thread, 16 lanes holding a 16-wide dimension twice.
    (BlockedLayout((4, 16), (1, 2), (2, 16), (2, 2), (1, 0)), 1),
])
def test_in_each_warp_exactly_one_lane_counts_each_element_where_the_warp_holds_it_whole(layout, d):
    assert layout.warp_holds_whole(d)
    digits = [range(layout.slots_per_dim(e)) for e in range(layout.rank)]
    for warp in range(layout.warps_per_cta[0] * (layout.warps_per_cta[1] if layout.rank > 1 else 1)):
        counted: dict[tuple[int, ...], int] = {}
        held: set[tuple[int, ...]] = set()
        for lane in range(32):
            tid = warp * 32 + lane
            for digit in itertools.product(*digits):
                at = tuple(c_value(layout.coordinate(e, str(digit[e]), layout.thread_position(e, "threadIdx.x")), tid)
                           for e in range(layout.rank))
                held.add(at)
                condition = layout.first_copy_in_warp(d, str(digit[d]), "threadIdx.x")
                if condition is None or c_value(condition, tid):
                    counted[at] = counted.get(at, 0) + 1
        # Every element the warp holds is counted by exactly one of its lanes, and the
        # warp holds the whole of dimension d.
        assert set(counted) == held, f"warp {warp}: {len(held - set(counted))} held elements never counted"
        assert all(count == 1 for count in counted.values()), f"warp {warp}: an element counted twice"
        assert {at[d] for at in held} == set(range(layout.shape[d]))
