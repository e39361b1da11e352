// tah's tile kernels work on batches of 32 consecutive tiles a warp, lane l owning tile l
// (included by tah_device.cu, inside its anonymous namespace). Tiles are consecutive in the
// message (tile i is elements 64i .. 64i+63, since a row is a whole number of tiles), so a batch
// is a contiguous range: it is read from global memory coalesced into the warp's slab in shared
// memory (fp32, tile i at v[i * kPitch]), each lane then works on its own tile's 64 values with
// no shuffles, amortising the tile's scalar work (placement, scale and zero, divisions) over 64
// elements instead of 8, and the results leave the slab coalesced again. The batch's codes are
// contiguous in the payload too (rows follow each other, a row's tiles as well).
#pragma once

constexpr int kWarps = 4;  // warps a CTA of the tile kernels
constexpr int kThreads = 32 * kWarps;
constexpr int kBatch = 32;              // tiles a warp works on at a time: one a lane
constexpr int kPitch = TAH_TILE + 4;    // floats a tile in the slab: lane l's 16-byte reads of
                                        // v[l * kPitch + 4i] hit distinct banks
constexpr int kCodeWords = kBatch * 8;  // a batch's codes: at most 32 bytes a tile
constexpr uint32_t kExact = 0x100u;     // Slab::flag: a tile that needs the exact conversions
constexpr uint32_t kWon = 0x200u;       // Slab::flag: the Hadamard coding won (encode)

struct alignas(16) Slab {
  float v[kBatch * kPitch];    // the batch's values
  uint32_t codes[kCodeWords];  // the batch's codes, as in the payload
  uint32_t meta[kBatch];
  uint32_t flag[kBatch];   // the payload flag | kExact | kWon
  uint32_t place[kBatch];  // encode: a tile's codes in `codes` (bytes) | 3-bit << 31
};

struct alignas(16) SlabValues {  // a batch's values alone (a kernel without code staging)
  float v[kBatch * kPitch];
};

__device__ __forceinline__ int laneId() {
  return static_cast<int>(threadIdx.x & 31u);
}
__device__ __forceinline__ size_t shfl64(size_t v, int src) {
  const unsigned lo = __shfl_sync(0xffffffffu, static_cast<unsigned>(v), src);
  const unsigned hi = __shfl_sync(0xffffffffu, static_cast<unsigned>(v >> 32), src);
  return static_cast<size_t>(hi) << 32 | lo;
}
__device__ __forceinline__ unsigned warpMax(unsigned v) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned p = __shfl_xor_sync(0xffffffffu, v, o);
    v = p > v ? p : v;
  }
  return v;
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

// ---- batches ------------------------------------------------------------------------------

// A warp's batch: tiles [tile0, tile0 + nt) and where they start in the message.
struct Batch {
  size_t tile0;
  int nt;
};
__device__ __forceinline__ bool nextBatch(const Geo& g, size_t* b, Batch* out) {
  const size_t tile0 = *b * kBatch;
  if (tile0 >= g.L.tiles) return false;
  out->tile0 = tile0;
  const size_t left = g.L.tiles - tile0;
  out->nt = left < static_cast<size_t>(kBatch) ? static_cast<int>(left) : kBatch;
  *b += static_cast<size_t>(gridDim.x) * kWarps;
  return true;
}
__device__ __forceinline__ size_t firstBatch() {
  return static_cast<size_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
}

// Lane l's tile of a batch (the batch's first tile for the lanes past its end) and where its
// codes lie in the code section of payload `pay` (tah_row_place: ok is false where the row
// cannot lie in the section, a garbage header's).
struct LaneTile {
  bool act, ok;
  size_t tile, off;  // off: bytes from the code section's start
  int three;
  unsigned size;  // bytes of codes: 24 (3-bit) or 32
};
__device__ __forceinline__ LaneTile laneTile(const uint8_t* pay, const Geo& geo, const Batch& bt) {
  LaneTile p;
  const int lane = laneId();
  p.act = lane < bt.nt;
  p.tile = bt.tile0 + (p.act ? lane : 0);
  size_t r, t;
  tileRT(geo, p.tile, &r, &t);
  p.off = 0;
  p.three = 0;
  p.ok = tah_row_place(pay, &geo.L, geo.R, r, &p.three, &p.off) != 0;
  p.size = p.three ? 24u : 32u;
  p.off += t * p.size;
  return p;
}

