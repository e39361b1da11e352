// int4 codec: the device tile, one block of G elements spread over L lanes of a warp, and the
// exact fast forms of int4_math.h's per-element operations that the kernels (int4_device.cu)
// use. Bytes are the host's (int4_block_host.h), bit for bit.
//
// Layout. Each lane holds J runs of R contiguous elements, a run one 16-byte vector (R = 8
// fp16 / bf16, 4 fp32; the run's R codes are R / 2 bytes of the payload, one 32- or 16-bit
// word): E = J * R elements a lane, E = G / 4 up to G = 128 (4 lanes a block, so that the
// lanes of a block read and write 64 contiguous bytes a vector), 32 up to G = 1024 and 64 for
// G = 2048 (encode alone takes the wider tile of Shape<..., Wide>); L = G / E lanes a block,
// 32 / L blocks a warp. Element index in the block of run j, element e of lane-in-block k:
// (j * L + k) * R + e, i.e. the index bits are [ j | k | e ] from high to low, and the
// Walsh-Hadamard stages over the bits lowest first (int4_math.h's order) are: the e bits inside
// a run, the k bits by __shfl_xor, the j bits across the lane's runs, each only while its bit is
// below S = min(G, 128). A G = 128 block is 4 lanes x 32 elements:
// 5 stages in registers, 2 by shuffle; the per-block scalar work (planBlock's divisions) is
// paid once per 32 elements of a lane.
//
// Exact fast forms (no int <-> float conversion, which runs at 1/8 of the fp32 rate):
//  - rneCode(v, inv): s = fma(v, inv, 1.5 * 2^23) rounds the exact product to an integer
//    (nearest even); the integer is s - 1.5 * 2^23 and its low 4 bits are bits(s)'s
//    (s = 0x4B400000 + q as bits), so the code nibble is bits(s) & 0xF: one instruction an
//    element. For non-RAW blocks |v * inv| <= 7 * (1 + 2^-23) (inv = RN(7 / m), |v| <= m): no
//    clamp.
//  - decode: nibble n -> bits 0x4B0000nn' (nn' = n ^ 8, one byte permute) = 2^23 + n + 8, minus
//    (2^23 + 8) is n, exactly.
// Compiled with --fmad=false; every operation here is one correctly rounded IEEE operation (the
// fmas' results are exact).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "int4_math.h"
#include "int4_params.h"

