// Tile codecs: the block math of src/kernels/*_block.h for a codec block of G elements spread
// over L = G / (E0 * E1) lanes of a warp, each lane holding E1 runs of E0 contiguous elements
// (one 16-byte vector of the input type per run):
//
//   element index in the block of run j, element e of lane-in-group k:  (j * L + k) * E0 + e
//
// i.e. the index bits are [ j bits | lane bits | e bits ] from high to low. Each step of the
// host's fixed evaluation order maps onto this layout without reordering:
//   - Walsh-Hadamard stages run over index bits lowest first: the e bits inside a run, then the
//     lane bits by __shfl_xor (one shuffle and one fma(v, +-1, other) per element: the fma
//     computes other + v resp. other - v with one rounding, bitwise the host's a + c / a - c),
//     then the j bits across the lane's runs;
//   - the energy's pairwise tree runs over the same bits in the same order: levels over e in
//     the run, then over the lane bits (__shfl_xor, a + b == b + a), then over j;
//   - max |.| is exact in any order.
// With E0 * E1 = 32 elements a lane, a G = 128 block has 2 lane stages (bf16: 4 runs of 8;
// fp32: 8 runs of 4) and a warp encodes 8 blocks at once: the per-block scalar work (sqrt and
// three IEEE divisions) is paid once per 1024 elements a warp, and every load is a 16-byte
// vector, the L lanes of a group reading L * 16 contiguous bytes.
//
// Convergence: every function here is called by all 32 lanes of a warp together (each L-lane
// group with its own block): shuffles use the full mask, and every branch around a shuffle is
// warp-uniform (__all_sync / __any_sync over the groups' RAW decisions), so the compiler emits
// plain SHFL.BFLY with no divergence handling. Per-group outcomes (RAW or transform) are
// selected per lane after the shared work. Codes are kept packed, four per 32-bit word, code e
// of a run in byte e % 4 of word e / 4.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/codec_desc.h"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/warp_codec.cuh"

// Elements each lane holds of one block (capped at G): encode / decode hold 32 (the per-block
// scalar work, a sqrt and three IEEE divisions, is paid once per 1024 elements a warp, and G=128
// needs two lane stages); the reductions, which keep an accumulator, a decoded input and the
// tile being encoded live at once, hold 16 (decode-accumulate, without the encode, too: at 32
// it spills under the 80-register cap). Compile-time knobs for experiments.
#ifndef COCCL_TILE_ELEMS
#define COCCL_TILE_ELEMS 32
#endif
#ifndef COCCL_REDUCE_TILE_ELEMS
#define COCCL_REDUCE_TILE_ELEMS 16
#endif
#ifndef COCCL_ACCUMULATE_TILE_ELEMS
#define COCCL_ACCUMULATE_TILE_ELEMS 16
#endif