// ---- 16-bit conversions: the hardware's where they give tah_math.h's bits ------------------

// f16 -> fp32 of a value that tah_fin then maps (the hardware conversion is exact; only a NaN's
// payload can differ from tah_f16_to_f32's, and fin reads every NaN as 0).
__device__ __forceinline__ float f16ToF32Fin(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return tah_fin(f);
#else
  return tah_fin(tah_f16_to_f32(h));
#endif
}
// The message's end or an unaligned buffer, element by element, out of line (the main loops'
// code must stay small): d[0, n) (slab) = / += elements e.. (tah_load when fin, then times scale
// when != 1; else tah_load_raw; 0 past count), and elements e.. (below count) = s[0, n) * scale.
__device__ __noinline__ void loadScalar(const void* in, int dtype, size_t count, size_t e, int n,
                                        bool fin, float scale, bool add, float* d) {
  for (int k = 0; k < n; ++k) {
    float x = e + k >= count ? 0.0f
              : fin          ? tah_load(in, dtype, e + k)
                             : tah_load_raw(in, dtype, e + k);
    if (fin && scale != 1.0f) x = tah_fin(TAH_MUL(x, scale));
    d[k] = add ? TAH_ADD(d[k], x) : x;
  }
}
__device__ __noinline__ void storeScalar(void* out, int dtype, size_t count, size_t e, int n,
                                         float scale, const float* s) {
  for (int k = 0; k < n; ++k)
    if (e + k < count) tah_store(out, dtype, e + k, scale != 1.0f ? TAH_MUL(s[k], scale) : s[k]);
}
__device__ __noinline__ uint32_t packExact(int dtype, float a, float b) {
  const uint16_t x = dtype == TAH_DT_F16 ? tah_f32_to_f16(a) : tah_f32_to_bf16(a);
  const uint16_t y = dtype == TAH_DT_F16 ? tah_f32_to_f16(b) : tah_f32_to_bf16(b);
  return static_cast<uint32_t>(x) | static_cast<uint32_t>(y) << 16;
}

// Two fp32 values as a packed pair (a low) of dtype: round to nearest even, as tah_f32_to_f16 /
// tah_f32_to_bf16 do for every value but NaN (whose bits differ: exact = true where a NaN can
// occur).
__device__ __forceinline__ uint32_t pack2(int dtype, float a, float b, bool exact) {
#if defined(__CUDA_ARCH__)
  if (!exact) {
    uint32_t r;
    if (dtype == TAH_DT_F16)
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    else
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
  }
#else
  (void)exact;
#endif
  return packExact(dtype, a, b);
}

// ---- slab in: elements [e0, e0 + 64 nt) of a typed buffer, 0 past count ------------------