namespace int4c {
namespace tile {

constexpr unsigned kFull = 0xffffffffu;
constexpr float kMagic = kRneMagic;           // 1.5 * 2^23
constexpr uint32_t kTruncBias = 0x4B000000u;  // bits of 2^23

// The tile of a block of G elements in runs of R (16 / sizeof(T)). Wide (encode alone): 32
// elements a lane for 16-bit types, 16 for fp32, from G = 32 (planBlock's divisions once per
// lane's elements; at G = 32 and 16-bit types one lane a block); otherwise 4 lanes a block up to
// G = 128 (coalesced 64-byte runs of a block's lanes). Measured on one H200 (perf/RESULTS.md):
// the wide fp32 tile at 32 elements a lane needs 168 registers and is 25-30% slower for rotate=0
// and rotate=1 than at 16 (80 registers, 6 CTAs a multiprocessor).
template <int G_, int R_, bool Wide = false>
struct Shape {
  static constexpr int G = G_, R = R_;
  static constexpr int kWideE = R == 8 ? 32 : 16;
  static constexpr int E =
      G <= 128 && !Wide ? G / 4 : (G <= kWideE ? G : (G / 32 > kWideE ? G / 32 : kWideE));
  static constexpr int L = G / E;                      // lanes a block
  static constexpr int J = E / R;                      // runs a lane
  static constexpr int BPW = 32 / L;                   // blocks a warp
  static constexpr int S = G < kSubMax ? G : kSubMax;  // rotation sub-block
  static_assert((R == 4 || R == 8) && J >= 1 && E % R == 0 && L >= 1 && L <= 32 && E * L == G,
                "bad int4 tile shape");
  // first element (within the block) of run j of lane-in-block k
  __device__ static constexpr int runStart(int j, int k) { return (j * L + k) * R; }
};

// ---- reductions over the L lanes of a block (xor offsets below L stay inside it) -----------
template <int L>
__device__ __forceinline__ uint32_t groupMax(uint32_t v) {
#pragma unroll
  for (int o = 1; o < L; o <<= 1) {
    const uint32_t w = __shfl_xor_sync(kFull, v, o);
    v = w > v ? w : v;
  }
  return v;
}
template <int L>
__device__ __forceinline__ uint32_t groupXor(uint32_t v) {
#pragma unroll
  for (int o = 1; o < L; o <<= 1) v ^= __shfl_xor_sync(kFull, v, o);
  return v;
}
template <int L>
__device__ __forceinline__ uint32_t groupSum(uint32_t v) {
#pragma unroll
  for (int o = 1; o < L; o <<= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// v <- H_S v on each sub-block (k = the lane's index in its block), after the stage over bit 0
// (fwhtFrom / fwht). Every lane of the warp calls it; a lane whose block does not rotate
// computes on its own group's values only.
template <class Sh>
__device__ __forceinline__ void fwhtAfterBit0(float (&v)[Sh::J][Sh::R], int k) {
  constexpr int R = Sh::R, J = Sh::J, L = Sh::L, S = Sh::S;
#pragma unroll
  for (int h = 2; h < R && h < S; h <<= 1)
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) {
        if (e & h) continue;
        const float a = v[j][e], c = v[j][e + h];
        v[j][e] = addRn(a, c);
        v[j][e + h] = subRn(a, c);
      }
#pragma unroll
  for (int o = 1; o < L && R * o < S; o <<= 1) {
    // lower index: v + other; upper: other - v (= fma(v, -1, other): one rounding, exact sign)
    const float sg = (k & o) ? -1.0f : 1.0f;
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e)
        v[j][e] = __fmaf_rn(v[j][e], sg, __shfl_xor_sync(kFull, v[j][e], o));
  }
#pragma unroll
  for (int h = 1; h < J && R * L * h < S; h <<= 1)
#pragma unroll
    for (int j = 0; j < J; ++j) {
      if (j & h) continue;
#pragma unroll
      for (int e = 0; e < R; ++e) {
        const float a = v[j][e], c = v[j + h][e];
        v[j][e] = addRn(a, c);
        v[j + h][e] = subRn(a, c);
      }
    }
}

// y <- H_S x (the first stage writes y: no copy of x).
template <class Sh>
__device__ __forceinline__ void fwhtFrom(const float (&x)[Sh::J][Sh::R], float (&y)[Sh::J][Sh::R],
                                         int k) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j)
#pragma unroll
    for (int e = 0; e < Sh::R; e += 2) {
      y[j][e] = addRn(x[j][e], x[j][e + 1]);
      y[j][e + 1] = subRn(x[j][e], x[j][e + 1]);
    }
  fwhtAfterBit0<Sh>(y, k);
}

template <class Sh>
__device__ __forceinline__ void fwht(float (&v)[Sh::J][Sh::R], int k) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j)
#pragma unroll
    for (int e = 0; e < Sh::R; e += 2) {
      const float a = v[j][e], c = v[j][e + 1];
      v[j][e] = addRn(a, c);
      v[j][e + 1] = subRn(a, c);
    }
  fwhtAfterBit0<Sh>(v, k);
}

// ---- codes ---------------------------------------------------------------------------------
// R values whose low 4 bits are the codes (bits(s), or int32 codes) -> the run's code word
// (R / 2 bytes): byte i = code 2i (low nibble) | code 2i + 1 (high nibble).
template <int R>
__device__ __forceinline__ uint32_t pack(const uint32_t (&c)[R]) {
  uint32_t ev, od;
  if constexpr (R == 8) {
    ev = __byte_perm(__byte_perm(c[0], c[2], 0x0040u), __byte_perm(c[4], c[6], 0x0040u), 0x5410u);
    od = __byte_perm(__byte_perm(c[1], c[3], 0x0040u), __byte_perm(c[5], c[7], 0x0040u), 0x5410u);
  } else {
    ev = __byte_perm(c[0], c[2], 0x0040u);  // the low two bytes are used
    od = __byte_perm(c[1], c[3], 0x0040u);
  }
  const uint32_t w = (ev & 0x0F0F0F0Fu) | ((od << 4) & 0xF0F0F0F0u);
  return R == 8 ? w : (w & 0xffffu);
}

