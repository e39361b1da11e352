// Device conversions used by the tile codecs (tile_codec.cuh): the software reference of
// src/kernels/fp8.h / float_convert.h, or the GPU's conversion instructions where the chip has
// them and they give the same bits on every input that can reach them:
//   fp32 -> FP8 (E4M3/E5M2, RNE, saturating)   cvt.rn.satfinite.{e4m3,e5m2}x2.f32   sm_89+
//   FP8 -> fp32 (via the exact fp16 value)      cvt.rn.f16x2.{e4m3,e5m2}x2 + cvt.f32.f16  sm_89+
//   fp32 -> bf16 / fp16 (RNE, NaN -> 0x7FFF)    cvt.rn.{bf16x2,f16x2}.f32              sm_80+
//   fp16 -> fp32                                cvt.f32.f16                            sm_80+
//   NaN-propagating max                         max.NaN.f32                            sm_80+
// Every caller feeds the FP8 conversion non-NaN values only (floatToFp8SatNonNan's domain).
// tests/gpu/codec/test_convert_hw.cu compares each instruction with the software reference
// over all 2^32 (resp. 2^16, 2^8) inputs. Build with -DCOCCL_KERNELS_SOFT_CVT=1 (CMake option
// COCCL_KERNELS_SOFT_CVT) to use the software path everywhere.
//
// fp16 -> fp32 by the instruction quiets a signalling NaN (0x7C01 -> 0x7FC02000, the software
// path keeps 0x7F802000); no payload byte depends on a NaN's payload (NaN input selects the RAW
// code), so the codecs' bytes are the same either way.
#pragma once

#include <cstdint>

#include "kernels/float_convert.h"
#include "kernels/fp8.h"

#ifndef COCCL_KERNELS_SOFT_CVT
#define COCCL_KERNELS_SOFT_CVT 0
#endif

#if defined(__CUDA_ARCH__) && !COCCL_KERNELS_SOFT_CVT
#if __CUDA_ARCH__ >= 890
#define COCCL_KDEV_HW_FP8 1
#endif
#if __CUDA_ARCH__ >= 800
#define COCCL_KDEV_HW_CVT 1
#endif
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define COCCL_KDEV_NAN_MAX 1
#endif

#ifndef COCCL_KDEV_HW_FP8
#define COCCL_KDEV_HW_FP8 0
#endif
#ifndef COCCL_KDEV_HW_CVT
#define COCCL_KDEV_HW_CVT 0
#endif
#ifndef COCCL_KDEV_NAN_MAX
#define COCCL_KDEV_NAN_MAX 0
#endif

namespace coccl {
namespace kdev {

// ---- max of magnitudes, NaN-propagating -------------------------------------------------------

// max(a, |b|) for a >= +0 or NaN: NaN if either is NaN, else the larger (as kmath::maxAbsBits
// orders them: for non-negative floats the float and the bit order agree).
__device__ __forceinline__ float maxAbsNan(float a, float b) {
#if COCCL_KDEV_NAN_MAX
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(fabsf(b)));
  return r;
#else
  const int32_t x = static_cast<int32_t>(kmath::floatBits(a));
  const int32_t y = static_cast<int32_t>(kmath::absBits(b));
  return kmath::bitsFloat(static_cast<uint32_t>(x > y ? x : y));
#endif
}

// ---- input element -> fp32 ------------------------------------------------------------------

__device__ __forceinline__ float bf16BitsToF32(uint32_t h) {
  return kmath::bitsFloat(h << 16);
}

__device__ __forceinline__ float fp16BitsToF32(uint16_t h) {
#if COCCL_KDEV_HW_CVT
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return kmath::fp16ToFloat(h);
#endif
}

// ---- fp32 -> output element (two at a time, `lo` in bits 0..15) ---------------------------

__device__ __forceinline__ uint32_t f32x2ToBf16x2(float lo, float hi) {
#if COCCL_KDEV_HW_CVT
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(kmath::floatToBf16(lo)) |
         (static_cast<uint32_t>(kmath::floatToBf16(hi)) << 16);
#endif
}

__device__ __forceinline__ uint32_t f32x2ToFp16x2(float lo, float hi) {
#if COCCL_KDEV_HW_CVT
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(kmath::floatToFp16(lo)) |
         (static_cast<uint32_t>(kmath::floatToFp16(hi)) << 16);
#endif
}

__device__ __forceinline__ uint16_t f32ToBf16(float v) {
  return static_cast<uint16_t>(f32x2ToBf16x2(v, 0.0f) & 0xffffu);
}
__device__ __forceinline__ uint16_t f32ToFp16(float v) {
  return static_cast<uint16_t>(f32x2ToFp16x2(v, 0.0f) & 0xffffu);
}

// ---- FP8 ----------------------------------------------------------------------------------

// floatToFp8SatNonNan<F> of two non-NaN values: code(lo) in bits 0..7, code(hi) in 8..15.
template <class F>
__device__ __forceinline__ uint32_t f32x2ToFp8x2(float lo, float hi) {
#if COCCL_KDEV_HW_FP8
  uint16_t r;
  if constexpr (F::kMantBits == 3)
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(lo)) |
         (static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(hi)) << 8);
