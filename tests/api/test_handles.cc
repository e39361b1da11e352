// Handles that are no longer live (destroyed, aborted) or never were: every entry point returns
// cocclInvalidArgument with a message instead of crashing or hanging (src/api/handles.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coccl.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

bool saysNotLive() {
  return std::string(cocclGetLastError(nullptr)).find("not a live communicator") !=
         std::string::npos;
}

// Every call that takes a communicator, on a handle that is not live.
void expectEveryCallRejects(cocclComm_t dead) {
  std::vector<float> a(16), b(16);
  int n = 0;
  cocclResult_t async = cocclSuccess;
  cocclCollStats_t st{};
  int compressed = 0;
  EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_TRUE(saysNotLive()) << cocclGetLastError(nullptr);
  EXPECT_EQ(cocclReduceScatter(a.data(), b.data(), 1, cocclFloat32, cocclSum, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclAllGather(a.data(), b.data(), 1, cocclFloat32, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclAllGatherDelta(a.data(), b.data(), 1, cocclFloat32, COCCL_CODEC_POLICY,
                                COCCL_DELTA_RESET, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_TRUE(saysNotLive()) << cocclGetLastError(nullptr);
  EXPECT_EQ(cocclBroadcast(a.data(), b.data(), 4, cocclFloat32, 0, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, 0, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclSend(a.data(), 4, cocclFloat32, 0, dead, nullptr), cocclInvalidArgument);
  EXPECT_EQ(cocclRecv(b.data(), 4, cocclFloat32, 0, dead, nullptr), cocclInvalidArgument);
  EXPECT_EQ(cocclCommFinalize(dead), cocclInvalidArgument);
  EXPECT_EQ(cocclCommCount(dead, &n), cocclInvalidArgument);
  EXPECT_EQ(cocclCommUserRank(dead, &n), cocclInvalidArgument);
  EXPECT_EQ(cocclCommCuDevice(dead, &n), cocclInvalidArgument);
  EXPECT_EQ(cocclCommGetAsyncError(dead, &async), cocclInvalidArgument);
  EXPECT_EQ(cocclCommGetLastCollStats(dead, &st), cocclInvalidArgument);
  EXPECT_EQ(cocclCommQueryCodec(dead, cocclCollAllReduce, 4, cocclFloat32, cocclSum, &compressed,
                                nullptr, 0),
            cocclInvalidArgument);
  int world[1];
  EXPECT_EQ(cocclCommWorldRanks(dead, world, 1), cocclInvalidArgument);
  // Twice freed: an error, never a hang or a crash.
  EXPECT_EQ(cocclCommDestroy(dead), cocclInvalidArgument);
  EXPECT_TRUE(saysNotLive()) << cocclGetLastError(nullptr);
  EXPECT_EQ(cocclCommAbort(dead), cocclInvalidArgument);
  EXPECT_TRUE(saysNotLive()) << cocclGetLastError(nullptr);
}

TEST(Handles, CallsAfterDestroyAreRejected) {
  RunOptions o;
  o.destroyComm = false;
  runRanks(1, Mode::Threads, [](Rank& r) {
    ASSERT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
    expectEveryCallRejects(r.comm);
  }, o);
}

TEST(Handles, CallsAfterAbortAreRejected) {
  RunOptions o;
  o.destroyComm = false;
  runRanks(2, Mode::Threads, [](Rank& r) {
    ASSERT_EQ(cocclCommAbort(r.comm), cocclSuccess);
    expectEveryCallRejects(r.comm);
  }, o);
}

TEST(Handles, APointerThatNeverWasAHandleIsRejected) {
  int notAComm = 0;
  expectEveryCallRejects(reinterpret_cast<cocclComm_t>(&notAComm));
}

}  // namespace
