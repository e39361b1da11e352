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
// (src/collectives/device) call these on the parts of a message they own; the codec kernels
// (codec_kernels.cuh) are thin grid-wide wrappers of the ...T versions.
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

// What every tile of one reduceChunkT call shares.
template <class Tag>
struct ReduceTileArgs {
  const uint8_t* const* ins;
  int p, self;
  const typename Tag::T* selfIn;
  size_t n, nb;
  float scale;
  bool codesVec, typedVec;
};

// acc = the sum over ranks in order (first term assigned) of the raw input and the decoded
// payloads of block b (kRot: their transforms, tile family C's decodeRotated), times scale; the
// linear sum has its padding zeroed, as encode(fp32 acc) would see it.
// kRot clears ok for a group with a RAW payload block other than the zero block.
template <class C, class S, class Tag, bool kRot>
__device__ __forceinline__ void sumTile(const ReduceTileArgs<Tag> a,
                                        const typename C::Params& prm, size_t b, int lig,
                                        float (&acc)[S::kE1][S::kE0], bool* ok = nullptr) {
  constexpr int G = S::kG, E0 = S::kE0, E1 = S::kE1, W = S::kW;
  const size_t base = b * G;
  const bool full = base + G <= a.n;
  const int firstPayload = a.self == 0 ? 1 : 0;
  uint32_t q[E1][W];
  uint32_t w = 0;
  if (firstPayload < a.p) w = loadCodesTile<S>(a.ins[firstPayload], a.nb, b, lig, a.codesVec, q);
  for (int r = 0; r < a.p; ++r) {
    float z[E1][E0];
    if (r == a.self) {
      loadTile<Tag, S>(a.selfIn, a.n, base, lig, full && a.typedVec, z);
      if constexpr (kRot) tileFwht<S>(z, lig);
    } else {
      uint32_t qc[E1][W];
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) qc[j][k] = q[j][k];
      const uint32_t wc = w;
      const int rn = r + 1 == a.self ? r + 2 : r + 1;
      if (rn < a.p) w = loadCodesTile<S>(a.ins[rn], a.nb, b, lig, a.codesVec, q);
      if constexpr (kRot)
        C::decodeRotated(qc, wc, z, *ok);
      else
        C::decode(qc, wc, z, lig, prm);
    }
    if (r == 0) {
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) acc[j][e] = z[j][e];
    } else {
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) acc[j][e] = kmath::addRn(acc[j][e], z[j][e]);
    }
  }
  if (a.scale != 1.0f) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e) acc[j][e] = kmath::mulRn(acc[j][e], a.scale);
  }
  if (!kRot && !full) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e)
        if (base + S::runStart(j, lig) + e >= a.n) acc[j][e] = 0.0f;
  }
}

// encode(acc) into q (acc kept: it is what the RAW fallback reloads); returns the scale word.
template <class C, class S>
__device__ __forceinline__ uint32_t encodeSum(const float (&acc)[S::kE1][S::kE0],
                                              uint32_t (&q)[S::kE1][S::kW], int lig,
                                              const typename C::Params& prm) {
  constexpr int E0 = S::kE0, E1 = S::kE1;
  float v[E1][E0];
#pragma unroll
  for (int j = 0; j < E1; ++j)
#pragma unroll
    for (int e = 0; e < E0; ++e) v[j][e] = acc[j][e];
  return C::encode(
      v,
      [&](float(&x)[E1][E0]) {
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int e = 0; e < E0; ++e) x[j][e] = acc[j][e];
      },
      q, lig, prm);
}

// reduceChunkT's owner step in the rotated domain (a tile family C whose rotatedReduceFor the
// type, a raw input, an encode: the host's order, block_driver.h): per tile the rotated sum
// and its encoding; a tile holding a group whose block refuses (the partial last block, a RAW
// payload block other than the zero block, non-finite or unusable scales) runs the linear sum as well, which those groups
// take.
template <class C, class S, class Tag>
__device__ __forceinline__ void reduceEncodeRotatedChunk(const ReduceTileArgs<Tag>& a,
                                                         const typename C::Params& prm,
                                                         uint8_t* outPayload,
                                                         typename Tag::T* userOut, WarpSet ws) {
  constexpr int G = S::kG, E0 = S::kE0, E1 = S::kE1, W = S::kW;
  forEachTile<S::kL>(a.nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const size_t base = b * G;
    const bool full = base + G <= a.n;
    uint32_t q[E1][W];
    uint32_t wo = 0;
    bool ok = full;
    {
      float acc[E1][E0];
      sumTile<C, S, Tag, true>(a, prm, b, lig, acc, &ok);
      wo = C::encodeRotated(acc, q, ok, prm);
    }
    if (!__all_sync(kFullMask, ok)) {
      float acc[E1][E0];
      uint32_t ql[E1][W];
      sumTile<C, S, Tag, false>(a, prm, b, lig, acc);
      const uint32_t wl = encodeSum<C, S>(acc, ql, lig, prm);
      if (!ok) {
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int k = 0; k < W; ++k) q[j][k] = ql[j][k];
        wo = wl;
      }
    }
    if (valid) storeCodesTile<S>(outPayload, a.nb, b, lig, a.codesVec, q, wo);
    if (userOut != nullptr) {  // what every rank will decode from these bytes
      float v[E1][E0];
      C::decode(q, wo, v, lig, prm);
      if (valid) storeTile<Tag, S>(userOut, a.n, base, lig, full && a.typedVec, v);
    }
  });
}