#endif
}

// Four non-NaN values -> four codes (a in bits 0..7, ..., d in bits 24..31).
template <class F>
__device__ __forceinline__ uint32_t f32x4ToFp8x4(float a, float b, float c, float d) {
#if COCCL_KDEV_HW_FP8
  uint32_t r;
  if constexpr (F::kMantBits == 3)
    asm("{\n\t.reg .b16 lo, hi;\n\t"
        "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n\t"
        "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n\t"
        "mov.b32 %0, {lo, hi};\n\t}"
        : "=r"(r)
        : "f"(a), "f"(b), "f"(c), "f"(d));
  else
    asm("{\n\t.reg .b16 lo, hi;\n\t"
        "cvt.rn.satfinite.e5m2x2.f32 lo, %2, %1;\n\t"
        "cvt.rn.satfinite.e5m2x2.f32 hi, %4, %3;\n\t"
        "mov.b32 %0, {lo, hi};\n\t}"
        : "=r"(r)
        : "f"(a), "f"(b), "f"(c), "f"(d));
  return r;
#else
  return static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(a)) |
         (static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(b)) << 8) |
         (static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(c)) << 16) |
         (static_cast<uint32_t>(kmath::floatToFp8SatNonNan<F>(d)) << 24);
#endif
}

// fp8ToFloat<F> of the codes in bits 0..7 (lo) and 8..15 (hi) of `pair`; equal to the
// software reference for every code except NaN codes, which give a NaN of another payload.
template <class F>
__device__ __forceinline__ void fp8x2ToF32(uint32_t pair, float& lo, float& hi) {
#if COCCL_KDEV_HW_FP8
  uint32_t h2;
  const uint16_t p = static_cast<uint16_t>(pair);
  if constexpr (F::kMantBits == 3)
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(p));
  else
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(p));
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(static_cast<uint16_t>(h2)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(static_cast<uint16_t>(h2 >> 16)));
#else
  lo = kmath::fp8ToFloat<F>(static_cast<uint8_t>(pair));
  hi = kmath::fp8ToFloat<F>(static_cast<uint8_t>(pair >> 8));
#endif
}

// fp8ToFloat<F> of the four codes of `w` (byte i -> o<i>); the high pair is converted from
// the register's upper half (no shift: F2FP reads .H1 directly).
template <class F>
__device__ __forceinline__ void fp8x4ToF32(uint32_t w, float& o0, float& o1, float& o2, float& o3) {
#if COCCL_KDEV_HW_FP8
  uint32_t lo, hi;
  if constexpr (F::kMantBits == 3)
    asm("{\n\t.reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, a;\n\tcvt.rn.f16x2.e4m3x2 %1, b;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
  else
    asm("{\n\t.reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
        "cvt.rn.f16x2.e5m2x2 %0, a;\n\tcvt.rn.f16x2.e5m2x2 %1, b;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
  asm("{\n\t.reg .f16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
      "cvt.f32.f16 %0, a;\n\tcvt.f32.f16 %1, b;\n\t}"
      : "=f"(o0), "=f"(o1)
      : "r"(lo));
  asm("{\n\t.reg .f16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
      "cvt.f32.f16 %0, a;\n\tcvt.f32.f16 %1, b;\n\t}"
      : "=f"(o2), "=f"(o3)
      : "r"(hi));
#else
  o0 = kmath::fp8ToFloat<F>(static_cast<uint8_t>(w));
  o1 = kmath::fp8ToFloat<F>(static_cast<uint8_t>(w >> 8));
  o2 = kmath::fp8ToFloat<F>(static_cast<uint8_t>(w >> 16));
  o3 = kmath::fp8ToFloat<F>(static_cast<uint8_t>(w >> 24));
#endif
}

// ---- int8 codes as biased floats ---------------------------------------------------------------

// The int8 code s of byte i of w as the fp32 value s + kInt8Bias, exactly (one byte permute an
// element, no conversion instruction): xw = w ^ 0x80808080 holds u = s + 128 in [0, 255]; the
// word [0x00, u, 0x00, 0x47] is the fp32 2^15 + u. All such values and their sums over up to
// 256 elements are integers below 2^24, so a Hadamard transform of biased values is exact.
constexpr float kInt8Bias = 32896.0f;  // 2^15 + 128
constexpr uint32_t kInt8Flip = 0x80808080u;

template <int I>
__device__ __forceinline__ float int8BiasedAt(uint32_t xw) {
  return kmath::bitsFloat(__byte_perm(xw, 0x47000000u, 0x7504u | (I << 4)));
}

// ---- byte packing ---------------------------------------------------------------------------

// Bytes 0 of a, b, c, d -> one word (a in bits 0..7).
__device__ __forceinline__ uint32_t packBytes4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}

// Low halves of two words -> one word (lo in bits 0..15).
__device__ __forceinline__ uint32_t packHalves(uint32_t lo, uint32_t hi) {
  return __byte_perm(lo, hi, 0x5410);
}

}  // namespace kdev
}  // namespace coccl
