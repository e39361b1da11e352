/*
 * tah: a TAH-Quant-style pipeline-parallel activation codec. Scalar math and payload layout
 * shared by the host (tah_host.cc) and device (tah_device.cu) operations: one definition with a
 * fixed evaluation order, so both produce the same bytes (host: -ffp-contract=off; device:
 * --fmad=false and the _rn intrinsics below). README.md "Payload format" is the long form.
 *
 * Input: rows (tokens) of R elements (spec row=R, a multiple of 64), rows = ceil(count / R); a
 * partial last row is padded with zeros (the padding is encoded, never read or written in the
 * caller's buffers). Each row is T = R / 64 tiles of 64 elements. n3 = floor(rows * low) rows
 * (low = L / 10000, spec low=0.2) get 3-bit codes, the other n4 = rows - n3 get 4-bit codes.
 *
 * Payload (little-endian, byte offsets; G = ceil(rows / 32) row groups, NT = rows * T tiles):
 *   [0, 8G)                     per group g: uint32 bits (bit j: row 32g + j is 3-bit), uint32
 *                               prefix (number of 3-bit rows in groups 0..g-1)
 *   [8G, 8G + 4NT)              per tile: uint32 meta = scale16 | zero16 << 16 (fp16, or bf16
 *                               when the tile's flag has TAH_FLAG_WIDE)
 *   [8G + 4NT, +pad4(NT))       per tile: uint8 flag = TAH_FLAG_HAD | TAH_FLAG_WIDE | pivot (6
 * bits) [C0, C0 + codeBytes)        codes, row by row: row r starts at (r - k) * R/2 + k * 3R/8 (k
 * = 3-bit rows before r); tile t of the row at t * 32 (4-bit) or t * 24 (3-bit). 4-bit: element j
 * in byte j/2, low nibble for even j. 3-bit: elements 8m..8m+7 as the 24-bit little-endian word sum
 * c_{8m+i} << 3i in bytes 3m..3m+2. encodedBytes = 8G + 4NT + pad4(NT) + n4 * R/2 + n3 * 3R/8 for
 * every dtype.
 *
 * Bits: the row key is the entropy H = -sum p_i log2 p_i of p = |x| / sum|x|, computed as
 * tah_row_key below (tile sums by a fixed tree, tiles summed in order, log2 by tah_log2: exponent
 * plus a fixed degree-5 polynomial, part of the format). select=group (default, format 2): of
 * each group of 32 rows, its tah_group_low rows of smallest (key, row index) are 3-bit;
 * select=message (format 1's rule): the n3 rows of smallest (key, row index) of the message.
 * Tile (values v[0..63], non-finite input elements read as 0): Q = 7 or 15; mn, mx = min, max;
 * wide = max(|mn|, |mx|) > 65504 or < 2^-10; zero z = rne16(mn) (fp16, bf16 if wide); scale
 * s = rne16((mx - z) / Q); code = rne(clamp((v - z) * (1 / s), 0, Q)) (0 when s == 0); value
 * z + c*s.
 * Pivot + Hadamard: if m1 = max|x| (first index p) > 0 and 2 * (max over i != p of |x_i|) <= m1,
 * the tile is also coded as y = WHT64(swap(x, 0, p)) / 8 and that coding is kept (flag HAD) when
 * its largest element error after decoding (WHT, swap back) is smaller than the plain coding's.
 */
#ifndef TAH_MATH_H_
#define TAH_MATH_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TAH_HD __host__ __device__ __forceinline__
#else
#define TAH_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define TAH_ADD(a, b) __fadd_rn((a), (b))
#define TAH_SUB(a, b) __fsub_rn((a), (b))
#define TAH_MUL(a, b) __fmul_rn((a), (b))
#define TAH_DIV(a, b) __fdiv_rn((a), (b))
#define TAH_POPC(x) __popc(x)
#else
#define TAH_ADD(a, b) ((a) + (b))
#define TAH_SUB(a, b) ((a) - (b))
#define TAH_MUL(a, b) ((a) * (b))
#define TAH_DIV(a, b) ((a) / (b))
#define TAH_POPC(x) __builtin_popcount(x)
#endif

/* cocclDataType_t values (coccl.h). */
#define TAH_DT_F16 6
#define TAH_DT_F32 7
#define TAH_DT_BF16 9

#define TAH_TILE 64
#define TAH_FLAG_HAD 0x80u
#define TAH_FLAG_WIDE 0x40u
#define TAH_FLAG_PIVOT 0x3fu
#define TAH_LOW_DEN 10000u /* low = L / TAH_LOW_DEN */
#define TAH_MAX_ROW 65536u /* elements per row */
#define TAH_MAX_INPUTS 64

