// One block of the int8 codec, as scalar code with a fixed fp32 evaluation order.
//
// rotate = 1 (default): like fp8_ash_ds with an INT8 grid (Qmax = 127):
//   alpha = adaptiveAlpha<G>(blockEnergy<G>(x), 127, lambda=1e-6, 1e-3, 1e3);
//   y = fwht<G>(alpha * x); m = max|y|; inv = 127 / m;
//   q_j = clamp(rneInt(y_j * inv), -127, 127); c = ((m / 127) * (1/G)) * (1/alpha).
//   Decode: z = fwht<G>(q) (exact: |z| <= 127 * G < 2^24), x_i = z_i * c.
// rotate = 0: plain per-block absmax: m = max|x|, inv = 127 / m, q = clamp(rneInt(x * inv)),
//   c = m / 127; decode x_i = q_i * c.
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
COCCL_HD uint32_t int8EncodeBlock(const float* x, float* y, int8_t* codes, bool rotate) {
  using K = Int8Consts;
  uint32_t amax = maxAbsBits<G>(x);
  if (amax == 0u || !isFiniteBits(amax)) return int8EncodeRaw<G>(x, codes);

  float m, c;
  if (rotate) {
    float alpha =
        adaptiveAlpha<G>(blockEnergy<G>(x), K::kQmax, K::kLambda, K::kAlphaMin, K::kAlphaMax);
    for (int i = 0; i < G; ++i) y[i] = mulRn(alpha, x[i]);
    fwht<G>(y);
    m = bitsFloat(maxAbsBits<G>(y));
    c = decodeMultiplier(m, K::kQmax, 1.0f / static_cast<float>(G), divRn(1.0f, alpha));
  } else {
    for (int i = 0; i < G; ++i) y[i] = x[i];
    m = bitsFloat(amax);
    c = divRn(m, K::kQmax);
  }
  float inv = divRn(K::kQmax, m);
  if (!scalesUsable(m, inv, c)) return int8EncodeRaw<G>(x, codes);
  for (int i = 0; i < G; ++i)
    codes[i] = static_cast<int8_t>(clampI32(rneInt(mulRn(y[i], inv)), -127, 127));
  return floatBits(c);
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
COCCL_HD void int8DecodeBlock(const int8_t* codes, uint32_t word, bool rotate, float* out) {
  if (isRawWord(word)) {
    float r = rawScaleFromWord(word);
    for (int i = 0; i < G; ++i) out[i] = int8DecodeRawElem(codes[i], r);
    return;
  }
  float c = bitsFloat(word);
  for (int i = 0; i < G; ++i) out[i] = static_cast<float>(codes[i]);
  if (rotate) fwht<G>(out);
  for (int i = 0; i < G; ++i) out[i] = mulRn(out[i], c);
}

}  // namespace kmath
}  // namespace coccl
