// int4 codec: the scalar and block math shared by the host (int4_host.cc) and the device
// (int4_device.cu) implementations. Every fp32 operation is one correctly rounded IEEE
// operation written out (no contraction: the host is compiled with -ffp-contract=off, the
// device with --fmad=false and __f*_rn intrinsics), so both give identical bytes.
//
// Block of G elements (G = block=, 32..2048, power of two), x = the input converted to fp32
// (fp16 / bf16 widen exactly), padded with +0 past `count` in a partial last block.
// Sub-block S = min(G, 128): the rotation is the unnormalised Walsh-Hadamard transform H_S on
// each of the G/S sub-blocks (Sylvester order, stages over index bit 0, 1, ..., log2(S)-1, each
// butterfly (a, c) -> (a + c, a - c) rounded to nearest even in fp32).
//
// amax = max |x_i| over the block (an fp32, exact). Block modes, chosen in this order:
//  RAW    (some x_i is NaN or +-Inf): mf = max |x_i| over the finite elements; if mf >= 2^-96:
//         r = mf / 6, inv = 6 / mf, else r = inv = 0. Finite x -> clamp(rne(x * inv), -6, 6);
//         +Inf -> 7, -Inf -> -7, NaN -> -8. Word = bits(r) | 0x80000000 (sign bit = RAW).
//         Decode: 7 -> +Inf, -7 -> -Inf, -8 -> NaN (0x7fc00000), else code * r.
//  ZERO   (amax < 2^-96, incl. an all-zero block): word 0, codes 0; decodes to +0.
//  ROTATED (rotate=1, or rotate=auto and the rotated form's estimated error is not larger, see
//         below):
//         y = H_S x per sub-block, m = max |y_j| over the block; usable iff m is finite and
//         m >= 2^-96 (else the block takes PLAIN); inv = 7 / m; cR = (m / 7) / S.
//         Word = bits(cR) & ~1 (LSB clear = rotated).
//         Decode: z = H_S q (exact: |z| <= 7 * 128 < 2^24), x'_i = z_i * c.
//  PLAIN  inv = 7 / amax, cU = amax / 7. Word = bits(cU) | 1 (LSB set = plain).
//         Decode: x'_i = q_i * c.
//  c = the word as an fp32 (it moves by at most 1 ulp from cR / cU because of the flag bit).
//  rotate=auto (format version 3, 2026-12-06): the block rotates iff the rotated form's
//  estimated squared error is not larger than the plain form's. A step-d grid costs about d^2/12
//  an element; the rotated grid (step m / (7 sqrt(S)) in the orthonormal domain) costs it on all
//  G coefficients, the plain grid (step amax / 7) only on the nz elements that are not +-0 (it
//  keeps exact zeros exact: ReLU-like blocks). So: rotate iff (m / amax)^2 <= nz * S / G, in
//  fp32 as !(RN(r * r) > float(nz * S) / G) with r = RN(m / amax) (autoRotates; every operation
//  exact or one rounding, the same on host and device). Against the exact choice of version 2
//  (both forms quantised, their squared errors compared: about 10 instructions an element more
//  on the device) it costs 0.4-0.5% (relative) more error from G = 128 up and 1-1.5% at G = 32
//  (plugins/int4/README.md's tables). Known weak spot: only exact zeros count, so blocks of
//  values near zero but not zero (LeakyReLU) at G = 32 rotate where plain is ~10% better.
//
// Quantisation of v * inv (v = x_i or y_j):
//  round=rne (default): q = rne(v * inv) of the exact product: one fused multiply-add,
//  RN(v * inv + 1.5 * 2^23), rounds it to an integer (ties to even) in one step. For the
//  non-RAW blocks that use it |v * inv| <= 7 (1 + 2^-23), so q is in [-7, 7] (rneCode).
//  (Before 2026-12-06: rne(RN(v * inv)), two roundings; the codes differ where RN(v * inv)
//  lands on a half-integer that v * inv is not.)
//  round=stochastic: with t = RN(v * inv), q = clamp(floor(t) + (u < t - floor(t)), -7, 7),
//  u = (h >> 8) * 2^-24
//  with h = int4Hash(seed, e, blockHash): e = index of the element (or rotated coefficient)
//  within the encode call's input (block index * G + j), blockHash = XOR over the G padded
//  block elements of mix32(bits(x_i) ^ (j * 0x9E3779B9)). u is uniform on [0, 1) in steps of
//  2^-24, so E[q] = t up to 2^-24 (unbiased); everything is a function of the payload's input,
//  seed and position: the same bytes on every rank, thread and device.
#pragma once

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define INT4_HD __host__ __device__ __forceinline__
#else
#define INT4_HD inline
#endif

