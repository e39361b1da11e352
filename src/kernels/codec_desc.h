// CodecDesc: what a CUDA kernel needs to know about a codec, as a POD passed by value to
// kernels (Codec::deviceDesc fills it on the host). Payload layout and math are those of the
// host codecs (src/codecs/block_driver.h, src/kernels/*_block.h).
#pragma once

#include <cstdint>

namespace coccl {

enum class CodecKind : int32_t { None = 0, Int8 = 1, Fp8AshDs = 2 };

struct CodecDesc {
  CodecKind kind = CodecKind::None;
  int32_t block = 1;     // G (elements per codec block); 1 for None
  int32_t fp8E5M2 = 0;   // fp8_ash_ds: 0 = E4M3, 1 = E5M2
  int32_t rotate = 1;    // int8: Hadamard rotation on
  float lambda = 1e-6f;  // fp8_ash_ds ASH parameters
  float alphaMin = 1e-3f;
  float alphaMax = 1e3f;
};

// Payload bytes of n elements: ceil(n/G) blocks of G one-byte codes, then one fp32 scale word
// per block. (None: n * element size, computed by the caller.)
inline constexpr uint64_t codecPayloadBytes(const CodecDesc& d, uint64_t n) {
  return (n + static_cast<uint64_t>(d.block) - 1) / static_cast<uint64_t>(d.block) *
         (static_cast<uint64_t>(d.block) + 4);
}

}  // namespace coccl
