// The grid-wide owner step (decode-reduce-encode) with its inputs staged through shared memory:
// a warp's ring of kStages slots, each holding one tile's raw input (the owner's own chunk) and
// the codes and scale words of every payload, filled by cp.async (kStages - 1) tiles ahead
// (tile_io.cuh's EncodeStage / DecodeStage copies), so that the loads of the next tile are in
// flight while this one is summed, encoded and stored: without it a warp's first loads of a
// tile are only in flight while it waits for them (ncu, perf/RESULTS.md 2026-12-07: a third of
// the owner step's stall cycles waited on loads). Staging takes no registers. The tile bodies
// are reduce_tile.cuh's, reading the slot through StagedTileSrc, so the bytes are those of the
// direct loop. Staged: whole tiles inside n, 16-byte aligned inputs that fit a slot (the raw
// input and up to 7 payloads; without one, 8 payloads, up to 10 for fp32); everything else (a
// partial last tile, unaligned buffers, more inputs, no stage) runs the direct loop, out of
// line.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/chunk_codec.cuh"

namespace coccl {
namespace kdev {

// A slot: the raw input's tile, then the payloads' tiles in rank order (self skipped); without
// a raw input (self = -1) the payloads start at the slot's beginning.
template <class S, class Tag>
struct ReduceStage {
  using Raw = EncodeStage<S, Tag>;
  using Pay = DecodeStage<S>;
  static constexpr int kInputs = 8;  // the raw input and 7 payloads, or 8 or more payloads
  static constexpr int kRawBytes = Raw::kTileBytes;
  static constexpr int kPayBytes = Pay::kTileBytes;
  static constexpr int kSlotBytes = kRawBytes + (kInputs - 1) * kPayBytes;
  static constexpr int kStages = 2;
  static constexpr int kBytes = kStages * kSlotBytes;  // a warp
  static_assert(kPayBytes <= kRawBytes, "8 payloads fit where the raw input and 7 do");
  static_assert(kRawBytes % 16 == 0 && kPayBytes % 16 == 0, "slots of 16-byte copies");

