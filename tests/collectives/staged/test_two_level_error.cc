// Each level's error of the two-level (hier:) AllReduce and ReduceScatter (issue 16: "the error
// of each level measured and documented"), from the reference arithmetic that the host path and
// the device schedule match bit for bit (two_level_reference.h, test_two_level.cc):
//   intra level: the outputs with an exact inter-node level (the nodes' partial sums added in
//                fp64) against the fp64 sum of the inputs;
//   inter level: the outputs against those level-1 sums;
//   total:       the outputs against the fp64 sum.
// Relative L2 over all outputs, on synthetic gradients (zero-mean, mean-shifted, heavy-tailed,
// outlier channels; fp32) and on the real tensor-parallel payloads of ../shared/data (bf16, TP
// size 4: each tensor's four ranks as 2 nodes of 2). The bounds are the measured values + 25%
// (perf/RESULTS.md, "Two levels: the error of each level"); neither level's error may vanish,
// and total^2 ~ intra^2 + inter^2 (the levels' errors are nearly independent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "codecs/abi/registry.h"
#include "tp_data.h"
#include "two_level_reference.h"

namespace coccl {
namespace test {
namespace {

struct LevelErrors {
  double intra = 0, inter = 0, total = 0;
};

// in: p inputs of type c.dt; their fp64 values are taken from the bytes.
LevelErrors levelErrors(const Case& c, const std::vector<std::vector<char>>& in) {
  const CodecPtr intra = makeCodec(c.intra), inter = makeCodec(c.inter);
  std::vector<size_t> wire;
  std::vector<std::vector<double>> level1;
  const auto out = reference(c, *intra, *inter, in, size_t{1} << 20, &wire, &level1);
  auto toFloats = [&](const std::vector<char>& b) {  // exact: -0 + x is x
    std::vector<float> f(b.size() / dtypeSize(c.dt), -0.0f);
    accumulateToFloat(b.data(), c.dt, f.size(), f.data());
    return f;
  };
  std::vector<std::vector<float>> x;
  for (const auto& b : in) x.push_back(toFloats(b));
  double e1 = 0, e2 = 0, et = 0, ref = 0;
  const int outs = c.allReduce ? 1 : c.p;  // AllReduce outputs are the same on every rank
  for (int r = 0; r < outs; ++r) {
    const std::vector<float> o = toFloats(out[static_cast<size_t>(r)]);
    for (size_t i = 0; i < c.count; ++i) {
      const size_t at = c.allReduce ? i : static_cast<size_t>(r) * c.count + i;
      double exact = 0;
      for (int q = 0; q < c.p; ++q) exact += x[static_cast<size_t>(q)][at];
      if (c.op == cocclAvg) exact /= c.p;
      const double l1 = level1[static_cast<size_t>(r)][i];
      e1 += (l1 - exact) * (l1 - exact);
      e2 += (o[i] - l1) * (o[i] - l1);
      et += (o[i] - exact) * (o[i] - exact);
      ref += exact * exact;
    }
  }
  return {std::sqrt(e1 / ref), std::sqrt(e2 / ref), std::sqrt(et / ref)};
}

std::vector<char> toBytes(const std::vector<float>& v, cocclDataType_t dt) {
  std::vector<char> b(v.size() * dtypeSize(dt));
  convertFromFloat(v.data(), v.size(), dt, b.data());
  return b;
}

// Gradient-like inputs: rank r draws from N(mu, 1) scaled by 1 + r / 4 (mu per distribution),
// Laplace, Student-t(3), or N(0, 1) with outlier channels x30.
std::vector<float> gradient(int kind, size_t n, int r) {
  std::mt19937_64 rng(1000 * static_cast<uint64_t>(kind) + static_cast<uint64_t>(r));
  std::normal_distribution<double> nd(0.0, 1.0);
  std::exponential_distribution<double> ed(1.0);
  std::student_t_distribution<double> td(3.0);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    double x = kind == 2 ? ((rng() & 1) ? 1.0 : -1.0) * ed(rng) : kind == 3 ? td(rng) : nd(rng);
    if (kind == 1) x += 1.0;
    if (kind == 4 && (i % 1024 == 17 || i % 1024 == 611)) x *= 30.0;
    v[i] = static_cast<float>(x * (1.0 + r / 4.0));
  }
  return v;
}
const char* const kKinds[5] = {"N(0,1)", "N(1,1)", "Laplace", "Student-t(3)", "outlier channels"};

void loadInt4() {
#ifdef COCCL_INT4_PLUGIN
  loadCodecPlugin(COCCL_INT4_PLUGIN);
#endif
}

// Measured (cpu-vm, 2026-12-05), relative L2 in %: intra level, inter level, total; per
// (layout, collective) over the five synthetic kinds, the largest.
struct Limit {
  int p, L;
  bool allReduce;
  double intra, inter, total;
};

TEST(TwoLevelError, EachLevelOnSyntheticGradients) {
#ifndef COCCL_INT4_PLUGIN
  GTEST_SKIP() << "no int4 plug-in in this build";
#endif
  loadInt4();
  const Limit limits[] = {
#include "two_level_error_limits.inc"
  };
  std::printf("%-6s %-14s %-17s %9s %9s %9s\n", "nodes", "collective", "data", "intra %",
              "inter %", "total %");
  for (const Limit& lim : limits) {
    for (int kind = 0; kind < 5; ++kind) {
      Case c{lim.p, lim.L, "int8", "int4", lim.allReduce, cocclFloat32, cocclSum,
             lim.allReduce ? size_t{1} << 16 : size_t{1} << 14, false};
      const size_t inCount = lim.allReduce ? c.count : c.count * static_cast<size_t>(c.p);
      std::vector<std::vector<char>> in;
      for (int r = 0; r < c.p; ++r) in.push_back(toBytes(gradient(kind, inCount, r), c.dt));
      const LevelErrors e = levelErrors(c, in);
      std::printf("%dx%-4d %-14s %-17s %9.3f %9.3f %9.3f\n", c.p / c.L, c.L,
                  c.allReduce ? "AllReduce" : "ReduceScatter", kKinds[kind], 100 * e.intra,
                  100 * e.inter, 100 * e.total);
      EXPECT_LE(100 * e.intra, lim.intra * 1.25) << name(c) << " " << kKinds[kind];
      EXPECT_LE(100 * e.inter, lim.inter * 1.25) << name(c) << " " << kKinds[kind];
      EXPECT_LE(100 * e.total, lim.total * 1.25) << name(c) << " " << kKinds[kind];
      // Both levels quantise: neither error vanishes (the smallest measured intra level is
      // 0.20%, inter 5.3%); the two are nearly independent, so their squares add up.
      EXPECT_GE(100 * e.intra, 0.1) << name(c) << " " << kKinds[kind];
      EXPECT_GE(100 * e.inter, 2.5) << name(c) << " " << kKinds[kind];
      EXPECT_NEAR(e.total, std::hypot(e.intra, e.inter), 0.05 * e.total)
          << name(c) << " " << kKinds[kind];
      // The intra level (int8) errs far less than the inter level (int4).
      EXPECT_LT(e.intra, 0.5 * e.inter) << name(c) << " " << kKinds[kind];
    }
  }
  std::fflush(stdout);
}

TEST(TwoLevelError, EachLevelOnRealTensorParallelPayloads) {
#ifndef COCCL_INT4_PLUGIN
  GTEST_SKIP() << "no int4 plug-in in this build";
#endif
  loadInt4();
  const std::string dir = findTpDataDir();
  if (dir.empty()) GTEST_SKIP() << "no tp_tensors_manifest.json: real-data test skipped";
  const std::vector<TpCase> cases = loadTpCases(dir);
  std::vector<double> intra, inter, total;
  for (const TpCase& tc : cases) {
    if (tc.ranks.size() != 4) continue;
    const size_t n = tc.ranks[0].size();
    std::vector<std::vector<char>> in;
    for (const auto& rank : tc.ranks) {  // the bf16 bits as bytes (gcc 13 -O3 cannot bound
      const char* b = reinterpret_cast<const char*>(rank.data());  // a memcpy of 2 * n)
      in.emplace_back(b, b + rank.size() * sizeof(rank[0]));
    }
    Case c{4, 2, "int8", "int4", true, cocclBfloat16, cocclSum, n, false};
    const LevelErrors e = levelErrors(c, in);
    intra.push_back(100 * e.intra);
    inter.push_back(100 * e.inter);
    total.push_back(100 * e.total);
  }
  ASSERT_GE(intra.size(), 4u) << "too few 4-rank cases";
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto most = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  std::printf("real TP payloads, 2 nodes x 2, AllReduce bf16, %zu tensors: median / max relative L2 "
              "%%: intra %.3f / %.3f, inter %.3f / %.3f, total %.3f / %.3f\n",
              intra.size(), median(intra), most(intra), median(inter), most(inter), median(total),
              most(total));
  std::fflush(stdout);
  const double kRealLimits[6] = {
#include "two_level_error_real.inc"
  };
  EXPECT_GE(median(intra), 0.5 * kRealLimits[0]);
  EXPECT_GE(median(inter), 0.5 * kRealLimits[2]);
  EXPECT_LE(median(intra), 1.25 * kRealLimits[0]);
  EXPECT_LE(most(intra), 1.25 * kRealLimits[1]);
  EXPECT_LE(median(inter), 1.25 * kRealLimits[2]);
  EXPECT_LE(most(inter), 1.25 * kRealLimits[3]);
  EXPECT_LE(median(total), 1.25 * kRealLimits[4]);
  EXPECT_LE(most(total), 1.25 * kRealLimits[5]);
}

}  // namespace
}  // namespace test
}  // namespace coccl
