// cocclAllGatherDelta on host ranks (threads): the weight-difference AllGather of SDP4Bit
// (issue: 4-bit data parallelism, qWD). Exact first call (COCCL_DELTA_RESET); a 1,000-step
// slowly drifting weight vector with int4, int8 and fp8_ash_ds whose error against the fp64
// truth stays within one quantization of each step's encoded difference (the codec's
// errorBound of that difference's block) and does not grow with the steps, beside the naive
// "quantize the full weights every step" AllGather; mismatched calls (reset flag, count, type,
// codec) fail on every rank and leave recvbuff alone; counts that are not multiples of the
// block, several chunks, bitwise identical recvbuff on every rank, wire bytes, the policy,
// in-place and flag checks, non-finite values.
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

namespace coccl::test {
namespace {

constexpr size_t kHeader = 128;  // the agreement header, per peer
// An exact call also runs an AllGather, which sends its call descriptor (call_desc.h) to each peer.
constexpr size_t kCallDesc = 128;

bool haveInt4() {
#ifdef COCCL_INT4_PLUGIN
  return true;
#else
  return false;
#endif
}

// COCCL_* variables are read once per process: before the first coccl call.
void setupEnv() {
#ifdef COCCL_INT4_PLUGIN
  setenv("COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN, 1);
#endif
}

RunOptions options(long long chunkBytes = -1) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  o.config.compressMinBytes = 0;
  if (chunkBytes > 0) o.config.chunkBytes = chunkBytes;
  return o;
}

// Element i of a typed buffer as a double / stored from a double (RNE).
double at(cocclDataType_t dt, const std::vector<uint8_t>& buf, size_t i) {
  return getElem(dt, buf.data(), i);
}

// ---- the exact first call ---------------------------------------------------------------------

TEST(HostDelta, ResetCallIsExactOnEveryType) {
  setupEnv();
  const int p = 3;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        CodecHandle codec("int8");
        for (cocclDataType_t dt : {cocclFloat32, cocclFloat16, cocclBfloat16})
          for (size_t n : {size_t{1}, size_t{1000}, size_t{5003}})
            for (bool inPlace : {false, true}) {
              const size_t es = elemSize(dt);
              RankData mine = syntheticInput(dt, n, r.rank, 7 + n);
              Guarded out(n * p * es, 0xFF);  // NaN patterns: recvbuff is not read
              const void* send = mine.bytes.data();
              if (inPlace) {
                std::memcpy(static_cast<char*>(out.data()) + r.rank * n * es, send, n * es);
                send = static_cast<char*>(out.data()) + r.rank * n * es;
              }
              ASSERT_EQ(cocclAllGatherDelta(send, out.data(), n, dt, codec.c, COCCL_DELTA_RESET,
                                            r.comm, nullptr),
                        cocclSuccess)
                  << cocclGetLastError(r.comm);
              for (int q = 0; q < p; ++q) {
                RankData theirs = syntheticInput(dt, n, q, 7 + n);
                ASSERT_EQ(std::memcmp(static_cast<char*>(out.data()) + q * n * es,
                                      theirs.bytes.data(), n * es),
                          0)
                    << typeName(dt) << " n " << n << ": shard " << q << " not exact";
              }
              EXPECT_TRUE(out.guardsIntact());
              cocclCollStats_t st{};
              ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
              EXPECT_STREQ(st.codec, "none");
              EXPECT_EQ(st.wireBytesSent, (p - 1) * (kHeader + kCallDesc + n * es));
              EXPECT_EQ(st.logicalBytes, n * p * es);
            }
      },
      options());
}

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

// ---- agreement ------------------------------------------------------------------------------

