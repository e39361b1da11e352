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
//  ROTATED (rotate=1, or rotate=auto and the rotated step is not larger, see below):
//         y = H_S x per sub-block, m = max |y_j| over the block; usable iff m is finite and
//         m >= 2^-96 (else the block takes PLAIN); inv = 7 / m; cR = (m / 7) / S.
//         Word = bits(cR) & ~1 (LSB clear = rotated).
//         Decode: z = H_S q (exact: |z| <= 7 * 128 < 2^24), x'_i = z_i * c.
//  PLAIN  inv = 7 / amax, cU = amax / 7. Word = bits(cU) | 1 (LSB set = plain).
//         Decode: x'_i = q_i * c.
//  c = the word as an fp32 (it moves by at most 1 ulp from cR / cU because of the flag bit).
//  rotate=auto: both forms are quantised with rne and their squared errors compared: errU =
//  sum_i sqErrFixed(x_i, invU) (an exact uint32 sum of 2^-20 fixed-point terms, see
//  sqErrFixed), errR the same over the rotated y_j with invR; the x-domain
//  errors are errU cU^2 and errR cR^2 S (H_S / sqrt(S) is orthonormal), so the block rotates
//  iff !(float(errR) * rho * rho > float(errU)) with rho = (cR * sqrt(S)) / cU (ties rotate;
//  cR, cU as in the words, flag bits included).
//  (Comparing the steps alone misjudges blocks with many exact zeros, e.g. ReLU outputs.)
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
// sqrt(S) in fp32 for S = 32, 64, 128 (the auto comparison).
INT4_HD float sqrtS(int s) { return s == 32 ? 5.65685424949238f : s == 64 ? 8.0f : 11.3137084989848f; }

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
  const float cU = divRn(amax, 7.0f);
  if (mode != kModePlain && m >= kTiny && fbits(m) < 0x7f800000u) {
    const float cR = divRn(divRn(m, 7.0f), static_cast<float>(s));
    {
      p.rotated = true;
      p.inv = divRn(7.0f, m);
      p.word = fbits(cR) & ~kPlainFlag;
      return p;
    }
  }
  p.inv = divRn(7.0f, amax);
  p.word = fbits(cU) | kPlainFlag;
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

// The squared rne error of one code in fixed point, summed in uint32 (<= 2^29 for G = 2048):
// exact integer sums, so any summation order (host loop, warp reduction) gives the same value.
// With q = rneCode(v, inv), the term is floor(d^2) for d = RN(1024 (v * inv - q)), the exact
// difference rounded once to fp32 (|d| <= 512 + small; d^2 exact in double): the squared error
// in units of 2^-20. Device (int4_tile.cuh): -1024 q is one exact fma from the code's sum, d one
// fma (v, 1024 inv, -1024 q), and floor(d^2) the bits of RZ(d * d + 2^23) (an fma toward zero)
// minus those of 2^23. Host, AVX2 build (-mfma): the device's fmas, and floor(d^2) from the
// exact split d^2 = RN(d^2) + fma(d, d, -RN(d^2)); generic build: v * inv - q is exact in
// double, times 1024 exact, then one rounding to fp32, and d^2 exact in double.
INT4_HD uint32_t sqErrFixed(float v, float inv) {
#ifdef __CUDA_ARCH__
  const float s = __fmaf_rn(v, inv, kRneMagic);
  const float d = __fmaf_rn(v, __fmul_rn(inv, 1024.0f), __fmaf_rn(s, -1024.0f, 1024.0f * kRneMagic));
  return __float_as_uint(__fmaf_rz(d, d, 8388608.0f)) - 0x4B000000u;
#elif defined(__FMA__)
  // d as on the device; d^2 = p + e exactly (e = fma(d, d, -p)), and floor(p + e) = floor(p)
  // but for an integer p with e < 0 (a non-integer p is at least one ulp from the integers,
  // |e| at most half of it)
  const float nq = mulRn(subRn(fmaf(v, inv, kRneMagic), kRneMagic), -1024.0f);
  const float d = fmaf(v, mulRn(inv, 1024.0f), nq);
  const float p = mulRn(d, d), e = fmaf(d, d, -p);
  const int32_t fl = static_cast<int32_t>(p);  // floor: p >= 0
  return static_cast<uint32_t>(fl - ((static_cast<float>(fl) == p) & (e < 0.0f)));
#else
  const double p = static_cast<double>(v) * static_cast<double>(inv);
  const double q = (p + 0x1.8p52) - 0x1.8p52;
  const double d = static_cast<double>(static_cast<float>((p - q) * 1024.0));
  return static_cast<uint32_t>(static_cast<int32_t>(d * d));
#endif
}

// Whether an auto-mode block rotates, from the two error sums and the two words.
INT4_HD bool autoRotates(uint32_t errR, uint32_t errU, uint32_t wordR, uint32_t wordU, int s) {
  const float rho = divRn(mulRn(bitsf(wordR), sqrtS(s)), bitsf(wordU));
  return !(mulRn(mulRn(static_cast<float>(errR), rho), rho) > static_cast<float>(errU));
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
