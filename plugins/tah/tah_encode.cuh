// tah's entropy kernels (included by tah_device.cu after tah_encode_tiles.cuh, inside its
// anonymous namespace): the tiles' entropy sums (quads of tiles, tah_quad.cuh), the rows' keys
// and, select=group, the header (tah_select.cuh: select=message's) that encodeTilesKernel then
// codes by; and select=group's one-pass encode, encodeGroupsKernel.
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
    const float frac = Tab ? *reinterpret_cast<const float*>(reinterpret_cast<const char*>(T.f) +
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
// The calling warp's quads [q0, q1) (uniform across the warp); table: filled where kLog2Tab.
// sums[tile - first] = the tile's sums.
template <int Dt, bool Scaled>
constexpr bool kLog2Tab = Dt == TAH_DT_BF16 && !Scaled;
template <int Dt, bool Scaled>
__device__ __forceinline__ void sumQuads(const void* in, const Geo& geo, float scale, bool vec,
                                         size_t q0, size_t q1, const Log2Table& table, float* sc,
                                         float2* sums, size_t first = 0) {
  constexpr bool Packed = EncodeStep<Dt, Scaled>::kPacked;
  constexpr bool Tab = kLog2Tab<Dt, Scaled>;
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
      if (j == 0 && qs + i < q1 && tile < geo.L.tiles) sums[tile - first] = b;
    }
  }
}
template <int Dt, bool Scaled>
__global__ void __launch_bounds__(kQuadThreads)
    tileSumsKernel(const void* in, Geo geo, float scale, bool vec, float2* sums) {
  __shared__ Log2Table table;
  TAH_QUAD_SCRATCH();
  if (kLog2Tab<Dt, Scaled>) fillLog2Table(table);
  size_t q0, q1;
  warpQuads(geo, &q0, &q1);
  sumQuads<Dt, Scaled>(in, geo, scale, vec, q0, q1, table, laneScratch(quadScratch), sums);
}

// tah_row_key of the row whose tiles' sums start at p: added in order (8 loads in flight).
__device__ __forceinline__ uint32_t rowKey(const float2* p, const Geo& geo) {
  float S = 0.0f, U = 0.0f;
  for (uint32_t t0 = 0; t0 < geo.T; t0 += 8) {
    float2 s[8];
    for (uint32_t i = 0; i < 8; ++i) s[i] = t0 + i < geo.T ? p[t0 + i] : make_float2(0.0f, 0.0f);
    for (uint32_t i = 0; i < 8 && t0 + i < geo.T; ++i)
      S = TAH_ADD(S, s[i].x), U = TAH_ADD(U, s[i].y);
  }
  return tah_row_key(S, U);
}

// select=group: the header words of group g (hdr[2g], hdr[2g + 1]) from its rows' keys, called
// by a whole warp, lane j holding the key of row 32g + j (any value past the last row): lane j
// is 3-bit iff fewer than tah_group_low's n of the group's (key, row) pairs are below its own.
__device__ __forceinline__ void groupHeader(uint32_t key, size_t g, const Geo& geo, uint32_t* hdr) {
  uint32_t before;
  const uint32_t n = tah_group_low(geo.L.rows, geo.low, g, &before);
  const size_t left = geo.L.rows - 32 * g;
  const uint32_t nv = left < 32 ? static_cast<uint32_t>(left) : 32u, j = laneId();
  uint32_t below = 0;
  for (uint32_t i = 0; i < 32; ++i) {  // every lane shuffles: the loop is uniform
    const uint32_t k = __shfl_sync(0xffffffffu, key, static_cast<int>(i));
    below += (i < nv && (k < key || (k == key && i < j))) ? 1u : 0u;
  }
  const uint32_t bits = __ballot_sync(0xffffffffu, j < nv && below < n);
  if (j == 0) hdr[2 * g] = bits, hdr[2 * g + 1] = before;
}

