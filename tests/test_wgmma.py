"""tl.dot on Hopper's warpgroup tensor cores (wgmma): which dots the layouts
stage gives a version-3 mma layout and swizzled (nvmma_shared) buffers, the
swizzle's address rule against the hardware's, that the CUDA builds for
sm_90a with wgmma and no local memory, and (on the H200) the results
against NumPy for tiles, warps, stages and ragged shapes."""
import json
import re

import numpy as np
import pytest

import mytriton
from conftest import ROOT, compile_text, tiered
from test_mma import KINDS, matmul_source, operands, reference, signature

from mytriton.backends.cuda.dots import place
from mytriton.ir.layout_attributes import NvmmaShared
from mytriton.types import F16, SharedType


def compile_matmul(kind, config, num_warps, emit, **options):
    bm, bn, bk = config
    return compile_text(matmul_source(kind), emit, signature=signature(kind), num_warps=num_warps,
                        defines={"BM": bm, "BN": bn, "BK": bk}, **options)


def layouts_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


# ---- the layouts stage's choice -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_an_f16_or_bf16_dot_of_whole_warpgroup_tiles_gets_a_version_3_mma_layout(kind):
    text = compile_matmul(kind, (128, 128, 64), 4, "layouts")
    assert "mma<version=3, warps_per_cta=[4, 1], instr_shape=[16, 128, 16]>" in text
    assert "nvmma_shared<swizzle=128, order=[1, 0]>" in text
    assert "padded_shared" not in text


def test_eight_warps_are_two_warpgroups_along_m():
    text = compile_matmul("f16", (128, 256, 64), 8, "layouts")
    assert "mma<version=3, warps_per_cta=[8, 1], instr_shape=[16, 256, 16]>" in text


@pytest.mark.parametrize("config,num_warps,a_swizzle,b_swizzle", [
    ((128, 128, 32), 4, 64, 128),  # A's rows of 32 halves: 64 bytes
    ((128, 32, 64), 4, 128, 64),
    ((64, 16, 16), 4, 32, 32),
])
def test_narrower_rows_take_a_narrower_swizzle(config, num_warps, a_swizzle, b_swizzle):
    text = compile_matmul("f16", config, num_warps, "layouts")
    assert "mma<version=3" in text
    a = re.search(r"shared_alloc_stages name=\"dot_a0\".*: shared<\S+ x f16, (#\w+)>", text).group(1)
    b = re.search(r"shared_alloc_stages name=\"dot_b0\".*: shared<\S+ x f16, (#\w+)>", text).group(1)
    assert f"{a} = nvmma_shared<swizzle={a_swizzle}, order=[1, 0]>" in text
    assert f"{b} = nvmma_shared<swizzle={b_swizzle}, order=[1, 0]>" in text


def test_eight_warps_over_64_rows_are_two_warpgroups_along_n():
    # Triton's choice too (warps [4, 2]): each warpgroup all 64 rows and half of N.
    text = compile_matmul("f16", (64, 128, 64), 8, "layouts")
    assert "mma<version=3, warps_per_cta=[4, 2], instr_shape=[16, 64, 16]>" in text
    cuda = compile_matmul("f16", (64, 128, 64), 8, "cuda")
    assert "each of 2 warpgroups 64 of the 128 columns" in cuda


@pytest.mark.parametrize("config,num_warps,why", [
    ((32, 128, 64), 8, "fewer than 16 rows per warp, and fewer than 64 rows"),
    ((64, 64, 64), 2, "not a whole warpgroup"),
])
def test_other_tiles_stay_on_mma_sync(config, num_warps, why):
    text = compile_matmul("f16", config, num_warps, "layouts")
    assert "mma<version=2" in text, why
    assert "nvmma_shared" not in text


@pytest.mark.parametrize("kind", ["tf32", "i8"])
def test_tf32_and_int8_dots_stay_on_mma_sync(kind):
    # wgmma reads their B K-major only; a row-major [K, N] tile is N-major.
    text = compile_matmul(kind, (128, 128, 64), 4, "layouts")
    assert "mma<version=2" in text and "nvmma_shared" not in text


