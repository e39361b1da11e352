// int8 on a tile (tile_math.cuh's layout): kmath::int8EncodeBlock / int8DecodeBlock
// (src/codecs/int8/int8_block.h) for the 32/L blocks a warp holds, in the host's evaluation
// order. Int8Family is the codec's tile family (tile_codec.cuh dispatches to it).
//
// Transform-mode codes: the host's clamp(rneInt(y * inv), -127, 127) with inv = 127 / m and
// m = max |y| is rneInt(y * inv) alone: |y| <= m makes |y * inv| <= 127 (1 + 2^-24) before the
// multiply's rounding, at most 127 + 2^-17 after it, which rounds to 127. So the code byte is
// the low byte of the bits of (y * inv) + 1.5 * 2^23 (rneInt's addition: its bits are
// 0x4B400000 + code): one multiply and one add an element, no integer work but the byte packing.
//
// Decode: the Hadamard transform of int8 codes is exact in fp32 (every partial sum an integer of
// magnitude <= 127 * G < 2^24), so it may run on the codes plus a constant bias: each code
// enters as the exact fp32 s + kInt8Bias (convert.cuh: one byte permute, no I2F). H(s + b 1) =
// H(s) + G b e_0, so after the transform only element 0 of each block carries the bias, removed
// exactly by one subtraction (for G <= 256, where the biased partial sums stay below 2^24; at
// G = 512 each element is unbiased before the transform instead).
#pragma once

#include <cstdint>

#include "codecs/int8/int8_block.h"
#include "kernels/cuda/tile_math.cuh"

namespace coccl {
namespace kdev {

template <class S>
struct TileInt8 {
  static constexpr int G = S::kG, E0 = S::kE0, E1 = S::kE1, L = S::kL, W = S::kW;
  using K = kmath::Int8Consts;
  struct Params {
    int mode;  // kmath::kInt8Plain / kInt8Rotated / kInt8Auto
  };
  __host__ __device__ static Params params(const CodecDesc& d) { return Params{d.rotate}; }

  // the owner step does not sum in the rotated domain (the encode needs the sum itself); it
  // splits its sum instead (splitSum below)
  __host__ __device__ static constexpr bool rotatedReduceFor(int) { return false; }

  // ---- the owner step's split sum (kmath::int8SplitSum / int8DecodeUntransformed,
  // int8_block.h; reduce_tile.cuh's sumTileSplit) ----
  __host__ __device__ static bool splitSum(const Params& p) { return kmath::int8SplitSum(p.mode); }

  // out = each group's block before its transform (c q; the RAW decode of a RAW block);
  // returns whether this lane's block is rotated. No transform, no shuffle but the branches'.
  __device__ __forceinline__ static bool decodeUntransformed(const uint32_t (&q)[E1][W],
                                                             uint32_t word, float (&out)[E1][E0],
                                                             const Params& p) {
    using namespace kmath;
    const bool raw = isRawWord(word);
    if (!__all_sync(kFullMask, raw)) {
      dequantBiased(q, out);
      unbias(out);
      scaleBy(out, bitsFloat(word));
    }
    if (__any_sync(kFullMask, raw) && raw) rawDecode(q, word, out);
    return !raw && int8WordRotated(word, p.mode);
  }

  // Biased partial sums stay exact (below 2^24) for G <= 256.
  static constexpr bool kBiasedTransform = G * (32768.0 + 255.0) < 16777216.0;

  // codes of v * k, every lane
  __device__ __forceinline__ static void quantize(const float (&v)[E1][E0], float k,
                                                  uint32_t (&q)[E1][W]) {
    using namespace kmath;
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        uint32_t c4[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          c4[i] = floatBits(addRn(mulRn(v[j][4 * w + i], k), 12582912.0f));
        q[j][w] = packBytes4(c4[0], c4[1], c4[2], c4[3]);
      }
    }
  }

  // Auto mode (kInt8Auto): both forms are computed for every group's block (the transform's
  // shuffles are warp-wide), the choice is a per-lane select of (m, inv, k, c); a warp holding a
  // block that takes the plain form reloads x after the rotated codes and requantizes those
  // lanes (no shuffles in that per-lane branch).
  template <class Reload>
  __device__ __forceinline__ static uint32_t encode(float (&v)[E1][E0], Reload&& reload,
                                                    uint32_t (&q)[E1][W], int lig,
                                                    const Params& p) {
    using namespace kmath;
    const bool rotating = p.mode != kInt8Plain, autoMode = p.mode == kInt8Auto;
    float amax = 0.0f, energy = 0.0f;
    bool raw;
    if (rotating) energy = tileEnergy<S>(v);
    if (autoMode || !rotating) {
      amax = groupMaxAbs<L>(tileMaxAbs<S>(v));
      raw = blockIsRaw(amax);
    } else {
      raw = rawByEnergyReload<S>(energy, reload);
    }
    uint32_t word = 0;
    bool vIsX = true;  // v still holds x (warp-uniform)
    if (!__all_sync(kFullMask, raw)) {
      float m, c, inv, k;
      bool rotated = rotating;
      if (rotating) {
        vIsX = false;
        const Rotated t = rotateTile<S>(v, energy, raw, K::kQmax, K::kLambda, K::kAlphaMin,
                                        K::kAlphaMax, reload, lig);
        m = t.m;
        inv = t.inv;
        k = t.k;
        c = decodeMultiplier(m, K::kQmax, 1.0f / static_cast<float>(G), t.invAlpha);
        if (autoMode) {
          const float cPlain = divRn(amax, K::kQmax);
          rotated = int8PickRotated<G>(c, cPlain);
          const float invPlain = divRn(K::kQmax, amax);
          m = rotated ? m : amax;
          inv = rotated ? inv : invPlain;
          k = rotated ? k : invPlain;
          c = rotated ? c : cPlain;
        }
      } else {
        m = amax;
        c = divRn(m, K::kQmax);
        inv = k = divRn(K::kQmax, m);
      }
      raw = static_cast<bool>(raw | !scalesUsable(m, inv, c));
      word = int8Word(c, p.mode, rotated);
      // every lane; the lanes of RAW blocks overwrite theirs below
      quantize(v, k, q);
      if (autoMode && __any_sync(kFullMask, !raw && !rotated)) {
        reload(v);
        vIsX = true;
        if (!rotated) quantize(v, k, q);
      }
    }
    if (__any_sync(kFullMask, raw)) {
      if (raw && !vIsX) reload(v);
      const float r = rawScale(groupMaxAbsFinite<S>(v), K::kRawR);
      if (raw) {
        rawCodes(v, r, q);
        word = rawWord(r);
      }
    }
    return word;
  }

