"""CUDA C++ as a ``CStyleLanguage``: every CUDA spelling the back end uses."""
from __future__ import annotations

import struct

from mytriton.backends.cuda import halves as halves_c
from mytriton.backends.c_style import CStyleLanguage
from mytriton.ir import math_functions
from mytriton.types import BF16, F16, F32, F64, ScalarType

FULL_MASK = "0xffffffffu"  # every lane of a warp takes part in a shuffle


# A memory fence of each atomic scope.
SCOPE_FENCES = {"gpu": "__threadfence();", "cta": "__threadfence_block();", "sys": "__threadfence_system();"}


# Triton's pointers are global (tl.pointer_type's address space 1): a pointer
# made from an integer is said to be one, so that the compiler accesses
# through it with global loads and stores (LDG, STG), not generic ones.
# (__cvta_global_to_generic says the same, but cicc 13.0 never finishes some
# kernels written with it: tutorial 08's grouped GEMM at 32x32x32.)
GLOBAL_POINTER = "__mytriton_global"


def half_bits(value: float, t: ScalarType) -> int | None:
    """The bits of the f16 or bf16 nearest the f32 nearest ``value`` (ties to
    even, as cvt.rn rounds), or None past the range of f32 or of f16."""
    try:
        single = struct.unpack("<I", struct.pack("<f", value))[0]
        if t == BF16:
            return (single + 0x7FFF + ((single >> 16) & 1)) >> 16
        return struct.unpack("<H", struct.pack("<e", struct.unpack("<f", struct.pack("<I", single))[0]))[0]
    except OverflowError:  # past f32's range, or f16's
        return None


def half_atomic_name(sem: str, scope: str, t: ScalarType) -> str:
    return f"__mytriton_atom_add_{sem}_{scope}_{'bf16' if t == BF16 else 'f16'}"


def _half_atomic_helper(sem: str, scope: str, t: ScalarType) -> str:
    ctype, ptx, arch = ("__nv_bfloat16", "bf16", 900) if t == BF16 else ("__half", "f16", 700)
    before = SCOPE_FENCES[scope] if sem in ("release", "acq_rel") else ""
    after = SCOPE_FENCES[scope] if sem in ("acquire", "acq_rel") else ""
    return (f"static __device__ __forceinline__ {ctype} {half_atomic_name(sem, scope, t)}({ctype}* p, {ctype} v) {{\n"
            f"#if __CUDA_ARCH__ >= {arch}\n"
            f'  unsigned short old; asm volatile("atom.{sem}.{scope}.global.add.noftz.{ptx} %0, [%1], %2;" '
            f': "=h"(old) : "l"(p), "h"(__builtin_bit_cast(unsigned short, v)) : "memory");\n'
            f"  return __builtin_bit_cast({ctype}, old);\n"
            "#else\n"
            f"  {before} const {ctype} old = atomicAdd(p, v); {after}\n"
            "  return old;\n"
            "#endif\n"
            "}")


