// Grid-wide codec kernels (thin wrappers of chunk_codec.cuh's tile functions) and the host-side
// launch plumbing shared by the launcher sources (codec_*.cu). Internal to coccl_kernels (and
// the unfused comparison of perf/kernel_bench/unfused, built on it).
//
// Launch shape: 256 threads a CTA; a warp takes 32/L codec blocks an iteration (32 elements a
// lane: 1024 elements a warp) and strides over the chunk; the grid is at most one resident
// wave (SMs x CTAs per SM from the occupancy calculator), fewer CTAs for small counts.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/chunk_codec.cuh"
#include "kernels/cuda/reduce_staged.cuh"
#include "kernels/device_codec.h"

namespace coccl {
namespace kernels {
namespace detail {

constexpr int kThreads = 256;
constexpr int kWarpsPerCta = kThreads / 32;
// Resident CTAs a multiprocessor the register allocation must allow (__launch_bounds__):
// 3 x 256 threads (80 registers, 24 warps an SM) for decode-accumulate (below), 2 (128
// registers) for decode-reduce-encode.
#ifndef COCCL_KERNELS_REDUCE_MIN_CTAS
#define COCCL_KERNELS_REDUCE_MIN_CTAS 2
#endif
// The staged encode / decode kernels (tile_loops.cuh: shared-memory staging keeps the loads in
// flight, so occupancy only has to cover the arithmetic latencies): 128-thread CTAs; encode 5 a
// multiprocessor (20 warps, <= 96 registers: its tile math without spills), decode 6 (24 warps,
// <= 80 registers).
#ifndef COCCL_KERNELS_STAGED_THREADS
#define COCCL_KERNELS_STAGED_THREADS 128
#endif
#ifndef COCCL_KERNELS_ENCODE_MIN_CTAS
#define COCCL_KERNELS_ENCODE_MIN_CTAS 5
#endif
#ifndef COCCL_KERNELS_DECODE_MIN_CTAS
#define COCCL_KERNELS_DECODE_MIN_CTAS 6
#endif
constexpr int kStagedThreads = COCCL_KERNELS_STAGED_THREADS;
constexpr int kStagedWarps = kStagedThreads / 32;
constexpr int kEncodeMinCtas = COCCL_KERNELS_ENCODE_MIN_CTAS;
constexpr int kDecodeMinCtas = COCCL_KERNELS_DECODE_MIN_CTAS;
constexpr int kReduceMinCtas = COCCL_KERNELS_REDUCE_MIN_CTAS;

struct EncodeArgs {
  CodecDesc d;
  const void* in;
  size_t n;
  uint8_t* out;
};

struct DecodeArgs {
  CodecDesc d;
  const uint8_t* in;
  size_t n;
  void* out;
};

// reduceChunkT's arguments; ins[] by value (read through a __grid_constant__ parameter).
struct ReduceArgs {
  CodecDesc d;
  const uint8_t* ins[kMaxReduceInputs + 1];
  int p;
  int self;
  const void* selfIn;
  size_t n;
  float scale;
  uint8_t* out;
  void* userOut;
  bool staged;  // reduceKernel: launched with reduceSmemBytes() of shared memory, staging
};

__device__ __forceinline__ kdev::WarpSet gridWarps() {
  return kdev::WarpSet{static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5),
                       static_cast<int>((gridDim.x * blockDim.x) >> 5)};
}

// Shared memory of the staged encode / decode kernels: kStagedWarps rings of tile buffers.
template <int G, class Tag>
using TileShapeOf = typename kdev::TileRun<G, sizeof(typename Tag::T)>::Shape;
template <int G, class Tag>
__host__ __device__ constexpr int encodeSmemBytes() {
  return kStagedWarps * kdev::EncodeStage<TileShapeOf<G, Tag>, Tag>::kBytes;
}
template <int G, class Tag>
__host__ __device__ constexpr int decodeSmemBytes() {
  return kStagedWarps * kdev::DecodeStage<TileShapeOf<G, Tag>>::kBytes;
}

__device__ __forceinline__ uint8_t* warpStage(int bytesPerWarp) {
  extern __shared__ uint4 kernelSmem[];
  return reinterpret_cast<uint8_t*>(kernelSmem) + (threadIdx.x >> 5) * bytesPerWarp;
}

template <class Fam, int G, class Tag>
__global__ void __launch_bounds__(kStagedThreads, kEncodeMinCtas)
    encodeKernel(const EncodeArgs a) {
  const kdev::WarpSet ws = gridWarps();
  kdev::encodeTilesStaged<Fam, G, Tag>(
      a.d, static_cast<const typename Tag::T*>(a.in), a.n, a.out, ws.warp, ws.nwarps,
      warpStage(encodeSmemBytes<G, Tag>() / kStagedWarps));
}

template <class Fam, int G, class Tag>
__global__ void __launch_bounds__(kStagedThreads, kDecodeMinCtas)
    decodeKernel(const DecodeArgs a) {
  const kdev::WarpSet ws = gridWarps();
  kdev::decodeTilesStaged<Fam, G, Tag>(a.d, a.in, a.n, static_cast<typename Tag::T*>(a.out),
                                       ws.warp, ws.nwarps,
                                       warpStage(decodeSmemBytes<G, Tag>() / kStagedWarps));
}

// Shared memory of the staged owner step (reduce_staged.cuh): kWarpsPerCta rings of slots
// (75-95 KiB). The launcher stages only where kReduceMinCtas such CTAs fit a multiprocessor
// (sm_90: yes; sm_80 fp32, sm_86/89: the direct loop, which keeps the occupancy the registers
// allow); COCCL_KERNELS_REDUCE_STAGED=0 never stages (side-by-side timings).
#ifndef COCCL_KERNELS_REDUCE_STAGED
#define COCCL_KERNELS_REDUCE_STAGED 1
#endif
template <int G, class Tag>
__host__ __device__ constexpr int reduceSmemBytes() {
  using S = typename kdev::TileRun<G, sizeof(typename Tag::T), COCCL_REDUCE_TILE_ELEMS>::Shape;
  return kWarpsPerCta * kdev::ReduceStage<S, Tag>::kBytes;
}

template <class Fam, int G, class Tag>
__global__ void __launch_bounds__(kThreads, kReduceMinCtas)
    reduceKernel(const __grid_constant__ ReduceArgs a) {
  const kdev::WarpSet ws = gridWarps();
  kdev::reduceTilesStaged<Fam, G, Tag>(
      a.d, a.ins, a.p, a.self, static_cast<const typename Tag::T*>(a.selfIn), a.n, a.scale, a.out,
      static_cast<typename Tag::T*>(a.userOut), ws.warp, ws.nwarps,
      a.staged ? warpStage(reduceSmemBytes<G, Tag>() / kWarpsPerCta) : nullptr);
}

// decodeAccumulate: reduceChunkT without the encode, fp32 accumulator.
#ifndef COCCL_KERNELS_ACCUMULATE_MIN_CTAS
#define COCCL_KERNELS_ACCUMULATE_MIN_CTAS 3
#endif
template <class Fam, int G>
__global__ void __launch_bounds__(kThreads, COCCL_KERNELS_ACCUMULATE_MIN_CTAS)
    accumulateKernel(const __grid_constant__ ReduceArgs a) {
  kdev::reduceChunkT<Fam, G, kdev::Fp32Tag, COCCL_ACCUMULATE_TILE_ELEMS, false>(
      a.d, a.ins, a.p, a.self, static_cast<const float*>(a.selfIn), a.n, a.scale, nullptr,
      static_cast<float*>(a.userOut), gridWarps());
}

// ---- host side ----------------------------------------------------------------------------------

// Throws Error(cocclUnhandledCudaError) naming `what` if e is not cudaSuccess.
void checkCuda(cudaError_t e, const char* what);
// The current device, as an index of the per-device caches below (0..kMaxDevices-1).
constexpr int kMaxDevices = 64;
int currentDevice();
// Multiprocessors of the current device (cached per device).
int smCount();
// Whether minCtas CTAs, each with smemBytes of dynamic shared memory, fit one multiprocessor of
// the current device (its limits cached per device).
bool smemFits(int smemBytes, int minCtas);

// Launches Kernel on `stream` for `warps` warps of work: Threads-thread CTAs with smemBytes of
// dynamic shared memory (a constant of the kernel on a given device), at most one resident wave
// (CTAs a multiprocessor from the occupancy calculator, cached per kernel and device; the
// opt-in above 48 KiB is a per-device attribute, set with it).
template <auto Kernel, int Threads = kThreads, class Args>
void launch(const Args& args, size_t warps, cudaStream_t stream, const char* what,
            int smemBytes = 0) {
  if (warps == 0) return;
  constexpr int kWarps = Threads / 32;
  static std::atomic<int> perSm[kMaxDevices];
  const int dev = currentDevice();
  int resident = perSm[dev].load(std::memory_order_relaxed);
  if (resident == 0) {
    if (smemBytes > 48 * 1024)
      checkCuda(cudaFuncSetAttribute(reinterpret_cast<const void*>(Kernel),
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes),
                what);
    checkCuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                  &resident, reinterpret_cast<const void*>(Kernel), Threads,
                  static_cast<size_t>(smemBytes)),
              what);
    resident = resident > 0 ? resident : 1;
    perSm[dev].store(resident, std::memory_order_relaxed);
  }
  const size_t want = (warps + kWarps - 1) / kWarps;
  const size_t cap = static_cast<size_t>(smCount()) * static_cast<size_t>(resident);
  const dim3 grid(static_cast<unsigned>(want < cap ? want : cap));
  void* argv[] = {const_cast<Args*>(&args)};
  checkCuda(cudaLaunchKernel(reinterpret_cast<const void*>(Kernel), grid, dim3(Threads), argv,
                             static_cast<size_t>(smemBytes), stream),
            what);
}