namespace coccl {
namespace kdev {

template <int G, int E0, int E1>
struct TileShape {
  static constexpr int kG = G, kE0 = E0, kE1 = E1, kE = E0 * E1, kL = G / (E0 * E1);
  static constexpr int kW = E0 / 4;  // packed code words per run
  static_assert(E0 >= 4 && (E0 & (E0 - 1)) == 0, "E0 must be a power of two >= 4");
  static_assert(E1 >= 1 && (E1 & (E1 - 1)) == 0, "E1 must be a power of two");
  static_assert(kL >= 1 && kL <= 32 && kE * kL == G, "bad tile shape");
  // first element (within the block) of run j of lane-in-group k
  __device__ __forceinline__ static int runStart(int j, int k) { return (j * kL + k) * E0; }
};

// The tile shape for a block of G elements of a type of TBytes bytes: 16-byte runs, Elems
// elements a lane.
template <int G, int TBytes, int Elems = COCCL_TILE_ELEMS>
struct TileRun {
  static constexpr int E0 = 16 / TBytes;
  static constexpr int E = Elems < G ? (Elems > E0 ? Elems : E0) : G;
  static constexpr int E1 = E / E0 > 0 ? E / E0 : 1;
  using Shape = TileShape<G, E0, E1>;
};

// ---- reductions -----------------------------------------------------------------------------

// Pairwise tree over (t[2i], t[2i+1]), level by level (kmath::pairwiseSum's order).
template <int N>
__device__ __forceinline__ float treeSum(float (&t)[N]) {
#pragma unroll
  for (int w = N; w > 1; w >>= 1) {
#pragma unroll
    for (int i = 0; i < w / 2; ++i) t[i] = kmath::addRn(t[2 * i], t[2 * i + 1]);
  }
  return t[0];
}

// Reductions over the L lanes of each group (xor offsets below L stay inside the group); the
// whole warp calls them.
template <int L>
__device__ __forceinline__ float groupMaxAbs(float m) {
#pragma unroll
  for (int off = 1; off < L; off <<= 1) m = maxAbsNan(m, __shfl_xor_sync(kFullMask, m, off));
  return m;
}

// Butterfly sum over lane bits, lowest first (a + b == b + a: the same value in every lane).
template <int L>
__device__ __forceinline__ float groupSum(float s) {
#pragma unroll
  for (int off = 1; off < L; off <<= 1) s = kmath::addRn(s, __shfl_xor_sync(kFullMask, s, off));
  return s;
}

template <int L>
__device__ __forceinline__ uint32_t groupMaxBits(uint32_t v) {
#pragma unroll
  for (int off = 1; off < L; off <<= 1) {
    const uint32_t o = __shfl_xor_sync(kFullMask, v, off);
    v = o > v ? o : v;
  }
  return v;
}

// max |v| over the lane's tile, NaN if any element is NaN.
template <class S>
__device__ __forceinline__ float tileMaxAbs(const float (&v)[S::kE1][S::kE0]) {
  float m[S::kE1];
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    float a = maxAbsNan(0.0f, v[j][0]), b = maxAbsNan(0.0f, v[j][1]);
#pragma unroll
    for (int e = 2; e < S::kE0; e += 2) {
      a = maxAbsNan(a, v[j][e]);
      b = maxAbsNan(b, v[j][e + 1]);
    }
    m[j] = maxAbsNan(a, b);
  }
#pragma unroll
  for (int w = S::kE1; w > 1; w >>= 1) {
#pragma unroll
    for (int i = 0; i < w / 2; ++i) m[i] = maxAbsNan(m[2 * i], m[2 * i + 1]);
  }
  return m[0];
}

// kmath::blockEnergy<G> of the group's block (same value in every lane of the group).
template <class S>
__device__ __forceinline__ float tileEnergy(const float (&v)[S::kE1][S::kE0]) {
  float s[S::kE1];
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    float t[S::kE0 / 2];
#pragma unroll
    for (int i = 0; i < S::kE0 / 2; ++i)
      t[i] = kmath::addRn(kmath::mulRn(v[j][2 * i], v[j][2 * i]),
                          kmath::mulRn(v[j][2 * i + 1], v[j][2 * i + 1]));
    s[j] = treeSum(t);
  }
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) s[j] = groupSum<S::kL>(s[j]);
  return treeSum(s);
}

// v <- H_G v (unnormalized Sylvester Hadamard, stages over index bits lowest first).
template <class S>
__device__ __forceinline__ void tileFwht(float (&v)[S::kE1][S::kE0], int lig) {
  using kmath::addRn;
  using kmath::subRn;
#pragma unroll
  for (int h = 1; h < S::kE0; h <<= 1) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) {
        if (e & h) continue;
        const float a = v[j][e], c = v[j][e + h];
        v[j][e] = addRn(a, c);
        v[j][e + h] = subRn(a, c);
      }
    }
  }
  if constexpr (S::kL > 1) {
#pragma unroll
    for (int off = 1; off < S::kL; off <<= 1) {
      // low side: v + other; high side: other - v (= other + (-1) * v, one rounding)
      const float sg = (lig & off) ? -1.0f : 1.0f;
#pragma unroll
      for (int j = 0; j < S::kE1; ++j) {
#pragma unroll
        for (int e = 0; e < S::kE0; ++e) {
          const float other = __shfl_xor_sync(kFullMask, v[j][e], off);
          v[j][e] = __fmaf_rn(v[j][e], sg, other);
        }
      }
    }
  }
#pragma unroll
  for (int h = 1; h < S::kE1; h <<= 1) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      if (j & h) continue;
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) {
        const float a = v[j][e], c = v[j + h][e];
        v[j][e] = addRn(a, c);
        v[j + h][e] = subRn(a, c);
      }
    }
  }
}

