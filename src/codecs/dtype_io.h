// Element types the lossy codecs read and write (fp32, fp16, bf16), with compile-time dispatch
// helpers so that host loops are specialised per type and per block size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "coccl.h"
#include "core/dtype.h"
#include "kernels/float_convert.h"

namespace coccl {
namespace codec_detail {

template <cocclDataType_t DT>
struct FloatIO;

template <>
struct FloatIO<cocclFloat32> {
  using T = float;
  static float toF(T v) { return v; }
  static T fromF(float f) { return f; }
};

template <>
struct FloatIO<cocclFloat16> {
  using T = uint16_t;
  static float toF(T v) { return kmath::fp16ToFloat(v); }
  static T fromF(float f) { return kmath::floatToFp16(f); }
};

template <>
struct FloatIO<cocclBfloat16> {
  using T = uint16_t;
  static float toF(T v) { return kmath::bf16ToFloat(v); }
  static T fromF(float f) { return kmath::floatToBf16(f); }
};

template <cocclDataType_t DT>
using DtTag = std::integral_constant<cocclDataType_t, DT>;

inline bool isCodecFloatType(cocclDataType_t dt) { return isCompressibleType(dt); }

// Calls fn(DtTag<DT>{}) for dt in {fp32, fp16, bf16}; the caller has validated dt.
template <class Fn>
inline void dispatchFloatType(cocclDataType_t dt, Fn&& fn) {
  switch (dt) {
    case cocclFloat16:
      fn(DtTag<cocclFloat16>{});
      break;
    case cocclBfloat16:
      fn(DtTag<cocclBfloat16>{});
      break;
    default:
      fn(DtTag<cocclFloat32>{});
      break;
  }
}

template <int G>
using BlockTag = std::integral_constant<int, G>;

// Calls fn(BlockTag<G>{}) for G in {32, 64, 128, 256, 512}.
template <class Fn>
inline void dispatchBlock(size_t g, Fn&& fn) {
  switch (g) {
    case 32:
      fn(BlockTag<32>{});
      break;
    case 64:
      fn(BlockTag<64>{});
      break;
    case 256:
      fn(BlockTag<256>{});
      break;
    case 512:
      fn(BlockTag<512>{});
      break;
    default:
      fn(BlockTag<128>{});
      break;
  }
}

// dtypeSize, dtypeName and the type traits: core/dtype.h.

}  // namespace codec_detail
}  // namespace coccl