// Warps covering the nb blocks of a chunk in one iteration each (Elems: the kernel's lane
// elements, COCCL_REDUCE_TILE_ELEMS for reduceKernel).
template <int G, class Tag, int Elems = COCCL_TILE_ELEMS>
size_t warpsFor(size_t nb) {
  constexpr int kPerWarp = 32 / kdev::TileRun<G, sizeof(typename Tag::T), Elems>::Shape::kL;
  return (nb + kPerWarp - 1) / kPerWarp;
}

// ---- compile-time dispatch of the run-time codec / block size / dtype -------------------------

template <int G>
using GTag = std::integral_constant<int, G>;

// fn(Family{}) with the tile family of d (the codec list; nothing for None).
template <class Fn>
void dispatchFamily(const CodecDesc& d, Fn&& fn) {
  kdev::dispatchFamily(d, fn);
}

template <class Fn>
void dispatchG(int g, Fn&& fn) {
  switch (g) {
    case 32:
      fn(GTag<32>{});
      break;
    case 64:
      fn(GTag<64>{});
      break;
    case 128:
      fn(GTag<128>{});
      break;
    case 256:
      fn(GTag<256>{});
      break;
    default:
      fn(GTag<512>{});
      break;
  }
}

template <class Fn>
void dispatchTag(cocclDataType_t dt, Fn&& fn) {
  switch (dt) {
    case cocclFloat16:
      fn(kdev::Fp16Tag{});
      break;
    case cocclBfloat16:
      fn(kdev::Bf16Tag{});
      break;
    default:
      fn(kdev::Fp32Tag{});
      break;
  }
}

// Argument checks shared by the launchers (throw cocclInvalidArgument).
void checkDesc(const CodecDesc& d, const char* what);
void checkCodecType(const CodecDesc& d, cocclDataType_t dt, const char* what);
void checkPtr(const void* p, const char* name, const char* what);
// p and self in range (no pointer is read: valid for count = 0).
void checkInputCount(int p, int self, const char* what);
// checkInputCount, then every input pointer but ins[self] non-null.
void checkInputs(const void* const* ins, int p, int self, const char* what);

}  // namespace detail
}  // namespace kernels
}  // namespace coccl
