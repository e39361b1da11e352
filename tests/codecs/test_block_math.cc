// Block math of src/kernels/: Hadamard butterfly, energy tree, power-of-two alpha, and the
// proof that one fp32 ratio word decodes bitwise like the two scales (alpha, s).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "codec_test_util.h"
#include "codecs/fp8_ash_ds/ash_block.h"
#include "codecs/int8/int8_block.h"

namespace coccl {
namespace test {
namespace {

template <class Fn>
void forEachG(Fn&& fn) {
  fn(std::integral_constant<int, 32>{});
  fn(std::integral_constant<int, 64>{});
  fn(std::integral_constant<int, 128>{});
  fn(std::integral_constant<int, 256>{});
  fn(std::integral_constant<int, 512>{});
}

TEST(BlockMath, HadamardIsSylvesterAndOrthogonalAfterScaling) {
  forEachG([](auto gt) {
    constexpr int G = decltype(gt)::value;
    std::vector<float> h(static_cast<size_t>(G) * G);  // h[k*G + i] = (H e_k)_i = H[i][k]
    for (int k = 0; k < G; ++k) {
      float v[G] = {};
      v[k] = 1.0f;
      kmath::fwht<G>(v);
      for (int i = 0; i < G; ++i) {
        h[static_cast<size_t>(k) * G + i] = v[i];
        float want = (__builtin_popcount(static_cast<unsigned>(i & k)) & 1) ? -1.0f : 1.0f;
        ASSERT_EQ(v[i], want) << "G=" << G << " i=" << i << " k=" << k;
      }
    }
    // H H^T = G I, i.e. H / sqrt(G) is orthonormal
    for (int a = 0; a < G; ++a)
      for (int b = 0; b < G; ++b) {
        double dot = 0;
        for (int i = 0; i < G; ++i)
          dot += static_cast<double>(h[static_cast<size_t>(a) * G + i]) *
                 h[static_cast<size_t>(b) * G + i];
        ASSERT_EQ(dot, a == b ? G : 0.0) << "G=" << G;
      }
  });
}

TEST(BlockMath, ButterflyAndEnergyFollowTheDocumentedOrder) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  forEachG([&](auto gt) {
    constexpr int G = decltype(gt)::value;
    for (int rep = 0; rep < 50; ++rep) {
      float x[G], v[G], ref[G];
      for (int i = 0; i < G; ++i) x[i] = v[i] = ref[i] = nd(rng) * std::exp(nd(rng) * 3);
      kmath::fwht<G>(v);
      // literal transcription of the documented stage order
      for (int bit = 1; bit < G; bit <<= 1)
        for (int i = 0; i < G; ++i)
          if (!(i & bit)) {
            float a = ref[i], b = ref[i | bit];
            ref[i] = a + b;
            ref[i | bit] = a - b;
          }
      for (int i = 0; i < G; ++i) ASSERT_EQ(bitsOf(v[i]), bitsOf(ref[i]));
      // energy: pairwise over index bits from the lowest
      std::vector<float> t(x, x + G);
      for (float& e : t) e = e * e;
      while (t.size() > 1) {
        std::vector<float> n(t.size() / 2);
        for (size_t i = 0; i < n.size(); ++i) n[i] = t[2 * i] + t[2 * i + 1];
        t.swap(n);
      }
      ASSERT_EQ(bitsOf(kmath::blockEnergy<G>(x)), bitsOf(t[0]));
    }
  });
}

TEST(BlockMath, FloorPow2IsFrexpExponent) {
  std::mt19937 rng(5);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng() & 0x7f7fffffu;  // positive finite
    if (u == 0) continue;
    float a = kmath::bitsFloat(u);
    int e;
    std::frexp(a, &e);
    ASSERT_EQ(kmath::floorPow2(a), std::ldexp(1.0f, e - 1)) << a;
  }
}

TEST(BlockMath, AlphaIsAClampedPowerOfTwo) {
  std::mt19937 rng(9);
  for (int i = 0; i < 100000; ++i) {
    float e = kmath::bitsFloat(rng() & 0x7fffffffu);
    if (std::isnan(e)) continue;
    float a = kmath::adaptiveAlpha<128>(e, 448.0f, 1e-6f, 1e-3f, 1e3f);
    int ex;
    ASSERT_EQ(std::frexp(a, &ex), 0.5f) << "power of two";
    ASSERT_GE(a, 0x1p-10f);
    ASSERT_LE(a, 512.0f);
  }
  EXPECT_EQ((kmath::adaptiveAlpha<128>(INFINITY, 448.0f, 1e-6f, 1e-3f, 1e3f)), 0x1p-10f);
}

// Two-scale decode ((H q * s) * (1/G)) / alpha == ratio decode H q * c, bit for bit.
template <int G, class Encode, class Dequant>
void checkRatio(float qmax, Encode encode, Dequant deq, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> lscale(-30.0f, 30.0f);
  size_t transformBlocks = 0;
  for (int rep = 0; rep < 200; ++rep) {
    float x[G], y[G], z[G], ratio[G];
    uint8_t codes[G];
    float scale = std::exp2(lscale(rng));
    for (int i = 0; i < G; ++i) x[i] = nd(rng) * scale * (rep % 3 == 0 ? std::exp(nd(rng)) : 1.0f);
    uint32_t word = encode(x, y, codes);
    if (kmath::isRawWord(word)) continue;
    ++transformBlocks;
    // the scales as the encoder computed them
    float alpha = kmath::adaptiveAlpha<G>(kmath::blockEnergy<G>(x), qmax, 1e-6f, 1e-3f, 1e3f);
    for (int i = 0; i < G; ++i) y[i] = alpha * x[i];
    kmath::fwht<G>(y);
    float m = 0;
    for (int i = 0; i < G; ++i) m = std::max(m, std::fabs(y[i]));
    float s = m / qmax;
    ASSERT_EQ(word, bitsOf(s * (1.0f / G) * (1.0f / alpha)));
    for (int i = 0; i < G; ++i) z[i] = deq(codes[i]);
    kmath::fwht<G>(z);
    float c = kmath::bitsFloat(word);
    for (int i = 0; i < G; ++i) {
      float two = ((z[i] * s) * (1.0f / G)) / alpha;
      ratio[i] = z[i] * c;
      ASSERT_EQ(bitsOf(two), bitsOf(ratio[i])) << "G=" << G << " i=" << i;
    }
  }
  EXPECT_GT(transformBlocks, 150u);
}

TEST(BlockMath, RatioWordEqualsTwoScaleDecodeBitwise) {
  std::mt19937 rng(17);
  kmath::AshParams p;
  forEachG([&](auto gt) {
    constexpr int G = decltype(gt)::value;
    checkRatio<G>(
        448.0f,
        [&](const float* x, float* y, uint8_t* q) {
          return kmath::ashEncodeBlock<G, kmath::Fp8E4M3>(x, y, q, p);
        },
        [](uint8_t c) { return kmath::fp8ToFloat<kmath::Fp8E4M3>(c); }, rng);
    checkRatio<G>(
        57344.0f,
        [&](const float* x, float* y, uint8_t* q) {
          return kmath::ashEncodeBlock<G, kmath::Fp8E5M2>(x, y, q, p);
        },
        [](uint8_t c) { return kmath::fp8ToFloat<kmath::Fp8E5M2>(c); }, rng);
    checkRatio<G>(
        127.0f,
        [&](const float* x, float* y, uint8_t* q) {
          return kmath::int8EncodeBlock<G>(x, y, reinterpret_cast<int8_t*>(q), true);
        },
        [](uint8_t c) { return static_cast<float>(static_cast<int8_t>(c)); }, rng);
  });
}

// The owner step's rotated-domain pieces (ash_block.h): the rotated term of a payload block is
// the transform of its decode, and the encode from w = H x is the encode of x up to fp32
// rounding (same scale word within a few ulp, codes at most one step apart, nearly all equal);
// all-zero w is the RAW zero block, whose payload's rotated term is +0; other RAW payload
// blocks, non-finite w and unusable scales refuse.
template <int G, class F>
void checkRotated(std::mt19937& rng) {
  kmath::AshParams p;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-30.0f, 30.0f);
  alignas(64) float x[G], y[G], h[G], a[G], b[G];
  uint8_t q[G], q2[G];
  size_t codesDiffer = 0, total = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const float scale = std::exp2(ud(rng));
    for (int i = 0; i < G; ++i) x[i] = nd(rng) * scale * (i % 17 == 0 ? 20.0f : 1.0f);
    const uint32_t word = kmath::ashEncodeBlock<G, F>(x, y, q, p);
    ASSERT_FALSE(kmath::isRawWord(word));
    kmath::ashDecodeBlock<G, F>(q, word, a);
    kmath::fwht<G>(a);
    ASSERT_TRUE((kmath::ashDecodeRotatedBlock<G, F>(q, word, b)));
    float amax = 0;
    for (int i = 0; i < G; ++i) amax = std::max(amax, std::fabs(a[i]));
    for (int i = 0; i < G; ++i) ASSERT_NEAR(b[i], a[i], amax * 1e-5f) << "G=" << G << " i=" << i;
    for (int i = 0; i < G; ++i) h[i] = x[i];
    kmath::fwht<G>(h);
    uint32_t w2 = 0;
    ASSERT_TRUE((kmath::ashEncodeRotatedBlock<G, F>(h, q2, &w2, p)));
    ASSERT_FALSE(kmath::isRawWord(w2));
    const float c1 = kmath::bitsFloat(word), c2 = kmath::bitsFloat(w2);
    EXPECT_NEAR(c2, c1, c1 * 1e-5f);
    for (int i = 0; i < G; ++i) {
      const float d1 = kmath::fp8ToFloat<F>(q[i]), d2 = kmath::fp8ToFloat<F>(q2[i]);
      ASSERT_LE(std::fabs(d2 - d1), std::max(std::fabs(d1), std::fabs(d2)) * 0.25f + 0.02f);
      codesDiffer += q[i] != q2[i];
      ++total;
    }
  }
  EXPECT_LT(static_cast<double>(codesDiffer), 0.02 * static_cast<double>(total)) << "G=" << G;
  // RAW payload blocks refuse (the owner step takes the linear order)
  for (int i = 0; i < G; ++i) x[i] = i == 3 ? kmath::bitsFloat(0x7f800000u) : nd(rng);
  const uint32_t raw = kmath::ashEncodeBlock<G, F>(x, y, q, p);
  ASSERT_TRUE(kmath::isRawWord(raw));
  EXPECT_FALSE((kmath::ashDecodeRotatedBlock<G, F>(q, raw, b)));
  // ... also with zeros beside the Inf (raw scale 0, like the zero block's word)
  for (int i = 0; i < G; ++i) x[i] = i == 3 ? -kmath::bitsFloat(0x7f800000u) : 0.0f;
  const uint32_t rawZeroScale = kmath::ashEncodeBlock<G, F>(x, y, q, p);
  ASSERT_EQ(rawZeroScale, kmath::rawWord(0.0f));
  EXPECT_FALSE((kmath::ashDecodeRotatedBlock<G, F>(q, rawZeroScale, b)));
  // the zero RAW block (an all +-0 payload block) is taken in the rotated domain: +0
  for (int i = 0; i < G; ++i) x[i] = i % 3 ? -0.0f : 0.0f;
  const uint32_t zeroWord = kmath::ashEncodeBlock<G, F>(x, y, q, p);
  ASSERT_EQ(zeroWord, kmath::rawWord(0.0f));
  for (int i = 0; i < G; ++i) b[i] = 1.0f;
  ASSERT_TRUE((kmath::ashDecodeRotatedBlock<G, F>(q, zeroWord, b)));
  for (int i = 0; i < G; ++i) ASSERT_EQ(kmath::floatBits(b[i]), 0u) << "i=" << i;
  // w all zero: RAW zero block
  for (int i = 0; i < G; ++i) h[i] = i % 2 ? -0.0f : 0.0f;
  uint32_t w = 1;
  ASSERT_TRUE((kmath::ashEncodeRotatedBlock<G, F>(h, q2, &w, p)));
  EXPECT_EQ(w, kmath::rawWord(0.0f));
  for (int i = 0; i < G; ++i) ASSERT_EQ(q2[i], 0);
  // non-finite w, and a block whose scale would be subnormal: the linear order
  for (int i = 0; i < G; ++i) h[i] = nd(rng);
  h[G - 1] = std::nanf("");
  EXPECT_FALSE((kmath::ashEncodeRotatedBlock<G, F>(h, q2, &w, p)));
  h[G - 1] = -kmath::bitsFloat(0x7f800000u);
  EXPECT_FALSE((kmath::ashEncodeRotatedBlock<G, F>(h, q2, &w, p)));
  for (int i = 0; i < G; ++i) h[i] = 1e-40f * static_cast<float>(i % 5);
  EXPECT_FALSE((kmath::ashEncodeRotatedBlock<G, F>(h, q2, &w, p)));
}

TEST(BlockMath, RotatedOwnerStepPiecesMatchTheLinearOnes) {
  std::mt19937 rng(23);
  forEachG([&](auto gt) {
    constexpr int G = decltype(gt)::value;
    checkRotated<G, kmath::Fp8E4M3>(rng);
    checkRotated<G, kmath::Fp8E5M2>(rng);
  });
}

TEST(BlockMath, RneIntIsRintf) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-200.0f, 200.0f);
  for (int i = 0; i < 200000; ++i) {
    float v = i < 1000 ? (i - 500) * 0.5f : u(rng);
    ASSERT_EQ(kmath::rneInt(v), static_cast<int32_t>(std::rint(v))) << v;
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
