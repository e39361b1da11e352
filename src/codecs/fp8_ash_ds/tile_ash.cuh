// fp8_ash_ds on a tile (tile_math.cuh's layout): kmath::ashEncodeBlock / ashDecodeBlock
// (src/codecs/fp8_ash_ds/ash_block.h) for the 32/L blocks a warp holds, bitwise the host's
// results. AshFamily<F> is the codec's tile family (tile_codec.cuh dispatches to it).
//
// Encode hot path (every block of the warp finite, not all zero, usable scales, alpha >= 1):
// energy and Hadamard transform of x (rotateTile: alpha * x is never formed, alpha folds into
// the quantization multiplier), alpha, max |y| = alpha max |H x|, one scale word per block,
// codes of (H x) * (alpha * Qmax / m), four per 32-bit word by two
// cvt.rn.satfinite.{e4m3,e5m2}x2.f32. The RAW fallback (NaN / Inf / all zero / unusable scales)
// is taken per group after the warp-wide work, inside a branch that is warp-uniform
// (__any_sync) and so costs one vote when no group needs it; so is the host-order transform of
// a warp with a block whose alpha is below 1.
// Decode: dequantize (cvt.rn.f16x2.{e4m3,e5m2}x2 + two f16 -> f32), transform, * c; RAW blocks
// are decoded from their codes afterwards (warp-uniform branch).
// R = false (spec rotate=0, the ablation without the transform): the host order of
// kmath::ashEncodeBlock<G, F, false> as it is (y = alpha x, m = max |y|, codes of y * inv),
// decode fp8(q) * c; not tuned (an ablation), and its owner step takes the linear order.
#pragma once

#include <cstdint>

#include "codecs/fp8_ash_ds/ash_block.h"
#include "kernels/cuda/tile_math.cuh"

namespace coccl {
namespace kdev {

template <class F, class S, bool R = true>
struct TileAsh {
  static constexpr int G = S::kG, E0 = S::kE0, E1 = S::kE1, L = S::kL, W = S::kW;
  using Fmt = kmath::AshFormat<F>;
  struct Params {
    float lambda, alphaMin, alphaMax;
  };
  __host__ __device__ static Params params(const CodecDesc& d) {
    return Params{d.lambda, d.alphaMin, d.alphaMax};
  }

  // Encodes each group's block held in v (clobbered). reload(v) must put the lane's input back
  // into v (called by the lanes of RAW blocks after the shared transform). Writes the lane's
  // packed codes to q and returns the block's scale word (the same in every lane of a group).
  template <class Reload>
  __device__ __forceinline__ static uint32_t encode(float (&v)[E1][E0], Reload&& reload,
                                                    uint32_t (&q)[E1][W], int lig,
                                                    const Params& p) {
    using namespace kmath;
    const float energy = tileEnergy<S>(v);
    bool raw = rawByEnergyReload<S>(energy, reload);
    uint32_t word = 0;
    bool transformed = false;
    if (!R && !__all_sync(kFullMask, raw)) {
      transformed = true;
      const float alpha = tileAlpha<G>(energy, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) v[j][e] = mulRn(alpha, v[j][e]);
      const float m = groupMaxAbs<L>(tileMaxAbs<S>(v));
      const float inv = divRn(Fmt::kQmax, m);
      const float c = decodeMultiplier(m, Fmt::kQmax, 1.0f, invPow2(alpha));
      raw = static_cast<bool>(raw | !scalesUsable(m, inv, c));
      word = floatBits(c);
      codesOf(v, inv, q);
    } else if (R && !__all_sync(kFullMask, raw)) {
      transformed = true;
      const Rotated t =
          rotateTile<S>(v, energy, raw, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax, reload, lig);
      const float c = decodeMultiplier(t.m, Fmt::kQmax, 1.0f / static_cast<float>(G), t.invAlpha);
      raw = static_cast<bool>(raw | !scalesUsable(t.m, t.inv, c));
      word = floatBits(c);
      // every lane (no per-lane branch); the lanes of RAW blocks overwrite theirs below
      codesOf(v, t.k, q);
    }
    if (__any_sync(kFullMask, raw)) {
      if (raw && transformed) reload(v);
      const float r = rawScale(groupMaxAbsFinite<S>(v), Fmt::kRawR);
      if (raw) {
        rawCodes(v, r, q);
        word = rawWord(r);
      }
    }
    return word;
  }

