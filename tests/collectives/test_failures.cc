// Failure behaviour: a rank that dies (process killed, or its communicator aborted) makes the
// others return an error well within the timeout instead of hanging; a peer that never shows up
// gives cocclSystemError after the timeout; cocclCommAbort returns promptly from any thread.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
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

// A rank killed right after init, before any call: the survivors' first call fails with
// cocclRemoteError (the peer is gone), not a system error, and the message names a rank; the
// next call's "broken by an earlier error" repeats the first error's message. Before, UCX's
// "Shared memory error" of the dead peer's segment came back as cocclSystemError naming no rank.
TEST(Failures, KilledBeforeTheFirstCall) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  o.expectKilled = {0};
  runRanks(3, Mode::Processes, [](Rank& r) {
    if (r.rank == 0) kill(getpid(), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<float> a(1 << 16, 1.0f), b(1 << 16);
    const auto start = Clock::now();
    const cocclResult_t res =
        cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
    const std::string first = cocclGetLastError(r.comm);
    EXPECT_EQ(res, cocclRemoteError) << "rank " << r.rank << ": " << first;
    EXPECT_NE(first.find("rank "), std::string::npos) << first;
    EXPECT_LT(secondsSince(start), 15.0);
    EXPECT_EQ(cocclAllReduce(a.data(), b.data(), 16, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclInvalidUsage);
    const std::string next = cocclGetLastError(r.comm);
    EXPECT_NE(next.find("broken by an earlier error"), std::string::npos) << next;
    EXPECT_NE(next.find("cocclAllReduce: "), std::string::npos) << "the first message: " << next;
  }, o);
}

// Ranks that make no call learn of a peer that aborted through cocclCommGetAsyncError, which
// polls the connections: before, it only read the state, and an idle survivor saw
// cocclSuccess for as long as it made no call.
TEST(Failures, IdleSurvivorsSeeAnAbortThroughGetAsyncError) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  o.expectKilled = {0};
  runRanks(3, Mode::Processes, [](Rank& r) {
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      kill(getpid(), SIGKILL);
    }
    const auto start = Clock::now();
    cocclResult_t async = cocclSuccess;
    while (async == cocclSuccess && secondsSince(start) < 20.0) {
      ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(async, cocclRemoteError) << "rank " << r.rank;
    EXPECT_LT(secondsSince(start), 5.0) << "rank " << r.rank;
    EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("cocclCommGetAsyncError"),
              std::string::npos)
        << cocclGetLastError(r.comm);
    std::vector<float> a(16, 1.0f);
    EXPECT_EQ(cocclAllReduce(a.data(), a.data(), 16, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclInvalidUsage);
  }, o);
}

// A watchdog thread polling cocclCommGetAsyncError (PyTorch's pattern) while a call waits for
// a peer that aborts: the call still fails with cocclRemoteError. Before, the watchdog's poll
// broke the communicator first and the waiting call returned cocclInvalidUsage ("the bootstrap
// of rank 1 was aborted").
TEST(Failures, WatchdogPollingKeepsTheCallsRemoteError) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  runRanks(3, Mode::Processes, [](Rank& r) {
    std::vector<float> a(1 << 16, 1.0f), b(1 << 16);
    if (r.rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
      r.comm = nullptr;  // freed: the harness must not destroy it
      return;
    }
    std::atomic<bool> done{false};
    std::thread watchdog([&] {
      while (!done.load()) {
        cocclResult_t async = cocclSuccess;
        cocclCommGetAsyncError(r.comm, &async);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    const cocclResult_t res =
        cocclAllReduce(a.data(), b.data(), a.size(), cocclFloat32, cocclSum, r.comm, nullptr);
    done = true;
    watchdog.join();
    EXPECT_EQ(res, cocclRemoteError) << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
  }, o);
}

// A group whose first part times out stops there: before, each later part of the group waited
// out its own COCCL_TIMEOUT_MS (5 parts: 5 timeouts) before the error reached the peers.
TEST(Failures, GroupStopsAtATimeout) {
  RunOptions o;
  o.config = configWithTimeout(1000);
  runRanks(2, Mode::Threads, [](Rank& r) {
    if (r.rank == 1) {  // never posts the matching calls
      std::this_thread::sleep_for(std::chrono::milliseconds(3500));
      return;
    }
    std::vector<float> a(1024, 1.0f);
    const auto start = Clock::now();
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclSend(a.data(), a.size(), cocclFloat32, 1, r.comm, nullptr), cocclSuccess);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(cocclAllReduce(a.data(), a.data(), a.size(), cocclFloat32, cocclSum, r.comm,
                               nullptr),
                cocclSuccess);
    const cocclResult_t res = cocclGroupEnd();
    EXPECT_NE(res, cocclSuccess);
    EXPECT_LT(secondsSince(start), 2.5) << "the group's later parts each waited for the timeout";
    cocclResult_t async = cocclSuccess;
    EXPECT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
    EXPECT_NE(async, cocclSuccess) << "a timeout leaves the communicator broken";
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
