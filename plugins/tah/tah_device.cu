// tah device operations, bit for bit the host's (tah_host.cc) from the same scalar math
// (tah_math.h, --fmad=false, _rn intrinsics). A tile of 64 elements is held by a group of 8
// lanes (lane j of the group holds elements 8j .. 8j+7, four tiles per warp), so the host's
// trees (tah_tile_sum, tah_wht64) are the groups' shuffle patterns. Encode is three kernels:
// row keys (one CTA a row), the 3-bit row selection (one CTA: radix select of the n3-th key,
// ties by index, then the bit map and prefixes), the tiles; decode is one. The tile kernels loop
// over the tiles on the resident grid, their geometry (Geo) computed once on the host. Launchers
// only enqueue on `stream`.
#include <cuda_runtime.h>

#include "tah_codec.h"
#include "tah_math.h"

namespace {

constexpr int kThreads = 256;  // 8 warps, 32 tile groups
constexpr int kTilesPerCta = kThreads / 8;
constexpr int kSelectThreads = 1024;

struct Inputs {
  const uint8_t* p[TAH_MAX_INPUTS];
};

// A launch's geometry, computed once on the host (tah_layout has 64-bit divisions, which cost a
// thread more than its 8 elements' decode).
struct Geo {
  tah_layout_t L;
  size_t count;
  uint32_t R, T;  // elements and tiles of a row
};

Geo geoOf(const tah_instance_t* t, size_t count) {
  Geo g;
  g.L = tah_layout(count, t->row, t->lowL);
  g.count = count;
  g.R = t->row;
  g.T = t->row / TAH_TILE;
  return g;
}

// Row and tile-in-row of a tile: 32-bit division while the tile numbers fit (every message
// below 2^38 elements), the 64-bit one beyond.
__device__ __forceinline__ void tileRT(const Geo& g, size_t tile, size_t* r, size_t* t) {
  if (g.L.tiles <= 0xffffffffu) {
    const uint32_t q = static_cast<uint32_t>(tile) / g.T;
    *r = q;
    *t = static_cast<uint32_t>(tile) - q * g.T;
  } else {
    *r = tile / g.T;
    *t = tile % g.T;
  }
}

const tah_instance_t* inst(const void* p) {
  return static_cast<const tah_instance_t*>(p);
}
size_t pad256(size_t n) {
  return (n + 255) & ~static_cast<size_t>(255);
}
unsigned gridFor(size_t items, size_t per) {
  return static_cast<unsigned>((items + per - 1) / per);
}

// ---- group helpers (8 lanes, mask of the group) ------------------------------------------

__device__ __forceinline__ unsigned groupMask() {
  return 0xffu << (threadIdx.x & 24u);
}
__device__ __forceinline__ float gSum(unsigned m, float v) {
  for (int o = 4; o > 0; o >>= 1) v = TAH_ADD(v, __shfl_xor_sync(m, v, o, 8));
  return v;
}
__device__ __forceinline__ float gMax(unsigned m, float v) {
  for (int o = 4; o > 0; o >>= 1) v = tah_max(v, __shfl_xor_sync(m, v, o, 8));
  return v;
}
__device__ __forceinline__ float gMin(unsigned m, float v) {
  for (int o = 4; o > 0; o >>= 1) v = tah_min(v, __shfl_xor_sync(m, v, o, 8));
  return v;
}

// 8 elements from e (rows past count read as 0); vec: 16-byte aligned base (vector loads);
// fin: non-finite read as 0 (tah_load; else tah_load_raw).
__device__ void load8(const void* in, int dtype, size_t count, size_t e, bool vec, float* v,
                      bool fin = true) {
  if (vec && e + 8 <= count) {
    if (dtype == TAH_DT_F32) {
      const float4 a = reinterpret_cast<const float4*>(in)[e / 4];
      const float4 b = reinterpret_cast<const float4*>(in)[e / 4 + 1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z,
      v[7] = b.w;
      if (fin)
        for (int k = 0; k < 8; ++k) v[k] = tah_fin(v[k]);
    } else {
      const uint4 u = reinterpret_cast<const uint4*>(in)[e / 8];
      const uint32_t w[4] = {u.x, u.y, u.z, u.w};
      for (int k = 0; k < 8; ++k) {
        const uint16_t h = static_cast<uint16_t>(w[k / 2] >> (16 * (k & 1)));
        v[k] = dtype == TAH_DT_F16 ? tah_f16_to_f32(h) : tah_bf16_to_f32(h);
        if (fin) v[k] = tah_fin(v[k]);
      }
    }
    return;
  }
  for (int k = 0; k < 8; ++k)
    v[k] = e + k >= count ? 0.0f
           : fin          ? tah_load(in, dtype, e + k)
                          : tah_load_raw(in, dtype, e + k);
}

__device__ void store8(void* out, int dtype, size_t count, size_t e, bool vec, const float* v) {
  if (vec && e + 8 <= count) {
    if (dtype == TAH_DT_F32) {
      reinterpret_cast<float4*>(out)[e / 4] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(out)[e / 4 + 1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      uint32_t w[4];
      for (int k = 0; k < 4; ++k) {
        const uint16_t a =
            dtype == TAH_DT_F16 ? tah_f32_to_f16(v[2 * k]) : tah_f32_to_bf16(v[2 * k]);
        const uint16_t b =
            dtype == TAH_DT_F16 ? tah_f32_to_f16(v[2 * k + 1]) : tah_f32_to_bf16(v[2 * k + 1]);
        w[k] = static_cast<uint32_t>(a) | static_cast<uint32_t>(b) << 16;
      }
      reinterpret_cast<uint4*>(out)[e / 8] = make_uint4(w[0], w[1], w[2], w[3]);
    }
    return;
  }
  for (int k = 0; k < 8; ++k)
    if (e + k < count) tah_store(out, dtype, e + k, v[k]);
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
                           unsigned pivot, bool wantErr, unsigned* c, uint32_t* meta,
                           unsigned* flag) {
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
  if (!wantErr) return 0.0f;
  if (had) {
    gWht(m, d);
    gSwap(m, d, pivot);
  }
  float err = 0.0f;
  for (int k = 0; k < 8; ++k) err = tah_max(err, tah_abs(TAH_SUB(d[k], x[k])));
  return gMax(m, err);
}

// ---- encode ---------------------------------------------------------------------------

// keys[r] = tah_row_key of row r. One CTA a row; group g takes tiles g, g + 32, ...
// The encoded values: fin(fin(x) * scale) (scale 1: fin(x); tah_host.cc's encodeImpl).
__device__ void loadScaled8(const void* in, int dtype, size_t count, size_t e, bool vec,
                            float scale, float* x) {
  load8(in, dtype, count, e, vec, x);
  if (scale != 1.0f)
    for (int k = 0; k < 8; ++k) x[k] = tah_fin(TAH_MUL(x[k], scale));
}

__global__ void rowKeysKernel(const void* in, int dtype, Geo geo, float scale, bool vec,
                              uint32_t* keys) {
  __shared__ float sS[TAH_MAX_ROW / TAH_TILE], sU[TAH_MAX_ROW / TAH_TILE];
  const size_t r = blockIdx.x, count = geo.count, R = geo.R;
  const uint32_t T = geo.T;
  const unsigned m = groupMask();
  const int g = threadIdx.x / 8, j = threadIdx.x & 7;
  for (uint32_t t = g; t < T; t += kTilesPerCta) {
    float x[8], a[8], u[8];
    loadScaled8(in, dtype, count, r * R + t * TAH_TILE + 8 * j, vec, scale, x);
    for (int k = 0; k < 8; ++k) a[k] = tah_abs(x[k]), u[k] = tah_ulog(a[k]);
    const float s = gSum(m, tah_sum8(a)), uu = gSum(m, tah_sum8(u));
    if (j == 0) sS[t] = s, sU[t] = uu;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float S = 0.0f, U = 0.0f;
    for (uint32_t t = 0; t < T; ++t) S = TAH_ADD(S, sS[t]), U = TAH_ADD(U, sU[t]);
    keys[r] = tah_row_key(S, U);
  }
}

#include "tah_select.cuh"  // selectKernel

// Tile (r, t) of the message into out: the pivot candidate, the plain quantization and, for a
// candidate, the swapped and transformed one; the smaller largest error wins (tah_host.cc).
__device__ void encodeTile(unsigned m, int j, const void* in, int dtype, const Geo& geo,
                           float scale, bool had, bool vec, size_t tile, size_t r, size_t t,
                           uint8_t* out) {
  const tah_layout_t& L = geo.L;
  const size_t R = geo.R, count = geo.count;
  int three = 0;
  size_t off = 0;
  tah_row_place(out, &L, R, r, &three, &off);
  const int q = three ? 7 : 15;
  float x[8];
  loadScaled8(in, dtype, count, r * R + t * TAH_TILE + 8 * j, vec, scale, x);
  // pivot candidate: m1 = max |x| at its first index p, m2 = max of the others
  float m1 = 0.0f;
  unsigned p = 0;
  for (int k = 0; k < 8; ++k)
    if (tah_abs(x[k]) > m1) m1 = tah_abs(x[k]), p = 8 * j + k;
  for (int o = 4; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(m, m1, o, 8);
    const unsigned op = __shfl_xor_sync(m, p, o, 8);
    if (om > m1 || (om == m1 && op < p)) m1 = om, p = op;
  }
  float m2 = 0.0f;
  for (int k = 0; k < 8; ++k)
    if (static_cast<unsigned>(8 * j + k) != p) m2 = tah_max(m2, tah_abs(x[k]));
  m2 = gMax(m, m2);
  const bool cand = had && m1 > 0.0f && TAH_MUL(2.0f, m2) <= m1;
  unsigned c[8], flag;
  uint32_t meta;
  const float errPlain = gQuantize(m, x, x, q, false, 0, cand, c, &meta, &flag);
  if (cand) {
    float y[8];
    for (int k = 0; k < 8; ++k) y[k] = x[k];
    gSwap(m, y, p);
    gWht(m, y);
    for (int k = 0; k < 8; ++k) y[k] = tah_fin(y[k]);
    unsigned ch[8], flagH;
    uint32_t metaH;
    if (gQuantize(m, y, x, q, true, p, true, ch, &metaH, &flagH) < errPlain) {
      for (int k = 0; k < 8; ++k) c[k] = ch[k];
      meta = metaH, flag = flagH;
    }
  }
  uint8_t* codes = out + L.codeOff + off + t * (three ? 24 : 32);
  if (three) {
    uint32_t w = 0;
    for (int k = 0; k < 8; ++k) w |= c[k] << (3 * k);
    codes[3 * j] = static_cast<uint8_t>(w), codes[3 * j + 1] = static_cast<uint8_t>(w >> 8);
    codes[3 * j + 2] = static_cast<uint8_t>(w >> 16);
  } else {
    uint32_t w = 0;
    for (int k = 0; k < 8; ++k) w |= c[k] << (4 * k);
    reinterpret_cast<uint32_t*>(codes)[j] = w;
  }
  if (j == 0) {
    reinterpret_cast<uint32_t*>(out + L.metaOff)[tile] = meta;
    out[L.flagOff + tile] = static_cast<uint8_t>(flag);
  }
}

// One group of 8 lanes a tile, tiles in a grid-stride loop (the grid is the resident one).
// 4 CTAs a multiprocessor: 64 registers, no spills (80 without the bound).
__global__ void __launch_bounds__(kThreads, 4)
    encodeTilesKernel(const void* in, int dtype, Geo geo, float scale, bool had, bool vec,
                      uint8_t* out) {
  const tah_layout_t& L = geo.L;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = L.flagOff + L.tiles; i < L.codeOff; ++i) out[i] = 0;
  const unsigned m = groupMask();
  const int j = threadIdx.x & 7;
  const size_t stride = static_cast<size_t>(gridDim.x) * kTilesPerCta;
  for (size_t tile = static_cast<size_t>(blockIdx.x) * kTilesPerCta + threadIdx.x / 8;
       tile < L.tiles; tile += stride) {  // whole groups move together
    size_t r, t;
    tileRT(geo, tile, &r, &t);
    encodeTile(m, j, in, dtype, geo, scale, had, vec, tile, r, t, out);
  }
}

// ---- decode ---------------------------------------------------------------------------

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

// Mode 0: out (dtype) = decode(ins[0]); 1: acc += decode(ins[0]) + ... in order; 2 (the owner
// step's sum): acc (fp32) = sum over r of (r == self ? selfIn : decode(ins[r])), times scale.
// One group of 8 lanes a tile, tiles in a grid-stride loop (the grid is the resident one).
template <int Mode>
__global__ void decodeTilesKernel(Inputs ins, int n, int self, const void* selfIn, float scale,
                                  Geo geo, int dtype, bool vec, void* out) {
  const tah_layout_t& L = geo.L;
  const size_t count = geo.count;
  const unsigned m = groupMask();
  const int j = threadIdx.x & 7;
  const size_t stride = static_cast<size_t>(gridDim.x) * kTilesPerCta;
  for (size_t tile = static_cast<size_t>(blockIdx.x) * kTilesPerCta + threadIdx.x / 8;
       tile < L.tiles; tile += stride) {  // whole groups move together
    size_t r, t;
    tileRT(geo, tile, &r, &t);
    const size_t e0 = r * geo.R + t * TAH_TILE, e = e0 + 8 * j;
    if (e0 >= count) continue;  // a padding tile (whole group)
    float d[8], a[8];
    if (Mode == 0) {
      gDecodeTile(m, ins.p[0], L, geo.R, r, t, d);
      store8(out, dtype, count, e, vec, d);
      continue;
    }
    if (Mode == 1) {
      for (int k = 0; k < 8; ++k)  // acc is read as is (no non-finite mapping), 0 past count
        a[k] = e + k < count ? static_cast<const float*>(out)[e + k] : 0.0f;
    }
    for (int q = 0; q < n; ++q) {
      if (Mode == 2 && q == self)
        load8(selfIn, dtype, count, e, vec, d, false);
      else
        gDecodeTile(m, ins.p[q], L, geo.R, r, t, d);
      for (int k = 0; k < 8; ++k) a[k] = (Mode == 2 && q == 0) ? d[k] : TAH_ADD(a[k], d[k]);
    }
    if (Mode == 2 && scale != 1.0f)
      for (int k = 0; k < 8; ++k) a[k] = TAH_MUL(a[k], scale);
    for (int k = 0; k < 8; ++k)
      if (e + k < count) static_cast<float*>(out)[e + k] = a[k];
  }
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

#ifndef COCCL_DEVICE_EMULATION  // test_tah_device_emulated.cc (tests/plugins/tah) launches
                                // the kernels above as host code (tests/gpu/emu) itself
int launched() {
  return cudaGetLastError() == cudaSuccess ? COCCL_CODEC_OK : COCCL_CODEC_E_CUDA;
}

// CTAs for the tiles of a grid-stride kernel: one a kTilesPerCta tiles, at most the resident
// grid (the kernel's occupancy times the current device's multiprocessors).
template <auto Kernel>
unsigned residentGrid(const Geo& g) {
  static const int perSm = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, kThreads, 0) != cudaSuccess ||
        n < 1)
      n = 1;
    return n;
  }();
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
    sms = 1;
  const size_t need = gridFor(g.L.tiles, kTilesPerCta);
  const size_t cap = static_cast<size_t>(perSm) * static_cast<size_t>(sms);
  return static_cast<unsigned>(need < 1 ? 1 : (need < cap ? need : cap));
}