// The run's code word -> its R signed codes as fp32 (exact).
template <int R>
__device__ __forceinline__ void unpack(uint32_t w, float (&z)[R]) {
  const uint32_t t = w ^ 0x88888888u;  // n -> n + 8 in 0..15
  const uint32_t lo = t & 0x0F0F0F0Fu, hi = (t >> 4) & 0x0F0F0F0Fu;
#pragma unroll
  for (int i = 0; i < R / 2; ++i) {
    const uint32_t sel = 0x7650u + static_cast<uint32_t>(i);  // [byte i, 0, 0, 0x4B]
    z[2 * i] = __fsub_rn(__uint_as_float(__byte_perm(lo, kTruncBias, sel)), 8388616.0f);
    z[2 * i + 1] = __fsub_rn(__uint_as_float(__byte_perm(hi, kTruncBias, sel)), 8388616.0f);
  }
}

// The largest |v| of the lane as bits (NaN above +-Inf); FiniteOnly: over the finite elements.
template <int R, int J, bool FiniteOnly = false>
__device__ __forceinline__ uint32_t maxAbsBits(const float (&v)[J][R]) {
  uint32_t m = 0;
#pragma unroll
  for (int j = 0; j < J; ++j)
#pragma unroll
    for (int e = 0; e < R; ++e) {
      const uint32_t a = fbits(v[j][e]) & 0x7fffffffu;
      m = (a > m && (!FiniteOnly || a < 0x7f800000u)) ? a : m;
    }
  return m;
}

// The rneCode words of v * inv (non-RAW blocks: no clamp, see the header).
template <int R, int J>
__device__ __forceinline__ void codesOf(const float (&v)[J][R], float inv, uint32_t (&q)[J]) {
#pragma unroll
  for (int j = 0; j < J; ++j) {
    uint32_t c[R];
#pragma unroll
    for (int e = 0; e < R; ++e) c[e] = fbits(__fmaf_rn(v[j][e], inv, kMagic));
    q[j] = pack<R>(c);
  }
}

// What encode needs of a lane's E elements before the block's shuffles: the largest |x| as
// fp32 bits (NaN above +-Inf; maxAbsBits) and how many elements are not +-0 (auto's rule).
struct LaneStats {
  uint32_t amax;
  uint32_t nz;
};

// LaneStats from the lane's fp32 values; WithNz: the count too (else 0).
template <int R, int J, bool WithNz>
__device__ __forceinline__ LaneStats laneStats(const float (&v)[J][R]) {
  uint32_t nz = 0;
  if (WithNz) {
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; e += 2)
        nz += min(fbits(v[j][e]) & 0x7fffffffu, 1u) + min(fbits(v[j][e + 1]) & 0x7fffffffu, 1u);
  }
  return LaneStats{maxAbsBits<R, J>(v), nz};
}

