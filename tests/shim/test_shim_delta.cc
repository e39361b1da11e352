// The NCCL shim's weight-difference AllGather (nccl-tests-shim/delta.cc: a policy rule's
// "delta": true) on host buffers, ranks as threads. Part of test_shim_cpu's suite Policy.*
// (COCCL_SHIM_NO_NCCL=1 COCCL_POLICY=policy_split_groups.json: communicators named dp* gather
// through int8 with "delta").
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

#include "shim_test_util.h"

using namespace shimtest;

namespace {

// A barrier of n threads (C++17 has none): each meet() returns once all n have called it.
class Meeting {
 public:
  explicit Meeting(int n) : n_(n) {}
  void meet() {
    std::unique_lock<std::mutex> lock(mu_);
    const int g = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != g; });
    }
  }

 private:
  const int n_;
  int arrived_ = 0, generation_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace

// A communicator named dp*: its rule asks the weight-difference AllGather ("delta": true). The
// first call of a shape is exact; later ones quantize only the change since the previous call
// (so their error is a fraction of that change, not of the weights), whatever recvbuff held
// before (garbage, or in place); every rank gets the same bytes; a call inside a group too.
TEST(Policy, AllGatherAsWeightDifference) {
  if (launcherRankSet()) GTEST_SKIP() << "a launcher's RANK is set: the threads share it";
  const int n = 4;
  const size_t m = kCount / 4;  // a rank's shard
  std::vector<std::vector<float>> got(n);
  std::vector<float> all;        // every rank's current shard, concatenated
  std::vector<double> step;      // the change of the last step, concatenated
  std::vector<std::vector<float>> w(n);
  for (int r = 0; r < n; ++r) w[r] = input(r, m);
  auto concat = [&] {
    all.clear();
    for (int r = 0; r < n; ++r) all.insert(all.end(), w[r].begin(), w[r].end());
  };
  auto nudge = [&](int s) {  // an optimizer step: small changes of every weight
    step.assign(m * n, 0.0);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < m; ++i) {
        float d = 1e-3f * std::sin(0.37f * float(i + 1) * float(r + 2) + float(s));
        float before = w[r][i];
        w[r][i] = before + d;
        step[r * m + i] = double(w[r][i]) - double(before);
      }
    concat();
  };
  auto l2 = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
  };
  auto errL2 = [&](const std::vector<float>& g) {
    double s = 0;
    for (size_t i = 0; i < g.size(); ++i) s += (double(g[i]) - all[i]) * (double(g[i]) - all[i]);
    return std::sqrt(s);
  };
  std::vector<double> errs(4, 0.0), steps(4, 0.0);
  concat();
  // The ranks (threads) meet between calls: rank 0 checks and changes the weights.
  Meeting meeting(n);
  auto meet = [&] { meeting.meet(); };
  runRanks(n, [&](int r, ncclComm_t world) {
    const Api& a = api();
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.commName = "dp0";
    ncclComm_t dp = nullptr;
    ASSERT_EQ(a.ncclCommSplit(world, 0, r, &dp, &cfg), ncclSuccess) << lastError();
    got[r].assign(m * n, std::nanf(""));
    // 1: the first call of this shape: exact.
    ASSERT_EQ(a.ncclAllGather(w[r].data(), got[r].data(), m, ncclFloat32, dp, nullptr),
              ncclSuccess) << lastError();
    meet();
    if (r == 0) errs[0] = errL2(got[0]);
    for (int q = 1; q < n && r == 0; ++q) EXPECT_EQ(got[q], got[0]) << "rank " << q;
    meet();
    for (int s = 1; s <= 3; ++s) {
      if (r == 0) {
        nudge(s);
        steps[s] = l2(step);
      }
      meet();
      if (s == 1) {  // recvbuff holds garbage: not read
        got[r].assign(m * n, std::nanf(""));
        ASSERT_EQ(a.ncclAllGather(w[r].data(), got[r].data(), m, ncclFloat32, dp, nullptr),
                  ncclSuccess) << lastError();
      } else if (s == 2) {  // in place
        std::copy(w[r].begin(), w[r].end(), got[r].begin() + r * m);
        ASSERT_EQ(a.ncclAllGather(got[r].data() + r * m, got[r].data(), m, ncclFloat32, dp,
                                  nullptr), ncclSuccess) << lastError();
      } else {  // inside a group, beside a second shape (its own reference: first call, exact)
        std::vector<float> small(2048 * n, 0.f), mine(w[r].begin(), w[r].begin() + 2048);
        ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
        ASSERT_EQ(a.ncclAllGather(w[r].data(), got[r].data(), m, ncclFloat32, dp, nullptr),
                  ncclSuccess) << lastError();
        ASSERT_EQ(a.ncclAllGather(mine.data(), small.data(), 2048, ncclFloat32, dp, nullptr),
                  ncclSuccess) << lastError();
        ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < 2048; ++i)
            ASSERT_EQ(small[q * 2048 + i], w[q][i]) << "rank " << q << " element " << i;
      }
      meet();
      if (r == 0) errs[s] = errL2(got[0]);
      for (int q = 1; q < n && r == 0; ++q) EXPECT_EQ(got[q], got[0]) << "call " << s;
      meet();
    }
    EXPECT_EQ(a.ncclCommDestroy(dp), ncclSuccess) << lastError();
  });
  EXPECT_EQ(errs[0], 0.0) << "the first call is exact";
  for (int s = 1; s <= 3; ++s) {
    // int8 (127 levels a block) of the change: a percent of the change at most, and far below
    // what a gather of the weights themselves would lose (~1% of the weights, ~100x the change).
    std::printf("delta all-gather call %d: |error| / |change| = %.5f\n", s, errs[s] / steps[s]);
    EXPECT_GT(errs[s], 0.0) << "call " << s << ": compressed";
    EXPECT_LT(errs[s], 0.02 * steps[s]) << "call " << s;
  }
}

