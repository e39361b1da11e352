// tah's encode kernels (included by tah_device.cu, inside its anonymous namespace): the tiles'
// entropy sums, the rows' keys (select=group: with the header), then (after the header) the
// tiles. The tile kernels loop over batches of 32 tiles a warp on the resident grid
// (tah_slab.cuh).
#pragma once

// The warp's batches of the message into its slab (encoded values: fin(x), fin(x * scale)), and
// work(batch) on each; a 16-bit input's next batch (an fp32 input's first half of it) is loaded
// while work runs.
template <typename Work>
__device__ void forEachLoadedBatch(float* v, const void* in, int dtype, const Geo& geo, float scale,
                                   bool vec, const Work& work) {
  size_t b = firstBatch();
  Batch bt;
  bool have = nextBatch(geo, &b, &bt);
  const bool wide = dtype == TAH_DT_F32;
  Prefetch pf;
  const auto prefetch = [&](const Batch& x) {
    if (wide)
      prefetchT<4>(in, geo.count, x.tile0 * TAH_TILE, x.nt, vec, &pf);
    else
      prefetchT<8>(in, geo.count, x.tile0 * TAH_TILE, x.nt, vec, &pf);
  };
  if (have) prefetch(bt);
  while (have) {
    if (wide)
      convert32(pf, in, geo.count, bt.tile0 * TAH_TILE, bt.nt, vec, scale, v);
    else
      convert16(pf, dtype, bt.nt, scale, v);
    __syncwarp();
    Batch nb;
    const bool more = nextBatch(geo, &b, &nb);
    if (more) prefetch(nb);
    work(bt);
    __syncwarp();
    bt = nb, have = more;
  }
}

// bf16 inputs read unscaled have 7 mantissa bits, so tah_log2's polynomial term is one of 128
// values: a table in shared memory, filled with tah_log2_frac itself (the same bits), 16 copies
// interleaved (value m of lane l at f[16 m + l % 16]) so that the lanes' scattered reads
// conflict at most two-way (32 copies would not fit the 48 KiB of static shared memory).
struct Log2Table {
  float f[128 * 16];
};
__device__ __forceinline__ void fillLog2Table(Log2Table& T) {
  for (int i = threadIdx.x; i < 128 * 16; i += blockDim.x)
    T.f[i] = tah_log2_frac(static_cast<uint32_t>(i / 16) << 16);
  __syncthreads();
}

// A lane's tile (v: 64 values of the slab): (S, U) = tah_tile_sum of |x| and of |x| log2 |x|.
// Tab: the values are bf16 (no mantissa bits below 16), log2's polynomial term from T.
template <bool Tab>
__device__ __forceinline__ float2 tileSums(const float* v, const Log2Table& T) {
  const uint32_t lane4 = (laneId() & 15) * 4;  // the lane's copy of the table, in bytes
  float bs[8], bu[8];
  for (int l = 0; l < 8; ++l) {
    float a[8], u[8];
    for (int k = 0; k < 8; k += 4) {
      const float4 x = *reinterpret_cast<const float4*>(v + 8 * l + k);
      a[k] = fabsf(x.x), a[k + 1] = fabsf(x.y), a[k + 2] = fabsf(x.z), a[k + 3] = fabsf(x.w);
    }
    for (int k = 0; k < 8; ++k) {
      // tah_ulog(a[k]) without a branch (the compiler made one an element of `e == 0 ? ...`):
      // log2 is formed for every element, and a mask clears the term of those below 2^-126
      const uint32_t b = tah_bits(a[k]);
      const float frac =
          Tab ? *reinterpret_cast<const float*>(reinterpret_cast<const char*>(T.f) +
                                                (((b & 0x7f0000u) >> 10) + lane4))
              : tah_log2_frac(b & 0x7fffffu);
      const float lg = TAH_ADD(tah_log2_exp(b >> 23), frac);
      u[k] = tah_float(tah_bits(TAH_MUL(a[k], lg)) & (b < 0x00800000u ? 0u : ~0u));
    }
    bs[l] = tah_sum8(a), bu[l] = tah_sum8(u);
  }
  for (int o = 4; o > 0; o >>= 1)  // tah_tile_sum's tree
    for (int l = 0; l < o; ++l)
      bs[l] = TAH_ADD(bs[l], bs[l + o]), bu[l] = TAH_ADD(bu[l], bu[l + o]);
  return make_float2(bs[0], bu[0]);
}

