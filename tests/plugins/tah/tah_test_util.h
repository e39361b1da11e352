// Helpers of the tah plug-in tests: the codec through coccl's registry (the plug-in loaded once
// per process from TAH_PLUGIN_PATH), synthetic activations, dtype conversions, the bit map.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codecs/abi/registry.h"
#include "codecs/codec.h"
#include "tah_math.h"

namespace coccl {

inline CodecPtr tahCodec(const std::string& spec) {
  static const std::string name = loadCodecPlugin(TAH_PLUGIN_PATH);
  (void)name;
  return makeCodec(spec);
}

constexpr cocclDataType_t kTypes[] = {cocclFloat32, cocclFloat16, cocclBfloat16};

inline const char* typeName(cocclDataType_t dt) {
  return dt == cocclFloat32 ? "fp32" : dt == cocclFloat16 ? "fp16" : "bf16";
}
inline size_t typeBytes(cocclDataType_t dt) {
  return dt == cocclFloat32 ? 4 : 2;
}

inline std::vector<uint8_t> toType(const std::vector<float>& x, cocclDataType_t dt) {
  std::vector<uint8_t> out(x.size() * typeBytes(dt));
  for (size_t i = 0; i < x.size(); ++i) tah_store(out.data(), dt, i, x[i]);
  return out;
}
inline std::vector<float> fromType(const std::vector<uint8_t>& b, cocclDataType_t dt, size_t n) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = tah_load(b.data(), dt, i);
  return out;
}

// rows x R synthetic activations: "normal" (per-row scale e^N(0, 0.5)), "outlier_channels" (as
// normal, 1 channel in ~100 is 30x larger in every row), "huge" (normal plus 3 elements of
// +-1000 per row), "student_t" (t with 3 degrees of freedom).
inline std::vector<float> activations(size_t rows, size_t R, const std::string& kind,
                                      unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::student_t_distribution<float> td(3.0f);
  std::vector<float> x(rows * R);
  for (size_t r = 0; r < rows; ++r) {
    const float rs = std::exp(0.5f * nd(g));
    for (size_t i = 0; i < R; ++i) {
      float v = kind == "student_t" ? td(g) : nd(g) * rs;
      if (kind == "outlier_channels" && (i * 2654435761u) % 101u == 7u) v *= 30.0f;
      x[r * R + i] = v;
    }
    if (kind == "huge")
      for (int k = 0; k < 3; ++k) x[r * R + (g() % R)] = (k % 2 ? 1000.0f : -1000.0f);
  }
  return x;
}

// The payload's bit map: 1 for a 3-bit row.
inline std::vector<int> threeBitRows(const std::vector<uint8_t>& pay, size_t rows) {
  std::vector<int> out(rows);
  for (size_t r = 0; r < rows; ++r) {
    uint32_t bits;
    std::memcpy(&bits, pay.data() + 8 * (r / 32), 4);
    out[r] = (bits >> (r % 32)) & 1u;
  }
  return out;
}

}  // namespace coccl
