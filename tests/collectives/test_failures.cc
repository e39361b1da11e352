// Failure behaviour: a rank that dies (process killed, or its communicator aborted) makes the
// others return an error well within the timeout instead of hanging; a peer that never shows up
// gives cocclSystemError after the timeout; cocclCommAbort returns promptly from any thread.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "harness/harness.h"

using namespace coccl::test;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Survivors loop on large AllReduces until one fails; it must fail, and fast.
void survivorLoop(Rank& r) {
  std::vector<float> a(1 << 20, 1.0f), b(1 << 20);
  auto start = Clock::now();
  cocclResult_t res = cocclSuccess;
  for (int i = 0; i < 100000 && res == cocclSuccess; ++i)
    res = cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
  double took = secondsSince(start);
  EXPECT_TRUE(res == cocclRemoteError || res == cocclSystemError || res == cocclInvalidUsage)
      << "rank " << r.rank << " got " << res << ": " << cocclGetLastError(r.comm);
  EXPECT_LT(took, 15.0) << "rank " << r.rank << " noticed the dead peer only after " << took << " s";
  cocclResult_t async = cocclSuccess;
  EXPECT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
  EXPECT_NE(async, cocclSuccess);
  // A broken communicator refuses further work with a clear error.
  EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 16, cocclFloat32, cocclSum, r.comm, nullptr),
            cocclInvalidUsage);
}

TEST(Failures, KilledProcessMidAllReduce) {
  RunOptions o;
  o.config = configWithTimeout(60000);  // detection must come from the dead connection
  o.expectKilled = {2};
  runRanks(4, Mode::Processes, [](Rank& r) {
    if (r.rank == 2) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGKILL);
      }).detach();
      std::vector<float> a(1 << 20, 1.0f), b(1 << 20);
      for (;;) cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
    }
    survivorLoop(r);
  }, o);
}

TEST(Failures, AbortedRankThreadMidAllReduce) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  o.destroyComm = false;
  runRanks(4, Mode::Threads, [](Rank& r) {
    if (r.rank == 2) {
      // "Kill" this rank: a few AllReduces, then its communicator is aborted while the others
      // are already inside the next AllReduce waiting for it.
      std::vector<float> a(1 << 20, 1.0f), b(1 << 20);
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm,
                                 nullptr),
                  cocclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto t0 = Clock::now();
      EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
      EXPECT_LT(secondsSince(t0), 5.0) << "cocclCommAbort did not return promptly";
      return;
    }
    survivorLoop(r);
    EXPECT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
  }, o);
}

TEST(Failures, MissingPeerTimesOut) {
  RunOptions o;
  o.config = configWithTimeout(500);
  o.destroyComm = false;
  runRanks(2, Mode::Threads, [](Rank& r) {
    if (r.rank == 0) {
      std::vector<float> a(1000, 1.0f), b(1000);
      auto t0 = Clock::now();
      cocclResult_t res =
          cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
      double took = secondsSince(t0);
      EXPECT_EQ(res, cocclSystemError) << cocclGetLastError(r.comm);
      EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("timed out"), std::string::npos);
      EXPECT_GE(took, 0.4);
      EXPECT_LT(took, 5.0);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // never joins the call
    }
    EXPECT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
  }, o);
}

TEST(Failures, AbortFromAnotherThreadUnblocksAWaitingCall) {
  RunOptions o;
  o.config = configWithTimeout(120000);
  o.destroyComm = false;
  runRanks(2, Mode::Threads, [](Rank& r) {
    if (r.rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      EXPECT_EQ(cocclCommDestroy(r.comm), cocclSuccess);
      return;
    }
    std::vector<float> a(1000, 1.0f), b(1000);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto t0 = Clock::now();
      EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
      EXPECT_LT(secondsSince(t0), 2.0);
    });
    auto t0 = Clock::now();
    cocclResult_t res =
        cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
    EXPECT_NE(res, cocclSuccess);
    EXPECT_LT(secondsSince(t0), 3.0);
    aborter.join();
  }, o);
}

}  // namespace