// sums[i] = (S, U) of tile i: tah_tile_sum of |x| and of |x| log2 |x| (x: the encoded values,
// fin(fin(x) * scale)).
__global__ void __launch_bounds__(kThreads, 5)
    tileSumsKernel(const void* in, int dtype, Geo geo, float scale, bool vec, float2* sums) {
  // the batches' values only (a Slab's code staging is encode's): 5 CTAs a multiprocessor fit
  __shared__ SlabValues vals[kWarps];
  __shared__ Log2Table table;
  const bool tab = dtype == TAH_DT_BF16 && scale == 1.0f;
  if (tab) fillLog2Table(table);
  float* S = vals[threadIdx.x / 32].v;
  const int lane = laneId();
  forEachLoadedBatch(S, in, dtype, geo, scale, vec, [&](const Batch& bt) {
    if (lane >= bt.nt) return;
    const float* v = S + lane * kPitch;
    sums[bt.tile0 + lane] = tab ? tileSums<true>(v, table) : tileSums<false>(v, table);
  });
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
  const uint32_t nv = left < 32 ? static_cast<uint32_t>(left) : 32u, j = threadIdx.x & 31u;
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
  if (r - (threadIdx.x & 31u) < geo.L.rows) groupHeader(key, r / 32, geo, hdr);  // whole warps
}

#include "tah_select.cuh"  // selectKernel

// Group word of 8 codes of x at B bits (tah_code: rne(clamp((x - z) * inv, 0, q))): the code
// is the low mantissa bits of c + 1.5 * 2^23, so the word is the sum of those floats' bits
// shifted, less 0x4b400000 times the sum of the shifts (mod 2^32, exact).
template <int B>
__device__ __forceinline__ uint32_t groupWord(const float* x, float z, float inv) {
  constexpr float q = static_cast<float>((1 << B) - 1);
  constexpr uint32_t ones = B == 4 ? 0x11111111u : 0x00249249u;  // sum over k < 8 of 2^(B k)
  uint32_t w = 0;
  for (int k = 0; k < 8; ++k) {
    // fmaxf reads a NaN product as 0 and -0 rounds to code 0: tah_code's !(c > 0) -> 0
    const float c = fminf(fmaxf(TAH_MUL(TAH_SUB(x[k], z), inv), 0.0f), q);
    w += tah_bits(TAH_ADD(c, 12582912.0f)) << (B * k);
  }
  return w - 0x4b400000u * ones;
}
// A group word's bytes in the batch's code staging at dst (a tile's codes): 4-bit, word m;
// 3-bit, bytes 3m .. 3m+2.
template <int B>
__device__ __forceinline__ void storeGroup(uint8_t* dst, int m, uint32_t g) {
  if (B == 4) {
    reinterpret_cast<uint32_t*>(dst)[m] = g;
  } else {
    dst[3 * m] = static_cast<uint8_t>(g), dst[3 * m + 1] = static_cast<uint8_t>(g >> 8);
    dst[3 * m + 2] = static_cast<uint8_t>(g >> 16);
  }
}
// Pass 2 of a lane's tile: its codes into dst. Partly unrolled: the loop's code stays small.
template <int B>
__device__ __forceinline__ void tileCodes(const float* v, float z, float inv, uint8_t* dst) {
#pragma unroll 2
  for (int m = 0; m < 8; ++m) {
    float x[8];
    for (int k = 0; k < 8; k += 4) {
      const float4 a = *reinterpret_cast<const float4*>(v + 8 * m + k);
      x[k] = a.x, x[k + 1] = a.y, x[k + 2] = a.z, x[k + 3] = a.w;
    }
    storeGroup<B>(dst, m, groupWord<B>(x, z, inv));
  }
}

// The batch's code staging: S.codes from the batch's first tile's codes on (tile i at byte
// S.place[i] & 0xffff; 3-bit when bit 31 is set).
__device__ __forceinline__ uint8_t* staging(Slab& S, int i) {
  return reinterpret_cast<uint8_t*>(S.codes) + (S.place[i] & 0xffffu);
}

// Group of 8 lanes: the pivot swap and transform of candidate tile ti of the slab; where it wins,
// its codes (into the staging), meta and flag | kWon. Out of line: rare, and the main loop's code
// must stay small (instruction fetch stalls dominated when it was inlined).
__device__ __noinline__ void hadamardTrial(Slab& S, int ti) {
  const unsigned m = groupMask();
  const int j = laneId() & 7;
  float x[8];
  for (int k = 0; k < 8; ++k) x[k] = S.v[ti * kPitch + 8 * j + k];
  unsigned c[8], flag;
  uint32_t mh;
  const bool three = (S.place[ti] >> 31) != 0;
  if (gHadamardWins(m, x, three ? 7 : 15, c, &mh, &flag)) {
    uint32_t w = 0;
    for (int k = 0; k < 8; ++k) w |= c[k] << ((three ? 3 : 4) * k);
    if (three)
      storeGroup<3>(staging(S, ti), j, w);
    else
      storeGroup<4>(staging(S, ti), j, w);
    if (j == 0) S.meta[ti] = mh, S.flag[ti] = flag | kWon;
  }
}

