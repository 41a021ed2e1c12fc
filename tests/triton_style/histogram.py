"""Counting tokens per expert, as MoE routing does: each program takes a
block of expert ids, counts it with ``tl.histogram`` (the ragged tail
masked off) and adds its counts to the global ones with ``tl.atomic_add``."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def _expert_histogram_kernel(
    expert_ids_ptr,
    counts_ptr,
    n_tokens,
    NUM_EXPERTS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_tokens
    expert_ids = tl.load(expert_ids_ptr + offsets, mask=mask, other=0)
    block_counts = tl.histogram(expert_ids, NUM_EXPERTS, mask=mask)
    tl.atomic_add(counts_ptr + tl.arange(0, NUM_EXPERTS), block_counts)


def expert_histogram(expert_ids, num_experts):
    counts = np.zeros(num_experts, dtype=np.int32)
    n_tokens = expert_ids.size
    grid = lambda meta: (triton.cdiv(n_tokens, meta['BLOCK_SIZE']), )
    _expert_histogram_kernel[grid](expert_ids, counts, n_tokens, NUM_EXPERTS=num_experts, BLOCK_SIZE=512)
    return counts
