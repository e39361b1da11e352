// tah's decode kernel (included by tah_device.cu, inside its anonymous namespace): quads of 4
// tiles a warp, 8 values a lane, in registers (tah_quad.cuh); tiles with the Hadamard flag (and
// the rare ones whose zero or scale is not an ordinary number) take an out-of-line path.
#pragma once

// tah_value for every code of a lane, with the exact conversions, and the group's inverse
// transform and swap for a Hadamard tile (the whole group comes here: the flag is the tile's).
// Out of line: rare, and the main loop's code must stay small.
__device__ __noinline__ void decodeSlow(uint32_t w, int three, uint32_t meta, unsigned flag,
                                        float* d) {
  float z, s;
  tah_meta_zs(meta, flag, &z, &s);
  const int B = three ? 3 : 4;
  for (int k = 0; k < 8; ++k) d[k] = tah_value((w >> (B * k)) & ((1u << B) - 1u), z, s);
  if (flag & TAH_FLAG_HAD) {
    const unsigned m = groupMask();
    gWht(m, d);
    gSwap(m, d, flag & TAH_FLAG_PIVOT);
  }
}

// tah_value(c, z, s) = z + (m - 2^23) s for m = 2^23 + c (c's bits in m's mantissa); the fused
// m s - 2^23 s is that product exactly, rounded once as tah_value's is, where 2^23 s is finite
// and s is +0 or positive (for a negative s and c = 0 the product is -0, the fused form +0).
template <int B>
__device__ __forceinline__ void values8(uint32_t w, float z, float s, float* d) {
  const float k = -TAH_MUL(s, 8388608.0f);
  for (int i = 0; i < 8; ++i)
    d[i] = TAH_ADD(z, TAH_FMA(tah_float(0x4b000000u | ((w >> (B * i)) & ((1u << B) - 1u))), s, k));
}

// Lane j's 8 values (elements 8j .. 8j+7) of tile `tile` (of row ro, whose codes lie at pl) of
// payload pay; true where a NaN can come out (the 16-bit conversions must then be the exact
// ones). A row that cannot lie in the code section decodes as +0 (the host's z = s = 0).
__device__ __forceinline__ bool decode8(const uint8_t* pay, const Geo& g, size_t tile,
                                        const RowOf& ro, const Place& pl, float* sc, float* d) {
  if (!pl.ok) {
    for (int k = 0; k < 8; ++k) d[k] = 0.0f;
    return false;
  }
  const tah_layout_t& L = g.L;
  const uint32_t meta = reinterpret_cast<const uint32_t*>(pay + L.metaOff)[tile];
  const unsigned flag = pay[L.flagOff + tile];
  const uint8_t* c = pay + L.codeOff + pl.base + (tile - ro.first) * (pl.three ? 24u : 32u);
  const uint32_t w = laneCodes(c, pl.three, laneId() & 7);
  float z, s;
  metaZs(meta, flag, &z, &s);
  // s in [+0, 2^100) (bits below 2^100's; false for NaN), z finite: the fused form holds and
  // no NaN comes out
  if ((flag & TAH_FLAG_HAD) || tah_bits(s) >= 0x71800000u || tah_fin(z) != z) {
    decodeSlow(w, pl.three, meta, flag, sc);
    fromScratch(sc, d);
    return true;
  }
  if (pl.three)
    values8<3>(w, z, s, d);
  else
    values8<4>(w, z, s, d);
  return false;
}

constexpr int kDecodeQuads = 4;  // quads a lane sums at a time (modes 1 and 2)

// Mode 0: out (dtype) = decode(ins[0]); 1: acc += decode(ins[0]) + ... in order; 2 (the owner
// step's sum): acc (fp32) = sum over r of (r == self ? selfIn : decode(ins[r])), times scale.
template <int Mode>
__global__ void __launch_bounds__(kQuadThreads)
    decodeTilesKernel(Inputs ins, int n, int self, const void* selfIn, float scale, Geo geo,
                      int dtype, bool vec, void* out) {
  TAH_QUAD_SCRATCH();
  float* sc = laneScratch(quadScratch);
  size_t q0, q1;
  warpQuads(geo, &q0, &q1);
  const size_t count = geo.count, tiles = geo.L.tiles;
  const int gi = laneId() >> 3, j = laneId() & 7;
  RowOf ro{0, 0, 0};
  Place pl{0, 0, 0};
  if (Mode == 0) {
    for (size_t q = q0; q < q1; ++q) {
      const size_t tile = q * kQuadTiles + gi, e = tile * TAH_TILE + 8 * j;
      if (tile >= tiles || tile * TAH_TILE >= count) continue;  // whole groups
      follow(ins.p[0], geo, tile, false, &ro, &pl);
      float d[8];
      const bool exact = decode8(ins.p[0], geo, tile, ro, pl, sc, d);
      store8(out, dtype, count, e, vec, exact, sc, d);
    }
    return;
  }
  float* acc = static_cast<float*>(out);
  for (size_t qb = q0; qb < q1; qb += kDecodeQuads) {
    float a[kDecodeQuads][8];
#pragma unroll
    for (int k = 0; k < kDecodeQuads; ++k) {
      const size_t e = ((qb + k) * kQuadTiles + gi) * TAH_TILE + 8 * j;
      if (Mode == 1)  // acc is read as is (no non-finite mapping)
        load8Raw(acc, TAH_DT_F32, count, e < count ? e : count, vec, sc, a[k]);
    }
    for (int q = 0; q < n; ++q) {
      const bool first = Mode == 2 && q == 0;
#pragma unroll
      for (int k = 0; k < kDecodeQuads; ++k) {
        const size_t tile = (qb + k) * kQuadTiles + gi, e = tile * TAH_TILE + 8 * j;
        if (qb + k >= q1 || tile >= tiles || tile * TAH_TILE >= count) continue;  // whole groups
        float d[8];
        if (Mode == 2 && q == self) {
          load8Raw(selfIn, dtype, count, e, vec, sc, d);
        } else {
          follow(ins.p[q], geo, tile, k == 0, &ro, &pl);
          decode8(ins.p[q], geo, tile, ro, pl, sc, d);
        }
        for (int i = 0; i < 8; ++i) a[k][i] = first ? d[i] : TAH_ADD(a[k][i], d[i]);
      }
    }
#pragma unroll
    for (int k = 0; k < kDecodeQuads; ++k) {
      const size_t tile = (qb + k) * kQuadTiles + gi, e = tile * TAH_TILE + 8 * j;
      if (qb + k >= q1 || tile >= tiles || e >= count) continue;
      if (Mode == 2 && scale != 1.0f)
        for (int i = 0; i < 8; ++i) a[k][i] = TAH_MUL(a[k][i], scale);
      store8(acc, TAH_DT_F32, count, e, vec, false, sc, a[k]);
    }
  }
}
