// One block of the int8 codec, as scalar code with a fixed fp32 evaluation order.
//
// rotate = 1 (default): like fp8_ash_ds with an INT8 grid (Qmax = 127):
//   alpha = adaptiveAlpha<G>(blockEnergy<G>(x), 127, lambda=1e-6, 1e-3, 1e3);
//   y = fwht<G>(alpha * x); m = max|y|; inv = 127 / m;
//   q_j = clamp(rneInt(y_j * inv), -127, 127); c = ((m / 127) * (1/G)) * (1/alpha).
//   Decode: z = fwht<G>(q) (exact: |z| <= 127 * G < 2^24), x_i = z_i * c.
// rotate = 0: plain per-block absmax: m = max|x|, inv = 127 / m, q = clamp(rneInt(x * inv)),
//   c = m / 127; decode x_i = q_i * c.
// rotate = auto (kInt8Auto, the default): per block, the rotated form iff its quantisation step
//   in the orthonormal domain is not larger: !(cR * sqrt(G) > cU) with cR the rotated c above
//   and cU = max|x| / 127 (fp32: one multiply by the fp32 constant sqrt(G), then the compare;
//   ties rotate). The orthonormal Hadamard keeps the block's energy, so the block with the
//   smaller step has the smaller error; the rotation loses when the block mean (or one large
//   coefficient) dominates max|H x| (the DC coefficient is sqrt(G) * mean). The choice is the
//   LSB of the scale word: clear = rotated (word = bits(cR) & ~1), set = plain (bits(cU) | 1);
//   the decoder uses the word as c (at most 1 ulp from the encoder's c, still a normal fp32).
//   RAW blocks are as below (sign bit set), so the flag never meets a RAW word.
// Either way, a block with NaN/Inf, all +-0, or unusable scales (scalesUsable) goes RAW:
//   scale word -r, r = rawScale(absmax finite, 125); finite x -> clamp(rneInt(x / r), -125, 125)
//   (r = 0 -> 0), and a result 0 from a negative-signed x is stored as 126 (-0.0);
//   +Inf -> 127, -Inf -> -127, NaN -> -128.
//   Decode: 127 -> +Inf, -127 -> -Inf, -128 -> NaN, 126 -> -0.0, else code * r.
#pragma once

#include "kernels/block_scale.h"
#include "kernels/hadamard.h"