// max over the group of the lane's largest finite |x| as bits (kmath::maxAbsBits<G, true>).
template <class S>
__device__ __forceinline__ float groupMaxAbsFinite(const float (&x)[S::kE1][S::kE0]) {
  int32_t m = 0;
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
#pragma unroll
    for (int e = 0; e < S::kE0; ++e) {
      int32_t a = static_cast<int32_t>(kmath::absBits(x[j][e]));
      a = a < 0x7f800000 ? a : 0;
      m = a > m ? a : m;
    }
  }
  return kmath::bitsFloat(groupMaxBits<S::kL>(static_cast<uint32_t>(m)));
}

// ---- scale math ---------------------------------------------------------------------------

// kmath::adaptiveAlpha<G>, with energy / G computed as energy * (1/G): for G a power of two
// both are the correctly rounded value of the same real number, so the bits agree.
template <int G>
__device__ __forceinline__ float tileAlpha(float energy, float qmax, float lambda, float alphaMin,
                                           float alphaMax) {
  using namespace kmath;
  const float msq = addRn(mulRn(energy, 1.0f / static_cast<float>(G)), lambda);
  float a = divRn(qmax, sqrtRn(msq));
  a = a < alphaMin ? alphaMin : a;
  a = a > alphaMax ? alphaMax : a;
  return floorPow2(a);
}

// divRn(1, alpha): exact by exponent arithmetic for a normal power of two whose inverse is
// normal (always the case for alpha in [2^-64, 2^64]), IEEE division otherwise.
__device__ __forceinline__ float invPow2(float alpha) {
  const uint32_t b = kmath::floatBits(alpha);
  const uint32_t e = b >> 23;
  if ((b & 0x807fffffu) == 0u && e >= 1u && e <= 253u) return kmath::bitsFloat((254u - e) << 23);
  return kmath::divRn(1.0f, alpha);
}

__device__ __forceinline__ bool blockIsRaw(float amax) {
  // all +-0, or any NaN / Inf (amax is NaN if any element is)
  return !(amax > 0.0f) || !(amax < kmath::bitsFloat(0x7f800000u));
}

// blockIsRaw(max |x|) of each group's block, from its energy when that decides: 0 < energy < Inf
// only if the block is finite (a NaN makes the sum NaN, an Inf makes it Inf) and not all +-0
// (else the sum is 0). Only when some block of the warp has energy 0 (all zero, or tiny values
// whose squares underflow), Inf (Inf, or huge values) or NaN does the warp take max |x|.
template <class S>
__device__ __forceinline__ bool rawByEnergy(float energy, const float (&x)[S::kE1][S::kE0]) {
  if (__all_sync(kFullMask, energy > 0.0f && energy < kmath::bitsFloat(0x7f800000u))) return false;
  return blockIsRaw(groupMaxAbs<S::kL>(tileMaxAbs<S>(x)));
}

// ---- fp8_ash_ds --------------------------------------------------------------------------------

