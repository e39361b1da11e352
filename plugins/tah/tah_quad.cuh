// tah's register-resident tile layout (included by tah_device.cu, inside its anonymous namespace,
// after tah_lane.cuh and tah_group.cuh): a warp takes a quad of 4 consecutive tiles at a time,
// group g of 8 lanes tile g of the quad, lane j of the group elements 8j .. 8j+7 (one 16-byte
// load of a 16-bit input). A warp walks a contiguous range of quads, so a lane's row (a
// division) and the row's place in a payload's code section (the header's popcount) are looked
// up once a row, not once a tile. The group layout is tah_group.cuh's, so the rare tiles that
// need the 64-point transform are the group's shuffles in place.
#pragma once

constexpr int kQuadTiles = 4;  // tiles a warp takes at a time: a group of 8 lanes a tile
constexpr int kQuadThreads = 256;  // threads a CTA of the quad kernels

// The calling warp's quads [*q0, *q1) of the message's ceil(tiles / 4): contiguous ranges, one a
// warp of the grid.
__device__ __forceinline__ void warpQuads(const Geo& g, size_t* q0, size_t* q1) {
  const size_t quads = (g.L.tiles + kQuadTiles - 1) / kQuadTiles;
  const size_t wpc = blockDim.x / 32;
  const size_t warps = static_cast<size_t>(gridDim.x) * wpc;
  const size_t w = static_cast<size_t>(blockIdx.x) * wpc + threadIdx.x / 32;
  const size_t per = (quads + warps - 1) / warps;
  const size_t b = w * per;
  // lane 0's values: the compiler then knows the loops over them are uniform across the warp
  // and issues the shuffles inside them without a convergence guard (WARPSYNC.COLLECTIVE)
  *q0 = shfl64(b < quads ? b : quads, 0);
  *q1 = shfl64(b + per < quads ? b + per : quads, 0);
}

// A lane's row: tiles [first, end) of row r.
struct RowOf {
  size_t r, first, end;
};
__device__ __forceinline__ RowOf rowOf(const Geo& g, size_t tile) {
  size_t r, t;
  tileRT(g, tile, &r, &t);
  return RowOf{r, tile - t, tile - t + g.T};
}
// A row's codes in one payload (tah_row_place: ok is 0 where the row cannot lie in the code
// section, a garbage header's).
struct Place {
  size_t base;  // bytes from the code section's start
  int three, ok;
};
__device__ __forceinline__ Place placeOf(const uint8_t* pay, const Geo& g, size_t r) {
  Place p;
  p.base = 0;
  p.three = 0;
  p.ok = tah_row_place(pay, &g.L, g.R, r, &p.three, &p.base);
  return p;
}

// A lane's row and place, looked up again when its tile leaves the row (or, fresh, always).
__device__ __forceinline__ void follow(const uint8_t* pay, const Geo& g, size_t tile, bool fresh,
                                       RowOf* ro, Place* pl) {
  const bool moved = tile < ro->first || tile >= ro->end;
  if (moved) *ro = rowOf(g, tile);
  if (moved || fresh) *pl = placeOf(pay, g, ro->r);
}

// (hi:lo) >> s, low 32 bits (s < 32).
__device__ __forceinline__ uint32_t shr64(uint32_t lo, uint32_t hi, unsigned s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, s);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(hi) << 32 | lo) >> s);
#endif
}
// Lane j's 8 codes of a tile whose codes start at c (4-byte aligned: payloads are, and so are
// the code section, rows and tiles): 4-bit, word j; 3-bit, bytes 3j .. 3j+2 as the low 24 bits,
// from the aligned words that hold them (never past the tile's 24 bytes).
__device__ __forceinline__ uint32_t laneCodes(const uint8_t* c, int three, int j) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(c);
  if (!three) return w[j];
  const unsigned b = 3u * static_cast<unsigned>(j), i = b >> 2;
  return shr64(w[i], w[i < 5 ? i + 1 : 5], 8 * (b & 3u));
}