int encodeOn(const tah_instance_t* t, const void* in, int dtype, size_t count, float scale,
             uint8_t* out, uint32_t* keys, cudaStream_t stream) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(in);
  if (g.L.n3 > 0) {
    rowKeysKernel<<<static_cast<unsigned>(g.L.rows), kThreads, 0, stream>>>(in, dtype, g, scale,
                                                                            vec, keys);
    if (launched()) return COCCL_CODEC_E_CUDA;
  }
  selectKernel<<<1, kSelectThreads, 0, stream>>>(keys, static_cast<uint32_t>(g.L.rows),
                                                 static_cast<uint32_t>(g.L.n3),
                                                 reinterpret_cast<uint32_t*>(out));
  if (launched()) return COCCL_CODEC_E_CUDA;
  encodeTilesKernel<<<residentGrid<encodeTilesKernel>(g), kThreads, 0, stream>>>(
      in, dtype, g, scale, t->had != 0, vec, out);
  return launched();
}

template <int Mode>
int decodeMode(const Inputs& ins, int n, int self, const void* selfIn, float scale, const Geo& g,
               int dtype, bool vec, void* out, cudaStream_t stream) {
  decodeTilesKernel<Mode><<<residentGrid<decodeTilesKernel<Mode>>(g), kThreads, 0, stream>>>(
      ins, n, self, selfIn, scale, g, dtype, vec, out);
  return launched();
}

