// Chunk-level device codec operations, callable from any kernel by a set of warps (WarpSet):
// the warps of the set together cover every codec block of the chunk (each warp takes runs of
// consecutive blocks, interleaved with the other warps of the set). Whole warps call: all 32
// lanes, converged, with the same arguments (the tile functions shuffle with the full mask).
// Payloads use the host layout (codes of block b at payload + b*G, scale words at payload + nb*G),
// so these functions write exactly the bytes of the host codec (src/codecs) for the same input.
//
// encodeChunk / decodeChunk / reduceChunk dispatch at run time on the CodecDesc (codec, FP8
// format, G) to the tile implementations encodeChunkT / decodeChunkT / reduceChunkT
// (tile_codec.cuh: 16-byte runs, 32 elements a lane, 16 for reduceChunk). The collective kernels
// (src/collectives/device) call these on the parts of a message they own; the grid-wide codec
// kernels (codec_kernels.cuh) run the staged loops (tile_loops.cuh, reduce_staged.cuh: inputs
// through shared memory by cp.async), which hand what they do not stage to the direct loops
// here.
//
// (The first, simpler implementation - BlockOps over WarpAsh / WarpInt8, one contiguous run a
// lane - is a test-only reference now: tests/gpu/codec/warp_reference.cuh.)
//
// Pointers: inputs and outputs may be any address aligned to their element type (payloads to
// 1 byte); 16-byte (payloads: 4 / 8-byte) alignment takes the vector path. In-place use is
// allowed where an output exactly aliases an input of the same block positions (reduceChunk's
// selfIn == userOut, payload ins[r] == outPayload); other overlaps are not.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/codec_desc.h"
#include "kernels/cuda/reduce_tile.cuh"
#include "kernels/cuda/tile_codec.cuh"
#include "kernels/cuda/tile_loops.cuh"

