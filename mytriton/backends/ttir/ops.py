"""The TTIR back end's op table: how each SSA op becomes Triton's ``tt``
dialect (with ``arith``, ``math`` and ``scf``), spelled as Triton 3 prints
the same ``tl`` call.

Keyed by op name, as ``backends/mlir/ops.py`` is for upstream MLIR; the arith
spellings of the binary ops and comparisons are that table's (one place for
them). TTIR works on whole tensors, so every elementwise op is one op on
``tensor<...>`` values; what the SSA leaves implicit (a scalar or a smaller
tile meeting a tile, a literal, an element type the op converts) becomes the
``arith.constant``, ``tt.splat``, ``tt.expand_dims``, ``tt.broadcast`` and
conversion ops Triton's front end writes. ``REFUSED`` lists what this back
end does not take (a located error), as is any op missing here.
"""
from __future__ import annotations

from mytriton.backends.mlir.ops import BINARY, COMPARE  # noqa: F401  (the arith spellings, shared)
from mytriton.ir import math_functions

# Math functions of one float (the tl group of ir/math_functions.py): the
# math-dialect op Triton's front end writes for tl.<name>, or libdevice's
# symbol where it writes that. f16 and bf16 compute in f32 and round back
# once, as mytriton's CUDA does. ``sigmoid`` is Triton's own expansion.
MATH: dict[str, str] = {
    row.name: (f"tt.extern_elementwise @{row.symbol(False)} (libdevice), as tl.extra.cuda.libdevice.{row.name}"
               if row.triton_extern else row.expanded or row.ttir or row.mlir_op)
    for row in math_functions.TABLE if row.tl
}

# Elementwise ops of Triton's own, or spelled differently from upstream MLIR.
TRITON_ELEMENTWISE: dict[str, str] = {
    "div_rn": "tt.precise_divf (tl.div_rn; `/` is arith.divf, which Triton may lower approximately)",
    "umulhi": "tt.mulhiui",
    "clamp": "tt.clampf, propagateNan = none",
    "clamp_nan": "tt.clampf, propagateNan = all",
    "fma": "math.fma",
    "bitcast": "tt.bitcast",
    "addptr": "tt.addptr (a tensor of !tt.ptr and a tensor of offsets)",
    "program_id": "tt.get_program_id x|y|z : i32",
    "num_programs": "tt.get_num_programs x|y|z : i32",
    "neg": "-0.0 - x (arith.subf: Triton 3.6 does not legalize arith.negf), or 0 - x (arith.subi)",
    "abs": "math.absf / math.absi",
    "not": "arith.xori with all ones",
    "where": "arith.select on an i1 tensor",
    "cast": "the arith conversion between the two types (extf, truncf, sitofp, fptosi, extsi, trunci, ...)",
    "hint": "the value itself (Triton's tt.divisibility/tt.contiguity attributes are not written)",
    "broadcast_to": "tt.expand_dims + tt.broadcast (tt.splat of a scalar)",
    "full": "arith.constant dense<...>, or tt.splat of a runtime scalar",
}

