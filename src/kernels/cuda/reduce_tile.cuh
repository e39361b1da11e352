// One tile of the owner step (decode-reduce-encode, decode-accumulate): the sum over ranks of a
// warp's 32/L codec blocks, its encoding and what every rank decodes from it. The tile bodies
// take their inputs from a source: GlobalTileSrc reads them from global memory (the direct
// loops of chunk_codec.cuh, which any kernel may call), StagedTileSrc from this warp's slot of
// shared memory, filled by cp.async a tile ahead (reduce_staged.cuh, the grid-wide kernel). Both
// give the same values, so the tile bodies write the same bytes either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/cuda/tile_codec.cuh"
#include "kernels/cuda/tile_io.cuh"

namespace coccl {
namespace kdev {

// What every tile of one owner-step call shares.
template <class Tag>
struct ReduceTileArgs {
  const uint8_t* const* ins;
  int p, self;
  const typename Tag::T* selfIn;
  size_t n, nb;
  float scale;
  bool codesVec, typedVec;
};

// The arguments of one call; payloads (outPayload and every ins[r] but self's) E0-aligned take
// vector code loads, 16-byte aligned selfIn and userOut vector element loads.
template <class S, class Tag>
__device__ __forceinline__ ReduceTileArgs<Tag> reduceTileArgs(
    const uint8_t* const* ins, int p, int self, const typename Tag::T* selfIn, size_t n,
    float scale, const uint8_t* outPayload, const typename Tag::T* userOut) {
  ReduceTileArgs<Tag> a;
  a.ins = ins;
  a.p = p;
  a.self = self;
  a.selfIn = selfIn;
  a.n = n;
  a.nb = tileGeometry<S>().blocks(n);
  a.scale = scale;
  uintptr_t payloadBits = reinterpret_cast<uintptr_t>(outPayload);
  for (int r = 0; r < p; ++r)
    if (r != self) payloadBits |= reinterpret_cast<uintptr_t>(ins[r]);
  a.codesVec = (payloadBits & (S::kE0 - 1)) == 0;
  a.typedVec =
      ((reinterpret_cast<uintptr_t>(selfIn) | reinterpret_cast<uintptr_t>(userOut)) & 15u) == 0;
  return a;
}

// Tile b's inputs straight from global memory (any alignment, a partial last block).
template <class S, class Tag>
struct GlobalTileSrc {
  const ReduceTileArgs<Tag>& a;
  size_t b;
  int lig;
  bool full;  // block b lies inside n
  __device__ __forceinline__ void raw(float (&z)[S::kE1][S::kE0]) const {
    loadTile<Tag, S>(a.selfIn, a.n, b * S::kG, lig, full && a.typedVec, z);
  }
  __device__ __forceinline__ uint32_t codes(int r, uint32_t (&q)[S::kE1][S::kW]) const {
    return loadCodesTile<S>(a.ins[r], a.nb, b, lig, a.codesVec, q);
  }
};

// Calls onRaw() for the raw input (r == self) and onPayload(q, word) with the codes and scale
// word of each payload, in rank order; the payload of the next rank is fetched while the
// current one is handled.
template <class S, class Tag, class Src, class RawFn, class PayloadFn>
__device__ __forceinline__ void forEachInput(const ReduceTileArgs<Tag>& a, const Src& src,
                                             RawFn&& onRaw, PayloadFn&& onPayload) {
  constexpr int E1 = S::kE1, W = S::kW;
  const int firstPayload = a.self == 0 ? 1 : 0;
  uint32_t q[E1][W] = {};  // (read only after a load; zeroed for the host compiler)
  uint32_t w = 0;
  if (firstPayload < a.p) w = src.codes(firstPayload, q);
  for (int r = 0; r < a.p; ++r) {
    if (r == a.self) {
      onRaw();
    } else {
      uint32_t qc[E1][W];
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) qc[j][k] = q[j][k];
      const uint32_t wc = w;
      const int rn = r + 1 == a.self ? r + 2 : r + 1;
      if (rn < a.p) w = src.codes(rn, q);
      onPayload(static_cast<const uint32_t(&)[E1][W]>(qc), wc);
    }
  }
}

// acc = z (first: a warp-uniform branch) or acc + z.
template <class S>
__device__ __forceinline__ void addTileTerm(float (&acc)[S::kE1][S::kE0],
                                            const float (&z)[S::kE1][S::kE0], bool first) {
  if (first) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) acc[j][e] = z[j][e];
  } else {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) acc[j][e] = kmath::addRn(acc[j][e], z[j][e]);
  }
}

