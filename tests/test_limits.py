"""Tiny inputs cannot ask for unbounded work or memory, and deep but legal
inputs compile.

Each limit of ``mytriton/limits.py`` is reached from a small kernel file or IR
text, through the CLI: exit code 1, ``file:line:col: error:`` naming the
limit, no traceback, no output file, and quickly. Deep inputs under the
limits (a 10,000-term sum, a 5,000-iteration static loop) compile in one
process and through the chain of subcommands, to the same CUDA.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from textwrap import dedent

import numpy as np
import pytest

from conftest import ROOT, build, compile_text, kernel_source, randf
from mytriton import deep_stack, limits
from mytriton.backends import interp
from mytriton.backends.interp import program_elements, programs_per_chunk, run_kernel
from mytriton.diagnostics import CompileError
from mytriton.ir.ssa_text import parse_kernel
from mytriton.passes.verify import verify
from mytriton.runtime.jit import normalize_grid
from mytriton.types import BlockType

# ---- running the CLI -----------------------------------------------------------------------

ERROR_SECONDS = 20  # generous on a shared machine; the unbounded versions take hours


def cli(args: list[str], cwd, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("MYTRITON_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "mytriton.cli", *args], input=stdin, capture_output=True,
                          cwd=cwd, env=env, timeout=timeout)


def refused(tmp_path, name: str, text: str, args: list[str], message: str, line: int, col: int) -> str:
    """Run ``args`` (``{in}`` is the input file, ``{out}`` the output) on
    ``text``; check exit 1, ``name:line:col: error: ...message...``, no
    traceback, no output file, and a bounded time. Returns stderr."""
    (tmp_path / name).write_text(text)
    out = tmp_path / "out.txt"
    start = time.monotonic()
    result = cli([a.replace("{in}", name).replace("{out}", str(out)) for a in args], tmp_path,
                 timeout=ERROR_SECONDS * 3)
    elapsed = time.monotonic() - start
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "Traceback" not in stderr and "internal compiler error" not in stderr, stderr
    first = stderr.splitlines()[0]
    assert first.startswith(f"{name}:{line}:{col}: error: "), first[:300]
    assert message in first, first[:300]
    assert not out.exists()
    assert elapsed < ERROR_SECONDS
    return stderr


def kernel(lines: str, params: str = "x_ptr, out_ptr, BLOCK: tl.constexpr = 16") -> str:
    """A kernel file (the imports take lines 1-2, the def line 5); the body
    starts at line 6 with ``offs`` and ``x``, then ``lines`` from line 8."""
    body = "@mytriton.jit\ndef k(" + params + "):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n"
    return kernel_source(body + dedent(lines).strip("\n").replace("\n", "\n    ").join(["    ", "\n"]))


STORE = "tl.store(out_ptr + offs, y)"

# ---- constant arithmetic -------------------------------------------------------------------------


def test_a_kernel_file_over_the_line_limit_is_refused_at_the_first_line_past_it(tmp_path):
    text = kernel(STORE) + "\n" * limits.MAX_SOURCE_LINES
    refused(tmp_path, "k.py", text, ["parse", "{in}", "-o", "{out}"], "MAX_SOURCE_LINES",
            limits.MAX_SOURCE_LINES + 1, 1)


def test_a_huge_module_constant_no_kernel_uses_does_not_stop_parse(tmp_path):
    (tmp_path / "k.py").write_text("X = 2 ** 10 ** 10\nS = 'ab' * 10 ** 12\nT = (16,) * 10 ** 12\n"
                                   + kernel(f"y = x\n{STORE}"))
    start = time.monotonic()
    result = cli(["parse", "k.py"], tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert time.monotonic() - start < ERROR_SECONDS


def test_a_module_constant_deeper_than_the_expression_limit_is_an_error_only_where_used(tmp_path):
    deep = "X = " + " + ".join(["1"] * (limits.MAX_EXPRESSION_DEPTH + 10)) + "\n"
    (tmp_path / "unused.py").write_text(deep + kernel(f"y = x\n{STORE}"))
    result = cli(["parse", "unused.py"], tmp_path)
    assert result.returncode == 0, result.stderr.decode()[:2000]
    refused(tmp_path, "k.py", deep + kernel(f"y = x + X\n{STORE}"), ["compile", "{in}", "-o", "{out}"],
            "MAX_EXPRESSION_DEPTH", 9, 13)


def test_a_huge_power_used_by_a_kernel_is_an_error_where_it_is_used(tmp_path):
    refused(tmp_path, "k.py", "X = 2 ** 10 ** 10\n" + kernel(f"y = x + X\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_CONSTANT_BITS", 9, 13)


def test_a_huge_string_repetition_used_by_a_kernel_is_an_error(tmp_path):
    refused(tmp_path, "k.py", "S = 'ab' * 10 ** 12\n" + kernel(f"y = x + len(S)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_CONSTANT_LENGTH", 9, 17)


def test_a_huge_tuple_repetition_used_as_a_shape_is_an_error(tmp_path):
    refused(tmp_path, "k.py", "SHAPE = (16,) * 10 ** 12\n" + kernel(f"y = x + tl.zeros(SHAPE, tl.float32)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_CONSTANT_LENGTH", 9, 22)


def test_a_huge_shift_in_a_kernel_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + (1 << 10000000000)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_CONSTANT_BITS", 8, 14)


def test_a_huge_power_in_a_kernel_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + 2 ** 10 ** 10\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_CONSTANT_BITS", 8, 13)


def test_a_power_of_constants_in_a_kernel_is_computed_and_one_of_a_runtime_value_refused(tmp_path):
    from conftest import compile_text

    assert "= mul %2, 256 :" in compile_text(kernel(f"y = x * BLOCK ** 2\n{STORE}"), "ssa", signature="*i32, *i32")
    refused(tmp_path, "k.py", kernel(f"y = x ** 2\n{STORE}"), ["compile", "{in}", "-o", "{out}"],
            "the operator '**' works on constants only", 8, 9)


def test_a_complex_power_of_constants_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + (-8) ** 0.5\n{STORE}"), ["compile", "{in}", "-o", "{out}"],
            "is complex", 8, 13)


def test_repeated_squaring_in_a_kernel_stops_at_the_limit(tmp_path):
    lines = "c = 3\n" + "c = c * c\n" * 40 + f"y = x + c\n{STORE}"
    refused(tmp_path, "k.py", kernel(lines), ["trace", "{in}", "-o", "{out}"], "MAX_CONSTANT_BITS", 20, 9)


def test_repeated_doubling_by_addition_stops_at_the_limit(tmp_path):
    lines = f"c = 1\nfor i in tl.static_range(5000):\n    c += c\ny = x + c\n{STORE}"
    refused(tmp_path, "k.py", kernel(lines), ["trace", "{in}", "-o", "{out}"], "MAX_CONSTANT_BITS", 10, 9)


def test_float_of_a_huge_int_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + float(1 << 2000)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "float(): int too large to convert to float", 8, 13)


def test_a_huge_int_divided_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + (1 << 2000) / 3\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "constant arithmetic failed", 8, 13)


def test_a_fill_value_too_large_for_its_dtype_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + tl.full((BLOCK,), 1 << 2000, tl.float32)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "too large for f32", 8, 13)


# ---- unrolled loops -----------------------------------------------------------------------------


def test_a_billion_iteration_static_range_is_refused_before_unrolling(tmp_path):
    stderr = refused(tmp_path, "k.py", kernel(f"y = x\nfor i in tl.static_range(1000000000):\n    y += x\n{STORE}"),
                     ["compile", "{in}", "-o", "{out}"], "MAX_STATIC_UNROLL", 9, 14)
    assert "use range(...) for a loop" in stderr


def test_nested_static_ranges_count_every_unrolled_iteration(tmp_path):
    lines = f"y = x\nfor i in tl.static_range(200):\n    for j in tl.static_range(200):\n        y += x\n{STORE}"
    refused(tmp_path, "k.py", kernel(lines), ["trace", "{in}", "-o", "{out}"], "MAX_STATIC_UNROLL", 10, 18)


def test_a_loop_at_the_unroll_limit_traces(tmp_path):
    lines = f"y = x\nfor i in tl.static_range(100):\n    for j in tl.static_range(99):\n        y = tl.maximum(y, x)\n{STORE}"
    (tmp_path / "k.py").write_text(kernel(lines))
    result = cli(["trace", "k.py"], tmp_path)
    assert result.returncode == 0, result.stderr.decode()


def test_the_traced_node_limit_is_a_located_error(monkeypatch):
    import mytriton.frontend.tracer as tracer

    monkeypatch.setattr(tracer, "MAX_TRACED_NODES", 50)
    source = kernel(f"y = x\nfor i in tl.static_range(40):\n    y = y * 2.0 + x\n{STORE}")
    with pytest.raises(CompileError, match="MAX_TRACED_NODES") as info:
        compile_text(source, "tree")
    assert (info.value.loc.line, info.value.loc.col) == (10, 13)


def test_a_big_unrolled_body_is_refused_at_the_node_limit_before_building_it(tmp_path):
    # 10,000 iterations of a 12-op body: 120,000 ops, minutes through every stage.
    body = "a = tl.load(x_ptr + offs + i)\n    b = a * 2.0 + 1.0\n    c = b - 3.0\n    d = c * c\n" \
           "    e = d / 5.0\n    f = e + i\n    tl.store(out_ptr + offs + i, f * 0.5)"
    start = time.monotonic()
    refused(tmp_path, "k.py", kernel(f"for i in tl.static_range(10000):\n    {body}"),
            ["compile", "{in}", "-o", "{out}", "--emit=cuda"], "MAX_TRACED_NODES", 12, 13)
    assert time.monotonic() - start < 5


HELPERS = """
@mytriton.jit
def twice(x, DEPTH: tl.constexpr):
    if DEPTH == 0:
        return x
    return twice(x, DEPTH - 1) + twice(x, DEPTH - 1)