namespace {

// n threads, each rank r of a communicator named `name`.
void runNamed(int n, const char* name, const std::function<void(int, ncclComm_t)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(api().ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.commName = name;
      ncclComm_t c = nullptr;
      ASSERT_EQ(api().ncclCommInitRankConfig(&c, n, id, r, &cfg), ncclSuccess) << lastError();
      body(r, c);
      EXPECT_EQ(api().ncclCommDestroy(c), ncclSuccess) << lastError();
    });
  for (auto& t : ts) t.join();
}

}  // namespace

// Weight-difference AllGathers of several communicators in one group: each blocks until its
// ranks have all posted it, so one thread driving two ranks (nccl-tests' pattern) and ranks
// that queue two communicators in opposite orders must still complete (a thread each).
TEST(Policy, DeltaGroupsAcrossCommunicators) {
  if (launcherRankSet()) GTEST_SKIP() << "a launcher's RANK is set: the threads share it";
  const Api& a = api();
  const size_t m = 4096;
  ncclUniqueId id;
  ASSERT_EQ(a.ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {nullptr, nullptr};
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "dp-one-thread";
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(a.ncclCommInitRankConfig(&comms[r], 2, id, r, &cfg), ncclSuccess) << lastError();
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
  std::vector<float> s0 = input(0, m), s1 = input(1, m), y0(2 * m), y1(2 * m);
  ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(a.ncclAllGather(s0.data(), y0.data(), m, ncclFloat32, comms[0], nullptr), ncclSuccess);
  ASSERT_EQ(a.ncclAllGather(s1.data(), y1.data(), m, ncclFloat32, comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(a.ncclGroupEnd(), ncclSuccess) << lastError();
  std::vector<float> want(s0);
  want.insert(want.end(), s1.begin(), s1.end());
  EXPECT_EQ(y0, want) << "the first call of a shape is exact";
  EXPECT_EQ(y1, want);
  for (ncclComm_t c : comms) EXPECT_EQ(a.ncclCommDestroy(c), ncclSuccess) << lastError();

  ncclUniqueId ida, idb;
  ASSERT_EQ(a.ncclGetUniqueId(&ida), ncclSuccess);
  ASSERT_EQ(a.ncclGetUniqueId(&idb), ncclSuccess);
  ncclResult_t rc[2] = {ncclInternalError, ncclInternalError};
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      ncclConfig_t ca = NCCL_CONFIG_INITIALIZER, cb = NCCL_CONFIG_INITIALIZER;
      ca.commName = "dpA";
      cb.commName = "dpB";
      ncclComm_t A = nullptr, B = nullptr;
      ASSERT_EQ(a.ncclCommInitRankConfig(&A, 2, ida, r, &ca), ncclSuccess) << lastError();
      ASSERT_EQ(a.ncclCommInitRankConfig(&B, 2, idb, r, &cb), ncclSuccess) << lastError();
      std::vector<float> s = input(r, m), ya(2 * m), yb(2 * m);
      ASSERT_EQ(a.ncclGroupStart(), ncclSuccess);
      ncclComm_t first = r == 0 ? A : B, second = r == 0 ? B : A;
      ASSERT_EQ(a.ncclAllGather(s.data(), (first == A ? ya : yb).data(), m, ncclFloat32, first,
                                nullptr), ncclSuccess);
      ASSERT_EQ(a.ncclAllGather(s.data(), (second == A ? ya : yb).data(), m, ncclFloat32, second,
                                nullptr), ncclSuccess);
      rc[r] = a.ncclGroupEnd();
      EXPECT_EQ(ya, want);
      EXPECT_EQ(yb, want);
      EXPECT_EQ(a.ncclCommDestroy(A), ncclSuccess);
      EXPECT_EQ(a.ncclCommDestroy(B), ncclSuccess);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(rc[0], ncclSuccess) << lastError();
  EXPECT_EQ(rc[1], ncclSuccess) << lastError();
}

// A weight that turns +Inf for one step comes back finite at the next (a non-finite previous
// value takes the new value: include/coccl.h, cocclAllGatherDelta), and a call that fails (the
// ranks pass different counts, so each meets another shape) fails on every rank and drops
// every reference: the next call of the shape starts again exact, the same on every rank.
TEST(Policy, DeltaHealsNonFiniteAndResetsAfterAFailure) {
  if (launcherRankSet()) GTEST_SKIP() << "a launcher's RANK is set: the threads share it";
  const int n = 2;
  const size_t m = 4096;
  std::vector<std::vector<float>> got(n);
  Meeting meeting(n);
  auto meet = [&] { meeting.meet(); };
  runNamed(n, "dp-heal", [&](int r, ncclComm_t c) {
    const Api& a = api();
    std::vector<float> s = input(r, m);
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < m; ++i) s[i] += 1e-3f * std::sin(0.1f * float(i) + float(step));
      std::vector<float> send(s);
      if (r == 0 && step == 1) send[5] = INFINITY;
      got[r].assign(m * n, std::nanf(""));
      ASSERT_EQ(a.ncclAllGather(send.data(), got[r].data(), m, ncclFloat32, c, nullptr),
                ncclSuccess) << lastError();
      if (r == 0 && step == 1) {
        EXPECT_EQ(got[r][5], INFINITY);
      } else if (r == 0 && step >= 2) {  // rank 0's shard, element 5
        EXPECT_NEAR(got[r][5], s[5], 0.05f) << "step " << step << ": not healed";
      }
      meet();
      if (r == 0) {
        EXPECT_EQ(got[0], got[1]) << "step " << step;
      }
      meet();
    }
    // A NULL recvbuff (found by a review, 2026-12-06: the host copy from the reference wrote
    // through it): an argument error on each rank, before any exchange.
    EXPECT_EQ(a.ncclAllGather(s.data(), nullptr, m, ncclFloat32, c, nullptr),
              ncclInvalidArgument);
    // Different counts: an error on both ranks, then an exact call of the shape.
    EXPECT_NE(a.ncclAllGather(s.data(), got[r].data(), r == 0 ? m : m / 2, ncclFloat32, c,
                              nullptr), ncclSuccess);
    got[r].assign(m * n, 0.f);
    ASSERT_EQ(a.ncclAllGather(s.data(), got[r].data(), m, ncclFloat32, c, nullptr), ncclSuccess)
        << lastError();
    meet();
    if (r == 0) {
      for (int q = 0; q < n; ++q) {
        std::vector<float> sq = input(q, m);
        for (int step = 0; step < 4; ++step)
          for (size_t i = 0; i < m; ++i) sq[i] += 1e-3f * std::sin(0.1f * float(i) + float(step));
        EXPECT_EQ(std::vector<float>(got[0].begin() + q * m, got[0].begin() + (q + 1) * m), sq)
            << "after the failed call, rank " << q << "'s shard is exact again";
      }
      EXPECT_EQ(got[0], got[1]);
    }
    meet();
  });
}
