// The int4 plug-in through coccl's registry (loadCodecPlugin + makeCodec, as the collectives use
// it): payload size equal to the formula of plugins/int4/int4_params.h and never exceeded,
// partial blocks, self-contained chunks, non-finite blocks (CAP_NONFINITE), the owner step
// against decode-sum-encode, stochastic rounding (unbiased, reproducible) and spec parsing.
#include <cstring>
#include <thread>

#include "int4_test_util.h"

namespace coccl {
namespace test {
namespace {

const cocclDataType_t kTypes[3] = {cocclFloat32, cocclFloat16, cocclBfloat16};

size_t formula(size_t n, size_t g) { return (n + g - 1) / g * (g / 2 + 4); }

TEST(Int4, CanonicalSpecAndBadParameters) {
  EXPECT_EQ(int4Codec("int4")->spec(), "int4:block=128,rotate=auto,round=rne,seed=0");
  EXPECT_EQ(int4Codec("int4:block=2048,rotate=0,round=stochastic,seed=7")->spec(),
            "int4:block=2048,rotate=0,round=stochastic,seed=7");
  EXPECT_EQ(int4Codec("int4:block=64")->blockElems(), 64u);
  for (const char* bad : {"int4:block=16", "int4:block=4096", "int4:block=96", "int4:rotate=2",
                          "int4:round=up", "int4:seed=-1", "int4:foo=1", "int4:block=1x"})
    EXPECT_THROW(int4Codec(bad), std::exception) << bad;
  CodecPtr c = int4Codec("int4");
  EXPECT_TRUE(c->supportsType(cocclBfloat16) && c->supportsType(cocclFloat16));
  EXPECT_FALSE(c->supportsType(cocclInt32));
  EXPECT_TRUE(c->supportsOp(cocclSum) && c->supportsOp(cocclAvg));
  EXPECT_FALSE(c->supportsOp(cocclMax));
  EXPECT_TRUE(c->capabilities() & COCCL_CODEC_CAP_NONFINITE);
  EXPECT_TRUE(c->capabilities() & COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE);
}

// encode writes exactly formula(n) bytes (guard bytes after it stay) on every dtype and block.
TEST(Int4, WireBytesEqualTheFormula) {
  for (size_t g : {32u, 64u, 128u, 256u, 512u, 1024u, 2048u}) {
    CodecPtr c = int4Codec("int4:block=" + std::to_string(g));
    for (size_t n : {0u, 1u, 7u, 33u, 1000u, 4096u, 100003u}) {
      std::vector<float> x = synth(Dist::Normal, n, n + g);
      for (cocclDataType_t dt : kTypes) {
        Typed t = makeTyped(x, dt);
        const size_t bytes = c->encodedBytes(n, dt);
        ASSERT_EQ(bytes, formula(n, g)) << "block " << g << " n " << n;
        std::vector<uint8_t> out(bytes + 64, 0xA5);
        c->encode(t.data(), dt, n, out.data());
        for (size_t i = bytes; i < out.size(); ++i)
          ASSERT_EQ(out[i], 0xA5) << "byte " << i << " past the payload written, block " << g;
      }
    }
  }
}

// Counts not a multiple of the block: round trip within the bound, no write past count, and the
// full blocks of a message equal the payload of those blocks alone (self-contained chunks).
TEST(Int4, PartialBlocksRoundTrip) {
  for (const char* spec : {"int4", "int4:block=32,rotate=1", "int4:block=2048,round=stochastic,seed=3"}) {
    CodecPtr c = int4Codec(spec);
    const size_t g = c->blockElems();
    for (size_t n : {1u, 7u, 33u, 1000003u}) {
      std::vector<float> x = synth(Dist::Laplace, n, 11 + n);
      for (cocclDataType_t dt : kTypes) {
        Typed t = makeTyped(x, dt);
        std::vector<uint8_t> p = encodeAll(*c, t.data(), dt, n);
        std::vector<float> d(n + 16, 12345.0f);
        c->decode(p.data(), n, cocclFloat32, d.data());
        for (size_t i = n; i < n + 16; ++i) ASSERT_EQ(d[i], 12345.0f) << spec << ": wrote past count";
        d.resize(n);
        EXPECT_EQ(countOutOfBound(*c, d, t.exact), 0u) << spec << " n " << n << " " << dtName(dt);
        const size_t full = n / g * g;
        if (full == 0 || full == n) continue;
        std::vector<uint8_t> q = encodeAll(*c, t.data(), dt, full);
        const size_t nbFull = full / g, nb = (n + g - 1) / g;
        ASSERT_EQ(std::memcmp(p.data(), q.data(), nbFull * g / 2), 0) << spec << ": codes differ";
        ASSERT_EQ(std::memcmp(p.data() + nb * g / 2, q.data() + nbFull * g / 2, 4 * nbFull), 0)
            << spec << ": scales differ";
      }
    }
  }
}

TEST(Int4, NonFiniteBlocksCarriedRaw) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (const char* spec : {"int4", "int4:block=32,rotate=0", "int4:block=512,rotate=1,round=stochastic"}) {
    CodecPtr c = int4Codec(spec);
    const size_t g = c->blockElems(), n = 3 * g + 5;
    std::vector<float> x = synth(Dist::Normal, n, 5);
    x[3] = nan;
    x[g + 1] = inf;
    x[g + 2] = -inf;
    x[n - 1] = nan;
    for (cocclDataType_t dt : kTypes) {
      Typed t = makeTyped(x, dt);
      std::vector<float> d = decodeF32(*c, encodeAll(*c, t.data(), dt, n), n);
      EXPECT_TRUE(std::isnan(d[3]) && std::isnan(d[n - 1])) << spec;
      EXPECT_EQ(d[g + 1], inf) << spec;
      EXPECT_EQ(d[g + 2], -inf) << spec;
      for (size_t b = 0; b * g < n; ++b) {
        double am = 0, e2 = 0;
        for (size_t i = b * g; i < std::min(n, (b + 1) * g); ++i)
          if (std::isfinite(t.exact[i])) {
            am = std::max(am, std::fabs(t.exact[i]));
            e2 += t.exact[i] * t.exact[i];
          }
        const double bound = c->elementErrorBound(std::sqrt(e2 / double(g)), am);
        for (size_t i = b * g; i < std::min(n, (b + 1) * g); ++i)
          if (std::isfinite(t.exact[i])) {
            ASSERT_LE(std::fabs(d[i] - t.exact[i]), bound) << spec << " element " << i;
          }
      }
    }
  }
}

// Tiny and subnormal blocks stay within the bound (blocks below 2^-96 decode to zero).
TEST(Int4, TinyBlocks) {
  CodecPtr c = int4Codec("int4:block=32");
  for (float s : {1e-20f, 1e-30f, 1e-38f, 1e-42f}) {
    std::vector<float> x = synth(Dist::Normal, 96, 9);
    for (float& v : x) v *= s;
    Typed t = makeTyped(x, cocclFloat32);
    EXPECT_EQ(countOutOfBound(*c, roundTrip(*c, t), t.exact), 0u) << s;
  }
}

// decodeReduceEncode equals the composition: payloads decoded, summed in rank order in fp32
// with the owner's raw input, scaled, encoded as fp32 (the payload format does not depend on
// the input type, so the sum is not rounded to dt first); decoded = decode(out) in dt.
TEST(Int4, DecodeReduceEncodeEqualsDecodeSumEncode) {
  for (const char* spec : {"int4", "int4:block=32,rotate=0", "int4:block=2048,rotate=1,round=stochastic,seed=9"}) {
    CodecPtr c = int4Codec(spec);
    const int p = 4, self = 1;
    const size_t n = 5 * c->blockElems() + 17;
    for (cocclDataType_t dt : kTypes) {
      for (float scale : {1.0f, 0.25f}) {
        std::vector<Typed> in;
        std::vector<std::vector<uint8_t>> enc(p);
        std::vector<const void*> ins(p, nullptr);
        for (int r = 0; r < p; ++r) {
          in.push_back(makeTyped(synth(Dist::StudentT3, n, 40 + r), dt));
          if (r == self) continue;
          enc[r] = encodeAll(*c, in[r].data(), dt, n);
          ins[r] = enc[r].data();
        }
        std::vector<float> acc(n);
        for (int r = 0; r < p; ++r) {
          std::vector<float> v(in[r].exact.begin(), in[r].exact.end());
          if (r != self) v = decodeF32(*c, enc[r], n);
          for (size_t i = 0; i < n; ++i) acc[i] = r == 0 ? v[i] : acc[i] + v[i];
        }
        for (float& a : acc) a = scale != 1.0f ? a * scale : a;
        std::vector<uint8_t> want = encodeAll(*c, acc.data(), cocclFloat32, n);
        std::vector<uint8_t> out(want.size()), dec(n * elemSize(dt)), want2(n * elemSize(dt));
        std::vector<float> scratch(n);
        c->decodeReduceEncode(ins.data(), p, self, in[self].data(), dt, n, scale, out.data(),
                              scratch.data(), dec.data());
        ASSERT_EQ(out, want) << spec << " " << dtName(dt) << " scale " << scale;
        c->decode(want.data(), n, dt, want2.data());
        ASSERT_EQ(dec, want2) << spec << " " << dtName(dt);
        // decodeAccumulate: acc + d1 + d2 + d3 in order
        std::vector<float> a1(n, 0.5f), a2(n, 0.5f);
        const void* three[3] = {enc[0].data(), enc[2].data(), enc[3].data()};
        c->decodeAccumulate(three[0], n, dt, a1.data());
        c->decodeAccumulate(three[1], n, dt, a1.data());
        c->decodeAccumulate(three[2], n, dt, a1.data());
        for (int k = 0; k < 3; ++k) {
          std::vector<float> d = decodeF32(*c, enc[k == 0 ? 0 : k + 1], n);
          for (size_t i = 0; i < n; ++i) a2[i] += d[i];
        }
        ASSERT_EQ(std::memcmp(a1.data(), a2.data(), 4 * n), 0) << spec;
      }
    }
  }
}

// RNE always rounds x = 0.3 steps down (bias -0.3 steps); stochastic rounding is unbiased: the
// mean error of 2^20 such elements is within 5 standard errors of 0; same input, same bytes
// (twice, on another thread); another seed, other bytes.
TEST(Int4, StochasticRoundingUnbiasedAndReproducible) {
  const size_t n = 1u << 20, g = 128;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = (i % g == 0) ? 7.0f : 2.3f;  // step = 1 (absmax 7)
  for (const char* spec : {"int4:rotate=0,round=stochastic,seed=1", "int4:rotate=0"}) {
    CodecPtr c = int4Codec(spec);
    std::vector<uint8_t> p = encodeAll(*c, x.data(), cocclFloat32, n);
    std::vector<float> d = decodeF32(*c, p, n);
    double sum = 0, sum2 = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; ++i)
      if (i % g) {
        const double e = double(d[i]) - 2.3;
        sum += e, sum2 += e * e, ++m;
      }
    const double mean = sum / double(m), se = std::sqrt(sum2 / double(m) / double(m));
    std::printf("%-40s mean error %+.5f steps (standard error %.5f)\n", spec, mean, se);
    if (std::strstr(spec, "stochastic")) {
      EXPECT_LT(std::fabs(mean), 5 * se + 1e-6) << spec;
      std::vector<uint8_t> again = encodeAll(*c, x.data(), cocclFloat32, n), other;
      std::thread th([&] { other = encodeAll(*c, x.data(), cocclFloat32, n); });
      th.join();
      EXPECT_EQ(p, again);
      EXPECT_EQ(p, other);
      CodecPtr c2 = int4Codec("int4:rotate=0,round=stochastic,seed=2");
      EXPECT_NE(p, encodeAll(*c2, x.data(), cocclFloat32, n));
    } else {
      EXPECT_NEAR(mean, -0.3, 1e-5) << spec;
    }
  }
  // Unbiased over a real distribution and rotation as well: mean error / rms error small.
  CodecPtr c = int4Codec("int4:rotate=1,round=stochastic,seed=5");
  std::vector<float> y = synth(Dist::Normal, n, 77);
  for (float& v : y) v += 0.25f;
  std::vector<float> d = decodeF32(*c, encodeAll(*c, y.data(), cocclFloat32, n), n);
  double sum = 0, sum2 = 0;
  for (size_t i = 0; i < n; ++i) sum += double(d[i]) - y[i], sum2 += (double(d[i]) - y[i]) * (double(d[i]) - y[i]);
  const double mean = sum / double(n), se = std::sqrt(sum2 / double(n) / double(n));
  EXPECT_LT(std::fabs(mean), 5 * se) << "rotated stochastic";
}

// Garbage payloads decode without crashing (the values are unspecified).
TEST(Int4, GarbagePayloadsAreMemorySafe) {
  CodecPtr c = int4Codec("int4:block=64");
  std::mt19937 rng(3);
  const size_t n = 1000;
  std::vector<uint8_t> p(c->encodedBytes(n, cocclBfloat16));
  for (uint8_t& b : p) b = static_cast<uint8_t>(rng());
  std::vector<uint16_t> out(n);
  c->decode(p.data(), n, cocclBfloat16, out.data());
  std::vector<float> acc(n, 0.0f);
  c->decodeAccumulate(p.data(), n, cocclBfloat16, acc.data());
  SUCCEED();
}

}  // namespace
}  // namespace test
}  // namespace coccl