int decodeOn(const tah_instance_t* t, const Inputs& ins, int n, int mode, int self,
             const void* selfIn, float scale, size_t count, int dtype, void* out,
             cudaStream_t stream) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(out) && (mode != 2 || aligned16(selfIn));
  if (mode == 0) return decodeMode<0>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
  if (mode == 1) return decodeMode<1>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
  return decodeMode<2>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
}

#endif  // COCCL_DEVICE_EMULATION

}  // namespace

#ifndef COCCL_DEVICE_EMULATION

extern "C" size_t tah_device_workspace(const tah_instance_t* t, size_t count, int p) {
  const tah_layout_t L = tah_layout(count, t->row, t->lowL);
  return (p >= 2 ? pad256(4 * count) : 0) + pad256(4 * L.rows);
}

extern "C" int tah_device_encode(const void* instance, const void* in, int dtype, size_t count,
                                 void* out, void* ws, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || !ws || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  return encodeOn(t, in, dtype, count, 1.0f, static_cast<uint8_t*>(out), static_cast<uint32_t*>(ws),
                  stream);
}

extern "C" int tah_device_decode(const void* instance, const void* in, size_t count, int dtype,
                                 void* out, void*, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || tah_count_ok(t, count)) return COCCL_CODEC_E_INVALID;
  Inputs p{};
  p.p[0] = static_cast<const uint8_t*>(in);
  return decodeOn(t, p, 1, 0, 0, nullptr, 1.0f, count, dtype, out, stream);
}