// One block's encode from x (fp32; the lane's E elements, padded with +0), as encodeBlock of
// int4_block_host.h: the lane's code words q[J] and the block's scale word. y: scratch. lane:
// laneStats of x (NzGiven: with the count; else encode counts where auto's rule needs it).
template <class Sh, bool NzGiven>
__device__ __forceinline__ uint32_t encode(const Params& p, const float (&x)[Sh::J][Sh::R],
                                           float (&y)[Sh::J][Sh::R], size_t b, int k,
                                           LaneStats lane, uint32_t (&q)[Sh::J]) {
  constexpr int R = Sh::R, J = Sh::J, L = Sh::L, S = Sh::S, G = Sh::G;
  const uint32_t amax = groupMax<L>(lane.amax);
  const bool nonFinite = amax >= 0x7f800000u;
  float fmax = 0.0f;  // read by planBlock for RAW blocks only
  if (__any_sync(kFull, nonFinite)) fmax = bitsf(groupMax<L>(maxAbsBits<R, J, true>(x)));
  float m = 0.0f;
  const bool mayRotate = p.mode != kModePlain && !nonFinite;
  // y is written (and read) only where some block of the warp may rotate (warp-uniform)
  const bool anyRotate = p.mode != kModePlain && __any_sync(kFull, mayRotate);
  if (anyRotate) {
    fwhtFrom<Sh>(x, y, k);
    uint32_t mb;
    // |y| <= S * amax: below 2^121 no sum can overflow or be NaN, so max |y| as fp32 (one
    // instruction an element) is the integer maximum of the bits; otherwise the bits' maximum.
    if (__all_sync(kFull, !mayRotate || amax < 0x7c000000u)) {
      float f = 0.0f;
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int e = 0; e < R; ++e) f = fmaxf(f, fabsf(y[j][e]));
      mb = fbits(f);
    } else {
      mb = maxAbsBits<R, J>(y);
    }
    mb = groupMax<L>(mb);
    m = mayRotate ? bitsf(mb) : 0.0f;
  }
  // auto's rule (int4_math.h) before the one block plan: planBlock(.., auto) rotates exactly
  // where `rotates` holds, and then gives what kModeRotated does; elsewhere what kModePlain does
  int mode = p.mode;
  if (mode == kModeAuto) {
    const bool rotates = mayRotate && bitsf(amax) >= kTiny && m >= kTiny && fbits(m) < 0x7f800000u;
    mode = kModePlain;
    if (__any_sync(kFull, rotates)) {  // the block's elements that are not +-0, integer sums
      const uint32_t nz = groupSum<L>(NzGiven ? lane.nz : laneStats<R, J, true>(x).nz);
      if (rotates && autoRotates(m, bitsf(amax), nz, G, S)) mode = kModeRotated;
    }
  }
  const BlockPlan plan = planBlock(amax, fmax, m, mode, S);
  if (!anyRotate || !__any_sync(kFull, plan.rotated)) {
    codesOf<R, J>(x, plan.inv, q);  // RAW lanes are overwritten below
  } else if (__all_sync(kFull, plan.rotated || plan.raw)) {
    codesOf<R, J>(y, plan.inv, q);
  } else {
#pragma unroll
    for (int j = 0; j < J; ++j) {
      uint32_t c[R];
#pragma unroll
      for (int e = 0; e < R; ++e) {
        const float v = plan.rotated ? y[j][e] : x[j][e];
        c[e] = fbits(__fmaf_rn(v, plan.inv, kMagic));
      }
      q[j] = pack<R>(c);
    }
  }
  if (p.stochastic) {  // uniform over the grid: the codes again, with the element hashes
    uint32_t bh = 0;
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e)
        bh ^= elemHashTerm(fbits(x[j][e]), static_cast<uint32_t>(Sh::runStart(j, k) + e));
    bh = groupXor<L>(bh);
    const uint64_t e0 = static_cast<uint64_t>(b) * G;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      uint32_t c[R];
#pragma unroll
      for (int e = 0; e < R; ++e) {
        const float v = anyRotate && plan.rotated ? y[j][e] : x[j][e];
        const uint32_t h = int4Hash(p.seed, e0 + static_cast<uint64_t>(Sh::runStart(j, k) + e), bh);
        c[e] = static_cast<uint32_t>(quant(mulRn(v, plan.inv), true, h));
      }
      q[j] = pack<R>(c);
    }
  }
  if (plan.raw) {  // per lane, no shuffles
#pragma unroll
    for (int j = 0; j < J; ++j) {
      uint32_t c[R];
#pragma unroll
      for (int e = 0; e < R; ++e) c[e] = static_cast<uint32_t>(rawCode(x[j][e], plan.inv));
      q[j] = pack<R>(c);
    }
  }
  return plan.word;
}

// rawDecode of a code held as an (exact) fp32.
__device__ __forceinline__ float rawDecodeF(float z, float r) {
  if (z == 7.0f) return bitsf(0x7f800000u);
  if (z == -7.0f) return bitsf(0xff800000u);
  if (z == -8.0f) return bitsf(0x7fc00000u);
  return mulRn(z, r);
}

// One block's decode (decodeBlock of int4_block_host.h): the lane's E values as fp32. Only a
// RAW block decodes to NaN.
template <class Sh>
__device__ __forceinline__ void decode(const uint32_t (&q)[Sh::J], uint32_t word, int k,
                                       float (&v)[Sh::J][Sh::R]) {
  constexpr int R = Sh::R, J = Sh::J;
  const bool raw = (word & kRawBit) != 0u;
  const bool rot = !raw && (word & kPlainFlag) == 0u;
#pragma unroll
  for (int j = 0; j < J; ++j) unpack<R>(q[j], v[j]);
  if (__any_sync(kFull, rot)) {
    fwht<Sh>(v, k);
    if (!rot) {
#pragma unroll
      for (int j = 0; j < J; ++j) unpack<R>(q[j], v[j]);
    }
  }
  if (raw) {
    const float r = bitsf(word & 0x7fffffffu);
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) v[j][e] = rawDecodeF(v[j][e], r);
  } else {
    const float c = bitsf(word);
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) v[j][e] = mulRn(v[j][e], c);
  }
}

}  // namespace tile
}  // namespace int4c
