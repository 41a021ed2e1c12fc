"""Two carried values of different kinds: a running maximum tile and a scalar count."""
import mytriton
import mytriton.language as tl


@mytriton.jit
def two_carried_kernel(x_ptr, max_ptr, count_ptr, n_chunks, width, BLOCK: tl.constexpr = 256):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < width
    best = tl.full((BLOCK,), -float("inf"), tl.float32)
    count = 0
    for chunk in range(n_chunks):
        x = tl.load(x_ptr + chunk * width + cols, mask=mask, other=-float("inf"))
        best = tl.maximum(best, x)
        count += 1
    tl.store(max_ptr + cols, best, mask=mask)
    tl.store(count_ptr + tl.program_id(0), count)