// Every rank gets cocclInvalidUsage naming `field`, recvbuff stays as it was, and the next
// agreed call works.
void expectDisagreement(Rank& r, cocclResult_t res, const std::vector<float>& before,
                        const std::vector<float>& out, const char* field) {
  EXPECT_EQ(res, cocclInvalidUsage) << "rank " << r.rank;
  const std::string msg = cocclGetLastError(r.comm);
  EXPECT_NE(msg.find(field), std::string::npos) << "rank " << r.rank << ": " << msg;
  EXPECT_EQ(std::memcmp(before.data(), out.data(), out.size() * sizeof(float)), 0)
      << "rank " << r.rank << ": recvbuff was written";
}

TEST(HostDelta, DisagreeingCallsFailOnEveryRank) {
  setupEnv();
  const int p = 3;
  const size_t n = 1000;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        CodecHandle int8("int8"), fp8("fp8_ash_ds");
        std::vector<float> send(n, 1.0f + r.rank), out(n * p, 0.0f);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess);
        for (float& x : send) x += 0.01f;
        const std::vector<float> before = out;
        // reset flag on rank 1 only
        cocclResult_t res =
            cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c,
                                r.rank == 1 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr);
        expectDisagreement(r, res, before, out, "reset flag");
        if (r.rank == 0) std::printf("message: %s\n", cocclGetLastError(r.comm));
        // count (rank 2 one element fewer: its recvbuff is larger than it needs)
        res = cocclAllGatherDelta(send.data(), out.data(), r.rank == 2 ? n - 1 : n, cocclFloat32,
                                  int8.c, 0u, r.comm, nullptr);
        expectDisagreement(r, res, before, out, "sendcount");
        // codec
        res = cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32,
                                  r.rank == 0 ? fp8.c : int8.c, 0u, r.comm, nullptr);
        expectDisagreement(r, res, before, out, "codec");
        // datatype (rank 1 reads its buffers as bf16: half the bytes)
        res = cocclAllGatherDelta(send.data(), out.data(), n,
                                  r.rank == 1 ? cocclBfloat16 : cocclFloat32, int8.c, 0u, r.comm,
                                  nullptr);
        expectDisagreement(r, res, before, out, "datatype");
        // still usable: the agreed call goes through, and a reset on every rank too
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c, 0u, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess);
        for (int q = 0; q < p; ++q) EXPECT_EQ(out[q * n], (1.0f + q) + 0.01f);
      },
      options());
}

TEST(HostDelta, ArgumentChecksAreLocal) {
  setupEnv();
  const int p = 2;
  const size_t n = 256;
  runRanks(
      p, Mode::Processes,  // cocclGetLastError is per process: threads would race on it
      [&](Rank& r) {
        CodecHandle int8("int8");
        std::vector<float> out(n * p, 0.0f), send(n, 1.0f);
        float* inPlace = out.data() + r.rank * n;
        // in place without reset: recvbuff's own shard is the reference
        EXPECT_EQ(
            cocclAllGatherDelta(inPlace, out.data(), n, cocclFloat32, int8.c, 0u, r.comm, nullptr),
            cocclInvalidArgument);
        EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("COCCL_DELTA_RESET"),
                  std::string::npos);
        // any other overlap, with or without reset
        EXPECT_EQ(cocclAllGatherDelta(out.data() + 1, out.data(), n, cocclFloat32, int8.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclInvalidArgument);
        // unknown flags
        EXPECT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c, 0x6u,
                                      r.comm, nullptr),
                  cocclInvalidArgument);
        // NULL buffers, bad type
        EXPECT_EQ(
            cocclAllGatherDelta(nullptr, out.data(), n, cocclFloat32, int8.c, 0u, r.comm, nullptr),
            cocclInvalidArgument);
        EXPECT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, static_cast<cocclDataType_t>(99),
                                      int8.c, 0u, r.comm, nullptr),
                  cocclInvalidArgument);
        // count 0: a no-op
        EXPECT_EQ(
            cocclAllGatherDelta(nullptr, nullptr, 0, cocclFloat32, int8.c, 0u, r.comm, nullptr),
            cocclSuccess);
        // in place with reset: exact, then a difference call from separate buffers
        std::fill(inPlace, inPlace + n, 2.0f + r.rank);
        ASSERT_EQ(cocclAllGatherDelta(inPlace, out.data(), n, cocclFloat32, int8.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        for (int q = 0; q < p; ++q) EXPECT_EQ(out[q * n + n - 1], 2.0f + q);
        std::fill(send.begin(), send.end(), 2.5f + r.rank);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, int8.c, 0u, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        // a constant difference of 0.5 per block: int8 holds it (plain grid, 127 levels)
        for (int q = 0; q < p; ++q) EXPECT_NEAR(out[q * n + 7], 2.5f + q, 0.5 / 250 + 1e-6);
      },
      options());
}

