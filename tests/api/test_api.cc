// The C boundary: version, error strings, config handling, argument validation (every bad
// input returns the documented code with a message and never crashes), groups.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coccl.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

TEST(Api, VersionAndErrorStrings) {
  int v = 0;
  ASSERT_EQ(cocclGetVersion(&v), cocclSuccess);
  EXPECT_EQ(v, COCCL_VERSION_CODE);
  EXPECT_EQ(cocclGetVersion(nullptr), cocclInvalidArgument);
  EXPECT_NE(std::string(cocclGetLastError(nullptr)).find("NULL"), std::string::npos);
  for (int r = 0; r <= cocclNumResults; ++r)
    EXPECT_NE(cocclGetErrorString(static_cast<cocclResult_t>(r)), nullptr);
  EXPECT_STREQ(cocclGetErrorString(cocclSuccess), "no error");
}

TEST(Api, EnumValuesMatchNccl) {
  EXPECT_EQ(cocclInProgress, 7);
  EXPECT_EQ(cocclBfloat16, 9);
  EXPECT_EQ(cocclFloat8e4m3, 10);
  EXPECT_EQ(cocclFloat8e5m2, 11);
  EXPECT_EQ(cocclAvg, 4);
  EXPECT_EQ(sizeof(cocclUniqueId), 128u);
}

TEST(Api, InitRejectsBadArguments) {
  cocclUniqueId id;
  ASSERT_EQ(cocclGetUniqueId(&id), cocclSuccess);
  cocclComm_t comm = reinterpret_cast<cocclComm_t>(0x1);
  EXPECT_EQ(cocclCommInitRank(nullptr, 1, id, 0), cocclInvalidArgument);
  EXPECT_EQ(cocclCommInitRank(&comm, 0, id, 0), cocclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(cocclCommInitRank(&comm, 2, id, 2), cocclInvalidArgument);
  EXPECT_EQ(cocclCommInitRank(&comm, 2, id, -1), cocclInvalidArgument);
  cocclUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_EQ(cocclCommInitRank(&comm, 1, zero, 0), cocclInvalidArgument);
  EXPECT_NE(std::string(cocclGetLastError(nullptr)).find("unique id"), std::string::npos);
  cocclConfig_t bad;
  std::memset(&bad, 0, sizeof(bad));
  EXPECT_EQ(cocclCommInitRankConfig(&comm, 1, id, 0, &bad), cocclInvalidArgument);
  EXPECT_NE(std::string(cocclGetLastError(nullptr)).find("COCCL_CONFIG_INITIALIZER"),
            std::string::npos);
  cocclConfig_t badCodec = COCCL_CONFIG_INITIALIZER;
  badCodec.codec = "fp9_magic";
  EXPECT_EQ(cocclCommInitRankConfig(&comm, 1, id, 0, &badCodec), cocclInvalidArgument);
  // Set config fields must be valid (unset ones take the environment).
  const auto rejected = [&](void (*set)(cocclConfig_t*), const char* says) {
    cocclConfig_t c = COCCL_CONFIG_INITIALIZER;
    set(&c);
    EXPECT_EQ(cocclCommInitRankConfig(&comm, 1, id, 0, &c), cocclInvalidArgument) << says;
    EXPECT_NE(std::string(cocclGetLastError(nullptr)).find(says), std::string::npos)
        << cocclGetLastError(nullptr);
  };
  rejected([](cocclConfig_t* c) { c->timeoutMs = -5; }, "timeoutMs");
  rejected([](cocclConfig_t* c) { c->timeoutMs = 0; }, "timeoutMs");
  rejected([](cocclConfig_t* c) { c->chunkBytes = 0; }, "chunkBytes");
  // Below the minimum too (the variable would take 4096; a field set in code is a mistake).
  rejected([](cocclConfig_t* c) { c->chunkBytes = 1000; }, "chunkBytes 1000 (config)");
  rejected([](cocclConfig_t* c) { c->compressMinBytes = -7; }, "compressMinBytes");
  rejected([](cocclConfig_t* c) { c->algorithm = "tree"; }, "(config)");
  rejected([](cocclConfig_t* c) { c->deviceExact = "cuda"; }, "deviceExact");
  EXPECT_EQ(cocclGetUniqueId(nullptr), cocclInvalidArgument);
}

TEST(Api, OlderAndNewerConfigSizesAreAccepted) {
  // An "older" config: only NCCL's fields (size stops before coccl's own).
  cocclConfig_t old = COCCL_CONFIG_INITIALIZER;
  old.size = offsetof(cocclConfig_t, codec);
  RunOptions oldOpts;
  oldOpts.config = old;
  runRanks(1, Mode::Threads, [](Rank&) {}, oldOpts);
  // A "newer" config: larger than ours; the unknown tail is ignored.
  struct Newer {
    cocclConfig_t base;
    long long futureField;
  } newer{COCCL_CONFIG_INITIALIZER, 42};
  newer.base.size = sizeof(Newer);
  RunOptions o;
  o.config = newer.base;
  runRanks(1, Mode::Threads, [](Rank&) {}, o);
}

// The messages of two argument errors (one rank: cocclGetLastError is the process's).
TEST(Api, BufferErrorsSayWhatIsWrong) {
  runRanks(1, Mode::Threads, [](Rank& r) {
    std::vector<float> b(64);
    const auto i8 = reinterpret_cast<int8_t*>(b.data());
    EXPECT_EQ(cocclBroadcast(i8, i8, SIZE_MAX, cocclInt8, 0, r.comm, nullptr),
              cocclInvalidArgument);
    EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("more than any buffer holds"),
              std::string::npos)
        << cocclGetLastError(r.comm);
    // ReduceScatter's in-place rule is about recvbuff (sendbuff + rank * recvcount).
    EXPECT_EQ(
        cocclReduceScatter(b.data(), b.data() + 1, 4, cocclFloat32, cocclSum, r.comm, nullptr),
        cocclInvalidArgument);
    EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("recvbuff (sendbuff + rank * recvcount)"),
              std::string::npos)
        << cocclGetLastError(r.comm);
    // A codec's wire size of a count no buffer holds is an error, not a wrapped size.
    cocclCodec_t codec = nullptr;
    ASSERT_EQ(cocclCodecCreate("int8", &codec), cocclSuccess);
    size_t bytes = 7;
    EXPECT_EQ(cocclCodecEncodedBytes(codec, size_t{1} << 61, cocclFloat16, &bytes),
              cocclInvalidArgument);
    EXPECT_EQ(bytes, 7u);
    EXPECT_EQ(cocclCodecEncodedBytes(codec, (size_t{1} << 57) / 2, cocclFloat16, &bytes),
              cocclSuccess);
    EXPECT_GT(bytes, size_t{1} << 55);
    EXPECT_EQ(cocclCodecDestroy(codec), cocclSuccess);
  });
}

