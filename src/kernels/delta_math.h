// The element rule of the weight-difference AllGather (cocclAllGatherDelta, include/coccl.h),
// shared by the host loops (src/collectives/host/delta.cc) and the CUDA kernels
// (src/collectives/delta/delta_kernels.cu) so that both give the same bits:
//   encode side:  d   = fp32(next) - fp32(prev)          (one fp32 subtraction, RNE)
//   decode side:  out = T(fp32(prev) + decoded)           (one fp32 addition, RNE, then RNE to T)
// except where prev is not finite (+-Inf, NaN: a weight that was, or overflowed to, a
// non-finite value): there d = fp32(next) and out = T(decoded), so such an element takes the new
// value at the next call instead of staying NaN (Inf - Inf) until a reset. Every rank holds the
// same prev, so every rank applies the same form.
// with T the element type (fp32, fp16, bf16; 16-bit values convert to fp32 exactly) and
// `decoded` the codec's fp32 decode of the payload of d. IEEE arithmetic throughout: no fused
// multiply-add (there is none to fuse), NaN and +-Inf propagate as the fp32 operations say.
#pragma once

#include <cstdint>

#include "coccl.h"
#include "kernels/float_convert.h"
#include "kernels/host_device.h"

namespace coccl {
namespace kmath {

// Element i of a typed buffer as fp32 (exact for fp16 / bf16).
template <int kType>
COCCL_HD float deltaLoad(const void* p, size_t i) {
  if (kType == cocclFloat32) return static_cast<const float*>(p)[i];
  const uint16_t h = static_cast<const uint16_t*>(p)[i];
  return kType == cocclBfloat16 ? bf16ToFloat(h) : fp16ToFloat(h);
}

// Stores fp32 v into element i of a typed buffer, rounding to nearest even.
template <int kType>
COCCL_HD void deltaStore(void* p, size_t i, float v) {
  if (kType == cocclFloat32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<uint16_t*>(p)[i] = kType == cocclBfloat16 ? floatToBf16(v) : floatToFp16(v);
}

// Whether fp32 v is finite (its exponent bits are not all ones).
COCCL_HD bool deltaFinite(float v) { return (floatBits(v) & 0x7f800000u) != 0x7f800000u; }

// d = next - prev in fp32 (what is encoded); next itself where prev is not finite.
template <int kType>
COCCL_HD float deltaDiff(const void* next, const void* prev, size_t i) {
  const float p = deltaLoad<kType>(prev, i), x = deltaLoad<kType>(next, i);
  return deltaFinite(p) ? subRn(x, p) : x;
}

// out[i] = T(out[i] + decoded) (out holds prev on entry); T(decoded) where prev is not finite.
template <int kType>
COCCL_HD void deltaApply(void* out, size_t i, float decoded) {
  const float p = deltaLoad<kType>(out, i);
  deltaStore<kType>(out, i, deltaFinite(p) ? addRn(p, decoded) : decoded);
}

}  // namespace kmath
}  // namespace coccl