// ---- counts, chunks, identity, wire bytes -----------------------------------------------------

// Counts that are not multiples of the block, on one chunk and on many (COCCL_CHUNK_BYTES 4 KiB):
// the same bits either way (the payload blocks start at the shard's first element and chunks are
// whole blocks), identical on every rank, each step within the bound, and the wire bytes
// (p-1) (128 + sum of the chunks' encodedBytes).
TEST(HostDelta, OddCountsAndChunksGiveTheSameBits) {
  setupEnv();
  const int p = 3;
  const size_t counts[] = {1, 7, 127, 129, 1025, 40001};
  std::vector<std::vector<uint64_t>> hashes[2];
  for (int pass = 0; pass < 2; ++pass) {
    hashes[pass].assign(p, {});
    runRanks(
        p, Mode::Threads,
        [&](Rank& r) {
          for (const char* spec : {"int8", "fp8_ash_ds:block=64", "int4:block=32"}) {
            if (std::string(spec).rfind("int4", 0) == 0 && !haveInt4()) continue;
            CodecHandle codec(spec);
            for (size_t n : counts) {
              std::mt19937 rng(r.rank * 100 + static_cast<unsigned>(n));
              std::normal_distribution<float> nd(0.0f, 1.0f);
              std::vector<float> send(n), out(n * p);
              for (float& x : send) x = nd(rng);
              for (int t = 0; t < 4; ++t) {
                if (t > 0)
                  for (float& x : send) x += 0.01f * nd(rng);
                ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                              t == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr),
                          cocclSuccess)
                    << cocclGetLastError(r.comm);
                if (t == 0) continue;
                const uint64_t h = hashBytes(out.data(), out.size() * sizeof(float));
                ASSERT_TRUE(sameOnAllRanks(r, h)) << spec << " n " << n;
                hashes[pass][r.rank].push_back(h);
                cocclCollStats_t st{};
                // (sameOnAllRanks ran a collective since: ask again after the next call)
                ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u,
                                              r.comm, nullptr),
                          cocclSuccess);
                ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
                const size_t chunk = pass == 0 ? (1u << 20) / 4 : 4096 / 4;
                const size_t G = codec.block();
                const size_t c = std::max(G, chunk / G * G);
                size_t payload = 0;
                for (size_t b = 0; b < n; b += c) payload += codec.encoded(std::min(c, n - b));
                EXPECT_EQ(st.wireBytesSent, (p - 1) * (kHeader + payload)) << spec << " n " << n;
                for (size_t i = 0; i < n; ++i) {
                  const float got = out[r.rank * n + i];
                  ASSERT_TRUE(std::isfinite(got));
                  ASSERT_NEAR(got, send[i], 0.01 + 0.1 * std::fabs(send[i])) << spec << " n " << n;
                }
              }
            }
          }
        },
        options(pass == 0 ? -1 : 4096));
    ASSERT_FALSE(::testing::Test::HasFailure());
  }
  for (int q = 0; q < p; ++q) EXPECT_EQ(hashes[0][q], hashes[1][q]) << "rank " << q;
}