template <class F, class S>
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
    bool raw = rawByEnergy<S>(energy, v);
    float inv = 0.0f, c = 0.0f;
    if (!__all_sync(kFullMask, raw)) {
      const float alpha = tileAlpha<G>(energy, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) v[j][e] = mulRn(alpha, v[j][e]);
      tileFwht<S>(v, lig);
      const float m = groupMaxAbs<L>(tileMaxAbs<S>(v));
      inv = divRn(Fmt::kQmax, m);
      c = decodeMultiplier(m, Fmt::kQmax, 1.0f / static_cast<float>(G), invPow2(alpha));
      raw = raw || !scalesUsable(m, inv, c);
      if (raw) reload(v);
    }
    uint32_t word = floatBits(c);
    if (__any_sync(kFullMask, raw)) {
      const float r = rawScale(groupMaxAbsFinite<S>(v), Fmt::kRawR);
      if (raw) {
        rawCodes(v, r, q);
        word = rawWord(r);
      }
    }
    if (!raw) {
#pragma unroll
      for (int j = 0; j < E1; ++j) {
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const float* y = &v[j][4 * w];
          q[j][w] = f32x4ToFp8x4<F>(mulRn(y[0], inv), mulRn(y[1], inv), mulRn(y[2], inv),
                                    mulRn(y[3], inv));
        }
      }
    }
    return word;
  }

  // The RAW codes of the lane's elements x for the block's raw scale r (kmath::ashEncodeRaw).
  __device__ __forceinline__ static void rawCodes(const float (&x)[E1][E0], float r,
                                                  uint32_t (&q)[E1][W]) {
    using namespace kmath;
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        uint32_t c[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float xv = x[j][4 * w + i];
          const uint32_t u = floatBits(xv);
          const uint32_t a = u & 0x7fffffffu;
          uint32_t code;
          if (a > 0x7f800000u) {
            code = Fmt::kNan;
          } else if (a == 0x7f800000u) {
            code = (u >> 31) ? Fmt::kNegInf : Fmt::kPosInf;
          } else if (r == 0.0f) {
            code = (u >> 24) & 0x80u;
          } else {
            const uint32_t k = floatToFp8SatNonNan<F>(divRn(xv, r));
            const uint32_t mag = k & 0x7fu;
            code = (k & 0x80u) | (mag > Fmt::kRawMaxCode ? Fmt::kRawMaxCode : mag);
          }
          c[i] = code;
        }
        q[j][w] = packBytes4(c[0], c[1], c[2], c[3]);
      }
    }
  }

  // RAW encode of every group's block (the whole warp calls; used by the unfused kernels).
  __device__ __forceinline__ static uint32_t encodeRaw(const float (&x)[E1][E0],
                                                       uint32_t (&q)[E1][W]) {
    const float r = kmath::rawScale(groupMaxAbsFinite<S>(x), Fmt::kRawR);
    rawCodes(x, r, q);
    return kmath::rawWord(r);
  }

  __device__ __forceinline__ static void dequant(const uint32_t (&q)[E1][W], float (&out)[E1][E0]) {
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        fp8x2ToF32<F>(q[j][w], out[j][4 * w], out[j][4 * w + 1]);
        fp8x2ToF32<F>(q[j][w] >> 16, out[j][4 * w + 2], out[j][4 * w + 3]);
      }
    }
  }

  // Decodes each group's block (codes q, scale word `word`) into out (fp32).
  __device__ __forceinline__ static void decode(const uint32_t (&q)[E1][W], uint32_t word,
                                                float (&out)[E1][E0], int lig, const Params&) {
    using namespace kmath;
    const bool raw = isRawWord(word);  // the same word in every lane of a group
    dequant(q, out);
    if (!__all_sync(kFullMask, raw)) {
      tileFwht<S>(out, lig);
      const float c = bitsFloat(word);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) out[j][e] = mulRn(out[j][e], c);
      if (raw) dequant(q, out);  // the shared transform clobbered it
    }
    if (raw) {
      const float r = rawScaleFromWord(word);
#pragma unroll
      for (int j = 0; j < E1; ++j) {
#pragma unroll
        for (int e = 0; e < E0; ++e) {
          const uint32_t code = (q[j][e / 4] >> (8 * (e % 4))) & 0xffu;
          // kmath::ashDecodeRawElem, with fp8ToFloat(code) from the conversion above (equal
          // for every code but the NaN codes, handled here)
          float z = mulRn(out[j][e], r);
          z = code == Fmt::kPosInf ? bitsFloat(0x7f800000u) : z;
          z = code == Fmt::kNegInf ? bitsFloat(0xff800000u) : z;
          z = (code & 0x7fu) == Fmt::kNan ? bitsFloat(0x7fc00000u) : z;
          out[j][e] = z;
        }
      }
    }
  }
};

// ---- int8 --------------------------------------------------------------------------------------

template <class S>
struct TileInt8 {
  static constexpr int G = S::kG, E0 = S::kE0, E1 = S::kE1, L = S::kL, W = S::kW;
  using K = kmath::Int8Consts;
  struct Params {
    bool rotate;
  };
  __host__ __device__ static Params params(const CodecDesc& d) { return Params{d.rotate != 0}; }