namespace int4c {
// Internal linkage in host code: the host operations are built once per instruction set
// (int4_host_ops.h), and the linker would otherwise keep one build's copy of these inline
// functions for all of them.
#ifndef __CUDACC__
namespace {
#endif

constexpr int kSubMax = 128;           // rotation sub-block S = min(G, 128)
constexpr float kTiny = 0x1p-96f;      // below this block scales flush to zero
constexpr uint32_t kRawBit = 0x80000000u;
constexpr uint32_t kPlainFlag = 1u;
constexpr int kModePlain = 0, kModeRotated = 1, kModeAuto = 2;

INT4_HD uint32_t fbits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
#endif
}

INT4_HD float bitsf(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}

INT4_HD float mulRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
INT4_HD float addRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
INT4_HD float subRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
INT4_HD float divRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// Round to nearest integer, ties to even, for |t| < 2^22 (adding and subtracting 1.5 * 2^23 in
// fp32 rounds the fraction away in the current (nearest-even) mode; the callers' |t| <= ~8).
INT4_HD int32_t rneInt(float t) {
#ifdef __CUDA_ARCH__
  return __float2int_rn(t);  // cvt.rni: the same integer for |t| < 2^22, one instruction
#else
  const float k = 12582912.0f;  // 1.5 * 2^23
  return static_cast<int32_t>(subRn(addRn(t, k), k));
#endif
}

INT4_HD int32_t clampI(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// ---- dtype conversions (exact widening, RNE narrowing; NaN stays a quiet NaN) -------------
INT4_HD float bf16ToF(uint16_t h) { return bitsf(static_cast<uint32_t>(h) << 16); }

INT4_HD uint16_t fToBf16(float f) {
#ifdef __CUDA_ARCH__
  // cvt.rn.bf16.f32 (sm_80+) is the same RNE; NaN kept as this function's quiet NaN
  if (f != f) return static_cast<uint16_t>((fbits(f) >> 16) | 0x40u);
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#endif
  uint32_t u = fbits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

INT4_HD float fp16ToF(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return bitsf(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  if (e == 0u) {
    if (m == 0u) return bitsf(sign);
    // subnormal: m * 2^-24, exact in fp32
    float v = mulRn(static_cast<float>(m), 0x1p-24f);
    return bitsf(fbits(v) | sign);
  }
  return bitsf(sign | ((e + 112u) << 23) | (m << 13));
}

INT4_HD uint16_t fToFp16(float f) {
#ifdef __CUDA_ARCH__
  // cvt.rn.f16.f32 is the same RNE (overflow to Inf, subnormals); NaN as below
  if (f != f) return static_cast<uint16_t>(((fbits(f) >> 16) & 0x8000u) | 0x7e00u);
  return __half_as_ushort(__float2half_rn(f));
#endif
  const uint32_t u = fbits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal or zero, RNE of a * 2^24
    if (a < 0x33000000u) return sign;  // < 2^-25 (half of the smallest subnormal): 0
    const uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // value = mant * 2^(e-150); result = mant >> (150-e-24)
    const uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t v = a - (112u << 23);  // rebias the exponent
  v += 0xfffu + ((v >> 13) & 1u);
  return static_cast<uint16_t>(sign | (v >> 13));
}

// dtype codes as in coccl.h: cocclFloat16 = 6, cocclBfloat16 = 9, cocclFloat32 = 7.
template <typename T>
struct Io;
template <>
struct Io<float> {
  static INT4_HD float load(float v) { return v; }
  static INT4_HD float store(float v) { return v; }
};
struct Half { uint16_t v; };
struct Bf16 { uint16_t v; };
template <>
struct Io<Half> {
  static INT4_HD float load(Half h) { return fp16ToF(h.v); }
  static INT4_HD Half store(float v) { return Half{fToFp16(v)}; }
};
template <>
struct Io<Bf16> {
  static INT4_HD float load(Bf16 h) { return bf16ToF(h.v); }
  static INT4_HD Bf16 store(float v) { return Bf16{fToBf16(v)}; }
};

// ---- hashing (stochastic rounding) -------------------------------------------------------
INT4_HD uint32_t mix32(uint32_t x) {  // an avalanche finaliser (xorshift-multiply rounds)
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

INT4_HD uint32_t elemHashTerm(uint32_t xbits, uint32_t j) { return mix32(xbits ^ (j * 0x9E3779B9u)); }

// h(seed, element index e, block hash) as in the header comment: SplitMix64 of the packed key.
INT4_HD uint32_t int4Hash(uint64_t seed, uint64_t e, uint32_t blockHash) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (e + 1u) + (static_cast<uint64_t>(blockHash) << 32);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

// One quantised value from t = v * inv (see "Quantisation" above).
INT4_HD int32_t quant(float t, bool stochastic, uint32_t h) {
  if (!stochastic) return clampI(rneInt(t), -7, 7);
  const float fl = floorf(t);
  const float frac = subRn(t, fl);  // exact for |t| < 2^23
  const float u = mulRn(static_cast<float>(h >> 8), 0x1p-24f);
  return clampI(static_cast<int32_t>(fl) + (u < frac ? 1 : 0), -7, 7);
}

// ---- per-block decisions from the block's reductions -------------------------------------

struct BlockPlan {
  uint32_t word;  // the scale word
  float inv;      // multiplier to the code grid (0 for ZERO)
  bool rotated;   // quantise y = H_S x
  bool raw;
};

// amax: max |x| bits over the block (> 0x7f800000: NaN); fmax: max |x| over the finite ones;
// m: max |H_S x| (only read when rotation is allowed: mode != kModePlain).
INT4_HD BlockPlan planBlock(uint32_t amaxBits, float fmax, float m, int mode, int s) {
  BlockPlan p{0u, 0.0f, false, false};
  if (amaxBits >= 0x7f800000u) {
    p.raw = true;
    if (fmax >= kTiny) {
      p.inv = divRn(6.0f, fmax);
      p.word = fbits(divRn(fmax, 6.0f)) | kRawBit;
    } else {
      p.word = kRawBit;
    }
    return p;
  }
  const float amax = bitsf(amaxBits);
  if (!(amax >= kTiny)) return p;  // ZERO
  if (mode != kModePlain && m >= kTiny && fbits(m) < 0x7f800000u) {
    const float cR = divRn(divRn(m, 7.0f), static_cast<float>(s));
    p.rotated = true;
    p.inv = divRn(7.0f, m);
    p.word = fbits(cR) & ~kPlainFlag;
    return p;
  }
  p.inv = divRn(7.0f, amax);
  p.word = fbits(divRn(amax, 7.0f)) | kPlainFlag;
  return p;
}

constexpr float kRneMagic = 12582912.0f;  // 1.5 * 2^23: RN(t + it) - it = rne(t), |t| < 2^22

// The rne code of v * inv (the exact product) for the non-RAW blocks (|v * inv| <= 7 (1 + 2^-23):
// no clamp needed). Device and the host's AVX2 build (-mfma): one fma with 1.5 * 2^23
// (int4_tile.cuh uses the sum's bits directly). Generic host build: the product is exact in
// double, and the same magic-number add in double (1.5 * 2^52) rounds it to an integer, ties to
// even (no fma needed, vectorisable with SSE2).
INT4_HD int32_t rneCode(float v, float inv) {
#ifdef __CUDA_ARCH__
  return static_cast<int32_t>(__fsub_rn(__fmaf_rn(v, inv, kRneMagic), kRneMagic));
#elif defined(__FMA__)  // the AVX2 build (-mfma): the device's form, 8 lanes a vector
  return static_cast<int32_t>(subRn(fmaf(v, inv, kRneMagic), kRneMagic));
#else
  const double p = static_cast<double>(v) * static_cast<double>(inv);
  return static_cast<int32_t>((p + 0x1.8p52) - 0x1.8p52);
#endif
}

// Whether an auto-mode block rotates (see the header): m = max |H_S x| (finite, >= kTiny),
// amax = max |x| (finite, >= kTiny, so nz >= 1), nz = the block's elements that are not +-0.
// r = m / amax <= S, so r * r cannot overflow; nz * S / G is exact (G, S powers of two).
INT4_HD bool autoRotates(float m, float amax, uint32_t nz, int g, int s) {
  const float r = divRn(m, amax);
  const float rhs = divRn(static_cast<float>(nz * static_cast<uint32_t>(s)), static_cast<float>(g));
  return !(mulRn(r, r) > rhs);
}

// decodeAccumulate's fp32 add: a NaN result is returned as the quiet NaN 0x7fc00000 (x86 and
// CUDA produce different NaN bits for NaN + x and Inf - Inf; the accumulator is an output).
INT4_HD float addAcc(float a, float b) {
  const float r = addRn(a, b);
  return r != r ? bitsf(0x7fc00000u) : r;
}

// RAW-block code of one input element.
INT4_HD int32_t rawCode(float x, float inv) {
  const uint32_t u = fbits(x), a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return -8;
  if (a == 0x7f800000u) return (u >> 31) ? -7 : 7;
  return clampI(rneInt(mulRn(x, inv)), -6, 6);
}

INT4_HD float rawDecode(int32_t code, float r) {
  if (code == 7) return bitsf(0x7f800000u);
  if (code == -7) return bitsf(0xff800000u);
  if (code == -8) return bitsf(0x7fc00000u);
  return mulRn(static_cast<float>(code), r);
}

INT4_HD int32_t nibble(uint8_t byte, int hi) {  // signed 4-bit two's complement
  const int32_t v = hi ? (byte >> 4) : (byte & 0xf);
  return v >= 8 ? v - 16 : v;
}

INT4_HD uint8_t packPair(int32_t lo, int32_t hi) {
  return static_cast<uint8_t>((static_cast<uint32_t>(lo) & 0xfu) | ((static_cast<uint32_t>(hi) & 0xfu) << 4));
}

#ifndef __CUDACC__
}  // namespace
#endif
}  // namespace int4c