class CudaLanguage(CStyleLanguage):
    half_names = {F16: "__half", BF16: "__nv_bfloat16"}
    kernel_prefix = 'extern "C" __global__ void'
    thread_id = "threadIdx.x"
    barrier = "__syncthreads();"
    shared_prefix = "__shared__ __align__(16)"

    def half_definitions(self, halves: set[ScalarType]) -> tuple[str, ...]:
        # The kernel's own definitions, not cuda_fp16.h and cuda_bf16.h: NVRTC reads those
        # in 10 and 20 ms a build (halves.py).
        return tuple(text for t, text in ((F16, halves_c.F16), (BF16, halves_c.BF16)) if t in halves)
    # libdevice's functions (opdefs.LIBDEVICE_OPS) by op, from the CUDA math
    # library (ir/math_functions.py); {0} and {1} are the operands, converted
    # to the type computed in.
    # Where Triton's NVIDIA lowering approximates (f32 exp and sigmoid), the
    # same PTX: the speed and the results of the kernels as Triton builds them.
    math_f32 = math_functions.c_spellings(tl=True, f64=False, cuda=True)
    libdevice_f32 = math_functions.c_spellings(tl=False, f64=False)
    libdevice_f64 = math_functions.c_spellings(tl=False, f64=True)

    def libdevice(self, name: str, t: ScalarType) -> str | None:
        """The spelling of libdevice function ``name`` computing in ``t`` (f32 or f64)."""
        return (self.libdevice_f64 if t == F64 else self.libdevice_f32).get(name)

    # The integer types one global access of 2 to 16 bytes moves (nvcc turns a
    # 16-byte one into LDG.E.128 / STG.E.128 when the address is aligned).
    vector_words = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}

    def dynamic_shared_array(self, name: str, alignment: int = 16) -> str:
        """The block's one shared array, sized at launch (the launch's dynamic
        shared bytes): the only way past 48 KiB, once the launcher raises the
        kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES."""
        return f"extern __shared__ __align__({alignment}) unsigned char {name}[];"

    def shared_view(self, element: str, name: str, array: str, offset: int) -> str:
        """``name``: ``element``s at byte ``offset`` of the shared array ``array``."""
        return f"{element}* const {name} = reinterpret_cast<{element}*>({array} + {offset});"

    def vector_buffer(self, element: str, name: str, count: int) -> str:
        """A thread's staging array for ``count`` elements moved as one access."""
        return f"__align__(16) {element} {name}[{count}];"

    def vector_copy(self, target: str, source: str, nbytes: int, source_const: bool = True) -> str:
        """``nbytes`` from ``source`` to ``target`` (both addresses aligned to
        ``nbytes``) as one access."""
        word = self.vector_words[nbytes]
        const = "const " if source_const else ""
        return f"*reinterpret_cast<{word}*>({target}) = *reinterpret_cast<{const}{word}*>({source});"

    # Two adjacent elements as one vector value, by C element type: its type and maker.
    pair_vectors = {"float": ("float2", "make_float2"), "int": ("int2", "make_int2"),
                    "unsigned int": ("uint2", "make_uint2"), "__half": ("__half2", "__halves2half2"),
                    "__nv_bfloat16": ("__nv_bfloat162", "__halves2bfloat162"), "short": ("short2", "make_short2"),
                    "unsigned short": ("ushort2", "make_ushort2")}

    def pair_write(self, element: str, target: str, first: str, second: str) -> str | None:
        """Two adjacent ``element`` values written to ``target`` (aligned to
        both) as one vector value, or None for a type without one. A staging
        array moved as a word instead costs NVVM and ptxas time and the kernel
        moves (an f32 pair: 72 more SASS instructions in a 128x128 exchange)."""
        if element not in self.pair_vectors:
            return None
        vector, make = self.pair_vectors[element]
        return f"*reinterpret_cast<{vector}*>({target}) = {make}({first}, {second});"

    # The C element types ``shared_store`` writes.
    shared_store_elements = ("float", "__half", "__nv_bfloat16")

    def shared_store(self, element: str, address: str, values: list[str]) -> str:
        """One or two adjacent ``element`` values (f32, f16 or bf16) stored by
        ``st.shared`` at ``address``, a byte of the 32-bit shared window. The
        same store through a generic pointer costs NVVM a quarter of a TMA
        kernel's build (its address widened to 64 bits and folded again)."""
        if element == "float":
            operands = ", ".join(f'"f"({v})' for v in values)
            ptx = "st.shared.v2.f32 [%0], {%1, %2};" if len(values) == 2 else "st.shared.f32 [%0], %1;"
        else:  # __half, __nv_bfloat16: their bits
            bits = [f"__builtin_bit_cast(unsigned short, {v})" for v in values]
            if len(values) == 1:
                operands, ptx = f'"h"({bits[0]})', "st.shared.b16 [%0], %1;"
            else:
                operands, ptx = f'"r"((unsigned){bits[0]} | (unsigned){bits[1]} << 16)', "st.shared.b32 [%0], %1;"
        return f'asm volatile("{ptx}" :: "r"({address}), {operands} : "memory");'

    # The words ``shared_load`` reads by size: their C type, PTX vector suffix and fields.
    shared_load_words = {16: ("uint4", ".v4", "xyzw"), 8: ("uint2", ".v2", "xy"), 4: ("unsigned", "", "")}

    def shared_load(self, target: str, address: str, nbytes: int) -> str | None:
        """``nbytes`` (4, 8 or 16) read by ``ld.shared`` at ``address``, a byte
        of the 32-bit shared window, into ``target`` (aligned to them), or None
        for another size."""
        if nbytes not in self.shared_load_words:
            return None
        word, vector, fields = self.shared_load_words[nbytes]
        if not fields:
            return (f'asm volatile("ld.shared.b32 %0, [%1];" : "=r"(*reinterpret_cast<unsigned*>({target})) '
                    f': "r"({address}) : "memory");')
        outputs = ", ".join(f'"=r"(w.{f})' for f in fields)
        registers = ", ".join(f"%{i}" for i in range(len(fields)))
        return (f'{{ {word} w; asm volatile("ld.shared{vector}.b32 {{{registers}}}, [%{len(fields)}];" : {outputs} '
                f': "r"({address}) : "memory"); *reinterpret_cast<{word}*>({target}) = w; }}')

    def program_id(self, axis: int) -> str:
        return f"(int)blockIdx.{'xyz'[axis]}"

    def num_programs(self, axis: int) -> str:
        return f"(int)gridDim.{'xyz'[axis]}"

    def kernel_signature(self, symbol: str, params: list[str], threads: int) -> str:
        # __launch_bounds__ lets nvcc budget registers for exactly this many threads.
        return f"{self.kernel_prefix} __launch_bounds__({threads}) {symbol}({', '.join(params)})"

    def shuffle_xor(self, value: str, lane_mask: int) -> str:
        return f"__shfl_xor_sync({FULL_MASK}, {value}, {lane_mask})"

    def shuffle_up(self, value: str, delta: int) -> str:
        """``value`` of the lane ``delta`` below (a lane below 0: its own)."""
        return f"__shfl_up_sync({FULL_MASK}, {value}, {delta})"

    def shuffle_down(self, value: str, delta: int) -> str:
        """``value`` of the lane ``delta`` above (a lane above 31: its own)."""
        return f"__shfl_down_sync({FULL_MASK}, {value}, {delta})"

    def bitcast(self, expr: str, target: ScalarType) -> str:
        """``expr``'s bits read as ``target`` (of the same width)."""
        return f"__builtin_bit_cast({self.scalar_type(target)}, {expr})"

    # Device functions generated code calls by name, each defined (before the
    # kernel) only in code that calls it.
    helpers: dict[str, str] = {
        math_functions.DIV_FULL_F32: (
            f"static __device__ __forceinline__ float {math_functions.DIV_FULL_F32}(float a, float b) {{ float q; "
            'asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b)); return q; }'),
        math_functions.EX2_FTZ_F32: (
            f"static __device__ __forceinline__ float {math_functions.EX2_FTZ_F32}(float x) {{ float y; "
            'asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }'),
        GLOBAL_POINTER: (
            f"template <typename T> static __device__ __forceinline__ T* {GLOBAL_POINTER}(T* p) "
            "{ __builtin_assume(__isGlobal(p)); return p; }"),
        # ordered f16/bf16 atomic adds (ordered_half_add)
        **{half_atomic_name(sem, scope, t): _half_atomic_helper(sem, scope, t)
           for sem in ("acquire", "release", "acq_rel") for scope in SCOPE_FENCES for t in (F16, BF16)},
    }

    def ordered_half_add(self, sem: str, scope: str, t: ScalarType, ptr: str, value: str) -> str:
        """An ordered (``sem`` acquire, release or acq_rel) f16/bf16 atomic add
        at ``ptr``, its old value: one PTX ``atom`` where the target has it
        (f16 from sm_70, bf16 from sm_90), CUDA's ``atomicAdd`` between the
        fences of ``scope`` elsewhere (its helper tests ``__CUDA_ARCH__``)."""
        return f"{half_atomic_name(sem, scope, t)}({ptr}, {value})"

    def divide(self, a: str, b: str, t: ScalarType) -> str:
        """``a / b`` as Triton's ``/`` computes it: f32 by div.full.f32
        (within 2 ulp; ``div_rn`` rounds exactly), other types by C's ``/``."""
        return f"{math_functions.DIV_FULL_F32}({a}, {b})" if t == F32 else f"({a} / {b})"

    def div_rn(self, a: str, b: str, t: ScalarType) -> str:
        return f"{'__ddiv_rn' if t == F64 else '__fdiv_rn'}({a}, {b})"

    def umulhi(self, a: str, b: str, t: ScalarType) -> str:
        if t.bits == 32:
            return f"__umulhi((unsigned int)({a}), (unsigned int)({b}))"
        return f"__umul64hi((unsigned long long)({a}), (unsigned long long)({b}))"

    def round_tf32(self, target: str, value: str) -> str:
        # cvt.rna, as Triton's tf32x3 splits an operand into big + small
        # (interp.round_to_tf32); a plain TF32 operand is truncated instead
        # (truncate_tf32), as the tensor cores read one.
        return (f"{{ unsigned int tf32_bits; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(tf32_bits) : \"f\"({value})); "
                f"{target} = __uint_as_float(tf32_bits); }}")

    def truncate_tf32(self, target: str, value: str) -> str:
        return f"{target} = __uint_as_float(__float_as_uint({value}) & 0xFFFFE000u);"

    def from_float(self, expr: str, t: ScalarType) -> str:
        return f"{'__float2half' if t == F16 else '__float2bfloat16'}({expr})"

    def half_literal(self, value: float, t: ScalarType) -> str:
        # Its bits, rounded here as cvt.rn would round the f32 literal: cuda_bf16.h
        # converts with inline asm, which nvcc cannot fold (a masked load's
        # fill of 8 zeros was 8 cvt instructions in the PTX).
        bits = half_bits(value, t)
        if bits is None:
            return super().half_literal(value, t)
        return f"{'__ushort_as_half' if t == F16 else '__ushort_as_bfloat16'}((unsigned short){bits:#06x}u)"

    # Asynchronous copies (cp.async, sm_80 on): the pipelined K loop's ops.
    cp_async_commit = 'asm volatile("cp.async.commit_group;\\n" ::: "memory");'
    proxy_fence = 'asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");'

    def cp_async(self, dst_address: str, src_global: str, nbytes: int, src_bytes: str) -> str:
        """Copy ``nbytes`` (4, 8 or 16) from global to shared memory (at
        ``dst_address``, a 32-bit shared-window address) without waiting; the
        bytes past ``src_bytes`` are zero-filled (and not read)."""
        cache = "cg" if nbytes == 16 else "ca"  # .cg (through L2 alone) takes 16 bytes only
        return (f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;\\n" :: '
                f'"r"({dst_address}), "l"({src_global}), "r"({src_bytes}) '
                ': "memory");')

    def cp_async_or_zeros(self, dst_address: str, src_global: str, nbytes: int, in_bounds: str,
                          issue: str | None = None) -> str:
        """Copy ``nbytes`` from global to shared memory without waiting where
        ``in_bounds`` holds, else write zeros without reading ``src_global``
        (cp.async's ignore-src predicate): one predicate per chunk, no sizes.
        ``issue``: a condition under which the copy happens at all, as the
        instruction's guard (nothing written where it fails), so that a
        pipeline's last prefetches are predicated, not branched around."""
        cache = "cg" if nbytes == 16 else "ca"
        if issue is None:
            return (f'asm volatile("{{\\n.reg .pred skip;\\nsetp.eq.u32 skip, %2, 0;\\n'
                    f'cp.async.{cache}.shared.global [%0], [%1], {nbytes}, skip;\\n}}\\n" :: '
                    f'"r"({dst_address}), "l"({src_global}), '
                    f'"r"((unsigned)({in_bounds})) : "memory");')
        return (f'asm volatile("{{\\n.reg .pred skip, go;\\nsetp.eq.u32 skip, %2, 0;\\nsetp.ne.u32 go, %3, 0;\\n'
                f'@go cp.async.{cache}.shared.global [%0], [%1], {nbytes}, skip;\\n}}\\n" :: '
                f'"r"({dst_address}), "l"({src_global}), '
                f'"r"((unsigned)({in_bounds})), "r"((unsigned)({issue})) : "memory");')

    def cp_async_wait(self, pending: int) -> str:
        """Wait until at most ``pending`` of this thread's committed groups are in flight."""
        return f'asm volatile("cp.async.wait_group {pending};\\n" ::: "memory");'

    def to_float(self, expr: str, t: ScalarType) -> str:
        if t == F16:
            return f"__half2float({expr})"
        if t == BF16:
            return f"__bfloat162float({expr})"
        return super().to_float(expr, t)


CUDA = CudaLanguage()
