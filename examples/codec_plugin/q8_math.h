/*
 * q8 payload math shared by the host (q8_host.cc) and device (q8_device.cu) operations: one
 * scalar definition with a fixed evaluation order, so both produce the same bytes.
 *
 * Payload of `count` elements, block G = 32, 64 or 128 elements, nb = ceil(count / G) blocks:
 *   bytes [0, nb*G)            int8 codes, block-major; the partial last block is padded with 0
 *   bytes [nb*G, nb*G + 4*nb)  one fp32 scale per block (little-endian IEEE binary32)
 * so encodedBytes = nb * (G + 4), for every dtype. A block with absmax a (finite input):
 *   scale = a / 127 (fp32 division), code_i = rne(clamp(x_i / scale, -127, 127)), and
 *   decode_i = code_i * scale (fp32 product, then rounded to nearest even to the output dtype).
 * a == 0 or scale == 0 (a below ~2^-142): scale is stored as is and every code is 0.
 * A block with a NaN or +/-Inf element ("special"): a is the absmax of its finite elements, the
 * stored scale is -(a / 126) (sign bit set: finite blocks never have it), finite elements take
 * codes in [-126, 126] and NaN, +Inf, -Inf the codes -128, 127, -127; they decode as NaN and the
 * same infinity (COCCL_CODEC_CAP_NONFINITE).
 *
 * Host code must be compiled without FMA contraction (-ffp-contract=off) and device code with
 * --fmad=false; the device spells every operation with an _rn intrinsic as well.
 */
#ifndef Q8_MATH_H_
#define Q8_MATH_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define Q8_HD __host__ __device__ __forceinline__
#else
#define Q8_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define Q8_ADD(a, b) __fadd_rn((a), (b))
#define Q8_SUB(a, b) __fsub_rn((a), (b))
#define Q8_MUL(a, b) __fmul_rn((a), (b))
#define Q8_DIV(a, b) __fdiv_rn((a), (b))
#else
#define Q8_ADD(a, b) ((a) + (b))
#define Q8_SUB(a, b) ((a) - (b))
#define Q8_MUL(a, b) ((a) * (b))
#define Q8_DIV(a, b) ((a) / (b))
#endif

/* cocclDataType_t values q8 takes (coccl.h). */
#define Q8_DT_F16 6
#define Q8_DT_F32 7
#define Q8_DT_BF16 9

#define Q8_QNAN_BITS 0x7fc00000u

Q8_HD uint32_t q8_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
Q8_HD float q8_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- 16-bit types, pure integer (exact, no rounding-mode dependence) -------------------- */

Q8_HD float q8_bf16_to_f32(uint16_t h) { return q8_float((uint32_t)h << 16); }

/* fp32 -> bf16, round to nearest even; NaN stays a (quiet) NaN, overflow gives Inf. */
Q8_HD uint16_t q8_f32_to_bf16(float f) {
  const uint32_t u = q8_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

Q8_HD float q8_f16_to_f32(uint16_t h) {
  const uint32_t s = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return q8_float(s | 0x7f800000u | (m << 13)); /* Inf, NaN */
  if (e != 0) return q8_float(s | ((e + 112u) << 23) | (m << 13));
  if (m == 0) return q8_float(s); /* +/-0 */
  e = 113u; /* subnormal m * 2^-24: normalise */
  while (!(m & 0x400u)) {
    m <<= 1;
    --e;
  }
  return q8_float(s | (e << 23) | ((m & 0x3ffu) << 13));
}

/* fp32 -> fp16, round to nearest even (subnormals included); |x| >= 65520 gives Inf. */
Q8_HD uint16_t q8_f32_to_f16(float f) {
  const uint32_t u = q8_bits(f);
  const uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);                       /* Inf */
  if (a >= 0x38800000u) {                                                      /* normal */
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
    const uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; /* a carry is right too */
    return (uint16_t)(s | h);
  }
  if (a <= 0x33000000u) return s; /* |x| <= 2^-25 rounds to 0 (2^-25 is a tie to even 0) */
  const uint32_t shift = 126u - (a >> 23); /* 14..24: units of 2^-24 */
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return (uint16_t)(s | h);
}

