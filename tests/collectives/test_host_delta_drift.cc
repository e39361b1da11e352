// cocclAllGatherDelta on host ranks: a 1,000-step slowly drifting weight vector with int4,
// int8 and fp8_ash_ds whose error against the fp64 truth stays within one quantization of each
// step's encoded difference (the codec's errorBound of that difference's block) and does not
// grow with the steps, beside the naive "quantize the full weights every step" AllGather; and
// short drifts of 16-bit weights under the same rule.
//
// COCCL_DELTA_PRINT=1 prints the per-step figures of the drift test (perf/RESULTS.md).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"
#include "host_delta_util.h"

namespace coccl::test {
namespace {

using namespace delta;

// ---- the 1,000-step drift ----------------------------------------------------------------------

// Per step t (0 = the reset call): the largest |recvbuff - w_t| (w_t the fp64 truth) over the
// shard, the rms of the step w_t - w_{t-1}, the number of elements outside the bound, the
// naive AllGather's and the open loop's errors.
struct StepStats {
  double maxErr = 0, sumSqErr = 0, sumSqW = 0, stepSq = 0, bound = 0, naiveMax = 0, naiveSumSq = 0,
         openMax = 0, openSumSq = 0;
  size_t outside = 0;
};

struct DriftResult {
  std::vector<std::vector<StepStats>> perRank;  // [rank][step]
};

// One rank of the drift: w0 ~ N(0,1), w_t = w_{t-1} + s (g_t + b), g_t ~ N(0,1) fresh each
// step, b ~ N(0, 1/4) a fixed per-element drift direction, s = 1e-3. Sent as fp32. Every rank
// draws every rank's trajectory (one generator per rank), so it knows the truth of every shard.
// Beside the real call, two comparisons on the same trajectory: the naive AllGather of the
// full weights through the same codec, and an open-loop difference (the owner's reference is
// its own exact previous weights, not the reconstruction: its own shard of a second buffer is
// overwritten before each call), whose error on the other ranks' copies accumulates.
void driftRank(Rank& r, const char* spec, size_t n, int steps, std::vector<StepStats>& stats) {
  CodecHandle codec(spec);
  const int p = r.nranks;
  const size_t G = codec.block();
  std::vector<std::mt19937_64> rng;
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<std::vector<double>> w(p, std::vector<double>(n)), bias = w;
  for (int q = 0; q < p; ++q) {
    rng.emplace_back(1000 + q);
    for (size_t i = 0; i < n; ++i) w[q][i] = nd(rng[q]), bias[q][i] = 0.5 * nd(rng[q]);
  }
  std::vector<float> send(n), out(n * p), naive(n * p), prev(n), open(n * p);
  const double s = 1e-3;
  stats.assign(static_cast<size_t>(steps) + 1, StepStats{});
  std::vector<double> wPrev = w[r.rank];
  for (int t = 0; t <= steps; ++t) {
    if (t > 0)
      for (int q = 0; q < p; ++q)
        for (size_t i = 0; i < n; ++i) w[q][i] += s * (nd(rng[q]) + bias[q][i]);
    const std::vector<double>& wm = w[r.rank];
    float* openMine = open.data() + r.rank * n;
    std::copy(send.begin(), send.end(), openMine);  // open loop: my exact previous weights
    for (size_t i = 0; i < n; ++i) send[i] = static_cast<float>(wm[i]);
    float* mine = out.data() + r.rank * n;
    std::copy(mine, mine + n, prev.begin());
    StepStats& S = stats[static_cast<size_t>(t)];
    ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                  t == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr),
              cocclSuccess)
        << "step " << t << ": " << cocclGetLastError(r.comm);