"""


def test_a_helper_called_twice_per_level_is_traced_once_per_level():
    # 2^24 calls as spelled; a call with the same arguments reuses the first's result.
    source = kernel(f"y = twice(x, 24)\n{STORE}").replace("@mytriton.jit\ndef k", HELPERS + "@mytriton.jit\ndef k")
    start = time.monotonic()
    ssa = compile_text(source, "opt")
    assert time.monotonic() - start < 5
    assert ssa.count(" add ") == 24


def test_a_helper_call_that_stores_is_traced_at_every_call():
    helper = "@mytriton.jit\ndef put(p, offs, v):\n    tl.store(p + offs, v)\n    return v\n\n"
    source = kernel("y = put(out_ptr, offs, x) + put(out_ptr, offs, x)\nput(out_ptr, offs, y)")
    ssa = compile_text(source.replace("@mytriton.jit\ndef k", helper + "@mytriton.jit\ndef k"), "ssa")
    assert ssa.count("store ") == 3


def test_an_unrolled_chain_deeper_than_the_expression_limit_is_a_located_error(tmp_path):
    lines = f"y = x\nfor i in tl.static_range(10000):\n    y = y * 2.0 + x\n{STORE}"
    refused(tmp_path, "k.py", kernel(lines), ["trace", "{in}", "-o", "{out}"], "MAX_EXPRESSION_DEPTH", 10, 13)


# ---- deep expressions ------------------------------------------------------------------------------


def sum_kernel(terms: int) -> str:
    return kernel("y = " + " + ".join(["x"] * terms) + f"\n{STORE}")


STATIC_LOOP = kernel(f"""
acc = tl.zeros((BLOCK,), tl.float32)
for i in tl.static_range(5000):
    acc += x * i