TAH_HD uint32_t tah_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
TAH_HD float tah_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
TAH_HD float tah_abs(float x) {
  return tah_float(tah_bits(x) & 0x7fffffffu);
}
TAH_HD float tah_fin(float x) {
#if defined(__CUDA_ARCH__) /* the same map in one compare of |x| (false for NaN) */
  return fabsf(x) <= 3.40282347e+38f ? x : 0.0f;
#else
  return (tah_bits(x) & 0x7f800000u) == 0x7f800000u ? 0.0f : x;
#endif
}
TAH_HD float tah_max(float m, float a) {
  return a > m ? a : m;
}
TAH_HD float tah_min(float m, float a) {
  return a < m ? a : m;
}

/* ---- 16-bit formats (integer code: exact, round to nearest even) ------------------------ */

TAH_HD float tah_bf16_to_f32(uint16_t h) {
  return tah_float((uint32_t)h << 16);
}
TAH_HD uint16_t tah_f32_to_bf16(float f) {
  const uint32_t u = tah_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)0x7fc0u; /* a constant NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
TAH_HD float tah_f16_to_f32(uint16_t h) {
  const uint32_t s = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return tah_float(s | 0x7f800000u | (m << 13));
  if (e != 0) return tah_float(s | ((e + 112u) << 23) | (m << 13));
  if (m == 0) return tah_float(s);
  e = 113u; /* subnormal: m * 2^-24, normalised */
  while (!(m & 0x400u)) {
    m <<= 1;
    --e;
  }
  return tah_float(s | (e << 23) | ((m & 0x3ffu) << 13));
}
TAH_HD uint16_t tah_f32_to_f16(float f) {
  const uint32_t u = tah_bits(f);
  const uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)0x7e00u;        /* a constant NaN */
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); /* >= 65520: Inf */
  if (a >= 0x38800000u) {                               /* normal */
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
    const uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return (uint16_t)(s | h);
  }
  if (a <= 0x33000000u) return s; /* <= 2^-25 */
  const uint32_t shift = 126u - (a >> 23);
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return (uint16_t)(s | h);
}

/* Element i of a typed buffer as fp32 (exact); tah_load reads a non-finite element as 0 (what
 * encode sees); decodeReduceEncode sums the owner's raw input (tah_load_raw), as coccl's
 * composition does, and the encode of the sum maps what is not finite. */
TAH_HD float tah_load_raw(const void* p, int dtype, size_t i) {
  if (dtype == TAH_DT_F32) return ((const float*)p)[i];
  if (dtype == TAH_DT_F16) return tah_f16_to_f32(((const uint16_t*)p)[i]);
  return tah_bf16_to_f32(((const uint16_t*)p)[i]);
}
TAH_HD float tah_load(const void* p, int dtype, size_t i) {
  return tah_fin(tah_load_raw(p, dtype, i));
}
TAH_HD void tah_store(void* p, int dtype, size_t i, float v) {
  if (dtype == TAH_DT_F32)
    ((float*)p)[i] = v;
  else if (dtype == TAH_DT_F16)
    ((uint16_t*)p)[i] = tah_f32_to_f16(v);
  else
    ((uint16_t*)p)[i] = tah_f32_to_bf16(v);
}

/* ---- entropy key --------------------------------------------------------------------------- */

/* log2(x) for normal x > 0: e + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * c5)))), x = 2^e (1 +
 * t), t in [0, 1) (least-squares fit, |error| < 3e-5); 0 for x below 2^-126 (such terms are
 * dropped). The polynomial term depends on x's mantissa bits alone (tah_log2_frac), so a device
 * kernel may tabulate it for inputs with few mantissa bits (bf16: 128 values). */
TAH_HD float tah_log2_frac(uint32_t mantissa) {
  const float t = TAH_SUB(tah_float(mantissa | 0x3f800000u), 1.0f);
  float p = 0.04588834196329117f;
  p = TAH_ADD(TAH_MUL(p, t), -0.19442886114120483f);
  p = TAH_ADD(TAH_MUL(p, t), 0.4154266119003296f);
  p = TAH_ADD(TAH_MUL(p, t), -0.7086834907531738f);
  p = TAH_ADD(TAH_MUL(p, t), 1.4418259859085083f);
  return TAH_MUL(p, t);
}
/* e - 127 as a float for a biased exponent e without an int-to-float conversion (a
 * quarter-rate instruction on GPUs): 2^23 + e (the exponent in the mantissa bits) minus 2^23 +
 * 127, both exact. */
