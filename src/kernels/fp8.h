// float <-> FP8 (OCP E4M3FN and E5M2) conversions.
//
// E4M3FN: bias 7, 3 mantissa bits, no Inf, NaN = S.1111.111 (0x7F/0xFF), max 448 (0x7E),
//         min normal 2^-6, subnormal step 2^-9.
// E5M2:   bias 15, 2 mantissa bits, Inf = S.11111.00 (0x7C/0xFC), NaN = S.11111.{01,10,11},
//         max 57344 (0x7B), min normal 2^-14, subnormal step 2^-16.
//
// floatToFp8Sat<F>(x): round-to-nearest-even, SATURATING: every finite x and +-Inf map to a
// finite code (beyond +-max -> +-max), exactly as CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
// fmt). Subnormals are rounded exactly; values below half the smallest subnormal become +-0
// (the sign is kept). NaN -> 0x7F (sign dropped).
// fp8ToFloat<F>(code): exact (E5M2 Inf -> Inf, NaN codes -> quiet NaN).
#pragma once

#include "kernels/host_device.h"

namespace coccl {
namespace kmath {

struct Fp8E4M3 {
  static constexpr int kMantBits = 3;
  static constexpr int kBias = 7;
  static constexpr uint32_t kMaxCode = 0x7e;  // 448
  static constexpr uint32_t kNanCode = 0x7f;
  static constexpr float kMax = 448.0f;
  static constexpr bool kHasInf = false;
};

struct Fp8E5M2 {
  static constexpr int kMantBits = 2;
  static constexpr int kBias = 15;
  static constexpr uint32_t kMaxCode = 0x7b;  // 57344
  static constexpr uint32_t kNanCode = 0x7f;
  static constexpr float kMax = 57344.0f;
  static constexpr bool kHasInf = true;
};

// floatToFp8Sat without the NaN select: equal to it for every non-NaN x.
template <class F>
COCCL_HD uint8_t floatToFp8SatNonNan(float x) {
  constexpr int kShift = 23 - F::kMantBits;
  // bits of the fp8 min normal 2^(1-bias) as an fp32
  constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(127 + 1 - F::kBias) << 23;
  // 2^(1 - bias - mant + 23): its fp32 ulp is the fp8 subnormal step
  constexpr uint32_t kMagicBits = static_cast<uint32_t>(127 + 1 - F::kBias - F::kMantBits + 23)
                                  << 23;
  uint32_t u = floatBits(x);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & 0x7fffffffu;
  // normal range: rebias and round-to-nearest-even on the dropped bits (unsigned wrap for
  // a < kMinNormalBits is harmless, that branch is not selected), then saturate (Inf included).
  uint32_t n = (a - (static_cast<uint32_t>(127 - F::kBias) << 23) + ((1u << (kShift - 1)) - 1u) +
                ((a >> kShift) & 1u)) >>
               kShift;
  n = minU31(n, F::kMaxCode);
  // subnormal range: the FPU's RNE addition aligns the value to the subnormal step.
  uint32_t s = floatBits(addRn(bitsFloat(a), bitsFloat(kMagicBits))) - kMagicBits;
  // selects as masks (keeps host loops branch-free and vectorizable)
  uint32_t isSub =
      0u - static_cast<uint32_t>(static_cast<int32_t>(a) < static_cast<int32_t>(kMinNormalBits));
  return static_cast<uint8_t>(((s & isSub) | (n & ~isSub)) | sign);
}

template <class F>
COCCL_HD uint8_t floatToFp8Sat(float x) {
  uint32_t isNan =
      0u - static_cast<uint32_t>(static_cast<int32_t>(floatBits(x) & 0x7fffffffu) > 0x7f800000);
  uint32_t r = floatToFp8SatNonNan<F>(x);
  return static_cast<uint8_t>((r & ~isNan) | (F::kNanCode & isNan));
}

template <class F>
COCCL_HD float fp8ToFloat(uint8_t code) {
  constexpr int kShift = 23 - F::kMantBits;
  constexpr uint32_t kExpAll = (1u << (7 - F::kMantBits)) - 1u;
  uint32_t c = code;
  uint32_t sign = (c & 0x80u) << 24;
  uint32_t em = c & 0x7fu;
  uint32_t exp = em >> F::kMantBits;
  uint32_t mant = em & ((1u << F::kMantBits) - 1u);
  // normal: rebias
  uint32_t normal = (em << kShift) + (static_cast<uint32_t>(127 - F::kBias) << 23);
  // subnormal: mant * 2^(1 - bias - mantbits), exact
  float sub =
      mulRn(static_cast<float>(static_cast<int32_t>(mant)), pow2f(1 - F::kBias - F::kMantBits));
  uint32_t isSub = 0u - static_cast<uint32_t>(exp == 0u);
  uint32_t r = (floatBits(sub) & isSub) | (normal & ~isSub);
  // E4M3: S.1111.111 is NaN; E5M2: exponent all ones is Inf (mantissa 0) or NaN
  uint32_t special = F::kHasInf ? (mant == 0u ? 0x7f800000u : 0x7fc00000u) : 0x7fc00000u;
  uint32_t isSpecial = 0u - static_cast<uint32_t>(F::kHasInf ? exp == kExpAll : em == 0x7fu);
  r = (r & ~isSpecial) | (special & isSpecial);
  return bitsFloat(r | sign);
}

}  // namespace kmath
}  // namespace coccl
