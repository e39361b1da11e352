// cocclAllGatherDelta on host ranks (threads): the weight-difference AllGather of SDP4Bit
// (issue: 4-bit data parallelism, qWD). The exact first call (COCCL_DELTA_RESET); counts that
// are not multiples of the block, several chunks, bitwise identical recvbuff on every rank,
// wire bytes, the policy, non-finite values, one rank, call times. The 1,000-step drift is in
// test_host_delta_drift.cc, the agreement and argument checks in test_host_delta_agreement.cc.
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

#include "api/api_internal.h"
#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"
#include "host_delta_util.h"

namespace coccl::test {
namespace {

using namespace delta;

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

// Non-finite values: +Inf / NaN arrive at their positions (the codecs' RAW blocks); an element
// whose previous value is not finite takes the new value (an Inf that stays stays Inf, a NaN
// that turns finite heals without a reset); a reset also clears them.
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
          // A non-finite previous value takes the new value, not Inf - Inf = NaN.
          for (int q = 0; q < p; ++q) {
            EXPECT_EQ(out[q * n + 5], INFINITY) << spec << ": Inf stays Inf";
            EXPECT_TRUE(std::isnan(out[q * n + 300])) << spec;
          }
          send[5] = 1.0f;
          send[300] = 2.0f;
          ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c, 0u,
                                        r.comm, nullptr),
                    cocclSuccess);
          for (int q = 0; q < p; ++q) {
            // within the codec's step of the block's largest |d| (2.0 and the small differences)
            EXPECT_NEAR(out[q * n + 5], 1.0f, 0.1f) << spec << ": healed without a reset";
            EXPECT_NEAR(out[q * n + 300], 2.0f, 0.2f) << spec << ": healed without a reset";
            EXPECT_TRUE(std::isfinite(out[q * n + 6])) << spec;
          }
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

// A reset call is a plain exact AllGather, also with a codec that would refuse its count (tah:
// whole rows only): before, it failed with "refuses a count"; the next, difference, call then
// fails with the refusal on every rank.
TEST(HostDelta, ResetCallIgnoresACodecThatRefusesTheCount) {
#ifndef COCCL_TAH_PLUGIN
  GTEST_SKIP() << "no tah plug-in in this build";
#else
  setupEnv();
  const int p = 2;
  const size_t n = 100;  // not whole rows of 64
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        CodecHandle codec("tah:row=64");
        std::vector<uint16_t> send(n), out(n * p, 0xFFFF);
        for (size_t i = 0; i < n; ++i) send[i] = static_cast<uint16_t>(0x3F80 + r.rank * 7 + i);
        ASSERT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclBfloat16, codec.c,
                                      COCCL_DELTA_RESET, r.comm, nullptr),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        for (int q = 0; q < p; ++q)
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(out[q * n + i], static_cast<uint16_t>(0x3F80 + q * 7 + i));
        EXPECT_EQ(cocclAllGatherDelta(send.data(), out.data(), n, cocclBfloat16, codec.c, 0u,
                                      r.comm, nullptr),
                  cocclInvalidArgument);
        EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("refuses a count of 100"),
                  std::string::npos)
            << cocclGetLastError(r.comm);
        // Only rank 1 refuses its count (100; rank 0 passes two whole rows): both ranks get the
        // disagreement at once, not rank 1 the refusal while rank 0 waits for its header.
        const size_t mine = r.rank == 0 ? 128 : 100;
        std::vector<uint16_t> s2(mine, 0x3F80), o2(mine * p, 0);
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(cocclAllGatherDelta(s2.data(), o2.data(), mine, cocclBfloat16, codec.c, 0u,
                                      r.comm, nullptr),
                  cocclInvalidUsage)
            << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  10.0);
      },
      options());
#endif
}

// The totals a communicator prints at destroy (COCCL_DEBUG=INFO, "AllGather N calls, M
// compressed with ...") count the weight-difference AllGathers: before, they were missing, so a
// training run's log showed its parameter all-gather as never compressed.
TEST(HostDelta, DestroyTotalsCountTheDifferenceCalls) {
  setupEnv();
  const int p = 2;
  const size_t n = 1000;
  runRanks(
      p, Mode::Threads,
      [&](Rank& r) {
        CodecHandle codec("int8");
        std::vector<float> send(n, 0.25f * static_cast<float>(r.rank + 1)), out(n * p);
        uint64_t logical = 0, wire = 0;
        for (int call = 0; call < 3; ++call) {
          if (call == 1)
            for (float& v : send) v += 1e-3f;
          const cocclResult_t res =
              call < 2 ? cocclAllGatherDelta(send.data(), out.data(), n, cocclFloat32, codec.c,
                                             call == 0 ? COCCL_DELTA_RESET : 0u, r.comm, nullptr)
                       : cocclAllGather(send.data(), out.data(), n, cocclFloat32, r.comm, nullptr);
          ASSERT_EQ(res, cocclSuccess) << cocclGetLastError(r.comm);
          cocclCollStats_t st{};
          ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
          EXPECT_STREQ(st.codec, call == 1 ? "int8" : "none") << "call " << call;
          logical += st.logicalBytes;
          wire += st.wireBytesSent;
        }
        const CollTotals& t = r.comm->impl->totals(Coll::AllGather);
        EXPECT_EQ(t.calls, 3u);
        EXPECT_EQ(t.compressed, 1u);
        EXPECT_EQ(t.codec, "int8");
        EXPECT_EQ(t.logicalBytes, logical);
        EXPECT_EQ(t.wireBytes, wire);
      },
      options());
}

}  // namespace
}  // namespace coccl::test
