// Conversions of src/kernels/: float <-> FP8 (E4M3FN, E5M2, saturating RNE), bf16, fp16,
// against an independent fp64 reference (frexp/nearbyint) and ml_dtypes golden values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec_test_util.h"
#include "fp8_golden.h"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"

namespace coccl {
namespace test {
namespace {

using kmath::Fp8E4M3;
using kmath::Fp8E5M2;

// Round finite v to a binary format with `mant` mantissa bits and minimum normal exponent
// `emin` (round-to-nearest-even, subnormals included, no overflow handling).
double refRound(double v, int mant, int emin) {
  if (v == 0) return v;
  int e;
  std::frexp(std::fabs(v), &e);
  int lead = std::max(e - 1, emin);
  double q = std::ldexp(1.0, lead - mant);
  return std::nearbyint(v / q) * q;
}

// Independent decoding of an FP8 code (value of every non-NaN code).
template <class F>
double refFp8Value(int code) {
  int m = code & ((1 << F::kMantBits) - 1);
  int e = (code & 0x7f) >> F::kMantBits;
  double v = e == 0 ? std::ldexp(m, 1 - F::kBias - F::kMantBits)
                    : std::ldexp(1.0 + std::ldexp(m, -F::kMantBits), e - F::kBias);
  return (code & 0x80) ? -v : v;
}

template <class F>
bool isNanCode(int code) {
  if (F::kHasInf) return ((code & 0x7f) >> 2) == 31 && (code & 3) != 0;
  return (code & 0x7f) == 0x7f;
}

// Reference saturating conversion: the code whose value is refRound(x), clamped to +-max.
template <class F>
int refFp8Code(float x) {
  if (std::isnan(x)) return 0x7f;
  double r = std::isinf(x) ? (x > 0 ? 1e300 : -1e300) : refRound(x, F::kMantBits, 1 - F::kBias);
  if (r > F::kMax) r = F::kMax;
  if (r < -F::kMax) r = -F::kMax;
  int sign = std::signbit(x) ? 0x80 : 0;
  for (int c = 0; c < 128; ++c) {
    if (isNanCode<F>(c)) continue;
    if (refFp8Value<F>(c) == std::fabs(r)) return c | sign;
  }
  return -1;
}

// Inputs: random bit patterns, log-uniform values in the FP8 range, every code's value and its
// float neighbours, every halfway point between consecutive codes and its neighbours.
template <class F>
std::vector<float> fp8Inputs() {
  std::vector<float> xs;
  std::mt19937 rng(7);
  for (int i = 0; i < 300000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(f);
  }
  std::uniform_real_distribution<double> lu(std::log(1e-8), std::log(F::kMax * 1.2));
  for (int i = 0; i < 300000; ++i)
    xs.push_back(static_cast<float>((i & 1 ? -1 : 1) * std::exp(lu(rng))));
  std::vector<double> pos;
  for (int c = 0; c < 128; ++c)
    if (!isNanCode<F>(c) && !(F::kHasInf && c == 0x7c)) pos.push_back(refFp8Value<F>(c));
  for (size_t i = 0; i < pos.size(); ++i) {
    std::vector<float> pts = {static_cast<float>(pos[i])};
    if (i + 1 < pos.size()) pts.push_back(static_cast<float>((pos[i] + pos[i + 1]) / 2));
    for (float p : pts) {
      for (float q : {p, std::nextafter(p, 0.0f), std::nextafter(p, 1e30f)}) {
        xs.push_back(q);
        xs.push_back(-q);
      }
    }
  }
  for (float s : {1.0f, -1.0f}) {
    xs.push_back(s * std::numeric_limits<float>::infinity());
    xs.push_back(s * std::numeric_limits<float>::max());
    xs.push_back(s * std::numeric_limits<float>::denorm_min());
    xs.push_back(s * 0.0f);
    xs.push_back(s * F::kMax * 1.0625f);  // first value that RNE would round above max
  }
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  return xs;
}

template <class F>
void checkFp8Format() {
  // every code round-trips (NaN codes -> NaN -> canonical NaN code; E5M2 Inf saturates)
  for (int c = 0; c < 256; ++c) {
    float v = kmath::fp8ToFloat<F>(static_cast<uint8_t>(c));
    if (isNanCode<F>(c)) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_EQ(kmath::floatToFp8Sat<F>(v), F::kNanCode);
      continue;
    }
    if (F::kHasInf && (c & 0x7f) == 0x7c) {
      EXPECT_TRUE(std::isinf(v)) << c;
      EXPECT_EQ(kmath::floatToFp8Sat<F>(v), (c & 0x80) | F::kMaxCode) << "Inf saturates";
      continue;
    }
    EXPECT_EQ(static_cast<double>(v), refFp8Value<F>(c)) << "code " << c;
    EXPECT_EQ(std::signbit(v), (c & 0x80) != 0) << c;
    EXPECT_EQ(kmath::floatToFp8Sat<F>(v), c) << "code " << c;
  }
  size_t bad = 0;
  for (float x : fp8Inputs<F>()) {
    int want = refFp8Code<F>(x);
    int got = kmath::floatToFp8Sat<F>(x);
    if (want != got && bad++ < 10) ADD_FAILURE() << "x=" << x << " want " << want << " got " << got;
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Fp8Convert, E4M3MatchesFp64ReferenceAndRoundTrips) {
  checkFp8Format<Fp8E4M3>();
}
TEST(Fp8Convert, E5M2MatchesFp64ReferenceAndRoundTrips) {
  checkFp8Format<Fp8E5M2>();
}

TEST(Fp8Convert, MatchesMlDtypesGolden) {
  for (const auto& g : kGoldenE4M3) {
    float x;
    std::memcpy(&x, &g.bits, 4);
    EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(x), g.code) << "e4m3 x=" << x;
  }
  for (const auto& g : kGoldenE5M2) {
    float x;
    std::memcpy(&x, &g.bits, 4);
    EXPECT_EQ(kmath::floatToFp8Sat<Fp8E5M2>(x), g.code) << "e5m2 x=" << x;
  }
}

TEST(Fp8Convert, SaturatesAndKeepsSignOfZero) {
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(1e30f), 0x7e);
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(-500.0f), 0xfe);
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E5M2>(-1e30f), 0xfb);
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(-1e-30f), 0x80);
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E5M2>(-0.0f), 0x80);
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(0x1p-10f), 0x00);   // halfway -> even (0)
  EXPECT_EQ(kmath::floatToFp8Sat<Fp8E4M3>(0x1.8p-9f), 0x02);  // 1.5 steps -> 2
}