def test_an_arch_before_hopper_keeps_mma_sync():
    text = compile_matmul("f16", (128, 128, 64), 4, "layouts", arch="sm_80")
    assert "mma<version=2" in text and "nvmma_shared" not in text


def test_a_version_3_layout_on_a_dot_of_padded_buffers_is_a_located_error(tmp_path):
    from mytriton.diagnostics import CompileError
    from mytriton.compiler import emit_cuda
    from mytriton.ir.ssa_text import parse_kernel as parse_ssa

    text = compile_matmul("f16", (128, 128, 64), 4, "layouts")
    edited = text.replace("nvmma_shared<swizzle=128, order=[1, 0]>", "padded_shared<pad=0, order=[1, 0]>")
    with pytest.raises(CompileError, match="nvmma_shared"):
        emit_cuda(parse_ssa(edited, "k.ssa"))


def test_a_swizzled_buffer_needs_whole_128_byte_rows_and_8_row_groups():
    layout = NvmmaShared()
    assert layout.buffer_problem((128, 64), 2) is None
    assert "128-byte blocks" in layout.buffer_problem((128, 40), 2)
    assert "multiple of 8" in layout.buffer_problem((20, 64), 2)


# ---- the swizzle ------------------------------------------------------------------------------------


def _compile(expression: str):
    """A function of (r, c) computing a C index expression, built by walking
    its ast once (C's / on non-negative operands is Python's //; no eval)."""
    import ast
    import operator

    assert re.fullmatch(r"[0-9rc+*/%^() ]+", expression), expression
    ops = {ast.Add: operator.add, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.BitXor: operator.xor}

    def build(node):
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant):
            return lambda r, c, v=node.value: v
        if isinstance(node, ast.Name):
            return (lambda r, c: r) if node.id == "r" else (lambda r, c: c)
        if isinstance(node, ast.BinOp):
            f, left, right = ops[type(node.op)], build(node.left), build(node.right)
            return lambda r, c: f(left(r, c), right(r, c))
        raise AssertionError(ast.dump(node))

    return build(ast.parse(expression.replace("/", "//"), mode="eval"))


SWIZZLE_CASES = [(shape, swizzle) for swizzle in (128, 64, 32)
                 for shape in [(64, 64), (128, 64), (64, 128), (64, 256), (16, 16)]
                 if (shape[1] * 2) % swizzle == 0]  # rows of whole blocks