namespace coccl {
namespace kmath {

struct Int8Consts {
  static constexpr float kQmax = 127.0f;
  static constexpr float kRawR = 125.0f;
  static constexpr float kLambda = 1e-6f;
  static constexpr float kAlphaMin = 1e-3f;
  static constexpr float kAlphaMax = 1e3f;
  static constexpr int8_t kPosInf = 127, kNegInf = -127, kNan = -128, kNegZero = 126;
};

// Rotation modes (CodecDesc::rotate, the spec's rotate=0|1|auto).
constexpr int kInt8Plain = 0, kInt8Rotated = 1, kInt8Auto = 2;
constexpr uint32_t kInt8PlainFlag = 1u;  // auto mode: LSB of a transform-mode word

// sqrt(G) rounded to fp32 (the auto mode's step comparison).
template <int G>
COCCL_HD float int8SqrtG() {
  static_assert(G == 32 || G == 64 || G == 128 || G == 256 || G == 512, "block size");
  return G == 32 ? 5.65685424949238f
         : G == 64 ? 8.0f
         : G == 128 ? 11.3137084989848f
         : G == 256 ? 16.0f
                    : 22.6274169979695f;
}

// Auto mode: whether the block takes the rotated form, from the two decode multipliers.
template <int G>
COCCL_HD bool int8PickRotated(float cRotated, float cPlain) {
  return !(mulRn(cRotated, int8SqrtG<G>()) > cPlain);
}

// The scale word of a transform-mode block with multiplier c.
COCCL_HD uint32_t int8Word(float c, int mode, bool rotated) {
  const uint32_t w = floatBits(c);
  if (mode != kInt8Auto) return w;
  return rotated ? (w & ~kInt8PlainFlag) : (w | kInt8PlainFlag);
}

// Whether a transform-mode block (word not RAW) was rotated.
COCCL_HD bool int8WordRotated(uint32_t word, int mode) {
  return mode == kInt8Auto ? (word & kInt8PlainFlag) == 0u : mode != kInt8Plain;
}

COCCL_HD int32_t clampI32(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

template <int G>
COCCL_HD uint32_t int8EncodeRaw(const float* x, int8_t* codes) {
  using K = Int8Consts;
  float r = rawScale(bitsFloat(maxAbsBits<G, true>(x)), K::kRawR);
  for (int i = 0; i < G; ++i) {
    uint32_t u = floatBits(x[i]);
    uint32_t a = u & 0x7fffffffu;
    int8_t code;
    if (a > 0x7f800000u) {
      code = K::kNan;
    } else if (a == 0x7f800000u) {
      code = (u >> 31) ? K::kNegInf : K::kPosInf;
    } else {
      int32_t q = r == 0.0f ? 0 : clampI32(rneInt(divRn(x[i], r)), -125, 125);
      code = static_cast<int8_t>((q == 0 && (u >> 31)) ? K::kNegZero : q);
    }
    codes[i] = code;
  }
  return rawWord(r);
}

// Encode of one block; y is scratch of G floats. Returns the scale word.
template <int G>
COCCL_HD uint32_t int8EncodeBlock(const float* x, float* y, int8_t* codes, int mode) {
  using K = Int8Consts;
  uint32_t amax = maxAbsBits<G>(x);
  if (amax == 0u || !isFiniteBits(amax)) return int8EncodeRaw<G>(x, codes);

  float m = 0.0f, c = 0.0f;
  bool rotate = mode != kInt8Plain;
  if (rotate) {
    float alpha =
        adaptiveAlpha<G>(blockEnergy<G>(x), K::kQmax, K::kLambda, K::kAlphaMin, K::kAlphaMax);
    for (int i = 0; i < G; ++i) y[i] = mulRn(alpha, x[i]);
    fwht<G>(y);
    m = bitsFloat(maxAbsBits<G>(y));
    c = decodeMultiplier(m, K::kQmax, 1.0f / static_cast<float>(G), divRn(1.0f, alpha));
    if (mode == kInt8Auto) rotate = int8PickRotated<G>(c, divRn(bitsFloat(amax), K::kQmax));
  }
  if (!rotate) {
    for (int i = 0; i < G; ++i) y[i] = x[i];
    m = bitsFloat(amax);
    c = divRn(m, K::kQmax);
  }
  float inv = divRn(K::kQmax, m);
  if (!scalesUsable(m, inv, c)) return int8EncodeRaw<G>(x, codes);
  for (int i = 0; i < G; ++i)
    codes[i] = static_cast<int8_t>(clampI32(rneInt(mulRn(y[i], inv)), -127, 127));
  return int8Word(c, mode, rotate);
}

COCCL_HD float int8DecodeRawElem(int8_t code, float r) {
  using K = Int8Consts;
  if (code == K::kPosInf) return bitsFloat(0x7f800000u);
  if (code == K::kNegInf) return bitsFloat(0xff800000u);
  if (code == K::kNan) return bitsFloat(0x7fc00000u);
  if (code == K::kNegZero) return bitsFloat(0x80000000u);
  return mulRn(static_cast<float>(code), r);
}

// Decode of one block into out[0, G) (fp32).
template <int G>
COCCL_HD void int8DecodeBlock(const int8_t* codes, uint32_t word, int mode, float* out) {
  if (isRawWord(word)) {
    float r = rawScaleFromWord(word);
    for (int i = 0; i < G; ++i) out[i] = int8DecodeRawElem(codes[i], r);
    return;
  }
  float c = bitsFloat(word);
  for (int i = 0; i < G; ++i) out[i] = static_cast<float>(codes[i]);
  if (int8WordRotated(word, mode)) fwht<G>(out);
  for (int i = 0; i < G; ++i) out[i] = mulRn(out[i], c);
}

// ---- the two-shot owner step with one transform for all rotated payloads ------------------
//
// A rotated block decodes as x = c H q (int8DecodeBlock; H unnormalized and linear), so the sum
// of the owner's rotated payload blocks is H (sum_r c_r q_r): one transform for all of them
// instead of one each (device-performance notes, "decodeReduceEncode is ALU-bound": int8 bf16
// ran at 52% of a copy with p + 1 transforms an element). The encode still needs the sum S
// itself (auto mode compares the plain form's step max |S| / 127), so the owner transforms
// once for the payloads, once to encode and once to decode its output: 3 transforms an element
// at any p. This fixes the floating-point order of the fused step with the owner's raw input
// for rotate=1 and auto (block_driver.h decodeReduceEncodeBlocks on the host, reduce_tile.cuh
// sumTileSplit on the device; without a raw input the device keeps the linear order), per
// block:
//   R = sum over the payloads whose block is rotated of int8DecodeUntransformed (c_r q_r),
//   L = sum over the owner's raw input and the other payload blocks (plain or RAW) of their
//       values (the raw input converted to fp32, int8DecodeUntransformed otherwise),
// each in rank order with its first term assigned, then
//   S = R and L both non-empty ? fwht(R) + L : the non-empty one (fwht(R) if it is R);
//   S *= scale if scale != 1; positions past the count zeroed; int8EncodeBlock(S).
// The sum of plain blocks only (rotate=0) keeps the linear order. COCCL_INT8_SPLIT_SUM=0 builds
// the linear order for every mode (side-by-side timings; host and device read the same switch).
#ifndef COCCL_INT8_SPLIT_SUM
#define COCCL_INT8_SPLIT_SUM 1
#endif
COCCL_HD_CONSTEXPR bool int8SplitSum(int mode) {
  return COCCL_INT8_SPLIT_SUM != 0 && mode != kInt8Plain;
}

// A block's values before its transform: c q of a transform-mode block (one product an
// element; the values themselves for a plain block), the RAW decode of a RAW block. Returns
// whether the block is rotated (its term belongs to R above).
template <int G>
COCCL_HD bool int8DecodeUntransformed(const int8_t* codes, uint32_t word, int mode, float* out) {
  if (isRawWord(word)) {
    float r = rawScaleFromWord(word);
    for (int i = 0; i < G; ++i) out[i] = int8DecodeRawElem(codes[i], r);
    return false;
  }
  float c = bitsFloat(word);
  for (int i = 0; i < G; ++i) out[i] = mulRn(static_cast<float>(codes[i]), c);
  return int8WordRotated(word, mode);
}

}  // namespace kmath
}  // namespace coccl
