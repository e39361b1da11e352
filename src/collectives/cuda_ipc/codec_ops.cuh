// The chunk codec functions of src/kernels/cuda/chunk_codec.cuh (the tile implementations
// encodeChunkT / decodeChunkT / reduceChunkT) as the collective kernels call them: the codec
// family and block size G are template parameters of the whole kernel (one kernel per family,
// G and element type, picked on the host), so each kernel inlines exactly one codec. (A single
// kernel with a run-time switch inlining all of them takes ptxas tens of GB and many minutes;
// out-of-line codec functions spill.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/codec_desc.h"
#include "kernels/cuda/chunk_codec.cuh"

namespace coccl {
namespace dev {

// Every warp of the block, together.
__device__ __forceinline__ kdev::WarpSet blockWarps() {
  return kdev::WarpSet{static_cast<int>(threadIdx.x >> 5), static_cast<int>(blockDim.x >> 5)};
}

template <class Fam, int G, class Tag>
struct CodecOps {
  using T = typename Tag::T;
  // payload (codecPayloadBytes(d, n) bytes) = encode(in[0, n))
  __device__ __forceinline__ static void encode(const CodecDesc& d, const T* in, uint64_t n,
                                                uint8_t* payload) {
    if (n) kdev::encodeChunkT<Fam, G, Tag>(d, in, n, payload, blockWarps());
  }
  __device__ __forceinline__ static void decode(const CodecDesc& d, const uint8_t* payload,
                                                uint64_t n, T* out) {
    if (n) kdev::decodeChunkT<Fam, G, Tag>(d, payload, n, out, blockWarps());
  }
  // acc = sum over r in rank order of (r == self ? selfIn : decode(ins[r])), times scale; then
  // outPayload: encode(acc) there and userOut = decode of it; else userOut = acc rounded.
  __device__ __forceinline__ static void reduce(const CodecDesc& d, const uint8_t* const* ins,
                                                int p, int self, const T* selfIn, uint64_t n,
                                                float scale, uint8_t* outPayload, T* userOut) {
    if (n)
      kdev::reduceChunkT<Fam, G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut,
                                      blockWarps());
  }
};

}  // namespace dev
}  // namespace coccl