// Fin: tah_load (non-finite read as 0), then fin(x * scale) when scale != 1 (tah_host.cc's
// encodeImpl); else tah_load_raw. Add: v += x (else v = x). vec: `in` is 16-byte aligned.
template <int Epc, bool Fin, bool Add>
__device__ void slabLoadT(const void* in, int dtype, size_t count, size_t e0, int nt, bool vec,
                          float scale, float* v) {
  for (int c = laneId(); c < nt * (TAH_TILE / Epc); c += 32) {
    const size_t e = e0 + static_cast<size_t>(Epc) * c;
    float* d = v + (c / (TAH_TILE / Epc)) * kPitch + Epc * (c % (TAH_TILE / Epc));
    if (!vec || e + Epc > count) {
      loadScalar(in, dtype, count, e, Epc, Fin, scale, Add, d);
      continue;
    }
    float x[Epc];
    {
      const uint4 u = reinterpret_cast<const uint4*>(in)[e / Epc];
      const uint32_t w[4] = {u.x, u.y, u.z, u.w};
      if (Epc == 4) {
        for (int k = 0; k < 4; ++k) x[k] = Fin ? tah_fin(tah_float(w[k])) : tah_float(w[k]);
      } else {
        for (int k = 0; k < Epc; ++k) {
          const uint16_t h = static_cast<uint16_t>(w[k / 2] >> (16 * (k & 1)));
          if (dtype == TAH_DT_BF16)
            x[k] = Fin ? tah_fin(tah_bf16_to_f32(h)) : tah_bf16_to_f32(h);
          else
            x[k] = Fin ? f16ToF32Fin(h) : tah_f16_to_f32(h);
        }
      }
    }
    if (Fin && scale != 1.0f)
      for (int k = 0; k < Epc; ++k) x[k] = tah_fin(TAH_MUL(x[k], scale));
    for (int k = 0; k < Epc; k += 4) {
      float4 o = make_float4(x[k], x[k + 1], x[k + 2], x[k + 3]);
      if (Add) {
        const float4 a = *reinterpret_cast<const float4*>(d + k);
        o = make_float4(TAH_ADD(a.x, o.x), TAH_ADD(a.y, o.y), TAH_ADD(a.z, o.z), TAH_ADD(a.w, o.w));
      }
      *reinterpret_cast<float4*>(d + k) = o;
    }
  }
}
template <bool Fin, bool Add>
__device__ void slabLoad(const void* in, int dtype, size_t count, size_t e0, int nt, bool vec,
                         float scale, float* v) {
  if (dtype == TAH_DT_F32)
    slabLoadT<4, Fin, Add>(in, dtype, count, e0, nt, vec, scale, v);
  else
    slabLoadT<8, Fin, Add>(in, dtype, count, e0, nt, vec, scale, v);
}

// ---- the next batch's first 4 KiB, held in registers while the warp works on the current one,
// then converted into the slab ------------------------------------------------------------------

__device__ __noinline__ uint4 raw16Scalar(const uint16_t* h, size_t count, size_t e) {
  uint32_t w[4] = {0, 0, 0, 0};
  for (int k = 0; k < 8; ++k)
    if (e + k < count) w[k / 2] |= static_cast<uint32_t>(h[e + k]) << (16 * (k & 1));
  return make_uint4(w[0], w[1], w[2], w[3]);
}
struct Prefetch {
  uint4 r[8];
};
// The next batch's first 4 KiB into p (8 chunks of 16 bytes a lane, Epc elements a chunk, 0
// past count): a 16-bit batch whole (Epc 8), an fp32 batch's first half (Epc 4: 16 tiles; the
// whole 8 KiB would take 64 registers a lane; the second half is loaded when the batch is
// converted).
constexpr int kPrefetchTiles32 = kBatch / 2;
__device__ __noinline__ uint4 raw32Scalar(const float* f, size_t count, size_t e) {
  uint32_t w[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; ++k)
    if (e + k < count) w[k] = tah_bits(f[e + k]);
  return make_uint4(w[0], w[1], w[2], w[3]);
}
template <int Epc>
__device__ __forceinline__ void prefetchT(const void* in, size_t count, size_t e0, int nt,
                                          bool vec, Prefetch* p) {
  for (int i = 0; i < 8; ++i) {  // c < 256: an fp32 batch's first 16 tiles
    const int c = laneId() + 32 * i;
    const size_t e = e0 + Epc * static_cast<size_t>(c);
    p->r[i] = make_uint4(0, 0, 0, 0);
    if (c >= nt * (TAH_TILE / Epc) || e >= count) continue;
    if (vec && e + Epc <= count)
      p->r[i] = reinterpret_cast<const uint4*>(in)[e / Epc];
    else if (Epc == 8)  // the message's end or an unaligned input: 0 past count
      p->r[i] = raw16Scalar(static_cast<const uint16_t*>(in), count, e);
    else
      p->r[i] = raw32Scalar(static_cast<const float*>(in), count, e);
  }
}

