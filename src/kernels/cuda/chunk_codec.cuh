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
// The ...G versions below (BlockOps over WarpAsh / WarpInt8: one contiguous run a lane) are
// the first, simpler implementation, kept as a second reference; they write the same bytes.
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
#include "kernels/cuda/warp_codec.cuh"

namespace coccl {
namespace kdev {

struct WarpSet {
  int warp;    // this warp's index in the set
  int nwarps;  // warps in the set
};

// Elements per lane for a codec block of G elements and a T of `bytes` bytes: 16-byte vector
// loads where possible, at most 32 lanes per block.
template <int G, int TBytes>
struct LaneRun {
  static constexpr int kVec = 16 / TBytes;
  static constexpr int E = kVec > G ? G : (G / kVec > 32 ? G / 32 : kVec);
  static constexpr int L = G / E;
};

// ---- one codec block, warp-cooperative (each L-lane group of the warp takes one block) -------

template <int G, int E>
struct BlockOps {
  static constexpr int L = G / E;

  // Encodes x (the lane's run of one block) into the lane's E code bytes; returns the block's
  // scale word (same in every lane of the group).
  __device__ __forceinline__ static uint32_t encode(const CodecDesc& d, const float (&x)[E],
                                                    uint8_t (&codes)[E], int lig) {
    if (d.kind == CodecKind::Int8)
      return WarpInt8<G, E>::encode(x, reinterpret_cast<int8_t(&)[E]>(codes), lig, d.rotate != 0);
    const AshParams p{d.lambda, d.alphaMin, d.alphaMax};
    return d.fp8E5M2 ? WarpAsh<G, E, Fp8E5M2>::encode(x, codes, lig, p)
                     : WarpAsh<G, E, Fp8E4M3>::encode(x, codes, lig, p);
  }

  __device__ __forceinline__ static void decode(const CodecDesc& d, const uint8_t (&codes)[E],
                                                uint32_t w, float (&out)[E], int lig) {
    if (d.kind == CodecKind::Int8)
      WarpInt8<G, E>::decode(reinterpret_cast<const int8_t(&)[E]>(codes), w, d.rotate != 0, out,
                             lig);
    else if (d.fp8E5M2)
      WarpAsh<G, E, Fp8E5M2>::decode(codes, w, out, lig);
    else
      WarpAsh<G, E, Fp8E4M3>::decode(codes, w, out, lig);
  }

  // Payload access: codes of block b at payload + b*G, scale words at payload + nb*G.
  __device__ __forceinline__ static void store(uint8_t* payload, size_t nb, size_t b, int lig,
                                               const uint8_t (&codes)[E], uint32_t w) {
    storeCodes<E>(payload + b * G + lig * E, codes);
    if (lig == 0) {
      uint8_t* wp = payload + nb * G + 4 * b;
      if ((reinterpret_cast<uintptr_t>(wp) & 3u) == 0) {
        *reinterpret_cast<uint32_t*>(wp) = w;
      } else {
        for (int i = 0; i < 4; ++i) wp[i] = static_cast<uint8_t>(w >> (8 * i));
      }
    }
  }
  __device__ __forceinline__ static uint32_t load(const uint8_t* payload, size_t nb, size_t b,
                                                  int lig, uint8_t (&codes)[E]) {
    loadCodes<E>(payload + b * G + lig * E, codes);
    const uint8_t* wp = payload + nb * G + 4 * b;
    if ((reinterpret_cast<uintptr_t>(wp) & 3u) == 0) return *reinterpret_cast<const uint32_t*>(wp);
    return packBytes4(wp[0], wp[1], wp[2], wp[3]);
  }
  __device__ __forceinline__ static void decodeAt(const CodecDesc& d, const uint8_t* payload,
                                                  size_t nb, size_t b, int lig, float (&out)[E]) {
    uint8_t c[E];
    const uint32_t w = load(payload, nb, b, lig, c);
    decode(d, c, w, out, lig);
  }
};

// Iterates the codec blocks of a chunk handled by this warp, giving (block, lane-in-group).
// Every lane of the warp iterates the same number of times (blocks past the end are skipped
// as a whole group, so the shuffles inside a block stay convergent).
template <int G, int E, class F>
__device__ __forceinline__ void forEachBlock(size_t nb, WarpSet ws, F&& f) {
  constexpr int L = G / E;
  constexpr int kPerWarp = 32 / L;
  const int lane = threadIdx.x & 31;
  const int group = lane / L, lig = lane % L;
  for (size_t base = static_cast<size_t>(ws.warp) * kPerWarp; base < nb;
       base += static_cast<size_t>(ws.nwarps) * kPerWarp) {
    const size_t b = base + group;
    // Groups are independent (their shuffles are masked to the group), so a group past the
    // end simply does not run.
    if (b < nb) f(b, lig);
  }
}

// ---- chunk operations (G known at compile time) ----------------------------------------------

template <int G, class Tag>
__device__ void encodeChunkG(const CodecDesc& d, const typename Tag::T* in, size_t n,
                             uint8_t* payload, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = (n + G - 1) / G;
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    float x[E];
    uint8_t c[E];
    loadRun<Tag, E>(in, b * G + lig * E, n, x);
    const uint32_t w = BlockOps<G, E>::encode(d, x, c, lig);
    BlockOps<G, E>::store(payload, nb, b, lig, c, w);
  });
}