  // The transform-mode codes of the lane's elements: fp8(y * k), four per 32-bit word.
  __device__ __forceinline__ static void codesOf(const float (&y)[E1][E0], float k,
                                                 uint32_t (&q)[E1][W]) {
    using kmath::mulRn;
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int w = 0; w < W; ++w)
        q[j][w] = f32x4ToFp8x4<F>(mulRn(y[j][4 * w], k), mulRn(y[j][4 * w + 1], k),
                                  mulRn(y[j][4 * w + 2], k), mulRn(y[j][4 * w + 3], k));
  }

  // The RAW codes of the lane's elements x for the block's raw scale r (kmath::ashEncodeRaw).
  __device__ __forceinline__ static void rawCodes(const float (&x)[E1][E0], float r,
                                                  uint32_t (&q)[E1][W]) {
    using namespace kmath;
    rawCodesOf(
        x, Fmt::kNan, Fmt::kPosInf, Fmt::kNegInf,
        [r](float xv, uint32_t u) -> uint32_t {
          if (r == 0.0f) return (u >> 24) & 0x80u;
          const uint32_t k = floatToFp8SatNonNan<F>(divRn(xv, r));
          const uint32_t mag = k & 0x7fu;
          return (k & 0x80u) | (mag > Fmt::kRawMaxCode ? Fmt::kRawMaxCode : mag);
        },
        q);
  }