// acc *= scale if scale != 1; zeroPad: positions past n zeroed, as encode(fp32 acc) sees them.
template <class S, class Tag>
__device__ __forceinline__ void finishSum(const ReduceTileArgs<Tag>& a, size_t b, int lig,
                                          bool zeroPad, float (&acc)[S::kE1][S::kE0]) {
  constexpr int E0 = S::kE0, E1 = S::kE1;
  if (a.scale != 1.0f) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e) acc[j][e] = kmath::mulRn(acc[j][e], a.scale);
  }
  const size_t base = b * S::kG;
  if (zeroPad && base + S::kG > a.n) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e)
        if (base + S::runStart(j, lig) + e >= a.n) acc[j][e] = 0.0f;
  }
}

// acc = the sum over ranks in order (first term assigned) of the raw input and the decoded
// payloads of block b (kRot: their transforms, tile family C's decodeRotated), times scale; the
// linear sum has its padding zeroed, as encode(fp32 acc) would see it.
// kRot clears ok for a group with a RAW payload block other than the zero block.
template <class C, class S, class Tag, bool kRot, class Src>
__device__ __forceinline__ void sumTile(const ReduceTileArgs<Tag>& a, const typename C::Params& prm,
                                        const Src& src, size_t b, int lig,
                                        float (&acc)[S::kE1][S::kE0], bool* ok = nullptr) {
  constexpr int E0 = S::kE0, E1 = S::kE1, W = S::kW;
  int r = 0;
  forEachInput<S, Tag>(
      a, src,
      [&] {
        float z[E1][E0];
        src.raw(z);
        if constexpr (kRot) tileFwht<S>(z, lig);
        addTileTerm<S>(acc, z, r++ == 0);
      },
      [&](const uint32_t(&q)[E1][W], uint32_t w) {
        float z[E1][E0];
        if constexpr (kRot)
          C::decodeRotated(q, w, z, *ok);
        else
          C::decode(q, w, z, lig, prm);
        addTileTerm<S>(acc, z, r++ == 0);
      });
  finishSum<S, Tag>(a, b, lig, !kRot, acc);
}

// Whether tile family C splits the owner step's sum (C::splitSum(params), int8).
template <class C, class = void>
struct TileSplitSum : std::false_type {};
template <class C>
struct TileSplitSum<C, std::void_t<decltype(C::splitSum(std::declval<typename C::Params>()))>>
    : std::true_type {};

// acc = the split sum of block b (kmath::int8SplitSum's order, int8_block.h): R over the
// payloads whose block is rotated, L over the raw input and the other payload blocks, each in
// rank order with its first term assigned, then fwht(R) + L (one transform for all payloads),
// times scale, the padding zeroed. Tile family C's decodeUntransformed gives a block's values
// before its transform and whether it is rotated (a group's lanes agree).
template <class C, class S, class Tag, class Src>
__device__ __forceinline__ void sumTileSplit(const ReduceTileArgs<Tag>& a,
                                             const typename C::Params& prm, const Src& src,
                                             size_t b, int lig, float (&acc)[S::kE1][S::kE0]) {
  constexpr int E0 = S::kE0, E1 = S::kE1, W = S::kW;
  // Both sums start at -0 and add every term: -0 + x == x for every x (+-0, NaN and Inf
  // included), so this is "first term assigned" without a per-lane branch; a lane adds -0 to
  // the sum its block's term does not belong to (x + -0 == x as well). Branch-free selects:
  // the groups of a warp may differ (auto mode), and a per-lane branch an element diverges.
  float rot[E1][E0];
#pragma unroll
  for (int j = 0; j < E1; ++j)
#pragma unroll
    for (int e = 0; e < E0; ++e) rot[j][e] = acc[j][e] = -0.0f;
  bool haveRot = false;  // per group
  forEachInput<S, Tag>(
      a, src,
      [&] {
        float z[E1][E0];
        src.raw(z);
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int e = 0; e < E0; ++e) acc[j][e] = kmath::addRn(acc[j][e], z[j][e]);
      },
      [&](const uint32_t(&q)[E1][W], uint32_t w) {
        float z[E1][E0];
        const bool rotated = C::decodeUntransformed(q, w, z, prm);
#pragma unroll
        for (int j = 0; j < E1; ++j) {
#pragma unroll
          for (int e = 0; e < E0; ++e) {
            rot[j][e] = kmath::addRn(rot[j][e], rotated ? z[j][e] : -0.0f);
            acc[j][e] = kmath::addRn(acc[j][e], rotated ? -0.0f : z[j][e]);
          }
        }
        haveRot = haveRot || rotated;
      });
  if (__any_sync(kFullMask, haveRot)) {
    tileFwht<S>(rot, lig);  // (a group without a rotated term transforms -0s and ignores them)
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e)
        acc[j][e] = haveRot ? kmath::addRn(rot[j][e], acc[j][e]) : acc[j][e];
  }
  finishSum<S, Tag>(a, b, lig, true, acc);
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