y = acc
{STORE}""")


def test_an_expression_deeper_than_the_limit_is_refused_at_its_start(tmp_path):
    refused(tmp_path, "k.py", sum_kernel(limits.MAX_EXPRESSION_DEPTH + 10), ["parse", "{in}", "-o", "{out}"],
            "MAX_EXPRESSION_DEPTH", 8, 9)


def test_a_1500_term_sum_compiles():
    ssa = deep_stack.run_deep(compile_text, sum_kernel(1500), "ssa")
    assert ssa.count(" add ") == 1499


def test_a_400_iteration_static_range_compiles():
    ssa = deep_stack.run_deep(compile_text, kernel(f"y = x\nfor i in tl.static_range(400):\n    y += x\n{STORE}"), "ssa")
    assert ssa.count(" add ") == 400


@pytest.mark.slow  # a minute of compiling; test_a_1500_term_sum_compiles is the fast tier's deep kernel
@pytest.mark.parametrize("source", [sum_kernel(10000), STATIC_LOOP], ids=["sum_10000", "static_range_5000"])
def test_deep_kernels_compile_alone_and_through_the_chain_to_the_same_cuda(tmp_path, source):
    (tmp_path / "k.py").write_text(source)
    start = time.monotonic()
    whole = cli(["compile", "k.py", "--emit=cuda"], tmp_path)
    assert whole.returncode == 0, whole.stderr.decode()[-2000:]
    assert time.monotonic() - start < 60
    data = None
    for args in (["parse", "k.py"], ["trace"], ["lower"], ["verify"], ["opt"], ["stage-dots"], ["emit-cuda"]):
        step = cli(args, tmp_path, data)
        assert step.returncode == 0, (args, step.stderr.decode()[-2000:])
        data = step.stdout
    assert data == whole.stdout


def test_deep_kernels_launch_from_python_on_the_interpreter(kernel_module, rng):
    module = kernel_module(dedent("""
        @mytriton.jit
        def k(x_ptr, out_ptr, BLOCK: tl.constexpr = 16):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            y = """) + " + ".join(["x"] * 2000) + "\n    tl.store(out_ptr + offs, y)\n")
    x = randf(rng, 16)
    out = np.zeros(16, np.float32)
    module.k[(1,)](x, out, backend="interp")
    np.testing.assert_allclose(out, x * 2000, rtol=1e-4)


# ---- IR text ---------------------------------------------------------------------------------------


def nested_add_tree(depth: int) -> str:
    return ('tree k(p: ptr<f32>) @"k.py":1:1 {\n  store(p, ' + "add(" * depth + "1.0"
            + ", 2.0)@1:1" * depth + ", none)@1:1\n}\n")


def test_600_nested_calls_in_tree_text_lower(tmp_path):
    (tmp_path / "k.tree").write_text(nested_add_tree(600))
    result = cli(["lower", "k.tree"], tmp_path)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout.decode().count(" add ") == 600


def test_tree_text_nested_deeper_than_the_limit_is_refused(tmp_path):
    col = len("  store(p, add(") + 4 * (limits.MAX_IR_NESTING - 2)  # '{' and 'store(' open the first two
    refused(tmp_path, "k.tree", nested_add_tree(limits.MAX_IR_NESTING + 5), ["lower", "{in}", "-o", "{out}"],
            "MAX_IR_NESTING", 2, col)


def tuple_attr_ssa(depth: int) -> str:
    return ('kernel k() @"k.py":1:1 {\n  %0 = full 0, shape=' + "(" * depth + "16," + ")" * depth
            + ", dtype=f32 : vector<16 x f32> @1:1\n}\n")


def test_a_600_deep_attribute_tuple_is_a_type_error_not_a_crash(tmp_path):
    (tmp_path / "k.ssa").write_text(tuple_attr_ssa(600))
    result = cli(["verify", "k.ssa"], tmp_path)
    assert result.returncode == 1
    assert "the attribute shape of 'full' must be a tuple of integers" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()


def test_an_attribute_tuple_deeper_than_the_limit_is_refused(tmp_path):
    col = len("  %0 = full 0, shape=") + limits.MAX_IR_NESTING
    refused(tmp_path, "k.ssa", tuple_attr_ssa(limits.MAX_IR_NESTING + 1), ["verify", "{in}", "-o", "{out}"],
            "MAX_IR_NESTING", 2, col)


def test_brackets_inside_quoted_strings_do_not_count_as_nesting():
    from mytriton.ir.text_common import check_text_limits

    check_text_limits('"' + "(" * (limits.MAX_IR_NESTING + 1) + '"', "k.ssa")


def test_brackets_in_comments_do_not_count_as_nesting():
    from mytriton.ir.text_common import check_text_limits

    # FileCheck lines in a lit test: each opens a brace it never closes.
    check_text_limits("// CHECK: for %1 in range(0, n, 1) {\n" * (limits.MAX_LOOP_NESTING + 2), "k.ssa")
    check_text_limits('"//"' + "// " + "(" * (limits.MAX_IR_NESTING + 1) + "\n", "k.ssa")


def test_closing_brackets_in_a_comment_do_not_hide_deeper_nesting(tmp_path):
    text = "// " + ")" * (2 * limits.MAX_IR_NESTING) + "\n" + tuple_attr_ssa(limits.MAX_IR_NESTING + 1)
    col = len("  %0 = full 0, shape=") + limits.MAX_IR_NESTING
    refused(tmp_path, "k.ssa", text, ["verify", "{in}", "-o", "{out}"], "MAX_IR_NESTING", 3, col)


def test_loops_nested_deeper_than_the_limit_are_refused(tmp_path):
    n = limits.MAX_LOOP_NESTING + 1
    lines = ['kernel k(n: i32) @"k.py":1:1 {']
    lines += [f"  for %{i} in range(0, n, 1) @1:1 {{" for i in range(n)]
    lines += ["  yield @1:1\n  }"] * n + ["}"]
    col = len(f"  for %{n - 1} in range(0, n, 1) @1:1 {{")
    refused(tmp_path, "k.ssa", "\n".join(lines) + "\n", ["verify", "{in}", "-o", "{out}"],
            "MAX_LOOP_NESTING", n + 1, col)


# ---- tiles -----------------------------------------------------------------------------------------


def test_an_arange_over_the_tile_limit_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + tl.sum(tl.arange(0, 1 << 28), axis=0)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_TILE_ELEMENTS", 8, 20)


def test_broadcasting_over_the_tile_limit_is_a_located_error(tmp_path):
    lines = f"""