// The slab's values of a prefetched batch: fin(x), then fin(x * scale) when scale != 1 (a
// separate pass: the common loop's code stays small). Lane l's chunk i (8 values) goes to tile
// l / 8 + 4 i at 8 (l % 8): one address a lane, steps of 4 tiles. fin costs one add an element:
// a chunk whose |x| sum is not finite (a non-finite value, or finite values whose sum
// overflows) is converted again value by value, out of line.
template <int Dt>
__device__ __forceinline__ void unpack16(const uint4& r, float* x) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
  for (int k = 0; k < 8; ++k) {
    const uint16_t h = static_cast<uint16_t>(w[k / 2] >> (16 * (k & 1)));
#if defined(__CUDA_ARCH__)
    if (Dt == TAH_DT_F16) {
      asm("cvt.f32.f16 %0, %1;" : "=f"(x[k]) : "h"(h));
      continue;
    }
#endif
    x[k] = Dt == TAH_DT_BF16 ? tah_bf16_to_f32(h) : tah_f16_to_f32(h);
  }
}
template <int Dt>
__device__ __noinline__ void convertChunkFin(uint4 r, float* d) {
  float x[8];
  unpack16<Dt>(r, x);
  for (int k = 0; k < 8; ++k) d[k] = tah_fin(x[k]);
}
template <int Dt>
__device__ __forceinline__ void convert16T(const Prefetch& p, int nt, float* v) {
  const int lane = laneId();
  float* d0 = v + (lane / 8) * kPitch + 8 * (lane % 8);
  for (int i = 0; i < 8; ++i) {
    if (lane + 32 * i >= nt * 8) break;
    float* d = d0 + i * 4 * kPitch;
    float x[8];
    unpack16<Dt>(p.r[i], x);
    float a0 = fabsf(x[0]), a1 = fabsf(x[1]);  // two chains: the check's adds overlap
    for (int k = 2; k < 8; k += 2) a0 = TAH_ADD(a0, fabsf(x[k])), a1 = TAH_ADD(a1, fabsf(x[k + 1]));
    if (!(TAH_ADD(a0, a1) <= 3.40282347e+38f)) {  // NaN or Inf among them (or a huge sum)
      convertChunkFin<Dt>(p.r[i], d);
      continue;
    }
    reinterpret_cast<float4*>(d)[0] = make_float4(x[0], x[1], x[2], x[3]);
    reinterpret_cast<float4*>(d)[1] = make_float4(x[4], x[5], x[6], x[7]);
  }
}
__device__ __noinline__ void scaleSlab(int nt, float scale, float* v) {
  for (int c = laneId(); c < nt * TAH_TILE; c += 32) {
    float* d = v + (c / TAH_TILE) * kPitch + c % TAH_TILE;
    *d = tah_fin(TAH_MUL(*d, scale));
  }
}
// An fp32 batch: its prefetched first half from registers (fin(x), then fin(x * scale)), the
// rest (slabLoadT, the same values) from memory.
__device__ __forceinline__ void convert32(const Prefetch& p, const void* in, size_t count,
                                          size_t e0, int nt, bool vec, float scale, float* v) {
  const int head = nt < kPrefetchTiles32 ? nt : kPrefetchTiles32;
  for (int i = 0; i < 8; ++i) {
    const int c = laneId() + 32 * i;
    if (c >= head * (TAH_TILE / 4)) continue;
    const float4 x = make_float4(tah_fin(tah_float(p.r[i].x)), tah_fin(tah_float(p.r[i].y)),
                                 tah_fin(tah_float(p.r[i].z)), tah_fin(tah_float(p.r[i].w)));
    *reinterpret_cast<float4*>(v + (c / (TAH_TILE / 4)) * kPitch + 4 * (c % (TAH_TILE / 4))) = x;
  }
  if (nt > head)
    slabLoadT<4, true, false>(in, TAH_DT_F32, count, e0 + static_cast<size_t>(head) * TAH_TILE,
                              nt - head, vec, scale, v + head * kPitch);
  if (scale != 1.0f) {
    __syncwarp();  // other lanes' chunks
    scaleSlab(head, scale, v);
  }
}
__device__ __forceinline__ void convert16(const Prefetch& p, int dtype, int nt, float scale,
                                          float* v) {
  if (dtype == TAH_DT_BF16)
    convert16T<TAH_DT_BF16>(p, nt, v);
  else
    convert16T<TAH_DT_F16>(p, nt, v);
  if (scale != 1.0f) {
    __syncwarp();  // other lanes' chunks
    scaleSlab(nt, scale, v);
  }
}