  __device__ __forceinline__ static void dequant(const uint32_t (&q)[E1][W], float (&out)[E1][E0]) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int w = 0; w < W; ++w)
        fp8x4ToF32<F>(q[j][w], out[j][4 * w], out[j][4 * w + 1], out[j][4 * w + 2],
                      out[j][4 * w + 3]);
  }

  // kmath::ashDecodeRawElem of every element, from the codes (fp8ToFloat by the conversion
  // above: equal for every code but the NaN codes, handled here).
  __device__ __forceinline__ static void rawDecode(const uint32_t (&q)[E1][W], uint32_t word,
                                                   float (&out)[E1][E0]) {
    using namespace kmath;
    const float r = rawScaleFromWord(word);
    dequant(q, out);
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int e = 0; e < E0; ++e) {
        const uint32_t code = (q[j][e / 4] >> (8 * (e % 4))) & 0xffu;
        float z = mulRn(out[j][e], r);
        z = code == Fmt::kPosInf ? bitsFloat(0x7f800000u) : z;
        z = code == Fmt::kNegInf ? bitsFloat(0xff800000u) : z;
        z = (code & 0x7fu) == Fmt::kNan ? bitsFloat(0x7fc00000u) : z;
        out[j][e] = z;
      }
    }
  }

  // Decodes each group's block (codes q, scale word `word`) into out (fp32).
  __device__ __forceinline__ static void decode(const uint32_t (&q)[E1][W], uint32_t word,
                                                float (&out)[E1][E0], int lig, const Params&) {
    using namespace kmath;
    const bool raw = isRawWord(word);  // the same word in every lane of a group
    if (!__all_sync(kFullMask, raw)) {
      dequant(q, out);
      if (R) tileFwht<S>(out, lig);
      const float c = bitsFloat(word);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) out[j][e] = mulRn(out[j][e], c);
    }
    if (__any_sync(kFullMask, raw) && raw) rawDecode(q, word, out);
  }

  // ---- the owner step in the rotated domain (kmath::ashDecodeRotatedBlock /
  // ashEncodeRotatedBlock, ash_block.h) ----
  __host__ __device__ static constexpr bool rotatedReduceFor(int typeBytes) {
    return R && kmath::ashRotatedReduceFor(typeBytes);
  }

  // out = H(decode(q, word)) = q * (G c) of a transform block, no transform; +0 for the zero
  // RAW block; clears ok for any other RAW block (the owner step then takes the linear order
  // for the group). kmath::ashDecodeRotatedBlock.
  __device__ __forceinline__ static void decodeRotated(const uint32_t (&q)[E1][W], uint32_t word,
                                                       float (&out)[E1][E0], bool& ok) {
    using namespace kmath;
    const bool raw = isRawWord(word);  // the same in every lane of a group
    bool zero = false;
    if (__any_sync(kFullMask, raw)) {  // warp-uniform: the group's codes over its L lanes
      uint32_t nz = word ^ rawWord(0.0f);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) nz |= q[j][k] & 0x7f7f7f7fu;
      const uint32_t any = groupMaxBits<L>(nz);  // every lane of the warp (no short circuit)
      zero = raw && any == 0u;
    }
    ok = ok && (!raw || zero);
    dequant(q, out);
    const float gc = mulRn(bitsFloat(word), static_cast<float>(G));
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e) out[j][e] = zero ? 0.0f : mulRn(out[j][e], gc);
  }

  // Encodes each group's block S from w = H S into q and returns its scale word; clears ok
  // for a group that must take the linear order (w not finite, scales unusable), whose q and
  // word are then meaningless.
  __device__ __forceinline__ static uint32_t encodeRotated(const float (&w)[E1][E0],
                                                           uint32_t (&q)[E1][W], bool& ok,
                                                           const Params& p) {
    using namespace kmath;
    const float amax = groupMaxAbs<L>(tileMaxAbs<S>(w));  // NaN if any element is
    const bool finite = amax < bitsFloat(0x7f800000u);
    const bool zero = finite && !(amax > 0.0f);
    const float invG = 1.0f / static_cast<float>(G);
    const float energy = mulRn(tileEnergy<S>(w), invG);
    const float alpha = tileAlpha<G>(energy, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
    const float m = mulRn(alpha, amax);
    const float inv = divRn(Fmt::kQmax, m);
    const float c = decodeMultiplier(m, Fmt::kQmax, invG, invPow2(alpha));
    ok = ok && finite && (zero || scalesUsable(m, inv, c));
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float* y = &w[j][4 * k];
        const uint32_t codes =
            f32x4ToFp8x4<F>(mulRn(mulRn(alpha, y[0]), inv), mulRn(mulRn(alpha, y[1]), inv),
                            mulRn(mulRn(alpha, y[2]), inv), mulRn(mulRn(alpha, y[3]), inv));
        q[j][k] = zero ? 0u : codes;
      }
    }
    return zero ? rawWord(0.0f) : floatBits(c);
  }
};

// The tile family of fp8_ash_ds in format F (R: with the transform): the tile codec for a shape S.
template <class F, bool R = true>
struct AshFamily {
  static constexpr CodecKind kKind = CodecKind::Fp8AshDs;
  template <class S>
  using Tile = TileAsh<F, S, R>;
};

// Calls fn(family) with the tile family d selects (tile_codec.cuh's dispatch on the codec list).
template <>
struct DeviceTiles<CodecKind::Fp8AshDs> {
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
  template <class Fn>
  __host__ __device__ static void dispatch(const CodecDesc& d, Fn&& fn) {
    if (d.fp8E5M2)
      fn(AshFamily<kmath::Fp8E5M2>{});
    else if (d.rotate == 0)  // the ablation without the transform (e4m3 only: the spec parser)
      fn(AshFamily<kmath::Fp8E4M3, false>{});
    else
      fn(AshFamily<kmath::Fp8E4M3>{});
  }
};

}  // namespace kdev
}  // namespace coccl
