// Helpers of the int4 plug-in tests: loading the plug-in into coccl's registry, synthetic
// gradient-like data (SDP4Bit's concerns: mean shifts, one-sided data, heavy tails, outlier
// channels) and the relative L2 error against the exact (fp64) input.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "codec_test_util.h"
#include "codecs/abi/registry.h"

namespace coccl {
namespace test {

inline CodecPtr int4Codec(const std::string& spec) {
  loadCodecPlugin(COCCL_INT4_PLUGIN);  // a second load of the same file returns its name
  return makeCodec(spec);
}

enum class GDist { Normal, Shift05, Shift1, Shift4, Relu, Laplace, StudentT3, Outliers };

inline const std::vector<GDist>& allGDists() {
  static const std::vector<GDist> k = {GDist::Normal, GDist::Shift05, GDist::Shift1,
                                       GDist::Shift4, GDist::Relu,    GDist::Laplace,
                                       GDist::StudentT3, GDist::Outliers};
  return k;
}

inline const char* gdistName(GDist d) {
  switch (d) {
    case GDist::Normal: return "N(0,1)";
    case GDist::Shift05: return "N(0.5,1)";
    case GDist::Shift1: return "N(1,1)";
    case GDist::Shift4: return "N(4,1)";
    case GDist::Relu: return "ReLU(N(0,1))";
    case GDist::Laplace: return "Laplace";
    case GDist::StudentT3: return "Student-t(3)";
    default: return "outlier-channels";
  }
}

inline std::vector<float> gsynth(GDist d, size_t n, uint64_t seed) {
  switch (d) {
    case GDist::Laplace: return synth(Dist::Laplace, n, seed);
    case GDist::StudentT3: return synth(Dist::StudentT3, n, seed);
    case GDist::Outliers: return synth(Dist::OutlierChannels, n, seed);
    default: break;
  }
  std::vector<float> v = synth(Dist::Normal, n, seed);
  const float mu = d == GDist::Shift05 ? 0.5f : d == GDist::Shift1 ? 1.0f : d == GDist::Shift4 ? 4.0f : 0.0f;
  for (float& x : v) x = d == GDist::Relu ? std::max(x, 0.0f) : x + mu;
  return v;
}

}  // namespace test
}  // namespace coccl