rows = tl.arange(0, 2048)[:, None]
cols = tl.arange(0, 1024)[None, :]
y = x + tl.sum(tl.sum(rows + cols, axis=1), axis=0)
{STORE}"""
    refused(tmp_path, "k.py", kernel(lines), ["compile", "{in}", "-o", "{out}"], "2048x1024", 10, 27)


def test_a_full_over_the_tile_limit_is_a_located_error(tmp_path):
    refused(tmp_path, "k.py", kernel(f"y = x + tl.sum(tl.zeros((4096, 4096), tl.float32), axis=None)\n{STORE}"),
            ["compile", "{in}", "-o", "{out}"], "MAX_TILE_ELEMENTS", 8, 20)


def test_a_dot_over_the_tile_limit_is_a_located_error(tmp_path):
    lines = f"""
a = tl.zeros((2048, 16), tl.float32)
b = tl.zeros((16, 1024), tl.float32)
y = x + tl.sum(tl.dot(a, b), axis=None)
{STORE}"""
    refused(tmp_path, "k.py", kernel(lines), ["compile", "{in}", "-o", "{out}"], "MAX_TILE_ELEMENTS", 10, 20)


def test_a_block_type_over_the_tile_limit_in_ssa_text_is_a_located_error(tmp_path):
    text = 'kernel k() @"k.py":1:1 {\n  %0 = full 0, shape=(65536, 65536), dtype=f32 : block<65536x65536 x f32> @1:1\n}\n'
    refused(tmp_path, "k.ssa", text, ["verify", "{in}", "-o", "{out}"], "MAX_TILE_ELEMENTS", 2, 56)


def test_a_block_dimension_with_many_digits_is_a_located_error(tmp_path):
    text = 'kernel k() @"k.py":1:1 {\n  %0 = full 0, shape=(16,), dtype=f32 : vector<' + "9" * 30 + ' x f32> @1:1\n}\n'
    refused(tmp_path, "k.ssa", text, ["verify", "{in}", "-o", "{out}"], "block dimension out of range", 2, 48)


def test_the_verifier_refuses_a_declared_tile_over_the_limit():
    kernel_ir = parse_kernel('kernel k() @"k.py":1:1 {\n  %0 = full 0, shape=(16,), dtype=f32 : vector<16 x f32> @3:5\n}\n',
                             "k.ssa")
    op = kernel_ir.body.ops[0]
    op.results[0].type = BlockType((1 << 21,), op.results[0].type.element)
    with pytest.raises(CompileError, match="MAX_TILE_ELEMENTS") as info:
        verify(kernel_ir)
    assert (info.value.loc.line, info.value.loc.col) == (3, 5)


# ---- the interpreter and grids ------------------------------------------------------------------------

PER_PROGRAM_LOOP = """
@mytriton.jit
def k(x_ptr, out_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0) + tl.num_programs(0) * tl.program_id(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(tl.load(counts_ptr + pid)):
        acc += x
    tl.store(out_ptr + offs, acc + pid, mask=mask)
"""
LOOP_SIGNATURE = "*fp32, *fp32, *i32, i32"


def test_programs_per_chunk_keeps_a_chunk_under_the_budget():
    kernel_ir = build(PER_PROGRAM_LOOP, signature=LOOP_SIGNATURE, BLOCK=64)
    chunk = programs_per_chunk(kernel_ir)
    assert program_elements(kernel_ir) >= 5 * 64  # offs, mask, x, acc and the result tile at least
    assert chunk * program_elements(kernel_ir) <= limits.INTERP_CHUNK_ELEMENTS
    assert (chunk + 1) * program_elements(kernel_ir) > limits.INTERP_CHUNK_ELEMENTS


def test_chunked_runs_give_every_program_its_id_and_trip_count(monkeypatch, rng):
    kernel_ir = build(PER_PROGRAM_LOOP, signature=LOOP_SIGNATURE, BLOCK=4)
    monkeypatch.setattr(interp, "INTERP_CHUNK_ELEMENTS", 3 * program_elements(kernel_ir))
    assert programs_per_chunk(kernel_ir) == 3  # 35 programs run in 12 chunks
    grid = (5, 7)
    n = 4 * 35 - 2
    x = randf(rng, n)
    counts = rng.integers(0, 6, size=35).astype(np.int32)
    out = np.full(n, 9.0, np.float32)
    run_kernel(kernel_ir, grid, [x, out, counts, n])
    pid = np.arange(n) // 4
    np.testing.assert_allclose(out, x * counts[pid] + pid, rtol=1e-6)


def test_a_grid_the_interpreter_would_run_for_days_is_refused_at_once(rng):
    kernel_ir = build(PER_PROGRAM_LOOP, signature=LOOP_SIGNATURE, BLOCK=64)
    programs = limits.MAX_INTERP_ELEMENTS // program_elements(kernel_ir) + 1
    start = time.monotonic()
    with pytest.raises(CompileError, match="MAX_INTERP_ELEMENTS"):
        run_kernel(kernel_ir, (programs,), [randf(rng, 64), np.zeros(64, np.float32), np.zeros(1, np.int32), 64])
    assert time.monotonic() - start < 1


def test_a_fault_in_a_later_chunk_names_its_program(monkeypatch, rng):
    kernel_ir = build("""
        @mytriton.jit
        def k(out_ptr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, offs)
    """, signature="*i32", BLOCK=4)
    monkeypatch.setattr(interp, "INTERP_CHUNK_ELEMENTS", 1)  # one program at a time
    out = np.zeros(4 * 37, np.int32)
    with pytest.raises(CompileError, match=r"in program 37\b"):
        run_kernel(kernel_ir, (38,), [out])
    np.testing.assert_array_equal(out, np.arange(4 * 37))  # the programs before it ran


@pytest.mark.parametrize("grid", [(2**31,), (1, 65536), (1, 1, 65536)])
def test_grids_over_cudas_limits_are_errors_in_the_interpreter(grid):
    kernel_ir = build("""
        @mytriton.jit
        def k(out_ptr):
            tl.store(out_ptr + tl.program_id(0), 1.0)
    """)
    with pytest.raises(CompileError, match="over CUDA's limit"):
        run_kernel(kernel_ir, grid, [np.zeros(1, np.float32)])


@pytest.mark.parametrize("grid", [(2**31,), (1, 65536), lambda meta: (1, 1, 65536)])
def test_grids_over_cudas_limits_are_errors_in_the_launcher(grid):
    with pytest.raises(CompileError, match="over CUDA's limit"):
        normalize_grid(grid, {})


def test_the_largest_grid_cuda_allows_is_accepted():
    assert normalize_grid((2**31 - 1, 65535, 65535), {}) == (2**31 - 1, 65535, 65535)


def test_the_verifier_refuses_a_chain_of_ops_longer_than_the_expression_limit(monkeypatch):
    import mytriton.passes.verify as verifier

    monkeypatch.setattr(verifier, "MAX_EXPRESSION_DEPTH", 10)
    lines = ['kernel k(p: ptr<f32>) @"k.py":1:1 {', "  %0 = arange start=0, end=16 : vector<16 x i32> @2:1",
             "  %1 = addptr p, %0 : vector<16 x ptr<f32>> @3:1", "  %2 = load %1, none, none : vector<16 x f32> @4:1"]
    lines += [f"  %{i} = add %{i - 1}, 1.0 : vector<16 x f32> @{i + 2}:3" for i in range(3, 20)]
    lines += ["  store %1, %19, none @30:1", "}"]
    with pytest.raises(CompileError, match="MAX_EXPRESSION_DEPTH") as info:
        verify(parse_kernel("\n".join(lines) + "\n", "k.ssa"))
    assert (info.value.loc.line, info.value.loc.col) == (12, 3)  # %10: arange, addptr, load and 8 adds make 11


# ---- the deep-stack runner ------------------------------------------------------------------------------


@pytest.mark.slow  # recurses to the limit
def test_the_deep_stack_runner_turns_runaway_recursion_into_an_error_naming_the_limit():
    def forever(n: int) -> int:
        return forever(n + 1) + 1

    with pytest.raises(CompileError, match="DEEP_RECURSION_LIMIT"):
        deep_stack.run_deep(forever, 0)


def test_the_deep_stack_runner_returns_results_and_restores_the_recursion_limit():
    before = sys.getrecursionlimit()

    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    assert deep_stack.run_deep(depth, 50_000) == 50_000
    assert sys.getrecursionlimit() == before


def test_the_deep_stack_runner_takes_a_smaller_stack_then_its_own_when_threads_cannot_start(monkeypatch):
    import threading

    sizes = []
    start = threading.Thread.start

    def refuse(thread):
        sizes.append(threading.stack_size())
        if len(sizes) <= limit_of_refusals:
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse)
    for limit_of_refusals in (1, 2):
        sizes.clear()
        assert deep_stack.run_deep(lambda: threading.current_thread().name) == \
            ("mytriton-deep-stack" if limit_of_refusals == 1 else threading.current_thread().name)
        assert sizes[:2] == [limits.DEEP_STACK_BYTES, limits.DEEP_STACK_BYTES >> 3]


def test_the_deep_stack_runner_reraises_compile_errors_unchanged():
    def fail() -> None:
        raise CompileError("boom")

    with pytest.raises(CompileError) as info:
        deep_stack.run_deep(fail)
    assert info.value.message == "boom"


@pytest.mark.slow  # recurses to the limit
def test_the_cli_points_runaway_recursion_at_the_input_file(capsys):
    from mytriton.cli import reports_errors

    @reports_errors
    def command(input: str) -> None:
        def forever(n: int) -> int:
            return forever(n + 1) + 1

        forever(0)

    with pytest.raises(SystemExit) as info:
        command(input="k.ssa")
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("k.ssa:1:1: error: the input nests too deeply") and "DEEP_RECURSION_LIMIT" in err
    assert "Traceback" not in err