TEST(Api, CollectivesRejectBadArguments) {
  runRanks(2, Mode::Threads, [](Rank& r) {
    std::vector<float> a(64), b(64 * 2);
    cocclComm_t c = r.comm;
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, nullptr, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(nullptr, b.data(), 4, cocclFloat32, cocclSum, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(a.data(), nullptr, 4, cocclFloat32, cocclSum, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, static_cast<cocclDataType_t>(12), cocclSum,
                             c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, static_cast<cocclDataType_t>(-1), cocclSum,
                             c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, cocclFloat32, static_cast<cocclRedOp_t>(5),
                             c, nullptr),
              cocclInvalidArgument);
    // Partial overlap of send and receive buffers is not an in-place call.
    EXPECT_EQ(cocclAllReduce(a.data(), a.data() + 1, 4, cocclFloat32, cocclSum, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), SIZE_MAX / 2, cocclFloat32, cocclSum, c, nullptr),
              cocclInvalidArgument);
    // Counts whose bytes fit size_t but whose buffers would run past the address space (found
    // by a helper trying the API, 2026-12-06: Broadcast returned success and the heap was
    // corrupted; AllReduce and AllGather crashed in UCX's pack).
    const auto i8 = reinterpret_cast<int8_t*>(a.data());
    EXPECT_EQ(cocclBroadcast(i8, i8, SIZE_MAX, cocclInt8, 0, c, nullptr), cocclInvalidArgument);
    EXPECT_EQ(cocclReduce(i8, i8, SIZE_MAX, cocclInt8, cocclSum, 0, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(i8, i8, SIZE_MAX, cocclInt8, cocclSum, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllGather(i8, i8, SIZE_MAX / 2, cocclInt8, c, nullptr), cocclInvalidArgument);
    EXPECT_EQ(cocclReduceScatter(i8, i8, SIZE_MAX / 2, cocclInt8, cocclSum, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclSend(i8, size_t{1} << 62, cocclInt8, 1 - r.rank, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclBroadcast(a.data(), a.data(), 4, cocclFloat32, 2, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclBroadcast(a.data(), a.data(), 4, cocclFloat32, -1, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, 7, c, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclSend(a.data(), 4, cocclFloat32, 5, c, nullptr), cocclInvalidArgument);
    EXPECT_EQ(cocclRecv(nullptr, 4, cocclFloat32, 0, c, nullptr), cocclInvalidArgument);
    std::vector<float> g(256);
    EXPECT_EQ(cocclAllGather(g.data(), g.data() + 1, 64, cocclFloat32, c, nullptr),
              cocclInvalidArgument);  // overlaps but not at the rank's offset
    // Zero counts with NULL buffers are no-ops.
    EXPECT_EQ(cocclAllReduce(nullptr, nullptr, 0, cocclFloat32, cocclSum, c, nullptr),
              cocclSuccess);
    EXPECT_EQ(cocclReduceScatter(nullptr, nullptr, 0, cocclBfloat16, cocclAvg, c, nullptr),
              cocclSuccess);
    EXPECT_EQ(cocclAllGather(nullptr, nullptr, 0, cocclInt8, c, nullptr), cocclSuccess);
    EXPECT_EQ(cocclBroadcast(nullptr, nullptr, 0, cocclInt8, 0, c, nullptr), cocclSuccess);
    EXPECT_EQ(cocclReduce(nullptr, nullptr, 0, cocclInt8, cocclMax, 1, c, nullptr), cocclSuccess);
    EXPECT_EQ(cocclSend(nullptr, 0, cocclInt8, 1 - r.rank, c, nullptr), cocclSuccess);
    EXPECT_EQ(cocclRecv(nullptr, 0, cocclInt8, 1 - r.rank, c, nullptr), cocclSuccess);
    // Argument errors do not break the communicator.
    cocclResult_t async;
    EXPECT_EQ(cocclCommGetAsyncError(c, &async), cocclSuccess);
    EXPECT_EQ(async, cocclSuccess);
    a.assign(64, 1.0f);
    ASSERT_EQ(cocclAllReduce(a.data(), b.data(), 64, cocclFloat32, cocclSum, c, nullptr),
              cocclSuccess);
    EXPECT_EQ(b[63], 2.0f);
  });
}

TEST(Api, QueriesAndGroups) {
  runRanks(3, Mode::Threads, [](Rank& r) {
    int n = 0, rank = -1, dev = 7;
    EXPECT_EQ(cocclCommCount(r.comm, &n), cocclSuccess);
    EXPECT_EQ(n, 3);
    EXPECT_EQ(cocclCommUserRank(r.comm, &rank), cocclSuccess);
    EXPECT_EQ(rank, r.rank);
    EXPECT_EQ(cocclCommCuDevice(r.comm, &dev), cocclSuccess);
    EXPECT_EQ(dev, -1);
    EXPECT_EQ(cocclCommCount(nullptr, &n), cocclInvalidArgument);
    EXPECT_EQ(cocclCommCount(r.comm, nullptr), cocclInvalidArgument);
    // Exchange with both neighbours in one (nested) group: no deadlock whatever the order.
    std::vector<int> s(1000, r.rank), fromPrev(1000, -1), fromNext(1000, -1), self(1000, -1);
    int next = (r.rank + 1) % 3, prev = (r.rank + 2) % 3;
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclSend(s.data(), 1000, cocclInt32, next, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(cocclSend(s.data(), 1000, cocclInt32, prev, r.comm, nullptr), cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess);
    EXPECT_EQ(cocclRecv(fromNext.data(), 1000, cocclInt32, next, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(cocclRecv(fromPrev.data(), 1000, cocclInt32, prev, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(cocclSend(s.data(), 1000, cocclInt32, r.rank, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(cocclRecv(self.data(), 1000, cocclInt32, r.rank, r.comm, nullptr), cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess);
    EXPECT_EQ(fromNext[999], next);
    EXPECT_EQ(fromPrev[0], prev);
    EXPECT_EQ(self[5], r.rank);
    EXPECT_EQ(cocclGroupEnd(), cocclInvalidUsage);
    // Self send outside a group would deadlock: refused.
    EXPECT_EQ(cocclSend(s.data(), 10, cocclInt32, r.rank, r.comm, nullptr), cocclInvalidUsage);
  });
}

TEST(Api, OneThreadDrivesSeveralCommunicatorsInAGroup) {
  cocclUniqueId id;
  ASSERT_EQ(cocclGetUniqueId(&id), cocclSuccess);
  cocclComm_t comms[4];
  ASSERT_EQ(cocclGroupStart(), cocclSuccess);
  for (int r = 0; r < 4; ++r) ASSERT_EQ(cocclCommInitRank(&comms[r], 4, id, r), cocclSuccess);
  ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(nullptr);
  std::vector<std::vector<float>> in(4, std::vector<float>(5000)), out(4, std::vector<float>(5000));
  for (int r = 0; r < 4; ++r) in[r].assign(5000, static_cast<float>(r + 1));
  ASSERT_EQ(cocclGroupStart(), cocclSuccess);
  for (int r = 0; r < 4; ++r)
    ASSERT_EQ(cocclAllReduce(in[r].data(), out[r].data(), 5000, cocclFloat32, cocclSum, comms[r],
                             nullptr),
              cocclSuccess);
  ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(nullptr);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[r][4999], 10.0f);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(cocclCommDestroy(comms[r]), cocclSuccess);
}

TEST(Api, FinalizeThenDestroy) {
  RunOptions o;
  o.destroyComm = false;
  runRanks(3, Mode::Threads, [](Rank& r) {
    EXPECT_EQ(cocclCommFinalize(r.comm), cocclSuccess);
    EXPECT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
  }, o);
  EXPECT_EQ(cocclCommDestroy(nullptr), cocclSuccess);
  EXPECT_EQ(cocclCommAbort(nullptr), cocclSuccess);
}

}  // namespace

TEST(Api, CodecBlockElemsAndErrorBound) {
  cocclCodec_t c = nullptr, none = nullptr;
  ASSERT_EQ(cocclCodecCreate("int8:block=64,rotate=0", &c), cocclSuccess);
  ASSERT_EQ(cocclCodecCreate("none", &none), cocclSuccess);
  size_t g = 0;
  ASSERT_EQ(cocclCodecBlockElems(c, &g), cocclSuccess);
  EXPECT_EQ(g, 64u);
  double e = -1, z = -1;
  ASSERT_EQ(cocclCodecErrorBound(c, 1.0, 3.0, &e), cocclSuccess);
  EXPECT_GT(e, 3.0 / 254.0);  // rotate=0: absmax / 250 plus rounding terms
  EXPECT_LT(e, 3.0 / 100.0);
  ASSERT_EQ(cocclCodecErrorBound(none, 1.0, 3.0, &z), cocclSuccess);
  EXPECT_EQ(z, 0.0);
  EXPECT_EQ(cocclCodecErrorBound(c, -1.0, 3.0, &e), cocclInvalidArgument);
  EXPECT_EQ(cocclCodecErrorBound(c, 1.0, 1.0 / 0.0, &e), cocclInvalidArgument);
  EXPECT_EQ(cocclCodecErrorBound(nullptr, 1.0, 1.0, &e), cocclInvalidArgument);
  EXPECT_EQ(cocclCodecBlockElems(c, nullptr), cocclInvalidArgument);
  cocclCodecDestroy(c);
  cocclCodecDestroy(none);
}