// ---- slab out: v (times scale when != 1) into elements [e0, e0 + 64 nt) below count -------

template <int Epc>
__device__ void slabStoreT(const Slab& S, int dtype, size_t count, size_t e0, int nt, bool vec,
                           float scale, void* out) {
  for (int c = laneId(); c < nt * (TAH_TILE / Epc); c += 32) {
    const size_t e = e0 + static_cast<size_t>(Epc) * c;
    if (e >= count) continue;
    const int tile = c / (TAH_TILE / Epc);
    const float* s = S.v + tile * kPitch + Epc * (c % (TAH_TILE / Epc));
    if (!vec || e + Epc > count) {
      storeScalar(out, dtype, count, e, Epc, scale, s);
      continue;
    }
    float x[Epc];
    for (int k = 0; k < Epc; k += 4) {
      const float4 a = *reinterpret_cast<const float4*>(s + k);
      x[k] = a.x, x[k + 1] = a.y, x[k + 2] = a.z, x[k + 3] = a.w;
    }
    if (scale != 1.0f)
      for (int k = 0; k < Epc; ++k) x[k] = TAH_MUL(x[k], scale);
    uint32_t w[4];
    if (Epc == 4) {
      for (int k = 0; k < 4; ++k) w[k] = tah_bits(x[k]);
    } else {
      const bool exact = (S.flag[tile] & kExact) != 0;
      for (int k = 0; k < 4; ++k) w[k] = pack2(dtype, x[2 * k], x[2 * k + 1], exact);
    }
    reinterpret_cast<uint4*>(out)[e / Epc] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}
__device__ void slabStore(const Slab& S, int dtype, size_t count, size_t e0, int nt, bool vec,
                          float scale, void* out) {
  if (dtype == TAH_DT_F32)
    slabStoreT<4>(S, dtype, count, e0, nt, vec, scale, out);
  else
    slabStoreT<8>(S, dtype, count, e0, nt, vec, scale, out);
}

// A whole batch (32 tiles, all below count) into a 16-byte-aligned 16-bit output, scale 1 (the
// decode's common case): slabStoreT<8>'s bytes without its per-chunk bounds checks, the dtype a
// template parameter, and the exact conversions out of line for the tiles that need them.
__device__ __noinline__ uint4 packChunkExact(int dtype, const float* s) {
  uint32_t w[4];
  for (int k = 0; k < 4; ++k) w[k] = packExact(dtype, s[2 * k], s[2 * k + 1]);
  return make_uint4(w[0], w[1], w[2], w[3]);
}
template <int Dt>
__device__ __forceinline__ void slabStoreWhole16(const Slab& S, size_t e0, void* out) {
  uint4* o = reinterpret_cast<uint4*>(out) + e0 / 8;
#pragma unroll 2
  for (int i = 0; i < 8; ++i) {
    const int c = laneId() + 32 * i;  // chunk c: tile c / 8, its elements 8 (c % 8) ..
    const int tile = c >> 3;
    const float* s = S.v + tile * kPitch + 8 * (c & 7);
    if (S.flag[tile] & kExact) {
      o[c] = packChunkExact(Dt, s);
      continue;
    }
    const float4 a = *reinterpret_cast<const float4*>(s);
    const float4 b = *reinterpret_cast<const float4*>(s + 4);
    o[c] = make_uint4(pack2(Dt, a.x, a.y, false), pack2(Dt, a.z, a.w, false),
                      pack2(Dt, b.x, b.y, false), pack2(Dt, b.z, b.w, false));
  }
}
