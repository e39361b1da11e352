// Host/device portability (COCCL_HD, COCCL_HD_CONSTEXPR, exact-rounding float helpers) for the
// block math shared by the host codecs and the CUDA kernels.
//
// Everything that decides payload bytes (src/kernels/*.h and the codecs' src/codecs/<codec>/
// *_block.h) is plain scalar code with a fixed floating-point evaluation order, so a CUDA kernel
// reproduces the host bytes exactly provided that it
//   - is built without fast-math (IEEE division and sqrt: nvcc's defaults -prec-div=true,
//     -prec-sqrt=true, -ftz=false), and
//   - never contracts a*b+c into an FMA where these headers write a separate multiply and add
//     (host code is compiled with -ffp-contract=off; device code uses __fmul_rn/__fadd_rn or
//     the helpers below, which are exact-rounding on both sides).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define COCCL_HD __host__ __device__ __forceinline__
#elif defined(__GNUC__)
// forced so that per-element helpers inline into the host block loops (and vectorize there)
#define COCCL_HD inline __attribute__((always_inline))
#else
#define COCCL_HD inline
#endif
// constexpr functions callable from host and device code (nvcc runs without
// --expt-relaxed-constexpr, so device code may only call __host__ __device__ constexpr).
#if defined(__CUDACC__)
#define COCCL_HD_CONSTEXPR __host__ __device__ constexpr
#else
#define COCCL_HD_CONSTEXPR constexpr
#endif

namespace coccl {
namespace kmath {

COCCL_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

COCCL_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

// Round-to-nearest-even multiply and add that never fuse (the device spells the intrinsics;
// the host relies on -ffp-contract=off).
COCCL_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

COCCL_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

COCCL_HD float subRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// IEEE (correctly rounded) division and square root.
COCCL_HD float divRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

COCCL_HD float sqrtRn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);
#endif
}

// min of values below 2^31 (compared as int32: SSE2 has a signed compare only).
COCCL_HD uint32_t minU31(uint32_t a, uint32_t b) {
  int32_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
  return static_cast<uint32_t>(x < y ? x : y);
}

// |x| as bits (sign cleared). NaN > 0x7f800000, Inf == 0x7f800000.
COCCL_HD uint32_t absBits(float x) {
  return floatBits(x) & 0x7fffffffu;
}

COCCL_HD bool isFiniteBits(uint32_t absbits) {
  return absbits < 0x7f800000u;
}

// max_i absBits(v[i]) (NaN > Inf > finite; all below 2^31, so an int32 max; the reduction
// variable stays int32 so that host compilers vectorize it). finiteOnly: non-finite count as 0.
template <int G, bool finiteOnly = false>
COCCL_HD uint32_t maxAbsBits(const float* v) {
  int32_t m = 0;
  for (int i = 0; i < G; ++i) {
    int32_t a = static_cast<int32_t>(absBits(v[i]));
    if (finiteOnly) a = a < 0x7f800000 ? a : 0;
    m = a > m ? a : m;
  }
  return static_cast<uint32_t>(m);
}

// Largest power of two <= a for a finite a > 0 (what frexpf's exponent gives: a = f * 2^e with
// f in [0.5, 1) -> 2^(e-1)). For a normal a this just clears the mantissa bits; a subnormal a
// keeps only its top set bit.
COCCL_HD float floorPow2(float a) {
  uint32_t u = floatBits(a) & 0x7fffffffu;
  if (u >= 0x00800000u) return bitsFloat(u & 0x7f800000u);
  // subnormal: keep the highest set bit
  uint32_t b = u;
  b |= b >> 1;
  b |= b >> 2;
  b |= b >> 4;
  b |= b >> 8;
  b |= b >> 16;
  return bitsFloat(b - (b >> 1));
}

// 2^e as a float for e in [-126, 127].
COCCL_HD float pow2f(int e) {
  return bitsFloat(static_cast<uint32_t>(e + 127) << 23);
}

// log2 of a power-of-two integer.
COCCL_HD int log2Int(uint32_t g) {
  int l = 0;
  while ((1u << l) < g) ++l;
  return l;
}

}  // namespace kmath
}  // namespace coccl