  __host__ __device__ static constexpr int payOffset(bool raw) { return raw ? kRawBytes : 0; }
  // p inputs, self's raw (self >= 0) among them, fit a slot
  __host__ __device__ static constexpr bool fits(int p, int self) {
    return payOffset(self >= 0) + (p - (self >= 0 ? 1 : 0)) * kPayBytes <= kSlotBytes;
  }
};

// Tile inputs read back from a filled slot (this lane's runs; the block's scale word).
template <class S, class Tag>
struct StagedTileSrc {
  SmemAddr rawAt;    // the lane's first run of the raw tile
  SmemAddr codesAt;  // the lane's first codes of the first payload tile
  SmemAddr wordAt;   // the group's scale word in the first payload tile
  int self;
  __device__ __forceinline__ void raw(float (&z)[S::kE1][S::kE0]) const {
    EncodeStage<S, Tag>::read(rawAt, z);
  }
  __device__ __forceinline__ uint32_t codes(int r, uint32_t (&q)[S::kE1][S::kW]) const {
    const int k = self >= 0 && r > self ? r - 1 : r;
    const int off = k * ReduceStage<S, Tag>::kPayBytes;
    return DecodeStage<S>::read(codesAt + off, wordAt + off, q);
  }
};

template <class Fam, int G, class Tag>
__device__ __noinline__ void reduceTilesCold(const CodecDesc d, const uint8_t* const* ins, int p,
                                             int self, const typename Tag::T* selfIn, size_t n,
                                             float scale, uint8_t* outPayload,
                                             typename Tag::T* userOut, size_t first, int nwarps) {
  reduceTilesDirect<Fam, G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut, first,
                                 nwarps);
}

// reduceChunkT's operation for warp `warp` of nwarps; `stage`: this warp's
// ReduceStage<S, Tag>::kBytes of shared memory, 16-byte aligned, or null (nothing staged).
template <class Fam, int G, class Tag>
__device__ __forceinline__ void reduceTilesStaged(const CodecDesc& d, const uint8_t* const* ins,
                                                  int p, int self, const typename Tag::T* selfIn,
                                                  size_t n, float scale, uint8_t* outPayload,
                                                  typename Tag::T* userOut, int warp, int nwarps,
                                                  uint8_t* stage) {
  using S = typename TileRun<G, sizeof(typename Tag::T), COCCL_REDUCE_TILE_ELEMS>::Shape;
  using C = typename Fam::template Tile<S>;
  using Geom = TileGeom<S>;
  using St = ReduceStage<S, Tag>;
  constexpr int kStages = St::kStages;
  constexpr PayloadGeometry geo = tileGeometry<S>();
  static_assert(familyFitsTiles<Fam, G, Tag>(), "");
  const typename C::Params prm = C::params(d);
  const ReduceTileArgs<Tag> a =
      reduceTileArgs<S, Tag>(ins, p, self, selfIn, n, scale, outPayload, userOut);
  uintptr_t inBits = self >= 0 ? reinterpret_cast<uintptr_t>(selfIn) : 0;
  for (int r = 0; r < p; ++r)
    if (r != self) inBits |= reinterpret_cast<uintptr_t>(ins[r]);
  // tiles [0, nstaged): every element inside n, 16-byte aligned inputs that fit a slot
  const size_t nstaged = stage != nullptr && (inBits & 15u) == 0 && St::fits(p, self)
                             ? n / static_cast<size_t>(Geom::kElems)
                             : 0;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / S::kL, lig = lane % S::kL;
  const size_t stride = static_cast<size_t>(nwarps);
  const SmemAddr ring = stage != nullptr ? smemAddr(stage) : SmemAddr{};
  const int payOff = St::payOffset(self >= 0);
  const auto fill = [&](SmemAddr slot, size_t tf) {
    if (self >= 0)
      St::Raw::copy(slot, reinterpret_cast<const uint8_t*>(selfIn) + tf * St::kRawBytes, lane);
    SmemAddr dst = slot + payOff;
    const size_t codesAt = geo.codesAt(tf * Geom::kBlocks);
    const size_t metaAt = geo.metaAt(a.nb, tf * Geom::kBlocks);
    for (int r = 0; r < p; ++r) {
      if (r == self) continue;
      St::Pay::copy(dst, ins[r] + codesAt, ins[r] + metaAt, lane);
      dst += St::kPayBytes;
    }
  };
  const auto run = [&](auto tileBody) {
    size_t t = static_cast<size_t>(warp);
#pragma unroll
    for (int s = 0; s + 1 < kStages; ++s) {
      const size_t tf = t + s * stride;
      if (tf < nstaged) fill(ring + s * St::kSlotBytes, tf);
      stageCommit();
    }
    int slot = 0;  // slot of tile t; tile t + (kStages - 1) * stride goes to the one before it
    for (; t < nstaged; t += stride) {
      const int fslot = slot == 0 ? kStages - 1 : slot - 1;
      const size_t tf = t + (kStages - 1) * stride;
      if (tf < nstaged) fill(ring + fslot * St::kSlotBytes, tf);
      stageCommit();
      stageWait<kStages - 1>();
      const SmemAddr sb = ring + slot * St::kSlotBytes;
      const StagedTileSrc<S, Tag> src{sb + St::Raw::readOffset(group, lig),
                                      sb + payOff + St::Pay::readOffset(group, lig),
                                      sb + payOff + St::Pay::wordOffset(group), self};
      tileBody(src, t * Geom::kBlocks + static_cast<size_t>(group));
      __syncwarp();  // every lane is done with the slot before it is refilled
      slot = slot + 1 == kStages ? 0 : slot + 1;
    }
    stageWait<0>();
    return t;
  };
  size_t t = 0;
  bool rotated = false;
  if constexpr (C::rotatedReduceFor(static_cast<int>(sizeof(typename Tag::T))))
    rotated = self >= 0 && outPayload != nullptr;
  if (rotated) {
    if constexpr (C::rotatedReduceFor(static_cast<int>(sizeof(typename Tag::T))))
      t = run([&](const StagedTileSrc<S, Tag>& src, size_t b) {
        reduceRotatedTile<C, S, Tag>(a, prm, src, b, lig, true, outPayload, userOut);
      });
  } else {
    t = run([&](const StagedTileSrc<S, Tag>& src, size_t b) {
      reduceTile<C, S, Tag, true>(a, prm, src, b, lig, true, outPayload, userOut);
    });
  }
  const size_t ntiles = (a.nb + Geom::kBlocks - 1) / Geom::kBlocks;
  if (t < ntiles)
    reduceTilesCold<Fam, G, Tag>(d, ins, p, self, selfIn, n, scale, outPayload, userOut, t, nwarps);
}

}  // namespace kdev
}  // namespace coccl