// One batch (in the slab): lane l takes tile l (pass 1: min, max, the two largest |x|); groups of
// 8 lanes try the pivot swap and transform on the candidates (largest |x| at least twice every
// other); lanes whose tile it did not win write the plain codes (pass 2); the codes leave through
// the staging, coalesced.
__device__ void encodeBatch(Slab& S, const Geo& geo, bool had, const Batch& bt, uint8_t* out) {
  const tah_layout_t& L = geo.L;
  const int lane = laneId();
  const LaneTile lt = laneTile(out, geo, bt);  // the header is this encode's: ok
  const bool act = lt.act;
  const size_t tile = lt.tile, off = lt.off;
  const int three = lt.three;
  const unsigned size = lt.size;
  const size_t off0 = shfl64(off, 0);
  const unsigned rel = static_cast<unsigned>(off - off0);  // < 1 KiB: a valid header's batch
  const unsigned span = warpMax(act ? rel + size : 0u);    // codes are contiguous
  S.place[lane] = rel | (three ? 0x80000000u : 0u);
  S.flag[lane] = 0;
  const float* v = S.v + lane * kPitch;
  // pass 1 in two interleaved chains (min, max and the two largest |x| do not depend on the
  // order: no NaN here, and tah_tile_meta canonicalises signed zeros); fminf / fmaxf are one
  // instruction where tah_min / tah_max (NaN-aware) are two
  float mn[2] = {v[0], v[0]}, mx[2] = {v[0], v[0]}, m1[2] = {0.0f, 0.0f}, m2[2] = {0.0f, 0.0f};
#pragma unroll 2
  for (int k = 0; k < TAH_TILE; k += 8) {
    for (int h = 0; h < 2; ++h) {
      const float4 a = *reinterpret_cast<const float4*>(v + k + 4 * h);
      const float x[4] = {a.x, a.y, a.z, a.w};
      for (int i = 0; i < 4; ++i) {
        mn[h] = fminf(mn[h], x[i]), mx[h] = fmaxf(mx[h], x[i]);
        const float ab = fabsf(x[i]);
        m2[h] = fmaxf(m2[h], fminf(m1[h], ab));  // m2: the second largest |x| (duplicates count)
        m1[h] = fmaxf(m1[h], ab);
      }
    }
  }
  const float m1t = fmaxf(m1[0], m1[1]);
  const float m2t = fmaxf(fminf(m1[0], m1[1]), fmaxf(m2[0], m2[1]));
  const bool cand = act && had && m1t > 0.0f && TAH_MUL(2.0f, m2t) <= m1t;
  __syncwarp();
  for (unsigned todo = __ballot_sync(0xffffffffu, cand); todo;) {
    const int ti = gTake(&todo);
    if (ti >= 0) hadamardTrial(S, ti);
    __syncwarp();
  }
  uint32_t meta = S.meta[lane];
  unsigned flag = S.flag[lane] & 0xffu;
  if (act && !(S.flag[lane] & kWon)) {
    unsigned wide = 0;
    meta = tah_tile_meta(fminf(mn[0], mn[1]), fmaxf(mx[0], mx[1]), three ? 7 : 15, &wide);
    flag = wide;
    float z, s;
    tah_meta_zs(meta, wide, &z, &s);
    const float inv = tah_inv(s);
    if (three)
      tileCodes<3>(v, z, inv, staging(S, lane));
    else
      tileCodes<4>(v, z, inv, staging(S, lane));
  }
  __syncwarp();
  uint32_t* codes = reinterpret_cast<uint32_t*>(out + L.codeOff + off0);
  for (unsigned i = lane; i < span / 4; i += 32) codes[i] = S.codes[i];
  if (act) {
    reinterpret_cast<uint32_t*>(out + L.metaOff)[tile] = meta;
    out[L.flagOff + tile] = static_cast<uint8_t>(flag);
  }
  __syncwarp();
}

// The tiles of the message (after the header is written), batches on the resident grid.
__global__ void __launch_bounds__(kThreads, 5)
    encodeTilesKernel(const void* in, int dtype, Geo geo, float scale, bool had, bool vec,
                      uint8_t* out) {
  __shared__ Slab slabs[kWarps];
  const tah_layout_t& L = geo.L;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = L.flagOff + L.tiles; i < L.codeOff; ++i) out[i] = 0;
  Slab& S = slabs[threadIdx.x / 32];
  forEachLoadedBatch(S.v, in, dtype, geo, scale, vec,
                     [&](const Batch& bt) { encodeBatch(S, geo, had, bt, out); });
}