// The encoded tile's codes and scale word to outPayload and, if userOut is set, what every rank
// will decode from these bytes to userOut (valid: this lane's block is inside the chunk).
template <class C, class S, class Tag>
__device__ __forceinline__ void storeReducedTile(const ReduceTileArgs<Tag>& a,
                                                 const typename C::Params& prm, size_t b, int lig,
                                                 bool valid, const uint32_t (&q)[S::kE1][S::kW],
                                                 uint32_t w, uint8_t* outPayload,
                                                 typename Tag::T* userOut) {
  const size_t base = b * S::kG;
  if (valid) storeCodesTile<S>(outPayload, a.nb, b, lig, a.codesVec, q, w);
  if (userOut != nullptr) {
    float v[S::kE1][S::kE0];
    C::decode(q, w, v, lig, prm);
    if (valid) storeTile<Tag, S>(userOut, a.n, base, lig, base + S::kG <= a.n && a.typedVec, v);
  }
}

// The linear owner step of one tile: acc = sumTile (sumTileSplit for a tile family that splits
// its sum, when encoding with a raw input: the host's decodeReduceEncode); then outPayload != null:
// encode(acc) into it, and userOut (if any) gets decode(outPayload); outPayload == null: userOut
// gets acc rounded to Tag's type. kEncode = false compiles the encode out (outPayload must be
// null).
template <class C, class S, class Tag, bool kEncode, class Src>
__device__ __forceinline__ void reduceTile(const ReduceTileArgs<Tag>& a,
                                           const typename C::Params& prm, const Src& src, size_t b,
                                           int lig, bool valid, uint8_t* outPayload,
                                           typename Tag::T* userOut) {
  float acc[S::kE1][S::kE0];
  bool split = false;
  if constexpr (kEncode && TileSplitSum<C>::value)
    split = outPayload != nullptr && a.self >= 0 && C::splitSum(prm);
  if (split) {
    if constexpr (kEncode && TileSplitSum<C>::value)
      sumTileSplit<C, S, Tag>(a, prm, src, b, lig, acc);
  } else {
    sumTile<C, S, Tag, false>(a, prm, src, b, lig, acc);
  }
  if (kEncode && outPayload != nullptr) {
    uint32_t q[S::kE1][S::kW];
    const uint32_t w = encodeSum<C, S>(acc, q, lig, prm);
    storeReducedTile<C, S, Tag>(a, prm, b, lig, valid, q, w, outPayload, userOut);
  } else if (userOut != nullptr && valid) {
    const size_t base = b * S::kG;
    storeTile<Tag, S>(userOut, a.n, base, lig, base + S::kG <= a.n && a.typedVec, acc);
  }
}

// The owner step of one tile in the rotated domain (a tile family C whose rotatedReduceFor the
// type, a raw input, an encode: the host's order, block_driver.h): the rotated sum and its
// encoding; a tile holding a group whose block refuses (the partial last block, a RAW payload
// block other than the zero block, non-finite or unusable scales) runs the linear sum as well,
// which those groups take.
template <class C, class S, class Tag, class Src>
__device__ __forceinline__ void reduceRotatedTile(const ReduceTileArgs<Tag>& a,
                                                  const typename C::Params& prm, const Src& src,
                                                  size_t b, int lig, bool valid,
                                                  uint8_t* outPayload, typename Tag::T* userOut) {
  constexpr int E0 = S::kE0, E1 = S::kE1, W = S::kW;
  uint32_t q[E1][W];
  uint32_t wo = 0;
  bool ok = b * S::kG + S::kG <= a.n;
  {
    float acc[E1][E0];
    sumTile<C, S, Tag, true>(a, prm, src, b, lig, acc, &ok);
    wo = C::encodeRotated(acc, q, ok, prm);
  }
  if (!__all_sync(kFullMask, ok)) {
    float acc[E1][E0];
    uint32_t ql[E1][W];
    sumTile<C, S, Tag, false>(a, prm, src, b, lig, acc);
    const uint32_t wl = encodeSum<C, S>(acc, ql, lig, prm);
    if (!ok) {
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) q[j][k] = ql[j][k];
      wo = wl;
    }
  }
  storeReducedTile<C, S, Tag>(a, prm, b, lig, valid, q, wo, outPayload, userOut);
}

}  // namespace kdev
}  // namespace coccl
