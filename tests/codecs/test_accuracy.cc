// Accuracy of one encode/decode on synthetic distributions (relative L2 error against the exact
// input, decode to fp32), the per-element bound, and the compression ratios.
#include <gtest/gtest.h>

#include <cstdio>
#include <iostream>

#include "codec_test_util.h"

namespace coccl {
namespace test {
namespace {

constexpr size_t kRows = 256, kCols = 1024;
const Dist kDists[] = {Dist::Normal, Dist::Laplace, Dist::StudentT3, Dist::OutlierChannels};

struct Limit {
  const char* spec;
  double maxRelL2;  // 0: print only
};

void runTable(const std::vector<Limit>& limits) {
  std::printf("%-34s %-5s %-17s %9s %12s\n", "codec", "dtype", "distribution", "rel L2",
              "max err/bnd");
  for (const Limit& l : limits) {
    CodecPtr c = makeCodec(l.spec);
    for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32}) {
      for (Dist d : kDists) {
        Typed t = makeTyped(synth(d, kRows * kCols, 1234 + static_cast<int>(d)), dt);
        std::vector<float> out = roundTrip(*c, t);
        double e = relL2(out, t.exact);
        double worst = 0;
        size_t bad = countOutOfBound(*c, out, t.exact, &worst);
        std::printf("%-34s %-5s %-17s %8.4f%% %12.4f\n", l.spec, dtName(dt), distName(d), 100 * e,
                    worst);
        if (l.maxRelL2 > 0) {
          EXPECT_LE(e, l.maxRelL2) << l.spec << " " << dtName(dt) << " " << distName(d);
        }
        EXPECT_EQ(bad, 0u) << l.spec << " " << dtName(dt) << " " << distName(d);
      }
    }
  }
  std::fflush(stdout);
}

TEST(Accuracy, Int8Block128WithinBound) {
  runTable({{"int8", 0.007}});
}

TEST(Accuracy, Fp8AshDsBlock128WithinBound) {
  runTable({{"fp8_ash_ds", 0.028}});
}

// Other block sizes, the unrotated INT8 and E5M2: printed for the README, checked against the
// per-element bound only.
TEST(Accuracy, OtherConfigurationsPrinted) {
  runTable({{"int8:rotate=0", 0},
            {"int8:block=32", 0},
            {"int8:block=512", 0},
            {"fp8_ash_ds:block=32", 0},
            {"fp8_ash_ds:block=512", 0},
            {"fp8_ash_ds:format=e5m2", 0}});
}

// TACO's ablations (rotate=0: no Hadamard transform; alpha_min=alpha_max=1: no adaptive scale):
// the per-element bound holds, and the relative L2 error stays below the default's limit
// (cpu-vm, 2026-12-01: rotate=0 1.23-2.57% on these distributions, the transform 2.57-2.68%:
// FP8's exponent already covers heavy tails; alpha fixed at 1 gives the default's bytes here).
TEST(Accuracy, Fp8AshDsAblationsWithinBound) {
  runTable({{"fp8_ash_ds:rotate=0", 0.028},
            {"fp8_ash_ds:block=32,rotate=0", 0},
            {"fp8_ash_ds:alpha_min=1,alpha_max=1", 0.028}});
}

TEST(Accuracy, CompressionRatios) {
  const size_t n = size_t(1) << 20;
  std::printf("%-24s %6s %10s %10s\n", "codec", "block", "vs bf16", "vs fp32");
  for (const char* name : {"int8", "fp8_ash_ds"}) {
    for (size_t g : blockSizes()) {
      CodecPtr c = makeCodec(std::string(name) + ":block=" + std::to_string(g));
      size_t bytes = c->encodedBytes(n, cocclBfloat16);
      EXPECT_EQ(bytes, n / g * (g + 4));
      EXPECT_EQ(bytes, codecGeometry(c->deviceDesc()).payloadBytes(n));
      std::printf("%-24s %6zu %10.4f %10.4f\n", name, g, 2.0 * n / bytes, 4.0 * n / bytes);
    }
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace test
}  // namespace coccl