    if (t == 1) {  // the statistics of a difference call (one chunk or several)
      cocclCollStats_t st{};
      ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
      EXPECT_EQ(std::string(st.codec).rfind(std::string(spec).substr(0, 4), 0), 0u) << st.codec;
      EXPECT_STREQ(st.algorithm, "delta/direct");
      EXPECT_EQ(st.logicalBytes, n * p * sizeof(float));
      EXPECT_LT(st.wireBytesSent, (p - 1) * n * sizeof(float) / 3);
    }
    // Naive: the full weights quantized every step (the same codec, one encode/decode).
    ASSERT_EQ(
        cocclAllGatherCodec(send.data(), naive.data(), n, cocclFloat32, codec.c, r.comm, nullptr),
        cocclSuccess);
    ASSERT_EQ(cocclAllGatherDelta(send.data(), open.data(), n, cocclFloat32, codec.c,
                                  t == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr),
              cocclSuccess);
    // The encoded difference d = fp32(new) - fp32(prev), block by block from the shard's
    // first element (chunks are whole blocks); its bound per block.
    for (size_t b0 = 0; b0 < n; b0 += G) {
      const size_t b1 = std::min(n, b0 + G);
      double sq = 0, mx = 0;
      for (size_t i = b0; i < b1; ++i) {
        const double d = t == 0 ? 0.0 : static_cast<double>(send[i] - prev[i]);
        sq += d * d;
        mx = std::max(mx, std::fabs(d));
      }
      const double B = t == 0 ? 0.0 : codec.bound(std::sqrt(sq / static_cast<double>(G)), mx);
      S.bound = std::max(S.bound, B);
      for (size_t i = b0; i < b1; ++i) {
        const double got = mine[i];
        const double e = std::fabs(got - wm[i]);
        // one quantization of d, plus the fp32 roundings (of w, of d, of the sum)
        const double tol = B * (1 + 0x1p-20) + 0x1p-22 * std::max(std::fabs(wm[i]), std::fabs(got));
        if (!(e <= tol)) {
          if (S.outside++ == 0)
            ADD_FAILURE() << spec << " step " << t << " rank " << r.rank << " element " << i
                          << ": error " << e << " > bound " << tol;
        }
        S.maxErr = std::max(S.maxErr, e);
        S.sumSqErr += e * e;
        S.sumSqW += wm[i] * wm[i];
        const double st = wm[i] - wPrev[i];
        S.stepSq += st * st;
        const double ne = std::fabs(static_cast<double>(naive[r.rank * n + i]) - wm[i]);
        S.naiveMax = std::max(S.naiveMax, ne);
        S.naiveSumSq += ne * ne;
      }
    }
    // The open loop's error on the next rank's shard as this rank holds it.
    const int q = (r.rank + 1) % p;
    for (size_t i = 0; i < n && p > 1; ++i) {
      const double e = std::fabs(static_cast<double>(open[q * n + i]) - w[q][i]);
      S.openMax = std::max(S.openMax, e);
      S.openSumSq += e * e;
    }
    wPrev = wm;
    // Every rank holds the same bits.
    ASSERT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size() * sizeof(float))))
        << spec << " step " << t << ": recvbuff differs across ranks";
    if (t == 0) {
      ASSERT_EQ(std::memcmp(mine, send.data(), n * sizeof(float)), 0) << "reset not exact";
    }
  }
}

class HostDeltaDrift : public ::testing::TestWithParam<const char*> {};

TEST_P(HostDeltaDrift, ThousandStepsErrorStaysAtOneQuantization) {
  setupEnv();
  const char* spec = GetParam();
  if (std::string(spec).rfind("int4", 0) == 0 && !haveInt4()) GTEST_SKIP() << "no int4 plug-in";
  const int p = 3, steps = 1000;
  const size_t n = 4099;  // not a multiple of any block; 8 KiB chunks: 3 chunks of fp32
  std::vector<std::vector<StepStats>> all(p);
  runRanks(
      p, Mode::Threads, [&](Rank& r) { driftRank(r, spec, n, steps, all[r.rank]); }, options(8192));
  ASSERT_FALSE(::testing::Test::HasFailure());
  // Over all ranks, per step: the largest error, the relative L2 error, the step's rms, the
  // naive AllGather's largest error and relative L2.
  std::vector<double> maxErr(steps + 1), rel(steps + 1), stepRms(steps + 1), naiveMax(steps + 1),
      naiveRel(steps + 1), bound(steps + 1), openMax(steps + 1), openRel(steps + 1);
  for (int t = 0; t <= steps; ++t) {
    double se = 0, sw = 0, ss = 0, ns = 0, os = 0;
    for (int q = 0; q < p; ++q) {
      const StepStats& S = all[q][t];
      maxErr[t] = std::max(maxErr[t], S.maxErr);
      naiveMax[t] = std::max(naiveMax[t], S.naiveMax);
      openMax[t] = std::max(openMax[t], S.openMax);
      bound[t] = std::max(bound[t], S.bound);
      se += S.sumSqErr, sw += S.sumSqW, ss += S.stepSq, ns += S.naiveSumSq, os += S.openSumSq;
    }
    rel[t] = std::sqrt(se / sw);
    naiveRel[t] = std::sqrt(ns / sw);
    openRel[t] = std::sqrt(os / sw);
    stepRms[t] = std::sqrt(ss / static_cast<double>(n * p));
  }
  const bool print = getenv("COCCL_DELTA_PRINT") != nullptr;
  for (int t : {0, 1, 10, 100, 1000}) {
    std::printf(
        "%s step %4d: max|err| %.3e (%.3f of the step rms %.3e; largest bound %.3e), rel L2 "
        "%.3e; naive max|err| %.3e rel L2 %.3e; open loop max|err| %.3e rel L2 %.3e\n",
        spec, t, maxErr[t], t ? maxErr[t] / stepRms[t] : 0.0, stepRms[t], bound[t], rel[t],
        naiveMax[t], naiveRel[t], openMax[t], openRel[t]);
  }
  if (print)
    for (int t = 0; t <= steps; ++t)
      std::printf("%s,%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e\n", spec, t, maxErr[t], rel[t],
                  stepRms[t], naiveMax[t], naiveRel[t], openMax[t], openRel[t]);
  // The reset call is exact (up to the fp32 rounding of the truth).
  EXPECT_LE(maxErr[0], 1e-6);
  // Not growing: the mean largest error of the last 100 steps is within 1.5x that of steps
  // 1..100 (the per-element bound above already held at every step).
  double early = 0, late = 0;
  for (int t = 1; t <= 100; ++t) early += maxErr[t];
  for (int t = steps - 99; t <= steps; ++t) late += maxErr[t];
  EXPECT_LE(late, 1.5 * early) << spec << ": the error grew from " << early / 100 << " to "
                               << late / 100;
  // One quantization of a step: the error stays a fraction of a step's size, while the naive
  // AllGather's error is a quantization of the whole weights (>= 10x larger here).
  for (int t = 1; t <= steps; ++t) {
    ASSERT_LE(maxErr[t], 2.0 * stepRms[t] * 4) << spec << " step " << t;
    ASSERT_LE(10 * maxErr[t], naiveMax[t]) << spec << " step " << t;
  }
  // The open loop (reference = the owner's exact previous weights) accumulates: its error
  // after 1,000 steps is several times its error after 10, and several times the real call's.
  EXPECT_GE(openRel[steps], 3 * openRel[10]) << spec;
  EXPECT_GE(openRel[steps], 5 * rel[steps]) << spec;
}

