// Send/Recv agreement and policy (src/collectives/host/p2p.cc, p2p_header.cc, policy.cc):
// a sender and a receiver that disagree on count, datatype or codec both get
// cocclInvalidUsage naming the field and both values, promptly, with the receive buffer
// untouched and the communicator still usable; the SENDRECV policy entry (config field and
// COCCL_CODEC_SENDRECV) compresses at or above COCCL_COMPRESS_MIN_BYTES and not below, and is
// not inherited from COCCL_CODEC.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

constexpr size_t kHeader = 128;

struct End {
  size_t count;
  cocclDataType_t dt;
  const char* codec;  // nullptr: plain cocclSend / cocclRecv (policy: exact here)
};
struct Mismatch {
  const char* name;
  End send, recv;
  const char* says;  // in cocclGetLastError on both ends
};

// Payloads up to 64 KiB go out with the sender's header and a disagreeing receiver drains them;
// larger ones wait for the check (both kinds, and one of each against the other).
const Mismatch kMismatches[] = {
    {"count_large", {100000, cocclFloat32, nullptr}, {99999, cocclFloat32, nullptr},
     "count: sender 100000, receiver 99999"},
    {"count_small_vs_large", {1000, cocclFloat32, nullptr}, {100000, cocclFloat32, nullptr},
     "count: sender 1000, receiver 100000"},
    {"count_large_vs_small", {100000, cocclFloat32, nullptr}, {1000, cocclFloat32, nullptr},
     "count: sender 100000, receiver 1000"},
    {"codec_large", {100000, cocclFloat32, "int8"}, {100000, cocclFloat32, "fp8_ash_ds"},
     "codec: sender int8:block=128"},
    {"count_exact",
     {1000, cocclFloat32, nullptr},
     {999, cocclFloat32, nullptr},
     "count: sender 1000, receiver 999"},
    {"count_compressed",
     {4096, cocclBfloat16, "fp8_ash_ds"},
     {4095, cocclBfloat16, "fp8_ash_ds"},
     "count: sender 4096, receiver 4095"},
    // Same bytes (1000 x 4 = 2000 x 2): only the header can tell.
    {"dtype_same_bytes",
     {1000, cocclFloat32, nullptr},
     {2000, cocclBfloat16, nullptr},
     "datatype: sender float, receiver bfloat16"},
    {"dtype_compressed",
     {4096, cocclFloat32, "int8"},
     {4096, cocclFloat16, "int8"},
     "datatype: sender float, receiver half"},
    {"codec_vs_codec",
     {4096, cocclFloat32, "fp8_ash_ds"},
     {4096, cocclFloat32, "int8"},
     "codec: sender fp8_ash_ds:block=128"},
    {"codec_vs_exact",
     {4096, cocclFloat32, "int8"},
     {4096, cocclFloat32, nullptr},
     "receiver none"},
    {"codec_params",
     {4096, cocclFloat32, "fp8_ash_ds"},
     {4096, cocclFloat32, "fp8_ash_ds:block=64"},
     "receiver fp8_ash_ds:block=64"},
};

class SendRecvMismatch : public ::testing::TestWithParam<Mismatch> {};