// acc = sum over r = 0..p-1 in order (first term assigned, the others added) of
// (r == self ? selfIn : decode(ins[r])); acc *= scale if scale != 1; padding zeroed; then
//   outPayload != null: encode(acc) into it, and userOut (if any) gets decode(outPayload);
//   outPayload == null: userOut gets acc rounded to Tag's type.
// self = -1: no raw input (ins[self] is never read). Equals the host's decodeReduceEncode, and
// with self = 0, selfIn = userOut = acc (fp32), ins[1..p) payloads, the host's decodeAccumulate
// of ins[1], ins[2], ... in that order. A tile family whose rotatedReduceFor(type) (fp8_ash_ds)
// forms the encoded sum in the rotated domain when there is a raw input
// (reduceEncodeRotatedChunk). The payload of the next rank is fetched while the current one is
// decoded. Elems: elements a lane; kEncode = false compiles out the encode
// (outPayload must be null), which leaves room for 32 elements a lane.
template <class Fam, int G, class Tag, int Elems = COCCL_REDUCE_TILE_ELEMS, bool kEncode = true>
__device__ void reduceChunkT(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                             const typename Tag::T* selfIn, size_t n, float scale,
                             uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  using S = typename TileRun<G, sizeof(typename Tag::T), Elems>::Shape;
  using C = typename Fam::template Tile<S>;
  constexpr int E0 = S::kE0, E1 = S::kE1, W = S::kW;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  const typename C::Params prm = C::params(d);
  const size_t nb = tileGeometry<S>().blocks(n);
  // vector access when every payload is E0-aligned and the typed buffers 16-byte aligned
  uintptr_t payloadBits = reinterpret_cast<uintptr_t>(outPayload);
  for (int r = 0; r < p; ++r)
    if (r != self) payloadBits |= reinterpret_cast<uintptr_t>(ins[r]);
  const bool codesVec = (payloadBits & (E0 - 1)) == 0;
  const bool typedVec =
      ((reinterpret_cast<uintptr_t>(selfIn) | reinterpret_cast<uintptr_t>(userOut)) & 15u) == 0;
  const int firstPayload = self == 0 ? 1 : 0;
  if constexpr (kEncode && C::rotatedReduceFor(static_cast<int>(sizeof(typename Tag::T)))) {
    if (self >= 0 && outPayload != nullptr) {
      const ReduceTileArgs<Tag> a{ins, p, self, selfIn, n, nb, scale, codesVec, typedVec};
      reduceEncodeRotatedChunk<C, S, Tag>(a, prm, outPayload, userOut, ws);
      return;
    }
  }
  forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const size_t base = b * G;
    const bool full = base + G <= n;
    float acc[E1][E0];
    uint32_t q[E1][W];
    uint32_t w = 0;
    if (firstPayload < p) w = loadCodesTile<S>(ins[firstPayload], nb, b, lig, codesVec, q);
    for (int r = 0; r < p; ++r) {
      float z[E1][E0];
      if (r == self) {
        loadTile<Tag, S>(selfIn, n, base, lig, full && typedVec, z);
      } else {
        uint32_t qc[E1][W];
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int k = 0; k < W; ++k) qc[j][k] = q[j][k];
        const uint32_t wc = w;
        const int rn = r + 1 == self ? r + 2 : r + 1;
        if (rn < p) w = loadCodesTile<S>(ins[rn], nb, b, lig, codesVec, q);
        C::decode(qc, wc, z, lig, prm);
      }
      if (r == 0) {
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int e = 0; e < E0; ++e) acc[j][e] = z[j][e];
      } else {
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int e = 0; e < E0; ++e) acc[j][e] = kmath::addRn(acc[j][e], z[j][e]);
      }
    }
    if (scale != 1.0f) {
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) acc[j][e] = kmath::mulRn(acc[j][e], scale);
    }
    if (!full) {  // positions past n are zero padding, as encode(fp32 acc) would see them
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e)
          if (base + S::runStart(j, lig) + e >= n) acc[j][e] = 0.0f;
    }
    if (kEncode && outPayload != nullptr) {
      float v[E1][E0];
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) v[j][e] = acc[j][e];
      const uint32_t wo = C::encode(
          v,
          [&](float(&x)[E1][E0]) {
#pragma unroll
            for (int j = 0; j < E1; ++j)
#pragma unroll
              for (int e = 0; e < E0; ++e) x[j][e] = acc[j][e];
          },
          q, lig, prm);
      if (valid) storeCodesTile<S>(outPayload, nb, b, lig, codesVec, q, wo);
      if (userOut != nullptr) {  // what every rank will decode from these bytes
        C::decode(q, wo, v, lig, prm);
        if (valid) storeTile<Tag, S>(userOut, n, base, lig, full && typedVec, v);
      }
    } else if (userOut != nullptr && valid) {
      storeTile<Tag, S>(userOut, n, base, lig, full && typedVec, acc);
    }
  });
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