TAH_HD float tah_log2_exp(uint32_t e) {
  return TAH_SUB(tah_float(0x4b000000u + e), 8388735.0f);
}
TAH_HD float tah_log2(float x) {
  const uint32_t u = tah_bits(x);
  const uint32_t e = (u >> 23) & 0xffu;
  if (e == 0) return 0.0f;
  return TAH_ADD(tah_log2_exp(e), tah_log2_frac(u & 0x7fffffu));
}
/* What element |x| = a adds to the row's U = sum a log2 a. */
TAH_HD float tah_ulog(float a) {
  return TAH_MUL(a, tah_log2(a));
}

/* The row's key from S = sum |x| and U = sum |x| log2 |x| (each tile by the tree of
 * tah_tile_sum, the tiles added in order starting from 0): H = log2 S - U / S, 0 when S is 0 or
 * H is not finite; returned as a uint32 whose unsigned order is H's order. */
TAH_HD uint32_t tah_row_key(float S, float U) {
  float h = 0.0f;
  if (S > 0.0f) h = TAH_SUB(tah_log2(S), TAH_DIV(U, S));
  h = tah_fin(h);
  const uint32_t b = tah_bits(h);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/* Sum of a tile's 64 values by the tree the device uses (lane l of an 8-lane group holds
 * a[8l .. 8l+7]): b_l = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) over those 8, then
 * b_l += b_{l+o} for o = 4, 2, 1 (l < o); the result is b_0. */
TAH_HD float tah_sum8(const float* a) {
  return TAH_ADD(TAH_ADD(TAH_ADD(a[0], a[1]), TAH_ADD(a[2], a[3])),
                 TAH_ADD(TAH_ADD(a[4], a[5]), TAH_ADD(a[6], a[7])));
}
TAH_HD float tah_tile_sum(const float* a) {
  float b[8];
  for (int l = 0; l < 8; ++l) b[l] = tah_sum8(a + 8 * l);
  for (int o = 4; o > 0; o >>= 1)
    for (int l = 0; l < o; ++l) b[l] = TAH_ADD(b[l], b[l + o]);
  return b[0];
}

/* ---- tile quantization ------------------------------------------------------------------- */

/* Stored (zero, scale) of a tile with value range [mn, mx] at Q levels: meta word and flag. */
TAH_HD uint32_t tah_tile_meta(float mn, float mx, int q, unsigned* wideFlag) {
  mn = TAH_ADD(mn, 0.0f); /* -0 -> +0: min / max of signed zeros depend on the order */
  mx = TAH_ADD(mx, 0.0f);
  const float amax = tah_max(tah_abs(mn), tah_abs(mx));
  const int wide = amax > 65504.0f || amax < 0.0009765625f; /* 2^-10 */
  *wideFlag = wide ? TAH_FLAG_WIDE : 0u;
  const uint16_t zh = wide ? tah_f32_to_bf16(mn) : tah_f32_to_f16(mn);
  const float z = wide ? tah_bf16_to_f32(zh) : tah_f16_to_f32(zh);
  float sf = TAH_DIV(TAH_SUB(mx, z), (float)q);
  if (!(sf > 0.0f)) sf = 0.0f; /* mx <= z (a constant tile) */
  const uint16_t sh = wide ? tah_f32_to_bf16(sf) : tah_f32_to_f16(sf);
  return (uint32_t)sh | (uint32_t)zh << 16;
}
TAH_HD void tah_meta_zs(uint32_t meta, unsigned flag, float* z, float* s) {
  const uint16_t sh = (uint16_t)(meta & 0xffffu), zh = (uint16_t)(meta >> 16);
  if (flag & TAH_FLAG_WIDE) {
    *z = tah_bf16_to_f32(zh);
    *s = tah_bf16_to_f32(sh);
  } else {
    *z = tah_f16_to_f32(zh);
    *s = tah_f16_to_f32(sh);
  }
}
/* The tile's reciprocal step: 1 / s (one fp32 division a tile), 0 when s is not > 0. */
TAH_HD float tah_inv(float s) {
  return s > 0.0f ? TAH_DIV(1.0f, s) : 0.0f;
}
/* rne(clamp((v - z) * inv, 0, q)), inv = tah_inv(s); 0 when the product is not > 0 (inv 0, NaN). */
TAH_HD unsigned tah_code(float v, float z, float inv, int q) {
  float c = TAH_MUL(TAH_SUB(v, z), inv);
  if (!(c > 0.0f)) return 0u; /* negative, 0 or NaN */
  if (c > (float)q) c = (float)q;
  /* c + 1.5 * 2^23 rounds c to the nearest even integer into the low mantissa bits (c <= 15):
   * the code is those bits, without a float-to-int conversion. */
  return tah_bits(TAH_ADD(c, 12582912.0f)) - 0x4b400000u;
}
/* z + c * s; c (a code, < 2^23) as a float by its mantissa bits, without a conversion. */
TAH_HD float tah_value(unsigned c, float z, float s) {
  return TAH_ADD(z, TAH_MUL(TAH_SUB(tah_float(0x4b000000u | c), 8388608.0f), s));
}

/* 64-point Walsh-Hadamard transform scaled by 1/8, stages h = 1, 2, 4, ..., 32 in this order
 * ((a, b) -> (a + b, a - b)), then each value times 0.125 (host form; the device runs the same
 * operations across a warp). Self-inverse. */
TAH_HD void tah_wht64(float* v) {
  for (int h = 1; h < TAH_TILE; h <<= 1)
    for (int i = 0; i < TAH_TILE; ++i)
      if (!(i & h)) {
        const float a = v[i], b = v[i + h];
        v[i] = TAH_ADD(a, b);
        v[i + h] = TAH_SUB(a, b);
      }
  for (int i = 0; i < TAH_TILE; ++i) v[i] = TAH_MUL(v[i], 0.125f);
}

/* ---- layout -------------------------------------------------------------------------------- */

typedef struct {
  size_t rows, tiles, groups, n3, n4;
  size_t metaOff, flagOff, codeOff, codeBytes, total; /* bytes */
} tah_layout_t;

TAH_HD tah_layout_t tah_layout(size_t count, size_t R, uint32_t lowL) {
  tah_layout_t l;
  l.rows = (count + R - 1) / R;
  l.tiles = l.rows * (R / TAH_TILE);
  l.groups = (l.rows + 31) / 32;
  l.n3 = (size_t)(((unsigned long long)l.rows * lowL) / TAH_LOW_DEN);
  l.n4 = l.rows - l.n3;
  l.metaOff = 8 * l.groups;
  l.flagOff = l.metaOff + 4 * l.tiles;
  l.codeOff = l.flagOff + ((l.tiles + 3) & ~(size_t)3);
  l.codeBytes = l.n4 * (R / 2) + l.n3 * (3 * R / 8);
  l.total = l.codeOff + l.codeBytes;
  return l;
}

/* select=group: the 3-bit rows of group g (rows [32g, e), e = min(32g + 32, rows)). The
 * fraction L / 10000 of rows [0, e) is floor(e L / 10000) rows, so the group has
 * floor(e L / 10000) - floor(32g L / 10000) of them and *before = floor(32g L / 10000) are in
 * the groups before it: the groups' counts add up to n3, and each group's prefix word is known
 * without the others. */
TAH_HD uint32_t tah_group_low(size_t rows, uint32_t lowL, size_t g, uint32_t* before) {
  const unsigned long long a = 32ull * g, e = a + 32 < rows ? a + 32 : rows;
  const unsigned long long b = a * lowL / TAH_LOW_DEN;
  *before = (uint32_t)b;
  return (uint32_t)(e * lowL / TAH_LOW_DEN - b);
}

/* Whether row r is 3-bit, and its code offset within the code section, from the header (any
 * header bytes are safe: the offset is clamped so that the row lies inside the section).
 * Returns 0 when the row cannot lie in it (a garbage payload: decode it as zeros). */
TAH_HD int tah_row_place(const uint8_t* pay, const tah_layout_t* L, size_t R, size_t r, int* three,
                         size_t* off) {
  uint32_t bits, prefix;
  memcpy(&bits, pay + 8 * (r / 32), 4);
  memcpy(&prefix, pay + 8 * (r / 32) + 4, 4);
  const unsigned j = (unsigned)(r % 32);
  size_t k = (size_t)prefix + (size_t)TAH_POPC(bits & ((1u << j) - 1u));
  if (k > r) k = r;
  *three = (int)((bits >> j) & 1u);
  const size_t rb = *three ? 3 * R / 8 : R / 2;
  if (rb > L->codeBytes) return 0;
  size_t o = (r - k) * (R / 2) + k * (3 * R / 8);
  if (o > L->codeBytes - rb) o = L->codeBytes - rb;
  *off = o;
  return 1;
}

#endif /* TAH_MATH_H_ */