// The policy: COCCL_CODEC_POLICY takes the ALLGATHER entry; "none" (or under the size
// threshold) runs exact (recvbuff's old contents ignored).
TEST(HostDelta, PolicyCodecAndExactWithoutCodec) {
  setupEnv();
  const int p = 2;
  const size_t n = 5000;
  for (const char* entry : {"int8", "none"}) {
    RunOptions o = options();
    o.config.codecAllGather = entry;
    runRanks(
        p, Mode::Threads,
        [&](Rank& r) {
          std::vector<float> send(n), out(n * p, 0.0f);
          for (size_t i = 0; i < n; ++i) send[i] = std::sin(0.01f * i + r.rank);
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32,
                                        COCCL_CODEC_POLICY, COCCL_DELTA_RESET, r.comm, nullptr),
                    cocclSuccess);
          for (float& x : send) x += 1e-3f;
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32,
                                        COCCL_CODEC_POLICY, 0u, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          cocclCollStats_t st{};
          ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
          if (std::string(entry) == "none") {
            EXPECT_STREQ(st.codec, "none");
            EXPECT_EQ(std::memcmp(out.data() + r.rank * n, send.data(), n * sizeof(float)), 0);
            EXPECT_EQ(st.wireBytesSent, (p - 1) * (kHeader + kCallDesc + n * sizeof(float)));
          } else {
            EXPECT_EQ(std::string(st.codec).rfind("int8", 0), 0u) << st.codec;
            EXPECT_STREQ(st.algorithm, "delta/direct");
          }
          // int32 has no codec: exact whatever the policy
          std::vector<int32_t> is(n, r.rank), io(n * p, -1);
          ASSERT_EQ(cocclAllGatherDelta(is.data(), io.data(), n, cocclInt32, COCCL_CODEC_POLICY, 0u,
                                        r.comm, nullptr),
                    cocclSuccess);
          for (int q = 0; q < p; ++q) EXPECT_EQ(io[q * n + 3], q);
        },
        o);
  }
}

// Non-finite values follow the fp32 rule: +Inf / NaN arrive at their positions (the codecs'
// RAW blocks), an Inf that stays gives Inf - Inf = NaN next call, a reset clears it.
TEST(HostDelta, NonFiniteValuesFollowTheRule) {
  setupEnv();
  const int p = 2;
  const size_t n = 512;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        for (const char* spec : {"int8", "fp8_ash_ds", "int4"}) {
          if (std::string(spec) == "int4" && !haveInt4()) continue;
          CodecHandle codec(spec);
          std::vector<float> send(n), out(n * p);
          for (size_t i = 0; i < n; ++i) send[i] = 0.001f * i;
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                        COCCL_DELTA_RESET, r.comm, nullptr),
                    cocclSuccess);
          send[5] = INFINITY;
          send[300] = NAN;
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u,
                                        r.comm, nullptr),
                    cocclSuccess);
          for (int q = 0; q < p; ++q) {
            EXPECT_EQ(out[q * n + 5], INFINITY) << spec;
            EXPECT_TRUE(std::isnan(out[q * n + 300])) << spec;
            EXPECT_TRUE(std::isfinite(out[q * n + 6])) << spec;
            EXPECT_NEAR(out[q * n + 400], 0.4f, 1e-6) << spec;  // another block: difference 0
          }
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u,
                                        r.comm, nullptr),
                    cocclSuccess);
          EXPECT_TRUE(std::isnan(out[r.rank * n + 5])) << spec << ": Inf - Inf";
          send[5] = 1.0f;
          send[300] = 2.0f;
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                        COCCL_DELTA_RESET, r.comm, nullptr),
                    cocclSuccess);
          EXPECT_EQ(out[r.rank * n + 5], 1.0f);
          EXPECT_EQ(out[r.rank * n + 300], 2.0f);
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size() * sizeof(float))));
        }
      },
      options());
}

