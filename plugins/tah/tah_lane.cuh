// tah's lane primitives for the quad kernels (included by tah_device.cu, inside its anonymous
// namespace): lane and shuffle helpers, a tile's row, the 16-bit conversions that give
// tah_math.h's bits, and the element-by-element loads and stores of a message's end or an
// unaligned buffer (out of line: the main loops' code must stay small).
#pragma once

__device__ __forceinline__ int laneId() {
  return static_cast<int>(threadIdx.x & 31u);
}
__device__ __forceinline__ size_t shfl64(size_t v, int src) {
  const unsigned lo = __shfl_sync(0xffffffffu, static_cast<unsigned>(v), src);
  const unsigned hi = __shfl_sync(0xffffffffu, static_cast<unsigned>(v >> 32), src);
  return static_cast<size_t>(hi) << 32 | lo;
}
// Row and tile-in-row of a tile: 32-bit division while the tile numbers fit (every message
// below 2^38 elements), the 64-bit one beyond.
__device__ __forceinline__ void tileRT(const Geo& g, size_t tile, size_t* r, size_t* t) {
  if (g.L.tiles <= 0xffffffffu) {
    const uint32_t q = static_cast<uint32_t>(tile) / g.T;
    *r = q;
    *t = static_cast<uint32_t>(tile) - q * g.T;
  } else {
    *r = tile / g.T;
    *t = tile % g.T;
  }
}

// ---- 16-bit conversions: the hardware's where they give tah_math.h's bits ------------------

// A 16-byte chunk of 8 16-bit values as fp32 (exact; the hardware's f16 conversion, whose NaN
// bits may differ from tah_f16_to_f32's).
template <int Dt>
__device__ __forceinline__ void unpack16(const uint4& r, float* x) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
  for (int k = 0; k < 8; ++k) {
    const uint16_t h = static_cast<uint16_t>(w[k / 2] >> (16 * (k & 1)));
#if defined(__CUDA_ARCH__)
    if (Dt == TAH_DT_F16) {
      asm("cvt.f32.f16 %0, %1;" : "=f"(x[k]) : "h"(h));
      continue;
    }
#endif
    x[k] = Dt == TAH_DT_BF16 ? tah_bf16_to_f32(h) : tah_f16_to_f32(h);
  }
}
__device__ __noinline__ uint32_t packExact(int dtype, float a, float b) {
  const uint16_t x = dtype == TAH_DT_F16 ? tah_f32_to_f16(a) : tah_f32_to_bf16(a);
  const uint16_t y = dtype == TAH_DT_F16 ? tah_f32_to_f16(b) : tah_f32_to_bf16(b);
  return static_cast<uint32_t>(x) | static_cast<uint32_t>(y) << 16;
}

// Two fp32 values as a packed pair (a low) of dtype: round to nearest even, as tah_f32_to_f16 /
// tah_f32_to_bf16 do for every value but NaN (whose bits differ: exact = true where a NaN can
// occur).
__device__ __forceinline__ uint32_t pack2(int dtype, float a, float b, bool exact) {
#if defined(__CUDA_ARCH__)
  if (!exact) {
    uint32_t r;
    if (dtype == TAH_DT_F16)
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    else
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
  }
#else
  (void)exact;
#endif
  return packExact(dtype, a, b);
}

// Elements e .. e+7 (below count) of a 16-bit buffer as a raw 16-byte chunk, 0 past count.
__device__ __noinline__ uint4 raw16Scalar(const uint16_t* h, size_t count, size_t e) {
  uint32_t w[4] = {0, 0, 0, 0};
  for (int k = 0; k < 8; ++k)
    if (e + k < count) w[k / 2] |= static_cast<uint32_t>(h[e + k]) << (16 * (k & 1));
  return make_uint4(w[0], w[1], w[2], w[3]);
}
// Elements e .. e+n-1 (below count) of a typed buffer = s[0, n) (times scale when != 1).
__device__ __noinline__ void storeScalar(void* out, int dtype, size_t count, size_t e, int n,
                                         float scale, const float* s) {
  for (int k = 0; k < n; ++k)
    if (e + k < count) tah_store(out, dtype, e + k, scale != 1.0f ? TAH_MUL(s[k], scale) : s[k]);
}
