// fp32 <-> bf16 / fp16 (IEEE binary16) conversions by bit manipulation.
//
// float -> bf16/fp16: round-to-nearest-even, overflow to +-Inf, subnormals exact, NaN becomes
// the canonical NaN 0x7FFF (what CUDA's __float2bfloat16_rn / __float2half_rn return).
// bf16/fp16 -> float: exact (NaN payloads kept).
// Written branch-light (selects, constant shifts) so host loops vectorize.
#pragma once

#include "kernels/host_device.h"

namespace coccl {
namespace kmath {

// ---- bf16 ---------------------------------------------------------------------------------

COCCL_HD float bf16ToFloat(uint16_t h) {
  return bitsFloat(static_cast<uint32_t>(h) << 16);
}

COCCL_HD uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  // RNE on the 16 dropped bits: add 0x7FFF plus the lowest kept bit; a carry into the exponent
  // is the correct rounding (up to Inf for values beyond the bf16 range).
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t isNan = 0u - static_cast<uint32_t>(static_cast<int32_t>(u & 0x7fffffffu) > 0x7f800000);
  return static_cast<uint16_t>((r & ~isNan) | (0x7fffu & isNan));
}

// ---- fp16 ---------------------------------------------------------------------------------

COCCL_HD float fp16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent+mantissa in fp32 place
  uint32_t exp = em & 0x0f800000u;
  // normal: rebias 15 -> 127
  uint32_t normal = em + ((127u - 15u) << 23);
  // Inf/NaN: exponent all ones
  uint32_t special = em + ((255u - 31u) << 23);
  // zero/subnormal: value = mantissa * 2^-24, computed exactly as (2^-14 * (1 + m/1024)) - 2^-14
  float sub = subRn(bitsFloat(em + (113u << 23)), bitsFloat(113u << 23));
  uint32_t isSpecial = 0u - static_cast<uint32_t>(exp == 0x0f800000u);
  uint32_t isSub = 0u - static_cast<uint32_t>(exp == 0u);
  uint32_t r = (special & isSpecial) | (floatBits(sub) & isSub) | (normal & ~(isSpecial | isSub));
  return bitsFloat(r | sign);
}

COCCL_HD uint16_t floatToFp16(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  // normal range (|f| >= 2^-14): rebias 127 -> 15 and RNE on the 13 dropped bits; anything at
  // or above 65520 carries into exponent 31 -> clamp to Inf (0x7C00).
  uint32_t n = (a - ((127u - 15u) << 23) + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  n = minU31(n, 0x7c00u);
  // subnormal range (|f| < 2^-14): adding 0.5 (ulp 2^-24 = the fp16 subnormal step) rounds the
  // value to the step with the FPU's round-to-nearest-even; the low bits are then the code.
  const float magic = 0.5f;  // 126 << 23
  uint32_t s = floatBits(addRn(bitsFloat(a), magic)) - floatBits(magic);
  uint32_t isSub = 0u - static_cast<uint32_t>(static_cast<int32_t>(a) < (113 << 23));
  uint32_t isNan = 0u - static_cast<uint32_t>(static_cast<int32_t>(a) > 0x7f800000);
  uint32_t r = ((s & isSub) | (n & ~isSub)) | sign;
  r = (r & ~isNan) | (0x7fffu & isNan);
  return static_cast<uint16_t>(r);
}

}  // namespace kmath
}  // namespace coccl