  template <class Reload>
  __device__ __forceinline__ static uint32_t encode(float (&v)[E1][E0], Reload&& reload,
                                                    uint32_t (&q)[E1][W], int lig,
                                                    const Params& p) {
    using namespace kmath;
    float amax = 0.0f, energy = 0.0f;
    bool raw;
    if (p.rotate) {
      energy = tileEnergy<S>(v);
      raw = rawByEnergy<S>(energy, v);
    } else {
      amax = groupMaxAbs<L>(tileMaxAbs<S>(v));
      raw = blockIsRaw(amax);
    }
    float inv = 0.0f, c = 0.0f;
    if (!__all_sync(kFullMask, raw)) {
      float m;
      if (p.rotate) {
        const float alpha = tileAlpha<G>(energy, K::kQmax, K::kLambda, K::kAlphaMin, K::kAlphaMax);
#pragma unroll
        for (int j = 0; j < E1; ++j)
#pragma unroll
          for (int e = 0; e < E0; ++e) v[j][e] = mulRn(alpha, v[j][e]);
        tileFwht<S>(v, lig);
        m = groupMaxAbs<L>(tileMaxAbs<S>(v));
        c = decodeMultiplier(m, K::kQmax, 1.0f / static_cast<float>(G), invPow2(alpha));
      } else {
        m = amax;
        c = divRn(m, K::kQmax);
      }
      inv = divRn(K::kQmax, m);
      const bool late = !raw && !scalesUsable(m, inv, c);
      if (p.rotate && (raw || late)) reload(v);  // without rotation v still holds x
      raw = raw || late;
    }
    uint32_t word = floatBits(c);
    if (__any_sync(kFullMask, raw)) {
      const float r = rawScale(groupMaxAbsFinite<S>(v), K::kRawR);
      if (raw) {
        rawCodes(v, r, q);
        word = rawWord(r);
      }
    }
    if (!raw) {
#pragma unroll
      for (int j = 0; j < E1; ++j) {
#pragma unroll
        for (int w = 0; w < W; ++w) {
          uint32_t c4[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            c4[i] = static_cast<uint32_t>(clampI32(rneInt(mulRn(v[j][4 * w + i], inv)), -127, 127));
          q[j][w] = packBytes4(c4[0], c4[1], c4[2], c4[3]);
        }
      }
    }
    return word;
  }

  // kmath::int8EncodeRaw's codes for the block's raw scale r.
  __device__ __forceinline__ static void rawCodes(const float (&x)[E1][E0], float r,
                                                  uint32_t (&q)[E1][W]) {
    using namespace kmath;
#pragma unroll
    for (int j = 0; j < E1; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        uint32_t c4[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float xv = x[j][4 * w + i];
          const uint32_t u = floatBits(xv);
          const uint32_t a = u & 0x7fffffffu;
          int32_t code;
          if (a > 0x7f800000u) {
            code = K::kNan;
          } else if (a == 0x7f800000u) {
            code = (u >> 31) ? K::kNegInf : K::kPosInf;
          } else {
            const int32_t qv = r == 0.0f ? 0 : clampI32(rneInt(divRn(xv, r)), -125, 125);
            code = (qv == 0 && (u >> 31)) ? K::kNegZero : qv;
          }
          c4[i] = static_cast<uint32_t>(code);
        }
        q[j][w] = packBytes4(c4[0], c4[1], c4[2], c4[3]);
      }
    }
  }

  __device__ __forceinline__ static void dequant(const uint32_t (&q)[E1][W], float (&out)[E1][E0]) {
#pragma unroll
    for (int j = 0; j < E1; ++j)
#pragma unroll
      for (int e = 0; e < E0; ++e)
        out[j][e] = static_cast<float>(static_cast<int8_t>(q[j][e / 4] >> (8 * (e % 4))));
  }

  __device__ __forceinline__ static void decode(const uint32_t (&q)[E1][W], uint32_t word,
                                                float (&out)[E1][E0], int lig, const Params& p) {
    using namespace kmath;
    const bool raw = isRawWord(word);
    dequant(q, out);
    if (p.rotate && !__all_sync(kFullMask, raw)) {
      tileFwht<S>(out, lig);
      if (raw) dequant(q, out);
    }
    if (raw) {
      const float r = rawScaleFromWord(word);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e)
          out[j][e] = int8DecodeRawElem(static_cast<int8_t>(q[j][e / 4] >> (8 * (e % 4))), r);
    } else {
      const float c = bitsFloat(word);
#pragma unroll
      for (int j = 0; j < E1; ++j)
#pragma unroll
        for (int e = 0; e < E0; ++e) out[j][e] = mulRn(out[j][e], c);
    }
  }
};