// ---- bf16 / fp16 ------------------------------------------------------------------------------

double refFp16Value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
  if (e == 31) v = m ? std::nan("") : INFINITY;
  return (h & 0x8000) ? -v : v;
}

template <class ToBits, class FromBits>
void check16(ToBits to, FromBits from, int mant, int emin, double maxv,
             double (*refValue)(uint16_t)) {
  std::vector<float> xs;
  std::mt19937 rng(11);
  for (int i = 0; i < 400000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(f);
  }
  for (uint32_t h = 0; h < 0x7fffu; ++h) {
    // halfway points between consecutive codes and their neighbours
    double a = refValue(static_cast<uint16_t>(h)), b = refValue(static_cast<uint16_t>(h + 1));
    if (!std::isfinite(b)) break;
    float mid = static_cast<float>((a + b) / 2);
    for (float q : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      xs.push_back(q);
      xs.push_back(-q);
    }
  }
  size_t bad = 0;
  for (float x : xs) {
    uint16_t got = to(x);
    if (std::isnan(x)) {
      if (got != 0x7fff && bad++ < 10) ADD_FAILURE() << "NaN -> " << got;
      continue;
    }
    double r = std::isinf(x) ? x : refRound(x, mant, emin);
    if (std::fabs(r) > maxv) r = std::copysign(INFINITY, x);
    double gv = refValue(got);
    if ((gv != r || std::signbit(gv) != std::signbit(x)) && bad++ < 10)
      ADD_FAILURE() << "x=" << x << " want " << r << " got " << gv;
  }
  EXPECT_EQ(bad, 0u);
  // decoding is exact for every code
  for (uint32_t h = 0; h < 65536; ++h) {
    float v = from(static_cast<uint16_t>(h));
    double rv = refValue(static_cast<uint16_t>(h));
    if (std::isnan(rv)) {
      EXPECT_TRUE(std::isnan(v));
    } else {
      EXPECT_EQ(static_cast<double>(v), rv) << h;
      EXPECT_EQ(std::signbit(v), std::signbit(rv)) << h;
      EXPECT_EQ(to(v), h) << "round trip " << h;
    }
  }
}

double refBf16Value(uint16_t h) {
  int e = (h >> 7) & 255, m = h & 127;
  double v = e == 0 ? std::ldexp(m, -133) : std::ldexp(1.0 + m / 128.0, e - 127);
  if (e == 255) v = m ? std::nan("") : INFINITY;
  return (h & 0x8000) ? -v : v;
}

TEST(HalfConvert, Bf16MatchesReference) {
  check16(kmath::floatToBf16, kmath::bf16ToFloat, 7, -126, 0x1.fep127, refBf16Value);
}

TEST(HalfConvert, Fp16MatchesReference) {
  check16(kmath::floatToFp16, kmath::fp16ToFloat, 10, -14, 65504.0, refFp16Value);
}

}  // namespace
}  // namespace test
}  // namespace coccl
