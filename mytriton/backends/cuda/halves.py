"""f16 and bf16 as generated CUDA uses them, defined in the kernel's own text
in place of ``#include <cuda_fp16.h>`` and ``<cuda_bf16.h>``.

Why: those headers are 18,000 lines that NVRTC's front end reads for every
build, 10 ms (f16) and 20 ms (bf16) of a build that takes 0.1-0.2 s for a
small kernel. Generated code uses a few of their names: the two types, their
pairs, bit casts, conversions to and from f32, the ``_rn`` add, sub and mul,
``atomicAdd`` and the warp shuffles.

Each is defined with the instruction the headers' device code uses for it,
so that the PTX is the same as with the headers (tests/test_cuda_halves.py
compares them; so did every static and Liger kernel with halves when this was
written), on sm_80 and later, but for the shuffles (below), and on
sm_75 (CUDA 13's oldest target) where bf16 has no instructions and its
conversion and arithmetic go through f32, as the headers' do there.

No conversion operators and no constructors from float: an expression the
emitter did not spell through these functions is a build error, not a
conversion C++ chose.
"""
from __future__ import annotations

def shuffles(ctype: str) -> str:
    """The warp shuffles of a half (reductions, scans, sorts): its 16 bits in the low half of the
    32-bit shuffle (the headers send the half twice; the low half is what they return)."""
    lines = []
    for name, lane in (("__shfl_sync", "int lane"), ("__shfl_up_sync", "unsigned int lane"),
                       ("__shfl_down_sync", "unsigned int lane"), ("__shfl_xor_sync", "int lane")):
        lines.append(f"[[maybe_unused]] static __device__ __forceinline__ {ctype} {name}(unsigned int mask, {ctype} v, {lane}, "
                     f"int width = 32) {{\n"
                     f"  {ctype} r; r.__x = (unsigned short){name}(mask, (unsigned int)v.__x, lane, width); "
                     f"return r;\n}}")
    return "\n".join(lines)


# The bits, and what the headers' __half and __half2 hold: two-byte
# alignment, and four for the pair that vector stores write.
F16 = r"""// f16 as the kernel uses it (what cuda_fp16.h's device code does, without reading its 9,000 lines)
struct __align__(2) __half { unsigned short __x; };
struct __align__(4) __half2 { __half x, y; };
[[maybe_unused]] static __device__ __forceinline__ __half __ushort_as_half(unsigned short bits) { __half h; h.__x = bits; return h; }
[[maybe_unused]] static __device__ __forceinline__ unsigned short __half_as_ushort(__half h) { return h.__x; }
[[maybe_unused]] static __device__ __forceinline__ __half __float2half(float f) {
  __half h; asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(h.__x) : "f"(f)); return h;
}
[[maybe_unused]] static __device__ __forceinline__ float __half2float(__half h) {
  float f; asm("{  cvt.f32.f16 %0, %1;}\n" : "=f"(f) : "h"(h.__x)); return f;
}
[[maybe_unused]] static __device__ __forceinline__ __half2 __halves2half2(__half x, __half y) { __half2 p; p.x = x; p.y = y; return p; }
#define MYTRITON_F16_OP(name, op) \
  [[maybe_unused]] static __device__ __forceinline__ __half name(__half a, __half b) { \
    __half r; asm("{" op " %0,%1,%2;\n}" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x)); return r; }
MYTRITON_F16_OP(__hadd_rn, "add.rn.f16")
MYTRITON_F16_OP(__hsub_rn, "sub.rn.f16")
MYTRITON_F16_OP(__hmul_rn, "mul.rn.f16")
#undef MYTRITON_F16_OP
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700  // nvcc's host pass reads the kernel too
[[maybe_unused]] static __device__ __forceinline__ __half atomicAdd(__half* p, __half v) {
  __half old; asm volatile("{ atom.add.noftz.f16 %0,[%1],%2; }\n" : "=h"(old.__x) : "l"(p), "h"(v.__x) : "memory");
  return old;
}
#endif
""" + shuffles("__half")

