// The int4 plug-in's host operations are built once per instruction set (plugins/int4/
// int4_host_ops.h: generic, and AVX2 on x86-64) and picked at create(); COCCL_INT4_HOST_ISA
// forces one. Every build must give the same bytes: encode, decode, decodeAccumulate and
// decodeReduceEncode of every block size, mode, rounding and dtype, on synthetic data with
// every special value (NaN, +-Inf, huge, subnormal, zero blocks, exact-zero ReLU blocks) and
// partial last blocks, compared byte for byte with the generic build.
#include <cstdlib>
#include <cstring>

#include "int4_test_util.h"

namespace coccl {
namespace test {
namespace {

const cocclDataType_t kTypes[3] = {cocclFloat32, cocclFloat16, cocclBfloat16};

// The codec for `spec` with the host build `isa` ("" = the variable unset: auto).
CodecPtr int4WithIsa(const std::string& spec, const char* isa) {
  if (*isa) setenv("COCCL_INT4_HOST_ISA", isa, 1);
  else unsetenv("COCCL_INT4_HOST_ISA");
  CodecPtr c = int4Codec(spec);
  unsetenv("COCCL_INT4_HOST_ISA");
  return c;
}

bool haveAvx2Build() {
  try {
    int4WithIsa("int4", "avx2");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Mixed data: blocks drawn from several distributions, scales from 2^-110 to 2^100, special
// values and exact zeros, so that every block mode (RAW, ZERO, ROTATED, PLAIN) occurs.
std::vector<float> mixedInput(size_t n, uint64_t seed) {
  std::vector<float> v = gsynth(allGDists()[seed % allGDists().size()], n, seed);
  std::mt19937_64 rng(seed * 7919 + 1);
  const size_t seg = 96;  // not a block size: modes change inside blocks too
  for (size_t s = 0; s * seg < n; ++s) {
    const int kind = static_cast<int>(rng() % 10);
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 211) - 110);
    for (size_t i = s * seg; i < std::min(n, (s + 1) * seg); ++i) {
      if (kind == 0) v[i] = 0.0f;
      else if (kind == 1) v[i] = std::max(v[i], 0.0f);
      else if (kind <= 4) v[i] *= scale;
    }
    if (kind == 5) v[s * seg] = NAN;
    if (kind == 6) v[std::min(n - 1, s * seg + 5)] = (rng() & 1) ? INFINITY : -INFINITY;
    if (kind == 7) v[s * seg] = 3.0e38f;
  }
  return v;
}

TEST(Int4HostIsa, BadValuesAreRefusedWithAMessage) {
  try {
    int4WithIsa("int4", "sse9");
    FAIL() << "COCCL_INT4_HOST_ISA=sse9 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("COCCL_INT4_HOST_ISA"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(int4WithIsa("int4", "generic"));
  EXPECT_NO_THROW(int4WithIsa("int4", "auto"));
  EXPECT_NO_THROW(int4WithIsa("int4", ""));
}

TEST(Int4HostIsa, EveryBuildGivesTheGenericBytes) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
#else
  GTEST_SKIP() << "only x86-64 has a second build";
#endif
  ASSERT_TRUE(haveAvx2Build()) << "an x86-64 build with an AVX2 CPU must offer the AVX2 build";
  const std::vector<std::string> specs = {
      "int4",          "int4:block=32,rotate=0", "int4:block=64,rotate=1",
      "int4:block=256", "int4:block=2048",       "int4:block=128,round=stochastic,seed=5",
      "int4:block=512,rotate=1,round=stochastic,seed=11"};
  size_t compared = 0;
  for (const std::string& spec : specs) {
    CodecPtr gen = int4WithIsa(spec, "generic"), vec = int4WithIsa(spec, "avx2");
    const size_t g = gen->blockElems();
    for (size_t n : {size_t{1}, g - 1, 3 * g + 17, 40 * g}) {
      for (cocclDataType_t dt : kTypes) {
        const int p = 3, self = 1;
        std::vector<Typed> in;
        std::vector<std::vector<uint8_t>> enc(p);
        for (int r = 0; r < p; ++r) {
          in.push_back(makeTyped(mixedInput(n, 100 * n + 10 * r + g), dt));
          enc[r] = encodeAll(*gen, in[r].data(), dt, n);
          ASSERT_EQ(encodeAll(*vec, in[r].data(), dt, n), enc[r]) << spec << " " << dtName(dt) << " n " << n;
        }
        const size_t es = elemSize(dt);
        std::vector<uint8_t> d1(n * es), d2(n * es);
        gen->decode(enc[0].data(), n, dt, d1.data());
        vec->decode(enc[0].data(), n, dt, d2.data());
        ASSERT_EQ(d1, d2) << spec << " decode " << dtName(dt);
        std::vector<float> a1(n, 0.25f), a2(n, 0.25f);
        const void* ins[3] = {enc[0].data(), enc[1].data(), enc[2].data()};
        gen->decodeAccumulateMany(ins, p, n, dt, a1.data());
        vec->decodeAccumulateMany(ins, p, n, dt, a2.data());
        ASSERT_EQ(std::memcmp(a1.data(), a2.data(), 4 * n), 0) << spec << " decodeAccumulate";
        for (float scale : {1.0f, 1.0f / 3}) {
          std::vector<uint8_t> o1(enc[0].size()), o2(enc[0].size()), x1(n * es), x2(n * es);
          std::vector<float> scratch(n);
          gen->decodeReduceEncode(ins, p, self, in[self].data(), dt, n, scale, o1.data(),
                                  scratch.data(), x1.data());
          vec->decodeReduceEncode(ins, p, self, in[self].data(), dt, n, scale, o2.data(),
                                  scratch.data(), x2.data());
          ASSERT_EQ(o1, o2) << spec << " decodeReduceEncode " << dtName(dt);
          ASSERT_EQ(x1, x2) << spec << " decodeReduceEncode's decoded " << dtName(dt);
        }
        compared += n * p;
      }
    }
  }
  RecordProperty("elements_compared", static_cast<int>(compared));
}

}  // namespace
}  // namespace test
}  // namespace coccl
