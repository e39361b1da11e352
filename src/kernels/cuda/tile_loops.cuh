// The chunk-level tile loops of encode and decode: a warp takes tiles t = warp, warp + nwarps, ...
// of 32/L consecutive codec blocks (tile_math.cuh's layout), the last one possibly partial.
//
// encodeTilesDirect / decodeTilesDirect load each tile straight into registers and handle any
// alignment and any tail (chunk_codec.cuh's encodeChunkT / decodeChunkT, callable from any
// kernel). encodeTilesStaged / decodeTilesStaged (the grid-wide codec kernels) run the whole,
// aligned tiles through this warp's ring of shared-memory buffers, filled by cp.async
// kStages - 1 tiles ahead (tile_io.cuh), with addresses kept as running pointers; the remaining
// tiles (at most one partial tile, or all of them for unaligned buffers) go to the direct loop,
// called out of line so that it stays out of the hot loop's registers and instruction cache.
#pragma once

#include <cstdint>

#include "kernels/codec_desc.h"
#include "kernels/cuda/tile_codec.cuh"

namespace coccl {
namespace kdev {

template <class Fam, int G, class Tag>
using TileShapeFor = typename TileRun<G, sizeof(typename Tag::T)>::Shape;

// The tile loops read and write the codec's payload geometry (the codec list) through the
// code tiles of tile_io.cuh.
template <class Fam, int G, class Tag>
COCCL_HD_CONSTEXPR bool familyFitsTiles() {
  static_assert(codecGeometry(Fam::kKind, G) == tileGeometry<TileShapeFor<Fam, G, Tag>>(),
                "the codec's payload geometry is not the code tiles' (byte codes, 4-byte words)");
  return true;
}

// ---- direct --------------------------------------------------------------------------------

template <class Fam, int G, class Tag>
__device__ __forceinline__ void encodeTilesDirect(const CodecDesc& d, const typename Tag::T* in,
                                                  size_t n, uint8_t* payload, size_t first,
                                                  int nwarps) {
  using S = TileShapeFor<Fam, G, Tag>;
  using C = typename Fam::template Tile<S>;
  using Geom = TileGeom<S>;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  const typename C::Params prm = C::params(d);
  const size_t nb = tileGeometry<S>().blocks(n);
  const size_t ntiles = (nb + Geom::kBlocks - 1) / Geom::kBlocks;
  const bool inVec = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  const bool outVec = (reinterpret_cast<uintptr_t>(payload) & (S::kE0 - 1)) == 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / S::kL, lig = lane % S::kL;
  for (size_t t = first; t < ntiles; t += static_cast<size_t>(nwarps)) {
    const size_t b0 = t * Geom::kBlocks + static_cast<size_t>(group);
    const bool valid = b0 < nb;
    const size_t b = valid ? b0 : nb - 1;  // past the end: compute on the last block, no store
    const size_t base = b * G;
    const bool full = inVec && base + G <= n;
    const auto load = [&](float(&x)[S::kE1][S::kE0]) {
      loadTile<Tag, S>(in, n, base, lig, full, x);
    };
    float v[S::kE1][S::kE0];
    uint32_t q[S::kE1][S::kW];
    load(v);
    const uint32_t w = C::encode(v, load, q, lig, prm);
    if (valid) storeCodesTile<S>(payload, nb, b, lig, outVec, q, w);
  }
}

template <class Fam, int G, class Tag>
__device__ __forceinline__ void decodeTilesDirect(const CodecDesc& d, const uint8_t* payload,
                                                  size_t n, typename Tag::T* out, size_t first,
                                                  int nwarps) {
  using S = TileShapeFor<Fam, G, Tag>;
  using C = typename Fam::template Tile<S>;
  using Geom = TileGeom<S>;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  const typename C::Params prm = C::params(d);
  const size_t nb = tileGeometry<S>().blocks(n);
  const size_t ntiles = (nb + Geom::kBlocks - 1) / Geom::kBlocks;
  const bool inVec = (reinterpret_cast<uintptr_t>(payload) & (S::kE0 - 1)) == 0;
  const bool outVec = (reinterpret_cast<uintptr_t>(out) & 15u) == 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / S::kL, lig = lane % S::kL;
  for (size_t t = first; t < ntiles; t += static_cast<size_t>(nwarps)) {
    const size_t b0 = t * Geom::kBlocks + static_cast<size_t>(group);
    const bool valid = b0 < nb;
    const size_t b = valid ? b0 : nb - 1;
    const size_t base = b * G;
    uint32_t q[S::kE1][S::kW];
    const uint32_t w = loadCodesTile<S>(payload, nb, b, lig, inVec, q);
    float v[S::kE1][S::kE0];
    C::decode(q, w, v, lig, prm);
    if (valid) storeTile<Tag, S>(out, n, base, lig, outVec && base + G <= n, v);
  }
}

template <class Fam, int G, class Tag>
__device__ __noinline__ void encodeTilesCold(const CodecDesc d, const typename Tag::T* in, size_t n,
                                             uint8_t* payload, size_t first, int nwarps) {
  encodeTilesDirect<Fam, G, Tag>(d, in, n, payload, first, nwarps);
}

template <class Fam, int G, class Tag>
__device__ __noinline__ void decodeTilesCold(const CodecDesc d, const uint8_t* payload, size_t n,
                                             typename Tag::T* out, size_t first, int nwarps) {
  decodeTilesDirect<Fam, G, Tag>(d, payload, n, out, first, nwarps);
}

// ---- staged ----------------------------------------------------------------------------------

// `stage`: this warp's EncodeStage<S, Tag>::kBytes of shared memory, 16-byte aligned, or null
// (nothing staged: the direct loop).
template <class Fam, int G, class Tag>
__device__ __forceinline__ void encodeTilesStaged(const CodecDesc& d, const typename Tag::T* in,
                                                  size_t n, uint8_t* payload, int warp,
                                                  int nwarps, uint8_t* stage) {
  using S = TileShapeFor<Fam, G, Tag>;
  using C = typename Fam::template Tile<S>;
  using Geom = TileGeom<S>;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  using St = EncodeStage<S, Tag>;
  constexpr int kStages = St::kStages;
  const typename C::Params prm = C::params(d);
  const size_t nb = tileGeometry<S>().blocks(n);
  const bool aligned = ((reinterpret_cast<uintptr_t>(in) & 15u) |
                        (reinterpret_cast<uintptr_t>(payload) & (S::kE0 - 1))) == 0;
  // tiles [0, nstaged): all elements inside n, aligned buffers
  const size_t nstaged = stage != nullptr && aligned ? n / Geom::kElems : 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / S::kL, lig = lane % S::kL;
  const size_t stride = static_cast<size_t>(nwarps);
  const SmemAddr ring = stage != nullptr ? smemAddr(stage) : SmemAddr{};
  const SmemAddr readBase = ring + St::readOffset(group, lig);
  const uint8_t* src = reinterpret_cast<const uint8_t*>(in);
  constexpr PayloadGeometry geo = tileGeometry<S>();
  uint8_t* codes = payload + geo.codesAt(group) + S::runStart(0, lig);
  uint8_t* words = payload + geo.metaAt(nb, group);
  size_t t = static_cast<size_t>(warp);
#pragma unroll
  for (int s = 0; s + 1 < kStages; ++s) {
    const size_t tf = t + s * stride;
    if (tf < nstaged) St::copy(ring + s * St::kTileBytes, src + tf * St::kTileBytes, lane);
    stageCommit();
  }
  int slot = 0;  // buffer of tile t; tile t + (kStages - 1) * stride goes to the one before it
  for (; t < nstaged; t += stride) {
    const int fslot = slot == 0 ? kStages - 1 : slot - 1;
    const size_t tf = t + (kStages - 1) * stride;
    if (tf < nstaged) St::copy(ring + fslot * St::kTileBytes, src + tf * St::kTileBytes, lane);
    stageCommit();
    stageWait<kStages - 1>();
    const SmemAddr rd = readBase + slot * St::kTileBytes;
    float v[S::kE1][S::kE0];
    uint32_t q[S::kE1][S::kW];
    St::read(rd, v);
    const uint32_t w = C::encode(
        v, [&](float(&x)[S::kE1][S::kE0]) { St::read(rd, x); }, q, lig, prm);
    uint8_t* cp = codes + t * Geom::kCodeBytes;
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      uint8_t* p = cp + j * S::kL * S::kE0;
      if constexpr (S::kW == 1) {
        *reinterpret_cast<uint32_t*>(p) = q[j][0];
      } else if constexpr (S::kW == 2) {
        *reinterpret_cast<uint2*>(p) = make_uint2(q[j][0], q[j][1]);
      } else {
#pragma unroll
        for (int k = 0; k < S::kW; k += 4)
          *reinterpret_cast<uint4*>(p + 4 * k) = make_uint4(q[j][k], q[j][k + 1], q[j][k + 2],
                                                            q[j][k + 3]);
      }
    }
    if (lig == 0) *reinterpret_cast<uint32_t*>(words + Geom::kMetaBytes * t) = w;
    __syncwarp();  // every lane is done with the buffer before it is refilled
    slot = slot + 1 == kStages ? 0 : slot + 1;
  }
  stageWait<0>();
  const size_t ntiles = (nb + Geom::kBlocks - 1) / Geom::kBlocks;
  if (t < ntiles) encodeTilesCold<Fam, G, Tag>(d, in, n, payload, t, nwarps);
}

// `stage`: this warp's DecodeStage<S>::kBytes of shared memory, 16-byte aligned, or null.
template <class Fam, int G, class Tag>
__device__ __forceinline__ void decodeTilesStaged(const CodecDesc& d, const uint8_t* payload,
                                                  size_t n, typename Tag::T* out, int warp,
                                                  int nwarps, uint8_t* stage) {
  using S = TileShapeFor<Fam, G, Tag>;
  using C = typename Fam::template Tile<S>;
  using Geom = TileGeom<S>;
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  using St = DecodeStage<S>;
  using T = typename Tag::T;
  constexpr int kStages = St::kStages;
  const typename C::Params prm = C::params(d);
  const size_t nb = tileGeometry<S>().blocks(n);
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(payload) | reinterpret_cast<uintptr_t>(out)) & 15u) == 0;
  // tiles [0, nstaged): whole blocks only (every output element inside n), aligned buffers
  const size_t nstaged = stage != nullptr && aligned ? n / G / Geom::kBlocks : 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / S::kL, lig = lane % S::kL;
  const size_t stride = static_cast<size_t>(nwarps);
  const SmemAddr ring = stage != nullptr ? smemAddr(stage) : SmemAddr{};
  const SmemAddr readBase = ring + St::readOffset(group, lig);
  const SmemAddr wordBase = ring + St::wordOffset(group);
  size_t tf = static_cast<size_t>(warp);
  constexpr PayloadGeometry geo = tileGeometry<S>();
  const uint8_t* src = payload + geo.codesAt(tf * Geom::kBlocks);
  const uint8_t* srcw = payload + geo.metaAt(nb, tf * Geom::kBlocks);
  const size_t srcStep = stride * Geom::kCodeBytes, srcwStep = stride * Geom::kMetaBytes;
  size_t t = tf;
  T* dst = out + t * Geom::kElems + group * G + S::runStart(0, lig);
  const size_t dstStep = stride * Geom::kElems;
