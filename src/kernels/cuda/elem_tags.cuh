// Element-type tags of the device codec code: Tag::T is the stored type, Tag::load / store
// convert one element to / from fp32 (RNE), bitwise the host's FloatIO (src/codecs/dtype_io.h).
// kFullMask names all 32 lanes of a warp. The kdev namespace sees the scalar block math of
// namespace kmath unqualified.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/block_scale.h"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"
#include "kernels/hadamard.h"

namespace coccl {
namespace kdev {

using namespace coccl::kmath;

constexpr unsigned kFullMask = 0xffffffffu;

struct Bf16Tag {
  using T = uint16_t;
  __device__ __forceinline__ static float load(uint16_t v) { return bf16ToFloat(v); }
  __device__ __forceinline__ static uint16_t store(float v) { return floatToBf16(v); }
};
struct Fp16Tag {
  using T = uint16_t;
  __device__ __forceinline__ static float load(uint16_t v) { return fp16ToFloat(v); }
  __device__ __forceinline__ static uint16_t store(float v) { return floatToFp16(v); }
};
struct Fp32Tag {
  using T = float;
  __device__ __forceinline__ static float load(float v) { return v; }
  __device__ __forceinline__ static float store(float v) { return v; }
};

}  // namespace kdev
}  // namespace coccl
