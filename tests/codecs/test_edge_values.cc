// Edge values through every lossy codec (and "none" where meaningful): zeros, tiny and
// subnormal blocks, huge values, NaN/Inf, odd counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "codec_test_util.h"

namespace coccl {
namespace test {
namespace {

const cocclDataType_t kTypes[] = {cocclFloat32, cocclBfloat16, cocclFloat16};

std::vector<std::string> allSpecs() {
  std::vector<std::string> s = lossySpecs();
  s.push_back("none");
  return s;
}

// Decodes into dt and returns the raw bytes.
std::vector<uint8_t> decodeBytes(const Codec& c, const std::vector<uint8_t>& payload, size_t n,
                                 cocclDataType_t dt) {
  std::vector<uint8_t> out(n * elemSize(dt));
  c.decode(payload.data(), n, dt, out.data());
  return out;
}

TEST(EdgeValues, ZeroAndNegativeZeroBlocksRoundTripBitExactly) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    const size_t g = std::max<size_t>(c->blockElems(), 32);
    std::vector<float> v(4 * g + 5, 0.0f);
    for (size_t i = g; i < 2 * g; ++i) v[i] = -0.0f;                       // all -0
    for (size_t i = 2 * g; i < 3 * g; ++i) v[i] = (i & 1) ? -0.0f : 0.0f;  // mixed
    for (size_t i = 4 * g; i < v.size(); ++i) v[i] = -0.0f;                // partial block
    for (cocclDataType_t dt : kTypes) {
      Typed t = makeTyped(v, dt);
      std::vector<uint8_t> out =
          decodeBytes(*c, encodeAll(*c, t.data(), dt, t.size()), t.size(), dt);
      EXPECT_EQ(out, t.bytes) << spec << " " << dtName(dt);
    }
  }
}

// Mean of output/reference and least-squares gain for tiny data: no systematic shrinkage.
void expectUnbiased(const Codec& c, const Typed& t, cocclDataType_t outDt, const char* what) {
  std::vector<uint8_t> payload = encodeAll(c, t.data(), t.dt, t.size());
  std::vector<float> out(t.size());
  if (outDt == cocclFloat32) {
    c.decode(payload.data(), t.size(), cocclFloat32, out.data());
  } else {
    std::vector<uint16_t> h(t.size());
    c.decode(payload.data(), t.size(), outDt, h.data());
    for (size_t i = 0; i < h.size(); ++i)
      out[i] = outDt == cocclBfloat16 ? kmath::bf16ToFloat(h[i]) : kmath::fp16ToFloat(h[i]);
  }
  double ratio = 0, xy = 0, xx = 0;
  size_t nonFinite = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!std::isfinite(out[i])) ++nonFinite;
    ratio += out[i] / t.exact[i];
    xy += out[i] * t.exact[i] * 1e76;
    xx += t.exact[i] * t.exact[i] * 1e76;
  }
  ratio /= static_cast<double>(t.size());
  std::printf("%-26s %-26s mean(out/ref) %.5f  gain %.5f\n", c.spec().substr(0, 26).c_str(), what,
              ratio, xy / xx);
  EXPECT_EQ(nonFinite, 0u) << c.spec() << " " << what;
  EXPECT_NEAR(ratio, 1.0, 0.01) << c.spec() << " " << what;
  EXPECT_NEAR(xy / xx, 1.0, 0.01) << c.spec() << " " << what;
  EXPECT_EQ(countOutOfBound(c, out, t.exact), 0u) << c.spec() << " " << what;
}

TEST(EdgeValues, Fp32BlockWithMax1em38IsUnbiased) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  std::vector<float> v(1 << 15);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (rng() & 1 ? 1e-38f : -1e-38f) * u(rng);
  for (size_t i = 0; i < v.size(); i += 128) v[i] = 1e-38f;  // every block's max is 1e-38
  Typed t = makeTyped(v, cocclFloat32);
  for (const std::string& spec : lossySpecs())
    expectUnbiased(*makeCodec(spec), t, cocclFloat32, "1e-38");
}

TEST(EdgeValues, Bf16SubnormalsAreUnbiased) {
  std::mt19937 rng(43);
  std::vector<float> v(1 << 15);
  for (size_t i = 0; i < v.size(); ++i) {
    int k = 1 + static_cast<int>(rng() % 127);  // k * 2^-133: every bf16 subnormal
    v[i] = std::ldexp(static_cast<float>(rng() & 1 ? k : -k), -133);
  }
  Typed t = makeTyped(v, cocclBfloat16);
  for (const std::string& spec : lossySpecs()) {
    CodecPtr c = makeCodec(spec);
    expectUnbiased(*c, t, cocclFloat32, "bf16 subnormals -> fp32");
    expectUnbiased(*c, t, cocclBfloat16, "bf16 subnormals -> bf16");
  }
}

TEST(EdgeValues, SingleHugeValueComesBackFinite) {
  std::vector<float> v = synth(Dist::Normal, 4096, 5);
  v[1000] = 1e30f;
  for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32}) {
    Typed t = makeTyped(v, dt);
    for (const std::string& spec : lossySpecs()) {
      CodecPtr c = makeCodec(spec);
      std::vector<float> out = roundTrip(*c, t);
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_TRUE(std::isfinite(out[i])) << spec << " " << i;
      EXPECT_NEAR(out[1000] / t.exact[1000], 1.0, 0.07) << spec << " " << dtName(dt);
      EXPECT_EQ(countOutOfBound(*c, out, t.exact), 0u) << spec << " " << dtName(dt);
      // blocks without the outlier are decoded as if encoded alone
      const size_t g = c->blockElems(), hb = 1000 / g;
      std::vector<float> alone =
          roundTrip(*c, makeTyped(std::vector<float>(v.begin(), v.begin() + hb * g), dt));
      for (size_t i = 0; i < hb * g; ++i) ASSERT_EQ(bitsOf(out[i]), bitsOf(alone[i])) << spec;
    }
  }
}

