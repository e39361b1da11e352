// cocclAllGatherDelta on host ranks: mismatched calls (reset flag, count, type, codec) fail on
// every rank and leave recvbuff alone, with thread ranks and process ranks, inside a group;
// argument checks that fail one rank alone.
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
}  // namespace
}  // namespace coccl::test
