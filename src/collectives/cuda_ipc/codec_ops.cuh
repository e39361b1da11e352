// The codec loops of src/kernels/cuda (tile_loops.cuh's encode / decode, reduce_staged.cuh's
// owner step, each staged through shared memory or direct) as the collective kernels call them
// on a block's part of a round: the codec
// family and block size G are template parameters of the whole kernel (one kernel per family,
// G and element type, picked on the host), so each kernel inlines exactly one codec. (A single
// kernel with a run-time switch inlining all of them takes ptxas tens of GB and many minutes;
// out-of-line codec functions spill.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "collectives/cuda_ipc/dev_types.h"
#include "kernels/codec_desc.h"
#include "kernels/cuda/chunk_codec.cuh"
#include "kernels/cuda/reduce_staged.cuh"

namespace coccl {
namespace dev {

#if defined(COCCL_DEVICE_EMULATION)
constexpr unsigned kEmuStageBytes = 1u << 17;  // an emulated block's rings (2 warps of 64 KiB)
#endif

// Every warp of the block, together.
__device__ __forceinline__ kdev::WarpSet blockWarps() {
  return kdev::WarpSet{static_cast<int>(threadIdx.x >> 5), static_cast<int>(blockDim.x >> 5)};
}

// This warp's `bytes` of the kernel's dynamic shared memory (16-byte aligned). The CPU
// emulation (tests/gpu/emu: a block is one OS thread) has a buffer per block instead.
__device__ __forceinline__ uint8_t* warpStageOf(int bytes) {
#if defined(COCCL_DEVICE_EMULATION)
  alignas(16) static thread_local uint8_t emu[kEmuStageBytes];
  return emu + (threadIdx.x >> 5) * static_cast<unsigned>(bytes);
#else
  extern __shared__ uint4 ipcStageSmem[];
  return reinterpret_cast<uint8_t*>(ipcStageSmem) +
         (threadIdx.x >> 5) * static_cast<unsigned>(bytes);
#endif
}

// The phases run the codec kernels' staged loops (tile_loops.cuh, reduce_staged.cuh: a warp's
// next tile copied into its ring of shared memory by cp.async while this one is coded) on the
// block's warps when `stage` (warpStage()) is set, else the direct loops inline (the code these
// kernels ran before the rings); the bytes are the same either way. The rings are asked for by
// COCCL_DEVICE_CODEC_RINGS=1 (ReduceArgs::staged).
template <class Fam, int G, class Tag>
struct CodecOps {
  using T = typename Tag::T;
  using ReduceShape = typename kdev::TileRun<G, sizeof(T), COCCL_REDUCE_TILE_ELEMS>::Shape;
  using CodeShape = kdev::TileShapeFor<Fam, G, Tag>;
  // shared memory a warp: the largest of the three rings (the phases take turns)
  static constexpr int kEncodeBytes = kdev::EncodeStage<CodeShape, Tag>::kBytes;
  static constexpr int kDecodeBytes = kdev::DecodeStage<CodeShape>::kBytes;
  static constexpr int kReduceBytes = kdev::ReduceStage<ReduceShape, Tag>::kBytes;
  static constexpr int kStageBytes = kEncodeBytes > kDecodeBytes
                                         ? (kEncodeBytes > kReduceBytes ? kEncodeBytes
                                                                        : kReduceBytes)
                                         : (kDecodeBytes > kReduceBytes ? kDecodeBytes
                                                                        : kReduceBytes);
  static constexpr int kSmemBytes = kStageBytes * (kThreads / 32);
  static_assert(kStageBytes % 16 == 0, "16-byte aligned rings");
#if defined(COCCL_DEVICE_EMULATION)
  static_assert(2 * kStageBytes <= static_cast<int>(kEmuStageBytes), "an emulated block's rings");
#endif

  // this warp's ring when the kernel has its shared memory (staged), else null
  __device__ __forceinline__ static uint8_t* warpStage(bool staged) {
    return staged ? warpStageOf(kStageBytes) : nullptr;
  }
  // payload (codecPayloadBytes(d, n) bytes) = encode(in[0, n))
  __device__ __forceinline__ static void encode(const CodecDesc& d, const T* in, uint64_t n,
                                                uint8_t* payload, uint8_t* stage) {
    const kdev::WarpSet ws = blockWarps();
    if (n == 0) return;
    if (stage)
      kdev::encodeTilesStaged<Fam, G, Tag>(d, in, n, payload, ws.warp, ws.nwarps, stage);
    else
      kdev::encodeChunkT<Fam, G, Tag>(d, in, n, payload, ws);
  }
  __device__ __forceinline__ static void decode(const CodecDesc& d, const uint8_t* payload,
                                                uint64_t n, T* out, uint8_t* stage) {
    const kdev::WarpSet ws = blockWarps();
    if (n == 0) return;
    if (stage)
      kdev::decodeTilesStaged<Fam, G, Tag>(d, payload, n, out, ws.warp, ws.nwarps, stage);
    else
      kdev::decodeChunkT<Fam, G, Tag>(d, payload, n, out, ws);
  }
  // acc = sum over r in rank order of (r == self ? selfIn : decode(ins[r])), times scale; then
  // outPayload: encode(acc) there and userOut = decode of it; else userOut = acc rounded.
  __device__ __forceinline__ static void reduce(const CodecDesc& d, const uint8_t* const* ins,
                                                int p, int self, const T* selfIn, uint64_t n,
                                                float scale, uint8_t* outPayload, T* userOut,
                                                uint8_t* stage) {
    const kdev::WarpSet ws = blockWarps();
    if (n == 0) return;
    if (stage)
      kdev::reduceTilesStaged<Fam, G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut,
                                           ws.warp, ws.nwarps, stage);
    else
      kdev::reduceChunkT<Fam, G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut, ws);
  }
};

}  // namespace dev
}  // namespace coccl