// A tile's zero and scale from its meta word: the hardware's fp16 conversion (exact for every
// value but a NaN, whose bits the caller then takes from tah_meta_zs).
__device__ __forceinline__ void metaZs(uint32_t meta, unsigned flag, float* z, float* s) {
#if defined(__CUDA_ARCH__)
  if (!(flag & TAH_FLAG_WIDE)) {
    asm("cvt.f32.f16 %0, %1;" : "=f"(*z) : "h"(static_cast<unsigned short>(meta >> 16)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(*s) : "h"(static_cast<unsigned short>(meta & 0xffffu)));
    return;
  }
#endif
  tah_meta_zs(meta, flag, z, s);
}

// The out-of-line paths hand a lane's 8 values over through its 8 floats of shared memory
// (`sc`, from laneScratch): a register array whose address is taken lives in local memory on
// every path.
#define TAH_QUAD_SCRATCH() __shared__ float quadScratch[kQuadThreads * 8]
__device__ __forceinline__ float* laneScratch(float* base) {
  return base + 8 * threadIdx.x;
}
__device__ __forceinline__ void fromScratch(const float* sc, float* x) {
  for (int k = 0; k < 8; ++k) x[k] = sc[k];
}

// 8 elements e .. e+7 of a typed buffer as fp32, raw (tah_load_raw; 0 past count). vec: the
// buffer is 16-byte aligned.
__device__ __noinline__ void load8Scalar(const void* in, int dtype, size_t count, size_t e,
                                         float* x) {
  for (int k = 0; k < 8; ++k) x[k] = e + k < count ? tah_load_raw(in, dtype, e + k) : 0.0f;
}
__device__ __forceinline__ void load8Raw(const void* in, int dtype, size_t count, size_t e,
                                         bool vec, float* sc, float* x) {
  if (!vec || e + 8 > count) {
    load8Scalar(in, dtype, count, e, sc);
    fromScratch(sc, x);
    return;
  }
  if (dtype == TAH_DT_F32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(in) + e);
    const float4 a = p[0], b = p[1];
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
    return;
  }
  const uint4 u = reinterpret_cast<const uint4*>(in)[e / 8];
  if (dtype == TAH_DT_BF16) {
    unpack16<TAH_DT_BF16>(u, x);
    return;
  }
  unpack16<TAH_DT_F16>(u, x);  // the hardware's conversion: a NaN's bits from tah_f16_to_f32
  bool nan = false;
  for (int k = 0; k < 8; ++k) nan |= x[k] != x[k];
  if (nan) {
    load8Scalar(in, dtype, count, e, sc);
    fromScratch(sc, x);
  }
}

// 8 fp32 values into elements e .. e+7 (below count) of a typed buffer; exact: the 16-bit
// conversions that give tah_math.h's NaN bits.
__device__ __forceinline__ void store8(void* out, int dtype, size_t count, size_t e, bool vec,
                                       bool exact, float* sc, const float* d) {
  if (!vec || e + 8 > count) {
    for (int k = 0; k < 8; ++k) sc[k] = d[k];
    storeScalar(out, dtype, count, e, 8, 1.0f, sc);
    return;
  }
  if (dtype == TAH_DT_F32) {
    float4* p = reinterpret_cast<float4*>(static_cast<float*>(out) + e);
    p[0] = make_float4(d[0], d[1], d[2], d[3]);
    p[1] = make_float4(d[4], d[5], d[6], d[7]);
    return;
  }
  uint32_t w[4];
  for (int k = 0; k < 4; ++k) w[k] = pack2(dtype, d[2 * k], d[2 * k + 1], exact);
  reinterpret_cast<uint4*>(out)[e / 8] = make_uint4(w[0], w[1], w[2], w[3]);
}

// ---- a lane's 8 input values of one tile -----------------------------------------------

