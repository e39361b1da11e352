// Helpers shared by the codec tests: typed buffers, synthetic data, error metrics.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"

#include "codecs/codec.h"
#include "kernels/float_convert.h"

namespace coccl {
namespace test {

// The lossy codecs under test and their block sizes.
inline const std::vector<std::string>& lossySpecs() {
  static const std::vector<std::string> kSpecs = {
      "int8",       "int8:block=32",       "int8:block=512",       "int8:rotate=0",
      "int8:rotate=1",
      "fp8_ash_ds", "fp8_ash_ds:block=32", "fp8_ash_ds:block=512", "fp8_ash_ds:format=e5m2"};
  return kSpecs;
}

inline const std::vector<size_t>& blockSizes() {
  static const std::vector<size_t> kSizes = {32, 64, 128, 256, 512};
  return kSizes;
}

inline size_t elemSize(cocclDataType_t dt) { return dtypeSize(dt); }

inline const char* dtName(cocclDataType_t dt) {
  return dt == cocclFloat32 ? "fp32" : (dt == cocclBfloat16 ? "bf16" : "fp16");
}

// Values stored in dt (as raw bytes) with their exact fp64 values.
struct Typed {
  cocclDataType_t dt = cocclFloat32;
  std::vector<uint8_t> bytes;
  std::vector<double> exact;
  size_t size() const { return exact.size(); }
  const void* data() const { return bytes.data(); }
};

inline Typed makeTyped(const std::vector<float>& v, cocclDataType_t dt) {
  Typed t;
  t.dt = dt;
  t.bytes.resize(v.size() * elemSize(dt));
  t.exact.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == cocclFloat32) {
      std::memcpy(&t.bytes[4 * i], &v[i], 4);
      t.exact[i] = v[i];
    } else {
      uint16_t h = dt == cocclBfloat16 ? kmath::floatToBf16(v[i]) : kmath::floatToFp16(v[i]);
      std::memcpy(&t.bytes[2 * i], &h, 2);
      t.exact[i] = dt == cocclBfloat16 ? kmath::bf16ToFloat(h) : kmath::fp16ToFloat(h);
    }
  }
  return t;
}

inline std::vector<uint8_t> encodeAll(const Codec& c, const void* in, cocclDataType_t dt,
                                      size_t n) {
  std::vector<uint8_t> out(c.encodedBytes(n, dt));
  c.encode(in, dt, n, out.data());
  return out;
}

// Decodes to fp32. Lossy payloads decode straight to fp32; "none" holds dt, so it is decoded
// in dt and converted.
inline std::vector<float> decodeF32(const Codec& c, const std::vector<uint8_t>& payload, size_t n,
                                    cocclDataType_t dt = cocclFloat32) {
  std::vector<float> out(n);
  if (!c.lossless() || dt == cocclFloat32) {
    c.decode(payload.data(), n, cocclFloat32, out.data());
    return out;
  }
  std::vector<uint16_t> h(n);
  c.decode(payload.data(), n, dt, h.data());
  for (size_t i = 0; i < n; ++i)
    out[i] = dt == cocclBfloat16 ? kmath::bf16ToFloat(h[i]) : kmath::fp16ToFloat(h[i]);
  return out;
}

inline std::vector<float> roundTrip(const Codec& c, const Typed& t) {
  return decodeF32(c, encodeAll(c, t.data(), t.dt, t.size()), t.size(), t.dt);
}

inline double relL2(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

enum class Dist { Normal, Laplace, StudentT3, OutlierChannels };

inline const char* distName(Dist d) {
  switch (d) {
    case Dist::Normal:
      return "N(0,1)";
    case Dist::Laplace:
      return "Laplace";
    case Dist::StudentT3:
      return "Student-t(3)";
    default:
      return "outlier-channels";
  }
}

// rows x 1024 values; OutlierChannels: N(0,1) with 4 fixed channels scaled x30.
inline std::vector<float> synth(Dist d, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::exponential_distribution<double> ed(1.0);
  std::student_t_distribution<double> td(3.0);
  std::vector<float> v(n);
  static const size_t kOutliers[4] = {17, 300, 611, 1000};
  for (size_t i = 0; i < n; ++i) {
    double x;
    switch (d) {
      case Dist::Normal:
        x = nd(rng);
        break;
      case Dist::Laplace:
        x = (rng() & 1 ? 1.0 : -1.0) * ed(rng);
        break;
      case Dist::StudentT3:
        x = td(rng);
        break;
      default: {
        x = nd(rng);
        size_t ch = i % 1024;
        for (size_t o : kOutliers)
          if (ch == o) x *= 30.0;
      }
    }
    v[i] = static_cast<float>(x);
  }
  return v;
}

// Per block (over G including zero padding): rms and absmax of the exact input.
struct BlockStats {
  double rms, absmax;
};

inline BlockStats blockStats(const std::vector<double>& x, size_t b, size_t g) {
  double e = 0, m = 0;
  for (size_t i = b * g; i < std::min(x.size(), (b + 1) * g); ++i) {
    e += x[i] * x[i];
    m = std::max(m, std::fabs(x[i]));
  }
  return {std::sqrt(e / static_cast<double>(g)), m};
}

// Number of elements whose error exceeds the codec's elementErrorBound for their block.
inline size_t countOutOfBound(const Codec& c, const std::vector<float>& out,
                              const std::vector<double>& ref, double* worstRatio = nullptr) {
  size_t g = c.blockElems(), bad = 0;
  double worst = 0;
  for (size_t b = 0; b * g < ref.size(); ++b) {
    BlockStats s = blockStats(ref, b, g);
    double bound = c.elementErrorBound(s.rms, s.absmax);
    for (size_t i = b * g; i < std::min(ref.size(), (b + 1) * g); ++i) {
      double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
      if (!(err <= bound)) ++bad;
      if (bound > 0) worst = std::max(worst, err / bound);
    }
  }
  if (worstRatio) *worstRatio = worst;
  return bad;
}

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace test
}  // namespace coccl
