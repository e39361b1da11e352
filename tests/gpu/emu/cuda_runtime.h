// A stand-in for <cuda_runtime.h> that lets g++ compile the device code of the collectives
// (src/collectives/cuda_ipc/*.cuh, with the codec headers of src/kernels/cuda) as host code: a
// thread block is a set of cooperative lanes (coroutines on one OS thread, block_emu.cc) with
// __syncthreads as a block barrier and shuffles / __syncwarp exchanged between the lanes of a
// warp; __shared__ variables are per OS thread (one OS thread per block). Ranks run on their own
// OS threads, so flags, waits and staging are exercised with real concurrency. Only what those
// headers use is here; without __CUDA_ARCH__ they take their portable paths. Used by
// test_device_emulated (the collective kernels) and tests/gpu/codec's test_codec_emulated (the
// chunk codec functions, one block of 32 lanes a warp).
#pragma once

#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#define COCCL_DEVICE_EMULATION 1
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static thread_local

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

using cudaError_t = int;
constexpr cudaError_t cudaSuccess = 0;
using cudaStream_t = struct CUstream_st*;

namespace block_emu {

struct Dim3 {
  unsigned x, y, z;
};
extern thread_local Dim3 gThreadIdx, gBlockIdx, gBlockDim, gGridDim;

enum Kind { kShflXor = 0, kAll = 1, kAny = 2, kSyncWarp = 3, kBallot = 4 };
// A warp-level exchange among the lanes of `mask` (bits = lanes of the caller's warp).
uint64_t exchange(int kind, unsigned mask, uint64_t value, int arg);
// __syncthreads: every live lane of the block.
void barrier();
// A spinning lane lets the other lanes of its block run (the GPU schedules diverged lanes
// independently), then the other OS threads.
void yieldLane();

// Runs body() on the calling OS thread as block `block` of `blocks`, with `threads` lanes.
// False (with *error) when lanes deadlock at barriers / shuffles.
bool runBlock(unsigned block, unsigned blocks, unsigned threads, const std::function<void()>& body,
              std::string* error);

}  // namespace block_emu

#define threadIdx (::block_emu::gThreadIdx)
#define blockIdx (::block_emu::gBlockIdx)
#define blockDim (::block_emu::gBlockDim)
#define gridDim (::block_emu::gGridDim)

inline void __syncthreads() { block_emu::barrier(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  block_emu::exchange(block_emu::kSyncWarp, mask, 0, 0);
}
inline void coccl_emu_yield() { block_emu::yieldLane(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline float __shfl_xor_sync(unsigned mask, float v, int laneMask, int = 32) {
  uint32_t u;
  __builtin_memcpy(&u, &v, 4);
  u = static_cast<uint32_t>(block_emu::exchange(block_emu::kShflXor, mask, u, laneMask));
  float r;
  __builtin_memcpy(&r, &u, 4);
  return r;
}
inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int laneMask, int = 32) {
  return static_cast<unsigned>(block_emu::exchange(block_emu::kShflXor, mask, v, laneMask));
}
inline int __shfl_xor_sync(unsigned mask, int v, int laneMask, int = 32) {
  return static_cast<int>(block_emu::exchange(block_emu::kShflXor, mask,
                                              static_cast<uint32_t>(v), laneMask));
}
inline int __all_sync(unsigned mask, int pred) {
  return static_cast<int>(block_emu::exchange(block_emu::kAll, mask, pred != 0, 0));
}
inline int __any_sync(unsigned mask, int pred) {
  return static_cast<int>(block_emu::exchange(block_emu::kAny, mask, pred != 0, 0));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return static_cast<unsigned>(block_emu::exchange(block_emu::kBallot, mask, pred != 0, 0));
}

inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned sel = (s >> (4 * i)) & 7u;
    r |= static_cast<unsigned>((v >> (8 * sel)) & 0xffu) << (8 * i);
  }
  return r;
}
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }

inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned val) {
  __atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
