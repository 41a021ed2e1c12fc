"""tl.gather(src, index, axis), as Triton defines it: the result has index's
shape and src's elements, result[.., i, ..] = src[.., index[.., i, ..], ..]
along ``axis``; index matches src on every other axis. One op, ``gather``;
on the GPU the source goes through shared memory (backends/cuda/gather.py)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import compile_text, kernel_source
from mytriton.diagnostics import CompileError

ROWS = kernel_source("""
    @mytriton.jit
    def rows(x_ptr, i_ptr, out_ptr, N: tl.constexpr, M: tl.constexpr, K: tl.constexpr, AXIS: tl.constexpr):
        r = tl.arange(0, N)
        c = tl.arange(0, M)
        k = tl.arange(0, K)
        x = tl.load(x_ptr + r[:, None] * M + c[None, :])
        if AXIS == 1:
            idx = tl.load(i_ptr + r[:, None] * K + k[None, :])
            tl.store(out_ptr + r[:, None] * K + k[None, :], tl.gather(x, idx, AXIS))
        else:
            idx = tl.load(i_ptr + k[:, None] * M + c[None, :])
            tl.store(out_ptr + k[:, None] * M + c[None, :], x.gather(idx, -2))
""")
SIGNATURE = "*fp32, *i32, *fp32"


def run_rows(n: int, m: int, k: int, axis: int, rng, backend_source: str = ROWS):
    from mytriton.backends.interp import run_kernel
    from conftest import ssa_of

    x = rng.standard_normal((n, m)).astype(np.float32)
    index_shape = (n, k) if axis == 1 else (k, m)
    index = rng.integers(0, (m if axis == 1 else n), index_shape).astype(np.int32)
    out = np.full(index_shape, np.nan, np.float32)
    kernel = ssa_of(backend_source, optimized=True, signature=SIGNATURE,
                    defines={"N": n, "M": m, "K": k, "AXIS": axis})
    run_kernel(kernel, (1,), [x, index, out])
    return x, index, out


@pytest.mark.parametrize("n, m, k, axis", [(16, 32, 8, 1), (16, 32, 64, 1), (32, 16, 8, 0), (8, 16, 32, 0)])
def test_the_interpreter_gathers_as_numpy_takes_along_the_axis(n, m, k, axis, rng):
    x, index, out = run_rows(n, m, k, axis, rng)
    np.testing.assert_array_equal(out, np.take_along_axis(x, index, axis))


def test_a_one_dimensional_gather_is_a_lookup(rng):
    source = kernel_source("""
        @mytriton.jit
        def lookup(table_ptr, i_ptr, out_ptr):
            table = tl.load(table_ptr + tl.arange(0, 64))
            idx = tl.load(i_ptr + tl.arange(0, 128))
            tl.store(out_ptr + tl.arange(0, 128), tl.gather(table, idx, 0))
    """)
    from mytriton.backends.interp import run_kernel
    from conftest import ssa_of

    table = rng.standard_normal(64).astype(np.float32)
    index = rng.integers(0, 64, 128).astype(np.int32)
    out = np.full(128, np.nan, np.float32)
    run_kernel(ssa_of(source, optimized=True, signature=SIGNATURE), (1,), [table, index, out])
    np.testing.assert_array_equal(out, table[index])


def test_an_index_outside_the_axis_is_an_error_naming_the_element(rng):
    from mytriton.backends.interp import run_kernel
    from conftest import ssa_of

    kernel = ssa_of(ROWS, optimized=True, signature=SIGNATURE, defines={"N": 16, "M": 32, "K": 8, "AXIS": 1})
    index = np.zeros((16, 8), np.int32)
    index[3, 5] = 32
    with pytest.raises(CompileError, match=r"gather index 32 is outside the source's axis 1 \(0 to 31\) "
                                           r"\(in program 0 at tile element \[3, 5\]\)"):
        run_kernel(kernel, (1,), [np.ones((16, 32), np.float32), index, np.zeros((16, 8), np.float32)])


@pytest.mark.parametrize("call, message", [
    ("tl.gather(x, idx, 2)", "the axis must be an integer from 0 to 1, got 2"),
    ("tl.gather(x, idx.to(tl.float32), 1)", "the index must be a tile of integers"),
    ("tl.gather(x, tl.arange(0, 8), 1)", "the source and the index must have the same rank"),
    ("tl.gather(x, tl.zeros((8, 8), tl.int32), 1)", r"the index's dimension 0 \(8\) must be the source's \(16\)"),
    ("tl.gather(x, idx, AXIS + 0.5)", "axis must be an integer constant"),
])
def test_operands_triton_refuses_are_located_errors(call, message):
    source = ROWS.replace("tl.gather(x, idx, AXIS)", call)
    with pytest.raises(CompileError, match=message) as info:
        compile_text(source, "ssa", signature=SIGNATURE, defines={"N": 16, "M": 32, "K": 8, "AXIS": 1})
    assert info.value.loc is not None and info.value.loc.line == 12


def test_the_result_is_laid_out_as_the_index_and_the_source_goes_through_scratch():
    text = compile_text(ROWS, "layouts", signature=SIGNATURE, defines={"N": 32, "M": 64, "K": 16, "AXIS": 1})
    (line,) = [line for line in text.splitlines() if " = gather " in line]
    assert "scratch_barrier=" in line
    assert "scratch=8192" in text.splitlines()[0] + "".join(text.splitlines()[:8])  # the 32x64 f32 source


def test_the_cuda_writes_the_source_to_shared_memory_then_reads_each_element_at_its_index():
    cuda = compile_text(ROWS, "cuda", signature=SIGNATURE, defines={"N": 32, "M": 64, "K": 16, "AXIS": 1})
    lines = [line.strip() for line in cuda.splitlines()]
    write = next(i for i, line in enumerate(lines) if line.startswith("g") and "_src[" in line and "] = " in line)
    barrier = next(i for i in range(write, len(lines)) if lines[i] == "__syncthreads();")
    read = next(i for i in range(barrier, len(lines)) if "_src[(c0) * 64 + (int)(" in lines[i])
    assert write < barrier < read


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_nvcc_builds_the_gathers(arch):
    for axis, k in ((1, 16), (0, 8)):
        compile_text(ROWS, "ptx", signature=SIGNATURE, defines={"N": 32, "M": 64, "K": k, "AXIS": axis}, arch=arch)


def test_the_ttir_spells_tritons_gather():
    text = compile_text(ROWS, "ttir", signature=SIGNATURE, defines={"N": 32, "M": 64, "K": 16, "AXIS": 1})
    (line,) = [line.strip() for line in text.splitlines() if "tt.gather" in line]
    assert line.partition(" = ")[2].split(" loc(")[0].endswith(
        "{axis = 1 : i32} : (tensor<32x64xf32>, tensor<32x16xi32>) -> tensor<32x16xf32>")


def test_the_mlir_back_end_refuses_it_where_it_is_called():
    with pytest.raises(CompileError, match="tl.gather is not covered by the MLIR back end") as info:
        compile_text(ROWS, "mlir", signature=SIGNATURE, defines={"N": 32, "M": 64, "K": 16, "AXIS": 1})
    assert info.value.loc.line == 12


GPU_CASES = [(32, 64, 16, 1), (64, 32, 128, 1), (32, 64, 8, 0), (16, 128, 64, 0)]


@pytest.mark.gpu
@pytest.mark.parametrize("n, m, k, axis", GPU_CASES)
def test_gpu_gathers_as_the_interpreter_does(n, m, k, axis, kernel_module, rng):
    body = ROWS.split("\n", 3)[3]  # the kernel without the standard imports kernel_module adds
    module = kernel_module(body)
    x = rng.standard_normal((n, m)).astype(np.float32)
    index_shape = (n, k) if axis == 1 else (k, m)
    index = rng.integers(0, (m if axis == 1 else n), index_shape).astype(np.int32)
    out = np.full(index_shape, np.nan, np.float32)
    module.rows[(1,)](x, index, out, N=n, M=m, K=k, AXIS=axis, backend="cuda")
    np.testing.assert_array_equal(out, np.take_along_axis(x, index, axis))
