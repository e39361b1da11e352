// Tile math shared by the tile codecs (src/codecs/<codec>/tile_*.cuh): the block math of
// src/codecs/<codec>/*_block.h for a codec block of G elements spread
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
#include "kernels/cuda/elem_tags.cuh"

// Elements each lane holds of one block (capped at G): encode / decode hold 32 (the per-block
// scalar work, a sqrt and three IEEE divisions, is paid once per 1024 elements a warp, and G=128
// needs two lane stages); the reductions, which keep an accumulator, a decoded input and the
// tile being encoded live at once, hold 16 (decode-accumulate, without the encode, too: at 32
// it spills under the 80-register cap). Compile-time knobs for experiments (TileRun raises a
// count below G / 32 to G / 32; perf/kernel_bench/README.md).
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
// elements a lane (at least one run, at most G; at least G / 32, a block's lanes in one warp).
template <int G, int TBytes, int Elems = COCCL_TILE_ELEMS>
struct TileRun {
  static constexpr int E0 = 16 / TBytes;
  static constexpr int kMin = E0 > G / 32 ? E0 : G / 32;
  static constexpr int E = Elems < G ? (Elems > kMin ? Elems : kMin) : G;
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

// The RAW codes of a block's elements x, four bytes to a word (the low byte of each code): NaN
// becomes `nan`, +-Inf `posInf` / `negInf`, a finite value xv (bits u) finite(xv, u). The int8
// and fp8_ash_ds tiles differ only in the codes and in `finite`.
template <int E1, int E0, int W, class Finite>
__device__ __forceinline__ void rawCodesOf(const float (&x)[E1][E0], uint32_t nan, uint32_t posInf,
                                           uint32_t negInf, Finite finite, uint32_t (&q)[E1][W]) {
#pragma unroll
  for (int j = 0; j < E1; ++j) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      uint32_t c[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float xv = x[j][4 * w + i];
        const uint32_t u = kmath::floatBits(xv);
        const uint32_t a = u & 0x7fffffffu;
        c[i] = a > 0x7f800000u    ? nan
               : a == 0x7f800000u ? ((u >> 31) ? negInf : posInf)
                                  : finite(xv, u);
      }
      q[j][w] = packBytes4(c[0], c[1], c[2], c[3]);
    }
  }
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

// rawByEnergy with the input fetched again by reload(x) when max |x| is needed (so that the
// lane's tile registers stay untouched on the common path).
template <class S, class Reload>
__device__ __forceinline__ bool rawByEnergyReload(float energy, Reload&& reload) {
  if (__all_sync(kFullMask, energy > 0.0f && energy < kmath::bitsFloat(0x7f800000u))) return false;
  float x[S::kE1][S::kE0];
  reload(x);
  return blockIsRaw(groupMaxAbs<S::kL>(tileMaxAbs<S>(x)));
}

// ---- the rotated codecs' transform ----------------------------------------------------------
//
// Host order (kmath::ashEncodeBlock, int8EncodeBlock): y = H(alpha x), m = max |y|, codes from
// y * inv with inv = Qmax / m. For alpha = 2^k >= 1 the same bits come from h = H(x): scaling
// by 2^k, k >= 0, is exact and commutes with every round-to-nearest addition of the transform
// (scaling up cannot underflow; sums in the subnormal range are exact), and an overflow of
// alpha * h shows in m, i.e. RAW, in both orders (the transform never shrinks max |.|). So
// y = alpha h, m = alpha max |h| and y * inv = h * (alpha * inv), where alpha * inv is exact for
// every block with usable scales (c normal bounds max |h| below). rotateTile therefore runs the
// transform on x, before alpha is known and without a multiply by alpha, and folds alpha into
// the quantization multiplier; only a warp holding a (non-RAW) block with alpha < 1, i.e. a
// block RMS above Qmax, reloads x and takes the host order.
struct Rotated {
  float m;    // max |y| of the group's block
  float inv;  // Qmax / m
  float k;    // the codes are those of v * k: inv, or alpha * inv
  float invAlpha;
};

template <class S, class Reload>
__device__ __forceinline__ Rotated rotateTile(float (&v)[S::kE1][S::kE0], float energy, bool raw,
                                              float qmax, float lambda, float alphaMin,
                                              float alphaMax, Reload&& reload, int lig) {
  using namespace kmath;
  tileFwht<S>(v, lig);
  const float alpha = tileAlpha<S::kG>(energy, qmax, lambda, alphaMin, alphaMax);
  const bool hostOrder = __any_sync(kFullMask, !raw && !(alpha >= 1.0f));
  if (hostOrder) {
    reload(v);
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) v[j][e] = mulRn(alpha, v[j][e]);
    tileFwht<S>(v, lig);
  }
  const float mv = groupMaxAbs<S::kL>(tileMaxAbs<S>(v));
  const float m = hostOrder ? mv : mulRn(alpha, mv);
  const float inv = divRn(qmax, m);
  return Rotated{m, inv, hostOrder ? inv : mulRn(alpha, inv), invPow2(alpha)};
}

// DeviceTiles<K>: the tile family of codec kind K, specialized in the codec's folder
// (src/codecs/<codec>/tile_*.cuh): dispatch(d, fn) calls fn(Family{}) with the family d selects.
// The primary template is a codec without tile family (None: src/codecs/none/none_kernels.cuh),
// for which dispatch calls nothing.
template <CodecKind K>
struct DeviceTiles {
  template <class Fn>
  __host__ __device__ static void dispatch(const CodecDesc&, Fn&&) {}
};

}  // namespace kdev
}  // namespace coccl
