// tah's tile math across a group of 8 lanes (included by tah_device.cu, inside its anonymous
// namespace): lane j of the group holds tile elements 8j .. 8j+7, so the host's trees
// (tah_tile_sum, tah_wht64) are the group's shuffle patterns. The tile kernels hand a group the
// rare tiles that need a 64-point transform: an encode tile that is a pivot candidate, a decode
// tile with the Hadamard flag.
#pragma once

__device__ __forceinline__ unsigned groupMask() {
  return 0xffu << (threadIdx.x & 24u);
}
__device__ __forceinline__ float gMax(unsigned m, float v) {
  for (int o = 4; o > 0; o >>= 1) v = tah_max(v, __shfl_xor_sync(m, v, o, 8));
  return v;
}
__device__ __forceinline__ float gMin(unsigned m, float v) {
  for (int o = 4; o > 0; o >>= 1) v = tah_min(v, __shfl_xor_sync(m, v, o, 8));
  return v;
}

// tah_wht64 across the group: stages 1, 2, 4 in the lane, 8, 16, 32 with lanes j ^ 1, 2, 4.
__device__ void gWht(unsigned m, float* d) {
  for (int h = 1; h < 8; h <<= 1)
    for (int k = 0; k < 8; ++k)
      if (!(k & h)) {
        const float a = d[k], b = d[k + h];
        d[k] = TAH_ADD(a, b);
        d[k + h] = TAH_SUB(a, b);
      }
  const int j = threadIdx.x & 7;
  for (int o = 1; o < 8; o <<= 1) {
    const bool upper = (j & o) != 0;
    for (int k = 0; k < 8; ++k) {
      const float p = __shfl_xor_sync(m, d[k], o, 8);
      d[k] = upper ? TAH_SUB(p, d[k]) : TAH_ADD(d[k], p);
    }
  }
  for (int k = 0; k < 8; ++k) d[k] = TAH_MUL(d[k], 0.125f);
}

// Swaps tile elements 0 and p (p < 64) across the group.
__device__ void gSwap(unsigned m, float* d, unsigned p) {
  const int j = threadIdx.x & 7;
  float mine = 0.0f;
  for (int k = 0; k < 8; ++k)
    if (k == static_cast<int>(p & 7u)) mine = d[k];
  const float e0 = __shfl_sync(m, d[0], 0, 8);
  const float ep = __shfl_sync(m, mine, static_cast<int>(p >> 3), 8);
  for (int k = 0; k < 8; ++k)
    if (j == static_cast<int>(p >> 3) && k == static_cast<int>(p & 7u)) d[k] = e0;
  if (j == 0) d[0] = ep;
}

// The device form of tah_host.cc's quantize(): codes c of v, meta and flag; returns the
// largest error (after the inverse transform when had) against x, in every lane.
__device__ float gQuantize(unsigned m, const float* v, const float* x, int q, bool had,
                           unsigned pivot, unsigned* c, uint32_t* meta, unsigned* flag) {
  float mn = v[0], mx = v[0];
  for (int k = 1; k < 8; ++k) mn = tah_min(mn, v[k]), mx = tah_max(mx, v[k]);
  mn = gMin(m, mn);
  mx = gMax(m, mx);
  unsigned wide = 0;
  *meta = tah_tile_meta(mn, mx, q, &wide);
  *flag = wide | (had ? TAH_FLAG_HAD | pivot : 0u);
  float z, s;
  tah_meta_zs(*meta, *flag, &z, &s);
  const float inv = tah_inv(s);
  float d[8];
  for (int k = 0; k < 8; ++k) {
    c[k] = tah_code(v[k], z, inv, q);
    d[k] = tah_value(c[k], z, s);
  }
  if (had) {
    gWht(m, d);
    gSwap(m, d, pivot);
  }
  float err = 0.0f;
  for (int k = 0; k < 8; ++k) err = tah_max(err, tah_abs(TAH_SUB(d[k], x[k])));
  return gMax(m, err);
}

// tah_host.cc's encodeTile for a pivot candidate x (the group's 8 values a lane): the plain
// coding and the swapped, transformed one; true (with its codes, meta and flag) when the
// transformed one has the smaller largest error.
__device__ bool gHadamardWins(unsigned m, const float* x, int q, unsigned* c, uint32_t* meta,
                              unsigned* flag) {
  const int j = threadIdx.x & 7;
  float m1 = 0.0f;  // the pivot: the first index of the largest |x|
  unsigned p = 0;
  for (int k = 0; k < 8; ++k)
    if (tah_abs(x[k]) > m1) m1 = tah_abs(x[k]), p = 8 * j + k;
  for (int o = 4; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(m, m1, o, 8);
    const unsigned op = __shfl_xor_sync(m, p, o, 8);
    if (om > m1 || (om == m1 && op < p)) m1 = om, p = op;
  }
  unsigned cp[8], fp;
  uint32_t mp;
  const float errPlain = gQuantize(m, x, x, q, false, 0, cp, &mp, &fp);
  float y[8];
  for (int k = 0; k < 8; ++k) y[k] = x[k];
  gSwap(m, y, p);
  gWht(m, y);
  for (int k = 0; k < 8; ++k) y[k] = tah_fin(y[k]);
  return gQuantize(m, y, x, q, true, p, c, meta, flag) < errPlain;
}

// The group's 8 decoded fp32 values of tile (r, t) of a payload (tah_host.cc's decodeTile).
__device__ void gDecodeTile(unsigned m, const uint8_t* pay, const tah_layout_t& L, uint32_t R,
                            size_t r, size_t t, float* d) {
  const int j = threadIdx.x & 7;
  int three = 0;
  size_t off = 0;
  if (!tah_row_place(pay, &L, R, r, &three, &off)) {
    for (int k = 0; k < 8; ++k) d[k] = 0.0f;
    return;
  }
  const size_t tile = r * (R / TAH_TILE) + t;
  const uint32_t meta = reinterpret_cast<const uint32_t*>(pay + L.metaOff)[tile];
  const unsigned flag = pay[L.flagOff + tile];
  float z, s;
  tah_meta_zs(meta, flag, &z, &s);
  const uint8_t* c = pay + L.codeOff + off + t * (three ? 24 : 32);
  uint32_t w;
  int bits;
  if (three) {
    w = c[3 * j] | c[3 * j + 1] << 8 | static_cast<uint32_t>(c[3 * j + 2]) << 16, bits = 3;
  } else {
    w = reinterpret_cast<const uint32_t*>(c)[j], bits = 4;
  }
  for (int k = 0; k < 8; ++k) d[k] = tah_value((w >> (bits * k)) & ((1u << bits) - 1u), z, s);
  if (flag & TAH_FLAG_HAD) {
    gWht(m, d);
    gSwap(m, d, flag & TAH_FLAG_PIVOT);
  }
}

// The i-th set bit of `todo` for group g of the warp (the warp's rare tiles, 4 at a time),
// -1 when fewer are set; *todo loses its 4 lowest bits.
__device__ __forceinline__ int gTake(unsigned* todo) {
  unsigned mm = *todo;
  for (int k = 0; k < static_cast<int>((threadIdx.x & 31u) >> 3); ++k) mm &= mm - 1u;
  for (int k = 0; k < 4; ++k) *todo &= *todo - 1u;
  return mm ? __ffs(mm) - 1 : -1;
}
