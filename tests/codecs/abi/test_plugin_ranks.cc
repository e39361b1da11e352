// Codec plug-ins across ranks, through libcoccl.so (tests/harness): a plug-in that fails to load
// on any rank, or ranks that registered different codecs, fail cocclCommInitRank on every rank
// with cocclInvalidArgument and a message naming the file or the difference; the `good`
// plug-in runs a host AllReduce on 4 ranks with bitwise identical output within its bound.
//
// COCCL_* variables are read once per process: the multi-process tests set them in each child
// (runProcessRanks' setup) and come first; the thread test sets them before its first coccl call.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "harness/harness.h"

namespace coccl::test {
namespace {

const std::string kDir = COCCL_TEST_PLUGIN_DIR;
std::string plugin(const std::string& name) { return kDir + "/libcoccl-codec-" + name + ".so"; }
const std::string kGoodV2 = kDir + "/v2/libcoccl-codec-good.so";

// Runs init on n process ranks, rank r with COCCL_CODEC_PLUGIN=plugins[r] ("" = unset), and
// expects it to fail on every rank with cocclInvalidArgument and a message holding `needle`.
void expectInitFailsEverywhere(const std::vector<std::string>& plugins, const std::string& needle) {
  const int n = static_cast<int>(plugins.size());
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  opts.harnessTimeoutS = 120;
  opts.initCheck = [needle](int rank, cocclResult_t res, const std::string& msg) {
    EXPECT_EQ(res, cocclInvalidArgument) << "rank " << rank << ": " << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "rank " << rank << ": no '" << needle << "' in: " << msg;
  };
  runProcessRanks(
      n,
      [&plugins](int r) {
        if (plugins[r].empty()) unsetenv("COCCL_CODEC_PLUGIN");
        else setenv("COCCL_CODEC_PLUGIN", plugins[r].c_str(), 1);
      },
      [](Rank& r) { ADD_FAILURE() << "rank " << r.rank << ": init succeeded"; }, opts);
}

TEST(CodecPluginRanks, BadPluginOnEveryRankFailsInit) {
  expectInitFailsEverywhere({plugin("badversion"), plugin("badversion"), plugin("badversion")},
                            plugin("badversion"));
}

TEST(CodecPluginRanks, BadPluginOnOneRankFailsInitOnEveryRank) {
  expectInitFailsEverywhere({"", plugin("badsize"), ""}, plugin("badsize"));
}

TEST(CodecPluginRanks, ClashOnOneRankFailsInitOnEveryRank) {
  expectInitFailsEverywhere({"", "", plugin("good"), plugin("clash")}, "registered already");
}

TEST(CodecPluginRanks, DifferentCodecSetsFailInitOnEveryRank) {
  expectInitFailsEverywhere({plugin("good"), "", ""},
                            "rank 0 has fp8_ash_ds@1,good@1,int8@2,none@1; "
                            "rank 1 has fp8_ash_ds@1,int8@2,none@1");
}

TEST(CodecPluginRanks, DifferentFormatVersionsFailInitOnEveryRank) {
  expectInitFailsEverywhere({plugin("good"), kGoodV2},
                            "rank 0 has fp8_ash_ds@1,good@1,int8@2,none@1; "
                            "rank 1 has fp8_ash_ds@1,good@2,int8@2,none@1");
}

TEST(CodecPluginRanks, SamePluginOnEveryRankInitsAndReduces) {
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  opts.harnessTimeoutS = 120;
  runProcessRanks(
      3, [](int) { setenv("COCCL_CODEC_PLUGIN", plugin("good").c_str(), 1); },
      [](Rank& r) {
        cocclCodec_t c = nullptr;
        ASSERT_EQ(cocclCodecCreate("good:block=8", &c), cocclSuccess) << cocclGetLastError(nullptr);
        std::vector<float> v(1003, 1.0f + static_cast<float>(r.rank));
        ASSERT_EQ(cocclAllReduceCodec(v.data(), v.data(), v.size(), cocclFloat32, cocclSum, c, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        for (float x : v) ASSERT_NEAR(x, 6.0f, 6.0f / 127.0f * 3);
        EXPECT_EQ(cocclCodecDestroy(c), cocclSuccess);
      },
      opts);
}

// A bare name through libcoccl.so: found in the coccl/ subfolder of libcoccl.so's folder.
TEST(CodecPluginRanks, BareNameBesideLibcocclLoadsOnEveryRank) {
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  opts.harnessTimeoutS = 120;
  runProcessRanks(
      2, [](int) { setenv("COCCL_CODEC_PLUGIN", "besidelib", 1); },
      [](Rank& r) {
        cocclCodec_t c = nullptr;
        ASSERT_EQ(cocclCodecCreate("besidelib", &c), cocclSuccess) << cocclGetLastError(nullptr);
        EXPECT_STREQ(cocclCodecName(c), "besidelib:block=16");
        std::vector<float> v(100, 2.0f);
        ASSERT_EQ(cocclAllReduceCodec(v.data(), v.data(), v.size(), cocclFloat32, cocclSum, c, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        for (float x : v) ASSERT_NEAR(x, 4.0f, 4.0f / 127.0f * 2);
        EXPECT_EQ(cocclCodecDestroy(c), cocclSuccess);
      },
      opts);
}

// Per block of 16: the sum of the ranks' largest magnitudes (every quantisation error in a
// p-rank reduction, two-shot or ring, is at most half a step of a value no larger).
TEST(CodecPluginRanks, GoodAllReduceFourThreadRanksIdenticalWithinBound) {
  setenv("COCCL_CODEC_PLUGIN", plugin("good").c_str(), 1);
  setenv("COCCL_CODEC", "good", 1);
  setenv("COCCL_COMPRESS_MIN_BYTES", "0", 1);
  const int p = 4;
  const size_t n = 100003;  // a partial last block
  std::vector<std::vector<float>> in(p, std::vector<float>(n)), out(p);
  for (int r = 0; r < p; ++r) {
    std::mt19937 rng(100 + r);
    std::normal_distribution<float> nd(0.5f * r, 1.0f + r);
    for (float& x : in[r]) x = nd(rng);
  }
  std::mutex mu;
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        std::vector<float> buf = in[r.rank];
        ASSERT_EQ(cocclAllReduce(buf.data(), buf.data(), n, cocclFloat32, cocclSum, r.comm, nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        cocclCollStats_t st{};
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        EXPECT_EQ(std::strncmp(st.codec ? st.codec : "", "good", 4), 0)
            << "rank " << r.rank << " used codec " << (st.codec ? st.codec : "(null)");
        EXPECT_LT(st.wireBytesSent, n * sizeof(float)) << "rank " << r.rank << ": not compressed";
        std::lock_guard<std::mutex> lock(mu);
        out[r.rank] = std::move(buf);
      },
      opts);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (int r = 1; r < p; ++r)
    EXPECT_EQ(std::memcmp(out[r].data(), out[0].data(), n * sizeof(float)), 0)
        << "rank " << r << "'s output differs from rank 0's";
  double err2 = 0, ref2 = 0;
  size_t bad = 0;
  std::string first;
  for (size_t b = 0; b < n; b += 16) {
    const size_t e = std::min(n, b + 16);
    double s = 0;
    for (int r = 0; r < p; ++r) {
      double m = 0;
      for (size_t i = b; i < e; ++i) m = std::max(m, std::fabs(double(in[r][i])));
      s += m;
    }
    const double bound = p * s / 254.0 * 1.001;
    for (size_t i = b; i < e; ++i) {
      double exact = 0;
      for (int r = 0; r < p; ++r) exact += in[r][i];
      const double d = std::fabs(double(out[0][i]) - exact);
      err2 += d * d;
      ref2 += exact * exact;
      if (!(d <= bound) && bad++ == 0)
        first = "element " + std::to_string(i) + ": error " + std::to_string(d) + " > " + std::to_string(bound);
    }
  }
  EXPECT_EQ(bad, 0u) << first;
  EXPECT_LT(std::sqrt(err2 / ref2), 0.02) << "relative L2 error";
}

}  // namespace
}  // namespace coccl::test