#pragma unroll
  for (int s = 0; s + 1 < kStages; ++s) {
    if (tf < nstaged) St::copy(ring + s * St::kTileBytes, src, srcw, lane);
    stageCommit();
    tf += stride;
    src += srcStep;
    srcw += srcwStep;
  }
  int slot = 0;
  for (; t < nstaged; t += stride) {
    const int fslot = slot == 0 ? kStages - 1 : slot - 1;
    if (tf < nstaged) St::copy(ring + fslot * St::kTileBytes, src, srcw, lane);
    stageCommit();
    tf += stride;
    src += srcStep;
    srcw += srcwStep;
    stageWait<kStages - 1>();
    uint32_t q[S::kE1][S::kW];
    const uint32_t w =
        St::read(readBase + slot * St::kTileBytes, wordBase + slot * St::kTileBytes, q);
    float v[S::kE1][S::kE0];
    C::decode(q, w, v, lig, prm);
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
      *reinterpret_cast<uint4*>(dst + j * S::kL * S::kE0) = TileIO<Tag>::pack(v[j]);
    dst += dstStep;
    __syncwarp();
    slot = slot + 1 == kStages ? 0 : slot + 1;
  }
  stageWait<0>();
  const size_t ntiles = (nb + Geom::kBlocks - 1) / Geom::kBlocks;
  if (t < ntiles) decodeTilesCold<Fam, G, Tag>(d, payload, n, out, t, nwarps);
}

}  // namespace kdev
}  // namespace coccl