# Ops written with structure of their own.
STRUCTURED: dict[str, str] = {
    "arange": "tt.make_range {end, start} : tensor<Nxi32>",
    "expand_dims": "tt.expand_dims {axis}",
    "load": "tt.load ptr, mask, other (mask and other splat/broadcast to the pointers' shape)",
    "store": "tt.store ptr, value, mask",
    "reduce": "tt.reduce over the N tiles with the combine region as its body (tt.reduce.return; a whole-tile "
              "reduction of rank 2 reshapes to rank 1 first)",
    "scan": "tt.scan {axis, reverse} over the N tiles with the combine region as its body (tt.scan.return)",
    "sum": "tt.reduce with an arith.addf/addi region (f16/bf16 in f32, rounded once; a whole-tile "
           "reduction of rank 2 reshapes to rank 1 first, as Triton's front end)",
    "max": "tt.reduce with an arith.maxnumf/maxsi/maxui region",
    "min": "tt.reduce with an arith.minnumf/minsi/minui region",
    "dot": "tt.dot a, b, acc, inputPrecision = tf32|tf32x3|ieee (zeros when there is no acc; an f16 "
           "result accumulates in f32 and is rounded once with arith.truncf)",
    "convert_layout": "the value itself (Triton decides layouts itself, in TTGIR)",
    "trans": "tt.trans {order = array<i32: 1, 0>}",
    "permute": "tt.trans {order = array<i32: dims>}",
    "reshape": "tt.reshape",
    "split": "tt.split (the half the op's index names)",
    "join": "tt.join",
    "histogram": "tt.histogram src(, mask) : tensor<N x iK> -> tensor<num_bins x i32>",
    "inline_asm": "tt.elementwise_inline_asm \"asm\" {constraints, packed_element = 1, pure = true} args",
    "inline_asm_volatile": "tt.elementwise_inline_asm \"asm\" {constraints, packed_element = 1, pure = false} args",
    "gather": "tt.gather src[index] {axis} : (tensor<src>, tensor<index>) -> tensor<index's shape x src's element>",
    "for": "scf.for with iter_args on the loop's index type (a runtime step <= 0 runs no iteration)",
    "yield": "scf.yield",
    "if": "scf.if with results",
    "while": "scf.while / scf.condition",
    "condition": "scf.condition(cond) with the condition region's arguments",
    "device_print": "tt.print with Triton's prefix (\" x: \"), hex and isSigned (Triton prints its own line format)",
    "device_assert": "tt.assert cond, \"msg\" (cond | ~mask where masked)",
}

_STAGED = ("shared_alloc", "copy_to_shared", "dot_shared", "dot_rs", "shared_alloc_stages", "stage_view",
           "async_copy_to_shared", "async_commit", "async_wait", "copy_strided_to_shared",
           "async_copy_strided_to_shared", "copy_gathered_to_shared", "async_copy_gathered_to_shared", "wgmma_wait",
           "proxy_fence", "store_tile")
REFUSED: dict[str, str] = {
    name: "the TTIR back end reads SSA before stage-dots (Triton stages and pipelines its own dots): "
          "give it the output of 'opt'"
    for name in _STAGED
}
# libdevice's functions (ir/math_functions.py's rows without tl) with no
# tl.<name>: tt.extern_elementwise of the libdevice symbol, as Triton's
# tl.extra.cuda.libdevice writes it: ``__nv_<name>f`` on f32 (f16 and bf16
# compute in f32 and round back once), ``__nv_<name>`` on f64. The predicates
# answer an i32 in libdevice (compared != 0 for the i1); llrint answers i64.
LIBDEVICE: dict[str, tuple[str, str]] = {
    row.name: (row.symbol(False), row.symbol(True)) for row in math_functions.TABLE if not row.tl
}

# Atomics, pointer casts and the barrier.
MEMORY: dict[str, str] = {
    "atomic_rmw": "tt.atomic_rmw add|fadd|max|umax|min|umin|and|or|xor|exch, sem, scope (a float max/min "
                  "is Triton's front end's pair on the bits: max where x >= 0, umin where x < 0); 0 where "
                  "the mask is off",
    "atomic_cas": "tt.atomic_cas sem, scope, ptr, cmp, value",
    "int_to_ptr": "tt.int_to_ptr (i64 -> !tt.ptr)",
    "ptr_to_int": "tt.ptr_to_int (!tt.ptr -> i64)",
    "barrier": "gpu.barrier (tl.debug_barrier)",
    "grid_dependency_wait": "tt.grid_dependency_wait (tl.extra.cuda.gdc_wait)",
    "grid_dependency_launch_dependents": "tt.grid_dependency_launch_dependents (tl.extra.cuda.gdc_launch_dependents)",
}


def lowering(name: str) -> str | None:
    """How this back end lowers the op ``name``: "elementwise", "structured"
    or "refused"; None where it has no lowering."""
    if name in BINARY or name in COMPARE or name in MATH or name in TRITON_ELEMENTWISE:
        return "elementwise"
    if name in LIBDEVICE:
        return "elementwise"
    if name in STRUCTURED or name in MEMORY:
        return "structured"
    if name in REFUSED:
        return "refused"
    return None