// Codec families: the tile codec for a shape S.
template <class F>
struct AshFamily {
  template <class S>
  using Tile = TileAsh<F, S>;
};
struct Int8Family {
  template <class S>
  using Tile = TileInt8<S>;
};

// ---- tile loads and stores ------------------------------------------------------------------

// 16-byte vectors of a Tag's type <-> E0 floats; single elements.
template <class Tag>
struct TileIO;

template <>
struct TileIO<Fp32Tag> {
  using T = float;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[4]) {
    v[0] = kmath::bitsFloat(r.x);
    v[1] = kmath::bitsFloat(r.y);
    v[2] = kmath::bitsFloat(r.z);
    v[3] = kmath::bitsFloat(r.w);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[4]) {
    return make_uint4(kmath::floatBits(v[0]), kmath::floatBits(v[1]), kmath::floatBits(v[2]),
                      kmath::floatBits(v[3]));
  }
  __device__ __forceinline__ static float load(float x) { return x; }
  __device__ __forceinline__ static float store(float v) { return v; }
};

template <>
struct TileIO<Bf16Tag> {
  using T = uint16_t;
  __device__ __forceinline__ static void unpack1(uint32_t w, float& lo, float& hi) {
    lo = kmath::bitsFloat(w << 16);
    hi = kmath::bitsFloat(w & 0xffff0000u);
  }
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[8]) {
    unpack1(r.x, v[0], v[1]);
    unpack1(r.y, v[2], v[3]);
    unpack1(r.z, v[4], v[5]);
    unpack1(r.w, v[6], v[7]);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[8]) {
    return make_uint4(f32x2ToBf16x2(v[0], v[1]), f32x2ToBf16x2(v[2], v[3]),
                      f32x2ToBf16x2(v[4], v[5]), f32x2ToBf16x2(v[6], v[7]));
  }
  __device__ __forceinline__ static float load(uint16_t x) { return bf16BitsToF32(x); }
  __device__ __forceinline__ static uint16_t store(float v) { return f32ToBf16(v); }
};

template <>
struct TileIO<Fp16Tag> {
  using T = uint16_t;
  __device__ __forceinline__ static void unpack1(uint32_t w, float& lo, float& hi) {
    lo = fp16BitsToF32(static_cast<uint16_t>(w));
    hi = fp16BitsToF32(static_cast<uint16_t>(w >> 16));
  }
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[8]) {
    unpack1(r.x, v[0], v[1]);
    unpack1(r.y, v[2], v[3]);
    unpack1(r.z, v[4], v[5]);
    unpack1(r.w, v[6], v[7]);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[8]) {
    return make_uint4(f32x2ToFp16x2(v[0], v[1]), f32x2ToFp16x2(v[2], v[3]),
                      f32x2ToFp16x2(v[4], v[5]), f32x2ToFp16x2(v[6], v[7]));
  }
  __device__ __forceinline__ static float load(uint16_t x) { return fp16BitsToF32(x); }
  __device__ __forceinline__ static uint16_t store(float v) { return f32ToFp16(v); }
};

// Loads the lane's tile of block elements [base, base + G) of `in` (n valid elements; the rest
// read as 0). `full`: the whole block is valid and `in` is 16-byte aligned (vector loads).
template <class Tag, class S>
__device__ __forceinline__ void loadTile(const typename Tag::T* in, size_t n, size_t base, int lig,
                                         bool full, float (&v)[S::kE1][S::kE0]) {
  using IO = TileIO<Tag>;
  static_assert(S::kE0 * sizeof(typename Tag::T) == 16, "runs are 16-byte vectors");
  if (full) {
    uint4 r[S::kE1];
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
      r[j] = *reinterpret_cast<const uint4*>(in + base + S::runStart(j, lig));
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) IO::unpack(r[j], v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const size_t first = base + S::runStart(j, lig);
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) v[j][e] = first + e < n ? IO::load(in[first + e]) : 0.0f;
    }
  }
}

template <class Tag, class S>
__device__ __forceinline__ void storeTile(typename Tag::T* out, size_t n, size_t base, int lig,
                                          bool full, const float (&v)[S::kE1][S::kE0]) {
  using IO = TileIO<Tag>;
  if (full) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
      *reinterpret_cast<uint4*>(out + base + S::runStart(j, lig)) = IO::pack(v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const size_t first = base + S::runStart(j, lig);
#pragma unroll
      for (int e = 0; e < S::kE0; ++e)
        if (first + e < n) out[first + e] = IO::store(v[j][e]);
    }
  }
}

