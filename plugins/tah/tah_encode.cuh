// tah's entropy kernels (included by tah_device.cu after tah_encode_tiles.cuh, inside its
// anonymous namespace): the tiles' entropy sums (quads of tiles, tah_quad.cuh), the rows' keys,
// and (tah_select.cuh) the 3-bit rows' header that encodeTilesKernel then codes by.
#pragma once

// bf16 inputs read unscaled have 7 mantissa bits, so tah_log2's polynomial term is one of 128
// values: a table in shared memory, filled with tah_log2_frac itself (the same bits), 16 copies
// interleaved (value m of lane l at f[16 m + l % 16]) so that the lanes' scattered reads
// conflict at most two-way (8 KiB).
struct Log2Table {
  float f[128 * 16];
};
__device__ __forceinline__ void fillLog2Table(Log2Table& T) {
  for (int i = threadIdx.x; i < 128 * 16; i += blockDim.x)
    T.f[i] = tah_log2_frac(static_cast<uint32_t>(i / 16) << 16);
  __syncthreads();
}

// tah_ulog's term a * lg with the terms of a below 2^-126 dropped, in one instruction: the
// flush to zero reads such an a as 0. Nothing else changes: for a >= 2^-126 a nonzero product
// is normal (|lg| < 1 only for a in [0.5, 2), and then |lg| >= 2^-24), and a zero term's sign
// leaves a sum with a nonzero term alone (an all-zero row's U is +0 either way).
__device__ __forceinline__ float ulogTerm(float a, float lg) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(lg));
  return r;
#else
  return tah_bits(a) < 0x00800000u ? 0.0f : TAH_MUL(a, lg);
#endif
}

// What a lane's 8 values add to their tile's (S, U): tah_sum8 of |x| and of |x| log2 |x|.
// Tab: the values are bf16 (no mantissa bits below 16), log2's polynomial term from T.
template <bool Tab>
__device__ __forceinline__ float2 laneSums(const float* x, const Log2Table& T) {
  const uint32_t lane4 = (laneId() & 15) * 4;  // the lane's copy of the table, in bytes
  float a[8], u[8];
  for (int k = 0; k < 8; ++k) {
    a[k] = fabsf(x[k]);
    // tah_ulog(a[k]) without a branch: log2 is formed for every element
    const uint32_t b = tah_bits(a[k]);
    const float frac =
        Tab ? *reinterpret_cast<const float*>(reinterpret_cast<const char*>(T.f) +
                                              (((b & 0x7f0000u) >> 10) + lane4))
            : tah_log2_frac(b & 0x7fffffu);
    const float lg = TAH_ADD(tah_log2_exp(b >> 23), frac);
    u[k] = ulogTerm(a[k], lg);
  }
  return make_float2(tah_sum8(a), tah_sum8(u));
}

constexpr int kSumQuads = 4;  // quads a lane loads at a time

// sums[i] = (S, U) of tile i: tah_tile_sum of |x| and of |x| log2 |x| (x: the encoded values,
// fin(x), then fin(x * scale) when Scaled). Quads of tiles (tah_quad.cuh): a lane's 8 values
// are tah_tile_sum's groups of 8, and its tree across the groups is the group's shuffles.
template <int Dt, bool Scaled>
__global__ void __launch_bounds__(kQuadThreads)
    tileSumsKernel(const void* in, Geo geo, float scale, bool vec, float2* sums) {
  constexpr bool Packed = EncodeStep<Dt, Scaled>::kPacked;
  constexpr bool Tab = Dt == TAH_DT_BF16 && !Scaled;
  __shared__ Log2Table table;
  TAH_QUAD_SCRATCH();
  float* sc = laneScratch(quadScratch);
  if (Tab) fillLog2Table(table);
  size_t q0, q1;
  warpQuads(geo, &q0, &q1);
  const int gi = laneId() >> 3, j = laneId() & 7;
  for (size_t qs = q0; qs < q1; qs += kSumQuads) {
    Lane8<Dt, Packed> v[kSumQuads];
    loadQuads<Dt, Scaled, kSumQuads>(in, geo, qs, q1, vec, scale, sc, v);
#pragma unroll
    for (int i = 0; i < kSumQuads; ++i) {  // every lane (the shuffles), a tile past the end too
      const size_t tile = (qs + i) * kQuadTiles + gi;
      float x[8];
      valuesOf<Dt>(v[i], x);
      float2 b = laneSums<Tab>(x, table);
      if (Packed && !(fabsf(b.x) <= 3.40282347e+38f)) {  // rare: a value that is not finite
        finiteLane<Dt>(&v[i]);                           // (or a sum that overflows: the same)
        valuesOf<Dt>(v[i], x);
        b = laneSums<Tab>(x, table);
      }
      for (int o = 4; o > 0; o >>= 1) {  // tah_tile_sum's tree: b_l += b_{l+o}
        const float ps = __shfl_down_sync(0xffffffffu, b.x, o, 8);
        const float pu = __shfl_down_sync(0xffffffffu, b.y, o, 8);
        b = make_float2(TAH_ADD(b.x, ps), TAH_ADD(b.y, pu));
      }
      if (j == 0 && qs + i < q1 && tile < geo.L.tiles) sums[tile] = b;
    }
  }
}

// keys[r] = tah_row_key of row r: its tiles' sums added in order. One thread a row.
__global__ void rowKeysKernel(const float2* sums, Geo geo, uint32_t* keys) {
  const size_t r = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= geo.L.rows) return;
  const float2* p = sums + r * geo.T;
  float S = 0.0f, U = 0.0f;
  for (uint32_t t0 = 0; t0 < geo.T; t0 += 8) {  // 8 loads in flight, then the in-order sums
    float2 s[8];
    for (uint32_t i = 0; i < 8; ++i) s[i] = t0 + i < geo.T ? p[t0 + i] : make_float2(0.0f, 0.0f);
    for (uint32_t i = 0; i < 8 && t0 + i < geo.T; ++i)
      S = TAH_ADD(S, s[i].x), U = TAH_ADD(U, s[i].y);
  }
  keys[r] = tah_row_key(S, U);
}

#include "tah_select.cuh"  // selectKernel