# sm_90 has bf16 add, sub, mul and the conversion to f32; sm_80 the
# conversion from f32 and fma (add is a*1+b, sub b*-1+a, mul a*b-0); sm_75
# none: f32 and round to nearest even (NaN: 0x7fff).
BF16 = r"""// bf16 as the kernel uses it (what cuda_bf16.h's device code does, without reading its 9,000 lines)
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
struct __align__(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
[[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  __nv_bfloat16 h; h.__x = bits; return h;
}
[[maybe_unused]] static __device__ __forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
[[maybe_unused]] static __device__ __forceinline__ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) {
  __nv_bfloat162 p; p.x = x; p.y = y; return p;
}
[[maybe_unused]] static __device__ __forceinline__ float __bfloat162float(__nv_bfloat16 h) {
  float f;
#if __CUDA_ARCH__ >= 900
  asm("{ cvt.f32.bf16 %0, %1;}\n" : "=f"(f) : "h"(h.__x));
#elif __CUDA_ARCH__ >= 800
  asm("{ mov.b32 %0, {0,%1};}\n" : "=f"(f) : "h"(h.__x));
#else
  f = __uint_as_float((unsigned int)h.__x << 16);
#endif
  return f;
}
[[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16(float f) {
  __nv_bfloat16 h;
#if __CUDA_ARCH__ >= 800
  asm("{  cvt.rn.bf16.f32 %0, %1;}\n" : "=h"(h.__x) : "f"(f));
#else
  const unsigned int u = __float_as_uint(f);
  h.__x = (u & 0x7fffffffU) > 0x7f800000U ? (unsigned short)0x7fffU
                                           : (unsigned short)((u + 0x7fffU + ((u >> 16) & 1U)) >> 16);
#endif
  return h;
}
#if __CUDA_ARCH__ >= 900
#define MYTRITON_BF16_OP(name, op, sm80, fallback) \
  [[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) { \
    __nv_bfloat16 r; asm("{ " op " %0,%1,%2; }\n" : "=h"(r.__x) : "h"(a.__x), "h"(b.__x)); return r; }
#elif __CUDA_ARCH__ >= 800
#define MYTRITON_BF16_OP(name, op, sm80, fallback) \
  [[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) { \
    __nv_bfloat16 r; asm(sm80 : "=h"(r.__x) : "h"(a.__x), "h"(b.__x)); return r; }
#else
#define MYTRITON_BF16_OP(name, op, sm80, fallback) \
  [[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) { \
    return __float2bfloat16(__bfloat162float(a) fallback __bfloat162float(b)); }
#endif
MYTRITON_BF16_OP(__hadd_rn, "add.rn.bf16", "{.reg .b16 c;\n  mov.b16 c, 0x3f80U;\n  fma.rn.bf16 %0,%1,c,%2;}\n", +)
MYTRITON_BF16_OP(__hsub_rn, "sub.rn.bf16", "{.reg .b16 c;\n  mov.b16 c, 0xbf80U;\n  fma.rn.bf16 %0,%2,c,%1;}\n", -)
MYTRITON_BF16_OP(__hmul_rn, "mul.rn.bf16", "{.reg .b16 c;\n  mov.b16 c, 0x8000U;\n  fma.rn.bf16 %0,%1,%2,c;}\n", *)
#undef MYTRITON_BF16_OP
[[maybe_unused]] static __device__ __forceinline__ __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
#if __CUDA_ARCH__ >= 900
  __nv_bfloat16 old; asm volatile("{ atom.add.noftz.bf16 %0,[%1],%2; }\n" : "=h"(old.__x) : "l"(p), "h"(v.__x) : "memory");
  return old;
#else
  unsigned short* const bits = reinterpret_cast<unsigned short*>(p);
  unsigned short old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __hadd_rn(v, __ushort_as_bfloat16(assumed)).__x);
  } while (assumed != old);
  return __ushort_as_bfloat16(old);
#endif
}
""" + shuffles("__nv_bfloat16")