// Payload access (host layout: codes of block b at payload + b*G, scale words at
// payload + nb*G). `vec`: payload is E0-byte aligned (then the scale words are 4-byte aligned).
template <class S>
__device__ __forceinline__ uint32_t loadCodesTile(const uint8_t* payload, size_t nb, size_t b,
                                                  int lig, bool vec, uint32_t (&q)[S::kE1][S::kW]) {
  const uint8_t* blk = payload + b * S::kG;
  const uint8_t* wp = payload + nb * S::kG + 4 * b;
  if (vec) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const uint8_t* p = blk + S::runStart(j, lig);
      if constexpr (S::kW == 1) {
        q[j][0] = *reinterpret_cast<const uint32_t*>(p);
      } else if constexpr (S::kW == 2) {
        const uint2 t = *reinterpret_cast<const uint2*>(p);
        q[j][0] = t.x;
        q[j][1] = t.y;
      } else {
#pragma unroll
        for (int w = 0; w < S::kW; w += 4) {
          const uint4 t = *reinterpret_cast<const uint4*>(p + 4 * w);
          q[j][w] = t.x;
          q[j][w + 1] = t.y;
          q[j][w + 2] = t.z;
          q[j][w + 3] = t.w;
        }
      }
    }
    return *reinterpret_cast<const uint32_t*>(wp);
  }
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    const uint8_t* p = blk + S::runStart(j, lig);
#pragma unroll
    for (int w = 0; w < S::kW; ++w)
      q[j][w] = packBytes4(p[4 * w], p[4 * w + 1], p[4 * w + 2], p[4 * w + 3]);
  }
  return packBytes4(wp[0], wp[1], wp[2], wp[3]);
}

template <class S>
__device__ __forceinline__ void storeCodesTile(uint8_t* payload, size_t nb, size_t b, int lig,
                                               bool vec, const uint32_t (&q)[S::kE1][S::kW],
                                               uint32_t word) {
  uint8_t* blk = payload + b * S::kG;
  uint8_t* wp = payload + nb * S::kG + 4 * b;
  if (vec) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      uint8_t* p = blk + S::runStart(j, lig);
      if constexpr (S::kW == 1) {
        *reinterpret_cast<uint32_t*>(p) = q[j][0];
      } else if constexpr (S::kW == 2) {
        *reinterpret_cast<uint2*>(p) = make_uint2(q[j][0], q[j][1]);
      } else {
#pragma unroll
        for (int w = 0; w < S::kW; w += 4)
          *reinterpret_cast<uint4*>(p + 4 * w) =
              make_uint4(q[j][w], q[j][w + 1], q[j][w + 2], q[j][w + 3]);
      }
    }
    if (lig == 0) *reinterpret_cast<uint32_t*>(wp) = word;
    return;
  }
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    uint8_t* p = blk + S::runStart(j, lig);
#pragma unroll
    for (int w = 0; w < S::kW; ++w)
#pragma unroll
      for (int i = 0; i < 4; ++i) p[4 * w + i] = static_cast<uint8_t>(q[j][w] >> (8 * i));
  }
  if (lig == 0)
#pragma unroll
    for (int i = 0; i < 4; ++i) wp[i] = static_cast<uint8_t>(word >> (8 * i));
}

// Iterates the codec blocks of a chunk handled by this warp: each L-lane group of the warp takes
// one block, a warp 32/L consecutive blocks, the warps of the set interleaved. All 32 lanes make
// every call, so that the shuffles inside f stay warp-wide: f(b, lig, valid) with valid false
// for a group past the end, whose b is clamped to the last block (f computes on it and must not
// store).
template <int L, class Fn>
__device__ __forceinline__ void forEachTile(size_t nb, int warp, int nwarps, Fn&& f) {
  constexpr int kPerWarp = 32 / L;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / L, lig = lane % L;
  for (size_t base = static_cast<size_t>(warp) * kPerWarp; base < nb;
       base += static_cast<size_t>(nwarps) * kPerWarp) {
    const size_t b = base + static_cast<size_t>(group);
    const bool valid = b < nb;
    f(valid ? b : nb - 1, lig, valid);
  }
}

}  // namespace kdev
}  // namespace coccl
