"""Tracing loops: constant ranges unroll, runtime ranges become ForRange
regions (tree) and ``for`` ops (SSA) with captures and carried values."""
import pytest

from conftest import compile_text, kernel_source
from mytriton.diagnostics import CompileError, source_digest

ACCUMULATE = kernel_source('''
    @mytriton.jit
    def k(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        total = tl.zeros((BLOCK,), tl.float32)
        count = 0
        for i in range(n):
            v = tl.load(x + i * BLOCK + offs)
            count += 1
            total += v
        tl.store(out + offs, total / count)
''')


def test_a_runtime_range_is_a_region_with_captures_and_carried_values_in_source_order():
    assert compile_text(ACCUMULATE, "tree", defines={"BLOCK": 4}) == '''\
tree k(x: ptr<f32>, out: ptr<f32>, n: i32) constexpr(BLOCK = 4) @"kernel.py":5:1 sha256="DIGEST" {
  let $offs = arange(start=0, end=4)@6:12
  for $i in range(0, n, 1) captures($offs) iter_args($count = 0, $total = full(0.0, shape=(4,), dtype=f32)@7:13) -> ($count.1, $total.1) @9:5 {
    let $v = load(add(add(x, mul($i, 4)@10:25)@10:21, $offs)@10:21, none, none)@10:13
    yield add($count, 1)@11:9, add($total, $v)@12:9 @9:5
  }
  store(add(out, $offs)@13:14, div($total.1, $count.1)@13:26, none)@13:5
}
'''.replace("DIGEST", source_digest(ACCUMULATE))


def test_captures_are_lowered_before_the_loop_and_results_used_after_it():
    assert compile_text(ACCUMULATE, "ssa", defines={"BLOCK": 4}) == '''\
kernel k(x: ptr<f32>, out: ptr<f32>, n: i32) constexpr(BLOCK = 4) @"kernel.py":5:1 sha256="DIGEST" {
  %0 = arange start=0, end=4 : vector<4 x i32> @6:12
  %1 = full 0.0, shape=(4,), dtype=f32 : vector<4 x f32> @7:13
  %11, %12 = for %2 in range(0, n, 1) iter_args(%3 = 0, %4 = %1) : i32, vector<4 x f32> @9:5 {
    %5 = mul %2, 4 : i32 @10:25
    %6 = addptr x, %5 : ptr<f32> @10:21
    %7 = addptr %6, %0 : vector<4 x ptr<f32>> @10:21
    %8 = load %7, none, none : vector<4 x f32> @10:13
    %9 = add %3, 1 : i32 @11:9
    %10 = add %4, %8 : vector<4 x f32> @12:9
    yield %9, %10 @9:5
  }
  %13 = addptr out, %0 : vector<4 x ptr<f32>> @13:14
  %14 = div %12, %11 : vector<4 x f32> @13:26
  store %13, %14, none @13:5
}
'''.replace("DIGEST", source_digest(ACCUMULATE))


def loop_kernel(body: str) -> str:
    return kernel_source('''
        @mytriton.jit
        def k(x, out, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
    ''' + body)


def test_a_constant_range_unrolls_while_tracing():
    tree = compile_text(loop_kernel('''
            acc = tl.zeros((BLOCK,), tl.float32)
            for i in range(3):
                acc += tl.load(x + i * BLOCK + offs)
            tl.store(out + offs, acc)
    '''), "tree", defines={"BLOCK": 4})
    assert "for " not in tree
    assert tree.count("load(") == 3


def test_static_range_unrolls_and_needs_constant_bounds():
    unrolled = compile_text(loop_kernel('''
            for i in tl.static_range(2):
                tl.store(out + i * BLOCK + offs, tl.load(x + offs))
    '''), "tree", defines={"BLOCK": 4})
    assert unrolled.count("store(") == 2
    with pytest.raises(CompileError, match="tl.static_range needs compile-time integer bounds"):
        compile_text(loop_kernel('''
            for i in tl.static_range(n):
                tl.store(out + offs, tl.load(x + offs))
        '''), "tree", defines={"BLOCK": 4})


def test_names_first_bound_in_the_body_do_not_escape():
    with pytest.raises(CompileError, match="'tmp' is not defined") as info:
        compile_text(loop_kernel('''
            for i in range(n):
                tmp = tl.load(x + offs)
            tl.store(out + offs, tmp)
        '''), "tree", defines={"BLOCK": 4})
    assert info.value.loc.line == 10


def test_nested_loops_capture_the_outer_index_and_carry_through_both():
    tree = compile_text(loop_kernel('''
            acc = tl.zeros((BLOCK,), tl.float32)
            for i in range(n):
                for j in range(i):
                    acc += tl.load(x + (i * n + j) * BLOCK + offs)
            tl.store(out + offs, acc)
    '''), "tree", defines={"BLOCK": 4})
    assert "for $i in range(0, n, 1) captures($offs) iter_args($acc = " in tree
    assert "for $j in range(0, $i, 1) captures($i, $offs) iter_args($acc.2 = $acc) -> ($acc.3)" in tree
    assert "yield $acc.3 @9:5" in tree


def test_sequential_loops_chain_their_results():
    ssa = compile_text(loop_kernel('''
            acc = 0.0
            for i in range(n):
                acc += 1.0
            for j in range(n):
                acc = acc * 2.0
            tl.store(out + offs, acc)
    '''), "ssa", defines={"BLOCK": 4})
    assert "%3 = for %0 in range(0, n, 1) iter_args(%1 = 0.0) : f32 @9:5 {" in ssa
    assert "%7 = for %4 in range(0, n, 1) iter_args(%5 = %3) : f32 @11:5 {" in ssa


RESTRICTED = {
    "zero step": ("for i in range(0, n, 0):\n    tl.store(out + offs, 1.0)", "must be positive"),
    "negative step": ("for i in range(0, n, -1):\n    tl.store(out + offs, 1.0)", "must be positive"),
    "runtime step": ("for i in range(0, n, n):\n    tl.store(out + offs, 1.0)",
                     "must be a compile-time integer"),
    "assigned index": ("for i in range(n):\n    i = i + 1", "cannot be assigned in a runtime loop"),
    "carried type change": ("acc = 0.0\nfor i in range(n):\n    acc = acc + tl.load(x + offs)\n"
                            "tl.store(out + offs, acc)", "loop-carried 'acc' changes type"),
}


@pytest.mark.parametrize("case", sorted(RESTRICTED))
def test_runtime_loop_restrictions(case):
    body, message = RESTRICTED[case]
    indented = "\n".join("    " + line for line in body.splitlines())
    source = kernel_source(
        "@mytriton.jit\ndef k(x, out, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n" + indented + "\n")
    with pytest.raises(CompileError, match=message):
        compile_text(source, "ssa", defines={"BLOCK": 4})