@pytest.mark.parametrize("shape,swizzle", SWIZZLE_CASES)
def test_the_swizzled_place_is_the_hardware_swizzle_of_the_row_major_block_address(shape, swizzle):
    """Hopper's S-byte swizzle XORs the 16-byte chunk (address bits 4..) with
    bits 7.. (log2(S / 16) of each): element (r, c) of an S-byte-wide column
    block sits at the block's row-major byte address so swizzled."""
    rows, cols = shape
    buffer = SharedType(shape, F16, NvmmaShared(swizzle))
    index_of = _compile(place(buffer, "r", "c"))
    seen = set()
    per_block = swizzle // 2
    for r in range(rows):
        for c in range(cols):
            index = index_of(r, c)
            block, x = divmod(c, per_block)
            linear = block * rows * swizzle + r * swizzle + x * 2
            swizzled = linear ^ (((linear >> 7) & (swizzle // 16 - 1)) << 4)
            assert index * 2 == swizzled, (r, c)
            seen.add(index)
    assert seen == set(range(rows * cols))  # a permutation of the buffer


# ---- the CUDA ------------------------------------------------------------------------------------


@pytest.mark.nvcc
@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("config,num_warps", [((64, 64, 64), 4), ((128, 128, 64), 4), ((128, 256, 64), 8),
                                              ((128, 64, 128), 8), ((128, 128, 32), 4), ((64, 16, 16), 4)])
def test_the_cuda_builds_for_sm_90a_with_wgmma_and_no_local_memory(kind, config, num_warps):
    from mytriton.backends.cuda.nvcc import compile_ptx

    cuda = compile_matmul(kind, config, num_warps, "cuda")
    header = json.loads(cuda.split("\n", 1)[0].split(": ", 1)[1])
    assert header["arch"] == "sm_90a"
    ptx = compile_ptx(cuda, "sm_90")
    assert ".target sm_90a" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{min(config[1], 256)}k16.f32.{kind}.{kind}" in ptx
    assert "ldmatrix" not in ptx
    assert ".local" not in ptx


def test_a_kernel_without_wgmma_has_no_arch_in_its_header():
    cuda = compile_matmul("f16", (64, 64, 32), 2, "cuda")
    assert '"arch"' not in cuda.split("\n", 1)[0]


def test_a_copy_proven_aligned_has_no_run_time_check_or_element_fallback():
    source = matmul_source("f16")
    cuda = compile_text(source, "cuda", signature="*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16",
                        num_warps=4, defines={"BM": 128, "BN": 128, "BK": 64}, tma=False)  # cp.async's copies
    assert "(axis info)" in cuda
    assert "element by element" not in cuda


def test_the_carried_accumulator_is_updated_in_place():
    cuda = compile_matmul("f16", (128, 128, 64), 4, "cuda")
    assert "the carried accumulator, in place" in cuda


# ---- on the GPU ------------------------------------------------------------------------------------


def run_matmul(kernel_module, kind, config, shape, num_warps, num_stages=None, seed=0):
    bm, bn, bk = config
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a, b = operands(kind, M, N, K, rng)
    c = np.full((M, N), np.nan, np.float32)
    _, acc, precision = KINDS[kind]
    from test_mma import MATMUL

    kernel = kernel_module(MATMUL.replace("{acc}", acc).replace("{precision}", precision)).matmul_kernel
    options = {} if num_stages is None else {"num_stages": num_stages}
    kernel[(mytriton.cdiv(M, bm), mytriton.cdiv(N, bn))](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk,
                                                         num_warps=num_warps, backend="cuda", **options)
    np.testing.assert_allclose(c, reference(kind, a, b), rtol=1e-3, atol=1e-3 * np.sqrt(K))


CONFIGS = [((64, 64, 64), 4), ((128, 128, 64), 4), ((128, 128, 64), 8), ((128, 256, 64), 8),
           ((64, 128, 128), 4), ((128, 64, 128), 8), ((128, 128, 32), 4), ((64, 32, 16), 4), ((64, 16, 32), 4),
           ((128, 32, 32), 8),
           ((64, 128, 64), 8), ((64, 256, 32), 8)]  # warpgroups splitting N
SHAPES = [(256, 256, 256), (200, 136, 96), (70, 300, 33), (129, 65, 200)]


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("config,num_warps", CONFIGS)
@pytest.mark.parametrize("shape", SHAPES)
def test_wgmma_matmul_matches_numpy_on_the_gpu(kernel_module, kind, config, num_warps, shape):
    run_matmul(kernel_module, kind, config, shape, num_warps, seed=sum(config) + sum(shape) + num_warps)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
def test_wgmma_matmul_matches_numpy_at_each_pipeline_depth(kernel_module, num_stages):
    run_matmul(kernel_module, "f16", (128, 128, 64), (300, 260, 520), 4, num_stages=num_stages, seed=num_stages)


# ---- overlap-wgmma ---------------------------------------------------------------------------------


def body_ops(text: str) -> list[str]:
    """The op names of the pipelined loop's body, in order."""
    body = text[text.index(" = for "):]
    body = body[body.index("\n") + 1:body.index("\n  }")]
    return [line.split(" = ")[-1].split()[0] for line in body.splitlines()]


def test_the_pipelined_dot_is_issued_first_and_the_previous_group_waited_for_before_the_copies():
    ops = body_ops(compile_matmul("f16", (128, 128, 64), 4, "layouts"))
    dot = ops.index("dot_shared")
    assert ops[:2] == ["async_wait", "barrier"]
    assert ops[dot + 1:dot + 3] == ["wgmma_wait", "barrier"]
    assert dot + 3 < ops.index("async_copy_to_shared") < ops.index("async_commit") < ops.index("yield")
    assert ops.count("wgmma_wait") == 1


def test_the_group_stays_in_flight_into_the_next_iteration_and_the_loop_result_is_waited_for():
    text = compile_matmul("f16", (128, 128, 64), 4, "layouts")
    loop = next(line for line in text.splitlines() if " = for " in line)
    result = loop.split(",")[0].strip()
    assert "pending=1" in next(line for line in text.splitlines() if "wgmma_wait" in line and " = for " not in line)
    after = text[text.index("\n  }", text.index(" = for ")) + 1:].splitlines()[1]
    assert after.strip().startswith(f"wgmma_wait {result}, pending=0")


def test_eight_warps_wait_for_every_warpgroup_before_refilling_a_stage():
    ops = body_ops(compile_matmul("f16", (128, 256, 64), 8, "layouts"))
    assert ops.count("barrier") == 2  # the tiles' arrival, and the previous groups' completion
    assert ops.index("wgmma_wait") + 1 == ops.index("barrier", 2)


def test_reading_an_in_flight_result_before_its_wait_is_a_verifier_error():
    from mytriton.diagnostics import CompileError
    from mytriton.ir.ssa_text import parse_kernel
    from mytriton.passes.verify import verify

    text = compile_matmul("f16", (128, 128, 64), 4, "layouts")
    edited = "\n".join(line for line in text.splitlines() if "wgmma_wait" not in line)
    with pytest.raises(CompileError, match="read before its 'wgmma_wait'"):
        verify(parse_kernel(edited, "k.ssa"))


def test_reading_a_loop_result_still_in_flight_is_a_verifier_error():
    from mytriton.diagnostics import CompileError
    from mytriton.ir.ssa_text import parse_kernel
    from mytriton.passes.verify import verify

    text = compile_matmul("f16", (128, 128, 64), 4, "layouts")
    edited = "\n".join(line for line in text.splitlines() if "pending=0" not in line or "wgmma_wait" not in line)
    with pytest.raises(CompileError, match="read before its 'wgmma_wait'"):
        verify(parse_kernel(edited, "k.ssa"))


def test_waiting_with_a_group_pending_does_not_complete_the_result():
    from mytriton.diagnostics import CompileError
    from mytriton.ir.ssa_text import parse_kernel
    from mytriton.passes.verify import verify

    text = compile_matmul("f16", (128, 128, 64), 4, "layouts")
    # the loop's result waited for with pending=1 is still the tensor cores'
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "wgmma_wait" in line and "pending=0" in line)
    lines[at] = lines[at].replace("pending=0", "pending=1")
    with pytest.raises(CompileError, match="read before its 'wgmma_wait'"):
        verify(parse_kernel("\n".join(lines), "k.ssa"))


def test_the_overlapped_cuda_s_waits_name_no_accumulator_register():
    """Neither the loop's pending-1 wait nor the pending-0 wait after it ties
    the accumulator ("+f"): ptxas keeps the reads after the wait that
    completes them (the ptxas tests below check it added no wait of its own)."""
    cuda = compile_matmul("f16", (128, 128, 64), 4, "cuda")
    for pending in (1, 0):
        wait = next(line for line in cuda.splitlines() if f"wgmma.wait_group.sync.aligned {pending}" in line)
        assert '"+f"(' not in wait and '::: "memory"' in wait


def test_a_dots_products_are_one_asm_statement_naming_each_accumulator_once():
    """128x128x64 on one warpgroup: two 64-row blocks x four k16 steps, eight
    wgmma instructions in one statement whose outputs are the thread's 128
    accumulators, once each (NVVM's time grows with a statement's operands)."""
    cuda = compile_matmul("f16", (128, 128, 64), 4, "cuda")
    lines = cuda.splitlines()
    first = next(i for i, line in enumerate(lines) if "wgmma.mma_async" in line)
    last = next(i for i in range(first, len(lines)) if lines[i].strip().startswith('"}\\n" :'))
    assert sum("wgmma.mma_async" in line for line in lines[first:last]) == 8
    assert sum("wgmma.mma_async" in line for line in lines) == 8  # no other statement issues one
    outputs = re.findall(r'"\+f"\(([^)]*)\)', lines[last])
    assert len(outputs) == 128 and len(set(outputs)) == 128
    operands = [int(x) for x in re.findall(r"%(\d+)", " ".join(lines[first:last]))]
    assert max(operands) < 128 + len(re.findall(r'"l"\(', lines[last]))  # each descriptor an input, once


def test_an_in_flight_dot_without_wgmma_is_a_located_error():
    from mytriton.diagnostics import CompileError
    from mytriton.ir.ssa_text import parse_kernel
    from mytriton.compiler import emit_cuda

    text = compile_matmul("f16", (128, 128, 64), 4, "layouts", arch="sm_80")
    edited = text.replace('out_dtype=f32 :', 'out_dtype=f32, in_flight=1 :', 1)
    assert edited != text
    with pytest.raises(CompileError, match="in flight"):
        emit_cuda(parse_kernel(edited, "k.ssa"))


# ---- tutorial 03's wrapped tiles, and the loop around an in-flight group --------------------------
TUTORIAL_03 = ROOT / "tests" / "triton_style" / "matmul.py"
TUTORIAL_03_SIGNATURE = ("*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, "
                         "i32:16, i32:1")


def tutorial_03_cuda(bm: int, bn: int, bk: int, num_warps: int, num_stages: int) -> str:
    return compile_text(TUTORIAL_03.read_text(), "cuda", file=str(TUTORIAL_03), kernel="matmul_kernel",
                        signature=TUTORIAL_03_SIGNATURE, num_warps=num_warps, num_stages=num_stages,
                        defines={"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8,
                                 "ACTIVATION": ""})


def k_loop(cuda: str) -> str:
    start = cuda.index("  for (int ", cuda.index("the loop and the wait"))
    return cuda[start:cuda.index("\n    }\n", start)]


def test_the_wrapped_rows_and_columns_of_the_copies_are_worked_out_before_the_k_loop():
    cuda = tutorial_03_cuda(128, 128, 32, 4, 3)
    before = cuda[:cuda.index("the loop and the wait")]
    assert "int h1_row[4];" in before and "int h2_col[4];" in before
    assert re.search(r"h\d+_offset\[s\] = h1_row\[s\] \* stride_am \+ ", before)
    assert "* stride_bk + h2_col[s];" in before
    loop = k_loop(cuda)
    assert len(re.findall(r'"l"\(src0 \+ h\d+_offset\[s\]\)', loop)) == 2
    assert "% M" not in loop and "% N" not in loop  # no division an iteration


def test_the_prologue_s_copies_take_the_wrapped_rows_and_columns_worked_out_once():
    cuda = tutorial_03_cuda(128, 128, 32, 4, 3)
    before = cuda[:cuda.index("the loop and the wait")]
    # the arrays come before the first copy; both prologue stages read them (no % a chunk)
    assert before.index("int h1_row[4];") < before.index("// async_copy")
    assert before.count("const int row = h1_row[s];") == 2 and before.count("const int col = h2_col[s];") == 2
    # the arrays' own definitions, without a branch (a wrap of 0, none, divides by INT_MAX)
    assert cuda.count("% M") == 0 and cuda.count("% (M != 0 ? M : 2147483647)") == 1
    assert cuda.count("% (N != 0 ? N : 2147483647)") == 1


def test_a_thread_s_chunks_are_a_constant_number_of_shared_bytes_apart():
    loop = k_loop(tutorial_03_cuda(128, 128, 64, 4, 3))
    # A 128x64 (8 chunks a row: a thread's rows 16 apart), B 64x128 (16 a row: 8 apart), 128-byte rows
    assert '"r"(dst0 + s * 2048)' in loop and '"r"(dst0 + s * 1024)' in loop
    assert "const int c = threadIdx.x % 8 * 8;" in loop


def test_an_axis_without_a_mask_is_not_tested_in_the_copies():
    loop = k_loop(tutorial_03_cuda(128, 128, 64, 4, 3))
    assert "2147483647" not in loop  # A's rows and B's columns are wrapped, not masked
    assert '"r"((unsigned)(col < ' in loop and '"r"((unsigned)(row < ' in loop  # the K mask stays


OFFSETS_FORM = ROOT / "tests" / "triton_style" / "matmul_offsets.py"


def offsets_form_cuda() -> str:
    """The matmul with its offsets recomputed from the loop index and masks on every axis, 128x128x64,
    its copies made by cp.async (--no-tma; TMA would make them: test_tma_copies.py)."""
    return compile_text(OFFSETS_FORM.read_text(), "cuda", file=str(OFFSETS_FORM), kernel="matmul_offsets",
                        signature=TUTORIAL_03_SIGNATURE, num_warps=4, num_stages=3,
                        defines={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, tma=False)


def test_offsets_recomputed_each_iteration_are_worked_out_before_the_loop_but_the_moving_one():
    cuda = offsets_form_cuda()
    before = cuda[:cuda.index("the loop and the wait")]
    # A's chunks: their rows' offsets fixed, K's column offset moving; B's: the reverse
    assert "h1_offset[s] = (v6 + (threadIdx.x / 8 + s * 16)) * stride_am + (threadIdx.x % 8 * 8);" in before
    assert "h2_offset[s] = (threadIdx.x / 16 + s * 8) * stride_bk + (v11 + (threadIdx.x % 16 * 8));" in before
    loop = k_loop(cuda)
    assert re.search(r"auto\* src0 = a_ptr \+ \(v\d+\);", loop)  # the K offset, once an iteration
    assert re.search(r"auto\* src0 = b_ptr \+ \(v\d+ \* stride_bk\);", loop)
    assert '"l"(src0 + h1_offset[s])' in loop and '"l"(src0 + h2_offset[s])' in loop
    assert "stride_am" not in loop


def test_the_bounds_test_of_an_axis_the_loop_does_not_move_is_one_bit_a_chunk():
    cuda = offsets_form_cuda()
    before = cuda[:cuda.index("the loop and the wait")]
    assert "h1_inside |= (unsigned)((v6 + (threadIdx.x / 8 + s * 16)) < M) << s;" in before
    assert "h2_inside |= (unsigned)((v11 + (threadIdx.x % 16 * 8)) < N) << s;" in before
    loop = k_loop(cuda)
    assert '"r"((unsigned)((h1_inside >> s & 1u) && col < K))' in loop  # M hoisted, K tested
    assert '"r"((unsigned)((h2_inside >> s & 1u) && row < K))' in loop
    assert "< M" not in loop and "< N" not in loop


def test_one_warpgroup_builds_each_descriptor_once_and_moves_it_by_constants():
    loop = k_loop(tutorial_03_cuda(128, 128, 64, 4, 3))
    assert "const unsigned group_row = 0;  // one warpgroup" in loop
    assert loop.count("const unsigned long long a_desc = ") == 1
    assert '"l"(a_desc + 2), "l"(b_desc + 128)' in loop  # k16 step 1: 32 bytes along A's row, 16 rows of B
    eight = tutorial_03_cuda(128, 128, 64, 8, 3)
    assert "group_row = mytriton_warpgroup * 64;" in k_loop(eight)


def test_two_warpgroups_take_their_warpgroup_through_a_shuffle_once_at_the_kernel_s_top():
    # warp-uniform to ptxas, so that the descriptors built from it stay in uniform registers
    eight = tutorial_03_cuda(128, 128, 64, 8, 3)
    line = "const unsigned mytriton_warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);"
    assert eight.count(line) == 1
    assert eight.index(line) < eight.index("the loop and the wait")
    assert "mytriton_warpgroup" not in tutorial_03_cuda(128, 128, 64, 4, 3)  # one warpgroup: the constant 0


def test_a_loop_leaving_a_group_in_flight_runs_inside_a_branch_with_its_wait():
    cuda = compile_matmul("f16", (128, 128, 64), 4, "cuda")
    guard = cuda.index("if (0 < K) {  // the loop and the wait for its last group")
    wait = cuda.index("wgmma.wait_group.sync.aligned 0;")
    closing = cuda.index("\n  }\n", wait)
    assert guard < cuda.index("  for (int ", guard) < wait < closing
    assert cuda.count("wgmma.wait_group.sync.aligned 0;") == 1


def ptxas_notes(cuda: str, tmp_path) -> str:
    import subprocess

    from mytriton.backends.cuda.nvcc import find_nvcc

    source = tmp_path / "kernel.cu"
    source.write_text(cuda)
    done = subprocess.run([find_nvcc(), "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-cubin",
                           "-o", str(tmp_path / "kernel.cubin"), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.nvcc
@pytest.mark.parametrize("bm,bn,bk,num_warps,num_stages", tiered([(128, 128, 32, 4, 3), (64, 64, 32, 4, 4),
                                                                  (128, 128, 64, 8, 3), (128, 256, 64, 8, 3)],
                                                                 fast=[(64, 64, 32, 4, 4)]))
def test_ptxas_keeps_the_wgmma_pipeline_of_tutorial_03(tmp_path, bm, bn, bk, num_warps, num_stages):
    # C7514/C7515: ptxas serialised every wgmma (each waited for before the next); C7517: it added
    # a warpgroup.wait before a read of an accumulator that came before the kernel's own wait
    notes = ptxas_notes(tutorial_03_cuda(bm, bn, bk, num_warps, num_stages), tmp_path)
    assert "C7514" not in notes and "C7515" not in notes and "C7517" not in notes


@pytest.mark.nvcc
@pytest.mark.parametrize("config,num_warps", tiered([((128, 128, 64), 4), ((128, 256, 64), 8), ((64, 64, 32), 4)],
                                                    fast=[((128, 128, 64), 4)]))
def test_ptxas_keeps_the_wgmma_pipeline_of_the_matmul_sample(tmp_path, config, num_warps):
    notes = ptxas_notes(compile_matmul("f16", config, num_warps, "cuda"), tmp_path)
    assert "C7514" not in notes and "C7515" not in notes and "C7517" not in notes


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,bk,num_warps,num_stages", [(128, 128, 32, 4, 3), (64, 64, 32, 4, 4),
                                                           (128, 256, 64, 8, 3)])
@pytest.mark.parametrize("shape", [(300, 200, 160), (83, 95, 70), (513, 130, 64)])
def test_gpu_tutorial_03_with_wrapped_tiles_matches_numpy(bm, bn, bk, num_warps, num_stages, shape):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tutorial_03_for_wgmma", TUTORIAL_03)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    M, N, K = shape
    rng = np.random.default_rng(M + N + K + bm)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    grid = (mytriton.cdiv(M, bm) * mytriton.cdiv(N, bn),)
    module.matmul_kernel.fn[grid](a, b, c, M, N, K, a.strides[0] // 2, 1, b.strides[0] // 2, 1, c.strides[0] // 2, 1,
                                  BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="",
                                  num_warps=num_warps, num_stages=num_stages, backend="cuda")
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_gpu_a_wgmma_loop_with_no_k_steps_gives_zeros(kernel_module):
    run_matmul(kernel_module, "f16", (128, 128, 64), (200, 136, 0), 4)


def test_an_f16_epilogue_exchanges_the_cast_halves_not_the_f32_accumulator():
    cuda = tutorial_03_cuda(128, 128, 32, 4, 3)
    assert "held in registers before its layout change" in cuda
    # the exchange's shared copy (after the K loop's last barrier, no barrier of its own) holds halves
    exchange = cuda[cuda.index("held in registers before its layout change"):]
    copy = next(line.strip() for line in exchange.split("\n") if "reinterpret_cast" in line and "smem" in line)
    assert copy.startswith("__half* const s")
    header = json.loads(cuda.splitlines()[0].split(":", 1)[1])
    # the staged buffers (3 stages of 128x32 and 32x128 halves); the 32 KiB exchange reuses them
    assert header["shared_bytes"] == 3 * (128 * 32 + 32 * 128) * 2
