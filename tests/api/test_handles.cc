// Handles that are no longer live (destroyed, aborted) or never were: every entry point returns
// cocclInvalidArgument with a message instead of crashing or hanging (src/api/handles.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
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
  cocclExactPath_t path = cocclExactDefault;
  EXPECT_EQ(cocclCommQueryExactPath(dead, cocclCollAllReduce, 4, cocclFloat32, cocclSum, &path),
            cocclInvalidArgument);
  int delta = 0;
  EXPECT_EQ(cocclCommQueryAllGatherDelta(dead, 4, cocclFloat32, &delta), cocclInvalidArgument);
  int world[1];
  EXPECT_EQ(cocclCommWorldRanks(dead, world, 1), cocclInvalidArgument);
  // The *Codec variants, with a live codec: the communicator decides.
  cocclCodec_t int8 = nullptr;
  ASSERT_EQ(cocclCodecCreate("int8", &int8), cocclSuccess);
  EXPECT_EQ(cocclAllReduceCodec(a.data(), b.data(), 4, cocclFloat32, cocclSum, int8, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_TRUE(saysNotLive()) << cocclGetLastError(nullptr);
  EXPECT_EQ(cocclReduceScatterCodec(a.data(), b.data(), 1, cocclFloat32, cocclSum, int8, dead,
                                    nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclAllGatherCodec(a.data(), b.data(), 1, cocclFloat32, int8, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclSendCodec(a.data(), 4, cocclFloat32, 0, int8, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclRecvCodec(b.data(), 4, cocclFloat32, 0, int8, dead, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclCodecDestroy(int8), cocclSuccess);
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
  runRanks(
      2, Mode::Threads,
      [](Rank& r) {
        ASSERT_EQ(cocclCommAbort(r.comm), cocclSuccess);
        expectEveryCallRejects(r.comm);
      },
      o);
}

// A watchdog thread polls cocclCommGetAsyncError (as PyTorch's does) and queries the
// communicator while the rank's thread destroys or aborts it: each call either sees the live
// communicator (an abort under way may show as its asynchronous error) or is rejected, and the
// destroy waits for the call in flight to return before it frees anything (before, the poll could read freed memory: the sanitizer jobs catch that).
void destroyUnderAWatchdog(bool abort) {
  RunOptions o;
  o.destroyComm = false;
  runRanks(
      1, Mode::Threads,
      [abort](Rank& r) {
        std::atomic<bool> polled{false};
        std::atomic<int> wrong{0};
        std::thread watchdog([&] {
          for (;;) {
            cocclResult_t async = cocclSuccess;
            int n = 0, compressed = 0;
            const cocclResult_t a = cocclCommGetAsyncError(r.comm, &async);
            const cocclResult_t b = cocclCommCount(r.comm, &n);
            const cocclResult_t c = cocclCommQueryCodec(
                r.comm, cocclCollAllReduce, 1024, cocclFloat32, cocclSum, &compressed, nullptr, 0);
            polled = true;
            if (a == cocclInvalidArgument && b == cocclInvalidArgument && c == cocclInvalidArgument)
              return;  // gone: every later call is rejected
            if ((a != cocclSuccess && a != cocclInvalidArgument) ||
                (a == cocclSuccess && !abort && async != cocclSuccess) ||
                (b != cocclSuccess && b != cocclInvalidArgument) || (b == cocclSuccess && n != 1) ||
                (c != cocclSuccess && c != cocclInvalidArgument))
              ++wrong;
          }
        });
        while (!polled) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        EXPECT_EQ(abort ? cocclCommAbort(r.comm) : cocclCommDestroy(r.comm), cocclSuccess);
        watchdog.join();
        EXPECT_EQ(wrong.load(), 0);
      },
      o);
}

TEST(Handles, DestroyWaitsForAWatchdogThread) {
  destroyUnderAWatchdog(false);
}
TEST(Handles, AbortWaitsForAWatchdogThread) {
  destroyUnderAWatchdog(true);
}

// An init deferred inside a group is counted in too: an abort from another thread while the
// group's init still waits for its peer waits for the init to end, instead of freeing the
// handle the init then writes (a use after free the sanitizer jobs catch).
TEST(Handles, AbortDuringAGroupInitThread) {
  cocclUniqueId id;
  ASSERT_EQ(cocclGetUniqueId(&id), cocclSuccess);
  cocclConfig_t cfg = configWithTimeout(30000);
  cocclComm_t c0 = nullptr, c1 = nullptr;
  std::atomic<bool> handed{false};
  cocclResult_t groupEnd = cocclInternalError, aborted = cocclInternalError;
  std::thread rank0([&] {
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    ASSERT_EQ(cocclCommInitRankConfig(&c0, 2, id, 0, &cfg), cocclSuccess);
    handed = true;
    groupEnd = cocclGroupEnd();  // the init: waits for rank 1
  });
  std::thread watchdog([&] {
    while (!handed) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    aborted = cocclCommAbort(c0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(cocclCommInitRankConfig(&c1, 2, id, 1, &cfg), cocclSuccess) << cocclGetLastError(nullptr);
  rank0.join();
  watchdog.join();
  EXPECT_EQ(groupEnd, cocclSuccess) << cocclGetLastError(nullptr);
  EXPECT_EQ(aborted, cocclSuccess) << cocclGetLastError(nullptr);
  int n = 0;
  EXPECT_EQ(cocclCommCount(c0, &n), cocclInvalidArgument);  // gone
  EXPECT_EQ(cocclCommAbort(c1), cocclSuccess);
}

TEST(Handles, APointerThatNeverWasAHandleIsRejected) {
  int notAComm = 0;
  expectEveryCallRejects(reinterpret_cast<cocclComm_t>(&notAComm));
}

bool saysNotALiveCodec() {
  return std::string(cocclGetLastError(nullptr)).find("not a live codec handle") !=
         std::string::npos;
}

// Every call that takes a codec handle, on one that is destroyed (or never was one), on a live
// communicator: cocclInvalidArgument with a message, nothing run, the communicator still usable.
void expectEveryCodecCallRejects(cocclCodec_t bad, cocclComm_t comm) {
  std::vector<float> a(16, 1.0f), b(16, 0.0f);
  size_t n = 0;
  double bound = 0;
  EXPECT_EQ(cocclCodecEncodedBytes(bad, 4, cocclFloat32, &n), cocclInvalidArgument);
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(nullptr);
  EXPECT_EQ(cocclCodecBlockElems(bad, &n), cocclInvalidArgument);
  EXPECT_EQ(cocclCodecErrorBound(bad, 1.0, 1.0, &bound), cocclInvalidArgument);
  EXPECT_STREQ(cocclCodecName(bad), "");
  EXPECT_EQ(cocclAllReduceCodec(a.data(), b.data(), 4, cocclFloat32, cocclSum, bad, comm, nullptr),
            cocclInvalidArgument);
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(comm);
  EXPECT_EQ(cocclReduceScatterCodec(a.data(), b.data(), 4, cocclFloat32, cocclSum, bad, comm,
                                    nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclAllGatherCodec(a.data(), b.data(), 4, cocclFloat32, bad, comm, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclAllGatherDelta(a.data(), b.data(), 4, cocclFloat32, bad, COCCL_DELTA_RESET, comm,
                                nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclSendCodec(a.data(), 4, cocclFloat32, 0, bad, comm, nullptr),
            cocclInvalidArgument);
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(comm);
  EXPECT_EQ(cocclRecvCodec(b.data(), 4, cocclFloat32, 0, bad, comm, nullptr),
            cocclInvalidArgument);
  EXPECT_EQ(cocclCodecDestroy(bad), cocclInvalidArgument);
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(nullptr);
  // The communicator still works.
  EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, comm, nullptr),
            cocclSuccess)
      << cocclGetLastError(comm);
  EXPECT_EQ(b[0], 1.0f);
}

TEST(Handles, CodecCallsAfterDestroyAreRejected) {
  runRanks(1, Mode::Threads, [](Rank& r) {
    cocclCodec_t c = nullptr;
    ASSERT_EQ(cocclCodecCreate("fp8_ash_ds", &c), cocclSuccess);
    ASSERT_EQ(cocclCodecDestroy(c), cocclSuccess);
    expectEveryCodecCallRejects(c, r.comm);
    int notACodec = 0;
    expectEveryCodecCallRejects(reinterpret_cast<cocclCodec_t>(&notACodec), r.comm);
  });
}

TEST(Handles, CodecDestroyTwiceIsAnError) {
  cocclCodec_t c = nullptr;
  ASSERT_EQ(cocclCodecCreate("int8:block=64", &c), cocclSuccess);
  ASSERT_EQ(cocclCodecDestroy(c), cocclSuccess);
  EXPECT_EQ(cocclCodecDestroy(c), cocclInvalidArgument);  // before: a double free
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(nullptr);
  int notACodec = 0;
  EXPECT_EQ(cocclCodecDestroy(reinterpret_cast<cocclCodec_t>(&notACodec)), cocclInvalidArgument);
  EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(nullptr);
  // NULL is a no-op, as for cocclCommDestroy (cocclCodecCreate leaves NULL when it fails).
  EXPECT_EQ(cocclCodecCreate("int8:block=7", &c), cocclInvalidArgument);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(cocclCodecDestroy(c), cocclSuccess);
}

// A codec handle destroyed between a grouped *Codec call and cocclGroupEnd: the group fails
// with cocclInvalidArgument, nothing is received, the communicator stays usable.
TEST(Handles, CodecDestroyedBeforeGroupEndIsRejected) {
  runRanks(1, Mode::Threads, [](Rank& r) {
    std::vector<float> a(256, 1.0f), b(256, 0.0f);
    cocclCodec_t c = nullptr;
    ASSERT_EQ(cocclCodecCreate("int8", &c), cocclSuccess);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclSendCodec(a.data(), a.size(), cocclFloat32, 0, c, r.comm, nullptr),
              cocclSuccess);
    EXPECT_EQ(cocclRecvCodec(b.data(), b.size(), cocclFloat32, 0, c, r.comm, nullptr),
              cocclSuccess);
    ASSERT_EQ(cocclCodecDestroy(c), cocclSuccess);
    EXPECT_EQ(cocclGroupEnd(), cocclInvalidArgument);  // before: a use after free
    EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(r.comm);
    EXPECT_EQ(b[0], 0.0f);

    ASSERT_EQ(cocclCodecCreate("int8", &c), cocclSuccess);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclAllReduceCodec(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, c, r.comm,
                                  nullptr),
              cocclSuccess);
    ASSERT_EQ(cocclCodecDestroy(c), cocclSuccess);
    EXPECT_EQ(cocclGroupEnd(), cocclInvalidArgument);
    EXPECT_TRUE(saysNotALiveCodec()) << cocclGetLastError(r.comm);
    EXPECT_EQ(b[0], 0.0f);

    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 4, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclSuccess)
        << cocclGetLastError(r.comm);
    EXPECT_EQ(b[0], 1.0f);
  });
}

}  // namespace