template <int G, class Tag>
__device__ void decodeChunkG(const CodecDesc& d, const uint8_t* payload, size_t n,
                             typename Tag::T* out, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = (n + G - 1) / G;
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    float v[E];
    BlockOps<G, E>::decodeAt(d, payload, nb, b, lig, v);
    storeRun<Tag, E>(out, b * G + lig * E, n, v);
  });
}

// acc = sum over r = 0..p-1 in order (first term assigned, the others added) of
// (r == self ? selfIn : decode(ins[r])); acc *= scale if scale != 1; padding zeroed; then
//   outPayload != null: encode(acc) into it, and userOut (if any) gets decode(outPayload);
//   outPayload == null: userOut gets acc rounded to Tag's type.
// self = -1: no raw input. Equals the host's decodeReduceEncode / decode-accumulate.
template <int G, class Tag>
__device__ void reduceChunkG(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                             const typename Tag::T* selfIn, size_t n, float scale,
                             uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = (n + G - 1) / G;
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    const size_t first = b * G + lig * E;
    float acc[E], z[E];
    for (int r = 0; r < p; ++r) {
      if (r == self)
        loadRun<Tag, E>(selfIn, first, n, z);
      else
        BlockOps<G, E>::decodeAt(d, ins[r], nb, b, lig, z);
#pragma unroll
      for (int i = 0; i < E; ++i) acc[i] = r == 0 ? z[i] : addRn(acc[i], z[i]);
    }
    if (scale != 1.0f) {
#pragma unroll
      for (int i = 0; i < E; ++i) acc[i] = mulRn(acc[i], scale);
    }
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (first + i >= n) acc[i] = 0.0f;
    if (outPayload) {
      uint8_t c[E];
      const uint32_t w = BlockOps<G, E>::encode(d, acc, c, lig);
      BlockOps<G, E>::store(outPayload, nb, b, lig, c, w);
      if (userOut) {  // what every rank will decode from these bytes
        BlockOps<G, E>::decode(d, c, w, z, lig);
        storeRun<Tag, E>(userOut, first, n, z);
      }
    } else if (userOut) {
      storeRun<Tag, E>(userOut, first, n, acc);
    }
  });
}

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
// of ins[1], ins[2], ... in that order. The payload of the next rank is fetched while the
// current one is decoded. Elems: elements a lane; kEncode = false compiles out the encode
// (outPayload must be null), which leaves room for 32 elements a lane.
template <class Fam, int G, class Tag, int Elems = COCCL_REDUCE_TILE_ELEMS, bool kEncode = true>
__device__ void reduceChunkT(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                             const typename Tag::T* selfIn, size_t n, float scale,
                             uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  using S = typename TileRun<G, sizeof(typename Tag::T), Elems>::Shape;
  using C = typename Fam::template Tile<S>;
  constexpr int E0 = S::kE0, E1 = S::kE1, W = S::kW;
  const typename C::Params prm = C::params(d);
  const size_t nb = (n + G - 1) / G;
  // vector access when every payload is E0-aligned and the typed buffers 16-byte aligned
  uintptr_t payloadBits = reinterpret_cast<uintptr_t>(outPayload);
  for (int r = 0; r < p; ++r)
    if (r != self) payloadBits |= reinterpret_cast<uintptr_t>(ins[r]);
  const bool codesVec = (payloadBits & (E0 - 1)) == 0;
  const bool typedVec =
      ((reinterpret_cast<uintptr_t>(selfIn) | reinterpret_cast<uintptr_t>(userOut)) & 15u) == 0;
  const int firstPayload = self == 0 ? 1 : 0;
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

// ---- run-time dispatch on the codec and G ------------------------------------------------------

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

// Calls CALL with the type alias kFam set to the codec family of d (nothing for None).
#define COCCL_DISPATCH_FAMILY(d, CALL)                                  \
  do {                                                                  \
    if ((d).kind == ::coccl::CodecKind::Int8) {                         \
      using kFam = ::coccl::kdev::Int8Family;                           \
      CALL;                                                             \
    } else if ((d).kind == ::coccl::CodecKind::Fp8AshDs) {              \
      if ((d).fp8E5M2) {                                                \
        using kFam = ::coccl::kdev::AshFamily<::coccl::kmath::Fp8E5M2>; \
        CALL;                                                           \
      } else {                                                          \
        using kFam = ::coccl::kdev::AshFamily<::coccl::kmath::Fp8E4M3>; \
        CALL;                                                           \
      }                                                                 \
    }                                                                   \
  } while (0)

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