// One thread a row: select=message, keys[r] = its key (selectKernel then writes the header);
// select=group (hdr), a warp's 32 rows are a group (blocks of whole warps) and it writes the
// group's header words.
__global__ void rowKeysKernel(const float2* sums, Geo geo, uint32_t* keys, uint32_t* hdr) {
  const size_t r = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint32_t key = r < geo.L.rows ? rowKey(sums + r * geo.T, geo) : 0u;
  if (!hdr) {
    if (r < geo.L.rows) keys[r] = key;
    return;
  }
  if (r - laneId() < geo.L.rows) groupHeader(key, r / 32, geo, hdr);  // whole warps
}

// select=group in one pass: a CTA takes groups of 32 rows in turn; for each, its warps form the
// tiles' sums (in shared memory, or the workspace's sums for rows over 4096 elements), warp 0
// the rows' keys and the group's header, then
// its warps code the group's tiles, whose input a CTA has read moments before (the grid is
// sized so that the groups in flight stay in L2: tah_device.cu).
constexpr uint32_t kGroupSmemTiles = 32 * 64;  // a group's tiles' sums in shared memory: R <= 4096
union GroupSmem {
  struct {
    Log2Table table;               // refilled each group
    float2 sums[kGroupSmemTiles];  // the group's tiles' sums where they fit, else the workspace's
  } a;
  Stage stages[kQuadThreads / 32];  // the coding
};
template <int Dt, bool Scaled>
__global__ void __launch_bounds__(kQuadThreads)
    encodeGroupsKernel(const void* in, Geo geo, float scale, bool had, bool vec, float2* sums,
                       uint8_t* out) {
  TAH_QUAD_SCRATCH();
  __shared__ GroupSmem sm;
  float* sc = laneScratch(quadScratch);
  zeroFlagPad(geo.L, out);
  const size_t wpc = blockDim.x / 32, w = threadIdx.x / 32;
  uint32_t* hdr = reinterpret_cast<uint32_t*>(out);
  for (size_t g = blockIdx.x; g < geo.L.groups; g += gridDim.x) {
    // the group's tiles [32g T, e T), e = min(32g + 32, rows): quads [qa, qb), 32 T a multiple
    // of 4; the warps take contiguous ranges
    const size_t e = 32 * g + 32 < geo.L.rows ? 32 * g + 32 : geo.L.rows;
    const size_t qa = 32 * g * geo.T / kQuadTiles, qb = (e * geo.T + kQuadTiles - 1) / kQuadTiles;
    const size_t per = (qb - qa + wpc - 1) / wpc;
    // lane 0's: uniform loops to the compiler (warpQuads)
    const size_t q0 = shfl64(qa + w * per < qb ? qa + w * per : qb, 0);
    const size_t q1 = shfl64(q0 + per < qb ? q0 + per : qb, 0);
    uint32_t before;
    if (tah_group_low(geo.L.rows, geo.low, g, &before) > 0) {
      const size_t first = 32 * g * geo.T;  // the group's first tile
      float2* gs = 32 * geo.T <= kGroupSmemTiles ? sm.a.sums : sums + first;
      if (kLog2Tab<Dt, Scaled>) fillLog2Table(sm.a.table);
      sumQuads<Dt, Scaled>(in, geo, scale, vec, q0, q1, sm.a.table, sc, gs, first);
      __syncthreads();  // the sums
      if (w == 0) {
        const uint32_t j = laneId();
        groupHeader(32 * g + j < geo.L.rows ? rowKey(gs + j * geo.T, geo) : 0u, g, geo, hdr);
      }
    } else if (threadIdx.x == 0) {
      hdr[2 * g] = 0, hdr[2 * g + 1] = before;
    }
    __syncthreads();  // the header; the table's space is the stages'
    encodeQuads<Dt, Scaled>(in, geo, scale, had, vec, out, q0, q1, sm.stages[w], sc);
    __syncthreads();  // the stages, before the next group's table
  }
}

#include "tah_select.cuh"  // selectKernel