  // kmath::int8EncodeRaw's codes for the block's raw scale r.
  __device__ __forceinline__ static void rawCodes(const float (&x)[E1][E0], float r,
                                                  uint32_t (&q)[E1][W]) {
    using namespace kmath;
    auto code = [](int32_t c) { return static_cast<uint32_t>(c); };
    rawCodesOf(
        x, code(K::kNan), code(K::kPosInf), code(K::kNegInf),
        [r](float xv, uint32_t u) -> uint32_t {
          const int32_t qv = r == 0.0f ? 0 : clampI32(rneInt(divRn(xv, r)), -125, 125);
          return static_cast<uint32_t>((qv == 0 && (u >> 31)) ? K::kNegZero : qv);
        },
        q);
  }

  // out = code + kInt8Bias, exactly.
  __device__ __forceinline__ static void dequantBiased(const uint32_t (&q)[E1][W],
                                                       float (&out)[E1][E0]) {
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        const uint32_t xw = q[j][w] ^ kInt8Flip;
        out[j][4 * w] = int8BiasedAt<0>(xw);
        out[j][4 * w + 1] = int8BiasedAt<1>(xw);
        out[j][4 * w + 2] = int8BiasedAt<2>(xw);
        out[j][4 * w + 3] = int8BiasedAt<3>(xw);
      }
    }
  }

  __device__ __forceinline__ static void unbias(float (&out)[E1][E0]) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e) out[j][e] = kmath::subRn(out[j][e], kInt8Bias);
  }

  __device__ __forceinline__ static void scaleBy(float (&out)[E1][E0], float c) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e) out[j][e] = kmath::mulRn(out[j][e], c);
  }

  __device__ __forceinline__ static void rawDecode(const uint32_t (&q)[E1][W], uint32_t word,
                                                   float (&out)[E1][E0]) {
    const float r = kmath::rawScaleFromWord(word);
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e)
        out[j][e] = kmath::int8DecodeRawElem(static_cast<int8_t>(q[j][e / 4] >> (8 * (e % 4))), r);
  }

  __device__ __forceinline__ static void decode(const uint32_t (&q)[E1][W], uint32_t word,
                                                float (&out)[E1][E0], int lig, const Params& p) {
    using namespace kmath;
    const bool raw = isRawWord(word);
    if (!__all_sync(kFullMask, raw)) {
      dequantBiased(q, out);
      // per lane (auto mode: the word's flag); the transform runs warp-wide, the lanes of plain
      // blocks dequantize again afterwards (no shuffles in that branch)
      const bool rotated = !raw && int8WordRotated(word, p.mode);
      if (__any_sync(kFullMask, rotated)) {
        if constexpr (kBiasedTransform) {
          tileFwht<S>(out, lig);
          // the bias G * kInt8Bias sits on element 0 of the block: run 0, element 0 of lane 0
          out[0][0] = subRn(out[0][0], lig == 0 ? static_cast<float>(G) * kInt8Bias : 0.0f);
        } else {
          unbias(out);
          tileFwht<S>(out, lig);
        }
        if (!rotated) {
          dequantBiased(q, out);
          unbias(out);
        }
      } else {
        unbias(out);
      }
      scaleBy(out, bitsFloat(word));
    }
    if (__any_sync(kFullMask, raw) && raw) rawDecode(q, word, out);
  }
};

// The tile family of int8: the tile codec for a shape S.
struct Int8Family {
  static constexpr CodecKind kKind = CodecKind::Int8;
  template <class S>
  using Tile = TileInt8<S>;
};

// Calls fn(family) with the tile family d selects (tile_codec.cuh's dispatch on the codec list).
template <>
struct DeviceTiles<CodecKind::Int8> {
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
  template <class Fn>
  __host__ __device__ static void dispatch(const CodecDesc&, Fn&& fn) {
    fn(Int8Family{});
  }
};

}  // namespace kdev
}  // namespace coccl
