// Per-call agreement of the host collectives (src/collectives/call_desc.h, host/agree_call.cc):
// ranks that disagree on count, datatype, op, root, codec, collective or call number get
// cocclInvalidUsage on every rank, promptly, with a message naming the field and both values,
// nothing written to recvbuff and the communicator still usable (except after a call-number
// difference, which puts the ranks out of step for good).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "coll_util.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One rank's view of a disagreeing call: what it passes.
struct Call {
  enum Kind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce } kind = AllReduce;
  size_t count = 4096;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  int root = 0;
  const char* codec = nullptr;  // per-call codec (nullptr: the policy's)
};

// Bytes of the output buffer of `c` on `nranks` ranks.
size_t outBytes(const Call& c, int nranks) {
  const size_t e = c.count * elemSize(c.dt);
  return c.kind == Call::AllGather ? e * static_cast<size_t>(nranks) : e;
}
size_t inBytes(const Call& c, int nranks) {
  const size_t e = c.count * elemSize(c.dt);
  return c.kind == Call::ReduceScatter ? e * static_cast<size_t>(nranks) : e;
}

cocclResult_t issue(const Rank& r, const Call& c, const void* in, void* out) {
  cocclCodec_t codec = nullptr;
  if (c.codec && cocclCodecCreate(c.codec, &codec) != cocclSuccess) return cocclInternalError;
  cocclResult_t res = cocclInternalError;
  switch (c.kind) {
    case Call::AllReduce:
      res = cocclAllReduceCodec(in, out, c.count, c.dt, c.op, codec, r.comm, nullptr);
      break;
    case Call::ReduceScatter:
      res = cocclReduceScatterCodec(in, out, c.count, c.dt, c.op, codec, r.comm, nullptr);
      break;
    case Call::AllGather:
      res = cocclAllGatherCodec(in, out, c.count, c.dt, codec, r.comm, nullptr);
      break;
    case Call::Broadcast:
      res = cocclBroadcast(in, out, c.count, c.dt, c.root, r.comm, nullptr);
      break;
    case Call::Reduce:
      res = cocclReduce(in, out, c.count, c.dt, c.op, c.root, r.comm, nullptr);
      break;
  }
  if (codec) cocclCodecDestroy(codec);
  return res;
}

// Every rank: a call that agrees after the failed one (AllReduce of rank+1 in int32, exact
// under any codec policy).
void expectUsable(const Rank& r) {
  cocclResult_t st = cocclInternalError;
  EXPECT_EQ(cocclCommGetAsyncError(r.comm, &st), cocclSuccess);
  EXPECT_EQ(st, cocclSuccess);
  std::vector<int32_t> v(100, r.rank + 1), o(100, -1);
  ASSERT_EQ(cocclAllReduce(v.data(), o.data(), 100, cocclInt32, cocclSum, r.comm, nullptr),
            cocclSuccess)
      << cocclGetLastError(r.comm);
  EXPECT_EQ(o[99], r.nranks * (r.nranks + 1) / 2);
}

// Issues `c` on this rank and checks that it fails here with `says`, leaving recvbuff alone.
void expectMismatch(const Rank& r, const Call& c, const std::string& says) {
  const uint8_t fill = 0xC3;
  std::vector<uint8_t> in(inBytes(c, r.nranks));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + r.rank);
  // Small integers as input, whatever the type, would do as well; bytes suffice: nothing is
  // reduced when the check works.
  if (c.dt == cocclFloat32)
    for (size_t i = 0; i < c.count; ++i) setElem(c.dt, in.data(), i, 1.0 + r.rank);
  Guarded out(outBytes(c, r.nranks), fill);
  const auto t0 = std::chrono::steady_clock::now();
  const cocclResult_t res = issue(r, c, in.data(), out.data());
  EXPECT_EQ(res, cocclInvalidUsage) << "rank " << r.rank;
  const std::string msg = cocclGetLastError(r.comm);
  EXPECT_NE(msg.find(says), std::string::npos) << "rank " << r.rank << ": " << msg;
  EXPECT_LT(since(t0), 10.0) << "rank " << r.rank;
  const std::vector<uint8_t> want(out.bytes(), fill);
  EXPECT_EQ(std::memcmp(out.data(), want.data(), out.bytes()), 0)
      << "rank " << r.rank << ": recvbuff was written";
  EXPECT_TRUE(out.guardsIntact());
}

struct Case {
  const char* name;
  std::function<Call(int rank)> call;
  const char* says;
  const char* configCodec = nullptr;  // cfg.codec (with compressMinBytes 0)
};