// The same agreement check with ranks as processes (nothing shared between the ranks but the
// wire), and a call inside a group beside a plain AllGather.
TEST(HostDelta, ProcessRanksDisagreeAndGroups) {
  setupEnv();
  const int p = 3;
  const size_t n = 700;
  runRanks(
      p, Mode::Processes,
      [&](Rank& r) {
        CodecHandle codec("fp8_ash_ds");
        std::vector<float> send(n, 0.5f * r.rank), out(n * p, 0.0f), plain(n * p);
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess);
        ASSERT_EQ(cocclAllGather(send.data(), plain.data(), n, cocclFloat32, r.comm, nullptr),
                  cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        EXPECT_EQ(out, plain);
        const std::vector<float> before = out;
        for (float& x : send) x += 0.25f;
        cocclResult_t res =
            cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                r.rank == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr);
        expectDisagreement(r, res, before, out, "reset flag");
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        for (int q = 0; q < p; ++q) EXPECT_NEAR(out[q * n + 3], 0.5f * q + 0.25f, 1e-3);
        EXPECT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size() * sizeof(float))));
      },
      options());
}

// One rank: no peers, no header on the wire; the difference still goes through the codec.
TEST(HostDelta, SingleRank) {
  setupEnv();
  const size_t n = 300;
  runRanks(
      1, Mode::Threads,
      [&](Rank& r) {
        CodecHandle codec("int8");
        std::vector<float> send(n), out(n);
        for (size_t i = 0; i < n; ++i) send[i] = std::cos(0.1f * i);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess);
        EXPECT_EQ(out, send);
        for (float& x : send) x += 1e-3f;
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        cocclCollStats_t st{};
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        EXPECT_EQ(st.wireBytesSent, 0u);
        for (size_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], send[i], 1e-5);
      },
      options());
}

// Back-to-back call times (printed, not asserted: the CI machine's 2 cores are shared): the
// difference call against the compressed and the exact AllGather of the same shard. The
// difference costs the header round (one small message each way before the payloads).
TEST(HostDelta, CallTimes) {
  setupEnv();
  const int p = 3;
  for (size_t n : {size_t{4099}, size_t{262144}}) {
    const int iters = n < 10000 ? 300 : 30;
    std::vector<double> us(3, 0.0);
    runRanks(
        p, Mode::Threads,
        [&](Rank& r) {
          CodecHandle codec("int8");
          std::vector<float> send(n), out(n * p), plain(n * p);
          for (size_t j = 0; j < n; ++j) send[j] = std::sin(0.001f * j + r.rank);
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                        COCCL_DELTA_RESET, r.comm, nullptr),
                    cocclSuccess);
          using Clock = std::chrono::steady_clock;
          for (int kind = 0; kind < 3; ++kind) {
            const auto t0 = Clock::now();
            for (int i = 0; i < iters; ++i) {
              for (size_t j = 0; j < n; ++j)  // every weight moves (a few ulps to 6e-3)
                send[j] += 1e-3f * static_cast<float>(static_cast<int>((j * 7 + i) % 13) - 6);
              cocclResult_t res =
                  kind == 0 ? cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                                  0u, r.comm, nullptr)
                  : kind == 1
                      ? cocclAllGatherCodec(send.data(), plain.data(), n, cocclFloat32, codec.c,
                                            r.comm, nullptr)
                      : cocclAllGather(send.data(), plain.data(), n, cocclFloat32, r.comm, nullptr);
              ASSERT_EQ(res, cocclSuccess);
            }
            if (r.rank == 0)
              us[kind] =
                  std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
          }
        },
        options());
    std::printf(
        "%d ranks, %zu fp32 a rank, int8: cocclAllGatherDelta %.1f us, "
        "cocclAllGatherCodec %.1f us, cocclAllGather (exact) %.1f us a call\n",
        p, n, us[0], us[1], us[2]);
  }
}

}  // namespace
}  // namespace coccl::test
