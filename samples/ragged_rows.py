"""Rows of different lengths (CSR-style offsets): each program loops over its own
row, so trip counts differ between programs. out[r] = sum(values[starts[r]:starts[r+1]])."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def ragged_rows_kernel(values_ptr, starts_ptr, out_ptr, BLOCK: tl.constexpr = 64):
    row = tl.program_id(0)
    begin = tl.load(starts_ptr + row)
    end = tl.load(starts_ptr + row + 1)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(begin, end, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(values_ptr + offs, mask=offs < end, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
