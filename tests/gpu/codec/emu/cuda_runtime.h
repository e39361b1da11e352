// A stand-in for <cuda_runtime.h> that lets g++ compile the device headers of src/kernels/cuda/
// (tile_codec.cuh, chunk_codec.cuh, warp_codec.cuh) as host code, with each warp run as 32
// cooperative lanes (emu.cc): shuffles and votes exchange values between the lanes of the mask
// named, and a lane that reaches a shuffle its mask partners never reach is reported (the
// hardware would hang or read garbage). Only what those headers use is here; the conversion
// instructions are not (without __CUDA_ARCH__ the headers take the software reference path).
#pragma once

#include <cmath>
#include <cstdint>

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __grid_constant__

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct float4 {
  float x, y, z, w;
};
inline uint2 make_uint2(unsigned x, unsigned y) {
  return uint2{x, y};
}
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}
inline float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}

namespace cuda_emu {

struct Dim3 {
  unsigned x, y, z;
};
// threadIdx of the lane running now (lane = x % 32).
const Dim3& currentThreadIdx();

uint64_t exchange(int kind, unsigned mask, uint64_t value, int arg);
enum { kShflXor = 0, kAll = 1, kAny = 2 };

// Runs body() as one warp of 32 lanes whose threadIdx.x is 32 * warpInBlock + lane.
// Returns false (with a message in *error) on a shuffle no partner reached.
bool runWarp(int warpInBlock, void (*body)(void*), void* ctx, const char** error);

// Convenience: runs f() in every lane of one warp.
template <class F>
bool runWarp(int warpInBlock, F& f, const char** error) {
  return runWarp(
      warpInBlock, [](void* p) { (*static_cast<F*>(p))(); }, &f, error);
}

}  // namespace cuda_emu

#define threadIdx (::cuda_emu::currentThreadIdx())

inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned sel = (s >> (4 * i)) & 7u;
    r |= static_cast<unsigned>((v >> (8 * sel)) & 0xffu) << (8 * i);
  }
  return r;
}

inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}

inline float __shfl_xor_sync(unsigned mask, float v, int laneMask, int = 32) {
  uint32_t u;
  __builtin_memcpy(&u, &v, 4);
  u = static_cast<uint32_t>(cuda_emu::exchange(cuda_emu::kShflXor, mask, u, laneMask));
  float r;
  __builtin_memcpy(&r, &u, 4);
  return r;
}
inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int laneMask, int = 32) {
  return static_cast<unsigned>(cuda_emu::exchange(cuda_emu::kShflXor, mask, v, laneMask));
}
inline int __all_sync(unsigned mask, int pred) {
  return static_cast<int>(cuda_emu::exchange(cuda_emu::kAll, mask, pred != 0, 0));
}
inline int __any_sync(unsigned mask, int pred) {
  return static_cast<int>(cuda_emu::exchange(cuda_emu::kAny, mask, pred != 0, 0));
}
// A warp barrier: every lane of the mask arrives before any goes on (lanes exchange values only
// at such points, so a lane's earlier stores are seen by every lane after it).
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)cuda_emu::exchange(cuda_emu::kAll, mask, 1, 0);
}
