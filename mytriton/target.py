"""Facts about the GPU the compiler plans for, in one place."""

# Shared memory a CUDA block may use without opting in to more: the budget for
# staged dot tiles, reduction scratch and layout changes together.
SHARED_MEMORY_BUDGET = 48 * 1024

# Tile elements per thread: beyond this registers spill and nvcc crawls.
MAX_ELEMENTS_PER_THREAD = 256
