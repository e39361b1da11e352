// int4 through the public API on 4 host ranks as threads (libcoccl.so, COCCL_CODEC_PLUGIN = the
// plug-in's path): AllReduce with COCCL_CODEC=int4 (fp32) and with an explicit codec handle
// (int4:block=32,rotate=0, bf16); every rank's output bitwise identical, 0 elements outside the
// bound, the wire compressed.
//
// Bound: a p-rank reduction (two-shot or ring) quantises at most p times, each time a value
// whose block absmax is at most A (1 + p k) with A the block absmax of sum_r |x_r| and k the
// per-quantisation factor of errorBound (plugins/int4/int4_plugin.cc: plain 1/12 (RAW grid),
// auto sqrt(128)/14, plus 2^-8 for a 16-bit type and 128 * 2^-16 fp32 terms).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "harness/harness.h"

namespace coccl::test {
namespace {

void setupEnv() {  // COCCL_* are read once per process: before the first coccl call
  setenv("COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN, 1);
  setenv("COCCL_CODEC", "int4", 1);
  setenv("COCCL_COMPRESS_MIN_BYTES", "0", 1);
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
double fromBf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// in[r][i] exact values; out[r] the ranks' outputs as doubles; checks identity and the bound.
void check(const std::vector<std::vector<double>>& in, const std::vector<std::vector<double>>& out,
           size_t g, double k, double maxRelL2) {
  const int p = static_cast<int>(in.size());
  const size_t n = in[0].size();
  for (int r = 1; r < p; ++r)
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(&out[r][i], &out[0][i], sizeof(double)), 0)
          << "rank " << r << " element " << i << " differs from rank 0";
  double err2 = 0, ref2 = 0;
  size_t bad = 0;
  std::string first;
  for (size_t b = 0; b < n; b += g) {
    const size_t e = std::min(n, b + g);
    double a = 0;
    for (size_t i = b; i < e; ++i) {
      double s = 0;
      for (int r = 0; r < p; ++r) s += std::fabs(in[r][i]);
      a = std::max(a, s);
    }
    const double kk = k + 0x1p-8 * (1 + k) + 128 * 0x1p-16;
    const double bound = p * kk * a * (1 + p * kk) * 1.001;
    for (size_t i = b; i < e; ++i) {
      double exact = 0;
      for (int r = 0; r < p; ++r) exact += in[r][i];
      const double d = std::fabs(out[0][i] - exact);
      err2 += d * d;
      ref2 += exact * exact;
      if (!(d <= bound) && bad++ == 0)
        first = "element " + std::to_string(i) + ": error " + std::to_string(d) + " > " + std::to_string(bound);
    }
  }
  EXPECT_EQ(bad, 0u) << first;
  const double rel = std::sqrt(err2 / ref2);
  std::printf("4-rank AllReduce relative L2 %.4f%%\n", 100 * rel);
  EXPECT_LT(rel, maxRelL2);
}

std::vector<std::vector<float>> inputs(int p, size_t n) {
  std::vector<std::vector<float>> in(p, std::vector<float>(n));
  for (int r = 0; r < p; ++r) {
    std::mt19937 rng(100 + r);
    std::normal_distribution<float> nd(0.25f * r, 1.0f + r);
    for (float& x : in[r]) x = nd(rng);
  }
  return in;
}

TEST(Int4Ranks, EnvCodecAllReduceFp32FourThreadRanks) {
  setupEnv();
  const int p = 4;
  const size_t n = 100003;  // a partial last block
  auto in = inputs(p, n);
  std::vector<std::vector<double>> exact(p), out(p);
  for (int r = 0; r < p; ++r) exact[r].assign(in[r].begin(), in[r].end());
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
        EXPECT_EQ(std::strncmp(st.codec ? st.codec : "", "int4", 4), 0)
            << "rank " << r.rank << " used codec " << (st.codec ? st.codec : "(null)");
        EXPECT_LT(st.wireBytesSent, n * sizeof(float) / 4) << "rank " << r.rank << ": not compressed";
        std::lock_guard<std::mutex> lock(mu);
        out[r.rank].assign(buf.begin(), buf.end());
      },
      opts);
  ASSERT_FALSE(::testing::Test::HasFailure());
  check(exact, out, 128, std::sqrt(128.0) / 14.0, 0.165);  // measured 14.59%
}

TEST(Int4Ranks, ExplicitCodecAllReduceBf16FourThreadRanks) {
  setupEnv();
  const int p = 4;
  const size_t n = 70001;
  auto in = inputs(p, n);
  std::vector<std::vector<uint16_t>> h(p, std::vector<uint16_t>(n));
  std::vector<std::vector<double>> exact(p, std::vector<double>(n)), out(p);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i) h[r][i] = toBf16(in[r][i]), exact[r][i] = fromBf16(h[r][i]);
  std::mutex mu;
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        cocclCodec_t c = nullptr;
        ASSERT_EQ(cocclCodecCreate("int4:block=32,rotate=0", &c), cocclSuccess) << cocclGetLastError(nullptr);
        std::vector<uint16_t> buf = h[r.rank];
        ASSERT_EQ(cocclAllReduceCodec(buf.data(), buf.data(), n, cocclBfloat16, cocclSum, c, r.comm,
                                      nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        EXPECT_EQ(cocclCodecDestroy(c), cocclSuccess);
        std::vector<double> o(n);
        for (size_t i = 0; i < n; ++i) o[i] = fromBf16(buf[i]);
        std::lock_guard<std::mutex> lock(mu);
        out[r.rank] = std::move(o);
      },
      opts);
  ASSERT_FALSE(::testing::Test::HasFailure());
  check(exact, out, 32, 1.0 / 12.0, 0.14);  // measured 12.68%
}

