// Per-block scale math shared by the rotated codecs (fp8_ash_ds, int8 with rotate=1 or auto).
//
// Scale word: one little-endian fp32 per block.
//   sign bit clear: transform (normal) mode, the word is the decode multiplier c > 0 (always a
//                   normal fp32): x_i = (H_unnorm q)_i * c.
//   sign bit set:   RAW mode, the word is -r (r >= 0, r = 0 stored as -0.0): per-element codes
//                   with scale r, no transform; non-finite values have reserved codes.
//   int8 rotate=auto: in transform mode the LSB of c flags the plain (unrotated) form
//                   (src/codecs/int8/int8_block.h).
//
// Adaptive scale alpha (TACO's ASH scale, made a power of two):
//   msq   = E / G + lambda                      (E = blockEnergy, fp32 division then addition)
//   a     = Qmax / sqrtf(msq)                   (correctly rounded sqrt, IEEE division)
//   a     = min(max(a, alphaMin), alphaMax)
//   alpha = 2^floor(log2 a)                      (frexpf exponent: largest power of two <= a)
// alpha brings the block into a range where the fp32 transform and the FP8/INT8 scale neither
// overflow nor underflow (x up to 3.4e38 gives E = Inf -> a = 0 -> alpha = 2^-10 for the default
// alphaMin = 1e-3, and G * alpha <= 1/2 keeps |H(alpha x)| finite), while a power of two makes
// alpha * x, 1/alpha and c * ... exact: the two scales alpha and s = m / Qmax then enter
// decoding only as their ratio, so one fp32 word c = (s * (1/G)) * (1/alpha) carries both with
// no extra rounding (tests/codecs prove ((H q * s) * (1/G)) / alpha == H q * c bitwise).
//
// Transform mode is used only when the block is finite, not all +-0, and the resulting m, inv
// and c are usable: m finite, inv = Qmax / m finite, c a NORMAL fp32 (c >= 2^-126). Blocks whose
// c would be subnormal (|x| below ~1e-34, e.g. fp32/bf16 subnormal data) fall back to RAW,
// where each element keeps ~FP8/INT8 relative precision instead of losing the scale's bits.
#pragma once

#include "kernels/host_device.h"

namespace coccl {
namespace kmath {

constexpr uint32_t kRawFlag = 0x80000000u;
constexpr uint32_t kFltMinBits = 0x00800000u;  // 2^-126
constexpr float kMinSubnormal = 1.40129846e-45f;

COCCL_HD bool isRawWord(uint32_t word) {
  return (word & kRawFlag) != 0;
}

// The rotated codecs' adaptive power-of-two scale.
template <int G>
COCCL_HD float adaptiveAlpha(float energy, float qmax, float lambda, float alphaMin,
                             float alphaMax) {
  float msq = addRn(divRn(energy, static_cast<float>(G)), lambda);
  float a = divRn(qmax, sqrtRn(msq));
  a = a < alphaMin ? alphaMin : a;
  a = a > alphaMax ? alphaMax : a;
  return floorPow2(a);
}

// Decode multiplier c = (m / Qmax) * (1/G) * (1/alpha), evaluated in that order; invG and
// invAlpha are exact powers of two.
COCCL_HD float decodeMultiplier(float m, float qmax, float invG, float invAlpha) {
  float s = divRn(m, qmax);
  return mulRn(mulRn(s, invG), invAlpha);
}

// Whether transform mode may use (m, inv, c): all finite, c normal.
COCCL_HD bool scalesUsable(float m, float inv, float c) {
  uint32_t mb = absBits(m), ib = absBits(inv), cb = floatBits(c);
  return isFiniteBits(mb) && isFiniteBits(ib) && cb >= kFltMinBits && cb < 0x7f800000u;
}

// RAW mode scale r = absmaxFinite / R, raised to the smallest subnormal if a positive absmax
// underflowed to 0 (so every finite nonzero input still gets a nonzero code or +-0).
COCCL_HD float rawScale(float absmaxFinite, float R) {
  float r = divRn(absmaxFinite, R);
  return (r == 0.0f && absmaxFinite > 0.0f) ? kMinSubnormal : r;
}

COCCL_HD uint32_t rawWord(float r) {
  return floatBits(r) | kRawFlag;
}
COCCL_HD float rawScaleFromWord(uint32_t word) {
  return bitsFloat(word & 0x7fffffffu);
}

// Round-to-nearest-even to an integer for |v| < 2^22 (equal to rintf in the default rounding
// mode and to CUDA's __float2int_rn there): adding 1.5 * 2^23 leaves the rounded integer in
// the low mantissa bits.
COCCL_HD int32_t rneInt(float v) {
  return static_cast<int32_t>(floatBits(addRn(v, 12582912.0f)) - 0x4b400000u);
}

}  // namespace kmath
}  // namespace coccl