namespace coccl {
namespace kdev {

struct WarpSet {
  int warp;    // this warp's index in the set
  int nwarps;  // warps in the set
};

// ---- tile implementations (codec family and G known at compile time) -------------------------

template <class Fam, int G, class Tag>
__device__ void encodeChunkT(const CodecDesc& d, const typename Tag::T* in, size_t n,
                             uint8_t* payload, WarpSet ws) {
  encodeTilesDirect<Fam, G, Tag>(d, in, n, payload, static_cast<size_t>(ws.warp), ws.nwarps);
}

template <class Fam, int G, class Tag>
__device__ void decodeChunkT(const CodecDesc& d, const uint8_t* payload, size_t n,
                             typename Tag::T* out, WarpSet ws) {
  decodeTilesDirect<Fam, G, Tag>(d, payload, n, out, static_cast<size_t>(ws.warp), ws.nwarps);
}

// acc = sum over r = 0..p-1 in order (first term assigned, the others added) of
// (r == self ? selfIn : decode(ins[r])); acc *= scale if scale != 1; padding zeroed; then
//   outPayload != null: encode(acc) into it, and userOut (if any) gets decode(outPayload);
//   outPayload == null: userOut gets acc rounded to Tag's type.
// self = -1: no raw input (ins[self] is never read). Equals the host's decodeReduceEncode, and
// with self = 0, selfIn = userOut = acc (fp32), ins[1..p) payloads, the host's decodeAccumulate
// of ins[1], ins[2], ... in that order (with a raw input and an encode, int8 splits the sum:
// reduce_tile.cuh's sumTileSplit). A tile family whose rotatedReduceFor(type) (fp8_ash_ds)
// forms the encoded sum in the rotated domain when there is a raw input (reduce_tile.cuh's
// reduceRotatedTile). The payload of the next rank is fetched while the current one is
// decoded. Elems: elements a lane; kEncode = false compiles out the encode
// (outPayload must be null), which leaves room for 32 elements a lane. The warp's tiles are
// first, first + nwarps, ... (reduceChunkT: first = the warp's index in the set).
template <class Fam, int G, class Tag, int Elems = COCCL_REDUCE_TILE_ELEMS, bool kEncode = true>
__device__ __forceinline__ void reduceTilesDirect(const CodecDesc& d, const uint8_t* const* ins,
                                                  int p, int self, const typename Tag::T* selfIn,
                                                  size_t n, float scale, uint8_t* outPayload,
                                                  typename Tag::T* userOut, size_t first,
                                                  int nwarps) {
  using S = typename TileRun<G, sizeof(typename Tag::T), Elems>::Shape;
  using C = typename Fam::template Tile<S>;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  const typename C::Params prm = C::params(d);
  const ReduceTileArgs<Tag> a =
      reduceTileArgs<S, Tag>(ins, p, self, selfIn, n, scale, outPayload, userOut);
  if constexpr (kEncode && C::rotatedReduceFor(static_cast<int>(sizeof(typename Tag::T)))) {
    if (self >= 0 && outPayload != nullptr) {
      forEachTile<S::kL>(a.nb, first, nwarps, [&](size_t b, int lig, bool valid) {
        const GlobalTileSrc<S, Tag> src{a, b, lig, b * G + G <= n};
        reduceRotatedTile<C, S, Tag>(a, prm, src, b, lig, valid, outPayload, userOut);
      });
      return;
    }
  }
  forEachTile<S::kL>(a.nb, first, nwarps, [&](size_t b, int lig, bool valid) {
    const GlobalTileSrc<S, Tag> src{a, b, lig, b * G + G <= n};
    reduceTile<C, S, Tag, kEncode>(a, prm, src, b, lig, valid, outPayload, userOut);
  });
}

template <class Fam, int G, class Tag, int Elems = COCCL_REDUCE_TILE_ELEMS, bool kEncode = true>
__device__ void reduceChunkT(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                             const typename Tag::T* selfIn, size_t n, float scale,
                             uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  reduceTilesDirect<Fam, G, Tag, Elems, kEncode>(d, ins, p, self, selfIn, n, scale, outPayload,
                                                 userOut, static_cast<size_t>(ws.warp), ws.nwarps);
}

// ---- run-time dispatch on G and the codec ------------------------------------------------------

#define COCCL_DISPATCH_G(d, CALL) \
  switch ((d).block) {            \
    case 32: {                    \
      constexpr int kG = 32;      \
      CALL;                       \
    } break;                      \
    case 64: {                    \
      constexpr int kG = 64;      \
      CALL;                       \
    } break;                      \
    case 128: {                   \
      constexpr int kG = 128;     \
      CALL;                       \
    } break;                      \
    case 256: {                   \
      constexpr int kG = 256;     \
      CALL;                       \
    } break;                      \
    case 512: {                   \
      constexpr int kG = 512;     \
      CALL;                       \
    } break;                      \
    default:                      \
      break;                      \
  }

// COCCL_DISPATCH_FAMILY (the tile family of d, from the codec list): tile_codec.cuh.

template <class Tag>
__device__ void encodeChunk(const CodecDesc& d, const typename Tag::T* in, size_t n,
                            uint8_t* payload, WarpSet ws) {
  COCCL_DISPATCH_FAMILY(d,
                        COCCL_DISPATCH_G(d, (encodeChunkT<kFam, kG, Tag>(d, in, n, payload, ws))));
}

template <class Tag>
__device__ void decodeChunk(const CodecDesc& d, const uint8_t* payload, size_t n,
                            typename Tag::T* out, WarpSet ws) {
  COCCL_DISPATCH_FAMILY(d,
                        COCCL_DISPATCH_G(d, (decodeChunkT<kFam, kG, Tag>(d, payload, n, out, ws))));
}

template <class Tag>
__device__ void reduceChunk(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                            const typename Tag::T* selfIn, size_t n, float scale,
                            uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  COCCL_DISPATCH_FAMILY(
      d, COCCL_DISPATCH_G(d, (reduceChunkT<kFam, kG, Tag>(d, ins, p, self, selfIn, n, scale,
                                                          outPayload, userOut, ws))));
}

}  // namespace kdev
}  // namespace coccl