TEST_P(SendRecvMismatch, BothEndsFailAndStayUsable) {
  const Mismatch m = GetParam();
  RunOptions o;
  o.config.timeoutMs = 30000;
  for (int n : {2, 3}) {
    runRanks(
        n, Mode::Threads,
        [&m](Rank& r) {
          const int last = r.nranks - 1;
          if (r.rank != 0 && r.rank != last) return;
          const End& e = r.rank == 0 ? m.send : m.recv;
          cocclCodec_t codec = nullptr;
          if (e.codec) {
            ASSERT_EQ(cocclCodecCreate(e.codec, &codec), cocclSuccess);
          }
          const size_t bytes = e.count * elemSize(e.dt);
          Guarded buf(bytes, r.rank == 0 ? 0x3C : 0xFF);
          const auto t0 = std::chrono::steady_clock::now();
          const cocclResult_t res =
              r.rank == 0 ? cocclSendCodec(buf.data(), e.count, e.dt, last, codec, r.comm, nullptr)
                          : cocclRecvCodec(buf.data(), e.count, e.dt, 0, codec, r.comm, nullptr);
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          EXPECT_EQ(res, cocclInvalidUsage) << "rank " << r.rank;
          EXPECT_NE(std::string(cocclGetLastError(r.comm)).find(m.says), std::string::npos)
              << cocclGetLastError(r.comm);
          EXPECT_LT(s, 10.0);
          // Nothing written to the receive buffer.
          const std::vector<uint8_t> fill(bytes, r.rank == 0 ? 0x3C : 0xFF);
          EXPECT_EQ(std::memcmp(buf.data(), fill.data(), bytes), 0);
          EXPECT_TRUE(buf.guardsIntact());
          if (codec) cocclCodecDestroy(codec);
          // The communicator still works: a matching exact pair.
          cocclResult_t st;
          EXPECT_EQ(cocclCommGetAsyncError(r.comm, &st), cocclSuccess);
          EXPECT_EQ(st, cocclSuccess);
          std::vector<float> v(10, static_cast<float>(r.rank + 1));
          if (r.rank == 0) {
            EXPECT_EQ(cocclSend(v.data(), 10, cocclFloat32, last, r.comm, nullptr), cocclSuccess);
          } else {
            EXPECT_EQ(cocclRecv(v.data(), 10, cocclFloat32, 0, r.comm, nullptr), cocclSuccess);
          }
          EXPECT_EQ(v[9], 1.0f) << cocclGetLastError(r.comm);
        },
        o);
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, SendRecvMismatch, ::testing::ValuesIn(kMismatches),
                         [](const ::testing::TestParamInfo<Mismatch>& i) { return i.param.name; });

// In a ring, one bad pair (rank 0's send) fails its two ends; every other pair completes.
TEST(SendRecvMismatchGroup, OneBadPairOfARing) {
  for (int n : {2, 4}) {
    RunOptions o;
    o.config.timeoutMs = 30000;
    runRanks(
        n, Mode::Threads,
        [](Rank& r) {
          const int next = (r.rank + 1) % r.nranks, prev = (r.rank + r.nranks - 1) % r.nranks;
          std::vector<float> s(600, static_cast<float>(r.rank)), d(600, -1.f);
          ASSERT_EQ(cocclGroupStart(), cocclSuccess);
          EXPECT_EQ(
              cocclSend(s.data(), r.rank == 0 ? 599 : 600, cocclFloat32, next, r.comm, nullptr),
              cocclSuccess);
          EXPECT_EQ(cocclRecv(d.data(), 600, cocclFloat32, prev, r.comm, nullptr), cocclSuccess);
          const cocclResult_t res = cocclGroupEnd();
          const bool bad = r.rank == 0 || r.rank == 1;  // the ends of 0 -> 1
          EXPECT_EQ(res, bad ? cocclInvalidUsage : cocclSuccess) << "rank " << r.rank;
          // The receive of a good pair completed on every rank (rank 1's comes from rank 0: bad).
          if (r.rank != 1) {
            EXPECT_EQ(d[599], static_cast<float>(prev));
          } else {
            EXPECT_EQ(d[0], -1.f);
          }
        },
        o);
  }
}

cocclCollStats_t stats(const Rank& r) {
  cocclCollStats_t s{};
  EXPECT_EQ(cocclCommGetLastCollStats(r.comm, &s), cocclSuccess);
  return s;
}

// Rank 0 sends `count` elements to rank 1 with plain cocclSend / cocclRecv: rank 0 checks the
// codec and wire bytes of its statistics and cocclCommQueryCodec, rank 1 what it got.
void policyPair(const Rank& r, size_t count, cocclDataType_t dt, const char* wantCodec,
                size_t wantWire) {
  const RankData d = syntheticInput(dt, count, 0, 11);
  std::vector<uint8_t> out(count * elemSize(dt), 0xFF);
  if (r.rank == 0) {
    ASSERT_EQ(cocclSend(d.bytes.data(), count, dt, 1, r.comm, nullptr), cocclSuccess)
        << cocclGetLastError(r.comm);
    EXPECT_EQ(std::string(stats(r).codec).rfind(wantCodec, 0), 0u) << stats(r).codec;
    EXPECT_EQ(stats(r).wireBytesSent, wantWire) << "count " << count;
    int compressed = -1;
    char name[160];
    ASSERT_EQ(cocclCommQueryCodec(r.comm, cocclCollSendRecv, count, dt, cocclMax, &compressed, name,
                                  sizeof(name)),
              cocclSuccess);
    EXPECT_EQ(std::string(name).rfind(wantCodec, 0), 0u) << name;
    EXPECT_EQ(compressed, std::string(wantCodec) == "none" ? 0 : 1);
  } else if (r.rank == 1) {
    ASSERT_EQ(cocclRecv(out.data(), count, dt, 0, r.comm, nullptr), cocclSuccess)
        << cocclGetLastError(r.comm);
    const double e = relL2(toDoubles(dt, out.data(), count), d.exact);
    if (std::string(wantCodec) == "none") {
      EXPECT_EQ(std::memcmp(out.data(), d.bytes.data(), out.size()), 0);
    } else {
      EXPECT_LE(e, 0.03);
      EXPECT_GT(e, 0.0);  // lossy: it did go through the codec
    }
  }
}

void policyBody(const Rank& r, const char* codecName, size_t encoded40000) {
  policyPair(r, 1000, cocclFloat32, "none", kHeader + 4000);  // 4000 B < 64 KiB: exact
  policyPair(r, 40000, cocclFloat32, codecName, kHeader + encoded40000);
  policyPair(r, 40000, cocclInt32, "none", kHeader + 160000);  // not a float type
}

size_t encoded(const char* spec, size_t count) {
  cocclCodec_t c;
  EXPECT_EQ(cocclCodecCreate(spec, &c), cocclSuccess);
  size_t b = 0;
  EXPECT_EQ(cocclCodecEncodedBytes(c, count, cocclFloat32, &b), cocclSuccess);
  cocclCodecDestroy(c);
  return b;
}

TEST(SendRecvPolicy, ConfigEntryAboveThreshold) {
  RunOptions o;
  o.config.codecSendRecv = "fp8_ash_ds";
  o.config.compressMinBytes = 65536;
  const size_t enc = encoded("fp8_ash_ds", 40000);
  for (int n : {2, 3})
    runRanks(
        n, Mode::Threads, [enc](Rank& r) { policyBody(r, "fp8_ash_ds", enc); }, o);
}

TEST(SendRecvPolicy, DefaultCodecIsNotInherited) {
  RunOptions o;
  o.config.codec = "fp8_ash_ds";
  o.config.compressMinBytes = 0;
  runRanks(
      2, Mode::Threads,
      [](Rank& r) { policyPair(r, 40000, cocclFloat32, "none", kHeader + 160000); }, o);
}

TEST(SendRecvPolicy, TwoLevelSpecRefused) {
  RunOptions o;
  o.config.codecSendRecv = "hier:intra=int8,inter=fp8_ash_ds";
  o.initCheck = [](int, cocclResult_t res, const std::string& msg) {
    EXPECT_EQ(res, cocclInvalidArgument);
    EXPECT_NE(msg.find("AllReduce and ReduceScatter"), std::string::npos) << msg;
  };
  runRanks(
      2, Mode::Threads, [](Rank&) {}, o);
}

// COCCL_CODEC_SENDRECV and COCCL_COMPRESS_MIN_BYTES from the environment (read once per
// process: set in each forked rank before its first coccl call).
TEST(SendRecvPolicy, EnvironmentProcesses) {
  runProcessRanks(
      2,
      [](int) {
        setenv("COCCL_CODEC_SENDRECV", "int8", 1);
        setenv("COCCL_COMPRESS_MIN_BYTES", "64K", 1);
      },
      [](Rank& r) {
        const size_t enc = encoded("int8", 40000);
        char v[64];
        ASSERT_EQ(cocclGetEnvValue("COCCL_CODEC_SENDRECV", v, sizeof(v), nullptr), cocclSuccess);
        EXPECT_EQ(std::string(v), "int8");
        policyBody(r, "int8", enc);
      });
}

// A per-call codec that refuses the count at one end (tah: whole rows only) fails both ends
// through the header check: before, the refusing end failed alone before sending its header and
// its peer waited for COCCL_TIMEOUT_MS, leaving the pair's message numbers out of step.
struct Refusal {
  size_t sendCount, recvCount;
  const char *sendCodec, *recvCodec;
  cocclResult_t want;
  const char* says;
};

TEST(SendRecvRefusal, OneEndRefusingTheCountFailsBothEnds) {
#ifndef COCCL_TAH_PLUGIN
  GTEST_SKIP() << "no tah plug-in in this build";
#else
  // COCCL_CODEC_PLUGIN is read once a process: ctest runs each test in a process of its own,
  // where this is the first read; after other tests of the binary it is too late.
  setenv("COCCL_CODEC_PLUGIN", COCCL_TAH_PLUGIN, 1);
  cocclCodec_t probe = nullptr;
  if (cocclCodecCreate("tah:row=64", &probe) != cocclSuccess)
    GTEST_SKIP() << "tah not loaded in this process (COCCL_CODEC_PLUGIN was read before this "
                    "test): run it alone, as ctest does";
  cocclCodecDestroy(probe);
  const Refusal cases[] = {
      {128, 100, "tah:row=64", "tah:row=64", cocclInvalidUsage, "count: sender 128, receiver 100"},
      {100, 128, "tah:row=64", "tah:row=64", cocclInvalidUsage, "count: sender 100, receiver 128"},
      {100, 100, "tah:row=64", nullptr, cocclInvalidUsage, "receiver none"},
      {100, 100, "tah:row=64", "tah:row=64", cocclInvalidArgument, "refuses a count of 100"},
  };
  RunOptions o;
  o.config.timeoutMs = 30000;
  for (const Refusal& c : cases) {
    runRanks(
        2, Mode::Threads,
        [&c](Rank& r) {
          const bool send = r.rank == 0;
          const size_t n = send ? c.sendCount : c.recvCount;
          const char* spec = send ? c.sendCodec : c.recvCodec;
          cocclCodec_t codec = nullptr;
          if (spec) {
            ASSERT_EQ(cocclCodecCreate(spec, &codec), cocclSuccess);
          }
          Guarded buf(n * 2, send ? 0x3C : 0xFF);
          const auto t0 = std::chrono::steady_clock::now();
          const cocclResult_t res =
              send ? cocclSendCodec(buf.data(), n, cocclBfloat16, 1, codec, r.comm, nullptr)
                   : cocclRecvCodec(buf.data(), n, cocclBfloat16, 0, codec, r.comm, nullptr);
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          EXPECT_EQ(res, c.want) << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
          EXPECT_NE(std::string(cocclGetLastError(r.comm)).find(c.says), std::string::npos)
              << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
          EXPECT_LT(s, 10.0) << "rank " << r.rank << " waited";
          const std::vector<uint8_t> fill(n * 2, send ? 0x3C : 0xFF);
          EXPECT_EQ(std::memcmp(buf.data(), fill.data(), n * 2), 0);
          EXPECT_TRUE(buf.guardsIntact());
          if (codec) cocclCodecDestroy(codec);
          std::vector<float> v(10, static_cast<float>(r.rank + 1));  // still in step
          EXPECT_EQ(send ? cocclSend(v.data(), 10, cocclFloat32, 1, r.comm, nullptr)
                         : cocclRecv(v.data(), 10, cocclFloat32, 0, r.comm, nullptr),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          EXPECT_EQ(v[9], 1.0f);
        },
        o);
  }
  unsetenv("COCCL_CODEC_PLUGIN");
#endif
}

}  // namespace
