// tah's tile encode kernel (included by tah_device.cu after tah_quad.cuh, inside its anonymous
// namespace), after selectKernel wrote the header. A warp takes a step of Q quads (8 of a 16-bit
// input, 4 of an fp32 or scaled one): lane j of group g loads its 8 values of tile g of each quad
// (all the step's loads in flight at once). The tiles' statistics (min, max, the two largest
// |x|; a 16-bit input's as pairs, two values an instruction) are reduced across the group by
// recursive halving, so that each lane ends up with the whole statistics of one tile of the
// step: the tile's scalar work (placement, zero and scale, two divisions, the pivot test) runs
// a lane a tile, and its results go back to the group by shuffles. The values wait in shared
// memory (the step's stage), and a loop over the quads (not unrolled: the code stays small)
// codes every lane's 8 values of each tile and stores them (4 bytes of 4-bit codes, 3 of 3-bit
// ones).
#pragma once

// ---- pairs of 16-bit values in one word (bf16x2 / f16x2) ---------------------------------

// Min / max of each half (which of two equal zeros is taken does not matter: tah_tile_meta
// canonicalises signed zeros, and the |x| halves have none). The max propagates a NaN, so the
// largest |x| of values that are not all finite is not finite.
template <int Dt, bool Max>
__device__ __forceinline__ uint32_t pminmax(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  if (Dt == TAH_DT_BF16 && Max) asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  if (Dt == TAH_DT_BF16 && !Max) asm("min.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  if (Dt == TAH_DT_F16 && Max) asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  if (Dt == TAH_DT_F16 && !Max) asm("min.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  if (Max) {  // max.NaN's: a NaN half wins (the statistics' test for values that are not finite)
    uint32_t r = 0;
    for (int h = 0; h < 2; ++h) {
      const float x = half16<Dt>(a, h), y = half16<Dt>(b, h);
      const bool takeB = y != y || (x == x && y > x);
      r |= ((takeB ? b : a) >> (16 * h) & 0xffffu) << (16 * h);
    }
    return r;
  }
  uint32_t r = 0;
  for (int h = 0; h < 2; ++h) {
    const float x = half16<Dt>(a, h), y = half16<Dt>(b, h);
    const bool takeB = Max ? y > x : y < x;
    r |= ((takeB ? b : a) >> (16 * h) & 0xffffu) << (16 * h);
  }
  return r;
#endif
}
// ---- a tile's statistics ------------------------------------------------------------------

// min, max, the largest |x| and the second largest (duplicates count), of the values seen; in
// a packed word each half has its own.
template <class T>
struct Stats {
  T mn, mx, m1, m2;
};
__device__ __forceinline__ float fmin2(float a, float b) {
  return fminf(a, b);
}
__device__ __forceinline__ float fmax2(float a, float b) {
  return fmaxf(a, b);
}
template <int Dt>
struct PackedOps {  // Stats<uint32_t> of 16-bit pairs
  static __device__ __forceinline__ uint32_t mn(uint32_t a, uint32_t b) {
    return pminmax<Dt, false>(a, b);
  }
  static __device__ __forceinline__ uint32_t mx(uint32_t a, uint32_t b) {
    return pminmax<Dt, true>(a, b);
  }
};
struct FloatOps {  // Stats<float>: no NaN here (inputs are finite after fin)
  static __device__ __forceinline__ float mn(float a, float b) { return fmin2(a, b); }
  static __device__ __forceinline__ float mx(float a, float b) { return fmax2(a, b); }
};
template <class Op, class T>
__device__ __forceinline__ Stats<T> merge(const Stats<T>& a, const Stats<T>& b) {
  return Stats<T>{Op::mn(a.mn, b.mn), Op::mx(a.mx, b.mx), Op::mx(a.m1, b.m1),
                  Op::mx(Op::mn(a.m1, b.m1), Op::mx(a.m2, b.m2))};
}
// A lane's 8 values: 16-bit pairs (4 words) or floats.
template <int Dt>
__device__ __forceinline__ Stats<uint32_t> stats8(const uint4& r) {
  using Op = PackedOps<Dt>;
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
  Stats<uint32_t> s;
  s.mn = Op::mn(Op::mn(w[0], w[1]), Op::mn(w[2], w[3]));
  s.mx = Op::mx(Op::mx(w[0], w[1]), Op::mx(w[2], w[3]));
  s.m1 = w[0] & 0x7fff7fffu;
  s.m2 = 0;
  for (int k = 1; k < 4; ++k) {
    const uint32_t a = w[k] & 0x7fff7fffu;
    s.m2 = Op::mx(s.m2, Op::mn(s.m1, a));
    s.m1 = Op::mx(s.m1, a);
  }
  return s;
}
__device__ __forceinline__ Stats<float> stats8(const float* x) {
  Stats<float> s{x[0], x[0], fabsf(x[0]), 0.0f};
  for (int k = 1; k < 8; ++k) {
    const float a = fabsf(x[k]);
    s.mn = fminf(s.mn, x[k]), s.mx = fmaxf(s.mx, x[k]);
    s.m2 = fmaxf(s.m2, fminf(s.m1, a));
    s.m1 = fmaxf(s.m1, a);
  }
  return s;
}
// The halves of packed statistics as one.
template <int Dt>
__device__ __forceinline__ Stats<float> unpackStats(const Stats<uint32_t>& p) {
  const Stats<float> lo{half16<Dt>(p.mn, 0), half16<Dt>(p.mx, 0), half16<Dt>(p.m1, 0),
                        half16<Dt>(p.m2, 0)};
  const Stats<float> hi{half16<Dt>(p.mn, 1), half16<Dt>(p.mx, 1), half16<Dt>(p.m1, 1),
                        half16<Dt>(p.m2, 1)};
  return merge<FloatOps>(lo, hi);
}

__device__ __forceinline__ uint32_t shflX(uint32_t v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
__device__ __forceinline__ float shflX(float v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
// Recursive halving across the 8 lanes of each group: s[i] are a lane's partial statistics of
// tile g of quad i (i < Q); afterwards s[0] of lane j is the whole tile's of quad j (Q = 8) or
// j / 2 (Q = 4, both lanes of a pair).
template <class Op, int Q, class T>
__device__ __forceinline__ void groupReduce(Stats<T>* s) {
  const int j = laneId() & 7;
  int o = 4;
#pragma unroll
  for (int h = Q / 2; h >= 1; h /= 2, o /= 2) {
    const bool upper = (j & o) != 0;
#pragma unroll
    for (int i = 0; i < h; ++i) {
      const Stats<T> send = upper ? s[i] : s[i + h], keep = upper ? s[i + h] : s[i];
      const Stats<T> got{shflX(send.mn, o), shflX(send.mx, o), shflX(send.m1, o),
                         shflX(send.m2, o)};
      s[i] = merge<Op>(keep, got);
    }
  }
  for (; o >= 1; o /= 2) {  // Q = 4: the last level is a butterfly
    const Stats<T> got{shflX(s[0].mn, o), shflX(s[0].mx, o), shflX(s[0].m1, o), shflX(s[0].m2, o)};
    s[0] = merge<Op>(s[0], got);
  }
}

// ---- codes ---------------------------------------------------------------------------------

// A tile's coding as its group's lanes need it (from the lane that did the tile's scalar work).
constexpr uint32_t kInfoValid = 1u << 13, kInfoThree = 1u << 10, kInfoFast = 1u << 11,
                   kInfoCand = 1u << 12, kInfoRel = 0x3ffu;  // rel: code bytes past the step's

// Word of 8 codes at B bits of x (tah_code: rne(clamp((x - z) * inv, 0, q))): the code is the
// low mantissa bits of c + 1.5 * 2^23, so the word is the sum of those floats' bits shifted, less
// 0x4b400000 times the sum of the shifts (mod 2^32, exact). Fast: the tile's extreme values code
// inside [0, q] (the map is monotonic), so no value needs the clamp.
template <int B, bool Fast>
__device__ __forceinline__ uint32_t codeWord(const float* x, float z, float inv) {
  constexpr float q = static_cast<float>((1 << B) - 1);
  constexpr uint32_t ones = B == 4 ? 0x11111111u : 0x00249249u;  // sum over k < 8 of 2^(B k)
  uint32_t w = 0;
  for (int k = 0; k < 8; ++k) {
    float c = TAH_MUL(TAH_SUB(x[k], z), inv);
    // fmaxf reads a NaN product as 0 and -0 rounds to code 0: tah_code's !(c > 0) -> 0
    if (!Fast) c = fminf(fmaxf(c, 0.0f), q);
    w += tah_bits(TAH_ADD(c, 12582912.0f)) << (B * k);
  }
  return w - 0x4b400000u * ones;
}
// Lane j's codes of a tile into the payload: 4-bit, word j of the tile's 32 bytes; 3-bit, bytes
// 3j .. 3j+2 of its 24 (a 16-bit and an 8-bit store, the 16-bit one aligned).
__device__ __forceinline__ void storeCodes(uint8_t* tileCodes, int three, int j, uint32_t w) {
  if (!three) {
    reinterpret_cast<uint32_t*>(tileCodes)[j] = w;
    return;
  }
  uint8_t* p = tileCodes + 3 * j;
  if (j & 1) {
    p[0] = static_cast<uint8_t>(w);
    *reinterpret_cast<uint16_t*>(p + 1) = static_cast<uint16_t>(w >> 8);
  } else {
    *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(w);
    p[2] = static_cast<uint8_t>(w >> 16);
  }
}
__device__ __forceinline__ uint32_t tileWord(const float* x, int three, bool fast, float z,
                                             float inv) {
  if (three) return fast ? codeWord<3, true>(x, z, inv) : codeWord<3, false>(x, z, inv);
  return fast ? codeWord<4, true>(x, z, inv) : codeWord<4, false>(x, z, inv);
}

// Group of 8 lanes: a pivot candidate's swapped, transformed coding; where it wins (true in
// every lane of the group), its codes, meta and flag are stored here. x: the lane's 8 values
// (in its scratch). Out of line: rare, and the main loop's code must stay small.
__device__ __noinline__ bool hadamardTrial(const float* x, int three, uint8_t* tileCodes,
                                           uint32_t* metaAt, uint8_t* flagAt) {
  const unsigned m = groupMask();
  const int j = laneId() & 7;
  float v[8];
  for (int k = 0; k < 8; ++k) v[k] = x[k];
  unsigned c[8], flag;
  uint32_t mh;
  if (!gHadamardWins(m, v, three ? 7 : 15, c, &mh, &flag)) return false;
  uint32_t w = 0;
  for (int k = 0; k < 8; ++k) w |= c[k] << ((three ? 3 : 4) * k);
  storeCodes(tileCodes, three, j, w);
  if (j == 0) *metaAt = mh, *flagAt = static_cast<uint8_t>(flag);
  return true;
}

// tah_tile_meta with the hardware's fp16 conversions where the tile is not WIDE (the same
// bits: round to nearest even, overflow to Inf; mn and mx are finite), and the zero and scale
// the codes are made with (tah_meta_zs of the meta).
__device__ __forceinline__ uint32_t tileMeta(float mn, float mx, int q, unsigned* wide, float* z,
                                             float* s) {
#if defined(__CUDA_ARCH__)
  const float amax = fmaxf(fabsf(mn), fabsf(mx));
  if (!(amax > 65504.0f || amax < 0.0009765625f)) {
    *wide = 0;
    unsigned short zh, sh;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(zh) : "f"(TAH_ADD(mn, 0.0f)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(*z) : "h"(zh));
    float sf = TAH_DIV(TAH_SUB(TAH_ADD(mx, 0.0f), *z), static_cast<float>(q));
    if (!(sf > 0.0f)) sf = 0.0f;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(sh) : "f"(sf));
    asm("cvt.f32.f16 %0, %1;" : "=f"(*s) : "h"(sh));
    return static_cast<uint32_t>(sh) | static_cast<uint32_t>(zh) << 16;
  }
#endif
  const uint32_t meta = tah_tile_meta(mn, mx, q, wide);
  tah_meta_zs(meta, *wide, z, s);
  return meta;
}

// ---- the kernel ----------------------------------------------------------------------------

// Whether a lane's 8 values were finite (packed statistics: the largest |x| is; the float
// path's values are made finite as they are loaded).
template <int Dt>
__device__ __forceinline__ bool finiteStats(const Stats<uint32_t>& p) {
  return nonFinite16<Dt>(p.m1) == 0;
}
template <int Dt>
__device__ __forceinline__ bool finiteStats(const Stats<float>&) {
  return true;
}
template <int Dt>
__device__ __forceinline__ void finiteLane(Lane8<Dt, true>* v) {
  finite16<Dt>(v);
}
template <int Dt>
__device__ __forceinline__ void finiteLane(Lane8<Dt, false>*) {}
template <int Dt>
__device__ __forceinline__ void laneStats(const Lane8<Dt, true>& v, Stats<uint32_t>* p) {
  *p = stats8<Dt>(v.r);
}
template <int Dt>
__device__ __forceinline__ void laneStats(const Lane8<Dt, false>& v, Stats<float>* p) {
  *p = stats8(v.x);
}
template <int Dt>
__device__ __forceinline__ Stats<float> wholeStats(const Stats<uint32_t>& p) {
  return unpackStats<Dt>(p);
}
template <int Dt>
__device__ __forceinline__ Stats<float> wholeStats(const Stats<float>& p) {
  return p;
}

// A step: Q quads; Packed: a 16-bit input unscaled, kept as pairs.
template <int Dt, bool Scaled>
struct EncodeStep {
  static constexpr bool kPacked = Dt != TAH_DT_F32 && !Scaled;
  static constexpr int kQuads = kPacked ? 8 : 4;
};

// A step's values in shared memory for the coding loop (a loop over the quads, not unrolled:
// the kernel's code stays small): per warp, 8 slots of 16 bytes a lane, a 16-bit quad in one
// slot, an fp32 quad in two.
struct Stage {
  uint4 s[8][32];
};
template <int Dt>
__device__ __forceinline__ void toStage(Stage& S, int i, const Lane8<Dt, true>& v) {
  S.s[i][laneId()] = v.r;
}
template <int Dt>
__device__ __forceinline__ void toStage(Stage& S, int i, const Lane8<Dt, false>& v) {
  S.s[2 * i][laneId()] =
      make_uint4(tah_bits(v.x[0]), tah_bits(v.x[1]), tah_bits(v.x[2]), tah_bits(v.x[3]));
  S.s[2 * i + 1][laneId()] =
      make_uint4(tah_bits(v.x[4]), tah_bits(v.x[5]), tah_bits(v.x[6]), tah_bits(v.x[7]));
}
template <int Dt, bool Packed>
__device__ __forceinline__ void fromStage(const Stage& S, int i, float* x) {
  if (Packed) {
    unpack16<Dt>(S.s[i][laneId()], x);
    return;
  }
  const uint4 a = S.s[2 * i][laneId()], b = S.s[2 * i + 1][laneId()];
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  for (int k = 0; k < 8; ++k) x[k] = tah_float(w[k]);
}

// The flag section's padding (one thread of the grid).
__device__ __forceinline__ void zeroFlagPad(const tah_layout_t& L, uint8_t* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = L.flagOff + L.tiles; i < L.codeOff; ++i) out[i] = 0;
}

// The calling warp codes the tiles of quads [q0, q1) (uniform across the warp) by the payload's
// header, already written. S: the warp's stage; sc: the lane's scratch (laneScratch).
template <int Dt, bool Scaled>
__device__ __forceinline__ void encodeQuads(const void* in, const Geo& geo, float scale, bool had,
                                            bool vec, uint8_t* out, size_t q0, size_t q1, Stage& S,
                                            float* sc) {
  constexpr bool Packed = EncodeStep<Dt, Scaled>::kPacked;
  constexpr int Q = EncodeStep<Dt, Scaled>::kQuads;
  using Op = typename std::conditional<Packed, PackedOps<Dt>, FloatOps>::type;
  using T = typename std::conditional<Packed, uint32_t, float>::type;
  const tah_layout_t& L = geo.L;
  const int lane = laneId(), gi = lane >> 3, j = lane & 7;
  const int mine = Q == 8 ? j : j >> 1;  // the quad whose tile g this lane codes the scalars of
  RowOf ro{0, 0, 0};
  Place pl{0, 0, 0};
  for (size_t qs = q0; qs < q1; qs += Q) {
    Stats<T> st[Q];
    {
      Lane8<Dt, Packed> v[Q];
      loadQuads<Dt, Scaled, Q>(in, geo, qs, q1, vec, scale, sc, v);
#pragma unroll
      for (int i = 0; i < Q; ++i) {
        laneStats<Dt>(v[i], &st[i]);
        if (Packed && !finiteStats<Dt>(st[i])) {  // rare: tah_load's non-finite -> 0
          finiteLane<Dt>(&v[i]);
          laneStats<Dt>(v[i], &st[i]);
        }
        toStage<Dt>(S, i, v[i]);
      }
    }
    groupReduce<Op, Q>(st);
    // the lane's tile: placement, zero and scale, the pivot test
    const size_t tile = (qs + mine) * kQuadTiles + gi;
    const bool valid = qs + mine < q1 && tile < L.tiles;
    uint32_t info = 0, meta = 0;
    unsigned wide = 0;
    float z = 0.0f, inv = 0.0f;
    size_t off = 0;
    if (valid) {
      follow(out, geo, tile, false, &ro, &pl);  // the header is this encode's: placed
      off = pl.base + (tile - ro.first) * (pl.three ? 24u : 32u);
      const Stats<float> s = wholeStats<Dt>(st[0]);
      const int q = pl.three ? 7 : 15;
      float sv;
      meta = tileMeta(s.mn, s.mx, q, &wide, &z, &sv);
      inv = tah_inv(sv);
      // the extremes' codes inside [0, q] before rounding: every value's is (monotonic map)
      const bool fast = TAH_MUL(TAH_SUB(s.mn, z), inv) >= -0.5f &&
                        TAH_MUL(TAH_SUB(s.mx, z), inv) < static_cast<float>(q) + 0.5f;
      const bool cand = had && s.m1 > 0.0f && TAH_MUL(2.0f, s.m2) <= s.m1;
      info = kInfoValid | (pl.three ? kInfoThree : 0u) | (fast ? kInfoFast : 0u) |
             (cand ? kInfoCand : 0u);
    }
    // codes of the step's tiles are contiguous from those of its first tile (lane 0's)
    const size_t off0 = shfl64(off, 0);
    if (valid) info |= static_cast<uint32_t>(off - off0) & kInfoRel;
    uint8_t* codes0 = out + L.codeOff + off0;
    __syncwarp();      // the stage
    unsigned won = 0;  // quads whose tile g took the transform
    if (__ballot_sync(0xffffffffu, (info & kInfoCand) != 0)) {
#pragma unroll 1
      for (int i = 0; i < Q; ++i) {
        const uint32_t ii = __shfl_sync(0xffffffffu, info, gi * 8 + (Q == 8 ? i : 2 * i));
        if (!(ii & kInfoCand)) continue;  // whole groups
        fromStage<Dt, Packed>(S, i, sc);
        const size_t t = (qs + i) * kQuadTiles + gi;
        if (hadamardTrial(sc, (ii & kInfoThree) != 0, codes0 + (ii & kInfoRel),
                          reinterpret_cast<uint32_t*>(out + L.metaOff) + t, out + L.flagOff + t))
          won |= 1u << i;
      }
    }
#pragma unroll 1
    for (int i = 0; i < Q; ++i) {
      const int src = gi * 8 + (Q == 8 ? i : 2 * i);
      const uint32_t ii = __shfl_sync(0xffffffffu, info, src);
      const float zi = __shfl_sync(0xffffffffu, z, src), vi = __shfl_sync(0xffffffffu, inv, src);
      if (!(ii & kInfoValid) || (won >> i & 1u)) continue;  // whole groups
      float x[8];
      fromStage<Dt, Packed>(S, i, x);
      const int three = (ii & kInfoThree) != 0;
      storeCodes(codes0 + (ii & kInfoRel), three, j, tileWord(x, three, ii & kInfoFast, zi, vi));
    }
    // the lane's tile's meta and flag (a transform that won stored its own)
    if (valid && (Q == 8 || !(j & 1)) && !(won >> mine & 1u)) {
      reinterpret_cast<uint32_t*>(out + L.metaOff)[tile] = meta;
      out[L.flagOff + tile] = static_cast<uint8_t>(wide);
    }
    __syncwarp();  // the stage, before the next step's values
  }
}

// Dt: the input's dtype; Scaled: fin(x * scale) is encoded (a decodeReduceEncode of one input).
// The header is written (selectKernel or rowKeysKernel); a warp codes a contiguous range of quads.
template <int Dt, bool Scaled>
__global__ void __launch_bounds__(kQuadThreads)
    encodeTilesKernel(const void* in, Geo geo, float scale, bool had, bool vec, uint8_t* out) {
  TAH_QUAD_SCRATCH();
  __shared__ Stage stages[kQuadThreads / 32];
  zeroFlagPad(geo.L, out);
  size_t q0, q1;
  warpQuads(geo, &q0, &q1);
  encodeQuads<Dt, Scaled>(in, geo, scale, had, vec, out, q0, q1, stages[threadIdx.x / 32],
                          laneScratch(quadScratch));
}