extern "C" int tah_device_decode_accumulate(const void* instance, const void* const* ins, int n,
                                            size_t count, int dtype, float* acc, void*,
                                            cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !ins || !acc || n < 1 || n > TAH_MAX_INPUTS || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  Inputs p{};
  for (int k = 0; k < n; ++k) {
    if (!ins[k]) return COCCL_CODEC_E_INVALID;
    p.p[k] = static_cast<const uint8_t*>(ins[k]);
  }
  return decodeOn(t, p, n, 1, 0, nullptr, 1.0f, count, dtype, acc, stream);
}

extern "C" int tah_device_decode_reduce_encode(const void* instance, const void* const* ins, int p,
                                               int self, const void* selfIn, int dtype,
                                               size_t count, float scale, void* out, void* decoded,
                                               void* ws, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || p < 1 || p > TAH_MAX_INPUTS || self < 0 || self >= p || !selfIn ||
      !out || !ws || (p > 1 && !ins) || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  Inputs in{};
  for (int r = 0; r < p; ++r) {
    if (r == self) continue;
    if (!ins[r]) return COCCL_CODEC_E_INVALID;
    in.p[r] = static_cast<const uint8_t*>(ins[r]);
  }
  int rc;
  if (p == 1) {  // acc = selfIn * scale: encoded on the fly (workspace: the keys only)
    rc = encodeOn(t, selfIn, dtype, count, scale, static_cast<uint8_t*>(out),
                  static_cast<uint32_t*>(ws), stream);
  } else {
    float* acc = static_cast<float*>(ws);
    uint32_t* keys = reinterpret_cast<uint32_t*>(static_cast<char*>(ws) + pad256(4 * count));
    rc = decodeOn(t, in, p, 2, self, selfIn, scale, count, dtype, acc, stream);
    if (rc == COCCL_CODEC_OK)
      rc = encodeOn(t, acc, TAH_DT_F32, count, 1.0f, static_cast<uint8_t*>(out), keys, stream);
  }
  if (rc == COCCL_CODEC_OK && decoded) {
    Inputs o{};
    o.p[0] = static_cast<const uint8_t*>(out);
    rc = decodeOn(t, o, 1, 0, 0, nullptr, 1.0f, count, dtype, decoded, stream);
  }
  return rc;
}
#endif  // COCCL_DEVICE_EMULATION