/* Element i of a typed buffer as fp32 (exact), and an fp32 value stored rounded to dtype. */
Q8_HD float q8_load(const void* p, int dtype, size_t i) {
  if (dtype == Q8_DT_F32) return ((const float*)p)[i];
  if (dtype == Q8_DT_F16) return q8_f16_to_f32(((const uint16_t*)p)[i]);
  return q8_bf16_to_f32(((const uint16_t*)p)[i]);
}
Q8_HD void q8_store(void* p, int dtype, size_t i, float v) {
  if (dtype == Q8_DT_F32) ((float*)p)[i] = v;
  else if (dtype == Q8_DT_F16) ((uint16_t*)p)[i] = q8_f32_to_f16(v);
  else ((uint16_t*)p)[i] = q8_f32_to_bf16(v);
}

/* ---- block math ------------------------------------------------------------------------ */

#define Q8_SIGN_BIT 0x80000000u

Q8_HD int q8_is_nonfinite(float x) { return (q8_bits(x) & 0x7f800000u) == 0x7f800000u; }
Q8_HD float q8_abs(float x) { return q8_float(q8_bits(x) & 0x7fffffffu); }
/* What an element adds to its block's absmax: |x|, or 0 for NaN / Inf (carried by code). */
Q8_HD float q8_absmax_term(float x) { return q8_is_nonfinite(x) ? 0.0f : q8_abs(x); }
Q8_HD float q8_max(float m, float a) { return a > m ? a : m; } /* never NaN here */
/* A block holding NaN / Inf: its scale has the sign bit set (finite blocks: +0 or more). */
Q8_HD int q8_is_special(float scale) { return (q8_bits(scale) & Q8_SIGN_BIT) != 0; }

/* The block's stored scale from the absmax of its finite elements and whether it has a NaN or
 * Inf: a / 127, or -(a / 126) for such blocks (codes -128, 127, -127 mark NaN, +Inf, -Inf).
 * 0 (or -0) when a is 0 or below ~2^-142. */
Q8_HD float q8_scale(float absmax, int nonfinite) {
  if (nonfinite) return q8_float(q8_bits(Q8_DIV(absmax, 126.0f)) | Q8_SIGN_BIT);
  return Q8_DIV(absmax, 127.0f);
}

/* The code of x in a block of this stored scale: rne(clamp(x / |scale|, -L, L)), L = 127 (126
 * in special blocks), 0 when the scale is 0; NaN, +Inf, -Inf in special blocks: -128, 127,
 * -127. (q + 1.5*2^23) - 1.5*2^23 rounds |q| <= 127 to the nearest integer, ties to even. */
Q8_HD int8_t q8_code(float x, float scale) {
  float lim = 127.0f, s = scale;
  if (q8_is_special(scale)) {
    if (x != x) return -128;
    if (q8_is_nonfinite(x)) return x > 0.0f ? 127 : -127;
    lim = 126.0f;
    s = q8_abs(scale);
  }
  if (!(s > 0.0f)) return 0;
  float q = Q8_DIV(x, s);
  if (q > lim) q = lim;
  if (q < -lim) q = -lim;
  if (q != q) q = 0.0f; /* unreachable: x and s are finite; keeps the cast defined */
  const float r = Q8_SUB(Q8_ADD(q, 12582912.0f), 12582912.0f);
  return (int8_t)(int)r;
}

/* Decoded fp32 value of a code. Any byte and any scale bits are safe (garbage payloads). */
Q8_HD float q8_value(int8_t code, float scale) {
  if (q8_is_special(scale)) {
    if (code == -128) return q8_float(Q8_QNAN_BITS);
    if (code == 127) return q8_float(0x7f800000u);
    if (code == -127) return q8_float(0xff800000u);
    return Q8_MUL((float)code, q8_abs(scale));
  }
  return Q8_MUL((float)code, scale);
}

/* Blocks of count elements, and where block b's scale lives in a payload of nb blocks. */
Q8_HD size_t q8_blocks(size_t count, size_t g) { return (count + g - 1) / g; }
Q8_HD float q8_load_scale(const uint8_t* payload, size_t nb, size_t g, size_t b) {
  float s;
  memcpy(&s, payload + nb * g + 4 * b, 4);
  return s;
}

#endif /* Q8_MATH_H_ */