const Case kCases[] = {
    {"count_exact",
     [](int k) {
       Call c;
       c.count = k == 2 ? 4095 : 4096;
       return c;
     },
     "count differs: 4096 on rank 0, 4095 on rank 2"},
    {"count_compressed_same_blocks",
     [](int k) {
       Call c;
       c.count = k == 0 ? 409600 : 409598;
       return c;
     },
     "count differs: 409600 on rank 0, 409598 on rank 1", "fp8_ash_ds"},
    {"op_compressed",
     [](int k) {
       Call c;
       c.op = k == 0 ? cocclSum : cocclAvg;
       return c;
     },
     "op differs: sum on rank 0, avg on rank 1", "fp8_ash_ds"},
    {"op_exact",
     [](int k) {
       Call c;
       c.op = k == 3 ? cocclMax : cocclSum;
       return c;
     },
     "op differs: sum on rank 0, max on rank 3"},
    // fp32 x 4096 and bf16 x 8192: the same bytes; only the descriptor can tell.
    {"dtype_same_bytes",
     [](int k) {
       Call c;
       if (k == 1) {
         c.dt = cocclBfloat16;
         c.count = 8192;
       }
       return c;
     },
     "datatype differs: float on rank 0, bfloat16 on rank 1"},
    {"dtype_compressed",
     [](int k) {
       Call c;
       c.dt = k == 2 ? cocclFloat16 : cocclBfloat16;
       return c;
     },
     "datatype differs: bfloat16 on rank 0, half on rank 2", "int8"},
    {"codec_per_call",
     [](int k) {
       Call c;
       c.codec = k == 1 ? "int8" : "fp8_ash_ds";
       return c;
     },
     "codec differs: fp8_ash_ds"},
    {"codec_vs_exact",
     [](int k) {
       Call c;
       c.codec = k == 3 ? "none" : "int8";
       return c;
     },
     "codec differs: int8"},
    {"root_broadcast",
     [](int k) {
       Call c;
       c.kind = Call::Broadcast;
       c.root = k == 2 ? 1 : 0;
       return c;
     },
     "root differs: 0 on rank 0, 1 on rank 2"},
    {"root_reduce",
     [](int k) {
       Call c;
       c.kind = Call::Reduce;
       c.root = k == 0 ? 3 : 2;
       return c;
     },
     "root differs: 3 on rank 0, 2 on rank 1"},
    {"collective",
     [](int k) {
       Call c;
       c.kind = k == 1 ? Call::ReduceScatter : Call::AllReduce;
       return c;
     },
     "collective differs: AllReduce on rank 0, ReduceScatter on rank 1"},
    // Two-shot sends its first pieces with the descriptors; Broadcast and AllGather do not: the
    // drained pieces and the untaken tags leave every rank in step (expectUsable).
    {"collective_twoshot_vs_broadcast",
     [](int k) {
       Call c;
       c.kind = k == 2 ? Call::Broadcast : Call::AllReduce;
       return c;
     },
     "collective differs: AllReduce on rank 0, Broadcast on rank 2"},
    {"collective_allgather_vs_twoshot",
     [](int k) {
       Call c;
       c.kind = k == 0 ? Call::AllGather : Call::ReduceScatter;
       c.count = 512;
       return c;
     },
     "collective differs: AllGather on rank 0, ReduceScatter on rank 1"},
    {"allgather_count",
     [](int k) {
       Call c;
       c.kind = Call::AllGather;
       c.count = k == 3 ? 1000 : 1001;
       return c;
     },
     "count differs: 1001 on rank 0, 1000 on rank 3"},
    {"reducescatter_codec_count",
     [](int k) {
       Call c;
       c.kind = Call::ReduceScatter;
       c.count = k == 2 ? 999 : 1024;
       return c;
     },
     "count differs: 1024 on rank 0, 999 on rank 2", "int8"},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class HostAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(HostAgreement, EveryRankFailsAndStaysUsable_threads_4ranks) {
  const Case& k = GetParam();
  RunOptions o;
  o.config.timeoutMs = 30000;
  o.config.codec = k.configCodec;
  o.config.compressMinBytes = 0;
  runRanks(
      4, Mode::Threads,
      [&k](Rank& r) {
        expectMismatch(r, k.call(r.rank), k.says);
        expectUsable(r);
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(Fields, HostAgreement, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// The issue's reproduction, as a user runs it: 8 processes, COCCL_CODEC=fp8_ash_ds,
// COCCL_COMPRESS_MIN_BYTES=0, rank 0 count 409600 and the others 409598 (the same number of
// 128-element blocks, so the wire bytes alone agree).
TEST(HostAgreementRepro, CompressedCountsDiffer_processes_8ranks) {
  RunOptions o;
  o.config.timeoutMs = 60000;
  runProcessRanks(
      8,
      [](int) {
        setenv("COCCL_CODEC", "fp8_ash_ds", 1);
        setenv("COCCL_COMPRESS_MIN_BYTES", "0", 1);
      },
      [](Rank& r) {
        Call c;
        c.count = r.rank == 0 ? 409600 : 409598;
        expectMismatch(r, c, "count differs: 409600 on rank 0, 409598 on rank 1");
        expectUsable(r);
      },
      o);
}

// One rank's call fails its own argument checks (so it never reaches the others): the others'
// call meets that rank's next call, and every rank names the call numbers.
TEST(HostAgreementSeq, RankSkipsACall_threads_3ranks) {
  RunOptions o;
  o.config.timeoutMs = 30000;
  runRanks(
      3, Mode::Threads,
      [](Rank& r) {
        std::vector<float> v(256, 1.f), out(256, -1.f);
        if (r.rank == 1) {
          EXPECT_EQ(cocclAllReduce(v.data(), out.data(), 256, static_cast<cocclDataType_t>(99),
                                   cocclSum, r.comm, nullptr),
                    cocclInvalidArgument);
        }
        Guarded g(256 * sizeof(float), 0x5A);
        const cocclResult_t res =
            cocclAllReduce(v.data(), g.data(), 256, cocclFloat32, cocclSum, r.comm, nullptr);
        EXPECT_EQ(res, cocclInvalidUsage) << "rank " << r.rank;
        const std::string msg = cocclGetLastError(r.comm);
        EXPECT_NE(msg.find("call number differs: 0 on rank 0, 1 on rank 1"), std::string::npos)
            << "rank " << r.rank << ": " << msg;
        EXPECT_NE(msg.find("out of step"), std::string::npos) << msg;
        const std::vector<uint8_t> want(g.bytes(), 0x5A);
        EXPECT_EQ(std::memcmp(g.data(), want.data(), g.bytes()), 0);
      },
      o);
}

// A count-0 call is a no-op that still counts: a rank that passes 0 where the others pass a
// count is seen as a call ahead by its peers at its next call.
TEST(HostAgreementSeq, CountZeroOnOneRank_threads_2ranks) {
  RunOptions o;
  o.config.timeoutMs = 30000;
  runRanks(
      2, Mode::Threads,
      [](Rank& r) {
        std::vector<float> v(64, 1.f), out(64, -1.f);
        if (r.rank == 0) {
          EXPECT_EQ(
              cocclAllReduce(v.data(), out.data(), 0, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclSuccess);
        }
        EXPECT_EQ(cocclAllReduce(v.data(), out.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
                  cocclInvalidUsage);
        EXPECT_NE(std::string(cocclGetLastError(r.comm))
                      .find("call number differs: 1 on rank 0, 0 on rank 1"),
                  std::string::npos)
            << cocclGetLastError(r.comm);
        EXPECT_EQ(out[0], -1.f);
      },
      o);
}

// Calls that agree after a group: the group's collectives take their numbers at enqueue, in
// order, so agreeing groups pass.
TEST(HostAgreementSeq, GroupedCollectivesAgree_threads_2ranks) {
  runRanks(2, Mode::Threads, [](Rank& r) {
    std::vector<float> a(32, 1.f), b(32, 2.f);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclAllReduce(a.data(), a.data(), 32, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclSuccess);
    EXPECT_EQ(cocclAllReduce(b.data(), b.data(), 32, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    EXPECT_EQ(a[0], 2.f);
    EXPECT_EQ(b[0], 4.f);
  });
}

// A Send/Recv pair of a group that disagrees fails its two ends, and the collectives queued
// behind it in the same group still run: before, the group stopped at the failed part, so
// those collectives (whose call numbers were taken) never met the third rank's, which then
// failed with "call number differs" and every later call was out of step.
TEST(HostAgreementSeq, GroupedCollectiveRunsAfterAFailedPair_threads_3ranks) {
  RunOptions o;
  o.config.timeoutMs = 30000;
  runRanks(
      3, Mode::Threads,
      [](Rank& r) {
        std::vector<float> msg(1000, 1.f), in(64, static_cast<float>(r.rank + 1)), out(64, -1.f);
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        if (r.rank == 0) {
          EXPECT_EQ(cocclSend(msg.data(), 1000, cocclFloat32, 1, r.comm, nullptr), cocclSuccess);
        } else if (r.rank == 1) {
          EXPECT_EQ(cocclRecv(msg.data(), 999, cocclFloat32, 0, r.comm, nullptr), cocclSuccess);
        }
        EXPECT_EQ(cocclAllReduce(in.data(), out.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
                  cocclSuccess);
        const cocclResult_t res = cocclGroupEnd();
        if (r.rank == 2) {
          EXPECT_EQ(res, cocclSuccess) << cocclGetLastError(r.comm);
        } else {
          EXPECT_EQ(res, cocclInvalidUsage) << "rank " << r.rank;
          EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("disagree"), std::string::npos)
              << cocclGetLastError(r.comm);
        }
        EXPECT_EQ(out[0], 6.f) << "rank " << r.rank << ": the grouped AllReduce did not run";
        // and the communicator is in step: the next call agrees everywhere
        std::fill(out.begin(), out.end(), -1.f);
        EXPECT_EQ(cocclAllReduce(in.data(), out.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
                  cocclSuccess)
            << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
        EXPECT_EQ(out[63], 6.f);
      },
      o);
}

}  // namespace