template <int Dt>
__device__ __forceinline__ float half16(uint32_t w, int hi) {
  const uint16_t h = static_cast<uint16_t>(hi ? w >> 16 : w & 0xffffu);
  return Dt == TAH_DT_BF16 ? tah_bf16_to_f32(h) : tah_f16_to_f32(h);
}
// Bit 15 / 31 set where the low / high half is not finite (its exponent bits all ones: adding
// one unit to them carries into the sign bit's place).
template <int Dt>
__device__ __forceinline__ uint32_t nonFinite16(uint32_t w) {
  return Dt == TAH_DT_BF16 ? ((w & 0x7f807f80u) + 0x00800080u) & 0x80008000u
                           : ((w & 0x7c007c00u) + 0x04000400u) & 0x80008000u;
}

// A lane's 8 values of one quad: Packed, the raw 16-bit pairs (the caller makes them finite,
// finite16, where its sums or statistics show a value that is not); else fp32 values, fin(x)
// then fin(x * scale) when Scaled (tah_host.cc's encodeImpl).
template <int Dt, bool Packed>
struct Lane8 {
  uint4 r;
};
template <int Dt>
struct Lane8<Dt, false> {
  float x[8];
};

// Elements e .. e+7 (0 past count) of the input.
template <int Dt, bool Scaled>
__device__ __forceinline__ void loadLane(const void* in, size_t count, size_t e, bool vec,
                                         float scale, float* sc, Lane8<Dt, true>* v) {
  if (vec && e + 8 <= count)
    v->r = reinterpret_cast<const uint4*>(in)[e / 8];
  else
    v->r = raw16Scalar(static_cast<const uint16_t*>(in), count, e);
  (void)scale, (void)sc;
}
// tah_load's map of a value that is not finite to +0, on raw pairs (rare: the callers test a
// sum or a maximum of the 8 values first).
template <int Dt>
__device__ __forceinline__ void finite16(Lane8<Dt, true>* v) {
  uint32_t* w[4] = {&v->r.x, &v->r.y, &v->r.z, &v->r.w};
  for (int k = 0; k < 4; ++k) *w[k] &= ~((nonFinite16<Dt>(*w[k]) >> 15) * 0xffffu);
}
template <int Dt, bool Scaled>
__device__ __forceinline__ void loadLane(const void* in, size_t count, size_t e, bool vec,
                                         float scale, float* sc, Lane8<Dt, false>* v) {
  if (Dt == TAH_DT_F32) {
    if (vec && e + 8 <= count) {
      const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(in) + e);
      const float4 a = p[0], b = p[1];
      const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      for (int k = 0; k < 8; ++k) v->x[k] = x[k];
    } else {
      load8Scalar(in, TAH_DT_F32, count, e, sc);
      fromScratch(sc, v->x);
    }
  } else {
    const uint4 r = vec && e + 8 <= count ? reinterpret_cast<const uint4*>(in)[e / 8]
                                          : raw16Scalar(static_cast<const uint16_t*>(in), count, e);
    unpack16<Dt>(r, v->x);  // f16: a NaN's bits do not matter (fin reads it as 0)
  }
  for (int k = 0; k < 8; ++k) {
    v->x[k] = tah_fin(v->x[k]);
    if (Scaled) v->x[k] = tah_fin(TAH_MUL(v->x[k], scale));
  }
}
// The lane's values of quads qs .. qs+N-1 (those from q1 on read as past the message), all the
// loads issued before any is used.
template <int Dt, bool Scaled, int N, bool Packed>
__device__ __forceinline__ void loadQuads(const void* in, const Geo& g, size_t qs, size_t q1,
                                          bool vec, float scale, float* sc, Lane8<Dt, Packed>* v) {
  const int gi = laneId() >> 3, j = laneId() & 7;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const size_t e = ((qs + i) * kQuadTiles + gi) * TAH_TILE + 8 * j;
    loadLane<Dt, Scaled>(in, g.count, qs + i < q1 ? e : g.count, vec, scale, sc, &v[i]);
  }
}
template <int Dt>
__device__ __forceinline__ void valuesOf(const Lane8<Dt, true>& v, float* x) {
  unpack16<Dt>(v.r, x);
}
template <int Dt>
__device__ __forceinline__ void valuesOf(const Lane8<Dt, false>& v, float* x) {
  for (int k = 0; k < 8; ++k) x[k] = v.x[k];
}
