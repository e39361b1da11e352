// The chunk codec functions of src/kernels/cuda/chunk_codec.cuh as the collective kernels call
// them: one out-of-line function per (codec block size G, element type), selected at run time.
// Keeping each one out of line keeps ptxas time and memory reasonable (fully inlined, the
// 3 types x 5 block sizes x 3 operations of one kernel take ptxas tens of GB and many minutes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/codec_desc.h"
#include "kernels/cuda/chunk_codec.cuh"

namespace coccl {
namespace dev {

__device__ __forceinline__ kdev::WarpSet blockWarps() {
  return kdev::WarpSet{static_cast<int>(threadIdx.x >> 5), static_cast<int>(blockDim.x >> 5)};
}

template <int G, class Tag>
__device__ __noinline__ void encodeG(const CodecDesc d, const typename Tag::T* in, uint64_t n,
                                     uint8_t* payload) {
  kdev::encodeChunkG<G, Tag>(d, in, n, payload, blockWarps());
}

template <int G, class Tag>
__device__ __noinline__ void decodeG(const CodecDesc d, const uint8_t* payload, uint64_t n,
                                     typename Tag::T* out) {
  kdev::decodeChunkG<G, Tag>(d, payload, n, out, blockWarps());
}

template <int G, class Tag>
__device__ __noinline__ void reduceG(const CodecDesc d, const uint8_t* const* ins, int p, int self,
                                     const typename Tag::T* selfIn, uint64_t n, float scale,
                                     uint8_t* outPayload, typename Tag::T* userOut) {
  kdev::reduceChunkG<G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut, blockWarps());
}

#define COCCL_DEV_SWITCH_G(d, CALL)                    \
  switch ((d).block) {                                 \
    case 32: { constexpr int kG = 32; CALL; } break;   \
    case 64: { constexpr int kG = 64; CALL; } break;   \
    case 128: { constexpr int kG = 128; CALL; } break; \
    case 256: { constexpr int kG = 256; CALL; } break; \
    case 512: { constexpr int kG = 512; CALL; } break; \
    default: break;                                    \
  }

// Block-wide: encode n elements of `in` into `payload` (codecPayloadBytes(d, n) bytes).
template <class Tag>
__device__ __forceinline__ void encodePart(const CodecDesc& d, const typename Tag::T* in,
                                           uint64_t n, uint8_t* payload) {
  if (n) COCCL_DEV_SWITCH_G(d, (encodeG<kG, Tag>(d, in, n, payload)));
}

template <class Tag>
__device__ __forceinline__ void decodePart(const CodecDesc& d, const uint8_t* payload, uint64_t n,
                                           typename Tag::T* out) {
  if (n) COCCL_DEV_SWITCH_G(d, (decodeG<kG, Tag>(d, payload, n, out)));
}

template <class Tag>
__device__ __forceinline__ void reducePart(const CodecDesc& d, const uint8_t* const* ins, int p,
                                           int self, const typename Tag::T* selfIn, uint64_t n,
                                           float scale, uint8_t* outPayload,
                                           typename Tag::T* userOut) {
  if (n)
    COCCL_DEV_SWITCH_G(d, (reduceG<kG, Tag>(d, ins, p, self, selfIn, n, scale, outPayload,
                                            userOut)));
}

}  // namespace dev
}  // namespace coccl