// SDP4Bit's two-level scheme: int8 inside a node, int4 between nodes (4 thread ranks as 2
// nodes of 2, COCCL_RANKS_PER_NODE through the config). Each level quantises once, so the
// error stays at the int4 level (measured against the flat int4 AllReduce above); outputs
// are bitwise identical on every rank.
TEST(Int4Ranks, TwoLevelInt8InsideInt4BetweenNodes) {
  setupEnv();
  const int p = 4;
  const size_t n = 100003;
  auto in = inputs(p, n);
  std::vector<std::vector<double>> exact(p), out(p);
  for (int r = 0; r < p; ++r) exact[r].assign(in[r].begin(), in[r].end());
  std::mutex mu;
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  opts.config.codecAllReduce = "hier:intra=int8,inter=int4";
  opts.config.ranksPerNode = 2;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        std::vector<float> buf = in[r.rank];
        ASSERT_EQ(cocclAllReduce(buf.data(), buf.data(), n, cocclFloat32, cocclSum, r.comm, nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        cocclCollStats_t st{};
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        EXPECT_STREQ(st.algorithm, "hierarchical");
        EXPECT_NE(std::string(st.codec).find("inter=int4"), std::string::npos) << st.codec;
        std::lock_guard<std::mutex> lock(mu);
        out[r.rank].assign(buf.begin(), buf.end());
      },
      opts);
  ASSERT_FALSE(::testing::Test::HasFailure());
  check(exact, out, 128, std::sqrt(128.0) / 14.0, 0.165);
}

// Compressed Send/Recv through the plug-in (cocclSendCodec / cocclRecvCodec, a ring in a group
// on 3 thread ranks): every element within one encode/decode's errorBound of the input, the
// sender's wire bytes = the two 128-byte headers of its Send and Recv + encodedBytes.
TEST(Int4Ranks, SendRecvRingThreeThreadRanks) {
  setupEnv();
  const int p = 3;
  const size_t n = 50001;
  auto in = inputs(p, n);
  RunOptions opts;
  opts.config = configWithTimeout(30000);
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        cocclCodec_t c = nullptr;
        ASSERT_EQ(cocclCodecCreate("int4", &c), cocclSuccess) << cocclGetLastError(nullptr);
        const int next = (r.rank + 1) % p, prev = (r.rank + p - 1) % p;
        std::vector<float> got(n, -1.f);
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclSendCodec(in[r.rank].data(), n, cocclFloat32, next, c, r.comm, nullptr),
                  cocclSuccess);
        ASSERT_EQ(cocclRecvCodec(got.data(), n, cocclFloat32, prev, c, r.comm, nullptr),
                  cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        size_t g = 0, enc = 0, bad = 0;
        ASSERT_EQ(cocclCodecBlockElems(c, &g), cocclSuccess);
        ASSERT_EQ(cocclCodecEncodedBytes(c, n, cocclFloat32, &enc), cocclSuccess);
        const std::vector<float>& x = in[prev];
        for (size_t b = 0; b < n; b += g) {
          const size_t e = std::min(n, b + g);
          double sq = 0, mx = 0, bound = 0;
          for (size_t i = b; i < e; ++i) {
            sq += double(x[i]) * x[i];
            mx = std::max(mx, std::fabs(double(x[i])));
          }
          ASSERT_EQ(cocclCodecErrorBound(c, std::sqrt(sq / g), mx, &bound), cocclSuccess);
          for (size_t i = b; i < e; ++i)
            bad += !(std::fabs(double(got[i]) - x[i]) <= bound * 1.000001);
        }
        EXPECT_EQ(bad, 0u) << "rank " << r.rank;
        cocclCollStats_t st{};
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        EXPECT_EQ(st.wireBytesSent, 2 * 128 + enc);
        EXPECT_EQ(std::strncmp(st.codec, "int4", 4), 0) << st.codec;
        EXPECT_EQ(cocclCodecDestroy(c), cocclSuccess);
      },
      opts);
}

}  // namespace
}  // namespace coccl::test