INSTANTIATE_TEST_SUITE_P(Codecs, HostDeltaDrift, ::testing::Values("int4", "int8", "fp8_ash_ds"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

// ---- 16-bit weights: short drifts, the same rule --------------------------------------------

TEST(HostDelta, SixteenBitWeightsDriftWithinOneQuantization) {
  setupEnv();
  const int p = 2, steps = 100;
  const size_t n = 3001;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        CodecHandle codec("int8");
        const size_t G = codec.block();
        for (cocclDataType_t dt : {cocclBfloat16, cocclFloat16}) {
          const size_t es = elemSize(dt);
          std::mt19937_64 rng(50 + r.rank);
          std::normal_distribution<double> nd(0.0, 1.0);
          std::vector<double> w(n);
          for (double& x : w) x = nd(rng);
          std::vector<uint8_t> send(n * es), out(n * p * es, 0xFF);
          for (int t = 0; t <= steps; ++t) {
            if (t > 0)
              for (double& x : w) x += 0.02 * nd(rng);  // a few bf16 ulps a step
            for (size_t i = 0; i < n; ++i) setElem(dt, send.data(), i, w[i]);
            std::vector<double> prev(n);
            for (size_t i = 0; i < n; ++i) prev[i] = at(dt, out, r.rank * n + i);
            ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, dt, codec.c,
                                          t == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr),
                      cocclSuccess)
                << cocclGetLastError(r.comm);
            for (size_t b0 = 0; b0 < n; b0 += G) {
              const size_t b1 = std::min(n, b0 + G);
              double sq = 0, mx = 0;
              for (size_t i = b0; i < b1; ++i) {
                const double d = t ? at(dt, send, i) - prev[i] : 0.0;
                sq += d * d, mx = std::max(mx, std::fabs(d));
              }
              const double B = t ? codec.bound(std::sqrt(sq / G), mx) : 0.0;
              for (size_t i = b0; i < b1; ++i) {
                const double sent = at(dt, send, i), got = at(dt, out, r.rank * n + i);
                // one quantization of d, then the rounding to the 16-bit type (half an ulp)
                const double ulp = dt == cocclBfloat16 ? 0x1p-7 : 0x1p-10;
                const double tol = B + 0.5 * ulp * std::max(std::fabs(sent), std::fabs(got)) * 1.01;
                ASSERT_LE(std::fabs(got - sent), tol)
                    << typeName(dt) << " step " << t << " element " << i;
              }
            }
            ASSERT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size())));
          }
        }
      },
      options());
}

}  // namespace
}  // namespace coccl::test