TEST(EdgeValues, NanAndInfComeBackWhereTheyWere) {
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    const size_t g = std::max<size_t>(c->blockElems(), 64);
    std::vector<float> v = synth(Dist::Normal, 6 * g, 9);
    v[0] = kNan;          // block 0: NaN at position 0
    v[2 * g + 5] = 3.0f;  // block 2: NaN next to 3.0
    v[2 * g + 6] = kNan;
    v[4 * g + 1] = kInf;  // block 4: +Inf and -Inf
    v[4 * g + 30] = -kInf;
    for (cocclDataType_t dt : kTypes) {
      Typed t = makeTyped(v, dt);
      std::vector<uint8_t> payload = encodeAll(*c, t.data(), dt, t.size());
      std::vector<float> out = decodeF32(*c, payload, t.size(), dt);
      std::string what = spec + " " + dtName(dt);
      EXPECT_TRUE(std::isnan(out[0])) << what;
      EXPECT_TRUE(std::isnan(out[2 * g + 6])) << what;
      EXPECT_EQ(out[4 * g + 1], kInf) << what;
      EXPECT_EQ(out[4 * g + 30], -kInf) << what;
      // finite neighbours in the blocks with NaN/Inf keep ~FP8 (E5M2: 2^-3) / INT8 precision
      // relative to the block's largest finite value
      const double rel = spec.find("e5m2") != std::string::npos ? 0.13 : 0.07;
      EXPECT_NEAR(out[2 * g + 5], 3.0, 3.0 * rel) << what;
      for (size_t b : {0, 2, 4}) {
        double amax = 0;
        for (size_t i = b * g; i < (b + 1) * g; ++i)
          if (std::isfinite(t.exact[i])) amax = std::max(amax, std::fabs(t.exact[i]));
        for (size_t i = b * g; i < (b + 1) * g; ++i) {
          if (!std::isfinite(t.exact[i])) continue;
          ASSERT_TRUE(std::isfinite(out[i])) << what << " i=" << i;
          ASSERT_LE(std::fabs(out[i] - t.exact[i]), rel * amax) << what << " i=" << i;
        }
      }
      // blocks 1, 3, 5 (clean) decode exactly as when encoded alone
      for (size_t b : {1, 3, 5}) {
        const size_t cg = c->blockElems() == 1 ? g : c->blockElems();
        for (size_t sub = b * g / cg; sub < (b + 1) * g / cg; ++sub) {
          Typed alone =
              makeTyped(std::vector<float>(v.begin() + sub * cg, v.begin() + (sub + 1) * cg), dt);
          std::vector<float> ref = roundTrip(*c, alone);
          for (size_t i = 0; i < cg; ++i)
            ASSERT_EQ(bitsOf(out[sub * cg + i]), bitsOf(ref[i])) << what;
        }
      }
    }
  }
}

// N(0,1) scaled by 2^k over the whole fp32 range: crosses from RAW (tiny blocks whose decode
// multiplier would be subnormal) to the transform mode and up to energies that overflow.
TEST(EdgeValues, ScaleSweepStaysFiniteUnbiasedAndBounded) {
  std::vector<float> base = synth(Dist::Normal, 4096, 77);
  for (const std::string& spec : lossySpecs()) {
    CodecPtr c = makeCodec(spec);
    for (int k = -148; k <= 124; k += 4) {
      std::vector<float> v(base.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(base[i], k);
      Typed t = makeTyped(v, cocclFloat32);
      std::vector<float> out = roundTrip(*c, t);
      double xy = 0, xx = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_TRUE(std::isfinite(out[i])) << spec << " k=" << k;
        xy += std::ldexp(static_cast<double>(out[i]), -k) * std::ldexp(t.exact[i], -k);
        xx += std::ldexp(t.exact[i], -k) * std::ldexp(t.exact[i], -k);
      }
      EXPECT_EQ(countOutOfBound(*c, out, t.exact), 0u) << spec << " k=" << k;
      if (k >= -128) {
        EXPECT_NEAR(xy / xx, 1.0, 0.01) << spec << " k=" << k;
        EXPECT_LT(relL2(out, t.exact), 0.06) << spec << " k=" << k;
      }
    }
  }
}

TEST(EdgeValues, OddCountsMeetThePerBlockBound) {
  for (size_t n : {1, 7, 31, 33, 127, 129, 2305, 1000003}) {
    std::vector<float> v = synth(Dist::StudentT3, n, n);
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16}) {
      Typed t = makeTyped(v, dt);
      for (const std::string& spec : lossySpecs()) {
        CodecPtr c = makeCodec(spec);
        std::vector<float> out = roundTrip(*c, t);
        double worst = 0;
        EXPECT_EQ(countOutOfBound(*c, out, t.exact, &worst), 0u) << spec << " n=" << n;
        if (n > 1000) {
          EXPECT_LT(relL2(out, t.exact), 0.06) << spec << " n=" << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
